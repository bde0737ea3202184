"""The personal model's objective and its solvers (issue 39; used by :mod:`privdist.learn.personal`).

On a party's own rows, in the released feature space (``A`` = the features with a column of ones for the
intercept; ``theta = (w, b)``, ``theta_g = (w_g, b_g)`` the released global model):

    theta_p = argmin_theta  (1/n) sum_i loss(y_i, a_i . theta) + alpha ||w||^2 + lam ||w - w_g||^2
                            + (mu / n) (b - b_g)^2,

``lam`` the pull of the coefficients towards the global ones (Ditto, Li, Hu, Beirami & Smith, ICML 2021, eq. 2),
``mu`` the intercept prior in pseudo-rows: the party's intercept is a draw around the global one, b ~ N(b_g, tau^2),
with ``mu = sigma^2 / tau^2`` for the squared loss and ``mu = 1 / (2 tau^2)`` for the log loss (Gelman & Hill 2007,
ch. 12: partial pooling of a group's intercept; its weight on the group's own mean is n / (n + mu)).
In these functions ``prior`` is the per-row weight ``mu / n``. ``lam = inf``: the coefficients are the global ones
and only the intercept is fitted (:func:`_offset`); ``mu = inf`` keeps the global intercept.
"""

from __future__ import annotations

import math

import numpy as np


def _theta(coef, intercept, fit_intercept: bool) -> np.ndarray:
    coef = np.asarray(coef, dtype=float).ravel()
    return np.append(coef, float(intercept)) if fit_intercept else coef


def _unpack(theta, fit_intercept: bool):
    return (theta[:-1].copy(), float(theta[-1])) if fit_intercept else (theta.copy(), 0.0)


def _design(Z, fit_intercept: bool) -> np.ndarray:
    return np.hstack([Z, np.ones((Z.shape[0], 1))]) if fit_intercept else Z


def _penalty(d: int, alpha: float, lam: float, fit_intercept: bool, prior: float = 0.0) -> np.ndarray:
    """The diagonal of the quadratic penalty: alpha + lam on the coefficients; on the intercept only the prior's
    ``prior`` (= mu / n, per row): never shrunk towards 0."""
    p = np.full(d, alpha + lam)
    if fit_intercept:
        p[-1] = prior
    return p


def _pull(d: int, lam: float, fit_intercept: bool, prior: float = 0.0) -> np.ndarray:
    """The diagonal of the pull towards the global model: lam on the coefficients, ``prior`` (mu / n) on the
    intercept."""
    q = np.full(d, lam)
    if fit_intercept:
        q[-1] = prior
    return q


def _offset(A, y, theta_g, prior, fit_intercept, logistic: bool):
    """``lam = inf``: the global coefficients and the party's intercept, shifted from the global one by the MAP of
    its own rows under the prior (``prior`` = mu / n per row; mu = inf: the global model unchanged). Squared loss:
    the shift is the mean residual times n / (n + mu), Gelman & Hill's partial-pooling weight (2007, ch. 12);
    logistic: 1-D Newton steps on the shift."""
    theta = theta_g.copy()
    if not fit_intercept or math.isinf(prior) or A.shape[0] == 0:
        return theta
    s = A @ theta_g
    n = A.shape[0]
    if not logistic:
        theta[-1] += float(np.sum(y - s)) / (n + prior * n)
        return theta
    from scipy.special import expit

    if prior <= 0 and np.unique(y).size < 2:  # no finite optimum without a prior
        return theta
    shift = 0.0
    for _ in range(100):  # f(t) = mean log(1 + exp(-y (s + t))) + prior t^2, convex
        m = y * (s + shift)
        g = -float(np.mean(y * expit(-m))) + 2 * prior * shift
        h = float(np.mean(expit(m) * expit(-m))) + 2 * prior
        step = g / max(h, 1e-12)
        shift -= float(np.clip(step, -5.0, 5.0))
        if abs(step) < 1e-10:
            break
    theta[-1] += shift
    return theta


def _ridge(A, y, theta_g, alpha, lam, fit_intercept, start=None, prior=0.0):
    """Closed form of the squared-loss objective: (A'A/n + P) theta = A'y/n + Q theta_g (P, Q: :func:`_penalty`,
    :func:`_pull`; ``prior`` = mu / n on the intercept)."""
    if math.isinf(lam):
        return _offset(A, y, theta_g, prior, fit_intercept, logistic=False)
    H, rhs = _ridge_system(A, y, theta_g, alpha, lam, fit_intercept, prior)
    try:
        return np.linalg.solve(H, rhs)
    except np.linalg.LinAlgError:  # alpha = lam = 0 on collinear rows: the least-norm solution
        return np.linalg.lstsq(H, rhs, rcond=None)[0]


#: A finite ``lam`` with ``mu = inf``: the intercept held at the global one by this weight per row (within ~1e-8).
_FIXED = 1e8


def _ridge_system(A, y, theta_g, alpha, lam, fit_intercept, prior=0.0):
    n, d = A.shape
    prior = min(prior, _FIXED)
    H = A.T @ A / n + np.diag(_penalty(d, alpha, lam, fit_intercept, prior))
    return H, A.T @ y / n + _pull(d, lam, fit_intercept, prior) * theta_g


def _ridge_loo(A, y, theta_g, alpha, lam, fit_intercept, bounds, prior=0.0) -> np.ndarray:
    """Exact leave-one-out squared errors of the ridge personal model (the penalty held at n P, as scikit-learn's
    ``RidgeCV``): theta = (A'A + nP)^-1 (A'y + nQ theta_g) is linear in y with hat matrix
    h = A (A'A + nP)^-1 A', so the prediction without row i is y_i - r_i / (1 - h_ii) (Hastie, Tibshirani &
    Friedman 2009, eq. 7.52 / sec. 7.10.1; the shift nQ theta_g does not depend on row i). ``lam = inf``: the global
    coefficients, the intercept shifted by the other rows' residuals (:func:`_offset`, the prior's mu held).
    Predictions are clipped to ``bounds`` as the model's."""
    n = A.shape[0]
    if math.isinf(lam):
        pred = A @ theta_g
        if fit_intercept and not math.isinf(prior):
            r = y - pred
            pred = pred + (np.sum(r) - r) / max(n - 1 + prior * n, 1e-12)
    else:
        H, rhs = _ridge_system(A, y, theta_g, alpha, lam, fit_intercept, prior)
        Hinv = np.linalg.pinv(H)
        theta = Hinv @ rhs
        h = np.einsum("ij,jk,ik->i", A, Hinv, A) / n
        resid = y - A @ theta
        pred = y - resid / np.maximum(1.0 - h, 1e-12)
    if bounds is not None:
        pred = np.clip(pred, *bounds)
    return (pred - y) ** 2


def _logistic(A, y_pm, theta_g, alpha, lam, fit_intercept, start=None, prior=0.0):
    """Minimise mean log(1 + exp(-y a.theta)) + alpha ||w||^2 + lam ||w - w_g||^2 + prior (b - b_g)^2: damped
    Newton steps (analytic gradient and Hessian; a party's model has few columns, and Newton needs ~10 solves where
    L-BFGS took ~20 iterations of far slower calls here), or L-BFGS above :data:`_NEWTON_MAX_COLUMNS` columns."""
    from scipy.special import expit

    if math.isinf(lam):
        return _offset(A, y_pm, theta_g, prior, fit_intercept, logistic=True)
    n, d = A.shape
    p, q = _penalty(d, alpha, 0.0, fit_intercept), _pull(d, lam, fit_intercept, min(prior, _FIXED))

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

