"""Decentralized consensus ADMM, non-private (spec §6.2; Forero et al. 2010; S3(5),(6); D-ZOA's outer loop).

Update for agent ``k`` with neighbours ``N_k`` (degree ``d_k``), written in D-ZOA's convention (spec §2.4 with
the exact primal step; equals §6.2 with ``gamma = 2 lambda``):

    beta_k^m  = argmin_b f_k(b) + b^T gamma_k^{m-1} + rho sum_{l in N_k} ||b - (beta_k^{m-1} + beta_l^{m-1}) / 2||^2
              = argmin_b f_k(b) + rho d_k ||b||^2 - b^T v_k,   v_k = rho (d_k beta_k^{m-1} + sum_l beta_l^{m-1}) - gamma_k^{m-1}
    gamma_k^m = gamma_k^{m-1} + rho sum_{l in N_k} (beta_k^m - beta_l^m)                          (S1(5))

The local argmin is exact (:meth:`HorizontalERM.prox_solve`: closed form for the squared loss with l2, FISTA
for l1, Newton for smooth losses). Message: ``beta`` (P,) to every neighbour, aggregated as a neighbour sum.
The dual of round ``m`` is formed at the start of round ``m + 1``, when the neighbours' ``beta^m`` arrive
(AMB-D2: same recursion). Releases nothing private: no DP events. ``sum_k gamma_k = 0`` holds exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from .._checks import check_positive
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, in_the_clear, check_problem_network, degrees_of

__all__ = ["ConsensusADMM", "ConsensusADMMState"]


@dataclass(frozen=True)
class ConsensusADMMState:
    """``beta`` (K, P) last released primal, ``gamma`` (K, P) duals, ``problem`` the block's local data."""

    beta: np.ndarray
    gamma: np.ndarray
    degrees: np.ndarray
    problem: object


@dataclass(frozen=True)
class ConsensusADMM(AlgorithmBase):
    """Factory: ``ConsensusADMM(rho=4.0)``.

    Args:
        rho: ADMM penalty (> 0); 4 in S1's experiments.
        tol: accuracy of the exact local solve.
    """

    rho: float = 4.0
    tol: float = 1e-12
    name: ClassVar[str] = "consensus_admm"

    def __post_init__(self):
        check_positive(self.rho, "rho")
        check_positive(self.tol, "tol")

    def messages(self, problem, network):
        return (MessageSpec("beta", (problem.n_features,), Aggregation.NEIGHBOR_SUM),)

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        zeros = np.zeros((block.size, problem.n_features))
        state = ConsensusADMMState(zeros, zeros.copy(), degrees_of(block), local)
        return state, {"beta": zeros.copy()}

    def step(self, state, inbox, t, rng):
        d, nbr = state.degrees[:, None], inbox["beta"]
        gamma = state.gamma + self.rho * (d * state.beta - nbr)
        v = self.rho * (d * state.beta + nbr) - gamma
        beta = state.problem.prox_solve(self.rho * state.degrees, v, init=state.beta, tol=self.tol)
        return replace(state, beta=beta, gamma=gamma), {"beta": beta}

    def dp_events(self, state, t):
        return [in_the_clear(self.name)] * state.beta.shape[0]

    def estimate(self, state):
        return state.beta
