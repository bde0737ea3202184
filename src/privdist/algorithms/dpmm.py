"""DPMM: federated majorize-minimize with noisy sufficient statistics (issue 25: the estimators' default).

Not one of the five papers' algorithms: privdist's default optimiser for its estimators, chosen because it reaches
the pooled optimum without tuning (measured in ``benchmarks/bench_utility.py`` and the README).

**Objective.** The pooled ERM over all parties' rows, ``F(w) = (1/n) sum_i l(x_i^T w, y_i) + lam R(w)`` with
``n = sum_k N_k`` and ``lam = reg_weight / K`` (equal to the network objective ``sum_k f_k`` of
:class:`~privdist.problems.HorizontalERM` divided by ``K`` when the parties are of equal size). Every party's rows
count with weight ``1/n``: a party of 30 rows contributes in proportion to its rows, never as much as one of 30,000.

**Majorizer.** The loss curvature is bounded, ``l'' <= L`` (1/4 logistic, 2 squared), so
``B = (L/n) sum_i x_i x_i^T`` bounds the Hessian of the data term everywhere (Böhning & Lindsay 1988, "Monotonicity
of quadratic-approximation algorithms"; Böhning 1992 for the logistic model). The MM iteration

    w_{t+1} = argmin_v  g_t^T (v - w_t) + 1/2 (v - w_t)^T B (v - w_t) + lam R(v),   g_t = grad of the data term at w_t,

decreases ``F`` monotonically without a step size; for the squared loss ``B`` is the exact Hessian and one step
from 0 is the exact ridge solution (sufficient-statistics perturbation, Vu & Slavkovic 2009; Wang 2018 for
linear regression). Nothing is tuned on data: ``L`` is the loss's public curvature bound.

**Privacy (replace-one neighbours, per party).** Party ``k`` releases, each with Gaussian noise:

* once (round 1), its Gram sum ``S_k = sum_j x_j x_j^T`` (upper triangle), rows clipped to ``||x|| <= row_bound``
  here (enforced): ``||x x^T - x' x'^T||_F <= sqrt(2) row_bound^2``;
* in rounds ``1 .. T-1``, its gradient sum ``G_k(w_t) = sum_j clip_c1(l'(x_j^T w_t) x_j)``, every per-sample
  gradient clipped to ``c1`` (enforced): replace-one sensitivity ``2 c1``.

One mechanism (a total budget, PLD-calibrated) draws every noise: the gradient releases use its multiplier ``z``,
the Gram release ``z / sqrt(gram_uses)``, i.e. ``gram_uses`` uses of it, so each party's ledger composes ``T - 1 +
gram_uses`` uses of a Gaussian of multiplier ``z`` (exactly a Gaussian of ``z / sqrt(T - 1 + gram_uses)``): the Gram
takes the share ``gram_uses / (T - 1 + gram_uses)`` of the budget's ``mu^2``. The party count ``N_k`` is sent in the
clear (public under replace-one neighbours). Round ``T`` releases nothing: it only delivers the final model.

**Aggregation.** A coordinator (honest-but-curious, holding no data; the ``network`` argument is not used) sums the
releases, ``S = sum_k S_k`` and ``G = sum_k G_k`` (post-processing), takes the MM step and broadcasts ``w_t`` and the
Polyak average of the iterates after ``average_from * T`` rounds (the parties' estimate; without noise the last
iterate, since MM decreases ``F`` monotonically). The noisy Gram's eigenvalues
are floored at ``floor * sigma_S sqrt(P)`` (``sigma_S`` the std of a summed entry, public: ``floor = 2`` is about
the spectral norm of its noise), so ``B`` stays positive definite and directions the noise swamps get a
conservative step. Defaults (``gram_uses = 4``, ``floor = 2``, ``average_from = 1/2``, 20 rounds in the estimators)
were chosen on a validation split of the Adult training rows (10 parties, total epsilon 1), never on test rows.

**Trust** (issue 27). ``trust="local"`` (above): every party's release carries all the noise its own sensitivity
needs, so the coordinator's sums carry ``sqrt(K)`` times a trusted curator's noise. ``trust="secure_aggregation"``:
the gradient sums (with the row counts) and the Gram are ``SECURE_SUM`` messages: each party encodes its vector as
integers with a share of distributed Skellam noise (:class:`~privdist.privacy.distributed.SkellamMechanism`:
randomized rounding at 1 % of the sensitivity, share ``Sk(mu / shares)``), the backend masks it where the party runs
(:mod:`privdist.runtime.secure.secagg`), and the coordinator receives only the sums, decoded, with noise of central scale.
One Skellam mechanism with the same total budget (RDP-calibrated: no PLD is published for it) for ``shares = K -
colluding - floor(dropout_tolerance K)`` honest parties in each sum; the ledger records each round's guarantee from
the parties actually in the sum (``secure_events``): each party's release is the aggregate, protected by the shares of
the ``n_t - colluding`` honest parties in it. The row counts are summed exactly (they are public).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import ClassVar

import numpy as np

from .._checks import check_int, check_positive
from ..contract import Aggregation, MessageSpec
from ..errors import ValidationError
from ._secure import TRUST, SecureSum, sum_range
from .base import AlgorithmBase, Budgeted, check_problem_network

__all__ = ["DPMM", "DPMMState", "DPMMCoordinatorState", "TRUST"]


@dataclass(frozen=True)
class DPMMState:
    """A party block: ``w`` the model it last received, ``w_bar`` the averaged model (its estimate), its rows
    (clipped) and their norms."""

    w: np.ndarray
    w_bar: np.ndarray
    X: np.ndarray
    norms: np.ndarray
    y: np.ndarray
    mask: np.ndarray
    problem: object


@dataclass(frozen=True)
class DPMMCoordinatorState:
    """The coordinator: the iterate ``w``, the running sum of averaged iterates, the factorised majorizer and the
    summed row count (all post-processing of the parties' releases)."""

    w: np.ndarray
    w_sum: np.ndarray
    n_avg: int
    precond: object
    n_total: float
    public: object


@dataclass(frozen=True)
class DPMM(SecureSum, Budgeted, AlgorithmBase):
    """Factory: ``DPMM(epsilon=1.0, delta=1e-5, rounds=20)``.

    Args:
        epsilon, delta: each party's TOTAL budget for the whole run (``budget="total"``, PLD); ``None``: no noise.
        row_bound: public bound on a row's norm (rows clipped to it), intercept column included.
        c1: per-sample gradient clipping norm (default: ``curvature-free`` bound ``|l'| row_bound``, with
            ``|l'| <= 1`` logistic; set it for the squared loss).
        gram_uses: the Gram release costs this many gradient releases (its budget share, see module docstring).
        floor: the noisy Gram's eigenvalue floor, in units of ``sigma_S sqrt(P)`` (public).
        average_from: the parties' model is the average of the iterates after this fraction of the rounds.
        budget: ``"total"`` only.
        rounds: rounds the budget covers (``None``: the run's).
        trust: ``"local"`` or ``"secure_aggregation"`` (module docstring).
        colluding: secure aggregation: parties assumed to collude with the aggregator (their shares do not count).
        dropout_tolerance: secure aggregation: fraction of the parties whose shares the calibration can lose in a
            round (dropouts) and still meet the budget; more dropouts lower the recomputed guarantee.
        bits: secure aggregation: the modulus ``2^bits`` of the secure sums (checked against the sums' range);
            ``None`` (default): the smallest of 32 .. 53 that holds them, from public quantities (row counts, noise).
        recovery, threshold: secure aggregation: dropout recovery, ``"auto"`` (default: ``"sparse"`` from 100 parties, ``"retry"`` below), ``"retry"``, ``"shamir"`` or ``"sparse"``
            (threshold secret sharing, ``threshold`` shares rebuild a seed; default ``colluding + 1``)
            (:mod:`privdist.algorithms._secure`).
        prior: secure aggregation: releases each party made before the run (the estimators' DP range step; a
            Gaussian noise multiplier or a Skellam ``(variance, l2, l1)``,
            :func:`~privdist.privacy.distributed.check_prior`) that the total budget also covers; the Skellam noise
            is calibrated so that their composition with the run's releases is the budget.
        runs: secure aggregation: the budget covers this many runs with the same releases (one-vs-rest's classes,
            :mod:`privdist.learn.multiclass`); the Skellam noise is calibrated on their joint RDP composition.
    """

    epsilon: float | None = 1.0
    delta: float = 1e-5
    row_bound: float = math.sqrt(2.0)
    c1: float | None = None
    gram_uses: int = 4
    floor: float = 2.0
    average_from: float = 0.5
    budget: str = "total"
    rounds: int | None = None
    trust: str = "local"
    prior: tuple = ()
    runs: int = 1
    name: ClassVar[str] = "dpmm"
    has_coordinator: ClassVar[bool] = True
    budgets: ClassVar[tuple[str, ...]] = ("total",)

    def __post_init__(self):
        check_positive(self.row_bound, "row_bound")
        if self.c1 is not None:
            check_positive(self.c1, "c1")
        check_int(self.gram_uses, "gram_uses", 1)
        self._check_trust()
        self._check_prior()
        if check_int(self.runs, "runs", 1) > 1 and self.trust != "secure_aggregation":
            raise ValidationError("dpmm: runs > 1 calibrates the Skellam noise of trust='secure_aggregation' for "
                                  "several runs (with trust='local', split the budget instead)")
        self._check_budget()
        self._build_when_known()

    # ------------------------------------------------------------------ privacy
    def release_count(self, rounds: int) -> int:
        return int(rounds) - 1 + self.gram_uses if rounds > 1 else 1  # one round releases nothing: w = 0

    def _build_mechanism(self):
        from ..privacy import gaussian_mechanism

        if self.trust == "secure_aggregation":  # T - 1 gradient sums and one Gram of gram_uses budget units
            rounds = self.rounds or 2
            releases = [(rounds - 1, 1), (1, self.gram_uses)] if rounds > 1 else [(1, 1)]
            return self._skellam([(count * self.runs, uses) for count, uses in releases], self.prior)
        return gaussian_mechanism(self.epsilon, self.delta, budget="total",
                                  releases=self.release_count(self.rounds or 2),
                                  clear="dpmm: statistics sent without noise (not private)")

    def _clip(self, loss) -> float:
        return self.c1 if self.c1 is not None else self.row_bound * (1.0 if loss.curvature_bound <= 0.25 else 2.0)

    def dp_events(self, state, t):
        agents = state.problem.agent_ids
        if t >= self._last:
            return [None] * len(agents)
        if self.secure:  # the worst case of the calibration (a run declares secure_events instead)
            K = state.problem.n_agents_total
            return self._secure_releases(agents, t, state.X.shape[2], self.shares(K), K)
        return self.mechanism.releases(agents, uses=1 + self.gram_uses if t == 1 else 1)

    def _secure_releases(self, agents, t: int, P: int, honest: int, n_agents: int) -> list:
        """Each agent's release of round ``t``'s secure sums when ``honest`` parties' shares are in them."""
        from ..privacy import Release
        from ..privacy.events import dp_event

        g = self._secure_release(P, honest, n_agents)
        if t == 1:
            h = self._secure_release(P * (P + 1) // 2, honest, n_agents, uses=self.gram_uses)
            g = Release(dp_event.ComposedDpEvent((g.event, h.event)))
        return [g] * len(agents)

    def silent(self, name: str, t: int) -> bool:
        """The public schedule of the agents' messages in every trust mode (:meth:`step`): the Gram in round 1
        only, nothing in the last round. A silent message holds zeros; the runtime does not record it."""
        return t >= self._last or (name == "h" and t != 1)

    def secure_silent(self, name: str, t: int) -> bool:
        """The public schedule of the secure sums: :meth:`silent`'s."""
        return self.silent(name, t)

    def secure_events(self, t: int, present, problem) -> list:
        """Round ``t``'s releases in a run: for each party in the sums, the aggregate protected by the shares of the
        ``n_t - colluding`` honest parties in them; none for a party left out (``problem``: its public facts)."""
        present = np.asarray(present, dtype=bool)
        if t >= self._last:
            return [None] * present.size
        rel = self._secure_releases([0], t, problem.n_features, self._honest(present), present.size)[0]
        return [rel if p else None for p in present]

    def assumptions(self):
        if not self.mechanism.private:
            return []
        out = [f"dpmm: rows clipped to norm {self.row_bound:g} and per-sample gradients to {self._c1_text()}; "
               "Gram sensitivity sqrt(2) row_bound^2 and gradient sensitivity 2 c1 are a-priori; row counts public"]
        if self.secure:
            out.append(self._trust_assumption())
        return out

    def audit_records(self, n_features: int, loss) -> tuple:
        """The replace-one pair of the audit's ``worst`` canary (:mod:`privdist.audit.neighbours`): ``(x, y)`` and
        ``(x', y')``.

        ``x = row_bound e_0`` and ``x' = row_bound e_1``: orthogonal rows at the row bound, whose Gram difference has
        upper-triangle norm ``sqrt(2) row_bound^2``, the Gram release's sensitivity. Labels of opposite signs, as
        large as :meth:`_audit_label` (squared loss: each per-sample gradient at ``w = 0``, round 1's, is clipped to
        ``c1``): the gradient sums differ by ``sqrt(2) c1`` of the sensitivity ``2 c1``. No pair attains both
        sensitivities (``u`` and ``-u`` attain the gradient's and leave the Gram unchanged), so the pair's
        Gaussian is ``sqrt((1/2 + gram_uses) / (1 + gram_uses))`` of the declared one in ``mu`` (0.95 for
        ``gram_uses = 4``); the generic ``u, -u`` pair sees only ``1 / sqrt(1 + gram_uses)`` of it (0.45)."""
        r = self.row_bound
        x0, x1 = np.zeros(n_features), np.zeros(n_features)
        x0[0] = r
        x1[min(1, n_features - 1)] = r if n_features > 1 else -r
        lab = self._audit_label(loss)
        return (x0, lab), (x1, -lab)

    def _audit_label(self, loss) -> float:
        """The canary's label: ``+-1`` for the logistic loss, else the smallest ``|y|`` whose gradient at ``w = 0``
        reaches the clipping norm, ``c1 / (|l'(0, 1)| row_bound)`` (at least 1)."""
        if loss.name == "logistic":
            return 1.0
        return max(1.0, self._clip(loss) / (abs(float(loss.dz(0.0, 1.0))) * self.row_bound))

    def _c1_text(self) -> str:
        return f"c1={self.c1:g}" if self.c1 is not None else "c1 = row_bound (logistic) / 2 row_bound (squared)"

    @property
    def _last(self) -> float:
        """The last round (it releases nothing); unbounded until ``run`` sets ``rounds``."""
        return math.inf if self.rounds is None else self.rounds

    # ------------------------------------------------------------------ protocol
    def messages(self, problem, network):
        P = problem.n_features
        kind, bits = (Aggregation.SECURE_SUM, self._bits(problem)) if self.secure else (Aggregation.GATHER, None)
        return (MessageSpec("g", (P + 1,), kind, bits), MessageSpec("h", (P * (P + 1) // 2,), kind, bits),
                MessageSpec("w", (P,), Aggregation.BROADCAST), MessageSpec("w_bar", (P,), Aggregation.BROADCAST))

    def init(self, problem, network, block, rng):
        check_problem_network(problem, network, needs_degrees=False)
        local = problem.subset(block.agents) if block.size != problem.n_agents else problem
        X = np.array(local.X, dtype=float)
        X /= np.maximum(1.0, np.linalg.norm(X, axis=2) / self.row_bound)[:, :, None]  # enforced row bound
        P = problem.n_features
        state = DPMMState(np.zeros(P), np.zeros(P), X, np.linalg.norm(X, axis=2), np.asarray(local.y, dtype=float),
                          np.asarray(local.w > 0, dtype=float), local)
        if self.secure:
            self._check_block_modulus(state)
        return state, self._silent(block.size, P)

    def _silent(self, n: int, P: int) -> dict:
        dtype = np.int64 if self.secure else float
        return {"g": np.zeros((n, P + 1), dtype=dtype), "h": np.zeros((n, P * (P + 1) // 2), dtype=dtype)}

    def _sum_range(self, problem, rows: float) -> float:
        """Public bound on a secure sum's magnitude when each of the ``K`` parties has at most ``rows`` rows and the
        noise stays within 40 standard deviations."""
        K, P = problem.n_agents_total, problem.n_features
        clip = self._clip(problem.loss)
        grad = rows * clip * self.mechanism.scale(2.0 * clip, P)
        gram_sens = math.sqrt(2.0) * self.row_bound**2
        gram = rows * self.row_bound**2 * self.mechanism.scale(gram_sens, P * (P + 1) // 2)
        noise = max(self._sum_noise_std(P * (P + 1) // 2, K, self.gram_uses), self._sum_noise_std(P, K))
        return sum_range(K, max(grad, gram, rows), noise)

    def _bits(self, problem) -> int:
        """``bits``, or (``None``) the smallest modulus exponent in 32 .. MAX_BITS that holds every secure sum: from
        the largest party's row count, declared public by a party-local problem (``public["max_party_rows"]``: the
        parties' row counts are public under replace-one neighbours) or read off the problem's masks."""
        public = getattr(problem, "public", None)
        if isinstance(public, dict) and "max_party_rows" in public:
            rows = float(public["max_party_rows"])
        else:
            rows = float(np.max(np.sum(np.asarray(problem.w) > 0, axis=1))) if np.size(problem.w) else 0.0
        return self._modulus_bits(self._sum_range(problem, rows))

    def _check_block_modulus(self, state) -> None:
        """Every secure sum fits the modulus when each of the ``K`` parties is at most as large as this block's
        largest (every block checks its own; :meth:`SecureSum._check_modulus`)."""
        rows = float(state.mask.sum(axis=1).max()) if state.mask.size else 0.0
        problem = state.problem
        self._check_modulus(self._sum_range(problem, rows), f"secure sums of {problem.n_agents_total} parties of up "
                                                            f"to {rows:g} rows")

    def init_coordinator(self, problem, network, rng):
        P = problem.n_features
        public = SimpleNamespace(loss=problem.loss, regularizer=problem.regularizer, reg_weight=problem.reg_weight,
                                 n_agents_total=problem.n_agents_total)  # public facts only: no rows
        return (DPMMCoordinatorState(np.zeros(P), np.zeros(P), 0, None, 0.0, public),
                {"w": np.zeros(P), "w_bar": np.zeros(P)})

    def _clipped_sums(self, state, w) -> np.ndarray:
        """The block's agents' sums of per-sample gradients at ``w``, each clipped to ``c1`` (enforced)."""
        loss = state.problem.loss
        d = loss.dz(state.X @ w, state.y) * state.mask
        c1 = self._clip(loss)
        d = d * np.minimum(1.0, c1 / np.maximum(np.abs(d) * state.norms, 1e-300))
        return np.einsum("kn,knp->kp", d, state.X)

    def _gradient_sums(self, state, w, rng):
        """Noisy clipped gradient sums of the block's agents at ``w``, with each agent's row count appended."""
        G = self.mechanism.privatize(self._clipped_sums(state, w), 2.0 * self._clip(state.problem.loss), rng)
        return np.hstack([G, state.mask.sum(axis=1)[:, None]])

    def step(self, state, inbox, t, rng):
        w, w_bar = np.array(inbox["w"][0], dtype=float), np.array(inbox["w_bar"][0], dtype=float)
        state = replace(state, w=w, w_bar=w_bar)
        K, P = state.X.shape[0], w.shape[0]
        if t >= self._last:  # the last round only delivers the final model
            return state, self._silent(K, P)
        if self.secure:
            return state, self._secure_step(state, w, t, rng)
        out = {"g": self._gradient_sums(state, w, rng), "h": np.zeros((K, P * (P + 1) // 2))}
        if t == 1:
            root = math.sqrt(self.gram_uses)  # gram_uses uses of multiplier z = one use of z / sqrt(gram_uses)
            out["h"] = self.mechanism.privatize(self._gram(state), math.sqrt(2.0) * self.row_bound**2 / root, rng)
        return state, out

    @staticmethod
    def _gram(state) -> np.ndarray:
        P = state.X.shape[2]
        iu = np.triu_indices(P)
        return np.einsum("knp,knq->kpq", state.X, state.X)[:, iu[0], iu[1]]

    def _secure_step(self, state, w, t, rng) -> dict:
        """The secure sums' integer vectors: the gradient sums (with the exact row counts) and, in round 1, the
        Gram, each randomly rounded with the party's Skellam share (:class:`SkellamMechanism`)."""
        K, P = state.X.shape[0], w.shape[0]
        shares = self.shares(state.problem.n_agents_total)
        c1 = self._clip(state.problem.loss)
        g = self.mechanism.privatize(self._clipped_sums(state, w), 2.0 * c1, rng, shares=shares)
        out = {"g": np.hstack([g, state.mask.sum(axis=1).astype(np.int64)[:, None]]),
               "h": np.zeros((K, P * (P + 1) // 2), dtype=np.int64)}
        if t == 1:
            out["h"] = self.mechanism.privatize(self._gram(state), math.sqrt(2.0) * self.row_bound**2, rng,
                                                shares=shares, uses=self.gram_uses)
        return out

    def step_coordinator(self, cstate, inbox, t, rng):
        if t >= self._last:
            return cstate, {"w": cstate.w, "w_bar": self._average(cstate)}
        g, h = self._sums(inbox, cstate.public)
        P = g.shape[0] - 1
        problem = cstate.public
        if t == 1:
            cstate = replace(cstate, n_total=float(g[-1]), precond=self._majorizer(h, P, float(g[-1]), problem))
        n_t = float(g[-1])  # the rows in this round's sums (fewer than round 1's when parties dropped out)
        if n_t <= 0:  # no party in the sum: nothing to step on
            return cstate, {"w": cstate.w, "w_bar": self._average(cstate)}
        w = self._update(cstate.w, g[:P] / n_t, cstate.precond, problem)
        if self.mechanism.private and t > self.average_from * self._last:  # Polyak averaging of the later
            # iterates (post-processing); without noise the last iterate of the monotone MM is the estimate
            cstate = replace(cstate, w_sum=cstate.w_sum + w, n_avg=cstate.n_avg + 1)
        cstate = replace(cstate, w=w)
        return cstate, {"w": w, "w_bar": self._average(cstate)}

    def _sums(self, inbox, problem) -> tuple[np.ndarray, np.ndarray]:
        """The summed gradient (with the row count) and Gram: gathered and summed here, or the decoded secure sums."""
        if not self.secure:
            return inbox["g"].sum(axis=0), inbox["h"].sum(axis=0)
        g, h = np.asarray(inbox["g"]), np.asarray(inbox["h"])
        P = g.shape[0] - 1
        c1 = self._clip(problem.loss)
        return (np.r_[self.mechanism.decode(g[:P], 2.0 * c1), float(g[P])],
                self.mechanism.decode(h, math.sqrt(2.0) * self.row_bound**2))

    @staticmethod
    def _average(cstate):
        return cstate.w_sum / cstate.n_avg if cstate.n_avg else cstate.w

    def _majorizer(self, h_sum, P, n_total, problem):
        """``B = (L / n) S`` from the summed noisy Gram (eigenvalues floored at the noise's spectral size), plus
        the l2 penalty's curvature; returned as its eigen-decomposition."""
        S = np.zeros((P, P))
        S[np.triu_indices(P)] = h_sum
        S = S + np.triu(S, 1).T
        evals, evecs = np.linalg.eigh(S)
        floor = 0.0
        if self.mechanism.private:
            K = problem.n_agents_total
            if self.secure:  # the decoded sum's noise with every party in it (shares of K parties)
                sigma_sum = self.mechanism.noise_std(math.sqrt(2.0) * self.row_bound**2, P * (P + 1) // 2,
                                                     self.gram_uses) * math.sqrt(K / self.shares(K))
            else:
                z = float(np.max(np.atleast_1d(self.mechanism.noise_multiplier)))
                sigma_sum = z * math.sqrt(2.0) * self.row_bound**2 / math.sqrt(self.gram_uses) * math.sqrt(K)
            floor = self.floor * sigma_sum * math.sqrt(P)
        floor = max(floor, 1e-9 * max(float(evals.max()), 1.0))
        evals = np.maximum(evals, floor) * problem.loss.curvature_bound / n_total
        return evals, evecs

    def _update(self, w, grad, precond, problem):
        """The MM step: minimise the quadratic majorizer plus ``lam R`` (closed form for l2, FISTA otherwise)."""
        evals, evecs = precond
        lam = problem.reg_weight / problem.n_agents_total
        reg = problem.regularizer.name
        if reg in ("l2", "none") or lam == 0:
            c = 2.0 * lam if reg == "l2" else 0.0  # R = ||w||^2 has curvature 2
            rhs = evals * (evecs.T @ w) - evecs.T @ grad
            return evecs @ (rhs / (evals + c))
        B = (evecs * evals) @ evecs.T
        step = 1.0 / float(evals.max())
        v = y = w.copy()
        s = 1.0
        for _ in range(500):
            v_new = problem.regularizer.prox((y - step * (grad + B @ (y - w)))[None, :], step * lam)[0]
            s_new = (1.0 + math.sqrt(1.0 + 4.0 * s * s)) / 2.0
            y = v_new + ((s - 1.0) / s_new) * (v_new - v)
            v, s = v_new, s_new
        return v

    def estimate(self, state):
        return np.broadcast_to(state.w_bar, (state.X.shape[0], state.w_bar.shape[0])).copy()

    def run_info(self, states):
        return {"gram_uses": self.gram_uses, "row_bound": self.row_bound, "trust": self.trust}
