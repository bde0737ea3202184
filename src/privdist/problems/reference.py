"""Centralized reference solutions ``beta^c`` of a horizontal ERM problem (spec §6.10, §2.11, AMB-D12).

``reference_solution`` minimises the network objective ``sum_k f_k`` (the default ``beta^c`` of AMB-D12);
``literal_reference`` minimises the literal S1(30)/(31) objective ``sum_i l_i + eta R`` on the pooled data.
Methods: ``closed_form`` (squared loss with l2), ``newton`` (smooth), ``fista`` (l1), ``cvxpy`` (any
supported loss/regularizer, as the papers used CVX). ``auto`` picks the first applicable of the first three.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnknownNameError, ValidationError
from .erm import HorizontalERM

__all__ = ["reference_solution", "literal_reference", "REFERENCE_METHODS"]

REFERENCE_METHODS = ("auto", "closed_form", "newton", "fista", "cvxpy")


def _pooled(problem: HorizontalERM) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pooled rows with their per-sample weights ``w_k`` (padding dropped)."""
    mask = problem.w > 0
    return problem.X[mask], problem.y[mask], problem.w[mask]


def reference_solution(problem: HorizontalERM, method: str = "auto", tol: float = 1e-13) -> np.ndarray:
    """Minimiser of ``sum_k f_k(beta)`` over a common ``beta``.

    Args:
        problem: the distributed problem (all agents).
        method: one of :data:`REFERENCE_METHODS`.
        tol: stopping tolerance of the iterative methods.

    Returns:
        ``beta^c`` of shape (P,).
    """
    if method not in REFERENCE_METHODS:
        raise UnknownNameError("reference method", method, list(REFERENCE_METHODS))
    X, y, w = _pooled(problem)
    single = HorizontalERM([(X, y)], problem.loss, problem.regularizer, problem.reg_weight)
    single.w[0] = w  # pooled problem with the per-agent weights: f(beta) = sum_k f_k(beta)
    smooth, quad = problem.regularizer.smooth, problem.loss.quadratic
    if method == "auto":
        method = "closed_form" if (smooth and quad) else ("newton" if smooth else "fista")
    if method == "cvxpy":
        return _cvxpy(X, y, w, problem)
    if method == "closed_form" and not (smooth and quad):
        raise ValidationError("closed_form reference needs the squared loss with an l2 (or no) regularizer")
    if method == "newton" and not smooth:
        raise ValidationError("newton reference needs a smooth regularizer; use fista or cvxpy for l1")
    if method == "fista" and smooth:
        raise ValidationError("fista reference is for the l1 regularizer; use closed_form or newton")
    if not smooth and not quad:
        raise ValidationError("the l1 reference of a non-quadratic loss needs method='cvxpy'")
    # q -> 0 makes prox_solve the plain minimiser; a tiny q keeps FISTA's momentum well defined for l1
    q = 0.0 if smooth else 1e-300
    return single.prox_solve(q, np.zeros((1, problem.n_features)), tol=tol, max_iter=200000)[0]


def literal_reference(X, y, loss, regularizer, reg_weight: float, method: str = "auto") -> np.ndarray:
    """Minimiser of the literal S1(30)/(31) objective ``sum_i l(x_i^T beta, y_i) + reg_weight R(beta)``.

    Equivalent to the one-agent problem ``(1/N) sum_i l + (reg_weight / N) R``.
    """
    X = np.asarray(X, dtype=float)
    single = HorizontalERM([(X, y)], loss, regularizer, reg_weight / X.shape[0])
    return reference_solution(single, method)


def _cvxpy(X, y, w, problem: HorizontalERM) -> np.ndarray:
    import cvxpy as cp

    beta = cp.Variable(problem.n_features)
    z = X @ beta
    if problem.loss.name == "squared":
        data = cp.sum(cp.multiply(w, cp.square(z - y)))
    elif problem.loss.name == "logistic":
        data = cp.sum(cp.multiply(w, cp.logistic(-cp.multiply(y, z))))
    else:
        raise ValidationError(f"cvxpy reference does not support loss {problem.loss.name!r}")
    reg = {"l1": lambda: cp.norm1(beta), "l2": lambda: cp.sum_squares(beta), "none": lambda: 0}
    objective = data + problem.reg_weight * reg[problem.regularizer.name]()
    cp.Problem(cp.Minimize(objective)).solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10,
                                             tol_feas=1e-10, max_iter=500)
    return np.asarray(beta.value, dtype=float)
