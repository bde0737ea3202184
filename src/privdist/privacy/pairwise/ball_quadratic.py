"""The worst case of a quadratic form over per-round norm balls: ``max sum_st M_st <v_s, v_t>``, ``||v_s|| <= 1``.

For a linear-Gaussian view the privacy loss of one contribution sequence ``h`` (in units of its noise) is
``mu^2 = h^T M h`` with ``M`` PSD (:mod:`privdist.privacy.pairwise.network_dp`); the target's contributions are vectors of
the model's dimension ``P`` chosen adversarially within their clipping bound, one per round, so the guarantee is
the maximum of

    q(V) = sum_{s,t} M_st <v_s, v_t>   over   ||v_s|| <= 1   (v_s in R^P; ``M`` already scaled by the bounds).

This module returns, for a stack of such ``M``, a **sound upper bound** on that maximum and a lower bound achieved
by an explicit sequence, and says when they meet:

* ``sum_st |M_st|`` is always an upper bound (``|<v_s, v_t>| <= 1``); when ``M`` is *sign-consistent*
  (``s_a s_b M_ab >= 0`` for some signs ``s``) it is attained by ``v_s = s_s e`` and is the exact worst case in any
  dimension (the common case for observers two or more hops away);
* otherwise the maximum is at most the value of the semidefinite relaxation ``max tr(M X)``, ``X >= 0``,
  ``X_ss <= 1`` (exact when ``P`` is at least the rank of its solution, which is at most ``sqrt(2T)``, Barvinok
  1995 / Pataki 1998). Its value is approached from below by the generalised power method on a rank-``k`` factor
  (Journee, Nesterov, Richtarik & Sepulchre 2010: ``V <- rownormalise(M V)`` never decreases ``q``) and certified
  from above by a dual point ``y`` (``Diag(y) >= M``, ``y >= 0`` gives ``tr(M X) <= sum_s y_s``): the stationarity
  multipliers of the factor, shifted by the smallest eigenvalue of ``Diag(y) - M`` when it is negative (or, to
  close a converged matrix cheaply, by half the tolerance once a Cholesky factorisation shows that shift is
  enough). Whatever the iterations reached, that certificate is a valid upper bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from ...errors import ShapeMismatchError

__all__ = ["ball_quadratic_max", "WarmStarts"]


def _sign_lower(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signs from the column of the largest diagonal entry, and the value ``s^T M s`` they achieve."""
    j = np.argmax(np.einsum("itt->it", M), axis=1)
    col = np.take_along_axis(M, j[:, None, None], axis=2)[:, :, 0]
    s = np.where(col < 0, -1.0, 1.0)
    return s, np.einsum("is,ist,it->i", s, M, s)


def _objective(M: np.ndarray, V: np.ndarray) -> np.ndarray:
    return ((M @ V) * V).sum(axis=(1, 2))


