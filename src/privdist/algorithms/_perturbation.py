"""Shared machinery of the perturbed consensus-ADMM baselines PVP, DVP and R-ADMM (spec §6.2-§6.5).

All three run the Forero/Zhang-Zhu skeleton of spec §6.2 in the ``gamma = 2 lambda`` convention used by
:mod:`privdist.algorithms.consensus_admm`: with ``x`` the released values, agent ``p`` of degree ``d_p`` does

    gamma_p <- gamma_p + rho (d_p x_p - sum_{j in N_p} x_j)                       (dual, released values only)
    f_p     = argmin_f O_p(f) + (Phi_p/2 + rho d_p) ||f||^2 - f^T (rho (d_p x_p + sum_j x_j) - gamma_p - a_p)

where ``O_p = f_k`` of :class:`~privdist.problems.HorizontalERM` (loss weight ``C = 1``, ``rho_reg/P_n R =
reg_weight/K R``) and ``a_p`` is DVP's linear perturbation. This module holds the pieces they share: the
per-iteration budget from a per-iteration or total target (spec §4.10, AMB-X2/X3), the declared release, the
strong-convexity modulus ``mu_p`` (spec §6.3), Chaudhuri et al.'s objective-perturbation constants (spec §6.4),
the noise draws and the parameter checks.

References:
    Spec §6.2-§6.5, §4.10, §8.5 (AMB-B1, B2, B6, X2, X3); Chaudhuri, Monteleoni & Sarwate (JMLR 2011) Alg. 1-2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._checks import check_int, check_positive, check_probability
from ..errors import DataBoundError, ValidationError
from ..privacy import gamma_norm, gaussian_release, laplace_release
from ..contract import Aggregation, MessageSpec
from ._sparse_oracle import SparseERMOracle
from .base import AlgorithmBase, in_the_clear, check_problem_network, degrees_of

__all__ = ["PerturbedADMM", "PerturbedADMMState", "check_common", "iteration_budget", "noise_release",
           "strong_convexity", "objective_perturbation", "oracle_of", "draw_noise", "noise_assumptions", "NOISES", "BUDGETS",
           "check_unit_rows"]

NOISES: tuple[str, ...] = ("gamma", "gaussian")
BUDGETS: tuple[str, ...] = ("iteration", "total")


def oracle_of(problem) -> SparseERMOracle:
    """The problem's own sparse oracle when it has one (``SparseHorizontalERM``), else a new one."""
    oracle = getattr(problem, "oracle", None)
    return oracle if isinstance(oracle, SparseERMOracle) else SparseERMOracle(problem)


def check_common(alg) -> None:
    """Validate the parameters PVP, DVP and R-ADMM share (see :class:`PerturbedADMM`).

    Raises:
        ValidationError: a value outside its domain (named in the message).
    """
    check_positive(alg.rho, "rho")
    check_positive(alg.tol, "tol")
    check_positive(alg.c1, "c1")
    check_probability(alg.delta, "delta")
    check_int(alg.iterations, "iterations")
    if alg.epsilon is not None:
        check_positive(alg.epsilon, "epsilon")
    if alg.c_hess is not None:
        check_positive(alg.c_hess, "c_hess")
    if alg.noise not in NOISES:
        raise ValidationError(f"noise must be one of {NOISES}, got {alg.noise!r}")
    if alg.budget not in BUDGETS:
        raise ValidationError(f"budget must be one of {BUDGETS}, got {alg.budget!r}")
    if alg.gaussian_constant not in (2.0, 2.1):
        raise ValidationError(f"gaussian_constant must be 2 or 2.1, got {alg.gaussian_constant}")
    if not isinstance(alg.clip, bool):
        raise TypeError(f"clip must be a bool, got {type(alg.clip).__name__}")


def check_unit_rows(problem, name: str, bound: float = 1.0) -> None:
    """Objective perturbation (Chaudhuri et al. 2011, Alg. 2) needs ``||x|| <= 1`` for the Hessian bound
    ``l'' x x^T <= c_H``; clipping the gradient cannot enforce it.

    Raises:
        DataBoundError: a row of norm > ``bound`` (agent and row named).
    """
    norms = problem.row_norms
    bad = norms > bound * (1.0 + 1e-12)
    if bad.any():
        k, j = np.argwhere(bad)[0]
        agent = int(problem.agent_ids[k])
        raise DataBoundError(
            f"{name}: objective perturbation needs every row to have norm <= {bound}; agent {agent} row {int(j)} has "
            f"norm {norms[k, j]:.6g} ({int(bad.sum())} such rows). Normalise the rows (e.g. x / max(1, ||x||)) or "
            "use noise='gaussian' with clip (output perturbation, PVP)")


