"""The per-pair section of a privacy report: observer x target matrix, summaries and the distance profile.

:func:`pairwise_report` runs the pairwise accountant (:mod:`privdist.privacy.pairwise.network_dp`) on a protocol's linear
model with the noise multipliers the ledger declares, and returns a JSON-ready dictionary: the ``mu`` (GDP) and
epsilon matrices (rows: observers, columns: target agents), each target's local-DP value beside them (the same
releases, observed in full), min / median / max over pairs, and the same statistics by hop distance between observer
and target in the protocol's communication graph, with the ratio local / pair, and by hop distance and number of
*common neighbours* (parties adjacent to both the target and a member of the observer set: for one observer, the
paths of length 2 between them). The common neighbours explain the spread at distance 2: each forwards the
target's message to the observer one round later through its own noise, another view of the target, so pairs
with two common neighbours learn more than pairs with one. Medians are lower medians (the value of an actual pair); the
summary epsilons are recomputed with dp-accounting (``get_epsilon_gaussian``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ..._checks import check_probability
from ..._lazy import lazy
from ...errors import ValidationError
from ..ledger import PrivacyLedger
from .linear_protocol import LinearProtocol, observer_ids
from .network_dp import THREAT_MODEL, gdp_epsilons, noise_multipliers, pairwise_mu

_gaussian = lazy("dp_accounting.gaussian_mechanism")

__all__ = ["default_observers", "epsilon_of_mu", "pairwise_report", "common_neighbours", "MAX_ALL_OBSERVERS"]

#: up to this many agents every agent is an observer by default; beyond, an evenly spaced sample of
#: :data:`SAMPLED_OBSERVERS` (the cost is one accountant run per observer)
MAX_ALL_OBSERVERS = 200
SAMPLED_OBSERVERS = 20


def default_observers(protocol: LinearProtocol) -> list:
    """Every agent (and the coordinator, if any) up to :data:`MAX_ALL_OBSERVERS` agents, else
    :data:`SAMPLED_OBSERVERS` evenly spaced agent ids (and the coordinator)."""
    N = protocol.n_agents
    agents = (list(range(N)) if N <= MAX_ALL_OBSERVERS
              else sorted({int(round(x)) for x in np.linspace(0, N - 1, SAMPLED_OBSERVERS)}))
    return agents + ([N] if protocol.has_coordinator else [])


def _label(protocol: LinearProtocol, ids: np.ndarray) -> str:
    names = ["coordinator" if i == protocol.n_agents else f"agent {i}" for i in ids.tolist()]
    return names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"


def epsilon_of_mu(mu: float, delta: float) -> float:
    """dp-accounting's epsilon of ``mu``-GDP (a Gaussian mechanism of noise multiplier ``1/mu``)."""
    if not math.isfinite(mu):
        return math.inf
    return 0.0 if mu <= 0 else float(_gaussian.get_epsilon_gaussian(1.0 / mu, delta))


_ORDER = ("min", "median", "max")


