"""DP-ADMM (Huang et al., TIFS 2020): linearised consensus ADMM with a coordinator and Gaussian output
perturbation of time-varying variance (spec §6.1, [RECON]; S0/S1 baseline).

Agent ``i`` in round ``t`` (``k + 1 = t``), from the coordinator's ``z^k`` and its own ``lambda_i^k`` and last
release ``w~_i^k``, with ``eta_t = eta0 / sqrt(t)``:

    g_i = grad L_i(w~_i^k)                (per-sample loss gradients clipped to ``c1`` when ``clip``)
    w_i = (rho z^k + lambda_i^k + w~_i^k / eta_t - g_i) / (rho + 1/eta_t)
    w~_i = w_i + N(0, sigma_t^2 I),   sigma_t = Delta_t sqrt(C log(1.25/delta)) / epsilon,
    Delta_t = 2 c1 w_i / (rho + 1/eta_t)                                 (replace-one sensitivity)

with ``w_i`` the problem's per-sample loss weight (``1/m_i`` under the mean loss, 1 under the sum loss,
:attr:`~privdist.problems.HorizontalERM.sample_weight`).

Coordinator (round ``t``, on the gathered ``w~``): ``z = mean_i(w~_i - lambda_i/rho)``,
``lambda_i <- lambda_i - rho (w~_i - z)``; broadcasts ``z`` and scatters ``lambda_i``. ``C = 2.1`` (comparison mode,
S1(25) composition, AMB-X2) or 2 (native, moments bound). The noise std shrinks as ``1/eta_t`` grows.
Scored estimate: the releases ``w~_i`` (AMB-X1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .._checks import check_positive
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, PerIterationGaussian, check_problem_network

__all__ = ["DPADMM", "DPADMMState", "DPADMMCoordinatorState"]


@dataclass(frozen=True)
class DPADMMState:
    """Agents: ``w`` (K, P) last release ``w~``, ``weights`` per-sample loss weight per agent, local ``problem``."""

    w: np.ndarray
    weights: np.ndarray
    problem: Any


@dataclass(frozen=True)
class DPADMMCoordinatorState:
    """Coordinator: ``z`` (P,) and the duals ``lam`` (K, P) it keeps for every agent."""

    z: np.ndarray
    lam: np.ndarray


@dataclass(frozen=True)
class DPADMM(PerIterationGaussian, AlgorithmBase):
    """Factory: ``DPADMM(rho=1.0, eta0=1.0, epsilon=0.15, delta=1e-3)``.

    Args:
        rho: ADMM penalty (> 0), grid-searched in S0/S1 (AMB-B5).
        eta0: prox step scale (``eta_t = eta0/sqrt(t)``), grid-searched.
        epsilon, delta: per-iteration privacy (or total, see ``budget``); ``epsilon=None`` runs without noise.
        c1: per-sample gradient bound (clipping norm when ``clip``).
        clip: clip per-sample gradients to ``c1`` (a-priori sensitivity) or assume the bound (AMB-D8).
        gaussian_constant: 2.1 (D-ZOA comparison mode) or 2 (native).
        budget: ``"round"`` (``epsilon`` per release, the papers') or ``"total"`` (each agent's whole run, PLD).
        rounds: rounds a total budget covers (``None``: the run's, filled in by ``run``).
    """

    rho: float = 1.0
    eta0: float = 1.0
    epsilon: float | None = 0.15
    delta: float = 1e-3
    c1: float = 1.0
    clip: bool = True
    gaussian_constant: float = 2.1
    budget: str = "round"
    rounds: int | None = None
    name: ClassVar[str] = "dpadmm"
    has_coordinator: ClassVar[bool] = True

    def __post_init__(self):
        check_positive(self.rho, "rho")
        check_positive(self.eta0, "eta0")
        self._check_gaussian_privacy()

    def messages(self, problem, network):
        P = (problem.n_features,)
        return (MessageSpec("w", P, Aggregation.GATHER), MessageSpec("z", P, Aggregation.BROADCAST),
                MessageSpec("lam", P, Aggregation.SCATTER))

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network, needs_degrees=False)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        zeros = np.zeros((block.size, problem.n_features))
        return DPADMMState(zeros, np.asarray(local.sample_weight, dtype=float), local), {"w": zeros.copy()}

    def init_coordinator(self, problem, network, rng):
        P = problem.n_features
        cs = DPADMMCoordinatorState(np.zeros(P), np.zeros((network.n_agents, P)))
        return cs, {"z": cs.z.copy(), "lam": cs.lam.copy()}

    def step(self, state, inbox, t, rng):
        inv_eta = np.sqrt(t) / self.eta0
        grad = state.problem.local_grads(state.w, clip=self.c1 if self.clip else None)
        w = (self.rho * inbox["z"] + inbox["lam"] + state.w * inv_eta - grad) / (self.rho + inv_eta)
        w = self.mechanism.privatize(w, 2.0 * self.c1 * state.weights / (self.rho + inv_eta), rng)
        return replace(state, w=w), {"w": w}

    def step_coordinator(self, cstate, inbox, t, rng):
        W = inbox["w"]
        z = (W - cstate.lam / self.rho).mean(axis=0)
        lam = cstate.lam - self.rho * (W - z)
        return replace(cstate, z=z, lam=lam), {"z": z, "lam": lam}

    def dp_events(self, state, t):
        return self.mechanism.releases(state.problem.agent_ids)

    def estimate(self, state):
        return state.w

    def linear_protocol(self, problem, network, rounds: int):
        """The linear-Gaussian model of this protocol, for pairwise accounting (:mod:`.linear_models`)."""
        from .linear_models import dpadmm_protocol

        return dpadmm_protocol(self, problem, network, rounds)

    def assumptions(self):
        out = ["dpadmm: reconstruction of Huang et al. 2020 (spec §6.1 [RECON]); coordinator holds the duals"]
        if not self.mechanism.private:
            return out
        if self.clip:
            return out + [f"dpadmm: per-sample gradients clipped to norm c1={self.c1}; sensitivity is a-priori"]
        return out + [f"dpadmm: per-sample gradient norm <= c1={self.c1} is assumed, not enforced (AMB-D8)"]
