"""Online problems: time-varying local costs ``f_t^i`` on a compact convex ``Omega`` (spec §5.1, §5.8).

Node ``i`` commits to ``x_t^i`` and only then observes ``grad f_t^i(x_t^i)``. The problems here pre-draw the
whole cost sequence from the trial's data stream (common random numbers: every algorithm of a trial faces the
same costs, spec §7), so ``f_t`` is a pure function of ``t``. The oracle interface used by DPDO-NC
(spec §11): ``n_agents``, ``dim``, ``horizon``, ``domain``, ``grad_bound`` (theta), ``grads(t, X)`` (row ``k`` =
agent ``k``'s own gradient at ``X[k]``), ``total_grads(t, X)`` (``sum_j grad f_t^j`` at every row, for the
regret) and ``subset(agents)``.

* :class:`OnlineLocalization` — S4 Example 1 / §5: ``f_t^i(x) = 1/2 (||s_i - x|| - d_t^i)^2`` with the moving
  target of spec §5.8; :func:`make_localization` draws it (``layout="literal"`` or ``"distinct"``, AMB-O4).
* :class:`OnlineQuadratic` — ``f_t^i(x) = 1/2 ||x - p_t^i||^2``, e.g. on the simplex (Remark 2's test problem).
* :class:`StaticOnline` — a :class:`~privdist.problems.HorizontalERM` seen as an online problem with
  ``f_t^i = f_i`` for all ``t``.

Regret (spec §1.5, §5.8, AMB-O8): :func:`regret_terms` gives per node and per vertex ``v`` of ``Omega`` the round
term ``<sum_j grad f_t^j(x_t^i), x_t^i - v>``; :func:`expected_regret` averages their cumulative sums over runs
*first* and then maximises over the vertices (= over ``Omega``, the objective being linear in ``x``).
"""

from __future__ import annotations

import numpy as np

from .._checks import check_finite, check_int, check_nonnegative, check_positive
from ..errors import ShapeMismatchError, UnknownNameError, ValidationError
from .constraints import L1Ball, Simplex

__all__ = ["OnlineLocalization", "OnlineQuadratic", "StaticOnline", "make_localization",
           "make_simplex_quadratic", "regret_terms", "expected_regret", "SENSOR_LAYOUTS"]

SENSOR_LAYOUTS = ("literal", "distinct")


class _OnlineBase:
    """Shared checks of the time index and of decision arrays."""

    horizon: int
    dim: int

    def _t(self, t) -> int:
        t = check_int(t, "t", minimum=1)
        if t > self.horizon:
            raise ValidationError(f"t must be <= horizon={self.horizon}, got {t}")
        return t - 1

    def _X(self, X, rows: int | None = None) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.dim or (rows is not None and X.shape[0] != rows):
            want = f"({rows if rows is not None else 'n'}, {self.dim})"
            raise ShapeMismatchError(f"decisions must have shape {want}, got {X.shape}")
        return X


def _localization_grad(X, S, D):
    """``(||x - s|| - d) (x - s) / ||x - s||`` broadcast over leading axes; 0 at ``x = s`` (AMB-O4)."""
    diff = X - S
    norm = np.linalg.norm(diff, axis=-1)
    safe = np.where(norm > 0, norm, 1.0)
    return np.where((norm > 0)[..., None], ((norm - D) / safe)[..., None] * diff, 0.0)


