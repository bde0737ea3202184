"""A model per party (issue 39): the released private model combined with one party's own rows.

A party that took part in a private fit holds two things: the released global model (coefficients and the public
preprocessing, ``preprocessor_``) and its own rows. :func:`personalize` fits, on the party's own rows and in the
released model's own feature space ``z = preprocessor_.transform(x)`` (column maps and row clipping as released),

    theta_p = argmin_theta  (1/n) sum_i loss(y_i, z_i . w + b) + alpha ||w||^2 + lam ||w - w_g||^2
                            + (mu / n) (b - b_g)^2,

``theta = (w, b)``, ``theta_g = (w_g, b_g)`` the global model, ``alpha`` the global fit's regularisation (the same
objective scale as the estimators: mean loss + alpha ||w||^2; the solvers are in
:mod:`privdist.learn._personal_objective`). The coefficients are regularised towards the global ones ("Ditto", Li,
Hu, Beirami & Smith, ICML 2021, eq. 2; the proximal personal objective of pFedMe, T. Dinh, Tran & Nguyen, NeurIPS
2020, eq. 2). The intercept is never shrunk towards 0: natural silos (schools, districts) differ most by a shift of
their own, and the intercept is partially pooled towards ``b_g`` with a prior worth ``mu`` rows
(:data:`INTERCEPT_PRIOR`; Gelman & Hill 2007, ch. 12: a party of n rows puts the weight n / (n + mu) on its own mean
residual, the partial-pooling estimate), so that a tiny party is not moved far by a few rows while a large one keeps
its own shift.
``lam = 0`` is the party alone, with no prior (scikit-learn's ``Ridge(alpha=alpha n)`` /
``LogisticRegression(C=1/(2 alpha n))`` on its rows); ``lam = inf`` is the global coefficients with the party's
partially pooled intercept; ``personalize(..., strengths=(inf,), intercept_prior=inf)`` is the global model
unchanged.

The rule (``strength_`` = the chosen ``lam``):

* at least :data:`MIN_ROWS` rows (and two classes): ``lam`` is chosen from :data:`STRENGTHS` on the party's own
  rows, squared loss by exact leave-one-out (closed form through the hat matrix), logistic by :data:`REPEATS` x
  :data:`FOLDS`-fold stratified cross-validation of the log loss. The least held-out loss wins (ties: the larger
  ``lam``), and the party stays alone (``lam = 0``) unless that ``lam``'s mean held-out gain over alone exceeds k
  standard errors (a k-standard-error rule after Hastie, Tibshirani & Friedman 2009, sec. 7.10), and k depends on
  the party's size: :data:`STANDARD_ERRORS` = 3 from :data:`PROTECT_ROWS` = 40 rows on (a large party's own model
  is good, and it is not moved off it by noise), :data:`SMALL_STANDARD_ERRORS` = 1 below (a small party's own model
  is poor, and pooling pays);
* fewer rows, or a classifier's rows holding a single class (``fallback_`` says which): no cross-validation,
  ``lam = inf``: the global coefficients with the intercept partially pooled (squared loss: ``b_g`` plus
  n / (n + mu) times the mean residual; logistic: the MAP of the intercept under the prior, finite even for one
  class, and moving towards that class as its rows grow). Before issue 39's rework these parties kept the global
  model, worse than alone on average for tiny parties whose level differs from the global one.

Three or more classes: each one-vs-rest class model on its own (``strength_`` per class). Squared loss: closed
forms; logistic: damped Newton steps with the analytic gradient and Hessian (L-BFGS for many columns).

Chosen on TRAINING rows only (the benchmark's test rows were not used): the five natural-silo cases of
``benchmarks/silo_cases.py`` with each party's training rows split 70/30 again, a private global model (epsilon 1)
fitted on the inner 70 % (8 splits and draws), the personal model scored on the inner 30 % against the party alone.
Mean gain over all parties (accuracy, or RMSE alone - personal; before -> after the rework): Bangladesh +0.0002 ->
+0.0108, Guatemala -0.0205 -> +0.0121, Minnesota radon -0.1514 -> +0.0523, London exams +0.0143 -> +0.0280, Dutch
classes +1.958 -> +2.652. Parties with >= 40 training rows: personal >= alone for all of them (Bangladesh, radon,
London) at k = 3, 0.875 / 0.938 / 0.989 of them at k = 2.
On 16 further splits of Bangladesh's training rows: +0.0011 -> +0.0230.

Measured on the benchmark's test rows afterwards (``benchmarks/bench_utility.py --cases
Bangladesh,Guatemala,radon,London,Dutch --draws 5``: 5 private models at epsilon 1; before -> after): mean gain over
all parties Bangladesh -0.0266 -> -0.0185 (still below alone: parties of 1 to 4 test rows decide its mean; on
these test rows its 9 parties of fewer than 10 rows lost, summed gains -1.9 and -1.6 in draws 0 and 1, where such
parties gained on the validation splits, +0.17 per split), Guatemala -0.0149 -> +0.0410, radon +0.0828 -> +0.0898,
London +0.0077 -> +0.0190, Dutch +0.872 -> +1.257; parties with >= 20 test rows at least alone unchanged (London
25.8 of 26, Bangladesh 5 of 5, radon 2 of 2; mean gains -0.0001, +0.030, 0: the large parties mostly stay alone).
Parties at least alone over all parties: Guatemala 75.4 -> 82.6 of 100, radon 47.8 -> 55.6 of 82, but Bangladesh
49.6 -> 45.0 of 60, London 64.8 -> 59.2 of 65, Dutch 83.8 -> 73.0 of 100 (more small parties leave alone; the mean
gain says most of them gain).

Owner-only, and costs no privacy: the personal model is post-processing of the release (DP is closed under
post-processing, Dwork & Roth 2014, Prop. 2.1) and of the party's OWN rows, which it may use freely; no other
party's data is read, no message is sent and no event is added to any ledger. It is NOT a release: privdist never
writes it as one (the global release is unchanged) and it carries no guarantee about the party's own rows.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import check_finite, shown
from ..errors import ModelNotFittedError, NonNumericDataError, ParameterTypeError, \
    ShapeMismatchError, ValidationError
from ._personal_objective import _design, _log_loss, _logistic, _offset, _ridge, _ridge_loo, _squared_loss, _theta, \
    _unpack

__all__ = ["personalize", "PersonalModel", "STRENGTHS", "MIN_ROWS", "FOLDS", "INTERCEPT_PRIOR"]

#: The grid of ``lam`` tried (0 = the party alone; inf = the global coefficients, the intercept partially pooled).
STRENGTHS = (0.0, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0, math.inf)

#: Fewer rows than this: no cross-validation; the global coefficients with the party's partially pooled intercept.
MIN_ROWS = 10

#: A party of at least :data:`PROTECT_ROWS` rows stays alone unless the chosen strength's mean held-out gain over
#: alone exceeds this many standard errors. Chosen on training rows (module docstring): over the parties with >= 40
#: training rows, personal >= alone for all of them at 3, for 0.875 (Bangladesh), 0.938 (radon), 0.989 (London) at 2.
STANDARD_ERRORS = 3.0

#: Parties with fewer rows than this use :data:`SMALL_STANDARD_ERRORS` instead of :data:`STANDARD_ERRORS`.
PROTECT_ROWS = 40

#: The k of the k-standard-error rule below :data:`PROTECT_ROWS` rows. Chosen on training rows (module docstring;
#: k = 0 / 1 / 2, mean gain over all parties): London +0.0309 / +0.0280 / +0.0181 RMSE, Dutch +2.73 / +2.65 /
#: +2.57, Bangladesh +0.0109 / +0.0104 / +0.0086 (with mu = 0.5 for the classifiers); k = 1 keeps more parties at
#: least alone than k = 0 (London 52 against 42 of 64) for a tenth of the gain.
SMALL_STANDARD_ERRORS = 1.0

#: The intercept prior mu in pseudo-rows, per task (the global intercept counts as mu of the party's rows; squared
#: loss: mu = sigma^2 / tau^2; log loss: mu = 1 / (2 tau^2), tau the spread of the parties' intercepts). Chosen on
#: training rows (module docstring), mean gain over all parties: regression mu = 0 / 1 / 2 / 5 / 10: radon +0.027 /
#: +0.039 / +0.028 / -0.012 / -0.060 RMSE, London +0.017 / +0.019 / +0.020 / +0.021 / +0.022, Dutch +2.65 / +2.65 /
#: +2.63 / +2.54 / +2.41 (3 splits); classification mu = 0.05 / 0.1 / 0.25 / 0.5 / 1: Guatemala +0.010 / +0.013 /
#: +0.012 / -0.001 / -0.010 accuracy, Bangladesh +0.007 / +0.005 / +0.011 / +0.010 / +0.006 (8 splits).
INTERCEPT_PRIOR = {"regression": 1.0, "classification": 0.25}

#: Folds of the cross-validation of a classifier (fewer when a party has fewer rows per fold).
FOLDS = 5

#: Repeats of the classifier's k-fold cross-validation (reshuffled; a less noisy choice of lam on ~50 rows).
REPEATS = 3

_NOTE = ("owner-only personal model: the released global model combined with this party's own rows (post-processing "
         "of the release; no privacy spent, nothing released); NOT a release, keep with the party")


class PersonalModel:
    """One party's personalised linear model (made by :func:`personalize`; owner-only, not a release).

    Attributes:
        coef_, intercept_: The model in the released feature space (shape (d,) and float; (C, d) and (C,) for
            C >= 3 classes, one-vs-rest).
        strength_: The chosen ``lam`` (float; an array per class for C >= 3); ``inf`` = the global coefficients with
            the party's partially pooled intercept, 0 = the party alone.
        classes_: The class labels (classifiers; those of the global model).
        fallback_: Why there was no cross-validation (few rows, one class: ``strength_ = inf``), or None.
        cv_: ``{lam: mean held-out loss}`` of the cross-validation (a list of them per class for C >= 3).
        n_rows_: The party's rows used.
        global_coef_, global_intercept_: The released model it started from.
        preprocessor_, target_bounds_, n_features_in_, feature_names_in_: From the release (predictions of a
            bounded target are clipped to ``target_bounds_`` widened to the party's own target range).
        note: That it is owner-only and not a release.
    """

    def __init__(self, task: str, coef, intercept, strength, *, classes=None, fallback=None, cv=None, n_rows=0,
                 global_coef=None, global_intercept=None, preprocessor=None, target_bounds=None, n_features=0,
                 feature_names=None):
        self.task = task
        self.coef_, self.intercept_, self.strength_ = coef, intercept, strength
        self.classes_ = classes
        self.fallback_, self.cv_, self.n_rows_ = fallback, cv, n_rows
        self.global_coef_, self.global_intercept_ = global_coef, global_intercept
        self.preprocessor_, self.target_bounds_, self.n_features_in_ = preprocessor, target_bounds, n_features
        if feature_names is not None:  # a DataFrame's columns are then matched by name
            self.feature_names_in_ = feature_names
        self.note = _NOTE

    def __repr__(self) -> str:
        return f"PersonalModel(task={self.task!r}, strength_={self.strength_!r}, n_rows_={self.n_rows_})"

    def _features(self, X):
        return _released_features(self, check_features(self, X))

    def decision_function(self, X):
        """Scores (classification): shape (n,) for two classes (positive = ``classes_[1]``), (n, C) for C >= 3."""
        Z = self._features(X)
        return Z @ np.asarray(self.coef_).T + self.intercept_

    def predict(self, X):
        if self.task == "regression":
            score = self._features(X) @ self.coef_ + self.intercept_
            return score if self.target_bounds_ is None else np.clip(score, *self.target_bounds_)
        score = self.decision_function(X)
        if score.ndim == 2:
            return self.classes_[np.argmax(score, axis=1)]
        return self.classes_[(score > 0).astype(int)]

    def predict_proba(self, X):
        """Class probabilities (classification; one-vs-rest normalised sigmoids for C >= 3, as the estimators)."""
        from scipy.special import expit

        if self.task != "classification":
            raise ValidationError("predict_proba is for a classifier's personal model; this one is a regression")
        score = self.decision_function(X)
        if getattr(self, "multinomial_", False):  # the party's multinomial alone model (personal_multi)
            from .personal_multi import softmax

            return softmax(score)
        if score.ndim == 2:
            from .multiclass import ovr_proba

            return ovr_proba(score)
        p = expit(score)
        return np.column_stack([1.0 - p, p])

    def score(self, X, y) -> float:
        """Accuracy (classification) or R^2 (regression), as scikit-learn's."""
        from sklearn.metrics import accuracy_score, r2_score

        pred = self.predict(X)
        return float(accuracy_score(y, pred) if self.task == "classification" else r2_score(y, pred))


def _released_features(model, X) -> np.ndarray:
    Z = model.preprocessor_.transform(X)
    return np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z, dtype=float)


