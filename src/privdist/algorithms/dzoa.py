"""D-ZOA: consensus ADMM with a cold-started two-point zeroth-order inner loop (spec §2.4; S1 Alg. 1, S0 Alg. 1).

Outer iteration ``m`` at agent ``k`` (degree ``d_k``; ``nbr = sum_{l in N_k} beta_l^{(m-1)}``):

    gamma_k^{(m-1)} = gamma_k^{(m-2)} + rho (d_k beta_k^{(m-1)} - nbr)                        (S1(5), AMB-D2)
    F_k(b) = f_k(b) + b^T gamma_k^{(m-1)} + rho sum_l ||b - (beta_k + beta_l)/2||^2
           = f_k(b) + rho d_k ||b||^2 - v_k^T b + const,  v_k = rho (d_k beta_k^{(m-1)} + nbr) - gamma_k^{(m-1)}

then ``T`` inner steps from ``b_0 = 0`` (cold start, §2.3): ``u_{1,t} = u_1/t``, ``u_{2,t} = u_1/(P^2 t^2)``
(AMB-D4), ``J_k`` pairs ``nu_1, nu_2 ~ N(0, I_P)``,

    g^{(t)} = 1/J sum_j [F(b_{t-1} + u1 nu1_j + u2 nu2_j) - F(b_{t-1} + u1 nu1_j)] / u2 * nu2_j   (AMB-D5)
    b_t = b_{t-1} - alpha_t g^{(t)},   alpha_t = alpha_0 R / (L sqrt(t P log 2P))                (AMB-D6)

and the release ``beta_k^{(m)} = b_T`` (last iterate, AMB-D19). ``R`` public (or ``2 ||beta^c||`` with
``R="oracle"``) and ``L = L_k^{(m)}`` of §2.8 by default. All ``2 J_k`` points of a step are evaluated at once: for the squared loss (the papers' case)
the differences are formed analytically from ``X nu`` products (no cancellation in ``F(a + u2 h) - F(a)``),
other losses go through :meth:`HorizontalERM.local_values`; chunks of ``chunk`` pairs bound the memory
(:mod:`.dzoa_inner`).

Privacy (§2.7, :mod:`.dzoa_calibration`, issue 12): no noise is added, so no release is a guarantee. Each release
is declared as the 2.1-constant Gaussian event S1 Thm 1 assumes, with the realised per-agent epsilon of S1(22)
after rounding ``J_k``, as the paper's *claim* (``reason`` set: the guaranteed RDP/PLD epsilon is inf, the paper's
S1(25) value and the ``claimed`` RDP/PLD composition of the declared events stay visible). The declaration comes
from one object built at ``init`` (issue 23): a :class:`~privdist.privacy.declared.GaussianClaim` (which draws
nothing: it is not a mechanism) or, for the runs in the clear, the :class:`~privdist.privacy.Identity` mechanism. Why it is only a claim:
S1 Thm 1 uses the worst-case second-moment bound S1(17) as the variance of the release, while the released
iterate's measured spread is far smaller (14x-540x under the mean reading, issue 12; 590x-1000x under the sum
reading, issue 14, :mod:`privdist.experiments.release_spread`; ``tests/algorithms/test_algorithms_dzoa.py`` records
the ratio), and the sensitivity ``c1 / (rho d_k N_k)`` needs ``|l'| <= c1``, which the squared loss
(unbounded in ``y``) violates. ``exact_inner=True`` releases a deterministic function of the data: in the clear
(inf). D-ZOA with a real guarantee is :class:`~privdist.algorithms.dzoa_gauss.DZOAGauss`.

Loss scale (issue 14, AMB-D12 revised): ``f_k`` carries the problem's per-sample weight ``w_k``
(:attr:`~privdist.problems.HorizontalERM.sample_weight`; ``1/N_k`` mean reading, 1 sum reading, where
``sum_k f_k = ||X beta - y||^2 + eta R`` is S1(30)/(31) exactly) in the inner loop's ``F_k`` and in ``L_k^{(m)}``.
The calibration's sensitivity ``Delta_k = c1 / (rho d_k N_k)`` (S1(19)) is derived for the mean reading; under the
sum reading the same argument gives ``c1 / (rho d_k)`` (the data gradient moves by ``2 c1``, not ``2 c1 / N_k``), which
would make ``J_k`` ``N_k^2`` (400x) smaller. The paper's experiments pair the sum loss S1(30) with S1(19)'s
``N_k``, so ``calibration_count="samples"`` (default) keeps S1(19) literally (the paper's ``J_k``, 10^2-10^5: the
claim being reproduced); ``"loss_weight"`` uses ``c1 w_k / (rho d_k)``, consistent with the problem's loss scale.
Either way the release is only the paper's claim (guaranteed epsilon inf).

Public calibration (issue 12): with a privacy target, ``R`` (and ``||beta^c||^2``, default ``(R/2)^2``, the
spec §2.8 relation read backwards) are public parameters, so ``J_k`` (or ``alpha0`` in S0 mode) depends only on
``N_k``, ``d_k`` and public constants. The paper's data-dependent calibration ``R = 2||beta^c||`` with ``beta^c``
from a pooled non-private solve of all agents' data is an explicit opt-in, ``R="oracle"`` (recorded in the claim's
reason and the assumptions). The catalog's S0/S1 entries opt in, since they reproduce the paper's claim. Without
a privacy target (``epsilon=None``, in the clear anyway) ``R=None`` still means the oracle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from .._checks import check_int, check_positive
from ..errors import ValidationError
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, check_problem_network, degrees_of
from .dzoa_calibration import GAUSS_CONSTANT, Calibration, check_theorem_range
from .dzoa_inner import generic_diff, pad_samples, squared_inner_loops, zo_inner_loop
from .dzoa_moments import MOMENT_J_THRESHOLD, moment_inner_loops

__all__ = ["DZOA", "DZOAState", "ProbeSink"]


def _fast_path(prob) -> bool:
    """The papers' squared loss with an l1, l2 or no penalty: the vectorised kernels of dzoa_inner/dzoa_moments."""
    return getattr(prob.loss, "name", "") == "squared" and prob.regularizer.name in ("l1", "l2", "none")


