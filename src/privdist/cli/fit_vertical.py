"""``privdist fit --vertical N`` / ``--feature-groups SPEC``: parties hold COLUMNS (ADMM sharing, S2; issue 16).

The rows are split into train and test; the columns are split among the parties (``--vertical N``: an even,
contiguous split; ``--feature-groups "a,b;c,d"``: party 0 holds columns a and b, party 1 c and d; an attribute
name stands for its one-hot columns ``name=...``). The labels are held by the coordinator (S2). Printed: the
private shared model (:class:`privdist.learn.SharedFeatureLogisticRegression`, total ``--epsilon``/``--delta`` per
party), the same without noise, a centralized model on all columns, the majority class, and each party's
local-only model: scikit-learn's logistic regression on that party's columns WITH the labels (what the label holder
could fit if it held those columns; in S2 every party also reads the labels off the protocol), non-private.
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError
from .fit_common import fit_with_notes, held_out_metrics, majority_score

__all__ = ["parse_feature_groups", "fit_vertical"]


def parse_feature_groups(spec: str) -> list[list]:
    """``"a,b;c;0,3"`` -> ``[["a", "b"], ["c"], [0, 3]]`` (integers are column indices)."""
    groups = []
    for part in spec.split(";"):
        cols = [c.strip() for c in part.split(",") if c.strip()]
        groups.append([int(c) if c.lstrip("-").isdigit() else c for c in cols])
    return groups


def fit_vertical(args, ds, X, y, seed: int, scale: str = "dp", bounds=None) -> tuple:
    """Fit and compare; returns ``(private estimator, rows, local rows, curve fit function, warnings, test labels,
    X_test, n_parties, test size)`` for the shared printing and writing of :mod:`privdist.cli.fit_cmd`."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    from ..data import feature_blocks
    from ..learn import SharedFeatureLogisticRegression

    if ds.extras["task"] != "classification":
        raise ValidationError("--vertical/--feature-groups fit a logistic regression (ADMM sharing, S2): the "
                              "target must be a class label")
    if args.feature_groups:
        groups = feature_blocks(parse_feature_groups(args.feature_groups), X.shape[1], None, ds.feature_names)
    else:
        groups = feature_blocks(None, X.shape[1], args.vertical)
    idx_tr, idx_te = train_test_split(np.arange(X.shape[0]), test_size=args.test_size, random_state=seed % 2**32)
    Xtr, ytr, Xte, yte = X[idx_tr], y[idx_tr], X[idx_te], y[idx_te]
    if len(np.unique(ytr)) < 2:
        raise ValidationError("the training split holds one class only")
    common = dict(delta=args.delta, feature_groups=[g.tolist() for g in groups], rounds=args.rounds,
                  scale=scale, bounds=bounds, random_state=args.seed, range_share=getattr(args, "range_share", 0.1))

    def fit(eps):
        return fit_with_notes(SharedFeatureLogisticRegression(epsilon=eps, **common), Xtr, ytr)

    private, notes = fit(args.epsilon)
    nonpriv, _ = fit(None)
    lam = private.alpha
    Ztr, Zte = private.preprocessor_.transform(Xtr), private.preprocessor_.transform(Xte)

    def scores(score) -> dict:
        return held_out_metrics("classification", yte, score)

    rows = {"private shared (vertical)": scores(private.decision_function(Xte)),
            "non-private shared (vertical)": scores(nonpriv.decision_function(Xte))}
    sk = LogisticRegression(C=1.0 / (2 * lam), max_iter=2000)  # the same objective: sum loss + lambda ||w||^2
    rows["centralized (all columns, non-private)"] = scores(sk.fit(Ztr, ytr).decision_function(Zte))
    rows["majority class"] = scores(majority_score(ytr, yte.shape[0]))
    local = []
    for m, g in enumerate(groups):
        model = LogisticRegression(C=1.0 / (2 * lam), max_iter=2000).fit(Ztr[:, g], ytr)
        local.append({"party": m, "columns": int(g.size), **scores(model.decision_function(Zte[:, g]))})
    return private, rows, local, (lambda eps: fit(eps)[0]), notes, yte, Xte, len(groups), len(idx_te)
