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

**Federated averaging over a star under secure aggregation** (``trust="secure_aggregation"``, issue 27). On the
complete network the Metropolis weights are ``a_kl = 1/K``: every party mixes the average of all releases, which is
what a coordinator at the centre of a star computes. With this trust the protocol is that star (FedSGD): a
coordinator (honest-but-curious, no data) broadcasts ``w(t-1)``; party ``k`` sends its clipped data gradient
``g_k = w_k sum_j clip_c1(grad l(w(t-1); x_j))`` as a ``SECURE_SUM`` message (randomized rounding plus its share of
distributed Skellam noise, :class:`~privdist.privacy.distributed.SkellamMechanism`, with a 1 appended so the
coordinator learns how many parties are in the sum); the coordinator receives only the sum ``G`` and ``n_t`` and steps

    w(t) = w(t-1) - alpha_t (G / n_t + (lambda / K) grad R(w(t-1))),   alpha_t = alpha0 / sqrt(t),

i.e. the average of the parties' ``x_k(t)`` of DPSGD evaluated at the common model. Replacing one sample of party
``k`` moves ``g_k`` by at most ``2 c1 w_k``; one public scale serves every party of the sum, so the sensitivity is
``Delta = 2 c1 max_k w_k`` (the row counts are public). Each round's release is the aggregate, protected by the
shares of the honest parties in it (:mod:`privdist.algorithms._secure`); the last round releases nothing and only
delivers the final model, so a total budget covers ``rounds - 1`` releases. Without ``epsilon`` the same star runs
with the gradients gathered in the clear. Any other graph has no coordinator to sum at: secure aggregation is refused
with :class:`~privdist.errors.SecureAggregationUnavailableError`; gossip takes correlated noise instead.

**Pairwise-cancelling correlated noise on any graph** (``trust="correlated"``, issue 27; DECOR, Allouah et al.,
ICML 2024). Gossip as under ``"local"``, but agent ``k`` releases ``q_k(t) = x_k(t) + e_k(t) + sum_{l in N_k}
s_kl n_kl(t)`` with ``e_k(t) ~ N(0, (z_ind Delta_t)^2 I)`` its own and ``n_kl(t) = n_lk(t) ~ N(0, (z_cor 2 alpha_t
c1 max_j w_j)^2 I)`` drawn by both ends from the pair's stream ``(seed, trial, pair, round)``, ``s_kl = +1`` for
``k < l`` else ``-1``, ``z_cor = correlation * z_ind``. The pair terms cancel in the sum over agents: the network
average of the releases carries only ``mean_k e_k``. Gossip keeps that: with ``W`` doubly stochastic, ``1^T W q =
1^T q``, so the average of the mixed iterates ``sum_l a_kl q_l`` has the noise ``mean_k e_k`` (variance
``mean_k s_k^2 / K`` per coordinate) and no pair term; an individual mixed iterate keeps ``(a_kk - a_kl) s_kl n_kl``
of each edge ``(k, l)`` plus the terms of its neighbours' other edges, so the pair noise slows consensus (disagreement
between agents) without biasing the average. The accounting (:mod:`privdist.privacy.correlated`) certifies each
agent against an observer of every message that colludes with ``colluding`` other agents: the declared multiplier
is the conditional noise of the agent's message given all honest messages, calibrated so that the worst agent meets
the budget. Pair draws: research mode from the seed's pair streams; secure mode from the X25519 agreement of the two
neighbours' own keys (:func:`privdist.runtime.rng.pair_secret`), on the in-process simulator (a backend that splits
a pair across processes is refused with :class:`~privdist.errors.SecureAggregationUnavailableError`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import ClassVar

import numpy as np

from .._checks import check_int, check_positive
from ..contract import Aggregation, MessageSpec
from ..errors import SecureAggregationUnavailableError, ValidationError
from ._secure import SecureSum, sum_range
from .base import AlgorithmBase, PerIterationGaussian, check_problem_network

__all__ = ["DPSGD", "DPSGDState", "DPSGDCoordinatorState"]


@dataclass(frozen=True)
class DPSGDState:
    """``x`` (K, P) private iterate, ``q`` (K, P) last release (on the star: the model last received),
    ``weights`` per-sample loss weight per agent, ``scale_weight`` the public ``max_k w_k`` over all parties (star),
    ``correlated`` the run's :class:`~privdist.privacy.correlated.CorrelatedGaussian` (``trust="correlated"``)."""

    x: np.ndarray
    q: np.ndarray
    weights: np.ndarray
    problem: object
    scale_weight: float = 1.0
    correlated: object = None