class OnlineLocalization(_OnlineBase):
    """Distributed localisation of a moving target (S4 Example 1 and §5, spec §5.8).

    Args:
        sensors: sensor positions ``s_i``, shape (N, d).
        distances: measurements ``d_t^i``, shape (T, N).
        targets: target positions ``x_t^0``, shape (T, d) (kept for plots; the costs only use ``distances``).
        domain: the constraint set (default: the l1 ball of radius 3 of S4 §5).

    References:
        spec §5.1, §5.8; AMB-O3, AMB-O4.
    """

    def __init__(self, sensors, distances, targets, domain=None):
        self.sensors = check_finite(sensors, "sensors")
        self.distances = check_finite(distances, "distances")
        self.targets = check_finite(targets, "targets")
        if self.sensors.ndim != 2 or self.distances.ndim != 2 or self.distances.shape[1] != self.sensors.shape[0]:
            raise ShapeMismatchError(f"sensors (N, d) and distances (T, N) disagree: {self.sensors.shape}, "
                                     f"{self.distances.shape}")
        self.n_agents, self.dim = self.sensors.shape
        self.horizon = self.distances.shape[0]
        self.domain = L1Ball(self.dim, 3.0) if domain is None else domain
        if self.domain.dim != self.dim:
            raise ShapeMismatchError(f"domain has dim {self.domain.dim}, sensors have dim {self.dim}")

    @property
    def grad_bound(self) -> float:
        """``theta = max_i max{max_{x in Omega} ||x - s_i||, max_t d_t^i}`` (AMB-O3; 4.030199 for the literal
        layout), since ``| ||x - s|| - d | <= max(||x - s||, d)`` for ``d >= 0``."""
        far = max(self.domain.max_distance(s) for s in self.sensors)
        return float(max(far, self.distances.max()))

    def grads(self, t, X) -> np.ndarray:
        """Row ``k``: ``grad f_t^k(X[k])`` for this problem's agent ``k``."""
        i = self._t(t)
        return _localization_grad(self._X(X, self.n_agents), self.sensors, self.distances[i])

    def total_grads(self, t, X) -> np.ndarray:
        """Row ``r``: ``sum_j grad f_t^j(X[r])`` over this problem's agents ``j``."""
        i = self._t(t)
        X = self._X(X)
        return _localization_grad(X[:, None, :], self.sensors[None], self.distances[i][None, :]).sum(axis=1)

    def values(self, t, X) -> np.ndarray:
        """Row ``k``: ``f_t^k(X[k])``."""
        i = self._t(t)
        X = self._X(X, self.n_agents)
        return 0.5 * (np.linalg.norm(X - self.sensors, axis=1) - self.distances[i]) ** 2

    def subset(self, agents) -> OnlineLocalization:
        agents = np.asarray(agents, dtype=int)
        return OnlineLocalization(self.sensors[agents], self.distances[:, agents], self.targets, self.domain)


def make_localization(rng: np.random.Generator, horizon: int, n_agents: int = 6, layout: str = "literal",
                      radius: float = 3.0, noise: float = 1e-3, start=(0.8, 0.95),
                      spread: float = 1.5) -> OnlineLocalization:
    """Draw S4's localisation problem (spec §5.8).

    Target: ``x_1^0 = start``, ``x_{t+1}^0 = x_t^0 + [(-1)^{q_t} sin(t/50)/(10t), -q_t cos(t/70)/(40t)]``,
    ``q_t ~ Bernoulli(0.5)``; measurements ``d_t^i = ||s_i - x_t^0|| + U[0, noise]``.

    Args:
        rng: the trial's data stream.
        horizon: number of cost functions ``T`` to draw.
        n_agents: number of sensors ``N``.
        layout: ``"literal"`` (every ``s_i = start``, as printed in S4) or ``"distinct"``
            (``s_i = spread [cos(2 pi i/N), sin(2 pi i/N)]``, i = 1..N), AMB-O4.
        radius: ``Omega = {||x||_1 <= radius}``.
        noise: upper end of the uniform measurement error.
        start: the target's initial position (2-D).
        spread: radius of the circle of the distinct layout.

    Raises:
        UnknownNameError: unknown layout. ValidationError: bad sizes.
    """
    horizon = check_int(horizon, "horizon")
    n_agents = check_int(n_agents, "n_agents")
    noise = check_nonnegative(noise, "noise")
    start = check_finite(start, "start")
    if start.shape != (2,):
        raise ShapeMismatchError(f"start must be a 2-D point, got shape {start.shape}")
    if layout == "literal":
        sensors = np.tile(start, (n_agents, 1))
    elif layout == "distinct":
        ang = 2 * np.pi * np.arange(1, n_agents + 1) / n_agents
        sensors = check_positive(spread, "spread") * np.column_stack([np.cos(ang), np.sin(ang)])
    else:
        raise UnknownNameError("sensor layout", str(layout), SENSOR_LAYOUTS)
    q = rng.integers(0, 2, size=horizon - 1)
    t = np.arange(1, horizon, dtype=float)
    steps = np.column_stack([(-1.0) ** q * np.sin(t / 50) / (10 * t), -q * np.cos(t / 70) / (40 * t)])
    targets = np.vstack([start, start + np.cumsum(steps, axis=0)])
    err = rng.uniform(0.0, noise, size=(horizon, n_agents))
    distances = np.linalg.norm(sensors[None] - targets[:, None], axis=2) + err
    return OnlineLocalization(sensors, distances, targets, L1Ball(2, radius))