_BATCH_MAX_J = 256  # largest J_k for which exact-sampler agents run batched (see DZOA._squared_inner)

_CAVEATS = (
    "dzoa: no noise is added; each release is declared as the Gaussian mechanism S1 Thm 1 assumes "
    "(Gaussianity and per-entry independence of the inner-loop error are assumptions, S1 Lemma 1, AMB-D20)",
    "dzoa: the variance upper bound S1(17) is used as if it were the variance (AMB-D9); the measured spread of the "
    "release is far smaller, so the declared releases are the paper's claim, not a guarantee",
    "dzoa: ||l'|| <= c1 (S1 Ass. 1) does not hold globally for the squared loss (AMB-D8)",
)

#: Why a D-ZOA release is only the paper's claim (the guaranteed epsilon is inf).
CLAIM_REASON = (
    "dzoa: no noise is added; S1 Thm 1 models each release as Gaussian with the worst-case second-moment bound "
    "S1(17) as its variance, but the released iterate's measured spread is far smaller (measured 14x-1000x), and the "
    "sensitivity c1/(rho d_k N_k) assumes |l'| <= c1, which the squared loss (unbounded in y) violates")
#: Added to :data:`CLAIM_REASON` with ``R="oracle"``.
ORACLE_REASON = ("; the calibration (R = 2||beta^c||, hence J_k or alpha0) uses beta^c from a pooled non-private solve "
                 "of all agents' data (R='oracle')")


class ProbeSink:
    """Receives probed inner-loop gradient entries (S1 Figs 2-3 Gaussianity check; in-process backends only).

    ``values[i]`` is the last probed entry for the ``i``-th inner step of ``DZOA.probe_inner``.
    """

    def __init__(self, n: int = 2):
        self.values = [float("nan")] * n

    def pop(self, i: int) -> float:
        """The value recorded for slot ``i`` since the last pop (NaN if none)."""
        v, self.values[i] = self.values[i], float("nan")
        return v


