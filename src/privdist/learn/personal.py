"""A model per party (issue 39): the released private model combined with one party's own rows.

A party that took part in a private fit holds two things: the released global model (coefficients and the public
preprocessing, ``preprocessor_``) and its own rows. :func:`personalize` fits, on the party's own rows and in the
released model's own feature space ``z = preprocessor_.transform(x)`` (column maps and row clipping as released),

    theta_p = argmin_theta  (1/n) sum_i loss(y_i, z_i . w + b) + alpha ||w||^2 + lam ||w - w_g||^2,

``theta = (w, b)``, ``theta_g = (w_g, b_g)`` the global model, ``alpha`` the global fit's regularisation (the same
objective scale as the estimators: mean loss + alpha ||w||^2). The intercept is free: neither shrunk towards 0 (as in
scikit-learn) nor pulled towards ``b_g``: natural silos (schools, districts) differ most by a shift of their own,
which is what a party's rows estimate best, while the coefficients borrow strength from the global model (partial
pooling with a party-specific intercept, Gelman & Hill 2007, ch. 12). This is regularising towards the global model
("Ditto", Li, Hu, Beirami & Smith, ICML 2021, eq. 2; the proximal personal objective of pFedMe, T. Dinh, Tran &
Nguyen, NeurIPS 2020, eq. 2), on the coefficients. ``lam = 0`` is the party alone (scikit-learn's
``Ridge(alpha=alpha n)`` / ``LogisticRegression(C=1/(2 alpha n))`` on its rows); ``lam = inf`` is the global model
unchanged (intercept included); a large finite ``lam`` is the global coefficients with the party's own intercept.
``lam`` (``strength_``) is chosen from :data:`STRENGTHS` on the party's own rows: squared loss, by exact
leave-one-out (closed form through the hat matrix, :func:`_ridge_loo`); logistic, by :data:`REPEATS` x
:data:`FOLDS`-fold stratified cross-validation of the log loss. The least held-out loss wins (ties: the larger
``lam``), and the party stays alone (``lam = 0``) unless that ``lam``'s mean held-out gain over alone exceeds
:data:`STANDARD_ERRORS` standard errors (a conservative k-standard-error rule after Hastie, Tibshirani & Friedman
2009, sec. 7.10: a party is not moved off its own model by noise). Squared loss: a closed form;
logistic: damped Newton steps with the analytic gradient and Hessian (L-BFGS for many columns), started at
the global model; three or more classes: each one-vs-rest
class model on its own (``strength_`` per class).

Owner-only, and costs no privacy: the personal model is post-processing of the release (DP is closed under
post-processing, Dwork & Roth 2014, Prop. 2.1) and of the party's OWN rows, which it may use freely; no other
party's data is read, no message is sent and no event is added to any ledger. It is NOT a release: privdist never
writes it as one (the global release is unchanged) and it carries no guarantee about the party's own rows.

Fallbacks (stated in ``fallback_``, the global model kept, ``strength_ = inf``): fewer than :data:`MIN_ROWS` rows,
or a classifier's rows holding a single class.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import check_finite, shown
from ..errors import ModelNotFittedError, NonNumericDataError, ParameterTypeError, \
    ShapeMismatchError, ValidationError

__all__ = ["personalize", "PersonalModel", "STRENGTHS", "MIN_ROWS", "FOLDS"]

#: The grid of ``lam`` tried (0 = the party alone, inf = the global model unchanged).
STRENGTHS = (0.0, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0, math.inf)

#: Fewer rows than this: no cross-validation, the global model is kept.
MIN_ROWS = 10

#: The party stays alone unless the chosen strength's mean held-out gain over alone exceeds this many standard errors.
#: Chosen on TRAINING rows only: the natural-silo cases of ``benchmarks/silo_cases.py`` with each party's training
#: rows split 70/30 again (3 private global models, epsilon 1; parties with >= 14 validation rows): parties with the
#: personal model >= alone, London exams 24/28, 24/28, 22/28 at 1; 25, 26, 28 at 2; 28, 28, 28 at 3 (mean gain
#: +0.0072, +0.0004, +0.0073 RMSE); Bangladesh 3, 2, 3 of 5 at 1 (mean gain < 0); 5, 5, 5 at 3 (+0.014 to +0.029).
STANDARD_ERRORS = 3.0

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
        strength_: The chosen ``lam`` (float; an array per class for C >= 3); ``inf`` = the global model unchanged,
            0 = the party alone.
        classes_: The class labels (classifiers; those of the global model).
        fallback_: Why the global model was kept without cross-validation, or None.
        cv_: ``{lam: mean held-out loss}`` of the cross-validation (a list of them per class for C >= 3).
        n_rows_: The party's rows used.
        global_coef_, global_intercept_: The released model it started from.
        preprocessor_, target_bounds_, n_features_in_, feature_names_in_: From the release (predictions of a bounded target are
            clipped to ``target_bounds_`` widened to the party's own target range).
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
                min_rows: int = MIN_ROWS) -> PersonalModel:
    """The party's personal model: the released ``model`` regularised towards on the party's own rows ``X, y``
    (module docstring). Owner-only; spends no privacy; ``model`` is not changed.

    Args:
        model: A fitted :class:`~privdist.learn.DistributedLogisticRegression` (two classes or one-vs-rest) or
            :class:`~privdist.learn.DistributedRidge`.
        X, y: The party's own rows (the model's columns, as passed to its ``fit``) and targets.
        random_state: Seed of the cross-validation folds (None: 0; the result is deterministic either way).
        strengths: The grid of ``lam`` (>= 0; ``inf`` allowed).
        folds: Cross-validation folds (at most one per row pair).
        min_rows: Fewer rows: the global model is kept (``fallback_``).

    Raises:
        ModelNotFittedError: ``model`` is not fitted; ParameterTypeError: not a horizontal l2 model;
        ShapeMismatchError: wrong column count, or ``y`` not one value per row; ValidationError: a label the
        model does not know, a non-numeric or non-finite target, a bad grid.
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
        theta, lam, cv = (theta_g, math.inf, {}) if fallback else _select(
            _ridge, _squared_loss(bounds), Z, y, theta_g, alpha, intercept, grid, folds, seed, stratify=False,
            bounds=bounds)
        coef, b = _unpack(theta, intercept)
        return PersonalModel(task, coef, b, lam, fallback=fallback, cv=cv, target_bounds=bounds, **common)
    classes = np.asarray(model.classes_)
    unknown = np.setdiff1d(np.unique(y), classes)
    if unknown.size:
        raise ValidationError(f"y holds label(s) the model does not know: {shown(list(unknown[:5]))}; its classes "
                              f"are {shown(list(classes))}")
    fallback = _too_few(y.size, min_rows) or (
        f"the party's rows hold one class only ({shown(y[0])}): the global model kept" if len(np.unique(y)) < 2
        else None)
    multi = np.ndim(model.coef_) == 2
    coefs, intercepts = (np.atleast_2d(model.coef_), np.atleast_1d(model.intercept_))
    positives = classes if multi else classes[1:]
    out_coef, out_b, lams, cvs = [], [], [], []
    for c, positive in enumerate(positives):
        theta_g = _theta(coefs[c], intercepts[c], intercept)
        y_pm = np.where(y == positive, 1.0, -1.0)
        theta, lam, cv = (theta_g, math.inf, {}) if fallback else _select(
            _logistic, _log_loss, Z, y_pm, theta_g, alpha, intercept, grid, folds, seed, stratify=True)
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


