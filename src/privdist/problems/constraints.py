"""Compact convex constraint sets ``Omega`` of online problems and their exact projections (spec §1.6, §5.4).

Two sets cover S4 and its Remark 2: the l1 ball ``{x : ||x||_1 <= r}`` (S4 §5, ``r = 3``) and the probability
simplex. Every projection is exact and vectorised over rows (one row per agent):

* :func:`project_l1_ball` — Euclidean or diagonally weighted projection onto the l1 ball by the sort-based
  breakpoint search of Duchi et al. (2008), generalised to weights ``q_j`` (spec §1.6);
* :func:`project_l1_ball_q` — projection in the norm ``||v||_Q^2 = v^T Q v`` for a general positive definite ``Q``
  (spec §5.4, Mahalanobis row): exact by enumerating the faces of the ball (KKT on each face's affine hull);
* :func:`project_simplex` — Euclidean projection onto the simplex (sort-based).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._checks import check_finite, check_int, check_positive
from ..errors import ShapeMismatchError, ValidationError

__all__ = ["L1Ball", "Simplex", "project_l1_ball", "project_l1_ball_q", "project_simplex", "check_positive_definite",
           "MAX_FACE_DIM"]

#: Largest dimension for which :func:`project_l1_ball_q` enumerates the ``3^d - 1`` faces of the ball.
MAX_FACE_DIM = 8


def _rows(u, name: str) -> np.ndarray:
    u = check_finite(u, name)
    if u.ndim != 2:
        raise ShapeMismatchError(f"{name} must be 2-D (rows x dim), got shape {u.shape}")
    return u


def project_l1_ball(u, radius: float, weights=None) -> np.ndarray:
    """Project each row of ``u`` onto ``{x : ||x||_1 <= radius}`` in the norm ``sum_j q_j v_j^2``.

    The minimiser is ``x_j = sign(u_j) max(|u_j| - lam / q_j, 0)`` with ``lam >= 0`` chosen so that
    ``||x||_1 = radius`` (``lam = 0`` when ``u`` is inside). The breakpoints ``q_j |u_j|`` are sorted and the
    active segment found in closed form, so the result is exact (O(d log d) per row).

    Args:
        u: points, shape (n, d).
        radius: ball radius (> 0).
        weights: positive per-coordinate weights ``q`` (shape (d,)); None = Euclidean projection.

    Returns:
        Array (n, d) of projections.

    Raises:
        ValidationError: radius <= 0 or a weight <= 0. ShapeMismatchError: bad shapes.

    References:
        spec §1.6; Duchi, Shalev-Shwartz, Singer, Chandra (ICML 2008), Fig. 1 (weighted generalisation).
    """
    u = _rows(u, "u")
    radius = check_positive(radius, "radius")
    d = u.shape[1]
    q = np.ones(d) if weights is None else check_finite(weights, "weights")
    if q.shape != (d,) or np.any(q <= 0):
        raise ValidationError(f"weights must be {d} positive numbers, got {q}")
    a = np.abs(u)
    inside = a.sum(axis=1) <= radius
    x = u.copy()
    if inside.all():
        return x
    a_out = a[~inside]
    w = 1.0 / q  # x_j = a_j - lam * w_j on the active set
    bp = a_out * q  # breakpoint lam at which coordinate j leaves the active set
    order = np.argsort(-bp, axis=1)
    a_s = np.take_along_axis(a_out, order, axis=1)
    w_s = w[order]
    bp_s = np.take_along_axis(bp, order, axis=1)
    lam_k = (np.cumsum(a_s, axis=1) - radius) / np.cumsum(w_s, axis=1)  # lam if the top k+1 are active
    valid = lam_k < bp_s  # coordinate k is still active at lam_k
    k = d - 1 - np.argmax(valid[:, ::-1], axis=1)  # last valid k (valid is a prefix)
    lam = np.maximum(lam_k[np.arange(len(k)), k], 0.0)
    x[~inside] = np.sign(u[~inside]) * np.maximum(a_out - lam[:, None] * w, 0.0)
    return x


def _faces(d: int):
    """(support mask, sign vector) of every proper face of the d-dimensional cross-polytope."""
    for pattern in itertools.product((-1, 0, 1), repeat=d):
        s = np.array(pattern, dtype=float)
        if np.any(s):
            yield s != 0, s


def project_l1_ball_q(u, radius: float, Q) -> np.ndarray:
    """Project each row of ``u`` onto ``{||x||_1 <= radius}`` in the norm ``(x-u)^T Q (x-u)``, exactly.

    Diagonal ``Q`` uses :func:`project_l1_ball` with weights ``diag(Q)``. Otherwise every face ``F`` (support
    ``S``, signs ``s``) of the ball is tried: the minimiser over the affine hull of ``F`` is
    ``x_S = v + mu Q_SS^{-1} s``, ``v = u_S + Q_SS^{-1} Q_{S,S^c} u_{S^c}``, ``mu = (r - s.v) / (s^T Q_SS^{-1} s)``;
    the projection is the best candidate that lies in its face (the optimum lies in the relative interior of
    some face, where it also minimises over that face's affine hull), or ``u`` itself when inside.

    Args:
        u: points (n, d). radius: ball radius (> 0). Q: symmetric positive definite (d, d).

    Returns:
        Array (n, d).

    Raises:
        ValidationError: ``Q`` not symmetric positive definite, radius <= 0, or non-diagonal ``Q`` with
            ``d > MAX_FACE_DIM``. ShapeMismatchError: bad shapes.

    References:
        spec §5.4 (Mahalanobis divergence ``x^T Q x``), AMB-O6.
    """
    u = _rows(u, "u")
    radius = check_positive(radius, "radius")
    Q = check_positive_definite(Q, u.shape[1])
    if np.allclose(Q, np.diag(np.diag(Q))):
        return project_l1_ball(u, radius, np.diag(Q))
    d = u.shape[1]
    if d > MAX_FACE_DIM:
        raise ValidationError(f"exact Q-projection with non-diagonal Q enumerates 3^d faces; d={d} exceeds "
                              f"MAX_FACE_DIM={MAX_FACE_DIM}")
    best = u.copy()
    best_val = np.where(np.abs(u).sum(axis=1) <= radius, 0.0, np.inf)
    for S, s in _faces(d):
        Sc = ~S
        QSS_inv = np.linalg.inv(Q[np.ix_(S, S)])
        sS = s[S]
        w = QSS_inv @ sS
        v = u[:, S] + u[:, Sc] @ (QSS_inv @ Q[np.ix_(S, Sc)]).T
        mu = (radius - v @ sS) / (sS @ w)
        cand = np.zeros_like(u)
        cand[:, S] = v + mu[:, None] * w
        ok = np.all(cand[:, S] * sS >= -1e-12, axis=1)
        diff = cand - u
        val = np.einsum("ij,jk,ik->i", diff, Q, diff)
        better = ok & (val < best_val)
        best[better], best_val[better] = cand[better], val[better]
    return best


def check_positive_definite(Q, d: int, name: str = "Q") -> np.ndarray:
    """Return ``Q`` as a float (d, d) array; raise ValidationError unless symmetric positive definite."""
    Q = check_finite(Q, name)
    if Q.shape != (d, d):
        raise ShapeMismatchError(f"{name} must have shape ({d}, {d}), got {Q.shape}")
    if not np.allclose(Q, Q.T, atol=1e-12):
        raise ValidationError(f"{name} must be symmetric, got {Q.tolist()}")
    lam_min = float(np.linalg.eigvalsh(Q)[0])
    if lam_min <= 0:
        raise ValidationError(f"{name} must be positive definite (the Bregman function x^T Q x must be strongly "
                              f"convex, AMB-O6); its smallest eigenvalue is {lam_min:.6g}")
    return Q


def project_simplex(u) -> np.ndarray:
    """Euclidean projection of each row of ``u`` onto ``{x >= 0, sum x = 1}`` (sort-based, exact).

    References:
        Duchi et al. (ICML 2008), Fig. 1; spec §5.4 (negative-entropy row).
    """
    u = _rows(u, "u")
    d = u.shape[1]
    s = -np.sort(-u, axis=1)
    css = np.cumsum(s, axis=1) - 1.0
    k = np.arange(1, d + 1)
    cond = s - css / k > 0
    rho = d - 1 - np.argmax(cond[:, ::-1], axis=1)
    tau = css[np.arange(len(rho)), rho] / (rho + 1)
    return np.maximum(u - tau[:, None], 0.0)


@dataclass(frozen=True)
class L1Ball:
    """``Omega = {x in R^dim : ||x||_1 <= radius}`` (S4 §5 uses ``radius = 3``, ``dim = 2``)."""

    dim: int
    radius: float

    name = "l1_ball"

    def __post_init__(self):
        check_int(self.dim, "dim")
        check_positive(self.radius, "radius")

    def contains(self, X, tol: float = 1e-9) -> np.ndarray:
        """Boolean per row: ``||x||_1 <= radius + tol``."""
        return np.abs(np.atleast_2d(X)).sum(axis=1) <= self.radius + tol

    def project(self, U, Q=None) -> np.ndarray:
        """Euclidean (``Q=None``) or ``Q``-weighted projection of each row."""
        return project_l1_ball(U, self.radius) if Q is None else project_l1_ball_q(U, self.radius, Q)

    def support(self, G) -> np.ndarray:
        """``max_{x in Omega} <g, x> = radius ||g||_inf`` per row of ``G`` (used by the regret, spec §5.8)."""
        return self.radius * np.abs(np.atleast_2d(G)).max(axis=1)

    def vertices(self) -> np.ndarray:
        """The ``2 dim`` vertices ``+-radius e_j``, shape (2 dim, dim)."""
        return np.concatenate([np.eye(self.dim), -np.eye(self.dim)]) * self.radius

    @property
    def diameter(self) -> float:
        """Euclidean diameter ``2 radius`` (``diam`` of S4, AMB-O7)."""
        return 2.0 * self.radius

    def max_distance(self, point) -> float:
        """``max_{x in Omega} ||x - point||_2``, attained at a vertex ``+-radius e_j``."""
        p = np.asarray(point, dtype=float)
        return float(np.linalg.norm(self.vertices() - p, axis=1).max())


@dataclass(frozen=True)
class Simplex:
    """``Omega = {x in R^dim : x >= 0, sum_j x_j = 1}`` (S4 Remark 2)."""

    dim: int

    name = "simplex"

    def __post_init__(self):
        check_int(self.dim, "dim")

    def contains(self, X, tol: float = 1e-9) -> np.ndarray:
        X = np.atleast_2d(X)
        return (X.min(axis=1) >= -tol) & (np.abs(X.sum(axis=1) - 1.0) <= tol)

    def project(self, U, Q=None) -> np.ndarray:
        if Q is not None:
            raise ValidationError("Q-weighted projection onto the simplex is not implemented; use the l1 ball")
        return project_simplex(U)

    def support(self, G) -> np.ndarray:
        """``max_{x in simplex} <g, x> = max_j g_j`` per row."""
        return np.atleast_2d(G).max(axis=1)

    def vertices(self) -> np.ndarray:
        """The ``dim`` unit vectors, shape (dim, dim)."""
        return np.eye(self.dim)

    @property
    def diameter(self) -> float:
        return float(np.sqrt(2.0)) if self.dim > 1 else 0.0

    def max_distance(self, point) -> float:
        p = np.asarray(point, dtype=float)
        return float(np.linalg.norm(np.eye(self.dim) - p, axis=1).max())