def check_features(model, X) -> np.ndarray:
    """``X`` as a float array with the model's columns (a DataFrame's columns matched by name), else a named error:
    :class:`ShapeMismatchError` (wrong column count or names), :class:`NonNumericDataError`,
    :class:`NonFiniteDataError`."""
    names = getattr(model, "feature_names_in_", None)
    if hasattr(X, "columns") and names is not None:
        missing = [str(n) for n in names if n not in set(X.columns)]
        if missing:
            raise ShapeMismatchError(f"X lacks the model's column(s) {shown(missing[:5])}")
        X = X[list(names)]
    X = X.toarray() if hasattr(X, "toarray") else X
    X = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
    if X.ndim != 2:
        raise ShapeMismatchError(f"X must be 2-D (rows x columns), got shape {X.shape}")
    d = int(model.n_features_in_)
    if X.shape[1] != d:
        raise ShapeMismatchError(f"X has {X.shape[1]} column(s), the model was fitted on {d}")
    return _finite_floats(X, "X", "X must be numeric (the model's columns, preprocessed as for its fit)")


def _check_model(model) -> None:
    if getattr(model, "coef_", None) is None or getattr(model, "preprocessor_", None) is None:
        raise ModelNotFittedError(f"{type(model).__name__} is not fitted: call fit first (personalize combines a "
                                  "fitted, released model with the party's own rows)")
    if getattr(model, "_regularizer", "l2") != "l2" or getattr(model, "_loss", None) not in ("logistic", "squared"):
        raise ParameterTypeError(f"personalize needs a horizontal l2 model (DistributedLogisticRegression or "
                                 f"DistributedRidge), got {type(model).__name__}")