def _stats(values: np.ndarray) -> dict:
    """Min, lower median and max of the non-NaN ``values``, all read from one sorted copy (so ordered); ``None``
    each when there is none."""
    v = np.sort(values[~np.isnan(values)])
    if v.size == 0:
        return dict.fromkeys(_ORDER)
    return {"min": float(v[0]), "median": float(v[(v.size - 1) // 2]), "max": float(v[-1])}


def _epsilons(stats: dict, delta: float) -> dict:
    """dp-accounting's epsilon of each ``mu`` statistic, made non-decreasing in order (issue 40).

    Epsilon is non-decreasing in ``mu``, but ``get_epsilon_gaussian`` finds each value by a root search to an
    absolute 1e-12: two ``mu`` a rounding apart (the pairs of a ring at one distance) can come back in the wrong
    order, about 1e-15 apart. Each statistic is raised to the one below it (a running maximum), which moves a
    value only within the search's own error and never lowers one, so ``min <= median <= max`` by construction.
    """
    if stats["min"] is None:
        return dict.fromkeys(_ORDER)
    eps = np.maximum.accumulate([epsilon_of_mu(stats[k], delta) for k in _ORDER])
    return {k: float(e) for k, e in zip(_ORDER, eps)}


def _summary(mu: np.ndarray, local_mu: np.ndarray, ratio: np.ndarray, delta: float) -> dict:
    """``pairs`` and min / median / max of ``mu``, its epsilon, the local epsilon and the ratio local / pair (the
    summaries of a report with no pair are ``None``)."""
    m = _stats(mu)
    return {"pairs": int(mu.size), "mu": m, "epsilon": _epsilons(m, delta),
            "local_epsilon": _epsilons(_stats(local_mu), delta), "local_over_pair_epsilon": _stats(ratio)}


def common_neighbours(protocol: LinearProtocol, sets: list) -> np.ndarray:
    """``(len(sets), N)``: for each observer set and target agent, the parties other than the set's members and the
    target adjacent (in the undirected communication graph) to both the target and some member."""
    N = protocol.n_agents
    g = sp.csr_array(protocol.links)
    adj = sp.csr_array(((g + g.T) > 0).astype(np.int64))
    adj.setdiag(0)
    adj.eliminate_zeros()
    out = np.zeros((len(sets), N), dtype=np.int64)
    for o, members in enumerate(sets):
        near = np.asarray(adj[members].sum(axis=0)).ravel() > 0  # parties adjacent to a member
        near[members] = False
        out[o] = adj[:N] @ near.astype(np.int64)  # per target: its neighbours among them (never itself: no loops)
    return out


def _profile(mu, local_mu, ratio, dist, common, pair, delta) -> tuple[list, list]:
    """The statistics by hop distance, and by (hop distance, common neighbours)."""
    by_distance, by_common = [], []
    local = np.broadcast_to(local_mu, mu.shape)
    for d in np.unique(dist[pair]):
        sel = pair & (dist == d)
        dd = float(d) if not math.isfinite(d) else int(d)
        by_distance.append({"distance": dd, **_summary(mu[sel], local[sel], ratio[sel], delta)})
        for c in np.unique(common[sel]):
            sub = sel & (common == c)
            by_common.append({"distance": dd, "common_neighbours": int(c),
                              **_summary(mu[sub], local[sub], ratio[sub], delta)})
    return by_distance, by_common


def _jsonable(matrix: np.ndarray) -> list:
    return [[None if not math.isfinite(x) and not math.isinf(x) else float(x) for x in row] for row in matrix]


def pairwise_report(protocol: LinearProtocol, ledger: PrivacyLedger, delta: float, observers=None, *,
                    rtol: float = 1e-3, workers: int = 1) -> dict:
    """The per-pair section of the privacy report (module docstring).

    Args:
        protocol: the run's linear model (``algorithm.linear_protocol(problem, network, rounds)``).
        ledger: the run's ledger (its declared Gaussian releases give the noise multipliers).
        delta: delta of every epsilon.
        observers: observer sets (ints or sequences of party ids); default :func:`default_observers`.
        rtol: relative gap allowed between each pair's certified upper bound on ``mu^2`` (the value reported) and
            a lower bound attained by an explicit contribution sequence (:func:`~.network_dp.pairwise_mu`): the
            default 0.1 % in ``mu^2`` is 0.05 % in ``mu``. A larger one is much faster on large matrices
            (``benchmarks/bench_network_dp.py`` times the full 1,000 x 1,000 matrix at 2e-2, 1e-2 and 1e-3).
        workers: processes sharing the observer rows (forked; 1: this process).

    Returns:
        ``{"model", "status": "model", "threat_model", "assumptions", "delta", "observers", "mu", "epsilon",
        "local": {"mu", "epsilon"}, "bound", "summary", "by_distance", "by_distance_common", "view_rows",
        "phase_seconds", "seconds"}`` (matrices as
        lists, ``None`` on the diagonal); ``status`` is ``"model"`` because the per-pair numbers rest on the
        model's assumptions (``assumptions``), unlike the local-DP guarantee.

    Raises:
        ValidationError: the ledger and protocol disagree on the number of agents.
        UnsupportedEventError: releases that are not one Gaussian per agent and round.
    """
    delta = check_probability(delta, "delta")
    if ledger.n_agents != protocol.n_agents:
        raise ValidationError(f"the ledger has {ledger.n_agents} agents, the protocol {protocol.n_agents}")
    t0 = time.perf_counter()
    observers = default_observers(protocol) if observers is None else list(observers)
    sets = [observer_ids(protocol, o) for o in observers]
    z = noise_multipliers(ledger, protocol.rounds)
    res = pairwise_mu(protocol, z, sets, rtol=rtol, workers=workers)
    mu, local_mu = res["mu"], res["local_mu"]
    eps = gdp_epsilons(mu, delta)
    local_eps = {v: epsilon_of_mu(v, delta) for v in np.unique(local_mu).tolist()}
    local_eps_arr = np.array([local_eps[v] for v in local_mu.tolist()])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = local_eps_arr[None, :] / eps
    dist_all = protocol.distances()
    dist = np.array([dist_all[s].min(axis=0)[: protocol.n_agents] for s in sets])
    pair = np.isfinite(mu) | np.isinf(mu)
    by_distance, by_common = _profile(mu, local_mu, ratio, dist, common_neighbours(protocol, sets), pair, delta)
    gap = (mu - res["mu_lower"])[pair] / np.where(mu[pair] > 0, mu[pair], 1.0)
    assumptions = list(protocol.notes)
    if not all(r.guarantee for a in range(ledger.n_agents) for r, _ in ledger.entries(a)):
        assumptions.append("some releases are claims only (an assumption privdist does not enforce): the local "
                           "guarantee is inf and the per-pair values compose the releases as declared")
    return {"model": protocol.name, "status": "model", "threat_model": THREAT_MODEL, "assumptions": assumptions,
            "delta": delta, "observers": [s.tolist() for s in sets],
            "observer_labels": [_label(protocol, s) for s in sets],
            "mu": _jsonable(mu), "epsilon": _jsonable(eps), "distance": _jsonable(np.where(pair, dist, np.nan)),
            "local": {"mu": local_mu.tolist(), "epsilon": local_eps_arr.tolist()},
            "bound": {"sdp_pairs": int(res["sdp"].sum()), "max_relative_gap": float(gap.max()) if gap.size else 0.0,
                      "rank": int(res["rank"]), "rtol": rtol},
            "summary": _summary(mu[pair], np.broadcast_to(local_mu, mu.shape)[pair], ratio[pair], delta),
            "by_distance": by_distance, "by_distance_common": by_common, "view_rows": list(res["view_rows"]),
            "phase_seconds": dict(res["phase_seconds"]),
            "seconds": time.perf_counter() - t0}
