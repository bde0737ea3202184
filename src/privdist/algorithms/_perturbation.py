"""Shared machinery of the perturbed consensus-ADMM baselines PVP, DVP and R-ADMM (spec §6.2-§6.5).

All three run the Forero/Zhang-Zhu skeleton of spec §6.2 in the ``gamma = 2 lambda`` convention used by
:mod:`privdist.algorithms.consensus_admm`: with ``x`` the released values, agent ``p`` of degree ``d_p`` does

    gamma_p <- gamma_p + rho (d_p x_p - sum_{j in N_p} x_j)                       (dual, released values only)
    f_p     = argmin_f O_p(f) + (Phi_p/2 + rho d_p) ||f||^2 - f^T (rho (d_p x_p + sum_j x_j) - gamma_p - a_p)

where ``O_p = f_k`` of :class:`~privdist.problems.HorizontalERM` (loss weight ``C = 1``, ``rho_reg/P_n R =
reg_weight/K R``) and ``a_p`` is DVP's linear perturbation. This module holds the pieces they share: the budget
and the one mechanism object built from it (issue 23), the strong-convexity modulus ``mu_p`` (spec §6.3), the
objective-perturbation step (spec §6.4) and the parameter checks.

Budgets (``budget=``; ``epsilon=None`` runs the unperturbed skeleton through the Identity mechanism):

* ``"round"``: ``epsilon`` of each release (the papers' parameterisation, AMB-X2);
* ``"total"``: each agent's ``(epsilon, delta)`` over the run's releases, PLD-calibrated
  (:mod:`privdist.privacy.budget`): the printed PLD guarantee equals the request;
* ``"total_paper"``: the paper formula's total, inverted for the per-release epsilon (AMB-X3, spec §4.10): basic
  composition ``epsilon / n_rel`` for the pure Gamma-norm noise, S1(25) (C = 2.1) or the moments bound (C = 2) for
  the Gaussian variant (:func:`privdist.privacy.paper_budget.paper_round_epsilon`).

The horizon of a total is ``iterations`` (``None``: the run's rounds, filled in by ``run``); ``n_rel`` is
:meth:`release_count` of it (R-ADMM releases on odd iterations only). Mechanisms: Gaussian output perturbation
(PVP) or objective perturbation (DVP, R-ADMM; Gaussian heuristic, a claim) through
:class:`~privdist.privacy.mechanisms.GaussianMechanism`, Gamma-norm output perturbation (PVP) through
:class:`~privdist.privacy.mechanisms.GammaNormMechanism`, Gamma-norm objective perturbation (Chaudhuri et al. Alg. 2)
through :class:`~privdist.privacy.objective_perturbation.ObjectivePerturbationMechanism`.

References:
    Spec §6.2-§6.5, §4.10, §8.5 (AMB-B1, B2, B6, X2, X3); Chaudhuri, Monteleoni & Sarwate (JMLR 2011) Alg. 1-2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._checks import check_positive, check_probability
from ..errors import DataBoundError, ValidationError
from ..contract import Aggregation, MessageSpec
from ._sparse_oracle import SparseERMOracle
from .base import AlgorithmBase, Budgeted, check_problem_network, degrees_of

__all__ = ["PerturbedADMM", "PerturbedADMMState", "check_common", "strong_convexity", "oracle_of",
           "noise_assumptions", "NOISES", "BUDGETS", "check_unit_rows"]

NOISES: tuple[str, ...] = ("gamma", "gaussian")
BUDGETS: tuple[str, ...] = ("round", "total", "total_paper")


def oracle_of(problem) -> SparseERMOracle:
    """The problem's own sparse oracle when it has one (``SparseHorizontalERM``), else a new one."""
    oracle = getattr(problem, "oracle", None)
    return oracle if isinstance(oracle, SparseERMOracle) else SparseERMOracle(problem)


def check_common(alg) -> None:
    """Validate the parameters PVP, DVP and R-ADMM share (see :class:`PerturbedADMM`); ``epsilon`` is validated by
    the mechanism built from it (at construction, unless a total budget waits for the run's rounds).

    Raises:
        ValidationError: a value outside its domain (named in the message); UnknownNameError: an unknown budget.
    """
    check_positive(alg.rho, "rho")
    check_positive(alg.tol, "tol")
    check_positive(alg.c1, "c1")
    check_probability(alg.delta, "delta")
    if alg.c_hess is not None:
        check_positive(alg.c_hess, "c_hess")
    if alg.noise not in NOISES:
        raise ValidationError(f"noise must be one of {NOISES}, got {alg.noise!r}")
    if alg.gaussian_constant not in (2.0, 2.1):
        raise ValidationError(f"gaussian_constant must be 2 or 2.1, got {alg.gaussian_constant}")
    if not isinstance(alg.clip, bool):
        raise TypeError(f"clip must be a bool, got {type(alg.clip).__name__}")
    alg._check_budget()
    alg._build_when_known()


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