@dataclass(frozen=True)
class DPSGDCoordinatorState:
    """The star's coordinator: the model ``w`` and public facts (regularizer, ``lambda / K``, ``max_k w_k``)."""

    w: np.ndarray
    public: object


@dataclass(frozen=True)
class DPSGD(SecureSum, PerIterationGaussian, AlgorithmBase):
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
        trust: ``"local"`` (gossip on the network), ``"secure_aggregation"`` (federated averaging over a star,
            the gradients summed under secure aggregation; the complete network only) or ``"correlated"`` (gossip
            with pairwise-cancelling correlated noise, any graph; module docstring).
        colluding: secure aggregation: parties assumed to collude with the aggregator (their shares do not count);
            correlated: agents colluding with the observer of every message (below the smallest degree).
        correlation: correlated: the pair noise std over the independent noise std (``z_cor / z_ind``).
        dropout_tolerance: secure aggregation: fraction of the parties whose shares the calibration can lose in a
            round and still meet the budget; more dropouts lower the recomputed guarantee.
        bits: secure aggregation: the modulus ``2^bits`` of the sums (``None``: the smallest of 32 .. 53 that
            holds them, from public quantities).
        recovery, threshold: secure aggregation: dropout recovery, ``"auto"`` (default: ``"sparse"`` from 100 parties, ``"retry"`` below), ``"retry"``, ``"shamir"`` or ``"sparse"``
            (threshold secret sharing, ``threshold`` shares rebuild a seed; default ``colluding + 1``)
            (:mod:`privdist.algorithms._secure`).
    """

    alpha0: float = 0.5
    epsilon: float | None = 0.15
    delta: float = 1e-3
    c1: float = 1.0
    clip: bool = True
    gaussian_constant: float = 2.1
    budget: str = "round"
    rounds: int | None = None
    trust: str = "local"
    correlation: float = 1.0
    name: ClassVar[str] = "dpsgd"

    def __post_init__(self):
        check_positive(self.alpha0, "alpha0")
        check_positive(self.correlation, "correlation")
        if self.correlated:
            check_int(self.colluding, "colluding", 0)
            if self.dropout_tolerance or self.bits is not None or self.recovery not in ("retry", "auto") or \
                    self.threshold:
                raise ValidationError("dpsgd: dropout_tolerance, bits, recovery and threshold are options of "
                                      "trust='secure_aggregation', not of trust='correlated'")
        else:
            self._check_trust()
        if self.secure and not self.clip:
            raise ValidationError("dpsgd: trust='secure_aggregation' needs clip=True (a secure sum is modular: each "
                                  "party's gradient must be bounded, and the bound enforced)")
        self._check_gaussian_privacy()

    @property
    def correlated(self) -> bool:
        """Gossip with pairwise-cancelling correlated noise (``trust="correlated"`` with noise)."""
        return self.trust == "correlated" and self.epsilon is not None

    def _correlated_noise(self, problem, network):
        """The run's correlated noise, calibrated to this factory's budget on the whole (public) network."""
        from ..privacy.correlated import calibrate_correlated

        degrees = np.asarray(network.degrees)
        if self.colluding >= int(degrees.min()):
            raise ValidationError(f"dpsgd: trust='correlated' with colluding={self.colluding} needs every agent to "
                                  f"have more neighbours than that (the smallest degree is {int(degrees.min())}): an "
                                  "agent whose neighbours all collude has only its independent noise")
        return calibrate_correlated(self.mechanism, network.adjacency, problem.sample_weight, self.correlation,
                                    self.colluding)

    # ------------------------------------------------------------------ the star (trust="secure_aggregation")
    @property
    def star(self) -> bool:
        """Federated averaging over a star with a coordinator (``trust="secure_aggregation"``), not gossip."""
        return self.trust == "secure_aggregation"

    @property
    def has_coordinator(self) -> bool:
        return self.star

    def for_rounds(self, rounds: int):
        """As :meth:`Budgeted.for_rounds`; the star also needs its last round (it only delivers the model)."""
        out = super().for_rounds(rounds)
        return replace(out, rounds=int(rounds)) if self.star and out.rounds is None else out

    def release_count(self, rounds: int) -> int:
        return max(1, int(rounds) - 1) if self.star else int(rounds)

    def _build_mechanism(self):
        if self.star:
            return self._skellam([(self.release_count(self.rounds or 2), 1)])
        return super()._build_mechanism()

    @property
    def _last(self) -> float:
        """The star's last round (it releases nothing); unbounded until ``run`` sets ``rounds``."""
        return math.inf if self.rounds is None else self.rounds

    @staticmethod
    def _check_star(network) -> None:
        K = network.n_agents
        if getattr(network, "adjacency", None) is None or (K > 1 and network.n_edges != K * (K - 1) // 2):
            raise SecureAggregationUnavailableError(
                "dpsgd: trust='secure_aggregation' sums the parties' gradients at a coordinator (federated averaging "
                "over a star), which mixes exactly as the complete network does; this network mixes over its edges "
                "with no coordinator to sum at, so its sums cannot be made secure (use network='complete', or "
                "trust='local' for gossip on this graph)")

    def _sensitivity(self, scale_weight: float) -> float:
        """``Delta = 2 c1 max_k w_k``: one public scale for every gradient in the sum."""
        return 2.0 * self.c1 * scale_weight

    def _bits(self, problem) -> int:
        """The modulus exponent of the gradient sums, from public quantities (row counts, noise)."""
        K, P = problem.n_agents_total, problem.n_features
        w = np.asarray(problem.sample_weight, dtype=float)
        largest = self.mechanism.scale(self._sensitivity(float(w.max())), P) * self.c1 * float(
            (w * problem.counts).max())  # gamma ||g_k|| <= gamma c1 w_k N_k
        need = sum_range(K, largest, self._sum_noise_std(P, K))
        self._check_modulus(need, f"gradient sums of {K} parties")
        return self._modulus_bits(need)

    def messages(self, problem, network):
        P = problem.n_features
        if not self.star:
            return (MessageSpec("q", (P,), Aggregation.MIX),)
        self._check_star(network)
        kind, bits = (Aggregation.SECURE_SUM, self._bits(problem)) if self.secure else (Aggregation.GATHER, None)
        return MessageSpec("u", (P + 1,), kind, bits), MessageSpec("w", (P,), Aggregation.BROADCAST)

    def init_coordinator(self, problem, network, rng):
        P = problem.n_features
        public = SimpleNamespace(regularizer=problem.regularizer, local_reg=problem.local_reg,
                                 scale_weight=float(np.max(problem.sample_weight)))  # public facts only: no rows
        return DPSGDCoordinatorState(np.zeros(P), public), {"w": np.zeros(P)}

    def _star_step(self, state, inbox, t, rng):
        """A party of the star: receive ``w(t-1)``, send its clipped data gradient (encoded with its noise share
        under secure aggregation) and a 1; nothing in the last round."""
        w = np.asarray(inbox["w"][0], dtype=float)
        K, P = state.q.shape
        state = replace(state, q=np.broadcast_to(w, (K, P)).copy())
        dtype = np.int64 if self.secure else float
        if t >= self._last:
            return state, {"u": np.zeros((K, P + 1), dtype=dtype)}
        g = state.problem.loss_grads(state.q, clip=self.c1)
        if self.secure:
            g = self.mechanism.privatize(g, self._sensitivity(state.scale_weight), rng,
                                         shares=self.shares(state.problem.n_agents_total))
        return state, {"u": np.hstack([g, np.ones((K, 1), dtype=dtype)])}

    def step_coordinator(self, cstate, inbox, t, rng):
        if t >= self._last:
            return cstate, {"w": cstate.w}
        u = np.asarray(inbox["u"])
        u = u if self.secure else u.sum(axis=0)  # the secure sum, or the gradients gathered in the clear
        n_t = float(u[-1])  # parties in this round's sum
        if n_t <= 0:
            return cstate, {"w": cstate.w}
        G = self.mechanism.decode(u[:-1], self._sensitivity(cstate.public.scale_weight)) if self.secure else u[:-1]
        pub = cstate.public
        w = cstate.w - self.alpha0 / np.sqrt(t) * (G / n_t + pub.local_reg * pub.regularizer.subgradient(cstate.w))
        return replace(cstate, w=w), {"w": w}

    def secure_silent(self, name: str, t: int) -> bool:
        """The public schedule of the star: nothing in the last round."""
        return t >= self._last

    def secure_events(self, t: int, present, problem) -> list:
        """Round ``t``'s releases: for each party in the sum, the aggregate protected by the shares of the
        ``n_t - colluding`` honest parties in it; none for a party left out."""
        present = np.asarray(present, dtype=bool)
        if t >= self._last:
            return [None] * present.size
        rel = self._secure_release(problem.n_features, self._honest(present), present.size)
        return [rel if p else None for p in present]

    # ------------------------------------------------------------------ gossip (trust="local") and both
    def init(self, problem, network, block, rng):
        check_problem_network(problem, network, needs_degrees=False)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        zeros = np.zeros((block.size, problem.n_features))
        state = DPSGDState(zeros, zeros.copy(), np.asarray(local.sample_weight, dtype=float), local)
        if self.correlated:
            check_problem_network(problem, network)
            state = replace(state, correlated=self._correlated_noise(problem, network))
        if not self.star:
            return state, {"q": zeros.copy()}
        state = replace(state, scale_weight=float(np.max(problem.sample_weight)))  # public: the row counts
        self._check_star(network)
        if self.secure:
            self._bits(problem)  # the modulus holds every sum (named error before any release)
        return state, {"u": np.zeros((block.size, problem.n_features + 1),
                                     dtype=np.int64 if self.secure else float)}

    def step(self, state, inbox, t, rng):
        if self.star:
            return self._star_step(state, inbox, t, rng)
        alpha = self.alpha0 / np.sqrt(t)
        grad = state.problem.local_grads(state.q, clip=self.c1 if self.clip else None)
        x = inbox["q"] - alpha * grad
        if state.correlated is not None:
            q = state.correlated.privatize(x, 2.0 * alpha * self.c1, state.weights, rng)
        else:
            q = self.mechanism.privatize(x, 2.0 * alpha * self.c1 * state.weights, rng)  # Delta_t = 2 alpha_t c1 w_k
        return replace(state, x=x, q=q), {"q": q}

    def dp_events(self, state, t):
        agents = state.problem.agent_ids
        if self.star and t >= self._last:
            return [None] * len(agents)
        if self.secure:  # the worst case of the calibration (a run declares secure_events instead)
            K = state.problem.n_agents_total
            return [self._secure_release(state.q.shape[1], self.shares(K), K)] * len(agents)
        if state.correlated is not None:
            return state.correlated.releases(agents)
        return self.mechanism.releases(agents)

    def estimate(self, state):
        return state.q

    def run_info(self, states):
        """``trust="correlated"``: the drawn multipliers (``z_ind``, ``z_cor``) and each agent's declared one."""
        noise = states[0].correlated if states else None
        if noise is None:
            return {}
        return {"correlated": {"z_ind": noise.z_ind, "z_cor": noise.z_cor,
                               "declared_per_agent": list(noise.declared.noise_multiplier)}}

    def linear_protocol(self, problem, network, rounds: int):
        """The linear-Gaussian model of this protocol, for pairwise accounting (:mod:`.linear_models`)."""
        from .linear_models import dpsgd_protocol

        if self.star or self.correlated:
            raise ValidationError("dpsgd: pairwise (network) accounting models gossip with independent Gaussian "
                                  f"releases; trust={self.trust!r} does not release those")

        return dpsgd_protocol(self, problem, network, rounds)

    def assumptions(self):
        if not self.mechanism.private:
            return []
        if self.secure:
            return [f"dpsgd (federated averaging over a star): per-sample gradients clipped to norm c1={self.c1}; "
                    "the gradient sum's sensitivity 2 c1 max_k(1/N_k) is a-priori; row counts public",
                    self._trust_assumption()]
        if self.clip:
            out = [f"dpsgd: per-sample gradients clipped to norm c1={self.c1}; "
                   "sensitivity 2*alpha_t*c1/N_k is a-priori"]
        else:
            out = [f"dpsgd: per-sample gradient norm <= c1={self.c1} is assumed, not enforced "
                   "(violated by the squared loss, AMB-D8/AMB-B6)"]
        if self.correlated:
            out.append(f"trust=correlated: each agent is certified against an observer of every message colluding "
                       f"with at most {self.colluding} other agent(s) (knowing their data, noise and pair draws); the "
                       "pair draws come from streams keyed by the run's seed (research mode)")
        return out