@dataclass(frozen=True)
class DZOAState:
    """Agents' D-ZOA state: released ``beta`` (K, P), duals ``gamma`` (K, P), calibration and local data, and the
    ``declaration`` whose releases are the block's (:meth:`DZOA.declaration`)."""

    beta: np.ndarray
    gamma: np.ndarray
    degrees: np.ndarray
    problem: Any
    calib: Calibration
    lip_const: np.ndarray  # (K,) data part of L_k: 2 w_k (||X||^2 R + ||X^T y||) + eta/K G_R
    agent_ids: np.ndarray
    sink: Any = field(default=None, compare=False)
    declaration: Any = None  # the block's GaussianClaim or Identity: every release is declared by it


@dataclass(frozen=True)
class DZOA(AlgorithmBase):
    """Factory: ``DZOA(epsilon=0.15, delta=1e-3, R=9.0)`` (S1 settings by default; R public or ``"oracle"``).

    Args:
        epsilon, delta: target per-iteration privacy; ``epsilon=None`` (``false`` in TOML) runs with a fixed ``J``
            and declares no releases (S1 Fig. 1, "non-private").
        mode: ``"s1"`` (``J_k`` from S1(22), ``alpha0`` fixed), ``"s0"`` (``J`` fixed, ``alpha0`` per agent from
            S0(27)) or ``"fixed"`` (``J`` and ``alpha0`` as given; the implied epsilon is declared if ``epsilon``
            is set).
        J: direction pairs for modes ``s0``/``fixed``.
        rho: ADMM penalty; T: inner iterations; u1: smoothing; alpha0: step constant; c: S1(17) constant.
        c1: loss-gradient bound of the calibration (1 for rows of norm <= 1, AMB-D8).
        R: public radius constant (> 0), or ``"oracle"``: ``2 ||beta^c||`` from a pooled non-private solve of all
            agents' data (the paper's calibration, §2.8; an explicit opt-in, recorded in the claim's reason). Needed
            with a privacy target (unless ``exact_inner``); ``None`` without one means the oracle.
        L: Lipschitz constant (default ``L_k^{(m)}``, from the agent's own data).
        step_scale: override of ``alpha_0 R / L`` (then ``L`` is not used).
        beta_c_norm_sq: public ``||beta^c||^2``; default ``(R/2)^2`` for a numeric ``R``, the pooled reference's
            for ``R="oracle"``.
        reference: the oracle's ``beta^c``: ``"distributed"`` (AMB-D12 default) or ``"literal"`` (S1(30)/(31)).
        allow_outside_theorem: run with ``epsilon > 1`` or ``delta > 0.01`` (recorded in the assumptions).
        check_rows: raise if a data row has norm > 1 while ``c1 = 1`` is assumed.
        inner_output: ``"last"`` (faithful) or ``"average"`` (AMB-D19 option).
        exact_inner: replace the inner loop by the exact minimiser of ``F_k`` (test oracle: consensus ADMM); its
            releases are deterministic and declared in the clear (epsilon = inf), never a finite epsilon.
        calibration_count: ``"samples"`` (S1(19) literally: ``Delta_k = c1 / (rho d_k N_k)`` with ``N_k`` the sample
            count, whatever the loss scale; default) or ``"loss_weight"`` (``c1 w_k / (rho d_k)``, ``w_k`` the
            problem's per-sample loss weight: the same under the mean reading, ``c1 / (rho d_k)`` under the sum).
        inner_sampler: ``"exact"`` (every pair drawn, default), ``"moments"`` (each step's ``J_k``-pair average drawn
            from its exact mean and covariance, :mod:`.dzoa_moments`; squared loss with l1/l2/no penalty) or
            ``"auto"`` (moments for agents with ``J_k >= moment_threshold``, the validated range; the probed agent
            always exact). Which agents used it is recorded in ``run_info``.
        moment_threshold: smallest ``J_k`` of ``"auto"`` (default :data:`~.dzoa_moments.MOMENT_J_THRESHOLD`).
        chunk: pairs per vectorised batch (default 4096 keeps a batch in cache; measured best on this machine).
        probe_agent, probe_inner, probe_entry: record entry ``probe_entry`` of ``g^{(t)}`` at agent
            ``probe_agent`` for ``t`` in ``probe_inner`` into the problem's ``probe_sink`` (S1 Figs 2-3).
        probe_rounds: outer iterations ``m`` in which the probe records (empty: every one). The probed agent runs the
            exact sampler in those rounds; in the others it follows ``inner_sampler`` like every agent (S1 Figs 2-3
            read the probe at two rounds only, and the exact sampler at the probed agent's ``J_k`` in every round
            was ~1,000 of the full mode's CPU seconds, issue 14).
    """

    epsilon: float | None = 0.15
    delta: float = 1e-3
    mode: str = "s1"
    J: int = 30
    rho: float = 4.0
    T: int = 100
    u1: float = 1.0
    alpha0: float = 0.54
    c: float = 0.5
    c1: float = 1.0
    R: float | str | None = None
    L: float | None = None
    step_scale: float | None = None
    beta_c_norm_sq: float | None = None
    reference: str = "distributed"
    allow_outside_theorem: bool = False
    check_rows: bool = True
    inner_output: str = "last"
    exact_inner: bool = False
    calibration_count: str = "samples"
    inner_sampler: str = "exact"
    moment_threshold: int = MOMENT_J_THRESHOLD
    chunk: int = 4096
    probe_agent: int = -1
    probe_inner: tuple = (100, 50)
    probe_entry: int = 0
    probe_rounds: tuple = ()
    name: ClassVar[str] = "dzoa"

    def __post_init__(self):
        if self.epsilon is False:  # TOML has no null: ``epsilon = false`` means no privacy target
            object.__setattr__(self, "epsilon", None)
        for nm in ("rho", "u1", "alpha0", "c", "c1"):
            check_positive(getattr(self, nm), nm)
        check_int(self.T, "T", 1)
        check_int(self.J, "J", 1)
        check_int(self.chunk, "chunk", 1)
        for nm in ("L", "step_scale", "beta_c_norm_sq"):
            if getattr(self, nm) is not None:
                check_positive(getattr(self, nm), nm)
        if isinstance(self.R, str):
            if self.R != "oracle":
                raise ValidationError(f"R must be a positive number or 'oracle', got {self.R!r}")
        elif self.R is not None:
            check_positive(self.R, "R")
        if self.mode not in ("s1", "s0", "fixed"):
            raise ValidationError(f"mode must be 's1', 's0' or 'fixed', got {self.mode!r}")
        if self.reference not in ("distributed", "literal"):
            raise ValidationError(f"reference must be 'distributed' or 'literal', got {self.reference!r}")
        if self.inner_sampler not in ("exact", "moments", "auto"):
            raise ValidationError(f"inner_sampler must be 'exact', 'moments' or 'auto', got {self.inner_sampler!r}")
        check_int(self.moment_threshold, "moment_threshold", 1)
        if self.calibration_count not in ("samples", "loss_weight"):
            raise ValidationError(f"calibration_count must be 'samples' or 'loss_weight', got {self.calibration_count!r}")
        if self.inner_output not in ("last", "average"):
            raise ValidationError(f"inner_output must be 'last' or 'average', got {self.inner_output!r}")
        if self.epsilon is None:
            if self.mode != "fixed":
                raise ValidationError(f"epsilon=None (non-private run) needs mode='fixed', got {self.mode!r}")
        else:
            check_theorem_range(self.epsilon, self.delta, self.allow_outside_theorem)
            if self.R is None and not self.exact_inner:
                raise ValidationError(
                    "dzoa with a privacy target needs a public R (and optionally beta_c_norm_sq, default (R/2)^2); "
                    "R='oracle' opts in to the paper's calibration from a pooled non-private solve (issue 12)")
        object.__setattr__(self, "probe_inner", tuple(int(t) for t in self.probe_inner))
        object.__setattr__(self, "probe_rounds", tuple(check_int(m, "probe_rounds", 1) for m in self.probe_rounds))

    # ------------------------------------------------------------------ setup
    def messages(self, problem, network):
        return (MessageSpec("beta", (problem.n_features,), Aggregation.NEIGHBOR_SUM),)

    @property
    def oracle(self) -> bool:
        """True when ``R`` and ``||beta^c||`` come from the pooled non-private reference (``R="oracle"``, or
        ``R=None`` without a privacy target)."""
        return self.R == "oracle" or (self.R is None and self.epsilon is None)

    def _radius(self, problem) -> tuple[float, float]:
        """``(R, ||beta^c||^2)``: public parameters, or the pooled reference with the oracle (the only pooled solve)."""
        if not self.oracle:
            if self.R is None:  # exact_inner with a target and no R: the calibration is not used (in the clear)
                return math.nan, math.nan
            R = float(self.R)
            return R, float(self.beta_c_norm_sq) if self.beta_c_norm_sq is not None else R * R / 4.0
        if self.beta_c_norm_sq is not None:
            bsq = float(self.beta_c_norm_sq)
        else:
            from ..problems import literal_reference, reference_solution

            if self.reference == "distributed":
                bc = reference_solution(problem)
            else:
                X = np.concatenate([Xk for Xk, _ in problem.parts()])
                y = np.concatenate([yk for _, yk in problem.parts()])
                bc = literal_reference(X, y, problem.loss, problem.regularizer, problem.reg_weight)
            bsq = float(bc @ bc)
        R = 2.0 * math.sqrt(bsq)
        if not R > 0:
            raise ValidationError("R = 2||beta^c|| is 0 (beta^c = 0); pass R explicitly")
        return R, bsq

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        if self.check_rows and self.c1 == 1.0:
            norms = np.linalg.norm(local.X, axis=2).max(axis=1)
            if np.any(norms > 1 + 1e-9):
                k = int(np.argmax(norms))
                raise ValidationError(f"agent {int(block.agents[k])} has a data row of norm {norms[k]:.6g} > 1 while "
                                      "c1 = 1 is assumed (normalise rows, spec §1.4, or pass check_rows=False)")
        if self.inner_sampler != "exact" and not _fast_path(local):
            raise ValidationError(f"inner_sampler={self.inner_sampler!r} needs the squared loss with an l1, l2 or no "
                                  "regularizer (the moment formulas of dzoa_moments)")
        R, bsq = self._radius(problem)
        P = problem.n_features
        degrees = degrees_of(block)
        uncalibrated = self.exact_inner and not math.isfinite(R)  # exact solve: no inner loop, nothing to calibrate
        calib = Calibration.build(self.mode if not uncalibrated else "fixed",
                                  epsilon=self.epsilon if not uncalibrated else None, delta=self.delta, J=self.J,
                                  alpha0=self.alpha0, degrees=degrees, counts=self._calibration_counts(local), T=self.T, P=P, rho=self.rho, c1=self.c1,
                                  c=self.c, R=R, beta_c_norm_sq=bsq)
        reg = local.regularizer.name
        G_R = math.sqrt(P) if reg == "l1" else (2.0 * R if reg == "l2" else 0.0)
        lip = np.empty(block.size)
        for i, (wk, (Xk, yk)) in enumerate(zip(local.sample_weight, local.parts())):
            lip[i] = 2.0 * wk * (np.linalg.norm(Xk, 2) ** 2 * R + np.linalg.norm(Xk.T @ yk)) \
                + local.local_reg * G_R
        zeros = np.zeros((block.size, P))
        sink = getattr(problem, "probe_sink", None) if self.probe_agent >= 0 else None
        state = DZOAState(zeros, zeros.copy(), degrees, local, calib, lip, np.asarray(block.agents), sink,
                          self.declaration(calib, block.agents))
        return state, {"beta": zeros.copy()}

    def declaration(self, calib: Calibration, agents):
        """The one object a block's releases come from (issue 23; D-ZOA draws no noise, so it is never a mechanism
        that draws): the S1 Thm 1 claim of the realised per-agent epsilon of S1(22)
        (:class:`~privdist.privacy.declared.GaussianClaim`, 2.1 constant, S1(25) composition, reason
        :data:`CLAIM_REASON`), or :class:`~privdist.privacy.Identity` (in the clear, epsilon inf) for
        ``exact_inner`` (a deterministic function of the data) and for a run without a privacy target."""
        from ..privacy import Identity
        from ..privacy.declared import GaussianClaim

        if self.exact_inner:
            return Identity(f"{self.name}: exact local minimisers (exact_inner=True) sent without noise (not private)")
        if calib.epsilon is None:
            return Identity(f"{self.name}: iterates sent without noise (not private)")
        reason = CLAIM_REASON + (ORACLE_REASON if self.oracle else "")
        return GaussianClaim(tuple(int(a) for a in agents), tuple(float(e) for e in calib.epsilon), self.delta,
                             reason, constant=GAUSS_CONSTANT)

    def _calibration_counts(self, local) -> np.ndarray:
        """``N_k`` of S1(19): the sample counts, or ``1/w_k`` (the loss weight) with ``calibration_count="loss_weight"``."""
        if self.calibration_count == "samples":
            return np.asarray(local.counts, dtype=float)
        return 1.0 / np.asarray(local.sample_weight, dtype=float)

    # ------------------------------------------------------------------- step
    def _lipschitz(self, state, gamma, nbr) -> np.ndarray:
        """``L_k^{(m)}`` of spec §2.8 for every agent (K,), or the user's ``L``."""
        if self.L is not None:
            return np.full(state.beta.shape[0], float(self.L))
        d = state.degrees.astype(float)
        return state.lip_const + np.linalg.norm(gamma, axis=1) + 2 * self.rho * (
            d * state.calib.R + 0.5 * np.linalg.norm(d[:, None] * state.beta + nbr, axis=1))

    def step(self, state, inbox, t, rng):
        return self.step_many([(state, inbox, rng)], t)[0]

    def step_many(self, requests, t):
        """One outer iteration of several independent runs (e.g. trials, :func:`privdist.runtime.run_many`).

        The squared-loss inner loops of every run's agents go through the same kernel calls (moment-sampled agents in
        one, exact agents with ``J_k <= 256`` in one per padded width; the kernels are row-independent, so each
        agent's numbers are those of a run alone). Runs with a probe, the exact-inner oracle and other losses are stepped alone."""
        out: list = [None] * len(requests)
        batch = []
        for i, (state, inbox, rng) in enumerate(requests):
            d, nbr = state.degrees[:, None], inbox["beta"]
            gamma = state.gamma + self.rho * (d * state.beta - nbr)
            v = self.rho * (d * state.beta + nbr) - gamma
            prob = state.problem
            if self.exact_inner:
                beta = prob.prox_solve(self.rho * state.degrees, v, init=state.beta, tol=1e-12)
            elif _fast_path(prob):
                batch.append((i, state, gamma, v, self._alphas(state, gamma, nbr), rng.generators()))
                continue
            else:
                beta = self._generic_inner(state, gamma, v, nbr, rng, t)
            out[i] = (replace(state, beta=beta, gamma=gamma), {"beta": beta})
        alone = [self._probe_of(job[1], t) is not None for job in batch]  # a probed run keeps its own kernel call
        together = [job for job, a in zip(batch, alone) if not a]
        for group in [[job] for job, a in zip(batch, alone) if a] + ([together] if together else []):
            betas = self._squared_inner(group, t)
            for (i, state, gamma, *_), beta in zip(group, betas):
                out[i] = (replace(state, beta=beta, gamma=gamma), {"beta": beta})
        return out

    def _alphas(self, state, gamma, nbr) -> np.ndarray:
        """Step sizes ``alpha_t`` (K, T) of S1(9) (AMB-D6), ``L_k^{(m)}`` per agent unless ``step_scale`` is set."""
        P = state.problem.n_features
        ts = np.arange(1, self.T + 1, dtype=float)
        if self.step_scale is not None:
            scale = np.full(state.beta.shape[0], float(self.step_scale))
        else:
            scale = state.calib.alpha0 * state.calib.R / self._lipschitz(state, gamma, nbr)
        return scale[:, None] / np.sqrt(ts * P * math.log(2 * P))[None, :]

    def _probe_of(self, state, t: int):
        """``(row, probe)`` of the probed agent in this state's block if round ``t`` is probed, or None."""
        if state.sink is None or self.probe_agent not in state.agent_ids or (
                self.probe_rounds and t not in self.probe_rounds):
            return None
        return int(np.flatnonzero(state.agent_ids == self.probe_agent)[0]), self._probe(state.sink)

    def _generic_inner(self, state, gamma, v, nbr, rng, t: int) -> np.ndarray:
        """Inner loops through the problem's batched values (losses other than the squared one), agent by agent."""
        prob, K = state.problem, state.beta.shape[0]
        P, q = prob.n_features, self.rho * state.degrees.astype(float)
        alphas, gens, probe = self._alphas(state, gamma, nbr), rng.generators(), self._probe_of(state, t)
        return np.stack([zo_inner_loop(generic_diff(prob.subset([i]), q[i], v[i]), P, int(state.calib.J[i]), self.T,
                                       alphas[i], self.u1, gens[i], self.chunk,
                                       probe[1] if probe is not None and probe[0] == i else None,
                                       self.inner_output == "average")
                         for i in range(K)])

    def _squared_inner(self, group, t: int) -> list:
        """The squared-loss inner loops of every agent of the runs in ``group`` (jobs ``(i, state, gamma, v, alphas,
        gens)``; at most one run with a probe), stacked along the agent axis; returns each run's (K, P) iterates."""
        states = [job[1] for job in group]
        prob = states[0].problem
        reg, avg = prob.regularizer.name, self.inner_output == "average"
        n = max(s.problem.X.shape[1] for s in states)
        X = np.concatenate([pad_samples(s.problem.X, n) for s in states])
        y = np.concatenate([pad_samples(s.problem.y, n) for s in states])
        counts = np.concatenate([1.0 / s.problem.sample_weight for s in states])
        q = np.concatenate([self.rho * s.degrees.astype(float) for s in states])
        q2 = q + (prob.local_reg if reg == "l2" else 0.0)
        l1w = prob.local_reg if reg == "l1" else 0.0
        v = np.concatenate([job[3] for job in group])
        alphas = np.concatenate([job[4] for job in group])
        gens = [g for job in group for g in job[5]]
        Js = np.concatenate([s.calib.J.astype(int) for s in states])
        probe = self._probe_of(states[0], t) if len(group) == 1 else None
        beta = np.empty((len(Js), prob.n_features))
        mom = self._moment_agents(Js, probe)
        if mom.any():
            g = np.flatnonzero(mom)
            beta[g] = moment_inner_loops(X[g], y[g], counts[g], q2[g], v[g], l1w, Js[g], self.T, alphas[g], self.u1,
                                         [gens[i] for i in g], avg)
        # small J is bound by per-step overhead: agents in one set of array operations, their pairs zero-padded to
        # the next power of two (a width fixed by J_k alone, so an agent's numbers do not depend on which runs share
        # the call); larger J is bound by the draws: one agent per call, unpadded
        rest = np.flatnonzero(~mom)
        width = np.where(Js[rest] <= _BATCH_MAX_J, 2 ** np.ceil(np.log2(np.maximum(Js[rest], 1))), 0).astype(int)
        groups = [(rest[width == w], int(w)) for w in np.unique(width[width > 0])]
        groups += [(np.array([i]), 0) for i in rest[width == 0]]
        for g, pad in groups:
            pr = None if probe is None or probe[0] not in g else (int(np.flatnonzero(g == probe[0])[0]), probe[1])
            beta[g] = squared_inner_loops(X[g], y[g], counts[g], q2[g], v[g], l1w, Js[g], self.T, alphas[g], self.u1,
                                          [gens[i] for i in g], self.chunk, pr, avg, pad_to=pad)
        return np.split(beta, np.cumsum([s.beta.shape[0] for s in states])[:-1])

    def _moment_agents(self, Js, probe) -> np.ndarray:
        """Boolean mask of the agents whose inner loop uses the moment sampler this step."""
        if self.inner_sampler == "exact":
            return np.zeros(Js.shape, dtype=bool)
        mask = np.ones(Js.shape, dtype=bool) if self.inner_sampler == "moments" else Js >= self.moment_threshold
        if probe is not None:
            mask[probe[0]] = False
        return mask

    def _probe(self, sink):
        slots = {t: j for j, t in enumerate(self.probe_inner)}
        entry = self.probe_entry

        def probe(t, g):
            if t in slots:
                sink.values[slots[t]] = float(g[entry])

        return probe

    # ---------------------------------------------------------------- privacy
    def dp_events(self, state, t):
        return state.declaration.releases(state.agent_ids)

    def estimate(self, state):
        return state.beta

    def run_info(self, states):
        """Per-agent ``J_k``, step scale ``alpha0`` and realised per-iteration epsilon (S1(22) after rounding)."""
        cal = [s.calib for s in states]
        info = {"J_per_agent": [int(j) for c in cal for j in c.J],
                "alpha0_per_agent": [round(float(a), 6) for c in cal for a in c.alpha0]}
        if not self.exact_inner:
            Js = np.array(info["J_per_agent"])
            ids = [int(a) for s in states for a in s.agent_ids]
            probed = [ids.index(self.probe_agent)] if any(s.sink is not None for s in states) \
                and self.probe_agent in ids else []
            used = self._moment_agents(Js, (probed[0], None) if probed else None)  # the probed agent runs exact
            per_agent = ["moments" if u else "exact" for u in used]
            if probed and self.probe_rounds and self._moment_agents(Js, None)[probed[0]]:
                per_agent[probed[0]] = f"moments (exact in the probed rounds {list(self.probe_rounds)})"
            info["inner_sampler"] = self.inner_sampler
            info["inner_sampler_per_agent"] = per_agent
            if self.inner_sampler == "auto":
                info["moment_threshold"] = int(self.moment_threshold)
        if all(c.epsilon is not None for c in cal):
            info["epsilon_per_agent"] = [round(float(e), 6) for c in cal for e in c.epsilon]
        return info

    def assumptions(self):
        if self.epsilon is None:
            return ["dzoa: run without a privacy target (fixed J); no releases declared"]
        if self.exact_inner:
            return ["dzoa: exact_inner=True replaces the zeroth-order loop by the exact minimiser; its releases are "
                    "deterministic and declared in the clear (not private)"]
        out = list(_CAVEATS)
        out += check_theorem_range(self.epsilon, self.delta, True) if self.allow_outside_theorem else []
        if self.oracle:
            out.append("dzoa: R='oracle': R = 2||beta^c|| and ||beta^c||^2 come from a pooled non-private solve of all "
                       "agents' data (the paper's calibration, AMB-D20), so J_k (or alpha0) depends on every record")
        else:
            bsq = "(R/2)^2" if self.beta_c_norm_sq is None else f"{self.beta_c_norm_sq:g}"
            out.append(f"dzoa: R = {self.R:g} and ||beta^c||^2 = {bsq} are public parameters; J_k (or alpha0) depends "
                       "only on N_k, d_k and public constants")
        out.append(f"dzoa: calibration mode {self.mode!r} (J from S1(22), alpha0 from S0(27), or fixed)")
        if self.L is not None or self.step_scale is not None:
            out.append("dzoa: step constant L (or alpha0 R / L) set by the user; S1(17) bounds the variance with L the "
                       "Lipschitz constant of F_k, so a smaller L than that bound weakens the modelled guarantee")
        return out
