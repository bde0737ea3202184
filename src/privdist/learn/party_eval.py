"""Per-party evaluation (issue 39), owner-only: will the model a party ends with beat going alone on its own cases?

Each party's own test rows are scored by three models, all in the released model's feature space
(``preprocessor_.transform``: the released column maps and row clipping, the same features for the three, so the
comparison isolates the model):

* **alone**: scikit-learn on the party's own training rows with the estimators' objective scale (mean loss +
  alpha ||w||^2: ``LogisticRegression(C=1/(2 alpha n))`` / ``Ridge(alpha=alpha n)``, :func:`alone_model`); rows
  holding one class predict that class;
* **global**: the private global model as released;
* **personal**: the party's personal model (:func:`privdist.learn.personal.personalize` on its training rows; a
  party with few rows or one class: the global coefficients with its own intercept partially pooled).

Metric: accuracy (classification) or RMSE (regression); the gain is signed so that positive = better than alone
(accuracy - alone accuracy; alone RMSE - RMSE). Nothing is NaN: a party without test rows has ``None`` metrics and a
``reason``. All of it is computed without noise from each party's rows: NOT a release, for the data holders only.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeMismatchError
from .personal import check_features, personalize
from .personal_multi import alone_model  # defined beside the personal model's multinomial candidate (issue 39)

__all__ = ["evaluate_parties", "alone_model", "MIN_TEST_ROWS"]

#: Parties with at least this many test rows make the summary's ``large`` section (the issue's bar).
MIN_TEST_ROWS = 20

#: A gain above ``-GAIN_TOLERANCE`` counts as "at least alone" (a personal model at ``lam = 0`` IS the party alone,
#: up to rounding between two solvers).
GAIN_TOLERANCE = 1e-9


def evaluate_parties(model, X_train, y_train, groups_train, X_test, y_test, groups_test, *, names=None,
                     alpha: float | None = None, random_state: int = 0, min_test_rows: int = MIN_TEST_ROWS) -> dict:
    """Score every party's own test rows by its model alone, the global model and its personal model.

    Args:
        model: The fitted private global model (:class:`~privdist.learn.DistributedLogisticRegression`, two classes
            or one-vs-rest, or :class:`~privdist.learn.DistributedRidge`); the task follows from it.
        X_train, y_train, groups_train: The training rows (the model's columns, as passed to its ``fit``), their
            targets and the party index (0 .. K-1) of each.
        X_test, y_test, groups_test: The held-out rows, targets and party indices.
        names: Party names, ``names[k]`` for party ``k`` (e.g. the values of the party column); None: ``k``.
        alpha: The objective scale of "alone" (None: ``model.alpha``).
        random_state: Seed of the personal models' cross-validation folds.
        min_test_rows: The summary's ``large`` section counts parties with at least this many test rows.

    Returns:
        ``{"metric", "owner_only", "parties": [...], "summary": {...}}``; each party row is ``{"party", "name",
        "train_rows", "test_rows", "alone", "global", "personal", "gain_personal", "gain_global",
        "personal_strength", "personal_fallback"}`` (``None`` + ``reason`` when a metric cannot be computed; a
        strength of ``inf``, the global coefficients with the party's partially pooled intercept, is written
        ``"global coefficients"``); the summary is ``{"all": s, "large": s}`` with
        ``s = {"parties", "personal_gains", "personal_better", "global_gains", "mean_gain_personal",
        "mean_gain_global"}`` over parties with a computed metric (``personal_gains``: personal >= alone, i.e. gain >=
        -1e-9; ``personal_better``: strictly better), ``large`` restricted to parties with ``min_test_rows``.

    Raises:
        ShapeMismatchError: rows, targets and groups of different lengths; and :func:`personalize`'s errors.
    """
    task = "classification" if model._loss == "logistic" else "regression"
    alpha = float(model.alpha if alpha is None else alpha)
    Xtr, Xte = check_features(model, X_train), check_features(model, X_test)
    ytr, yte = np.asarray(y_train), np.asarray(y_test)
    gtr, gte = np.asarray(groups_train).astype(int), np.asarray(groups_test).astype(int)
    for what, X, y, g in (("training", Xtr, ytr, gtr), ("test", Xte, yte, gte)):
        if not (X.shape[0] == y.shape[0] == g.shape[0]):
            raise ShapeMismatchError(f"the {what} rows ({X.shape[0]}), targets ({y.shape[0]}) and groups "
                                     f"({g.shape[0]}) must have the same length")
    K = int(max(gtr.max(initial=-1), gte.max(initial=-1))) + 1
    Ztr, Zte = _features(model, Xtr), _features(model, Xte)
    rows = []
    for k in range(K):
        tr, te = gtr == k, gte == k
        row = {"party": k, "name": names[k] if names is not None else k, "train_rows": int(tr.sum()),
               "test_rows": int(te.sum())}
        if not te.any() or not tr.any():
            rows.append({**row, "alone": None, "global": None, "personal": None, "gain_personal": None,
                         "gain_global": None, "personal_strength": None, "personal_fallback": None,
                         "reason": "no test rows" if not te.any() else "no training rows"})
            continue
        personal = personalize(model, Xtr[tr], ytr[tr], random_state=random_state)
        alone = _alone_predict(task, alpha, Ztr[tr], ytr[tr], Zte[te])
        scores = {"alone": _metric(task, yte[te], alone),
                  "global": _metric(task, yte[te], model.predict(_named(model, Xte[te]))),
                  "personal": _metric(task, yte[te], personal.predict(Xte[te]))}
        sign = 1.0 if task == "classification" else -1.0
        row.update(scores, gain_personal=sign * (scores["personal"] - scores["alone"]),
                   gain_global=sign * (scores["global"] - scores["alone"]),
                   personal_strength=_strength(personal.strength_), personal_fallback=personal.fallback_)
        rows.append(row)
    return {"metric": "accuracy" if task == "classification" else "rmse",
            "owner_only": "NOT A RELEASE: each party's own test rows scored by its model alone, the private global "
                          "model and its personal model (computed without noise); keep with the data holders",
            "parties": rows,
            "summary": {"all": _summary(rows, 0), "large": _summary(rows, min_test_rows),
                        "min_test_rows": int(min_test_rows)}}


def _named(model, X):
    """Rows as the model was fitted: a DataFrame with its column names when it was fitted on one (no scikit-learn
    feature-name warning), else the array."""
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return X
    import pandas as pd

    return pd.DataFrame(X, columns=list(names))


def _features(model, X) -> np.ndarray:
    Z = model.preprocessor_.transform(X)
    return np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z, dtype=float)


def _alone_predict(task, alpha, Z, y, Z_test):
    if task == "classification" and len(np.unique(y)) < 2:
        return np.full(Z_test.shape[0], y[0])
    return alone_model(task, alpha, Z.shape[0]).fit(Z, y).predict(Z_test)


def _metric(task, y_true, pred) -> float:
    if task == "classification":
        return float(np.mean(np.asarray(pred) == np.asarray(y_true)))
    return float(np.sqrt(np.mean((np.asarray(pred, dtype=float) - np.asarray(y_true, dtype=float)) ** 2)))


def _strength(value):
    values = np.atleast_1d(np.asarray(value, dtype=float))
    out = ["global coefficients" if math.isinf(v) else float(v) for v in values]
    return out[0] if np.ndim(value) == 0 else out


def _summary(rows, min_test_rows: int) -> dict:
    scored = [r for r in rows if r["alone"] is not None and r["test_rows"] >= min_test_rows]
    gp = [r["gain_personal"] for r in scored]
    gg = [r["gain_global"] for r in scored]
    return {"parties": len(scored), "personal_gains": int(sum(g >= -GAIN_TOLERANCE for g in gp)),
            "personal_better": int(sum(g > GAIN_TOLERANCE for g in gp)),
            "global_gains": int(sum(g >= -GAIN_TOLERANCE for g in gg)),
            "mean_gain_personal": float(np.mean(gp)) if gp else None,
            "mean_gain_global": float(np.mean(gg)) if gg else None}