def _multipliers(M: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sum_s y_s`` with ``y_s = max(<(M V)_s, v_s>, 0)``, ``Diag(y) - M``, and a margin for the rounding of the
    factorisation or eigenvalues that test it (``4 T^2`` units of roundoff of its largest entry)."""
    T = M.shape[1]
    y = np.maximum(((M @ V) * V).sum(axis=2), 0.0)
    Z = -M.copy()
    Z[:, np.arange(T), np.arange(T)] += y
    margin = 4 * T * T * np.finfo(float).eps * np.abs(Z).max(axis=(1, 2))
    return y.sum(axis=1), Z, margin


def _certificate(M: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``sum_s y_s + T max(0, -lambda_min(Diag(y) - M))`` (:func:`_multipliers`): a dual-feasible value, hence an
    upper bound on ``max tr(M X)`` (and on ``q``)."""
    T = M.shape[1]
    ysum, Z, margin = _multipliers(M, V)
    lam = np.linalg.eigvalsh(Z)[:, 0]
    return ysum + T * (np.maximum(0.0, -lam) + margin)


def _shifted_certificate(M: np.ndarray, V: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``sum_s y_s + T shift`` where ``Diag(y) + shift I - M`` has a Cholesky factor (so it is positive definite and
    ``y + shift`` is a dual point), ``inf`` where it has not: a cheaper test than :func:`_certificate`'s
    eigenvalues, used to close the matrices that have converged."""
    T = M.shape[1]
    ysum, Z, margin = _multipliers(M, V)
    Z[:, np.arange(T), np.arange(T)] += (shift + margin)[:, None]
    out = np.full(len(M), np.inf)
    for i in range(len(M)):
        if lapack.dpotrf(Z[i], lower=1, clean=0)[1] == 0:
            out[i] = ysum[i] + T * (shift[i] + margin[i])
    return out


def _power_method(M: np.ndarray, s: np.ndarray, rank: int, iters: int, rtol: float, every: int = 10,
                  V0: np.ndarray | None = None):
    """Generalised power method on a rank-``rank`` factor ``V`` (rows of norm 1), started at ``V0`` where given
    (a warm start: rows of zeros are cold) and elsewhere at the signs ``s`` plus a fixed perturbation
    (deterministic: no seed to record), iterated in single precision (the iterate only has to be good: every
    bound is evaluated in double precision). After 5 iterations and every ``every`` iterations each open matrix
    gets its objective and the cheap certificate with a shift of half the tolerance (:func:`_shifted_certificate`);
    it closes when certificate and objective agree to ``rtol``. Matrices still open after ``iters`` get the
    eigenvalue certificate. Returns ``(upper, lower, V)``: the smallest certificate, the largest objective seen and
    the last iterate."""
    n, T, _ = M.shape
    rng = np.random.default_rng(0)
    V = np.zeros((n, T, rank))
    V[:, :, 0] = s
    V += 0.1 * rng.standard_normal(V.shape)
    if V0 is not None:
        warm = np.abs(V0).sum(axis=(1, 2)) > 0
        V[warm] = V0[warm]
    V /= np.sqrt((V * V).sum(axis=2, keepdims=True))
    upper, lower, Vout = np.full(n, np.inf), np.zeros(n), V.copy()
    # the iterate does not depend on M's scale: each matrix divided by its largest entry stays in float32's range
    big = np.abs(M).max(axis=(1, 2), keepdims=True)
    M32 = (M / np.where(big > 0, big, 1.0)).astype(np.float32)
    open_, Mo, V32 = np.arange(n), M, V.astype(np.float32)  # the open matrices, compacted as they close
    for it in range(1, iters + 1):
        G = M32 @ V32
        norms = np.sqrt((G * G).sum(axis=2, keepdims=True))
        V32 = np.where(norms > 0, G / np.where(norms > 0, norms, 1.0), V32)
        if it % every == 0 or it == 5 or it == iters:
            Vo = V32.astype(float)
            Vo /= np.sqrt((Vo * Vo).sum(axis=2, keepdims=True))  # unit rows in double precision
            Vout[open_] = Vo
            lower[open_] = np.maximum(lower[open_], _objective(Mo, Vo))
            if it == iters:
                upper[open_] = np.minimum(upper[open_], _certificate(Mo, Vo))
                break
            upper[open_] = np.minimum(upper[open_], _shifted_certificate(Mo, Vo, 0.5 * rtol * lower[open_] / T))
            up = upper[open_]
            keep = np.isinf(up) | (up - lower[open_] > rtol * up)  # inf: not certified yet
            open_, Mo, M32, V32 = open_[keep], Mo[keep], M32[keep], V32[keep]
            if not open_.size:
                break
    return upper, lower, Vout


#: iterations a warm-started matrix gets before it restarts cold (most close by the check at 5)
_WARM_ITERS = 60


class WarmStarts:
    """Solutions of earlier matrices, to start the power method on similar ones (the pairs of a graph whose
    neighbourhoods look alike have nearly equal ``M``: on the 1,000-agent benchmark a start from the most similar
    solved matrix closes in a median of 5 iterations instead of 135). Only the start changes: every bound is
    computed for the matrix itself, so a poor match costs iterations, never soundness.

    Args:
        size: matrices remembered (the oldest are dropped).
        similarity: cosine (of the matrices as vectors) below which a start stays cold.
    """

    def __init__(self, size: int = 256, similarity: float = 0.99):
        self.size, self.similarity = size, similarity
        self._keys = self._V = None

    @staticmethod
    def _unit(M: np.ndarray) -> np.ndarray:
        """A fingerprint: every 4th row and column of each matrix as a unit vector."""
        flat = np.ascontiguousarray(M[:, ::4, ::4]).reshape(len(M), -1)
        norm = np.sqrt((flat * flat).sum(axis=1, keepdims=True))
        return flat / np.where(norm > 0, norm, 1.0)

    def lookup(self, M: np.ndarray, rank: int) -> np.ndarray | None:
        """Starts for a stack of matrices (zeros where none is similar enough), or None."""
        if self._keys is None or self._V.shape[1:] != (M.shape[1], rank):
            return None
        sim = self._unit(M) @ self._keys.T
        best = sim.argmax(axis=1)
        V0 = self._V[best].copy()
        V0[sim[np.arange(len(M)), best] < self.similarity] = 0.0
        return V0

    def store(self, M: np.ndarray, V: np.ndarray) -> None:
        keys = self._unit(M)
        if self._keys is not None and self._V.shape[1:] == V.shape[1:]:
            keys, V = np.concatenate([self._keys, keys]), np.concatenate([self._V, V])
        self._keys, self._V = keys[-self.size:], V[-self.size:]


def ball_quadratic_max(M, *, rtol: float = 1e-3, iters: int = 1000, warm: WarmStarts | None = None) -> dict:
    """Bounds on ``max sum_st M_st <v_s, v_t>`` over ``||v_s|| <= 1`` for each PSD matrix of a stack.

    Args:
        M: ``(n, T, T)`` symmetric PSD matrices (or one ``(T, T)``).
        rtol: relative gap below which the bounds are called equal (and the power method's stopping tolerance).
        iters: iterations of the power method at most.
        warm: solutions of earlier matrices to start from, updated with these (:class:`WarmStarts`).

    Returns:
        ``{"upper": (n,), "lower": (n,), "method": (n,) str}``: ``upper`` is always a valid upper bound;
        ``lower`` is attained by an explicit sequence in dimension ``rank`` (``"sign"``: dimension 1, where
        ``upper`` is then exact in every dimension; ``"sdp"``: the certified relaxation value, attained in
        dimension ``rank``); ``"rank"`` the factor rank of the power method.

    Raises:
        ShapeMismatchError: ``M`` is not a stack of square matrices.
    """
    M = np.asarray(M, dtype=float)
    if M.ndim == 2:
        M = M[None]
    if M.ndim != 3 or M.shape[1] != M.shape[2]:
        raise ShapeMismatchError(f"M must be (n, T, T) or (T, T), got shape {M.shape}")
    M = 0.5 * (M + np.swapaxes(M, 1, 2))
    n, T, _ = M.shape
    upper = np.abs(M).sum(axis=(1, 2))
    s, lower = _sign_lower(M)
    method = np.full(n, "sign", dtype=object)
    rank = min(T, int(math.ceil(math.sqrt(2 * T))) + 1)
    open_ = np.flatnonzero(upper - lower > rtol * np.maximum(upper, 1e-300))
    if open_.size:
        Mo = M[open_]
        V0 = None if warm is None else warm.lookup(Mo, rank)
        ub, lb, V = _power_method(Mo, s[open_], rank, iters if V0 is None else min(iters, _WARM_ITERS), rtol, V0=V0)
        cold = np.flatnonzero(np.isinf(ub) | (ub - lb > rtol * ub)) if V0 is not None else []
        if len(cold):  # a start from another matrix's solution can stall: those restart cold, with every iteration
            ub2, lb2, V[cold] = _power_method(Mo[cold], s[open_][cold], rank, iters, rtol)
            ub[cold], lb[cold] = np.minimum(ub[cold], ub2), np.maximum(lb[cold], lb2)
        if warm is not None:
            warm.store(Mo, V)
        upper[open_] = np.minimum(upper[open_], ub)
        lower[open_] = np.maximum(lower[open_], lb)
        method[open_] = "sdp"
    return {"upper": upper, "lower": np.minimum(lower, upper), "method": method, "rank": rank}
