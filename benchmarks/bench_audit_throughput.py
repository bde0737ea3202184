"""Benchmark ``audit_throughput``: releases per second of a one-round DPSGD audit vs the plain simulator loop.

The audit's releases (worst-case canary on the audit's default problem: D-ZOA's ridge data on 2 agents joined by
one edge; one round, ``--jobs 1``) come from
:func:`privdist.audit.collect_releases` (disjoint copies of the network in one simulator run, after the exact
independence check). The baseline is the bare simulator step loop on the same problem and network
(``SimulatorBackend.step_agents`` plus routing, no ledger, no transcript), where every round yields one release
of the audited agent (and one of the other agent).

Target (issue 13): audit releases per second >= 0.5 x the plain loop's releases of the audited agent per second.
The ratio per release of *any* agent is reported too (the audit uses one agent of each copy).
"""

from __future__ import annotations

import time

from privdist.algorithms import make_algorithm
from privdist.audit import collect_releases, neighbours, problem_for
from privdist.runtime import Router, SimulatorBackend


def _plain_rounds_per_second(algo, problem, network, rounds: int) -> float:
    be = SimulatorBackend()
    router = Router(algo.messages(problem, network), network)
    t0 = time.perf_counter()
    out, cout = be.start(algo, problem, network, 0, 0)
    for t in range(1, rounds + 1):
        out = be.step_agents(t, router.agent_inbox(out, cout, t))
    return rounds / (time.perf_counter() - t0)


def run_benchmark(releases: int = 10000, rounds: int = 5000) -> dict:
    algo = make_algorithm("dpsgd")
    problem, network = problem_for(algo)
    d0, d1 = neighbours(problem, "worst")
    collect_releases(algo, d0, d1, network, 1, 200)  # warm-up
    best_audit = 0.0
    for _ in range(2):
        t0 = time.perf_counter()
        x0, x1, info = collect_releases(algo, d0, d1, network, 1, releases)
        best_audit = max(best_audit, (len(x0) + len(x1)) / (time.perf_counter() - t0))
    plain = max(_plain_rounds_per_second(algo, d0, network, rounds) for _ in range(2))
    K = network.n_agents
    ratio = best_audit / plain
    return {"name": "audit_throughput", "mode": info["mode"], "audit_releases_per_second": best_audit,
            "plain_target_releases_per_second": plain, "plain_agent_releases_per_second": plain * K,
            "ratio_per_target_release": ratio, "ratio_per_agent_release": best_audit / (plain * K),
            "target_ratio": 0.5, "met": bool(ratio >= 0.5)}


if __name__ == "__main__":
    import json

    print(json.dumps(run_benchmark(), indent=1))
