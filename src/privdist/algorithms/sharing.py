"""DP ADMM sharing over vertically partitioned features, with a coordinator (S2; spec §3.4-§3.7).

Parties ``m = 1..M`` hold feature blocks ``D_m``; the coordinator holds the labels, ``z``, ``y`` and
``s = sum_m Q_m``. Runtime round ``t`` is the spec's iteration ``t - 1`` (S2(17); S2(7)-(9) with ``xi = 0``):

1. party ``m`` receives ``r = s - z`` and ``y`` (broadcast), forms ``v_m = r - Q_m`` and solves in closed form
   (Cholesky factor of ``2 lambda I + rho D_m^T D_m`` computed once at init)

       (2 lambda I + rho D_m^T D_m) x_m = -D_m^T (y + rho v_m);

   in the clipped ``output`` mode (a numeric public ``b1``, ``clip=True``, the default) ``y`` and ``v_m`` are first
   clipped to ``||y|| <= b1`` and ``||v_m|| <= M b1``, the two bounds the proof of S2 Lemma 1 (§7.3) takes from
   Assumption 2.1 (``||y^t|| <= b1``; ``||sum_{k != m} D_k x~_k - z^t|| <= ||z|| + sum_k ||x~_k|| <= M b1``);

2. it perturbs and sends only ``Q_m = D_m x~_m`` (an N-vector, ``GATHER``):
   ``paper_precision``: ``x~ = x + xi``, ``xi ~ N(0, sigma^2 (D_m^T D_m)^+)`` (pseudo-inverse; eigenvalues below
   ``1e-10 lambda_max`` dropped and counted in ``state.dropped``, AMB-V2); ``output``: ``Q_m = D_m x_m + e``,
   ``e ~ N(0, sigma^2 I_N)`` (what the proof of S2 Thm 3 analyses, AMB-V3); ``variable_isotropic``:
   ``xi ~ N(0, s^2 I)`` (the noise-level sweep of the authors' code); ``computed_heuristic``: the authors'
   data-dependent ``C`` (not DP-sound; warned);
3. the coordinator sets ``s = sum_m Q_m``, solves the ``N`` scalar problems
   ``z_i = argmin w l_i(z) - y_i z + rho/2 (s_i - z)^2`` by a vectorised safeguarded Newton (spec §1.6), updates
   ``y <- y + rho (s - z)`` (so ``y = grad l(z)``, S2 Lemma 2) and broadcasts ``r = s - z`` and ``y``.

**What leaves its owner.** No ``x_m`` and no raw feature column leaves its party, but the shared ``Q_m`` is a
function of ``D_m`` (that is what the DP event is about), and the **labels leave the coordinator**: the broadcast
``y_i = -w Y_i sigma(-Y_i z_i)`` has sign ``-Y_i``, so every party reads every label off ``sign(y)`` in every round,
with or without noise. S2 protects features only (column-level neighbours, S2 Def. 2); the label exposure is no DP
event and is listed by :meth:`ADMMSharing.exposures`.

**Privacy: guarantee or claim** (issue 12; DP event per party and round). Only the clipped ``output`` mode with a
numeric public ``b1`` and ``epsilon`` is a *guarantee*: ``GaussianDpEvent(z)`` with ``sigma = z C``,
``z = sqrt(2 log(1.25/delta)) / epsilon`` per release (``budget="round"``, S2 Thm 3) or the PLD-calibrated ``z`` of
each party's total ``(epsilon, delta)`` over ``rounds`` releases (``budget="total"``), and ``C = (1 + M rho) b1 / rho``
(:func:`~privdist.privacy.sharing_calibration.clipped_sensitivity`, which holds for any two blocks once the inputs
are clipped; S2 Lemma 1's ``C = 3/(d_m rho)[lambda c1 + (1 + M rho) b1]`` does not, its ``1/d_m`` assumes
``||(D_m^T D_m)^{-1}|| = 1/d_m``). Every other mode with ``epsilon`` releases the paper's *claim* (same event, the
paper's per-release ``(epsilon, delta)`` composed by S2 Cor. 1, ``composition="advanced"``; guaranteed epsilon inf)
with its reason: ``paper_precision``, ``variable_isotropic`` and ``computed_heuristic`` add noise confined to
``col(D_m)``, so ``Q_m`` always lies in the column space of the party's own block and one release separates
neighbouring datasets exactly (its projection onto ``col(D_m)``'s orthogonal complement is 0 on ``D_m``, not on a
neighbour); ``computed_heuristic`` also calibrates with private iterates; ``b1="pilot"`` (``b1_safety`` times the
largest ``||x^t||, ||y^t||, ||z^t||`` of a non-private pilot run of ``pilot_rounds`` iterations, :func:`pilot_b1`,
AMB-V4) is data-dependent and nothing is clipped to it; ``output`` with ``clip=False`` is the paper-faithful
unclipped path (S2 Lemma 1's ``C``, assumed ``b1``) kept for reproduction, because clipping changes the iterates
(also in the non-private limit). Without ``epsilon`` the shares are released without a claim (epsilon inf, with
the noise std in the reason when ``noise_std > 0``). Adopts AMB-V1 (loss scale from the problem), V2, V3, V4, V6
(``delta' = delta``), V11.

**Secure aggregation** (``trust="secure_aggregation"``, issue 27; guaranteed mode only). The coordinator needs only
``s = sum_m Q_m``: each party sends ``Q_m = D_m x_m`` as a ``SECURE_SUM`` message (randomized rounding plus its share
of distributed Skellam noise, :class:`~privdist.privacy.distributed.SkellamMechanism`), the backend masks it where the
party runs and the coordinator receives only the noisy sum. A party never sees its own noisy share any more, so its
next ``v_m = r - Q_m`` uses its own noise-free ``Q_m``, a hidden function of its data: two neighbouring blocks may
then meet different clipped inputs ``u, u'``, and the sensitivity is ``||H(D) u - H(D') u'|| <= 2 C`` (each term is
at most ``C``, :func:`~privdist.privacy.sharing_calibration.clipped_sensitivity`), twice the local one. The sum then
carries noise of std ``2 z' C`` against ``sqrt(M) z C`` under local trust (``z'`` the RDP-calibrated Skellam multiplier,
about 8 % above ``z``): it helps from about five parties on. Each round's release is the aggregate, protected by the
shares of the honest parties in it (:mod:`privdist.algorithms._secure`); a party that drops out is missing from
that round's ``s``.

**Averaged iterates** (``average=True``; issue 39). Each party's estimate is then the running mean
``xbar_m^t = (1/t) sum_{k<=t} x_m^k`` of its own iterates (Polyak-Ruppert averaging) instead of the last ``x_m^t``.
It is computed by the party from its own noise-free iterates, so it is post-processing: no release, no DP event,
the ledger unchanged. Why: in the clipped ``output`` mode at a total epsilon near 1 every share's noise is orders
of magnitude larger than the share (column-level neighbours), the broadcast ``r`` and ``y`` carry mostly fresh noise
each round, and the last iterate inherits the last round's; the mean averages it out while keeping what every
round shares (the label signal in ``y``). Chosen on a validation split of Adult's training rows (3 parties, total
epsilon 1, seeds 0-2): accuracy 0.8275, 0.8260, 0.8266 (last iterate) against 0.8307, 0.8326, 0.8321 (mean of all
rounds).

**One object per release** (issue 23): every share's noise is drawn, and its release declared, by
``self.mechanism``, built in :meth:`ADMMSharing._build_mechanism` and called once per party and round: the
:class:`~privdist.privacy.GaussianMechanism` of the budget (guarantee or claim, paper column S2 Cor. 1), the
:class:`~privdist.privacy.declared.Perturbation` of ``noise_std`` without ``epsilon`` (no sensitivity analysis:
released in the clear), or :class:`~privdist.privacy.Identity` (no noise).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import scipy.linalg as sla

from .._checks import check_int, check_nonnegative, check_positive, check_probability
from ..errors import SecureAggregationUnavailableError, ValidationError
from ..privacy import gaussian_mechanism
from ..privacy.declared import Perturbation, noise_std
from ..privacy.sharing_calibration import clipped_sensitivity, computed_sensitivity, sharing_sensitivity
from ..contract import Aggregation, MessageSpec
from ._secure import SecureSum, sum_range
from .base import AlgorithmBase, Budgeted
from .sharing_claims import LABEL_EXPOSURE, sharing_assumptions, unenforced_reason
from .sharing_state import SharingCoordinatorState, SharingPartyState, _clip, _Party
from .vertical_common import check_vertical, logistic_prox

__all__ = ["check_vertical", "ADMMSharing", "SharingPartyState", "SharingCoordinatorState", "logistic_prox",
           "pilot_b1", "NOISE_MODES"]

NOISE_MODES = ("variable_isotropic", "paper_precision", "output", "computed_heuristic")

@dataclass(frozen=True)
class ADMMSharing(SecureSum, Budgeted, AlgorithmBase):
    """Factory: ``ADMMSharing(rho=1.0, mode="variable_isotropic", noise_std=0.0)``.

    Args:
        rho: ADMM penalty (> 0); 1 in the authors' code for the experiments.
        mode: one of :data:`NOISE_MODES` (spec §3.6).
        noise_std: the noise std ``s`` (``variable_isotropic``) or ``sigma`` (other modes) when ``epsilon`` is
            None; 0 runs without noise.
        epsilon, delta: per-iteration privacy (``budget="round"``; ``sigma = sqrt(2 log(1.25/delta)) C/eps``) or,
            in the guaranteed mode, each party's total over the run (``budget="total"``; ``sigma = z C`` with ``z``
            PLD-calibrated); ``C`` of :func:`~privdist.privacy.sharing_calibration.clipped_sensitivity` in the
            clipped ``output`` mode, of S2 Lemma 1 otherwise. A tuple of epsilons gives one budget per party.
        b1: public bound (required with ``epsilon`` except in ``computed_heuristic``): in ``output`` mode with
            ``clip=True`` the party step clips ``||y|| <= b1`` and ``||v_m|| <= M b1`` (a guarantee); elsewhere
            the paper's assumed bound on ``||x||, ||y||, ||z||`` (a claim). Or ``"pilot"``:
            ``b1_safety * pilot_b1(problem, rho, pilot_rounds)`` (AMB-V4; data-dependent, warned, a claim).
        clip: clip the party step's inputs to the public ``b1`` in ``output`` mode (default True). ``False`` is
            the paper-faithful unclipped path (S2 Lemma 1's ``C``): its releases are the paper's claim only.
        c1: bound on ``|R''|`` (2 for ``||x||^2``); used by S2 Lemma 1's ``C`` only (the clipped bound needs none:
            the closed-form step handles ``R = ||x||^2`` exactly).
        b1_safety: factor (>= 1) on the pilot's largest norm (1 = AMB-V4 as written).
        pilot_rounds: iterations of the pilot run (100 = the experiments' ``T``, AMB-V1).
        budget: ``"round"`` (the paper's per-release parameters) or ``"total"`` (guaranteed mode only).
        rounds: rounds a total budget covers (``None``: the run's, filled in by ``run``).
        trust: ``"local"`` or ``"secure_aggregation"`` (the coordinator's sum under secure aggregation with
            distributed Skellam noise; the guaranteed mode only; module docstring).
        colluding, dropout_tolerance, bits: secure aggregation: parties colluding with the aggregator, the fraction
            of parties the calibration may lose per round, the modulus ``2^bits`` (``None``: the smallest of 32 ..
            53 that holds the sums) (:mod:`privdist.algorithms._secure`).
        recovery, threshold: secure aggregation: dropout recovery, ``"auto"`` (default: ``"sparse"`` from 100 parties, ``"retry"`` below), ``"retry"``, ``"shamir"`` or ``"sparse"``
            (threshold secret sharing, ``threshold`` shares rebuild a seed; default ``colluding + 1``)
            (:mod:`privdist.algorithms._secure`).
        average: each party's estimate is the mean of its iterates over the rounds run, not the last one
            (post-processing of its own iterates; module docstring).
        prior: secure aggregation: releases each party made before the run (the vertical estimator's DP range
            step, :func:`~privdist.privacy.distributed.check_prior`) that the total budget also covers: the Skellam
            noise is calibrated on their composition with the run's releases.

    Raises:
        ValidationError: bad values, unknown mode, ``epsilon`` without ``b1``, ``b1`` a string other than
            ``"pilot"``, ``computed_heuristic`` without ``epsilon``, a total budget outside the guaranteed mode.
    """

    rho: float = 1.0
    mode: str = "variable_isotropic"
    noise_std: float = 0.0
    epsilon: float | None = None
    delta: float = 0.01
    b1: float | str | None = None
    clip: bool = True
    c1: float = 2.0
    b1_safety: float = 1.0
    pilot_rounds: int = 100
    budget: str = "round"
    rounds: int | None = None
    trust: str = "local"
    prior: tuple = ()
    average: bool = False
    name: ClassVar[str] = "admm_sharing"
    has_coordinator: ClassVar[bool] = True

    def __post_init__(self):
        check_positive(self.rho, "rho")
        check_nonnegative(self.noise_std, "noise_std")
        check_probability(self.delta, "delta")
        check_nonnegative(self.c1, "c1")
        if self.mode not in NOISE_MODES:
            raise ValidationError(f"mode must be one of {NOISE_MODES}, got {self.mode!r}")
        if self.epsilon is not None:
            if self.b1 is None and self.mode != "computed_heuristic":
                raise ValidationError(f"mode {self.mode!r} with epsilon needs the assumed bound b1 (AMB-V4)")
        elif self.mode == "computed_heuristic":
            raise ValidationError("mode 'computed_heuristic' needs epsilon")
        if check_positive(self.b1_safety, "b1_safety") < 1:
            raise ValidationError(f"b1_safety must be >= 1, got {self.b1_safety}")
        check_int(self.pilot_rounds, "pilot_rounds")
        for flag in ("clip", "average"):
            if type(getattr(self, flag)) is not bool:
                raise TypeError(f"{flag} must be a bool, got {type(getattr(self, flag)).__name__}")
        object.__setattr__(self, "_pilot_value", None)  # last resolved pilot b1, quoted by assumptions()
        if isinstance(self.b1, str):
            if self.b1 != "pilot":
                raise ValidationError(f"b1 must be a number >= 0 or 'pilot', got {self.b1!r}")
            warnings.warn("admm_sharing b1='pilot': the sensitivity bound comes from a non-private pilot run on all "
                          "parties' data; it is data-dependent and the pilot itself is not private (AMB-V4)",
                          stacklevel=3)
        elif self.b1 is not None:
            check_nonnegative(self.b1, "b1")
        if self.mode == "computed_heuristic":
            warnings.warn("admm_sharing mode 'computed_heuristic' calibrates noise with private iterates: "
                          "it is NOT differentially private (spec §3.6)", stacklevel=3)
        self._check_budget()
        self._check_trust()
        self._check_prior()
        if self.trust == "secure_aggregation" and (self.noise_std > 0 if self.epsilon is None else
                                                   not self._clipping()):
            raise SecureAggregationUnavailableError(
                "admm_sharing: trust='secure_aggregation' needs the guaranteed mode (mode='output', clip=True, a "
                f"numeric b1, epsilon): mode {self.mode!r} has no sensitivity bound a Skellam share could be "
                "calibrated to")
        if self.budget == "total" and self.epsilon is not None and not self._clipping():
            raise ValidationError(f"admm_sharing: a total budget needs the guaranteed mode (mode='output', "
                                  f"clip=True, a numeric b1); mode {self.mode!r} releases the paper's per-release "
                                  "claim (use budget='round')")
        if self.budget == "round" or self.rounds is not None:
            self.mechanism  # noqa: B018 - validates epsilon now (named errors at construction)

    def _build_mechanism(self):
        """The one object every share's noise and release come from (issue 23): the Gaussian mechanism of the budget
        with S2 Cor. 1 as its paper column (a guarantee in the clipped ``output`` mode, else the paper's claim with
        :meth:`unenforced`), the :class:`~privdist.privacy.declared.Perturbation` of ``noise_std`` (no ``epsilon``:
        no sensitivity analysis, released in the clear), or :class:`~privdist.privacy.Identity`."""
        if self.secure:
            return self._skellam([(self.rounds or 1, 1)], self.prior)
        if self.epsilon is None and self.noise_std > 0:  # a noise level without a sensitivity bound: no DP claim
            where = "" if self.mode == "output" else " (noise confined to col(D_m))"
            return Perturbation(self.noise_std, f"admm_sharing ({self.mode}): shared vectors Q_m sent with noise of "
                                f"std {self.noise_std}{where} but without a sensitivity bound: no DP claim")
        mech = gaussian_mechanism(self.epsilon, self.delta, budget=self.budget, releases=self.rounds, constant=2.0,
                                  reason=self.unenforced(),
                                  clear="admm_sharing: shared vectors Q_m = D_m x_m sent without noise (not private)")
        return replace(mech, composition="advanced") if mech.private else mech  # S2 Cor. 1 (spec §1.3-3)

    # --- protocol -----------------------------------------------------------------------------------------
    def messages(self, problem, network):
        check_vertical(problem, self.name)
        n = problem.n_samples
        kind, bits = (Aggregation.SECURE_SUM, self._bits(problem)) if self.secure else (Aggregation.GATHER, None)
        return (MessageSpec("Q", (n,), kind, bits), MessageSpec("r", (n,), Aggregation.BROADCAST),
                MessageSpec("y", (n,), Aggregation.BROADCAST))

    def _bits(self, problem) -> int:
        """The modulus exponent of the secure sums (named error when ``bits`` is too small): ``M`` shares of norm at
        most ``C`` each, encoded at sensitivity ``2 C``, plus the noise."""
        M, n = problem.n_agents, problem.n_samples
        sens = self._secure_scale(M)
        need = sum_range(M, self.mechanism.scale(sens, n) * sens / 2.0, self._sum_noise_std(n, M))
        self._check_modulus(need, f"sums of {M} parties' shares")
        return self._modulus_bits(need)

    def _b1(self, problem) -> float | None:
        """The bound ``b1`` in use: the number given, or the (cached) pilot bound times ``b1_safety``."""
        if self.b1 != "pilot":
            return self.b1
        value = self.b1_safety * pilot_b1(problem, self.rho, self.pilot_rounds)
        object.__setattr__(self, "_pilot_value", value)
        return value

    def _clipping(self) -> bool:
        """True in the guaranteed mode: ``output`` with ``epsilon``, a numeric public ``b1`` and ``clip``."""
        return (self.mode == "output" and self.clip and self.epsilon is not None and self.b1 is not None
                and self.b1 != "pilot")

    def _sensitivity(self, d_m: int, lam: float, M: int, b1: float | None) -> float:
        """``C`` of a party's release: the clipped bound (guarantee), S2 Lemma 1's (claim), or 0 (no DP mechanism;
        ``computed_heuristic`` computes its ``C`` every round)."""
        if not self.mechanism.private or self.mode == "computed_heuristic":
            return 0.0
        if self._clipping():  # a secure party's own share is hidden state: 2 C (module docstring)
            return self._secure_scale(M) if self.secure else clipped_sensitivity(self.rho, b1, M)
        return sharing_sensitivity(d_m, self.rho, lam, self.c1, b1, M)

    def _secure_scale(self, M: int) -> float:
        """The public sensitivity ``2 C`` every party's share is encoded with under secure aggregation."""
        return 2.0 * clipped_sensitivity(self.rho, self.b1, M)

    def init(self, problem, network, block, rng):
        check_vertical(problem, self.name)
        data = problem.subset(block.agents)
        lam = data.reg_weight
        b1 = self._b1(problem) if self.mechanism.private and self.mode != "computed_heuristic" else None
        chol, factors, dropped, sens = [], [], [], []
        for i, D in enumerate(data.blocks):
            G = data.gram(i)
            A = self.rho * G + 2.0 * lam * np.eye(G.shape[0])
            try:
                chol.append(sla.cho_factor(A, lower=True))
            except np.linalg.LinAlgError:
                raise ValidationError(f"party {int(block.agents[i])}: 2 lambda I + rho D^T D is singular; "
                                      "use reg_weight > 0 or a full-column-rank block") from None
            F, k = None, 0
            if self.mode in ("paper_precision", "computed_heuristic"):
                ev, V = np.linalg.eigh(G)
                keep = ev > 1e-10 * max(ev.max(), 0.0)
                k = int((~keep).sum())
                F = V[:, keep] / np.sqrt(ev[keep])  # F F^T = (D^T D)^+
                if k:
                    warnings.warn(f"party {int(block.agents[i])}: D_m^T D_m is rank-deficient; {k} null "
                                  "direction(s) dropped from the noise covariance (pseudo-inverse, AMB-V2)",
                                  stacklevel=2)
            factors.append(F)
            dropped.append(k)
            sens.append(self._sensitivity(D.shape[1], lam, data.n_parties, b1))
        agents = np.asarray(block.agents, dtype=np.int64)
        zeros = np.zeros((block.size, data.n_samples))
        if self.secure:  # the std of the decoded sum's noise (all parties in it)
            self._bits(problem)  # the modulus holds every sum (named error before any release)
            sigma = np.full(block.size, self._sum_noise_std(data.n_samples, data.n_parties)
                            / self.mechanism.scale(sens[0], data.n_samples))
        else:
            sigma = noise_std(self.mechanism, np.asarray(sens), agents)
        state = SharingPartyState(np.zeros((block.size, data.n_features)), zeros, tuple(chol), tuple(factors),
                                  tuple(dropped), sigma, data, float(b1) if self._clipping() else None,
                                  np.zeros(block.size, dtype=np.int64), np.asarray(sens), agents,
                                  np.zeros((block.size, data.n_features)) if self.average else None)
        return state, {"Q": zeros.astype(np.int64) if self.secure else zeros.copy()}

    def init_coordinator(self, problem, network, rng):
        cd = problem.coordinator_data()
        n = cd.labels.shape[0]
        zeros = np.zeros(n)
        scale = self._secure_scale(cd.n_parties) if self.secure else 0.0
        cstate = SharingCoordinatorState(cd.labels, cd.loss_weight, zeros, zeros.copy(), zeros.copy(), scale)
        return cstate, {"r": zeros.copy(), "y": zeros.copy()}

    def step(self, state, inbox, t, rng):
        data, rho = state.data, self.rho
        x, Q = np.zeros_like(state.x), np.empty_like(state.Q)
        bound, clipped = state.clip_bound, state.clipped
        for i, D in enumerate(data.blocks):
            r, y = inbox["r"][i], inbox["y"][i]
            v = r - state.Q[i]
            if bound is not None:  # enforce S2 Lemma 1's ||y|| <= b1, ||v_m|| <= M b1 (clipped_sensitivity)
                (y, cy), (v, cv) = _clip(y, bound), _clip(v, data.n_parties * bound)
                if cy or cv:
                    clipped = clipped.copy() if clipped is state.clipped else clipped
                    clipped[i] += 1
            x_m = sla.cho_solve(state.chol[i], -np.asarray(D.T @ (y + rho * v)).ravel())
            o = data.offsets[i]
            x[i, o:o + x_m.shape[0]] = x_m
            Q[i] = np.asarray(D @ x_m).ravel() if self.secure else self._share(state, i, D, x_m, y, v, _Party(rng, i))
        steps = state.steps + 1
        x_avg = None if state.x_avg is None else state.x_avg + (x - state.x_avg) / steps  # running mean (average)
        new = replace(state, x=x, Q=Q, clipped=clipped, x_avg=x_avg, steps=steps)
        if self.secure:  # the noise-free Q_m stays with its party; the sum gets its encoding and noise share
            shares = self.shares(data.n_parties)
            return new, {"Q": self.mechanism.privatize(Q, state.sensitivity[0], rng, shares=shares)}
        return new, {"Q": Q}

    def _share(self, state, i: int, D, x_m: np.ndarray, y: np.ndarray, v: np.ndarray, party) -> np.ndarray:
        """``Q_m`` of party row ``i`` with its mode's noise (spec §3.6), drawn by the mechanism once per round:
        ``output``: ``D_m x_m + e``, ``e ~ N(0, sigma^2 I_N)``; ``variable_isotropic``: ``D_m (x_m + xi)``,
        ``xi ~ N(0, sigma^2 I)``; ``paper_precision``/``computed_heuristic``: ``xi = F w``, ``w ~ N(0, sigma^2 I)``,
        ``F F^T = (D_m^T D_m)^+`` (the last with the authors' data-dependent ``C`` from their code)."""
        C = state.sensitivity[i]
        if self.mode == "computed_heuristic":
            C = computed_sensitivity(D.shape[1], self.rho, state.data.reg_weight, float(np.linalg.norm(y)),
                                     float(np.linalg.norm(v)))
        if self.mode == "output":
            return self._noisy(np.asarray(D @ x_m).ravel()[None], C, party)[0]
        if self.mode == "variable_isotropic":
            return np.asarray(D @ self._noisy(x_m[None], C, party)[0]).ravel()
        F = state.noise_factor[i]
        return np.asarray(D @ (x_m + F @ self._noisy(np.zeros((1, F.shape[1])), C, party)[0])).ravel()

    def _noisy(self, values: np.ndarray, sensitivity: float, party) -> np.ndarray:
        """``values`` through the mechanism (a :class:`~privdist.privacy.declared.Perturbation` ignores the
        sensitivity: it has none)."""
        mech = self.mechanism
        if isinstance(mech, Perturbation):
            return mech.perturb(values, party)
        return mech.privatize(values, sensitivity, party)

    def step_coordinator(self, cstate, inbox, t, rng):
        s = self.mechanism.decode(inbox["Q"], cstate.scale) if self.secure else inbox["Q"].sum(axis=0)
        z = logistic_prox(s, cstate.y, cstate.labels, cstate.loss_weight, self.rho)
        y = cstate.y + self.rho * (s - z)
        return replace(cstate, z=z, y=y, s=s), {"r": s - z, "y": y}

    # --- privacy and scoring ------------------------------------------------------------------------------
    def unenforced(self) -> str | None:
        """Why the releases (with ``epsilon``) are only the paper's claim, or None (guaranteed mode, no epsilon)."""
        return unenforced_reason(self)

    def dp_events(self, state, t):
        if self.secure:  # the worst case of the calibration (a run declares secure_events instead)
            M = state.data.n_parties
            return [self._secure_release(state.Q.shape[1], self.shares(M), M)] * len(state.agents)
        return self.mechanism.releases(state.agents)

    def secure_events(self, t: int, present, problem) -> list:
        """Round ``t``'s releases: for each party in the sum, the aggregate protected by the shares of the
        ``n_t - colluding`` honest parties in it; none for a party left out."""
        present = np.asarray(present, dtype=bool)
        rel = self._secure_release(problem.n_samples, self._honest(present), present.size)
        return [rel if p else None for p in present]

    def exposures(self) -> list[str]:
        """The labels, readable from ``sign(y)`` by every party in every round (every mode; issue 12)."""
        return [LABEL_EXPOSURE]

    def run_info(self, states):
        """The clip bound and, per party, the number of rounds whose inputs were clipped (clipped mode only)."""
        if not states or states[0].clip_bound is None:
            return {}
        return {"clip_bound_y": states[0].clip_bound,
                "clip_bound_v": states[0].data.n_parties * states[0].clip_bound,
                "clipped_rounds_per_party": [int(c) for s in states for c in s.clipped]}

    def estimate(self, state):
        """Each party's model: its last iterate, or with ``average`` the mean of its iterates (after a round)."""
        return state.x_avg if state.x_avg is not None and state.steps else state.x

    def assumptions(self):
        return sharing_assumptions(self)


def pilot_b1(problem, rho: float = 1.0, rounds: int = 100) -> float:
    """AMB-V4's default ``b1``: ``max_t max(||x^t||, ||y^t||, ||z^t||)`` over a non-private ADMM sharing run.

    Runs ``rounds`` noise-free iterations of :class:`ADMMSharing` (``rho``) on the whole problem, in process, with
    ``x = (x_1..x_M)`` the concatenated model. The value is cached on ``problem`` per ``(rho, rounds)``, so every
    run of an experiment trial pays for one pilot. It reads every party's features and the labels: it is a
    data-dependent quantity, not a DP release.

    Args:
        problem: a :class:`privdist.problems.vertical.VerticalProblem`.
        rho: ADMM penalty of the pilot (that of the private run).
        rounds: pilot iterations (>= 1).

    Returns:
        The largest norm observed (> 0 once any iterate is nonzero).

    References:
        Spec §3.6, AMB-V4.
    """
    check_vertical(problem, "pilot_b1")
    rho, rounds = check_positive(rho, "rho"), check_int(rounds, "rounds")
    memo = getattr(problem, "memo", None)
    key = ("admm_sharing_pilot_b1", rho, rounds)
    if memo is not None and key in memo:
        return memo[key]
    from ..contract import AgentBlock

    algo = ADMMSharing(rho=rho)
    M = problem.n_agents
    state, _ = algo.init(problem, None, AgentBlock(np.arange(M), M), None)
    cstate, out = algo.init_coordinator(problem, None, None)
    largest = 0.0
    for t in range(1, rounds + 1):
        state, shares = algo.step(state, {"r": np.broadcast_to(out["r"], (M, out["r"].size)),
                                          "y": np.broadcast_to(out["y"], (M, out["y"].size))}, t, None)
        cstate, out = algo.step_coordinator(cstate, {"Q": shares["Q"]}, t, None)
        largest = max(largest, float(np.linalg.norm(state.x.sum(axis=0))), float(np.linalg.norm(cstate.y)),
                      float(np.linalg.norm(cstate.z)))
    if memo is not None:
        memo[key] = largest
    return largest
