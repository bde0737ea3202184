"""l-AADMM: DP decentralized ADMM with ``l`` linearised noisy primal steps per iteration (S3 Alg. 1, spec §4).

Agent ``i`` (degree ``d_i = |N_i|``, ``|D_i|`` samples) in ADMM iteration ``k = 1..t`` (S3(8)-(11), spec §4.4):

1. warm start ``w^{k,0} = w^{k-1,l}`` (the last noisy inner iterate, not the broadcast average);
2. for ``r = 1..l``, with ``eta = eta_i^{k,r}`` and ``g = grad L_{D_i}(w^{k,r-1})``:
   ``w^{k,r} = (-g - gamma_i + rho (d_i wb_i + sum_{j in N_i} wb_j) + eta w^{k,r-1}) / (2 rho d_i + eta)
   + N(0, (s_i^{k,r} sigma)^2 I)``, ``s_i^{k,r} = 2 c1 / ((2 rho d_i + eta) |D_i|)`` (S3(12); variance
   ``s^2 sigma^2``, AMB-H8). ``gamma = 2 lambda = -2 gamma_S3`` (spec §4.4 sign convention; S3(14) with the
   ``2 gamma`` of AMB-H3), ``wb`` the broadcast values of iteration ``k - 1``;
3. broadcast ``wb_i^k = (1/l) sum_{r=1..l} w^{k,r}``;
4. dual ``gamma_i += rho (d_i wb_i^k - sum_j wb_j^k)`` (S3(11)), formed when the neighbours' values arrive.

Budget -> noise multiplier ``sigma`` of each noisy step (one mechanism object, ``self.mechanism``, issue 23):
``budget="total_paper"`` (default, the paper's): S3(16), ``sigma = c0 sqrt(t l 2 log(1.25/delta)) / epsilon`` for
the total target ``(epsilon, delta)``, ``c0 = sqrt(log(1/delta)/log(1.25/delta))`` (AMB-H1,
:func:`privdist.privacy.paper_budget.paper_sigma`); ``budget="total"``: the smallest sigma for which the PLD
accountant certifies the same target over the ``t l`` steps (formerly ``calibration="pld"``); ``budget="round"``:
``(epsilon, delta)`` of each noisy step (the per-release parameter of S3 Thm 2, spec §1.3-2), ``sigma =
sqrt(2 log(1.25/delta)) / epsilon``. ``t`` is ``iterations`` (``None``: the run's rounds, filled in by ``run``).
``epsilon=None`` is the Identity mechanism (sigma = 0, iterates in the clear). Prox schedule
(S3(20), AMB-H9, AMB-H10): ``eta_i^{k,r} = sqrt(2 k r)/D sqrt(c2^2/n^2 + d (2 c1/|D_i|)^2 sigma^2)`` (equal to
S3(20) for the paper's sigma), ``c2 = n + lambda D/n`` with S3's ``lambda`` (``phi = ||w||^2/2``), or
``sqrt(2 tau)``, ``tau = (k-1) l + r`` with ``eta_counter="global"``; ``eta`` overrides it with a constant.
Output (S3(19)): the running average ``w_hat_i = (1/(k l)) sum_{k'<=k} sum_{r=0..l-1} w^{k',r}`` is kept
beside the broadcasts; ``output`` selects which one :meth:`LAADMM.estimate` scores (AMB-H11).

Clipping (issue 12): with ``clip=True`` (default) every per-sample loss gradient is clipped to norm ``c1``
inside the mechanism (the loss ``l`` is replaced by its clipped version, :meth:`HorizontalERM.with_clipped_gradients`),
so the sensitivity ``s_i^{k,r}`` of S3(12) holds a priori for any data; on unit-norm rows with the logistic loss
and ``c1 >= 1`` this changes nothing. ``clip=False`` is the paper's unclipped method: its releases are the paper's
claim (guaranteed epsilon inf), since the bound ``||grad l|| <= c1`` is then assumed, not enforced.

Accounting: every noisy step is one call of the mechanism (sensitivity ``s_i^{k,r}``, noise std ``s sigma``); each
round declares the mechanism's release for ``l`` uses (``mechanism.releases(agents, uses=l)``): one Gaussian per
agent with noise multiplier ``sigma / sqrt(l)``, the exact composition of the round's ``l`` steps, and per-release
epsilon ``sqrt(2 log(1.25/delta)) / (sigma / sqrt(l)) = sqrt(l) eps_step`` so that the moments formula (spec
§1.3-2) over ``t`` rounds equals its value over the ``t l`` steps.

References:
    S3 (Huang) Alg. 1, (8)-(20); spec §4, §8.3 (AMB-H1..H11), §10.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from .._checks import check_int, check_positive, check_probability
from ..errors import ValidationError
from ..privacy.paper import c0 as paper_c0
from ..privacy.paper_budget import paper_sigma
from ..contract import Aggregation, MessageSpec
from ._perturbation import oracle_of
from .base import AlgorithmBase, Budgeted, check_problem_network, degrees_of

__all__ = ["LAADMM", "LAADMMState", "paper_sigma"]

#: How each budget calibrates sigma, as told in the results.
_CALIBRATION = {"total_paper": "S3(16) calibration of the total", "total": "PLD calibration of the total",
                "round": "epsilon per noisy step"}



def _show(z) -> str:
    return ", ".join(f"{v:.6g}" for v in z) if isinstance(z, tuple) else f"{z:.6g}"


@dataclass(frozen=True)
class LAADMMState:
    """``w`` (K, P) last noisy inner iterate, ``wb`` last broadcast, ``gamma`` duals (``2 lambda``),
    ``w_sum`` running sum of ``w^{k,r}``, r = 0..l-1, ``k`` iterations done; per-agent constants (``counts`` is the
    effective ``|D_i| = 1/w_i``, ``w_i`` the problem's per-sample loss weight: samples (mean loss) or 1 (sum loss))."""

    w: np.ndarray
    wb: np.ndarray
    gamma: np.ndarray
    w_sum: np.ndarray
    k: int
    degrees: np.ndarray
    counts: np.ndarray
    problem: object
    oracle: object


@dataclass(frozen=True)
class LAADMM(Budgeted, AlgorithmBase):
    """Factory: ``LAADMM(rho=1e-3, epsilon=1.0, delta=1e-5, l=10, iterations=100, D=1.0)``.

    Args:
        rho: ADMM penalty (> 0); 1e-3 in S3 §5.
        epsilon: the budget (total for ``"total_paper"``/``"total"``, per noisy step for ``"round"``); ``None``:
            no noise (sigma = 0).
        delta: the budget's delta, in (0, 1).
        l: linearised steps per ADMM iteration (>= 1).
        iterations: ``t``, the ADMM iterations a total budget is calibrated for (>= 1; AMB-H5: 100; ``None``:
            the run's rounds, filled in by ``run``).
        c1: per-sample loss-gradient bound (1 for logistic loss on unit-norm rows).
        D: diameter of the model domain in S3(20) (AMB-H4: ``2 max_i ||w*||`` from a non-private solve).
        c0: composition constant of S3(16),(20); ``None`` = ``sqrt(log(1/delta)/log(1.25/delta))`` (AMB-H1).
        eta_counter: ``"product"`` (``sqrt(2 k r)``, literal S3(20)) or ``"global"`` (``sqrt(2((k-1)l + r))``).
        eta: constant prox weight overriding S3(20) (> 0), e.g. for the convergence check of spec §10.
        output: ``"broadcast"`` (score ``wb_i^k``) or ``"average"`` (score ``w_hat_i`` of S3(19)).
        budget: ``"total_paper"`` (S3(16), default), ``"total"`` (PLD: the smallest sigma PLD certifies) or
            ``"round"`` (``(epsilon, delta)`` per noisy step); see the module docstring.
        clip: clip per-sample gradients to ``c1`` (a guarantee) or assume the bound (the paper's claim only).
    """

    rho: float = 1e-3
    epsilon: float | None = 1.0
    delta: float = 1e-5
    l: int = 10  # noqa: E741 - the paper's name
    iterations: int | None = None
    c1: float = 1.0
    D: float = 1.0
    c0: float | None = None
    eta_counter: str = "product"
    eta: float | None = None
    output: str = "broadcast"
    budget: str = "total_paper"
    clip: bool = True
    name: ClassVar[str] = "laadmm"
    horizon_field: ClassVar[str] = "iterations"
    budgets: ClassVar[tuple[str, ...]] = ("round", "total", "total_paper")
    total_budgets: ClassVar[tuple[str, ...]] = ("total", "total_paper")

    def __post_init__(self):
        check_positive(self.rho, "rho")
        check_int(self.l, "l")
        check_positive(self.c1, "c1")
        check_positive(self.D, "D")
        check_probability(self.delta, "delta")
        if not isinstance(self.clip, bool):
            raise TypeError(f"clip must be a bool, got {type(self.clip).__name__}")
        for key in ("c0", "eta"):
            if getattr(self, key) is not None:
                check_positive(getattr(self, key), key)
        for key, allowed in (("eta_counter", ("product", "global")), ("output", ("broadcast", "average"))):
            if getattr(self, key) not in allowed:
                raise ValidationError(f"{key} must be one of {allowed}, got {getattr(self, key)!r}")
        self._check_budget()
        self._build_when_known()

    def _build_mechanism(self):
        """S3(16) (``"total_paper"``), PLD (``"total"``) or per step (``"round"``): a Gaussian mechanism per noisy
        step (Identity when ``epsilon`` is None)."""
        from ..privacy import gaussian_mechanism
        from ..privacy.paper_budget import s3_gaussian_mechanism

        clear = "laadmm: iterates sent without noise (not private)"
        if self.budget == "total_paper":
            return s3_gaussian_mechanism(self.epsilon, self.delta, self.iterations, self.l, self.c0,
                                         reason=self.unenforced(), clear=clear)
        steps = None if self.iterations is None else self.iterations * self.l
        return gaussian_mechanism(self.epsilon, self.delta, budget=self.budget, releases=steps, constant=2.0,
                                  reason=self.unenforced(), clear=clear)

    def noise_multiplier(self, agents=None):
        """``sigma`` of S3(12)/(20): the mechanism's noise multiplier per noisy step (0 without noise); with a
        per-agent budget, one per agent of ``agents`` (global ids), shape (K,)."""
        if not self.mechanism.private:
            return 0.0
        z = self.mechanism.noise_multiplier
        if isinstance(z, tuple):
            if agents is None:
                raise ValidationError("laadmm: a per-agent budget has one sigma per agent; pass the agents")
            return np.asarray(z, dtype=float)[np.asarray(agents, dtype=np.int64)]
        return z

    @property
    def c0_value(self) -> float:
        """The composition constant in use."""
        return paper_c0(self.delta) if self.c0 is None else self.c0

    def prox_weights(self, k: int, counts: np.ndarray, n_agents: int, dim: int, reg_lambda: float,
                     agents=None) -> np.ndarray:
        """``eta_i^{k,r}`` for ``r = 1..l`` and every agent, shape (K, l) (S3(20), spec §4.8).

        Args:
            k: ADMM iteration (>= 1).
            counts: (K,) local sample counts ``|D_i|``.
            n_agents: ``n`` of S3 (all agents of the network).
            dim: model dimension ``d``.
            reg_lambda: S3's ``lambda`` (regulariser ``lambda/n * ||w||^2 / 2`` per agent).
            agents: (K,) global ids of the agents (needed only with a per-agent budget: sigma per agent).
        """
        counts = np.asarray(counts, dtype=float)
        r = np.arange(1, self.l + 1, dtype=float)
        if self.eta is not None:
            return np.full((counts.size, self.l), float(self.eta))
        counter = 2.0 * k * r if self.eta_counter == "product" else 2.0 * ((k - 1) * self.l + r)
        c2 = n_agents + reg_lambda * self.D / n_agents
        sigma = self.noise_multiplier(agents)
        scale = np.sqrt(c2**2 / n_agents**2 + dim * (2.0 * self.c1 / counts) ** 2 * sigma**2) / self.D
        return np.sqrt(counter)[None, :] * scale[:, None]

    def messages(self, problem, network):
        return (MessageSpec("wb", (problem.n_features,), Aggregation.NEIGHBOR_SUM),)

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        if self.clip:
            local = local.with_clipped_gradients(self.c1)
        zeros = np.zeros((block.size, problem.n_features))
        state = LAADMMState(zeros, zeros.copy(), zeros.copy(), zeros.copy(), 0, degrees_of(block),
                            1.0 / np.asarray(local.sample_weight, dtype=float), local, oracle_of(local))
        return state, {"wb": zeros.copy()}

    def _reg_lambda(self, problem) -> float:
        """S3's ``lambda`` from ``reg_weight`` (``reg_weight/K R = lambda/n ||w||^2/2`` for ``R = ||w||^2``)."""
        return problem.reg_weight * float(getattr(problem.regularizer, "hessian_scale", 0.0))

    def step(self, state, inbox, t, rng):
        prob, d, nbr = state.problem, state.degrees[:, None], inbox["wb"]
        gamma = state.gamma + self.rho * (d * state.wb - nbr)
        k = state.k + 1
        etas = self.prox_weights(k, state.counts, prob.n_agents_total, prob.n_features, self._reg_lambda(prob),
                                 prob.agent_ids)
        anchor = self.rho * (d * state.wb + nbr) - gamma
        w, w_sum, acc = state.w, state.w_sum.copy(), np.zeros_like(state.w)
        for r in range(self.l):
            w_sum += w  # S3(19) averages w^{k,0..l-1}
            eta = etas[:, r][:, None]
            denom = 2.0 * self.rho * d + eta
            w = (anchor - state.oracle.grads(w) + eta * w) / denom
            w = self.mechanism.privatize(w, 2.0 * self.c1 / (denom * state.counts[:, None]), rng)  # S3(12)
            acc += w
        wb = acc / self.l
        return replace(state, w=w, wb=wb, gamma=gamma, w_sum=w_sum, k=k), {"wb": wb}

    def dp_events(self, state, t):
        return self.mechanism.releases(state.problem.agent_ids, uses=self.l)

    def unenforced(self) -> str | None:
        """Why the releases are only the paper's claim (``clip=False``), else None."""
        if self.clip:
            return None
        return (f"laadmm: per-sample gradient norm <= c1={self.c1} is assumed, not enforced (clip=false); rows "
                "of norm > 1 or the squared loss violate it, so the sensitivity S3(12) and the epsilon are not "
                "guaranteed")

    def estimate(self, state):
        if self.output == "average" and state.k > 0:
            return state.w_sum / (state.k * self.l)
        return state.wb

    def assumptions(self):
        if not self.mechanism.private:
            return []
        if self.clip:
            first = (f"laadmm: per-sample loss gradients clipped to norm c1={self.c1} inside the mechanism (l' clipped "
                     "to +-c1/||x||; a no-op for the logistic loss on unit-norm rows with c1 >= 1), so the "
                     "sensitivity S3(12) holds a priori")
        else:
            first = (f"laadmm: per-sample loss-gradient norm <= c1={self.c1} assumed, not enforced (clip=false; true "
                     "for the logistic loss with unit-norm rows, violated by the squared loss, AMB-D8): a claim")
        out = [first,
               f"laadmm: noise calibrated for t={self.iterations} iterations x l={self.l} steps "
               f"({_CALIBRATION[self.budget]}, sigma={_show(self.mechanism.noise_multiplier)}); each round's release "
               "is the exact Gaussian composition of its l steps",
               "laadmm: the moments-accountant formula of S3 (spec §1.3-2) is heuristic; rdp/pld reported beside it"]
        if self.eta is None:
            out.append(f"laadmm: prox schedule S3(20) with D={self.D} (AMB-H4) and counter '{self.eta_counter}'")
        return out