def iteration_budget(epsilon: float, delta: float, noise: str, constant: float, budget: str, n_rel: int) -> float:
    """Per-release epsilon from the configured budget (spec §4.10, AMB-X2, AMB-X3).

    Args:
        epsilon: The configured epsilon (per release if ``budget == "iteration"``, total otherwise).
        delta: Per-release delta of the Gaussian variant.
        noise: ``"gamma"`` (pure DP, basic composition) or ``"gaussian"``.
        constant: 2.1 (S1(25) composition) or 2.0 (§1.3-2 moments composition).
        budget: ``"iteration"`` or ``"total"``.
        n_rel: Number of privacy-costing releases of the run.

    Returns:
        The per-release epsilon: ``epsilon`` itself, ``epsilon / n_rel`` (gamma, total), or the inversion of
        ``eps_tot = eps sqrt(n log(1/delta) / (c log(1.25/delta)))`` with ``c = 1.05`` (2.1) or 1 (2.0).
    """
    if budget == "iteration":
        return float(epsilon)
    if noise == "gamma":
        return float(epsilon) / n_rel
    divisor = 1.05 if constant == 2.1 else 1.0
    return float(epsilon) / math.sqrt(n_rel * math.log(1.0 / delta) / (divisor * math.log(1.25 / delta)))


def noise_release(eps_iter: float, delta: float, noise: str, constant: float, reason: str | None = None):
    """The :class:`~privdist.privacy.Release` of one perturbed iteration.

    Gaussian: noise multiplier ``sqrt(C log(1.25/delta)) / eps_iter``, composition ``"dzoa"`` (C = 2.1) or
    ``"moments"`` (C = 2). Gamma-norm (pure ``eps_iter``-DP): ``laplace_release(1/eps_iter)`` with basic
    composition — the tight accountants then treat it as a 1-D Laplace mechanism of the same pure epsilon
    (dp-accounting has no Gamma-norm event; recorded in :func:`noise_assumptions`). ``reason`` makes it the
    paper's claim only.
    """
    if noise == "gaussian":
        z = math.sqrt(constant * math.log(1.25 / delta)) / eps_iter
        return gaussian_release(z, epsilon=eps_iter, delta=delta,
                                composition="dzoa" if constant == 2.1 else "moments", reason=reason)
    return laplace_release(1.0 / eps_iter, composition="basic", reason=reason)


def noise_assumptions(name: str, noise: str, c1: float, clip: bool = False) -> list[str]:
    """Caveats carried to results (spec §1.3: never hidden)."""
    out = [f"{name}: reconstruction of the original method (spec [RECON], AMB-B1); constant per-iteration budget"]
    if noise == "gamma":
        out.append(f"{name}: Gamma-norm noise is pure eps-DP per iteration (basic composition); the rdp/pld "
                   "accountants compose it as a 1-D Laplace mechanism with the same pure epsilon (dp-accounting "
                   "has no Gamma-norm event)")
    else:
        out.append(f"{name}: Gaussian variant (spec §6.3/§6.4, AMB-X2); classical Gaussian-mechanism bound")
    if clip:
        out.append(f"{name}: per-sample loss gradients clipped to norm c1={c1} inside the mechanism: the loss l is "
                   "replaced by its clipped version (l' clipped to +-c1/||x||; the Huber loss for the squared loss, "
                   "the loss itself for the logistic loss on unit-norm rows with c1 >= 1), so the local solve "
                   "minimises that loss and the sensitivity holds a priori")
    else:
        out.append(f"{name}: per-sample loss-gradient norm <= c1={c1} is assumed, not enforced (clip=false; true for "
                   "the logistic loss with unit-norm rows; violated by the squared loss, AMB-B6/AMB-D8): a claim")
    return out


def strong_convexity(problem, rho: float, degrees: np.ndarray) -> np.ndarray:
    """``mu_p = local_reg * mu_R + 2 rho d_p`` (spec §6.3), per agent of the block, shape (K,)."""
    mu_r = float(getattr(problem.regularizer, "hessian_scale", 0.0)) if problem.regularizer.smooth else 0.0
    return problem.local_reg * mu_r + 2.0 * rho * np.asarray(degrees, dtype=float)