class OnlineQuadratic(_OnlineBase):
    """``f_t^i(x) = 1/2 ||x - p_t^i||^2`` with given points ``p`` (T, N, d) on a domain (default the simplex)."""

    def __init__(self, points, domain=None):
        self.points = check_finite(points, "points")
        if self.points.ndim != 3:
            raise ShapeMismatchError(f"points must have shape (T, N, d), got {self.points.shape}")
        self.horizon, self.n_agents, self.dim = self.points.shape
        self.domain = Simplex(self.dim) if domain is None else domain

    @property
    def grad_bound(self) -> float:
        """``max_{t,i} max_{x in Omega} ||x - p_t^i||`` (the gradient norm is the distance)."""
        return float(max(self.domain.max_distance(p) for p in self.points.reshape(-1, self.dim)))

    def grads(self, t, X):
        return self._X(X, self.n_agents) - self.points[self._t(t)]

    def total_grads(self, t, X):
        i = self._t(t)
        X = self._X(X)
        return self.n_agents * X - self.points[i].sum(axis=0)

    def values(self, t, X):
        return 0.5 * np.sum((self._X(X, self.n_agents) - self.points[self._t(t)]) ** 2, axis=1)

    def subset(self, agents):
        return OnlineQuadratic(self.points[:, np.asarray(agents, dtype=int)], self.domain)


def make_simplex_quadratic(rng: np.random.Generator, horizon: int, n_agents: int = 6, dim: int = 3,
                           concentration: float = 1.0) -> OnlineQuadratic:
    """Remark 2's small test problem: ``p_t^i = c + noise`` Dirichlet points around a fixed centre ``c`` of the
    simplex, so the minimiser of ``sum_i f_t^i`` drifts around ``c``."""
    horizon, n_agents, dim = (check_int(v, n) for v, n in ((horizon, "horizon"), (n_agents, "n_agents"), (dim, "dim")))
    centre = rng.dirichlet(np.full(dim, 2.0))
    points = rng.dirichlet(check_positive(concentration, "concentration") * 10 * centre + 1e-3,
                           size=(horizon, n_agents))
    return OnlineQuadratic(points, Simplex(dim))


class StaticOnline(_OnlineBase):
    """A static ERM problem (``local_grads``) as an online problem with ``f_t^i = f_i`` for every ``t``.

    Args:
        problem: a :class:`~privdist.problems.HorizontalERM` (or anything with ``local_grads``, ``n_agents``,
            ``n_features``, ``subset``).
        domain: the constraint set ``Omega``.
        horizon: largest admissible ``t`` (default: unbounded).
    """

    grad_bound = None

    def __init__(self, problem, domain, horizon: int | None = None):
        self.problem, self.domain = problem, domain
        self.n_agents, self.dim = problem.n_agents, problem.n_features
        self.horizon = np.iinfo(np.int64).max if horizon is None else check_int(horizon, "horizon")
        if domain.dim != self.dim:
            raise ShapeMismatchError(f"domain has dim {domain.dim}, the problem has {self.dim} features")

    def grads(self, t, X):
        self._t(t)
        return self.problem.local_grads(self._X(X, self.n_agents))

    def total_grads(self, t, X):
        self._t(t)
        X = self._X(X)
        return np.stack([self.problem.local_grads(np.tile(x, (self.n_agents, 1))).sum(axis=0) for x in X])

    def subset(self, agents):
        return StaticOnline(self.problem.subset(agents), self.domain, self.horizon)


def regret_terms(problem, t: int, X) -> np.ndarray:
    """Round-``t`` regret terms of every node's decision against every vertex of ``Omega`` (spec §5.8).

    Since ``Omega`` is a polytope (l1 ball, simplex), ``max_{x in Omega}`` of the linear function in S4 (2) is
    attained at a vertex ``v``, so ``E[R_tau^i] = max_v E[sum_{t<=tau} r_t(i, v)]`` with
    ``r_t(i, v) = <sum_j grad f_t^j(x_t^i), x_t^i - v>`` — equal to spec §5.8's ``A + 3 ||G||_inf`` form.

    Args:
        problem: a full online problem (all ``N`` agents, so that ``total_grads`` sums every cost); its domain
            must provide ``vertices()``.
        t: time step (1-based).
        X: decisions ``x_t^i``, shape (N, d).

    Returns:
        Array (N, V): ``r_t(i, v)`` for every node ``i`` and vertex ``v`` of ``problem.domain.vertices()``.
    """
    X = np.asarray(X, dtype=float)
    g = problem.total_grads(t, X)
    V = problem.domain.vertices()
    return np.einsum("ij,ij->i", g, X)[:, None] - g @ V.T


def expected_regret(R) -> np.ndarray:
    """``E[R_tau^i] = max_v mean_runs sum_{t<=tau} r_t(i, v)`` (expectation first, then the max, AMB-O8).

    Args:
        R: round terms of :func:`regret_terms` for several runs, shape (runs, T, N, V).

    Returns:
        Array (T, N): the estimated expected regret of node ``i`` at horizon ``tau = 1..T``.

    References:
        spec §1.5, §5.8 (S4 (2): the max over Omega is outside the expectation).
    """
    R = np.asarray(R, dtype=float)
    if R.ndim != 4:
        raise ShapeMismatchError(f"R must have shape (runs, T, N, V), got {R.shape}")
    return np.cumsum(R.mean(axis=0), axis=0).max(axis=2)
