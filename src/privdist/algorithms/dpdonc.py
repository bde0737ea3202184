"""DPDO-NC: differentially private distributed online mirror descent (spec §5, S4 Alg. 1).

Node ``i`` at time ``t = 1..T`` (spec §5.4, S4 (6)-(7)):

1. broadcasts ``q_t^i = x_t^i + xi_t^i``, ``xi_t^i ~ Lap(sigma_t)^d`` (per coordinate);
2. mixes ``z_t^i = sum_j a_ij(t) q_t^j`` (the ``MIX`` aggregation with ``A(t)`` of the receiving round);
3. observes ``g_t^i = grad f_t^i(x_t^i)`` at its own clean decision;
4. steps ``x_{t+1}^i = argmin_{x in Omega} D_phi(x, z_t^i) + alpha_t <g_t^i, x>`` (exact mirror step,
   :mod:`privdist.problems.mirror`), ``alpha_t = step_scale / sqrt(t)`` (S4: ``1 / (N sqrt t)``).

Runtime mapping: ``init`` releases ``q_1`` (from the public ``x_1``, so it costs no privacy); round ``t`` mixes
``q_t`` with ``A(t)``, steps to ``x_{t+1}`` and releases ``q_{t+1}``. Noise (spec §5.6, S4 Lemma 1, Thm 1, AMB-O1):
l1 sensitivity ``Delta(t) = 2 sqrt(d) alpha_t theta / omega``, ``sigma_t = b Delta(t)`` with the Laplace noise
multiplier ``b``: ``1/epsilon`` for ``budget="round"`` (S4's pure ``epsilon`` per step, composed by basic
composition, ``T epsilon``, S4 Thm 1, and by the RDP/PLD accountants as generic pure DP: the d-dimensional Laplace
mechanism is declared through the pure-DP dominating pair, :func:`~privdist.privacy.release.pure_release`), or, for ``budget="total"``, the smallest ``b`` whose ``rounds``-fold composition the PLD accountant
certifies at each node's total ``(epsilon, delta)`` (``delta`` is used by a total budget only: S4's per-step
guarantee is pure). Every draw, including the data-free noisy start ``q_1``, goes through one mechanism object,
``self.mechanism`` (:class:`~privdist.privacy.LaplaceMechanism`, or :class:`~privdist.privacy.Identity` without DP;
issue 23).

Public theta (issue 12): ``theta`` sets the noise scale, so it must not depend on private data. It is a public
parameter given by the user (the catalog writes the value as a number); with ``clip=True`` every observed
gradient is clipped to norm ``theta`` inside the mechanism, so the L2 change of ``x_{t+1}`` is at most
``2 alpha_t theta / omega`` and the L1 sensitivity of Lemma 1 holds for any cost function. ``theta="data"``
opts in to the problem's own bound (computed from all nodes' sensor data, AMB-O3): its releases are the paper's
claim only (guaranteed epsilon inf), as are those of ``clip=False`` (the bound assumed, not enforced).
``estimate`` returns the decisions ``x_t^i``: the regret S4 (2) is defined on
them (a documented exception to AMB-X1, which scores released values).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .._checks import check_finite, check_positive, check_probability
from ..errors import PublicParameterError, ShapeMismatchError, ValidationError
from ..problems.constraints import L1Ball, Simplex
from ..problems.mirror import make_mirror
from ..problems.online import StaticOnline
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, Budgeted

__all__ = ["DPDONC", "DPDONCState", "as_online_problem"]


def as_online_problem(problem, radius: float = 3.0, mirror: str = "euclidean"):
    """``problem`` if it is an online problem (has ``grads`` and ``domain``), else a static ERM problem wrapped as
    :class:`~privdist.problems.online.StaticOnline` on the l1 ball of ``radius`` (the simplex for ``entropy``)."""
    if hasattr(problem, "grads") and hasattr(problem, "domain"):
        return problem
    if not hasattr(problem, "local_grads"):
        raise ValidationError(f"DPDO-NC needs an online problem or an ERM problem, got {type(problem).__name__}")
    d = problem.n_features
    return StaticOnline(problem, Simplex(d) if mirror == "entropy" else L1Ball(d, radius))


@dataclass(frozen=True)
class DPDONCState:
    """``x`` (K, d) decisions ``x_t^i``; ``q`` (K, d) last release; ``t`` last completed step; constants; ``agents``
    the nodes' global ids (whose budgets the mechanism reads); ``releases`` the mechanism's release of each node,
    the same every round (made once: 1,000 Laplace releases per round cost 40 % of a round at N = 1000)."""

    x: np.ndarray
    q: np.ndarray
    t: int
    problem: Any
    mirror: Any
    theta: float
    step_scale: float
    agents: np.ndarray
    releases: tuple = ()


@dataclass(frozen=True)
class DPDONC(Budgeted, AlgorithmBase):
    """Factory: ``DPDONC(epsilon=5.0, mirror="euclidean")``.

    Args:
        epsilon: per-step pure privacy (``budget="round"``, S4) or each node's total over the run
            (``budget="total"``), > 0; a tuple gives one budget per node. ``None`` runs without noise
            (``sigma_t = 0``, "without DP" in S4 Fig. 1, the :class:`~privdist.privacy.Identity` mechanism); the
            rule for TOML, which has no null: ``epsilon = inf`` (or ``false``) is stored as ``None``.
        mirror: ``"euclidean"`` (1/2||x||^2), ``"squared"`` (||x||^2), ``"mahalanobis"`` (x^T Q x) or
            ``"entropy"`` (negative entropy; Omega must be the simplex).
        Q: positive definite matrix of the Mahalanobis map (default ``diag(1, 2)``, AMB-O6).
        step_scale: ``alpha_t = step_scale / sqrt(t)``; ``None`` = ``1 / N`` (S4 §5).
        theta: public gradient bound (> 0) that sets the noise scale and the clipping norm. ``None``: 1.0 for a
            problem without a bound of its own (static ERM); a private run on a problem that computes its bound
            from the nodes' data (localisation, quadratic) raises ``PublicParameterError`` (pass the value, e.g.
            4.030199 for S4's literal layout). ``"data"``: the problem's data-derived ``grad_bound`` (AMB-O3); the
            releases are then a claim, not a guarantee. A non-private run may leave it ``None``.
        clip: clip observed gradients to norm ``theta`` so that Lemma 1's bound holds a priori (a no-op when
            ``theta`` is a true bound, as for the localisation problem); ``False`` makes the releases a claim.
        x0: initial decision (in Omega) for every node; ``None`` = 0 (l1 ball) or the uniform point (simplex).
        radius: l1-ball radius of Omega for problems without a constraint set of their own (static ERM).
        floor: uniform mixing weight of the entropy step (see :class:`~privdist.problems.mirror.EntropyMirror`).
        budget: ``"round"`` (S4's pure epsilon per step) or ``"total"`` (PLD over ``rounds`` releases).
        delta: the total delta of ``budget="total"`` (the PLD accountant's target, in (0, 1); required there and
            not used by ``"round"``, whose guarantee is pure). ``None`` by default: a total budget without it
            raises ``ValidationError``.
        rounds: rounds a total budget covers (``None``: the run's, filled in by ``run``).
    """

    epsilon: float | None = 5.0
    mirror: str = "euclidean"
    Q: Any = None
    step_scale: float | None = None
    theta: float | str | None = None
    clip: bool = True
    x0: Any = None
    radius: float = 3.0
    floor: float = 1e-3
    budget: str = "round"
    delta: float | None = None
    rounds: int | None = None
    name: ClassVar[str] = "dpdonc"

    def __post_init__(self):
        if self.epsilon is False or (isinstance(self.epsilon, float) and self.epsilon == np.inf):
            object.__setattr__(self, "epsilon", None)  # the TOML spelling of "no noise" (no null in TOML)
        self._check_budget()
        if self.delta is not None:
            check_probability(self.delta, "delta")
        if self.step_scale is not None:
            check_positive(self.step_scale, "step_scale")
        if isinstance(self.theta, str):
            if self.theta != "data":
                raise ValidationError(f"theta must be a positive number, None or 'data', got {self.theta!r}")
        elif self.theta is not None:
            check_positive(self.theta, "theta")
        check_positive(self.radius, "radius")
        make_mirror(self.mirror, Q=self.Q, floor=self.floor)  # validates name, Q (PD) and floor
        if self.budget == "round" or self.rounds is not None:
            self.mechanism  # noqa: B018 - validates epsilon (and delta of a total budget) now

    def _build_mechanism(self):
        """The Laplace mechanism of the budget (S4 Thm 1; :func:`privdist.privacy.laplace_mechanism`), or Identity."""
        from ..privacy import laplace_mechanism

        return laplace_mechanism(self.epsilon, budget=self.budget, releases=self.rounds, delta=self.delta,
                                 reason=self.unenforced(), clear=f"{self.name}: iterates sent without noise "
                                 "(not private)")

    def messages(self, problem, network):
        return (MessageSpec("q", (as_online_problem(problem, self.radius, self.mirror).dim,), Aggregation.MIX),)

    @staticmethod
    def sensitivity(t: int, d: int, omega: float, theta: float, step_scale: float) -> float:
        """The l1 sensitivity ``Delta(t) = 2 sqrt(d) alpha_t theta / omega`` of ``q_t`` (S4 Lemma 1 with the
        ``sqrt(d)`` its proof drops, AMB-O1; ``alpha_t = step_scale / sqrt(t)``)."""
        return 2.0 * np.sqrt(d) * step_scale / np.sqrt(t) * theta / omega

    def sigma(self, t: int, d: int, omega: float, theta: float, step_scale: float, agent: int = 0) -> float:
        """Laplace scale ``sigma_t = b Delta(t)`` the mechanism draws for node ``agent`` (``2 sqrt(d) alpha_t theta /
        (omega epsilon)`` for a per-step budget, spec §5.6; 0 without DP)."""
        from ..privacy.declared import noise_std

        return float(noise_std(self.mechanism, self.sensitivity(t, d, omega, theta, step_scale), [agent])[0])

    def _theta(self, online) -> float:
        if self.theta is not None and self.theta != "data":
            return float(self.theta)
        bound = getattr(online, "grad_bound", None)
        if self.theta == "data":
            if bound is None:
                raise ValidationError("theta='data' needs a problem with a gradient bound (grad_bound)")
            return float(bound)
        if bound is not None:
            if self.mechanism.private:
                raise PublicParameterError(
                    f"dpdonc: theta (the gradient bound that sets the Laplace scale) must be a public parameter; "
                    f"this problem computes it from the nodes' private data ({float(bound):.7g}). Pass theta=<number> "
                    "(a guarantee, gradients clipped to it) or theta='data' (the paper's claim, not a guarantee)")
            return float(bound)
        if not self.clip:
            raise ValidationError("theta is needed: the problem has no gradient bound and clip=False")
        return 1.0

    def unenforced(self) -> str | None:
        """Why the releases are only the paper's claim, else None."""
        if self.theta == "data":
            return ("dpdonc: theta (which sets the Laplace scale) is computed from all nodes' private data "
                    "(theta='data', AMB-O3), so the noise scale itself depends on private data")
        if not self.clip:
            return ("dpdonc: ||grad f_t^i|| <= theta on Omega is assumed, not enforced (clip=false), so the L1 "
                    "sensitivity of S4 Lemma 1 is not guaranteed")
        return None

    def init(self, problem, network, block, rng):
        online = as_online_problem(problem, self.radius, self.mirror)
        if network.n_agents != online.n_agents:
            raise ShapeMismatchError(f"network has {network.n_agents} agents, problem has {online.n_agents}")
        if getattr(network, "schedule", None) == "random" and network.B is not None and online.horizon < 10**7:
            network.check_b_strongly_connected_until(max(online.horizon, network.B))
        mirror = make_mirror(self.mirror, Q=self.Q, floor=self.floor)
        mirror.check_domain(online.domain)
        d = online.dim
        if self.x0 is None:
            x0 = np.full(d, 1.0 / d) if isinstance(online.domain, Simplex) else np.zeros(d)
        else:
            x0 = check_finite(self.x0, "x0").reshape(-1)
            if x0.shape != (d,):
                raise ShapeMismatchError(f"x0 must have {d} entries, got {x0.shape[0]}")
            if not online.domain.contains(x0)[0]:
                raise ValidationError(f"x0={x0.tolist()} is outside Omega ({online.domain})")
        local = online.subset(block.agents) if block.size != online.n_agents else online
        theta = self._theta(online)
        step_scale = self.step_scale if self.step_scale is not None else 1.0 / block.n_agents
        x = np.tile(x0, (block.size, 1))
        q = self.mechanism.privatize(x, self.sensitivity(1, d, mirror.omega, theta, step_scale), rng)  # public start
        agents = np.asarray(block.agents, dtype=np.int64)
        state = DPDONCState(x, q, 0, local, mirror, theta, step_scale, agents, tuple(self.mechanism.releases(agents)))
        return state, {"q": q.copy()}

    def step(self, state, inbox, t, rng):
        z = inbox["q"]
        g = state.problem.grads(t, state.x)
        if self.clip:
            norm = np.linalg.norm(g, axis=1, keepdims=True)
            g = g * np.minimum(1.0, state.theta / np.maximum(norm, 1e-300))
        alpha = state.step_scale / np.sqrt(t)
        x = state.mirror.step(z, g, alpha, state.problem.domain)
        sens = self.sensitivity(t + 1, x.shape[1], state.mirror.omega, state.theta, state.step_scale)
        q = self.mechanism.privatize(x, sens, rng)  # q_{t+1} = x_{t+1} + Lap(sigma_{t+1})^d
        return replace(state, x=x, q=q, t=t), {"q": q}

    @property
    def private(self) -> bool:
        """Whether releases are noised (the mechanism is not :class:`~privdist.privacy.Identity`)."""
        return self.mechanism.private

    def dp_events(self, state, t):
        return list(state.releases)

    def estimate(self, state):
        return state.x

    def assumptions(self):
        if not self.private:
            return ["dpdonc: non-private run (sigma_t = 0)"]
        per_step = (f"pure epsilon={self.epsilon} per step (S4 Thm 1)" if self.budget == "round" else
                    f"a total budget (epsilon={self.epsilon}, delta={self.delta}) over {self.rounds} steps, "
                    f"PLD-calibrated Laplace noise multiplier")
        out = [f"dpdonc: {per_step} from the L1 sensitivity "
               "2 sqrt(d) alpha_t theta / omega of S4 Lemma 1 (with the sqrt(d) its proof drops, AMB-O1); "
               "one changed node cost function is the neighbouring relation (S4 Def. 3)",
               "dpdonc: metrics score the decisions x_t^i (S4 (2)), not the noisy releases q_t^i"]
        if self.clip:
            out.append("dpdonc: observed gradients clipped to norm theta inside the mechanism, so the sensitivity "
                       "bound holds a priori")
        else:
            out.append("dpdonc: ||grad f_t^i|| <= theta on Omega is assumed, not enforced")
        if self.theta == "data":
            out.append("dpdonc: theta computed from the nodes' private data (theta='data'): releases are a claim")
        else:
            out.append("dpdonc: theta is a public parameter (given, not computed from the data)")
        return out