def personalize(model, X, y, *, random_state=None, strengths=STRENGTHS, folds: int = FOLDS,
                min_rows: int = MIN_ROWS, intercept_prior: float | None = None) -> PersonalModel:
    """The party's personal model: the released ``model`` regularised towards on the party's own rows ``X, y``, its
    intercept partially pooled (the rule: module docstring). Owner-only; spends no privacy; ``model`` is not
    changed.

    Args:
        model: A fitted :class:`~privdist.learn.DistributedLogisticRegression` (two classes or one-vs-rest) or
            :class:`~privdist.learn.DistributedRidge`.
        X, y: The party's own rows (the model's columns, as passed to its ``fit``) and targets.
        random_state: Seed of the cross-validation folds (None: 0; the result is deterministic either way).
        strengths: The grid of ``lam`` (>= 0; ``inf`` allowed).
        folds: Cross-validation folds (at most one per row pair).
        min_rows: Fewer rows: no cross-validation, the global coefficients with the partially pooled intercept
            (``fallback_``).
        intercept_prior: ``mu``, the weight of the global intercept in rows (>= 0; ``inf``: the global intercept
            kept; None: :data:`INTERCEPT_PRIOR` of the task). The party alone (``lam = 0``) has no prior.

    Raises:
        ModelNotFittedError: ``model`` is not fitted; ParameterTypeError: not a horizontal l2 model;
        ShapeMismatchError: wrong column count, or ``y`` not one value per row; ValidationError: a label the
        model does not know, a non-numeric or non-finite target, a bad grid or intercept prior.
    """
    _check_model(model)
    X = check_features(model, X)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ShapeMismatchError(f"y must hold one value per row of X ({X.shape[0]}), got shape {y.shape}")
    grid = sorted({float(v) for v in strengths}, reverse=True)
    if not grid or any(not (v >= 0) for v in grid):
        raise ValidationError(f"strengths must be numbers >= 0 (inf allowed), got {shown(strengths)}")
    seed = 0 if random_state is None else int(random_state)
    Z = _released_features(model, X)
    task = "classification" if model._loss == "logistic" else "regression"
    mu = _prior(INTERCEPT_PRIOR[task] if intercept_prior is None else intercept_prior)
    alpha = float(model.alpha)
    intercept = bool(getattr(model, "fit_intercept", True))
    common = dict(n_rows=int(X.shape[0]), global_coef=np.copy(model.coef_), global_intercept=np.copy(model.intercept_),
                  preprocessor=model.preprocessor_, n_features=int(model.n_features_in_),
                  feature_names=getattr(model, "feature_names_in_", None))
    if task == "regression":
        y = _numeric_target(y)
        bounds = getattr(model, "target_bounds_", None)
        if bounds is not None and y.size:
            bounds = (min(float(bounds[0]), float(y.min())), max(float(bounds[1]), float(y.max())))
        fallback = _too_few(y.size, min_rows)
        theta_g = _theta(model.coef_, model.intercept_, intercept)
        theta, lam, cv = (_offset(_design(Z, intercept), y, theta_g, mu / max(y.size, 1), intercept, False),
                          math.inf, {}) if fallback else _select(
            _ridge, _squared_loss(bounds), Z, y, theta_g, alpha, intercept, grid, folds, seed, stratify=False,
            bounds=bounds, mu=mu)
        coef, b = _unpack(theta, intercept)
        return PersonalModel(task, coef, b, lam, fallback=fallback, cv=cv, target_bounds=bounds, **common)
    classes = np.asarray(model.classes_)
    unknown = np.setdiff1d(np.unique(y), classes)
    if unknown.size:
        raise ValidationError(f"y holds label(s) the model does not know: {shown(list(unknown[:5]))}; its classes "
                              f"are {shown(list(classes))}")
    fallback = _too_few(y.size, min_rows) or (
        f"the party's rows hold one class only ({shown(y[0])}): {_POOLED}" if len(np.unique(y)) < 2 else None)
    multi = np.ndim(model.coef_) == 2
    coefs, intercepts = (np.atleast_2d(model.coef_), np.atleast_1d(model.intercept_))
    positives = classes if multi else classes[1:]
    out_coef, out_b, lams, cvs = [], [], [], []
    for c, positive in enumerate(positives):
        theta_g = _theta(coefs[c], intercepts[c], intercept)
        y_pm = np.where(y == positive, 1.0, -1.0)
        theta, lam, cv = (_offset(_design(Z, intercept), y_pm, theta_g, mu / max(y.size, 1), intercept, True),
                          math.inf, {}) if fallback else _select(
            _logistic, _log_loss, Z, y_pm, theta_g, alpha, intercept, grid, folds, seed, stratify=True, mu=mu)
        coef, b = _unpack(theta, intercept)
        out_coef.append(coef), out_b.append(b), lams.append(lam), cvs.append(cv)
    if multi:
        personal = PersonalModel(task, np.stack(out_coef), np.array(out_b), np.array(lams), classes=classes,
                                 fallback=fallback, cv=cvs, **common)
        if fallback is None:  # the party's multinomial alone model as a candidate (personal_multi)
            from .personal_multi import with_multinomial_alone

            A = _design(Z, intercept)
            fit = lambda tr, c: _logistic(A[tr], np.where(y[tr] == classes[c], 1.0, -1.0),  # noqa: E731
                                          _theta(coefs[c], intercepts[c], intercept), alpha, lams[c], intercept)
            personal = with_multinomial_alone(personal, Z, A, y, classes, fit,
                                              lambda labels: _folds(labels, folds, seed, True, REPEATS), alpha,
                                              intercept, STANDARD_ERRORS)
        return personal
    return PersonalModel(task, out_coef[0], out_b[0], lams[0], classes=classes, fallback=fallback, cv=cvs[0],
                         **common)