def _too_few(n: int, min_rows: int) -> str | None:
    if n < max(int(min_rows), 2):
        return f"only {n} row(s), fewer than {max(int(min_rows), 2)}: the global model kept (no cross-validation)"
    return None


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


def _theta(coef, intercept, fit_intercept: bool) -> np.ndarray:
    coef = np.asarray(coef, dtype=float).ravel()
    return np.append(coef, float(intercept)) if fit_intercept else coef


def _unpack(theta, fit_intercept: bool):
    return (theta[:-1].copy(), float(theta[-1])) if fit_intercept else (theta.copy(), 0.0)


def _design(Z, fit_intercept: bool) -> np.ndarray:
    return np.hstack([Z, np.ones((Z.shape[0], 1))]) if fit_intercept else Z


def _penalty(d: int, alpha: float, lam: float, fit_intercept: bool) -> np.ndarray:
    """The diagonal of the quadratic penalty: alpha + lam on the coefficients; the intercept is free (0): neither
    shrunk towards 0 nor pulled towards the global intercept (a party's own shift is what its rows estimate best)."""
    p = np.full(d, alpha + lam)
    if fit_intercept:
        p[-1] = 0.0
    return p


def _pull(d: int, lam: float, fit_intercept: bool) -> np.ndarray:
    """The diagonal of the pull towards the global model: lam on the coefficients, 0 on the intercept."""
    q = np.full(d, lam)
    if fit_intercept:
        q[-1] = 0.0
    return q


