"""Pairwise (network) DP of linear-Gaussian protocols: what an observer's whole view reveals about one agent.

**Threat model.** An honest-but-curious observer set ``O`` (one agent, colluding agents, or the coordinator)
sees every message its members receive from other parties over the whole run, knows its members' own inputs
(their contributions and noise), the protocol, the public parameters and every other agent's contributions. The
target ``i`` (not in ``O``) contributes ``c_i(t)`` each round, chosen adversarially within its clipping bound
``||c_i(t) - c_i'(t)|| <= Delta_i(t)`` (the sensitivity its release declares), adaptively from the observer's past
view. Neighbouring runs differ in ``i``'s contributions only.

**What is computed.** With the protocol's linear model (:mod:`privdist.privacy.pairwise.linear_protocol`) the view is
``Y = B S (h + g)`` per coordinate, ``g`` standard normal, ``S`` the noise stds (0 for inputs ``O`` knows) and
``h`` the target's contributions in units of its noise (``|h_s| <= r_s = Delta_i(s) / sigma_i(s) = 1/z_i(s)``, the
inverse of the noise multiplier its ledger declares). For a fixed difference ``h`` the two views are Gaussians with
the same covariance ``G = B S^2 B^T`` and means ``B S h`` apart, so the loss is exactly ``mu(h)``-GDP with

    mu(h)^2 = h^T M h,   M = A^T G^+ A,   A = the target's columns of B S       (Dong, Roth & Su 2019).

Adaptivity: whitening ``Y`` causally (rows in round order) splits it into per-round Gaussian mechanisms whose
squared sensitivities add up to ``mu(h)^2``; by fully adaptive composition of GDP (Smith & Thakurta 2022;
Koskela, Tobaben & Honkela 2023) the view is ``mu``-GDP whenever every possible sequence has
``mu(h) <= mu``. So the accountant reports

    mu_{O <- i} = sqrt(max_{||h_s|| <= r_s} h^T M h),

the worst case over every per-round contribution of the model's dimension (:func:`ball_quadratic_max`: exact when
``M`` is sign-consistent, else the certified semidefinite bound, always an upper bound), capped by the local-DP value
``sqrt(sum_s r_s^2)`` (``M`` is a block of a projection, so ``M <= I``). Epsilon at ``delta`` is that of
``mu``-GDP (Balle & Wang 2018; the formula of dp-accounting's ``get_epsilon_gaussian``, vectorised here and
checked against it in the tests; the summaries call dp-accounting itself).

**Computation.** Per observer set, ``G`` and its Cholesky factor; then, from one compiled recursion over rounds
(:mod:`privdist.privacy.pairwise.innovations`: a lag Gram for time-invariant protocols with separable noise, the
closed-loop adjoint for the whitening), for *every* target the row bounds ``||sum_s x_s||^2 <= mu^2 <=
sum_rows (sum_s |x_s|)^2`` of its whitened columns ``x_s``: where they meet within ``rtol`` (most pairs beyond a
few hops, whose whitened view barely mixes signs) they are the answer. The other pairs get ``M`` (accumulated in
the recursion for the targets within an adaptive hop radius, from impulse responses beyond it) and
:func:`ball_quadratic_max`, warm-started from the solutions of similar matrices. A singular ``G`` (a message that
is a function of earlier ones) falls back to a pivoted factor and ``M`` for every target. Every reported ``mu`` is a
certified upper bound within ``rtol`` (relative, in ``mu^2``) of a value an explicit contribution sequence attains.

**Assumption privdist cannot enforce.** The model treats every other agent's contribution as fixed (known to the
observer, independent of the target's data), as Muffliato (Cyffers et al. 2022, §4) and the matrix-factorization
analysis of decentralized learning (Bellet et al. 2025) do. It is exact for protocols whose contributions depend on
each agent's own data only (gossip averaging of fixed values). In gradient methods an agent's gradient is taken at
its own last release, which mixes the target's messages; that dependence, through messages the observer does not
see, is outside the model (and the target's own gradient depends on its own noise, not only on the observer's
view, which the adaptive argument above assumes). The per-pair numbers are therefore reported as ``status = "model"``, beside the local-DP
guarantee of :func:`privdist.privacy.privacy_report`, which needs no such assumption.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from numpy.linalg import LinAlgError
from scipy.linalg import cholesky, lapack, solve_triangular
from scipy.special import log_ndtr
from threadpoolctl import threadpool_limits

from ..._checks import check_int, check_probability
from ..._lazy import lazy
from ...errors import ShapeMismatchError, UnsupportedEventError, ValidationError
from ._recursion_kernel import compile_kernel
from .ball_quadratic import WarmStarts, ball_quadratic_max
from ..ledger import PrivacyLedger
from .innovations import (fisher_matrices, impulse_fisher, lag_covariance, recursion_maps, row_bounds,
                          separable_noise, whitened_sums)
from .linear_protocol import LinearProtocol, observed_rows, observer_ids, observer_view

dp_event = lazy("dp_accounting.dp_event")  # imported on first use (start-up time)

__all__ = ["THREAT_MODEL", "noise_multipliers", "pairwise_mu", "gdp_epsilons"]

THREAT_MODEL = ("observer set sees every message its members receive from other parties over the run and knows its "
                "own inputs and every other agent's contributions; the target's per-round contributions are "
                "adversarial within their declared sensitivity (clipping bound), chosen adaptively; loss of the "
                "whole view, exact Gaussian (GDP) accounting of the protocol's linear model")

#: pivots of the view covariance below this fraction of its largest diagonal are exact redundancies (an observed
#: message that is a function of earlier ones and of what the observer knows)
_RANK_TOL = 1e-10


def noise_multipliers(ledger: PrivacyLedger, rounds: int) -> np.ndarray:
    """``z_k(t)``, ``(rounds, N)``: the noise multiplier of each agent's release of each round, from the ledger.

    Raises:
        UnsupportedEventError: an agent does not release exactly one Gaussian per round (the linear-Gaussian model
            needs it; Laplace or pure-DP releases have no such accountant here).
    """
    N = ledger.n_agents
    z = np.zeros((rounds, N))
    for k in range(N):
        seq = []
        for release, count in ledger.entries(k):
            ev = release.event
            if isinstance(ev, dp_event.NonPrivateDpEvent):
                seq += [0.0] * count
            elif isinstance(ev, dp_event.GaussianDpEvent):
                seq += [float(ev.noise_multiplier)] * count
            else:
                raise UnsupportedEventError(f"pairwise accounting needs Gaussian releases; agent {k} declared "
                                            f"{type(ev).__name__}")
        if len(seq) != rounds:
            raise UnsupportedEventError(f"pairwise accounting needs one release per agent and round; agent {k} "
                                        f"declared {len(seq)} over {rounds} rounds")
        z[:, k] = seq
    return z


def _view_covariance(view, sigma: np.ndarray) -> np.ndarray:
    """``G = B S^2 B^T`` from the blocks of ``B`` (any protocol)."""
    G = np.zeros((view.m, view.m))
    for s, block in enumerate(view.blocks):
        if block.shape[0]:
            a = view.rows_from[s]
            BS = block * sigma[s]
            G[a:, a:] += BS @ BS.T
    return G


def _factor(G: np.ndarray):
    """Cholesky factor of ``G``: ``(L, None)`` in round order, or, when an observed message is an exact function of
    earlier ones and of what the observer knows (``G`` singular, e.g. a dual that the coordinator derives from the
    average it broadcasts), the pivoted factor ``(L, kept rows)`` with ``G[p, p] = L L^T``; ``(None, [])`` for an
    empty or noiseless view."""
    diag = np.diag(G)
    if G.shape[0] == 0 or diag.max() <= 0:
        return None, np.zeros(0, dtype=np.int64)
    try:
        L = cholesky(G, lower=True, check_finite=False)
        if (np.diag(L) ** 2).min() > _RANK_TOL * float(diag.max()):
            return L, None
    except LinAlgError:
        pass
    c, piv, rank, info = lapack.dpstrf(G, lower=1, tol=_RANK_TOL * float(diag.max()))
    if info < 0:  # pragma: no cover - LAPACK argument error
        raise ValidationError(f"pivoted Cholesky failed (info={info})")
    return np.tril(c)[:rank, :rank], (piv - 1)[:rank]


def _whitened_pivoted(view, L, kept, sigma: np.ndarray, tj: np.ndarray) -> np.ndarray:
    """``L^-1 A[kept]`` for the targets ``tj`` with the pivoted factor: ``(len(tj), T, rows)``."""
    T = len(view.blocks)
    A = np.zeros((view.m, T, tj.size))
    for s, block in enumerate(view.blocks):
        if block.shape[0]:
            A[view.rows_from[s]:, s, :] = block[:, tj] * sigma[s, tj]
    X = solve_triangular(L, A[kept].reshape(kept.size, -1), lower=True, check_finite=False)
    return np.ascontiguousarray(X.reshape(kept.size, T, tj.size).transpose(2, 1, 0))


def _noiseless_seen(view, r: np.ndarray, tj: np.ndarray) -> np.ndarray:
    """Targets among ``tj`` with a release without noise (``r = inf``) that reaches the view: their loss is inf."""
    bad = ~np.isfinite(r[:, tj])
    seen = np.zeros(tj.size, dtype=bool)
    for s in np.flatnonzero(bad.any(axis=1)):
        seen[bad[s]] |= np.any(view.blocks[s][:, tj[bad[s]]] != 0, axis=0)
    return seen


def pairwise_mu(protocol: LinearProtocol, z: np.ndarray, observers: Sequence, *, chunk: int = 128,
                threads: int | None = 1, rtol: float = 1e-3, workers: int = 1) -> dict:
    """``mu`` of every target agent against each observer set (module docstring).

    Args:
        protocol: the protocol's linear model.
        z: ``(T, N)`` declared noise multipliers (:func:`noise_multipliers`); 0 for a release without noise.
        observers: observer sets (each an int or a sequence of party ids, :func:`observer_ids`).
        chunk: agents per batch of ``T x T`` matrices on the pivoted path (a singular view covariance).
        threads: BLAS threads per process (``None``: the library's default). One by default: the work is many
            small products, and on the 2-core benchmark machine one thread was 3x faster than two even at 1,000
            agents (``benchmarks/bench_network_dp.py``).
        rtol: the relative gap (in ``mu^2``) allowed between the certified upper bound reported and the value of
            an explicit contribution sequence.
        workers: processes sharing the observer rows (forked, on Linux; elsewhere this process does every row).
            The values may differ between worker counts within ``rtol`` (the warm starts differ).

    Returns:
        ``{"mu": (n_obs, N), "mu_lower": (n_obs, N), "sdp": (n_obs, N) bool, "local_mu": (N,), "rank": int,
        "view_rows": [m per observer], "seconds": [per observer], "phase_seconds": {"covariance", "whitening",
        "fisher", "worst_case"}}`` (the phases, CPU seconds summed over workers: ``G`` and its factor; the
        recursion with the row bounds and the ``T x T`` matrices ``M`` of the open pairs; ``M`` on the pivoted
        path; the worst case over the balls); ``mu`` is NaN where the target is in the observer set,
        ``inf`` where a target's noiseless release reaches the view.

    Raises:
        ShapeMismatchError: ``z`` is not ``(T, N)``.
    """
    T, N = protocol.rounds, protocol.n_agents
    z = np.asarray(z, dtype=float)
    if z.shape != (T, N):
        raise ShapeMismatchError(f"noise multipliers must be (rounds, n_agents) = {(T, N)}, got {z.shape}")
    with np.errstate(divide="ignore"):
        r = np.where(z > 0, 1.0 / np.where(z > 0, z, 1.0), np.inf)  # Delta / sigma per target and round
    local = np.sqrt((r ** 2).sum(axis=0))
    sigma_all = z * protocol.sensitivity
    workers = check_int(workers, "workers", 1)
    job = (protocol, list(observers), sigma_all, r, local, chunk, threads, rtol)
    parts = [np.arange(w, len(observers), workers) for w in range(min(workers, len(observers)))]
    if len(parts) > 1 and sys.platform.startswith("linux"):  # fork is safe there (macOS: not with its BLAS)
        global _JOB
        compile_kernel()
        _JOB = job  # inherited by the forked workers: nothing to pickle but the observer indices
        try:
            with ProcessPoolExecutor(len(parts), mp_context=multiprocessing.get_context("fork")) as pool:
                results = list(pool.map(_work, parts))
        finally:
            _JOB = None
    else:
        results = [_rows(job, np.arange(len(observers)))]
        parts = [np.arange(len(observers))]
    out = {k: np.full((len(observers), N), np.nan) for k in ("mu", "mu_lower")}
    out["sdp"] = np.zeros((len(observers), N), dtype=bool)
    out.update(local_mu=local, view_rows=[0] * len(observers), seconds=[0.0] * len(observers), rank=0,
               phase_seconds=dict.fromkeys(("covariance", "whitening", "fisher", "worst_case"), 0.0))
    for idx, part in zip(parts, results):
        for k in ("mu", "mu_lower", "sdp"):
            out[k][idx] = part[k]
        for k in ("view_rows", "seconds"):
            for i, v in zip(idx.tolist(), part[k]):
                out[k][i] = v
        out["rank"] = max(out["rank"], part["rank"])
        for k, v in part["phase_seconds"].items():
            out["phase_seconds"][k] += v
    return out


_JOB = None  # the arguments of pairwise_mu while its forked workers run


def _work(indices: np.ndarray) -> dict:
    return _rows(_JOB, indices)


def _rows(job, indices: np.ndarray) -> dict:
    """The rows ``indices`` of :func:`pairwise_mu`'s output (observer sets ``observers[indices]``), one process."""
    protocol, observers, sigma_all, r, local, chunk, threads, rtol = job
    N = protocol.n_agents
    out = {k: np.full((len(indices), N), np.nan) for k in ("mu", "mu_lower")}
    out["sdp"] = np.zeros((len(indices), N), dtype=bool)
    out.update(view_rows=[], seconds=[], rank=0,
               phase_seconds=dict.fromkeys(("covariance", "whitening", "fisher", "worst_case"), 0.0))
    state = {"rtol": rtol, "warm": WarmStarts(), "radius": 2.0, "distances": None, "maps": None,  # shared by
             "sigma_all": sigma_all}  # the observers of this process
    with threadpool_limits(limits=threads, user_api="blas"):
        for o, i in enumerate(indices.tolist()):
            _one_observer(protocol, observers[i], sigma_all, r, local, out, o, chunk, state)
    return out


def _separable(state, members):
    """:func:`separable_noise` of an observer's noise stds from that of every agent's (zeroing the members'
    columns keeps a rank-one table rank one): once per run instead of once per observer."""
    if "separable" not in state:
        state["separable"] = separable_noise(state["sigma_all"])
    if state["separable"] is None:
        return None
    d, w = state["separable"]
    w = w.copy()
    w[members[members < w.size]] = 0.0
    return (d, w) if w.sum() > 0 else None


def _whitening(protocol, members, sigma, r, phases, state):
    """``(G, L, kept, J, view, rows)`` of one observer set: ``G`` from the lag recursion when the protocol allows
    it, else from the blocks of ``B`` (``view``); ``J = L^-1`` when ``G`` is non-singular (the closed-loop
    recursion of :mod:`.innovations` then gives every target's bounds), else None (the pivoted solve per chunk);
    ``rows``: the observed rows of each round."""
    t0 = time.perf_counter()
    rows = observed_rows(protocol, members)
    G = lag_covariance(protocol, rows, sigma, _separable(state, members)) if np.isfinite(r).all() else None
    view = J = None
    if G is None:
        view = observer_view(protocol, members)
        G = _view_covariance(view, sigma)
    L, kept = _factor(G)
    if L is not None and kept is None:
        J, info = lapack.dtrtri(L, lower=1)
        if info != 0:  # pragma: no cover - a non-singular triangular factor always inverts
            raise ValidationError(f"triangular inverse failed (info={info})")
    elif kept is not None and view is None:
        view = observer_view(protocol, members)
    phases["covariance"] += time.perf_counter() - t0
    return G, L, kept, J, view, rows


def _one_observer(protocol, observer, sigma_all, r, local, out, o, chunk, state) -> None:
    """Row ``o`` of :func:`pairwise_mu`'s output: every target against one observer set."""
    T, N = protocol.rounds, protocol.n_agents
    t0 = time.perf_counter()
    phases = out["phase_seconds"]
    members = observer_ids(protocol, observer)
    sigma = sigma_all.copy()
    sigma[:, members[members < N]] = 0.0  # the observer knows its own inputs
    finite = np.isfinite(r)
    G, L, kept, J, view, rows = _whitening(protocol, members, sigma, r, phases, state)
    if J is not None:
        targets = np.setdiff1d(np.arange(N), members)
        noiseless = None if view is None or finite.all() else _noiseless_seen(view, r, targets)
        _from_sums(protocol, members, targets, J, rows, np.where(finite, sigma * np.where(finite, r, 0.0), 0.0),
                   local, out, o, state, noiseless)
    for j0 in range(0, N, chunk) if J is None else ():  # chunks of target ids, the members dropped
        ids = np.arange(j0, min(N, j0 + chunk))
        tj = ids[~np.isin(ids, members)]
        if not tj.size:
            continue
        t1 = time.perf_counter()
        rr = np.where(finite[:, tj], r[:, tj], 0.0).T
        if L is None:
            M = np.zeros((tj.size, T, T))
        else:
            M = fisher_matrices(_whitened_pivoted(view, L, kept, np.where(finite, sigma, 0.0), tj))
            M *= rr[:, :, None] * rr[:, None, :]
        t2 = time.perf_counter()
        res = ball_quadratic_max(M, rtol=state["rtol"], warm=state["warm"])
        phases["fisher"] += t2 - t1
        phases["worst_case"] += time.perf_counter() - t2
        noiseless = np.zeros(tj.size, dtype=bool) if view is None or finite.all() else _noiseless_seen(view, r, tj)
        _store(out, o, tj, res["upper"], res["lower"], res["method"] == "sdp", local, noiseless)
        out["rank"] = res["rank"]
    out["view_rows"].append(G.shape[0])
    out["seconds"].append(time.perf_counter() - t0)


def _store(out, o, tj, upper, lower, sdp, local, noiseless=None) -> None:
    """Row ``o``, targets ``tj``: ``mu`` from the upper bound capped by local DP, ``mu_lower`` below it."""
    mu2 = np.minimum(upper, local[tj] ** 2)
    bad = np.zeros(tj.size, dtype=bool) if noiseless is None else noiseless
    out["mu"][o, tj] = np.where(bad, np.inf, np.sqrt(mu2))
    out["mu_lower"][o, tj] = np.where(bad, np.inf, np.sqrt(np.minimum(lower, mu2)))
    out["sdp"][o, tj] = sdp


def _from_sums(protocol, members, targets, J, rows, scale, local, out, o, state, noiseless) -> None:
    """Every target of one observer set from the closed-loop recursion: the row bounds of
    :func:`~privdist.privacy.pairwise.innovations.row_bounds` close the pairs where they meet within ``rtol`` (or reach the
    local-DP cap); the others get their matrix ``M`` and :func:`ball_quadratic_max`. ``M`` is accumulated during the
    recursion for the targets within ``state["radius"]`` hops (:func:`_next_radius`); an open pair farther away
    gets it from its impulse response (time-invariant protocols) or from a second recursion."""
    N, phases = protocol.n_agents, out["phase_seconds"]
    t0 = time.perf_counter()
    if state["distances"] is None:
        state["distances"] = protocol.distances()
    dist = state["distances"][members].min(axis=0)[:N]
    keep = targets[dist[targets] <= state["radius"]]
    if state["maps"] is None:
        state["maps"] = recursion_maps(protocol)
    S1, S2, Mk = whitened_sums(protocol, rows, J, scale, keep, maps=state["maps"])
    lower, upper = row_bounds(S1[targets], S2[targets])
    mu2 = np.minimum(upper, local[targets] ** 2)
    lower = np.minimum(lower, mu2)
    open_ = mu2 - lower > state["rtol"] * mu2
    need = targets[open_]
    if need.size:
        M = np.empty((need.size, protocol.rounds, protocol.rounds))
        inside = np.isin(need, keep)
        M[inside] = Mk[np.searchsorted(keep, need[inside])]
        missing = need[~inside]
        if missing.size:
            M[~inside] = (impulse_fisher(protocol, rows, J, scale, missing) if protocol.time_invariant
                          else whitened_sums(protocol, rows, J, scale, missing, maps=state["maps"])[2])
    _next_radius(state, dist[targets], dist[need], protocol.time_invariant)
    t1 = time.perf_counter()
    phases["whitening"] += t1 - t0
    sdp = np.zeros(targets.size, dtype=bool)
    if need.size:
        res = ball_quadratic_max(M, rtol=state["rtol"], warm=state["warm"])
        upper[open_] = np.minimum(upper[open_], res["upper"])
        lower[open_] = np.maximum(lower[open_], res["lower"])
        sdp[open_] = res["method"] == "sdp"
        out["rank"] = res["rank"]
    phases["worst_case"] += time.perf_counter() - t1
    _store(out, o, targets, upper, lower, sdp, local, noiseless)


#: cost of an open pair's ``M`` from its impulse response, in units of keeping a target in the recursion (measured
#: on the 1,000-agent benchmark: 0.6 ms against 0.2 ms)
_MISS_COST = 3.0


def _next_radius(state, dist, dist_open, direct: bool) -> None:
    """The hop radius of the targets whose ``M`` the next recursion keeps: with a cheap impulse response for the
    others (``direct``), the radius that would have cost least on the observers so far (kept targets against
    open pairs beyond it); else the largest distance of an open pair so far."""
    finite = np.isfinite(dist)
    top = int(dist[finite].max()) + 1 if finite.any() else 1
    hist = state.setdefault("hist", np.zeros((2, 1)))
    if hist.shape[1] < top + 1:
        hist = state["hist"] = np.pad(hist, ((0, 0), (0, top + 1 - hist.shape[1])))
    d_all = np.clip(np.where(finite, dist, top), 0, top).astype(int)
    d_open = np.clip(np.where(np.isfinite(dist_open), dist_open, top), 0, top).astype(int)
    hist[0] += np.bincount(d_all, minlength=hist.shape[1])
    hist[1] += np.bincount(d_open, minlength=hist.shape[1])
    if not direct:
        state["radius"] = max(state["radius"], float(d_open.max())) if d_open.size else state["radius"]
        return
    beyond = hist[1].sum() - np.cumsum(hist[1])
    state["radius"] = float(np.argmin(np.cumsum(hist[0]) + _MISS_COST * beyond))


def gdp_epsilons(mu, delta: float) -> np.ndarray:
    """Epsilon of ``mu``-GDP at ``delta`` for an array of ``mu`` (vectorised bisection of
    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, Balle & Wang 2018 Thm 8; the function
    dp-accounting's ``get_epsilon_gaussian(1/mu, delta)`` inverts). NaN stays NaN, ``inf`` gives ``inf``."""
    delta = check_probability(delta, "delta")
    mu = np.asarray(mu, dtype=float)
    out = np.full(mu.shape, np.nan)
    ok = np.isfinite(mu) & (mu > 0)
    out[mu == 0] = 0.0
    out[np.isinf(mu)] = np.inf
    m = mu[ok]

    def dlt(eps):
        a = np.exp(log_ndtr(-eps / m + m / 2))
        b = np.exp(eps + log_ndtr(-eps / m - m / 2))
        return a - b

    zero = dlt(np.zeros_like(m)) <= delta
    hi = np.ones_like(m)
    for _ in range(60):
        grow = dlt(hi) > delta
        if not grow.any():
            break
        hi = np.where(grow, 2 * hi, hi)
    lo = np.zeros_like(m)
    for _ in range(56):  # the bracket's width 2^-56 hi: below the rounding of hi
        mid = 0.5 * (lo + hi)
        above = dlt(mid) > delta
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out[ok] = np.where(zero, 0.0, hi)
    return out
