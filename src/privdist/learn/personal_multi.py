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
party's multinomial alone model (:class:`MultinomialPersonal`, ``strength_`` 0 for every class, ``multinomial_``
True, softmax probabilities). Parties whose rows miss a class, or hold fewer than ``FOLDS`` rows of one, keep the
one-vs-rest personal model (``multinomial_note_`` says why). The one-vs-rest candidate keeps, in every fold, the
strengths chosen on all the party's rows (not re-selected per fold): if anything this favours it, i.e. the rule
moves a party off the one-vs-rest personal model only on clear evidence. Like the rest of the personal model: the
party's own rows and the release only; no privacy spent, nothing released.
"""

from __future__ import annotations

import math

import numpy as np

from .personal import PersonalModel

__all__ = ["with_multinomial_alone", "MultinomialPersonal", "softmax", "CONSIDER_MULTINOMIAL"]

#: Consider the multinomial alone model at all (False: the one-vs-rest personal model as before issue 39's item 4).
CONSIDER_MULTINOMIAL = True


def softmax(scores) -> np.ndarray:
    """Row-wise softmax of ``(n, C)`` scores (the multinomial model's probabilities)."""
    from scipy.special import softmax as _softmax

    return _softmax(np.asarray(scores, dtype=float), axis=1)


class MultinomialPersonal(PersonalModel):
    """A :class:`~privdist.learn.personal.PersonalModel` holding the party's multinomial alone model (module
    docstring): the class of the largest score, softmax probabilities."""

    multinomial_ = True

    def predict_proba(self, X):
        return softmax(self.decision_function(X))


def _log_loss(proba, y_idx) -> float:
    p = np.clip(proba[np.arange(len(y_idx)), y_idx], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def with_multinomial_alone(personal, Z, y, classes, theta_gs, alpha: float, fit_intercept: bool, folds: int,
                           seed: int):
    """``personal`` (one-vs-rest, C >= 3) or the party's multinomial alone model, chosen on its own rows (module
    docstring). ``Z``: the rows in the released feature space; ``theta_gs``: the global model per class."""
    from .multiclass import ovr_proba
    from .party_eval import alone_model
    from .personal import REPEATS, STANDARD_ERRORS, _design, _folds, _logistic

    if not CONSIDER_MULTINOMIAL:
        return personal
    classes = np.asarray(classes)
    present, counts = np.unique(y, return_counts=True)
    k = max(2, min(int(folds), y.size // 2))
    if len(present) < len(classes) or counts.min() < k:
        personal.multinomial_note_ = ("the multinomial alone model was not considered: the party's rows miss a "
                                      f"class or hold fewer than {k} rows of one")
        return personal
    y_idx = np.searchsorted(classes, y) if np.all(classes[:-1] <= classes[1:]) else \
        np.array([int(np.flatnonzero(classes == v)[0]) for v in y])
    A = _design(Z, fit_intercept)
    lams = np.atleast_1d(np.asarray(personal.strength_, dtype=float))
    gains = []
    for tr, te in _folds(y_idx, folds, seed, True, REPEATS):
        scores = np.empty((te.size, len(classes)))
        for c in range(len(classes)):
            y_pm = np.where(y_idx[tr] == c, 1.0, -1.0)
            theta = _logistic(A[tr], y_pm, theta_gs[c], alpha, lams[c], fit_intercept)
            scores[:, c] = A[te] @ theta
        ovr = _log_loss(ovr_proba(scores), y_idx[te])
        sk = alone_model("classification", alpha, tr.size).fit(Z[tr], y_idx[tr])
        alone = _log_loss(sk.predict_proba(Z[te]), y_idx[te])
        gains.append(alone - ovr)  # positive: the one-vs-rest personal model is better
    gains = np.asarray(gains)
    personal.multinomial_cv_ = {"ovr_gain_mean": float(gains.mean()),
                                "ovr_gain_se": float(gains.std(ddof=1) / math.sqrt(gains.size))}
    if gains.mean() > STANDARD_ERRORS * gains.std(ddof=1) / math.sqrt(gains.size):
        personal.multinomial_note_ = "the one-vs-rest personal model beat the multinomial alone model"
        return personal
    sk = alone_model("classification", alpha, y.size).fit(Z, y_idx)
    coef, intercept = np.asarray(sk.coef_, dtype=float), np.asarray(sk.intercept_, dtype=float)
    if not fit_intercept:  # alone_model fits an intercept; refit without one for a model without
        from sklearn.linear_model import LogisticRegression

        sk = LogisticRegression(C=1.0 / max(2 * alpha * y.size, 1e-12), fit_intercept=False,
                                solver="newton-cholesky", max_iter=200).fit(Z, y_idx)
        coef, intercept = np.asarray(sk.coef_, dtype=float), np.zeros(len(classes))
    out = MultinomialPersonal("classification", coef, intercept, np.zeros(len(classes)), classes=classes,
                              fallback=personal.fallback_, cv=personal.cv_, n_rows=personal.n_rows_,
                              global_coef=personal.global_coef_, global_intercept=personal.global_intercept_,
                              preprocessor=personal.preprocessor_, n_features=personal.n_features_in_,
                              feature_names=getattr(personal, "feature_names_in_", None))
    out.multinomial_cv_ = personal.multinomial_cv_
    out.multinomial_note_ = ("the party's multinomial alone model: the one-vs-rest personal model did not beat it by "
                             f"{STANDARD_ERRORS:g} standard errors")
    return out