def _ridge(A, y, theta_g, alpha, lam, fit_intercept, start=None):
    """Closed form of the squared-loss objective: (A'A/n + P) theta = A'y/n + Q theta_g (P, Q: :func:`_penalty`,
    :func:`_pull`)."""
    if math.isinf(lam):
        return theta_g.copy()
    H, rhs = _ridge_system(A, y, theta_g, alpha, lam, fit_intercept)
    try:
        return np.linalg.solve(H, rhs)
    except np.linalg.LinAlgError:  # alpha = lam = 0 on collinear rows: the least-norm solution
        return np.linalg.lstsq(H, rhs, rcond=None)[0]


def _ridge_system(A, y, theta_g, alpha, lam, fit_intercept):
    n, d = A.shape
    H = A.T @ A / n + np.diag(_penalty(d, alpha, lam, fit_intercept))
    return H, A.T @ y / n + _pull(d, lam, fit_intercept) * theta_g


def _ridge_loo(A, y, theta_g, alpha, lam, fit_intercept, bounds) -> np.ndarray:
    """Exact leave-one-out squared errors of the ridge personal model (the penalty held at n P, as scikit-learn's
    ``RidgeCV``): theta = (A'A + nP)^-1 (A'y + nQ theta_g) is linear in y with hat matrix
    h = A (A'A + nP)^-1 A', so the prediction without row i is y_i - r_i / (1 - h_ii) (Hastie, Tibshirani &
    Friedman 2009, eq. 7.52 / sec. 7.10.1; the shift nQ theta_g does not depend on row i). ``lam = inf``: the global
    model's errors. Predictions are clipped to ``bounds`` as the model's."""
    if math.isinf(lam):
        pred = A @ theta_g
    else:
        H, rhs = _ridge_system(A, y, theta_g, alpha, lam, fit_intercept)
        Hinv = np.linalg.pinv(H)
        theta = Hinv @ rhs
        h = np.einsum("ij,jk,ik->i", A, Hinv, A) / A.shape[0]
        resid = y - A @ theta
        pred = y - resid / np.maximum(1.0 - h, 1e-12)
    if bounds is not None:
        pred = np.clip(pred, *bounds)
    return (pred - y) ** 2


