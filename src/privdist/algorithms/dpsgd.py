"""DPSGD ("DPSG"): distributed subgradient method with Gaussian output perturbation (spec §6.6, AMB-B3).

Core: Nedić & Ozdaglar (2009). DP customisation [RECON, spec §6.6]: agent ``k`` releases
``q_k(t) = x_k(t) + e_k(t)``, ``e_k(t) ~ N(0, sigma_t^2 I)``, and updates only from released values:

    x_k(t) = sum_{l in N_k ∪ {k}} a_kl q_l(t-1) - alpha_t d_k(q_k(t-1)),   alpha_t = alpha0 / sqrt(t),

with Metropolis weights ``a_kl`` (the ``MIX`` aggregation of a static network) and ``d_k`` a subgradient of
``f_k``. Replacing one sample of agent ``k`` moves ``d_k`` by at most ``2 c1 w_k`` when every per-sample
loss gradient has norm <= ``c1`` (``w_k`` the per-sample loss weight: ``1/N_k`` mean, 1 sum loss), so the l2
sensitivity of ``x_k(t)`` is ``Delta_t = 2 alpha_t c1 w_k`` and

    sigma_t = Delta_t sqrt(C log(1.25 / delta)) / epsilon

gives ``(epsilon, delta)`` per release (C = 2.1 in the D-ZOA comparison mode, S1(20), AMB-X2; C = 2 native), or,
with ``budget="total"``, ``(epsilon, delta)`` for each agent's whole run of ``rounds`` releases (PLD-calibrated
``sigma_t / Delta_t``). The noise is drawn and the release declared by one mechanism object (``self.mechanism``,
:mod:`privdist.privacy.mechanisms`).
With ``clip=True`` (default) every per-sample gradient is clipped to norm ``c1``, so the bound holds a priori;
``clip=False`` is the papers' unclipped variant, whose bound is an assumption (AMB-D8, AMB-B6) recorded in the
results. DP event per agent and round: ``GaussianDpEvent(sqrt(C log(1.25/delta)) / epsilon)``, composed by the
paper accountant with S1(25) (C = 2.1) or the moments bound (C = 2). ``q_k(0) = x_k(0) = 0`` is data-free.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from .._checks import check_positive
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, PerIterationGaussian, check_problem_network

__all__ = ["DPSGD", "DPSGDState"]


@dataclass(frozen=True)
class DPSGDState:
    """``x`` (K, P) private iterate, ``q`` (K, P) last release, ``weights`` per-sample loss weight per agent."""

    x: np.ndarray
    q: np.ndarray
    weights: np.ndarray
    problem: object


@dataclass(frozen=True)
class DPSGD(PerIterationGaussian, AlgorithmBase):
    """Factory: ``DPSGD(alpha0=0.5, epsilon=0.15, delta=1e-3)``.

    Args:
        alpha0: step-size scale (``alpha_t = alpha0 / sqrt(t)``), grid-searched in the papers.
        epsilon, delta: per-release privacy (``budget="round"``) or each agent's total over the run
            (``budget="total"``); ``epsilon=None`` runs without noise (non-private baseline); a tuple of epsilons
            gives one budget per agent.
        c1: per-sample gradient bound (clipping norm when ``clip``).
        clip: clip per-sample gradients to ``c1`` (a-priori sensitivity) or assume the bound.
        gaussian_constant: ``C`` in ``sqrt(C log(1.25/delta))``: 2.1 (D-ZOA comparison mode) or 2.
        budget: ``"round"`` (the papers' per-release parameters) or ``"total"``.
        rounds: rounds a total budget covers (``None``: the run's, filled in by ``run``).
    """

    alpha0: float = 0.5
    epsilon: float | None = 0.15
    delta: float = 1e-3
    c1: float = 1.0
    clip: bool = True
    gaussian_constant: float = 2.1
    budget: str = "round"
    rounds: int | None = None
    name: ClassVar[str] = "dpsgd"

    def __post_init__(self):
        check_positive(self.alpha0, "alpha0")
        self._check_gaussian_privacy()

    def messages(self, problem, network):
        return (MessageSpec("q", (problem.n_features,), Aggregation.MIX),)

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network, needs_degrees=False)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        zeros = np.zeros((block.size, problem.n_features))
        return DPSGDState(zeros, zeros.copy(), np.asarray(local.sample_weight, dtype=float), local), {"q": zeros.copy()}

    def step(self, state, inbox, t, rng):
        alpha = self.alpha0 / np.sqrt(t)
        grad = state.problem.local_grads(state.q, clip=self.c1 if self.clip else None)
        x = inbox["q"] - alpha * grad
        q = self.mechanism.privatize(x, 2.0 * alpha * self.c1 * state.weights, rng)  # Delta_t = 2 alpha_t c1 w_k
        return replace(state, x=x, q=q), {"q": q}

    def dp_events(self, state, t):
        return self.mechanism.releases(state.problem.agent_ids)

    def estimate(self, state):
        return state.q

    def linear_protocol(self, problem, network, rounds: int):
        """The linear-Gaussian model of this protocol, for pairwise accounting (:mod:`.linear_models`)."""
        from .linear_models import dpsgd_protocol

        return dpsgd_protocol(self, problem, network, rounds)

    def assumptions(self):
        if not self.mechanism.private:
            return []
        if self.clip:
            return [f"dpsgd: per-sample gradients clipped to norm c1={self.c1}; sensitivity 2*alpha_t*c1/N_k is a-priori"]
        return [f"dpsgd: per-sample gradient norm <= c1={self.c1} is assumed, not enforced "
                "(violated by the squared loss, AMB-D8/AMB-B6)"]