_POOLED = "the global coefficients with the party's intercept partially pooled (no cross-validation)"


def _too_few(n: int, min_rows: int) -> str | None:
    if n < max(int(min_rows), 2):
        return f"only {n} row(s), fewer than {max(int(min_rows), 2)}: {_POOLED}"
    return None


def _prior(value) -> float:
    """The intercept prior as a float >= 0 (inf allowed), else :class:`ValidationError`."""
    try:
        mu = float(value)
    except (TypeError, ValueError):
        mu = math.nan
    if not (mu >= 0):
        raise ValidationError(f"intercept_prior must be a number >= 0 (inf allowed), got {shown(value)}")
    return mu


def _finite_floats(a, name: str, not_numeric: str) -> np.ndarray:
    """``a`` as floats: :class:`NonNumericDataError` (``not_numeric``) if it holds text, else the project's
    :func:`~privdist._checks.check_finite` (:class:`NonFiniteDataError` on NaN or inf)."""
    try:
        a = np.asarray(a).astype(float)
    except (TypeError, ValueError):
        raise NonNumericDataError(not_numeric) from None
    return check_finite(a, name)


def _numeric_target(y) -> np.ndarray:
    return _finite_floats(y, "y", "y must be numeric for a regression model's personal model")



def _folds(y, folds: int, seed: int, stratify: bool, repeats: int = 1):
    """``repeats`` k-fold splits (stratified when every class fills the folds), reshuffled per repeat from ``seed``."""
    from sklearn.model_selection import KFold, StratifiedKFold

    k = max(2, min(int(folds), y.size // 2))
    out = []
    for r in range(repeats):
        rs = np.random.SeedSequence([seed, r]).generate_state(1)[0]
        if stratify and np.min(np.unique(y, return_counts=True)[1]) >= k:
            out += list(StratifiedKFold(k, shuffle=True, random_state=rs).split(np.zeros(y.size), y))
        else:
            out += list(KFold(k, shuffle=True, random_state=rs).split(np.zeros(y.size)))
    return out


def _standard_errors(n: int) -> float:
    """The k of the k-standard-error rule for a party of ``n`` rows (:data:`STANDARD_ERRORS` from
    :data:`PROTECT_ROWS` rows on, :data:`SMALL_STANDARD_ERRORS` below)."""
    return STANDARD_ERRORS if n >= PROTECT_ROWS else SMALL_STANDARD_ERRORS


def _rate(lam: float, mu: float, n: int) -> float:
    """The intercept prior per row, mu / n, for ``lam > 0``; the party alone (``lam = 0``) has none."""
    return 0.0 if lam == 0 else mu / max(n, 1)


def _select(solve, loss, Z, y, theta_g, alpha, fit_intercept, grid, folds, seed, stratify, bounds=None, mu=0.0):
    """``(theta, lam, {lam: held-out loss})``, refitted on every row at the chosen lam. Held-out losses per unit:
    squared loss, exact leave-one-out per row (:func:`_ridge_loo`); logistic, :data:`REPEATS` x k-fold (each fold's
    mean log loss; the grid is walked from lam = inf down, each fit started at the previous one). Every
    ``lam > 0`` carries the intercept prior ``mu`` (pseudo-rows). The least mean loss wins (ties: the larger lam),
    and the party stays alone (``lam = 0``) unless the winner's mean gain over alone exceeds :func:`_standard_errors`
    standard errors of the per-unit gains."""
    A = _design(Z, fit_intercept)
    n = A.shape[0]
    per_unit = {}
    if solve is _ridge:
        for lam in grid:
            per_unit[lam] = _ridge_loo(A, y, theta_g, alpha, lam, fit_intercept, bounds, prior=_rate(lam, mu, n))
    else:
        splits = _folds(y, folds, seed, stratify, REPEATS)
        starts = [None] * len(splits)
        for lam in grid:
            losses = []
            for i, (tr, te) in enumerate(splits):
                prior = _rate(lam, mu, tr.size)
                theta = solve(A[tr], y[tr], theta_g, alpha, lam, fit_intercept, start=starts[i], prior=prior)
                if not math.isinf(lam):
                    starts[i] = theta
                losses.append(loss(A[te], y[te], theta))
            per_unit[lam] = np.array(losses)
    cv = {lam: float(np.mean(v)) for lam, v in per_unit.items()}
    best = min(grid, key=lambda lam: (cv[lam], -lam))
    if 0.0 in per_unit and best != 0.0:  # alone unless the gain over it exceeds k standard errors
        gain = per_unit[0.0] - per_unit[best]
        if gain.mean() <= _standard_errors(n) * gain.std(ddof=1) / math.sqrt(gain.size):
            best = 0.0
    return solve(A, y, theta_g, alpha, best, fit_intercept, prior=_rate(best, mu, n)), best, cv
