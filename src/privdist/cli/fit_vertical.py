"""``privdist fit --vertical N`` / ``--feature-groups SPEC``: parties hold COLUMNS (ADMM sharing, S2; issue 16).

The rows are split into train and test; the columns are split among the parties (``--vertical N``: an even,
contiguous split; ``--feature-groups "a,b;c,d"``: party 0 holds columns a and b, party 1 c and d; an attribute
name stands for its one-hot columns ``name=...``). The labels are held by the coordinator (S2). Printed: the
private shared model (:class:`privdist.learn.SharedFeatureLogisticRegression`, total ``--epsilon``/``--delta`` per
party; ``--vertical-protocol pool``: the log-odds pool of :mod:`privdist.learn.vertical_pool`), ADMM sharing without
noise, a centralized model on all columns, the majority class, and each party's
local-only model: scikit-learn's logistic regression on that party's columns WITH the labels (what the label holder
could fit if it held those columns; in S2 every party also reads the labels off the protocol), non-private.
"""

from __future__ import annotations

import shlex
from types import SimpleNamespace

import numpy as np

from ..errors import BinaryOnlyError, ValidationError
from .fit_common import NO_PROGRESS, fit_with_notes, held_out_metrics, majority_score
from .fit_trust import trust_options

__all__ = ["parse_feature_groups", "fit_vertical"]


def parse_feature_groups(spec: str) -> list[list]:
    """``"a,b;c;0,3"`` -> ``[["a", "b"], ["c"], [0, 3]]`` (integers are column indices)."""
    groups = []
    for part in spec.split(";"):
        cols = [c.strip() for c in part.split(",") if c.strip()]
        groups.append([int(c) if c.lstrip("-").isdigit() else c for c in cols])
    return groups


def fit_vertical(args, ds, X, y, seed: int, scale: str = "dp", bounds=None, progress=NO_PROGRESS):
    """Fit and compare; returns the namespace of :func:`privdist.cli.fit_horizontal.fit_horizontal` (``sizes`` is
    None: every party holds every row) for the shared printing and writing of :mod:`privdist.cli.fit_cmd`.

    Raises:
        BinaryOnlyError: a target with more than two classes (ADMM sharing fits a binary model).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    from ..data import feature_blocks
    from ..learn import SharedFeatureLogisticRegression
    from .fit_common import named  # the estimators see the column names (issue 39)

    if ds.extras["task"] != "classification":
        raise ValidationError("--vertical/--feature-groups fit a logistic regression (ADMM sharing, S2): the "
                              "target must be a class label")
    classes = ds.extras.get("classes") or []
    if len(classes) > 2:
        stated = "--classes " + shlex.quote(",".join(str(c) for c in classes))
        raise BinaryOnlyError(f"vertical fits (--vertical/--feature-groups, ADMM sharing) are binary, and the target "
                              f"has {len(classes)} classes: fit them horizontally (drop --vertical/--feature-groups: "
                              f"parties holding rows, one-vs-rest over the classes, stated as public with {stated}), "
                              "or merge the classes into two in the file and state those two names with --classes "
                              "NEG,POS (the negative class first)")
    if args.feature_groups:
        groups = feature_blocks(parse_feature_groups(args.feature_groups), X.shape[1], None, ds.feature_names)
    else:
        groups = feature_blocks(None, X.shape[1], args.vertical)
    idx_tr, idx_te = train_test_split(np.arange(X.shape[0]), test_size=args.test_size, random_state=seed % 2**32)
    Xtr, ytr, Xte, yte = X[idx_tr], y[idx_tr], X[idx_te], y[idx_te]
    Ftr, Fte = named(Xtr, ds.feature_names), named(Xte, ds.feature_names)
    if len(np.unique(ytr)) < 2:
        raise ValidationError("the training split holds one class only")
    common = dict(delta=args.delta, feature_groups=[g.tolist() for g in groups], rounds=args.rounds,
                  scale=scale, bounds=bounds, range_share=getattr(args, "range_share", 0.1), **trust_options(args))

    def fit(eps, draw: int = 0, label: str | None = None):
        state = None if args.seed is None else args.seed + draw  # research mode: one seed per draw
        if label is None:
            label = f"refit at epsilon {eps:g}, draw {draw}" if eps is not None else "refit without noise"
        with progress.step(label):
            # the non-private reference stays the joint ADMM sharing model (the pool is a private protocol)
            protocol = getattr(args, "vertical_protocol", "admm_sharing") if eps is not None else "admm_sharing"
            return fit_with_notes(SharedFeatureLogisticRegression(epsilon=eps, random_state=state, protocol=protocol,
                                                                  **common), Ftr, ytr)

    private, notes = fit(args.epsilon, label=f"private shared model (epsilon {args.epsilon:g})")
    nonpriv, _ = fit(None, label="shared model without noise")
    lam = private.alpha
    Ztr, Zte = private.preprocessor_.transform(Xtr), private.preprocessor_.transform(Xte)

    def scores(score) -> dict:
        return held_out_metrics("classification", yte, score)

    rows = {"private shared (vertical)": scores(private.decision_function(Fte)),
            "non-private shared (vertical)": scores(nonpriv.decision_function(Fte))}
    sk = LogisticRegression(C=1.0 / (2 * lam), max_iter=2000)  # the same objective: sum loss + lambda ||w||^2
    rows["centralized (all columns, non-private)"] = scores(sk.fit(Ztr, ytr).decision_function(Zte))
    rows["majority class"] = scores(majority_score(ytr, yte.shape[0]))
    local = []
    for m, g in enumerate(groups):
        model = LogisticRegression(C=1.0 / (2 * lam), max_iter=2000).fit(Ztr[:, g], ytr)
        local.append({"party": m, "columns": int(g.size), **scores(model.decision_function(Zte[:, g]))})
    return SimpleNamespace(private=private, rows=rows, local=local, fit=lambda eps, draw=0: fit(eps, draw)[0],
                           metrics=lambda est: scores(est.decision_function(Fte)), notes=notes,
                           n_parties=len(groups), n_test=len(idx_te), n_train=len(idx_tr), sizes=None, X_train=Xtr,
                           n_models=1)