def objective_perturbation(alpha: float, counts: np.ndarray, mu: np.ndarray, c_hess: float):
    """Chaudhuri et al. (2011) Alg. 2 constants with ``n -> B_p``, modulus ``mu_p`` and ``C = 1`` (spec §6.4).

    Returns:
        ``(eps_prime, phi)``, each (K,): the rate budget of ``b`` and the extra ridge ``Phi_p``.
    """
    counts = np.asarray(counts, dtype=float)
    eps_prime = alpha - 2.0 * np.log1p(c_hess / (counts * mu))
    phi = np.zeros_like(mu)
    bad = eps_prime <= 0
    if np.any(bad):
        phi = np.where(bad, np.maximum(c_hess / (counts * math.expm1(alpha / 4.0)) - mu, 0.0), 0.0)
        eps_prime = np.where(bad, alpha / 2.0, eps_prime)
    return eps_prime, phi


def draw_noise(rng, noise: str, level: np.ndarray, dim: int) -> np.ndarray:
    """One noise vector per agent of the block, shape (K, dim).

    Args:
        rng: The step's :class:`~privdist.runtime.rng.AgentStreams`.
        noise: ``"gaussian"`` (``level`` = std per agent) or ``"gamma"`` (``level`` = rate ``zeta`` per agent).
        level: (K,) noise level per agent.
        dim: Vector dimension.
    """
    if noise == "gaussian":
        return rng.normal((dim,), scale=np.asarray(level, dtype=float))
    return rng.draw(lambda g, i: gamma_norm(g, float(level[i]), dim))


@dataclass(frozen=True)
class PerturbedADMMState:
    """State of a block of agents.

    Attributes:
        x: (K, P) last released values (PVP: ``V_p``; DVP, R-ADMM: ``f_p``).
        f: (K, P) last private primal solution (warm start of the exact solve).
        gamma: (K, P) duals, ``gamma = 2 lambda`` of spec §6.2.
        g_hat: (K, P) R-ADMM's recycled gradient (zeros for PVP/DVP).
        degrees, counts, mu: (K,) degree ``d_p``, effective sample count ``B_p = 1/w_p`` (``w_p`` the problem's
            per-sample loss weight: ``B_p`` = samples under the mean loss, 1 under the sum loss), modulus ``mu_p``.
        eps_prime, phi: (K,) DVP/R-ADMM objective-perturbation rate budget and extra ridge.
        problem: the block's local data.
        oracle: its :class:`~privdist.algorithms._sparse_oracle.SparseERMOracle` (fast exact solves).
    """

    x: np.ndarray
    f: np.ndarray
    gamma: np.ndarray
    g_hat: np.ndarray
    degrees: np.ndarray
    counts: np.ndarray
    mu: np.ndarray
    eps_prime: np.ndarray
    phi: np.ndarray
    problem: object
    oracle: object