def _logistic(A, y_pm, theta_g, alpha, lam, fit_intercept, start=None):
    """Minimise mean log(1 + exp(-y a.theta)) + alpha ||w||^2 + lam ||theta - theta_g||^2: damped Newton steps
    (analytic gradient and Hessian; a party's model has few columns, and Newton needs ~10 solves where L-BFGS took
    ~20 iterations of far slower calls here), or L-BFGS above :data:`_NEWTON_MAX_COLUMNS` columns."""
    from scipy.special import expit

    if math.isinf(lam):
        return theta_g.copy()
    n, d = A.shape
    p, q = _penalty(d, alpha, 0.0, fit_intercept), _pull(d, lam, fit_intercept)

    def f(theta):
        diff = theta - theta_g
        return float(np.mean(np.logaddexp(0.0, -y_pm * (A @ theta))) + np.sum(p * theta**2) + np.sum(q * diff**2))

    def grad(theta):
        return -A.T @ (y_pm * expit(-y_pm * (A @ theta))) / n + 2 * p * theta + 2 * q * (theta - theta_g)

    theta = (theta_g if start is None else start).astype(float).copy()
    if d > _NEWTON_MAX_COLUMNS:
        from scipy.optimize import minimize

        return minimize(lambda t: (f(t), grad(t)), theta, jac=True, method="L-BFGS-B",
                        options={"maxiter": 500, "gtol": 1e-8}).x
    value = f(theta)
    for _ in range(100):
        g = grad(theta)
        if np.max(np.abs(g)) < 1e-9:
            break
        s = expit(A @ theta)
        H = (A.T * (s * (1 - s))) @ A / n + np.diag(2 * p + 2 * q + 1e-10)
        step = np.linalg.solve(H, g)
        t = 1.0
        while t > 1e-10:  # backtracking (Armijo)
            candidate = theta - t * step
            new = f(candidate)
            if new <= value - 1e-4 * t * (g @ step):
                break
            t *= 0.5
        else:
            break
        theta, value = candidate, new
    return theta


#: Above this many columns (intercept included) the logistic personal model uses L-BFGS instead of Newton steps.
_NEWTON_MAX_COLUMNS = 400


def _squared_loss(bounds):
    def loss(A, y, theta):
        pred = A @ theta
        if bounds is not None:
            pred = np.clip(pred, *bounds)
        return float(np.mean((pred - y) ** 2))
    return loss


def _log_loss(A, y_pm, theta) -> float:
    return float(np.mean(np.logaddexp(0.0, -y_pm * (A @ theta))))


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


def _select(solve, loss, Z, y, theta_g, alpha, fit_intercept, grid, folds, seed, stratify, bounds=None):
    """``(theta, lam, {lam: held-out loss})``, refitted on every row at the chosen lam. Held-out losses per unit:
    squared loss, exact leave-one-out per row (:func:`_ridge_loo`); logistic, :data:`REPEATS` x k-fold (each fold's
    mean log loss; the grid is walked from the global model down, each fit started at the previous one). The least
    mean loss wins (ties: the larger lam), and the party stays alone (``lam = 0``) unless the winner's mean gain over
    alone exceeds :data:`STANDARD_ERRORS` standard errors of the per-unit gains."""
    A = _design(Z, fit_intercept)
    per_unit = {}
    if solve is _ridge:
        for lam in grid:
            per_unit[lam] = _ridge_loo(A, y, theta_g, alpha, lam, fit_intercept, bounds)
    else:
        splits = _folds(y, folds, seed, stratify, REPEATS)
        starts = [None] * len(splits)
        for lam in grid:
            losses = []
            for i, (tr, te) in enumerate(splits):
                theta = solve(A[tr], y[tr], theta_g, alpha, lam, fit_intercept, start=starts[i])
                starts[i] = theta
                losses.append(loss(A[te], y[te], theta))
            per_unit[lam] = np.array(losses)
    cv = {lam: float(np.mean(v)) for lam, v in per_unit.items()}
    best = min(grid, key=lambda lam: (cv[lam], -lam))
    if 0.0 in per_unit and best != 0.0:  # alone unless the gain over it exceeds STANDARD_ERRORS standard errors
        gain = per_unit[0.0] - per_unit[best]
        if gain.mean() <= STANDARD_ERRORS * gain.std(ddof=1) / math.sqrt(gain.size):
            best = 0.0
    return solve(A, y, theta_g, alpha, best, fit_intercept), best, cv