#: How each budget sets the per-release noise, as told in the results.
_BUDGET_NOTES = {"round": "epsilon per release (AMB-X2)",
                 "total": "each agent's total over the run, PLD-calibrated (printed PLD guarantee = request)",
                 "total_paper": "the paper formula's total, inverted per release (AMB-X3, spec §4.10)"}


def noise_assumptions(name: str, noise: str, c1: float, clip: bool = False, budget: str = "round") -> list[str]:
    """Caveats carried to results (spec §1.3: never hidden)."""
    out = [f"{name}: reconstruction of the original method (spec [RECON], AMB-B1); constant per-release budget: "
           f"{_BUDGET_NOTES.get(budget, budget)}"]
    if noise == "gamma":
        out.append(f"{name}: Gamma-norm noise is pure eps-DP per iteration (basic composition); the rdp/pld "
                   "accountants compose it as generic pure eps-DP through its dominating pair, binary randomized "
                   "response (Kairouz, Oh & Viswanath 2015, optimal composition; dp-accounting has no Gamma-norm "
                   "event)")
    else:
        bound = "PLD-calibrated Gaussian mechanism" if budget == "total" else "classical Gaussian-mechanism bound"
        out.append(f"{name}: Gaussian variant (spec §6.3/§6.4, AMB-X2); {bound}")
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
class PerturbedADMM(Budgeted, AlgorithmBase):
    """Common fields and plumbing of PVP, DVP and R-ADMM (see their modules for the updates).

    Args:
        rho: ADMM penalty (``eta`` of spec §6.2-§6.5, ``rho`` of :class:`ConsensusADMM`), > 0.
        epsilon: privacy budget (> 0; a tuple gives one per agent); ``None`` runs the unperturbed skeleton.
        delta: delta of the Gaussian variant (per release, or total with ``budget="total"``), and the PLD target
            of a total budget of the pure Gamma-norm noise; in (0, 1).
        noise: ``"gamma"`` native pure-epsilon Gamma-norm noise, or ``"gaussian"`` comparison variant.
        gaussian_constant: ``C`` of ``sqrt(C log(1.25/delta))``: 2.1 (S1(20), composed by S1(25)) or 2.0.
        budget: ``"round"`` (``epsilon`` per release, AMB-X2), ``"total"`` (each agent's run, PLD-calibrated) or
            ``"total_paper"`` (the paper formula's total, AMB-X3); see the module docstring.
        iterations: ADMM iterations a total budget covers (``None``: the run's rounds, filled in by ``run``).
        c1: per-sample loss-gradient bound ``G_l``.
        c_hess: bound ``c_H`` on ``l''`` (``None``: the loss's ``curvature_bound``).
        tol: accuracy of the exact local solve.
        clip: replace the loss by its gradient-clipped version (norm ``c1`` per sample, the Huber loss for the
            squared loss) inside the mechanism, so the declared sensitivity holds (a guarantee); ``False`` is the
            paper-faithful variant whose bound is assumed (its releases are the paper's claim only).
    """

    rho: float = 1.0
    epsilon: float | None = 0.15  # a tuple (one per agent) is accepted too, like DPSGD
    delta: float = 1e-3
    noise: str = "gamma"
    gaussian_constant: float = 2.1
    budget: str = "round"
    iterations: int | None = None
    c1: float = 1.0
    c_hess: float | None = None
    tol: float = 1e-10
    clip: bool = True
    name: ClassVar[str] = ""
    horizon_field: ClassVar[str] = "iterations"
    budgets: ClassVar[tuple[str, ...]] = BUDGETS
    total_budgets: ClassVar[tuple[str, ...]] = ("total", "total_paper")
    #: whether the privatised step is objective perturbation (DVP, R-ADMM) rather than output perturbation (PVP)
    _objective_perturbation: ClassVar[bool] = True

    def __post_init__(self):
        check_common(self)

    def _build_mechanism(self):
        """The one mechanism of the run, from the budget (module docstring); Identity when ``epsilon`` is None."""
        from ..privacy import gamma_norm_mechanism, gaussian_mechanism
        from ..privacy.objective_perturbation import objective_perturbation_mechanism
        from ..privacy.paper_budget import paper_round_epsilon

        epsilon, budget = self.epsilon, self.budget
        releases = None if self.iterations is None else self.release_count(self.iterations)
        if budget == "total_paper":  # AMB-X3: the per-release epsilon of the paper formula's total
            if epsilon is not None:
                formula = "basic" if self.noise == "gamma" else ("dzoa" if self.gaussian_constant == 2.1 else "moments")
                epsilon = paper_round_epsilon(epsilon, self.delta, releases, formula)
            budget = "round"
        kw = dict(budget=budget, releases=releases, reason=self.unenforced(),
                  clear=f"{self.name}: iterates sent without noise (not private)")
        if self.noise == "gaussian":
            return gaussian_mechanism(epsilon, self.delta, constant=self.gaussian_constant, **kw)
        if self._objective_perturbation:
            return objective_perturbation_mechanism(epsilon, delta=self.delta, **kw)
        return gamma_norm_mechanism(epsilon, delta=self.delta, **kw)

    def _objective_constants(self) -> bool:
        """Whether the mechanism is Chaudhuri et al.'s Alg. 2 (eps'_p, Phi_p per agent), not a plain draw."""
        from ..privacy.objective_perturbation import ObjectivePerturbationMechanism

        return isinstance(self.mechanism, ObjectivePerturbationMechanism)

    def messages(self, problem, network):
        return (MessageSpec("x", (problem.n_features,), Aggregation.NEIGHBOR_SUM),)

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        zeros = np.zeros((block.size, problem.n_features))
        deg = degrees_of(block)
        if np.any(deg <= 0):
            raise ValidationError("PVP/DVP/R-ADMM need every agent to have at least one neighbour")
        objective = self._objective_constants()
        if self.clip:
            local = local.with_clipped_gradients(self.c1)
            if objective:
                check_unit_rows(local, self.name)
        counts = 1.0 / np.asarray(local.sample_weight, dtype=float)  # B_p: every 1/B_p below is the loss weight
        mu = strong_convexity(local, self.rho, deg)
        eps_prime, phi = np.full(block.size, np.inf), np.zeros(block.size)
        if objective:  # Chaudhuri et al. Alg. 2 constants from the mechanism's own epsilon (spec §6.4)
            c_hess = local.loss.curvature_bound if self.c_hess is None else self.c_hess
            eps_prime, phi = self.mechanism.constants(block.agents, counts, mu, c_hess)
        state = PerturbedADMMState(zeros, zeros.copy(), zeros.copy(), zeros.copy(), deg, counts, mu,
                                   eps_prime, phi, local, oracle_of(local))
        return state, {"x": zeros.copy()}

    def _dual(self, state, nbr):
        return state.gamma + self.rho * (state.degrees[:, None] * state.x - nbr)

    def _perturbed_solve(self, state, gamma, nbr, rng):
        """DVP's objective-perturbed exact step (spec §6.4); returns ``(f, b / B_p, Phi_p)``.

        ``b`` is drawn by the mechanism with sensitivity ``2 c1`` (the replace-one bound on the summed per-sample
        gradients): at rate ``eps'_p / (2 c1)`` (Gamma-norm, Alg. 2), with std ``2 c1 z`` (the Gaussian heuristic),
        or zero (Identity)."""
        d = state.degrees[:, None]
        v = self.rho * (d * state.x + nbr) - gamma
        zeros = np.zeros_like(v)
        if self._objective_constants():
            b = self.mechanism.privatize(zeros, 2.0 * self.c1, rng, eps_prime=state.eps_prime)
        else:
            b = self.mechanism.privatize(zeros, 2.0 * self.c1, rng)
        lin = b / state.counts[:, None]
        f = state.oracle.prox_solve(self.rho * state.degrees + state.phi / 2.0, v - lin, init=state.f, tol=self.tol)
        return f, lin, state.phi

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
        return self.mechanism.releases(state.problem.agent_ids)

    def _releases_at(self, t: int) -> bool:
        return True

    def estimate(self, state):
        return state.x

    def assumptions(self):
        if not self.mechanism.private:
            return []
        out = noise_assumptions(self.name, self.noise, self.c1, self.clip, self.budget)
        if self.clip and self._objective_constants():
            out.append(f"{self.name}: objective perturbation needs rows of norm <= 1 (checked at init, "
                       "DataBoundError) and l'' <= c_H (the clipped loss keeps the base loss's bound; Chaudhuri et "
                       "al. 2011 §3.4 treat the Huber loss the same way)")
        reason = self.unenforced()
        if reason is not None:
            out.append(f"{reason} (releases are the paper's claim only)")
        return out