@dataclass(frozen=True)
class PerturbedADMM(AlgorithmBase):
    """Common fields and plumbing of PVP, DVP and R-ADMM (see their modules for the updates).

    Args:
        rho: ADMM penalty (``eta`` of spec §6.2-§6.5, ``rho`` of :class:`ConsensusADMM`), > 0.
        epsilon: privacy budget (> 0); ``None`` runs the unperturbed skeleton.
        delta: per-release delta of the Gaussian variant, in (0, 1).
        noise: ``"gamma"`` native pure-epsilon Gamma-norm noise, or ``"gaussian"`` comparison variant.
        gaussian_constant: ``C`` of ``sqrt(C log(1.25/delta))``: 2.1 (S1(20), composed by S1(25)) or 2.0.
        budget: ``"iteration"`` (``epsilon`` per release, AMB-X2) or ``"total"`` (over ``iterations``, AMB-X3).
        iterations: ADMM iterations of the run (used by ``budget="total"``).
        c1: per-sample loss-gradient bound ``G_l``.
        c_hess: bound ``c_H`` on ``l''`` (``None``: the loss's ``curvature_bound``).
        tol: accuracy of the exact local solve.
        clip: replace the loss by its gradient-clipped version (norm ``c1`` per sample, the Huber loss for the
            squared loss) inside the mechanism, so the declared sensitivity holds (a guarantee); ``False`` is the
            paper-faithful variant whose bound is assumed (its releases are the paper's claim only).
    """

    rho: float = 1.0
    epsilon: float | None = 0.15
    delta: float = 1e-3
    noise: str = "gamma"
    gaussian_constant: float = 2.1
    budget: str = "iteration"
    iterations: int = 200
    c1: float = 1.0
    c_hess: float | None = None
    tol: float = 1e-10
    clip: bool = True
    name: ClassVar[str] = ""
    releases_per_iteration: ClassVar[float] = 1.0

    def __post_init__(self):
        check_common(self)

    @property
    def n_releases(self) -> int:
        """Privacy-costing releases over ``iterations`` (R-ADMM: odd iterations only)."""
        return int(math.ceil(self.iterations * self.releases_per_iteration))

    @property
    def eps_iter(self) -> float | None:
        """Per-release epsilon (None when non-private)."""
        if self.epsilon is None:
            return None
        return iteration_budget(self.epsilon, self.delta, self.noise, self.gaussian_constant, self.budget,
                                self.n_releases)

    def messages(self, problem, network):
        return (MessageSpec("x", (problem.n_features,), Aggregation.NEIGHBOR_SUM),)

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        zeros = np.zeros((block.size, problem.n_features))
        deg = degrees_of(block)
        if np.any(deg <= 0):
            raise ValidationError("PVP/DVP/R-ADMM need every agent to have at least one neighbour")
        if self.clip:
            local = local.with_clipped_gradients(self.c1)
            if self.eps_iter is not None and self._objective_perturbation and self.noise == "gamma":
                check_unit_rows(local, self.name)
        counts = 1.0 / np.asarray(local.sample_weight, dtype=float)  # B_p: every 1/B_p below is the loss weight
        mu = strong_convexity(local, self.rho, deg)
        eps_prime, phi = np.full(block.size, np.inf), np.zeros(block.size)
        if self.eps_iter is not None and self.noise == "gamma":
            c_hess = local.loss.curvature_bound if self.c_hess is None else self.c_hess
            eps_prime, phi = objective_perturbation(self.eps_iter, counts, mu, c_hess)
        state = PerturbedADMMState(zeros, zeros.copy(), zeros.copy(), zeros.copy(), deg, counts, mu,
                                   eps_prime, phi, local, oracle_of(local))
        return state, {"x": zeros.copy()}

    def _dual(self, state, nbr):
        return state.gamma + self.rho * (state.degrees[:, None] * state.x - nbr)

    def _perturbed_solve(self, state, gamma, nbr, rng):
        """DVP's objective-perturbed exact step (spec §6.4); returns ``(f, b / B_p, Phi_p)``."""
        d = state.degrees[:, None]
        v = self.rho * (d * state.x + nbr) - gamma
        lin, phi = np.zeros_like(v), np.zeros_like(state.phi)
        if self.eps_iter is not None:
            if self.noise == "gaussian":
                level = np.full(len(d), 2.0 * self.c1 * math.sqrt(self.gaussian_constant *
                                                                   math.log(1.25 / self.delta)) / self.eps_iter)
            else:
                level, phi = state.eps_prime / (2.0 * self.c1), state.phi
            lin = draw_noise(rng, self.noise, level, v.shape[1]) / state.counts[:, None]
        f = state.oracle.prox_solve(self.rho * state.degrees + phi / 2.0, v - lin, init=state.f, tol=self.tol)
        return f, lin, phi

    #: whether the privatised step is objective perturbation (DVP, R-ADMM) rather than output perturbation (PVP)
    _objective_perturbation: ClassVar[bool] = True

    def unenforced(self) -> str | None:
        """Why the releases are only the paper's claim, else None (a guarantee)."""
        if not self.clip:
            return (f"{self.name}: per-sample gradient norm <= c1={self.c1} is assumed, not enforced (clip=false); "
                    "the squared loss or rows of norm > 1 violate it, so the sensitivity and epsilon are not "
                    "guaranteed (AMB-B6)")
        if self._objective_perturbation and self.noise == "gaussian":
            return (f"{self.name}: the Gaussian objective-perturbation variant is a heuristic without formal "
                    "guarantee (spec §6.4 [RES]); the epsilon shown is the classical Gaussian bound it borrows")
        return None

    def dp_events(self, state, t):
        if not self._releases_at(t):
            return [None] * state.x.shape[0]
        if self.eps_iter is None:
            return [in_the_clear(self.name)] * state.x.shape[0]
        rel = noise_release(self.eps_iter, self.delta, self.noise, self.gaussian_constant, self.unenforced())
        return [rel] * state.x.shape[0]

    def _releases_at(self, t: int) -> bool:
        return True

    def estimate(self, state):
        return state.x

    def assumptions(self):
        if self.epsilon is None:
            return []
        out = noise_assumptions(self.name, self.noise, self.c1, self.clip)
        if self.clip and self._objective_perturbation and self.noise == "gamma":
            out.append(f"{self.name}: objective perturbation needs rows of norm <= 1 (checked at init, "
                       "DataBoundError) and l'' <= c_H (the clipped loss keeps the base loss's bound; Chaudhuri et "
                       "al. 2011 §3.4 treat the Huber loss the same way)")
        reason = self.unenforced()
        if reason is not None:
            out.append(f"{reason} (releases are the paper's claim only)")
        return out
