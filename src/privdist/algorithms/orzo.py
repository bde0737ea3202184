"""OR-ZO: Duchi et al.'s optimal-rate two-point zeroth-order method on the global objective (spec §6.7).

Centralised and non-private: ``F(beta) = sum_k f_k(beta)``, ``beta^{(0)} = 0`` and per iteration ``t``

    u_{1,t} = u R / t,   u_{2,t} = u R / (P^2 t^2),   alpha_t = alpha R / (G sqrt(P log 2P) sqrt(t)),
    g^{(t)} = 1/J sum_j [F(beta + u1 nu1_j + u2 nu2_j) - F(beta + u1 nu1_j)] / u2 * nu2_j,
    beta^{(t)} = beta^{(t-1)} - alpha_t g^{(t)},

scoring the running average ``beta_hat^{(t)}`` (the iterate of Duchi et al.'s guarantee, S1(26)). Defaults of S1
Fig. 1 [RES, AMB-D14]: ``J = 30``, ``u = 1/R``, ``alpha = 0.54``, ``R = 2||beta^c||``,
``G = sum_k 2 w_k (||X_k||^2 R + ||X_k^T y_k||) + eta G_R`` (§2.8 without dual/penalty terms; ``w_k`` the
per-sample loss weight, ``1/N_k`` mean or 1 sum loss).

In the runtime the *coordinator* is the central solver (it sees the whole problem, as a central hub would); it
broadcasts the scored estimate, which every agent reports (spec §1.5: ``beta_k := beta``). The broadcast of
round ``t`` reaches the agents in round ``t + 1``, so curves lag by one round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .._checks import check_int, check_positive
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, in_the_clear, check_problem_network
from .dzoa_inner import zo_gradient

__all__ = ["ORZO", "CentralRelay", "RelayState", "global_lipschitz", "global_value_diff"]


@dataclass(frozen=True)
class RelayState:
    """Agents of a centralised method: the last estimate broadcast by the central solver, (K, P)."""

    beta: np.ndarray


class CentralRelay:
    """Agent side of a centralised method: agents only relay the coordinator's broadcast estimate."""

    has_coordinator: ClassVar[bool] = True

    def messages(self, problem, network):
        return (MessageSpec("beta", (problem.n_features,), Aggregation.BROADCAST),)

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network, needs_degrees=False)
        return RelayState(np.zeros((block.size, problem.n_features))), {}

    def step(self, state, inbox, t, rng):
        return RelayState(np.array(inbox["beta"], dtype=float)), {}

    def dp_events(self, state, t):
        # the coordinator computes on every agent's raw data and broadcasts the iterate without noise
        return [in_the_clear(self.name, "a coordinator's iterate computed from all agents' raw data, broadcast")
                ] * state.beta.shape[0]

    def estimate(self, state):
        return state.beta


def global_value_diff(problem, data_only: bool = False):
    """``value_diff(A, H, u2)`` of ``F = sum_k f_k`` (or of its data part only) for the ZO helpers."""

    def total(B):
        vals = problem.local_values(np.broadcast_to(B, (problem.n_agents,) + B.shape)).sum(axis=0)
        if data_only:
            vals = vals - problem.n_agents * problem.local_reg * problem.regularizer.value(B.T)
        return vals

    def diff(A, H, u2):
        return (total(A + u2 * H) - total(A)) / u2

    return diff


def global_lipschitz(problem, R: float, with_reg: bool = True) -> float:
    """``G = sum_k 2 w_k (||X_k||_2^2 R + ||X_k^T y_k||) + eta G_R`` (spec §6.7 / §2.8; ``w_k = 1/N_k`` under the
    mean loss, 1 under the sum loss)."""
    G = sum(2.0 * w * (np.linalg.norm(X, 2) ** 2 * R + np.linalg.norm(X.T @ y))
            for w, (X, y) in zip(problem.sample_weight, problem.parts()))
    if with_reg:
        name = problem.regularizer.name
        G += problem.reg_weight * (math.sqrt(problem.n_features) if name == "l1" else 2.0 * R if name == "l2" else 0.0)
    return float(G)


@dataclass(frozen=True)
class ORZOCoordinatorState:
    """Central solver: iterate ``beta``, running average ``avg``, constants and the full ``problem``."""

    beta: np.ndarray
    avg: np.ndarray
    R: float
    G: float
    problem: Any


@dataclass(frozen=True)
class ORZO(CentralRelay, AlgorithmBase):
    """Factory: ``ORZO(J=30, alpha=0.54)``.

    Args:
        J: direction pairs per iteration; alpha: step constant; u: smoothing constant (default ``1/R``).
        R: radius (default ``2||beta^c||``); G: Lipschitz constant (default §6.7 bound).
        output: ``"average"`` (Duchi et al.'s guarantee, default) or ``"last"``.
    """

    J: int = 30
    alpha: float = 0.54
    u: float | None = None
    R: float | None = None
    G: float | None = None
    output: str = "average"
    chunk: int = 4096
    name: ClassVar[str] = "orzo"

    def __post_init__(self):
        check_int(self.J, "J", 1)
        check_int(self.chunk, "chunk", 1)
        check_positive(self.alpha, "alpha")
        for nm in ("u", "R", "G"):
            if getattr(self, nm) is not None:
                check_positive(getattr(self, nm), nm)
        if self.output not in ("average", "last"):
            from ..errors import ValidationError

            raise ValidationError(f"output must be 'average' or 'last', got {self.output!r}")

    def init_coordinator(self, problem, network, rng):
        from ..problems import reference_solution

        R = self.R if self.R is not None else 2.0 * float(np.linalg.norm(reference_solution(problem)))
        G = self.G if self.G is not None else global_lipschitz(problem, R)
        zeros = np.zeros(problem.n_features)
        return ORZOCoordinatorState(zeros, zeros.copy(), R, G, problem), {"beta": zeros.copy()}

    def step_coordinator(self, cstate, inbox, t, rng):
        P = cstate.beta.shape[0]
        uR = (self.u if self.u is not None else 1.0 / cstate.R) * cstate.R
        g = zo_gradient(global_value_diff(cstate.problem), cstate.beta, self.J, uR / t, uR / (P * P * t * t),
                        rng.generators()[0], self.chunk)
        alpha_t = self.alpha * cstate.R / (cstate.G * math.sqrt(P * math.log(2 * P)) * math.sqrt(t))
        beta = cstate.beta - alpha_t * g
        avg = cstate.avg + (beta - cstate.avg) / t
        out = avg if self.output == "average" else beta
        return replace(cstate, beta=beta, avg=avg), {"beta": out.copy()}

    def assumptions(self):
        return ["orzo: centralised, non-private; the coordinator plays the central hub with all data (spec §6.7)"]
