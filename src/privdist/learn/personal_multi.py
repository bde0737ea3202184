"""Three or more classes: the party's exact multinomial "alone" model as a candidate of its personal model (issue 39).

For C >= 3 classes the released model is one-vs-rest, and so is :func:`~privdist.learn.personal.personalize`'s
personal model (one pull ``lam`` per class). The party "alone" of :mod:`privdist.learn.party_eval` is scikit-learn's
multinomial logistic regression on the party's rows (``alone_model``: mean log loss + alpha ||w||^2, the estimators'
objective scale), so a personal model at strength 0 (one-vs-rest alone) was not that model.
:func:`with_multinomial_alone` makes the two consistent: on the party's own rows, the same
:data:`~privdist.learn.personal.REPEATS` x :data:`~privdist.learn.personal.FOLDS` stratified folds score, by the
multi-class log loss of the held-out rows,

* the one-vs-rest personal model at the chosen strengths (refitted on each fold's training part; probabilities:
  scikit-learn's normalised one-vs-rest sigmoids, as the estimators'), and
* the multinomial alone model (``alone_model`` refitted on each fold's training part; softmax probabilities).

Alone is the default, as in the binary rule: the one-vs-rest personal model is kept only if its mean held-out gain
over the multinomial alone model exceeds :data:`~privdist.learn.personal.STANDARD_ERRORS` standard errors of the
per-fold gains (the k-standard-error rule of :mod:`privdist.learn.personal`); otherwise the personal model IS the
party's multinomial alone model (``strength_`` 0 for every class, ``multinomial_`` True: softmax probabilities in
:meth:`~privdist.learn.personal.PersonalModel.predict_proba`). Parties whose rows miss a class (in all their rows or
in a fold's training part) keep the one-vs-rest personal model (``multinomial_note_`` says why). The one-vs-rest
candidate keeps, in every fold, the
strengths chosen on all the party's rows (not re-selected per fold): if anything this favours it, i.e. the rule
moves a party off the one-vs-rest personal model only on clear evidence. Like the rest of the personal model: the
party's own rows and the release only; no privacy spent, nothing released.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["with_multinomial_alone", "alone_model", "softmax", "CONSIDER_MULTINOMIAL"]

#: Consider the multinomial alone model at all (False: the one-vs-rest personal model as before issue 39's item 4).
CONSIDER_MULTINOMIAL = True


def softmax(scores) -> np.ndarray:
    """Row-wise softmax of ``(n, C)`` scores (the multinomial model's probabilities)."""
    from scipy.special import softmax as _softmax

    return _softmax(np.asarray(scores, dtype=float), axis=1)


def alone_model(task: str, alpha: float, n_rows: int):
    """scikit-learn's model with the estimators' objective scale (mean loss + alpha ||w||^2) for ``n_rows`` rows: the
    objective of ``privdist fit``'s baselines (``cli.fit_horizontal.sk_model``), solved by Newton-Cholesky (the same
    optimum; lbfgs took ~10x longer on 20 parties of 10 columns). The "alone" of
    :mod:`privdist.learn.party_eval`, defined here so that this module imports neither it nor
    :mod:`privdist.learn.personal`."""
    from sklearn.linear_model import LogisticRegression, Ridge

    if task == "classification":  # C = 1 / (2 alpha n)
        return LogisticRegression(C=1.0 / max(2 * alpha * n_rows, 1e-12), solver="newton-cholesky", max_iter=200)
    return Ridge(alpha=alpha * n_rows)


def _log_loss(proba, y_idx) -> float:
    p = np.clip(proba[np.arange(len(y_idx)), y_idx], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def with_multinomial_alone(personal, Z, A, y, classes, fit_ovr, splits_of, alpha: float, fit_intercept: bool,
                           standard_errors: float):
    """``personal`` (one-vs-rest, C >= 3) or, in a copy, the party's multinomial alone model, chosen on its own rows
    (module docstring). ``Z``: the rows in the released feature space, ``A`` with the intercept column;
    ``fit_ovr(rows, c)``: class ``c``'s one-vs-rest personal model at its chosen strength on ``rows``;
    ``splits_of(labels)``: personalize's stratified folds of the class indices."""
    import copy

    from .multiclass import ovr_proba

    if not CONSIDER_MULTINOMIAL:
        return personal
    classes = np.asarray(classes)
    present, counts = np.unique(y, return_counts=True)
    splits = None
    if len(present) == len(classes):
        y_idx = np.array([int(np.flatnonzero(classes == v)[0]) for v in y])
        splits = splits_of(y_idx)
    if splits is None or not _every_class_in_every_fold(splits, y_idx, len(classes)):
        personal.multinomial_note_ = ("the multinomial alone model was not considered: the party's rows miss a "
                                      "class, or a fold's training rows do")
        return personal
    gains = []
    for tr, te in splits:
        scores = np.column_stack([A[te] @ fit_ovr(tr, c) for c in range(len(classes))])
        ovr = _log_loss(ovr_proba(scores), y_idx[te])
        sk = alone_model("classification", alpha, tr.size).fit(Z[tr], y_idx[tr])
        alone = _log_loss(sk.predict_proba(Z[te]), y_idx[te])
        gains.append(alone - ovr)  # positive: the one-vs-rest personal model is better
    gains = np.asarray(gains)
    se = float(gains.std(ddof=1) / math.sqrt(gains.size))
    personal.multinomial_cv_ = {"ovr_gain_mean": float(gains.mean()), "ovr_gain_se": se}
    if gains.mean() > standard_errors * se:
        personal.multinomial_note_ = "the one-vs-rest personal model beat the multinomial alone model"
        return personal
    if fit_intercept:
        sk = alone_model("classification", alpha, y.size).fit(Z, y_idx)
        intercept = np.asarray(sk.intercept_, dtype=float)
    else:  # alone_model fits an intercept; a model without one is refitted without
        from sklearn.linear_model import LogisticRegression

        sk = LogisticRegression(C=1.0 / max(2 * alpha * y.size, 1e-12), fit_intercept=False,
                                solver="newton-cholesky", max_iter=200).fit(Z, y_idx)
        intercept = np.zeros(len(classes))
    out = copy.copy(personal)
    out.coef_, out.intercept_ = np.asarray(sk.coef_, dtype=float), intercept
    out.strength_, out.multinomial_ = np.zeros(len(classes)), True
    out.multinomial_note_ = ("the party's multinomial alone model: the one-vs-rest personal model did not beat it by "
                             f"{standard_errors:g} standard errors")
    return out


def _every_class_in_every_fold(splits, y_idx, n_classes: int) -> bool:
    return all(np.unique(y_idx[tr]).size == n_classes for tr, _ in splits)
