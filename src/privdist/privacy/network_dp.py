"""Pairwise (network) DP of linear-Gaussian protocols: what an observer's whole view reveals about one agent.

**Threat model.** An honest-but-curious observer set ``O`` (one agent, colluding agents, or the coordinator)
sees every message its members receive from other parties over the whole run, knows its members' own inputs
(their contributions and noise), the protocol, the public parameters and every other agent's contributions. The
target ``i`` (not in ``O``) contributes ``c_i(t)`` each round, chosen adversarially within its clipping bound
``||c_i(t) - c_i'(t)|| <= Delta_i(t)`` (the sensitivity its release declares), adaptively from the observer's past
view. Neighbouring runs differ in ``i``'s contributions only.

**What is computed.** With the protocol's linear model (:mod:`privdist.privacy.linear_protocol`) the view is
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

**Computation.** Per observer set, ``G`` and its Cholesky factor, then every target's ``M`` from the whitened
columns; :mod:`privdist.privacy.innovations` gives both by recursions over rounds (a lag Gram for time-invariant
protocols with separable noise, the closed-loop adjoint for the whitening) instead of the dense blocks of ``B``;
a singular ``G`` (a message that is a function of earlier ones) falls back to a pivoted factor.

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

import time
from collections.abc import Sequence

import numpy as np
from numpy.linalg import LinAlgError
from scipy.linalg import cholesky, lapack, solve_triangular
from scipy.special import log_ndtr
from threadpoolctl import threadpool_limits

from .._checks import check_probability
from .._lazy import lazy
from ..errors import ShapeMismatchError, UnsupportedEventError, ValidationError
from .ball_quadratic import ball_quadratic_max
from .ledger import PrivacyLedger
from .innovations import fisher_matrices, lag_covariance, whitened_columns
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
                threads: int | None = 1) -> dict:
    """``mu`` of every target agent against each observer set (module docstring).

    Args:
        protocol: the protocol's linear model.
        z: ``(T, N)`` declared noise multipliers (:func:`noise_multipliers`); 0 for a release without noise.
        observers: observer sets (each an int or a sequence of party ids, :func:`observer_ids`).
        chunk: agents per batch of ``T x T`` matrices (the whitened columns of all agents, ``N T m`` floats for
            ``m`` observed messages, are kept per observer).
        threads: BLAS threads (``None``: the library's default). One by default: the work is many small
            products, and on the 2-core benchmark machine one thread was 3x faster than two even at 1,000 agents
            (``benchmarks/bench_network_dp.py``).

    Returns:
        ``{"mu": (n_obs, N), "mu_lower": (n_obs, N), "sdp": (n_obs, N) bool, "local_mu": (N,), "rank": int,
        "view_rows": [m per observer], "seconds": [per observer], "phase_seconds": {"covariance", "whitening",
        "fisher", "worst_case"}}`` (the phases: ``G`` and its factor, the whitened columns, the ``T x T``
        matrices ``M``, their worst case over the balls); ``mu`` is NaN where the target is in the observer set,
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
    out = {k: np.full((len(observers), N), np.nan) for k in ("mu", "mu_lower")}
    out["sdp"] = np.zeros((len(observers), N), dtype=bool)
    out.update(local_mu=local, view_rows=[], seconds=[], rank=0,
               phase_seconds=dict.fromkeys(("covariance", "whitening", "fisher", "worst_case"), 0.0))
    buffers: dict = {}  # the whitened columns' buffer, reused across observers with the same rows per round
    with threadpool_limits(limits=threads, user_api="blas"):
        for o, observer in enumerate(observers):
            _one_observer(protocol, observer, sigma_all, r, local, out, o, chunk, buffers)
    return out


def _whitening(protocol, members, sigma, r, buffers, phases):
    """``(G, L, kept, X, view, first_rows)`` of one observer set: ``G`` from the lag recursion when the protocol
    allows it, else from the blocks of ``B`` (``view``); ``X``, the whitened columns in the ball's units, from the
    closed-loop recursion (:mod:`.innovations`) when ``G`` is non-singular (else None: the pivoted solve per chunk);
    ``first_rows``: the first message row of each round."""
    t0 = time.perf_counter()
    finite = np.isfinite(r)
    rows = observed_rows(protocol, members)
    first_rows = np.cumsum([0] + [q.shape[0] for q in rows])[:-1]
    G = lag_covariance(protocol, rows, sigma) if finite.all() else None
    view = None
    if G is None:
        view = observer_view(protocol, members)
        G = _view_covariance(view, sigma)
    L, kept = _factor(G)
    t1 = time.perf_counter()
    X = None
    if L is not None and kept is None:
        J, info = lapack.dtrtri(L, lower=1)
        if info != 0:  # pragma: no cover - a non-singular triangular factor always inverts
            raise ValidationError(f"triangular inverse failed (info={info})")
        key = tuple(q.shape[0] for q in rows)  # the buffer's zero pattern: the rows per round
        buf = buffers.pop(key, None)
        buffers.clear()
        # the target's inputs in units of its ball: sigma * r = Delta, its sensitivity
        X = buffers[key] = whitened_columns(protocol, rows, J, np.where(finite, sigma * np.where(finite, r, 0.0), 0.0),
                                            out=buf)
    elif kept is not None and view is None:
        view = observer_view(protocol, members)
    phases["covariance"] += t1 - t0
    phases["whitening"] += time.perf_counter() - t1
    return G, L, kept, X, view, first_rows


def _one_observer(protocol, observer, sigma_all, r, local, out, o, chunk, buffers) -> None:
    """Row ``o`` of :func:`pairwise_mu`'s output: every target against one observer set."""
    T, N = protocol.rounds, protocol.n_agents
    t0 = time.perf_counter()
    phases = out["phase_seconds"]
    members = observer_ids(protocol, observer)
    sigma = sigma_all.copy()
    sigma[:, members[members < N]] = 0.0  # the observer knows its own inputs
    finite = np.isfinite(r)
    G, L, kept, X, view, first_rows = _whitening(protocol, members, sigma, r, buffers, phases)
    for j0 in range(0, N, chunk):  # chunks of agent ids (slices of X), the members dropped
        ids = np.arange(j0, min(N, j0 + chunk))
        is_target = ~np.isin(ids, members)
        tj = ids[is_target]
        if not tj.size:
            continue
        t1 = time.perf_counter()
        rr = np.where(finite[:, tj], r[:, tj], 0.0).T
        if L is None:
            M = np.zeros((tj.size, T, T))
        elif X is not None:
            M = fisher_matrices(X[j0:j0 + ids.size], first_rows)[is_target]
        else:
            M = fisher_matrices(_whitened_pivoted(view, L, kept, np.where(finite, sigma, 0.0), tj))
            M *= rr[:, :, None] * rr[:, None, :]
        t2 = time.perf_counter()
        res = ball_quadratic_max(M)
        phases["fisher"] += t2 - t1
        phases["worst_case"] += time.perf_counter() - t2
        mu2 = np.minimum(res["upper"], local[tj] ** 2)
        noiseless = np.zeros(tj.size, dtype=bool) if view is None or finite.all() else _noiseless_seen(view, r, tj)
        out["mu"][o, tj] = np.where(noiseless, np.inf, np.sqrt(mu2))
        out["mu_lower"][o, tj] = np.where(noiseless, np.inf, np.sqrt(np.minimum(res["lower"], mu2)))
        out["sdp"][o, tj] = res["method"] == "sdp"
        out["rank"] = res["rank"]
    out["view_rows"].append(G.shape[0])
    out["seconds"].append(time.perf_counter() - t0)


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
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        above = dlt(mid) > delta
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out[ok] = np.where(zero, 0.0, hi)
    return out
