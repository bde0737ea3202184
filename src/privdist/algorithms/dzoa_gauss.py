"""D-ZOA + Gaussian: D-ZOA's outer consensus ADMM with an explicit, enforced Gaussian mechanism (issue 12).

D-ZOA (:mod:`.dzoa`) adds no noise, so its epsilon is only the paper's claim. This variant keeps D-ZOA's outer
loop (S1 (4)-(9), spec §2.4) and its cold-started two-point zeroth-order inner loop, and adds what a guarantee
needs: a bounded per-sample gradient, a certified inner-loop output, and Gaussian noise calibrated to the
requested per-release ``(epsilon, delta)`` (``budget="round"``) or to each agent's total ``(epsilon, delta)`` over
the run (``budget="total"``, PLD-calibrated over ``rounds`` releases). The noise is drawn and the release declared
by one mechanism object, ``self.mechanism`` (:mod:`privdist.privacy.mechanisms`, issue 23).

Update for agent ``k`` (degree ``d_k``, ``N_k`` samples, per-sample weight ``w_k = 1/N_k`` of the mean loss,
``nbr = sum_{l in N_k} beta_l^{(m-1)}``, all ``beta`` the *released*, noisy iterates):

    gamma_k = gamma_k + rho (d_k beta_k - nbr),   v_k = rho (d_k beta_k + nbr) - gamma_k           (S1(5), AMB-D2)
    F_k(b) = w_k sum_j h(x_j^T b - y_j) + (eta/K) R(b) + rho d_k ||b||^2 - v_k^T b
    b_zo   = T steps of the two-point zeroth-order loop of D-ZOA from b_0 = 0 (J pairs, alpha_t = s/sqrt(tP log 2P))
    b_out  = b_zo if ||s(b_zo)|| / mu_k <= tau_k, else an exact (proximal-gradient) minimiser of F_k, certified alike
    beta_k = b_out + N(0, sigma_k^2 I_P),   sigma_k = z Delta_k                                      (the release)

where ``h`` is the Huber loss with ``h'(r) = clip(2 r, -c1, c1)`` (the squared loss ``r^2`` with its residual
derivative clipped, identical to it for ``|r| <= c1/2``), rows are clipped to ``||x_j|| <= 1`` at ``init``,
``s(b)`` is the minimum-norm subgradient of ``F_k`` at ``b``, ``mu_k = 2 (rho d_k + eta/K [l2 only])`` and
``z`` the noise multiplier of the requested ``(epsilon, delta)``: dp-accounting's exact Gaussian calibration
(``calibration="exact"``, Balle & Wang 2018, :mod:`privdist.privacy.exact_gaussian`) or the classical
``sqrt(C log(1.25/delta))/epsilon`` (``calibration="classical"``, ``C`` = ``gaussian_constant``, 2.1 in the S1
comparison mode, AMB-X2, :func:`privdist.privacy.gaussian_mechanism`); with ``budget="total"`` the smallest ``z``
whose ``rounds``-fold composition PLD certifies at the total ``(epsilon, delta)``.

**Sensitivity** (replace-one neighbours at one agent, which is how spec §1.1 reads S1). Let ``D, D'`` differ
in row ``j``. ``F = F_D`` is ``mu_k``-strongly convex (``rho d_k ||b||^2`` plus convex terms) and
``F_D' = F_D + w_k (h_j' - h_j)`` where each per-sample term has gradient norm ``|h'| ||x|| <= c1``. With
``b*, b'*`` the minimisers, strong convexity at ``b'*`` gives ``mu_k ||b* - b'*|| <= ||g_D(b'*) - 0|| =
||g_D(b'*) - g_D'(b'*)|| <= 2 c1 w_k`` (``g`` a subgradient; the l1 part is common to both), so
``||b* - b'*|| <= 2 c1 w_k / mu_k``. For any ``b``, ``mu_k ||b - b*|| <= ||s(b)||``, so the certificate
``||s(b_out)|| / mu_k <= tau_k`` gives ``||b_out - b*|| <= tau_k`` whichever branch produced ``b_out``, and for
*every* realisation of the inner loop's directions (drawn independently of the data)

    ||b_out(D) - b_out(D')|| <= Delta_k = 2 c1 w_k / mu_k + 2 tau_k,   tau_k = tau_rel * 2 c1 w_k / mu_k.

``v_k``, ``gamma_k`` and the inbox are functions of released messages and public constants only (the state
keeps no unreleased data-dependent quantity between rounds; the inner loop is cold-started). So, given the
past releases, each release is the Gaussian mechanism with l2 sensitivity ``Delta_k`` applied to
``b_out(D; omega)`` with inner randomness ``omega`` independent of ``D`` and not released; the hockey-stick
divergence (and ``exp((alpha-1) D_alpha)``) is jointly convex, so the mixture over ``omega`` is at least as
private as the worst ``omega``: the release is exactly ``GaussianDpEvent(z)`` and the rounds compose
adaptively. Every assumption is enforced in code: clipping (Huber derivative, row norms), the certificate
(polish, then :class:`CertificationError` if even that fails), the noise drawn (``sigma_k = z Delta_k``).

Releases: ``GaussianDpEvent(z)`` per agent per round, a guarantee (RDP/PLD finite); its paper column is the
S1(25) formula with the 2.1 constant (``"dzoa"``), the moments bound with 2 (and for a total budget), none for the
exact per-release calibration.
Spec ambiguity resolutions adopted: AMB-D2, D4, D5, D6 (inner loop as in D-ZOA), AMB-X1 (the releases are
scored), AMB-X2 (2.1 constant in the catalog's comparison runs).

References:
    S1 Alg. 1, (4)-(9); spec §2.4; Chaudhuri, Monteleoni & Sarwate 2011 (output perturbation of strongly convex
    ERM); Balle & Wang 2018 (exact Gaussian calibration); issue 12.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from .._checks import check_int, check_positive, check_probability
from ..errors import CalibrationError, ValidationError
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, Budgeted, check_problem_network, degrees_of
from .dzoa_inner import pad_samples

__all__ = ["DZOAGauss", "DZOAGaussState", "CertificationError", "huber", "huber_dz"]


class CertificationError(CalibrationError):
    """The local output could not be certified within ``tau`` of the exact minimiser (the sensitivity fails)."""


def huber(r: np.ndarray, c1: float) -> np.ndarray:
    """Per-sample loss ``h(r) = r^2`` for ``|r| <= c1/2``, ``c1 |r| - c1^2/4`` beyond (``|h'| <= c1``)."""
    a = np.abs(r)
    return np.where(a <= 0.5 * c1, r * r, c1 * a - 0.25 * c1 * c1)


def huber_dz(r: np.ndarray, c1: float) -> np.ndarray:
    """``h'(r) = clip(2 r, -c1, c1)``: the squared loss's residual derivative clipped to ``c1``."""
    return np.clip(2.0 * r, -c1, c1)


_PER_AGENT = ("beta", "gamma", "degrees", "mu", "tau", "sensitivity", "sigma", "lip", "polished", "agents")


class _Generators:
    """Several runs' agent streams in stacked order (:meth:`DZOAGauss.step_many`): their generators, and the agent
    ids and ``draw`` a mechanism reads (each row still drawn from its own agent's generator)."""

    def __init__(self, streams):
        self._gens = [g for s in streams for g in s.generators()]
        self.agents = np.concatenate([np.asarray(s.agents, dtype=np.int64) for s in streams])
        self.round = streams[0].round

    def generators(self):
        return self._gens

    def draw(self, fn):
        return np.stack([fn(g, i) for i, g in enumerate(self._gens)])


@dataclass(frozen=True)
class DZOAGaussState:
    """Released ``beta`` (K, P), duals ``gamma`` (K, P), degrees, the block's clipped data and per-agent
    ``mu``, ``tau``, ``sensitivity`` and ``sigma`` (K,); ``polished`` counts exact-solve fallbacks per agent;
    ``agents`` the global ids (whose budgets the mechanism reads)."""

    beta: np.ndarray
    gamma: np.ndarray
    degrees: np.ndarray
    X: np.ndarray
    y: np.ndarray
    w: np.ndarray
    l1w: float
    l2w: float
    mu: np.ndarray
    tau: np.ndarray
    sensitivity: np.ndarray
    sigma: np.ndarray
    lip: np.ndarray
    polished: np.ndarray
    agents: np.ndarray


@dataclass(frozen=True)
class DZOAGauss(Budgeted, AlgorithmBase):
    """Factory: ``DZOAGauss(epsilon=0.15, delta=1e-3)``: D-ZOA with a Gaussian mechanism that privdist enforces.

    Args:
        epsilon, delta: per-release target (``budget="round"``) or each agent's total over the run
            (``budget="total"``); ``epsilon=None`` (``false`` in TOML) adds no noise and declares the releases in
            the clear (the :class:`~privdist.privacy.Identity` mechanism); a tuple gives one budget per agent.
        calibration: per-release calibration of ``budget="round"``: ``"exact"`` (dp-accounting's exact Gaussian
            noise multiplier for one release) or ``"classical"`` (``sqrt(C log(1.25/delta)) / epsilon``, proved for
            ``epsilon < 1``). A total budget is PLD-calibrated; it needs ``"exact"`` (the default).
        gaussian_constant: ``C`` of the classical calibration: 2.1 (S1 comparison mode) or 2.
        c1: bound on the per-sample loss derivative (Huber clipping); rows are clipped to norm 1.
        rho, T, J, u1: D-ZOA's penalty, inner steps, direction pairs per step (public, fixed) and smoothing.
        step_scale: inner step constant ``s`` (``alpha_t = s / sqrt(t P log 2P)``), a public constant.
        tau_rel: certification tolerance relative to the exact minimiser's sensitivity ``2 c1 w_k / mu_k``.
        max_polish: iteration cap of the exact solve (:class:`CertificationError` beyond it).
        local_solver: ``"zo"`` (D-ZOA's zeroth-order loop, then the exact solve when its output fails the
            certificate; default) or ``"exact"`` (the certified exact solve only, warm-started at the agent's own
            last *release*, a public value). Same mechanism and guarantee: the sensitivity argument bounds any
            output certified within ``tau_k``, whatever produced it. ``"exact"`` skips a loop whose output is
            discarded whenever it fails the certificate (issue 14: on S1 Fig 4's trial 0, sum reading, it met the
            certificate for 4 of 5 agents in every round; ``"exact"`` is used there for speed, ~29 ms per
            trial-round for the zeroth-order loop).
        budget: ``"round"`` (per-release target, the papers') or ``"total"`` (each agent's whole run, PLD).
        rounds: rounds a total budget covers (``None``: the run's, filled in by ``run``).
    """

    epsilon: float | None = 0.15
    delta: float = 1e-3
    calibration: str = "exact"
    gaussian_constant: float = 2.1
    c1: float = 1.0
    rho: float = 4.0
    T: int = 100
    J: int = 30
    u1: float = 1.0
    step_scale: float = 0.2
    tau_rel: float = 0.05
    max_polish: int = 10000
    local_solver: str = "zo"
    budget: str = "round"
    rounds: int | None = None
    name: ClassVar[str] = "dzoa_gauss"

    def __post_init__(self):
        if self.epsilon is False:
            object.__setattr__(self, "epsilon", None)
        for nm in ("c1", "rho", "u1", "step_scale", "tau_rel"):
            check_positive(getattr(self, nm), nm)
        check_int(self.T, "T", 1)
        check_int(self.J, "J", 1)
        check_int(self.max_polish, "max_polish", 1)
        check_probability(self.delta, "delta")
        if self.calibration not in ("exact", "classical"):
            raise ValidationError(f"calibration must be 'exact' or 'classical', got {self.calibration!r}")
        if self.local_solver not in ("zo", "exact"):
            raise ValidationError(f"local_solver must be 'zo' or 'exact', got {self.local_solver!r}")
        if self.gaussian_constant not in (2.0, 2.1):
            raise ValidationError(f"gaussian_constant must be 2 or 2.1, got {self.gaussian_constant}")
        self._check_budget()
        if self.calibration == "classical" and self.budget == "total" and self.epsilon is not None:
            raise ValidationError("calibration='classical' is a per-release formula; a total budget is calibrated "
                                  "with PLD: use calibration='exact' with budget='total'")
        if self.budget == "round" or self.rounds is not None:
            self.mechanism  # noqa: B018 - validates epsilon now (named errors at construction)
        if self.calibration == "classical" and self.epsilon is not None and np.any(np.asarray(self.epsilon) >= 1):
            raise ValidationError(f"the classical Gaussian bound needs epsilon < 1, got {self.epsilon}; "
                                  "use calibration='exact'")

    # ------------------------------------------------------------------ setup
    def _build_mechanism(self):
        """The Gaussian mechanism of the budget (issue 23): classical (:func:`privdist.privacy.gaussian_mechanism`,
        constant ``gaussian_constant``) or exact (:func:`privdist.privacy.exact_gaussian.exact_gaussian_mechanism`)
        per release, PLD over ``rounds`` releases for a total budget; :class:`~privdist.privacy.Identity` without a
        privacy target."""
        from ..privacy import gaussian_mechanism
        from ..privacy.exact_gaussian import exact_gaussian_mechanism

        clear = f"{self.name}: iterates sent without noise (not private)"
        if self.calibration == "classical":
            return gaussian_mechanism(self.epsilon, self.delta, constant=self.gaussian_constant, clear=clear)
        return exact_gaussian_mechanism(self.epsilon, self.delta, budget=self.budget, releases=self.rounds,
                                        clear=clear)

    def messages(self, problem, network):
        return (MessageSpec("beta", (problem.n_features,), Aggregation.NEIGHBOR_SUM),)

    def init(self, problem, network, block, rng):
        from ..privacy.declared import noise_std

        check_problem_network(problem, network)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        if getattr(local.loss, "name", "") != "squared":
            raise ValidationError(f"dzoa_gauss supports the squared loss (Huber-clipped), got {local.loss.name!r}")
        reg = local.regularizer.name
        if reg not in ("l1", "l2", "none"):
            raise ValidationError(f"dzoa_gauss supports l1, l2 or no regularizer, got {reg!r}")
        norms = np.linalg.norm(local.X, axis=2, keepdims=True)
        X = local.X / np.maximum(1.0, norms)  # enforce ||x_j|| <= 1 (identity on normalised data)
        w = np.asarray(local.w, dtype=float)
        degrees = degrees_of(block)
        l1w = local.local_reg if reg == "l1" else 0.0
        l2w = local.local_reg if reg == "l2" else 0.0
        mu = 2.0 * (self.rho * degrees + l2w)
        base = 2.0 * self.c1 * w.max(axis=1) / mu  # public: w_k = 1/N_k
        tau = self.tau_rel * base
        sens = base + 2.0 * tau
        sigma = noise_std(self.mechanism, sens, block.agents)  # recorded: the mechanism draws sigma_k = z Delta_k
        G = np.einsum("kn,knp,knq->kpq", w, X, X)
        lip = 2.0 * np.linalg.eigvalsh(G)[:, -1] + mu  # gradient Lipschitz constant of the smooth part
        zeros = np.zeros((block.size, problem.n_features))
        state = DZOAGaussState(zeros, zeros.copy(), degrees, X, np.asarray(local.y, dtype=float), w, float(l1w),
                               float(l2w), mu, tau, sens, sigma, lip, np.zeros(block.size, dtype=np.int64),
                               np.asarray(block.agents, dtype=np.int64))
        return state, {"beta": zeros.copy()}

    # ------------------------------------------------------------------- step
    def _diff(self, st, q, v, A, H, u2):
        """``[F(A + u2 H) - F(A)] / u2`` column-wise for every agent: ``A, H`` (K, P, c) -> (K, c)."""
        RA = st.X @ A - st.y[:, :, None]
        S = st.X @ H
        out = np.einsum("kn,knc->kc", st.w, huber(RA + u2 * S, self.c1) - huber(RA, self.c1)) / u2
        out += q[:, None] * (2.0 * np.einsum("kpc,kpc->kc", A, H) + u2 * np.einsum("kpc,kpc->kc", H, H))
        out -= np.einsum("kp,kpc->kc", v, H)
        if st.l1w:
            out += st.l1w * (np.abs(A + u2 * H) - np.abs(A)).sum(axis=1) / u2
        return out

    def _smooth_grad(self, st, q, v, B):
        r = (st.X @ B[:, :, None])[:, :, 0] - st.y
        return ((st.w * huber_dz(r, self.c1))[:, None, :] @ st.X)[:, 0] + 2.0 * q[:, None] * B - v

    def _certificate(self, st, q, v, B) -> np.ndarray:
        """``||s(B_k)|| / mu_k`` per agent, ``s`` the minimum-norm subgradient of ``F_k`` (an upper bound on the
        distance to the exact minimiser, by strong convexity)."""
        g = self._smooth_grad(st, q, v, B)
        if st.l1w:
            g = np.where(B != 0, g + st.l1w * np.sign(B), np.sign(g) * np.maximum(np.abs(g) - st.l1w, 0.0))
        return np.linalg.norm(g, axis=1) / st.mu

    def _polish(self, st, q, v, B, rows):
        """Proximal gradient on agents ``rows`` from ``B``, each agent until its own certificate is at most
        ``tau / 2`` (agents stop independently, so a different split into blocks gives the same numbers)."""
        b = B[rows].copy()
        active = np.arange(rows.size)
        for _ in range(self.max_polish):
            idx = rows[active]
            sub = replace(st, X=st.X[idx], y=st.y[idx], w=st.w[idx], mu=st.mu[idx])
            qq, vv, bb = q[idx], v[idx], b[active]
            done = self._certificate(sub, qq, vv, bb) <= st.tau[idx] / 2.0
            active = active[~done]
            if not active.size:
                return b
            bb, qq, vv, step = bb[~done], qq[~done], vv[~done], 1.0 / st.lip[idx[~done], None]
            sub = replace(sub, X=sub.X[~done], y=sub.y[~done], w=sub.w[~done], mu=sub.mu[~done])
            a = bb - step * self._smooth_grad(sub, qq, vv, bb)
            b[active] = np.sign(a) * np.maximum(np.abs(a) - step * st.l1w, 0.0) if st.l1w else a
        raise CertificationError(f"dzoa_gauss: the exact local solve did not reach the certificate tau = "
                                 f"{st.tau[rows].min():.3g} in {self.max_polish} iterations")

    def local_output(self, state, inbox, rng):
        """The noise-free local output ``b_out`` of every agent, certified within ``tau_k`` of the exact
        minimiser, its duals and ``v``, and which agents needed the exact solve. Consumes each agent's generator
        for the inner loop only (the release noise is drawn after it, by :meth:`step`).

        Raises:
            CertificationError: even the exact solve cannot be certified.
        """
        d = state.degrees[:, None]
        nbr = inbox["beta"]
        gamma = state.gamma + self.rho * (d * state.beta - nbr)
        v = self.rho * (d * state.beta + nbr) - gamma
        q = self.rho * state.degrees + state.l2w
        K, P = state.beta.shape
        if self.local_solver == "exact":  # warm start at the own last release (public): post-processing
            rows = np.arange(K)
            return self._polish(state, q, v, state.beta, rows), gamma, rows
        gens = rng.generators()
        b = np.zeros((K, P))
        scale = self.step_scale / math.sqrt(P * math.log(2 * P))
        for t in range(1, self.T + 1):
            Z = np.stack([g.standard_normal((2, P, self.J)) for g in gens])
            u1t, u2t = self.u1 / t, self.u1 / (P * P * t * t)
            dv = self._diff(state, q, v, b[:, :, None] + u1t * Z[:, 0], Z[:, 1], u2t)
            b = b - scale / math.sqrt(t) * np.einsum("kpj,kj->kp", Z[:, 1], dv) / self.J
        cert = self._certificate(state, q, v, b)
        rows = np.flatnonzero(~(cert <= state.tau))  # NaN/inf also polished
        if rows.size:
            b[rows] = self._polish(state, q, v, b, rows)
        return b, gamma, rows

    def step(self, state, inbox, t, rng):
        b, gamma, rows = self.local_output(state, inbox, rng)
        beta = self.mechanism.privatize(b, state.sensitivity, rng)  # b_out + N(0, (z Delta_k)^2 I), after the loop
        polished = state.polished.copy()
        polished[rows] += 1
        return replace(state, beta=beta, gamma=gamma, polished=polished), {"beta": beta}

    def step_many(self, requests, t):
        """:meth:`step` of several independent runs (e.g. trials) in one set of array operations: their agents are
        stacked along the agent axis (per-sample arrays zero-padded: a zero row with weight 0 adds nothing), each
        agent keeping its own generator; agents are independent in every operation (the exact solve stops each
        agent on its own certificate), so each run's numbers are those of :meth:`step` alone."""
        if len(requests) == 1:
            state, inbox, rng = requests[0]
            return [self.step(state, inbox, t, rng)]
        states = [r[0] for r in requests]
        n = max(s.X.shape[1] for s in states)
        stacked = replace(states[0], X=np.concatenate([pad_samples(s.X, n) for s in states]),
                          y=np.concatenate([pad_samples(s.y, n) for s in states]),
                          w=np.concatenate([pad_samples(s.w, n) for s in states]),
                          **{f: np.concatenate([getattr(s, f) for s in states]) for f in _PER_AGENT})
        inbox = {"beta": np.concatenate([r[1]["beta"] for r in requests])}
        new, out = self.step(stacked, inbox, t, _Generators([r[2] for r in requests]))
        edges = np.cumsum([s.beta.shape[0] for s in states])[:-1]
        parts = {f: np.split(getattr(new, f), edges) for f in ("beta", "gamma", "polished")}
        return [(replace(s, beta=parts["beta"][i], gamma=parts["gamma"][i], polished=parts["polished"][i]),
                 {"beta": parts["beta"][i]}) for i, s in enumerate(states)]

    # ---------------------------------------------------------------- privacy
    def dp_events(self, state, t):
        return self.mechanism.releases(state.agents)

    def estimate(self, state):
        return state.beta

    def run_info(self, states):
        """Per-agent sensitivity, noise std and how many rounds needed the exact solve."""
        return {"sensitivity_per_agent": [round(float(x), 8) for s in states for x in s.sensitivity],
                "sigma_per_agent": [round(float(x), 8) for s in states for x in s.sigma],
                "polished_rounds_per_agent": [int(x) for s in states for x in s.polished]}

    def assumptions(self):
        if not self.mechanism.private:
            return ["dzoa_gauss: run without a privacy target; releases in the clear"]
        how = ("dp-accounting's exact Gaussian calibration" if self.calibration == "exact" else
               f"the classical bound with constant {self.gaussian_constant:g}")
        if self.budget == "total":
            how = f"the PLD calibration of a total budget over {self.rounds} releases"
        return [
            f"dzoa_gauss: squared loss replaced by the Huber loss with |l'| <= c1 = {self.c1:g} (residual derivative "
            "clipped) and rows clipped to norm <= 1: the per-sample gradient bound is enforced",
            ("dzoa_gauss: each release is the zeroth-order output certified within tau_k of the exact local minimiser "
             "(exact solve when the certificate fails)" if self.local_solver == "zo" else
             "dzoa_gauss: each release is the exact local solve (local_solver='exact', warm-started at the agent's "
             "own last release) certified within tau_k of the exact local minimiser")
            + f" plus Gaussian noise sigma_k = z Delta_k, "
            f"Delta_k = 2 c1 / (N_k mu_k) (1 + 2 tau_rel), tau_rel = {self.tau_rel:g}, z from {how}",
            "dzoa_gauss: duals and v_k are functions of released messages only (post-processing)",
        ]
