"""Benchmark of the pairwise (network DP) accountant (issue 29).

1. **Scale**: DPSGD on a random 4-regular graph of 1,000 agents, 100 rounds, total budget epsilon = 1 per agent
   (delta = 1e-5). The run's ledger gives the declared noise; ``pairwise_report`` with **every agent as observer**
   computes the full 1,000 x 1,000 per-pair matrix (999,000 pairs) in two forked workers (the machine's two
   cores), at ``rtol = 2e-2`` (each value a certified upper bound within 1 % in ``mu`` of an attained one), at
   ``1e-2`` and at the report's default ``1e-3``. Reports the wall-clock seconds, the seconds per observer row, the CPU
   seconds of each phase summed over the workers (covariance, the recursion with the row bounds and the open
   pairs' ``M``, ``M`` on the pivoted path, the worst case), the largest gap, the peak resident memory of this
   process (which also held the run) and of a worker, and the load average before and after. Issue 29's target:
   under 60 s and 8 GB.
2. **Issue 29's "done when" case**: DPSGD on a random 4-regular graph of 100 agents, 30 rounds, total epsilon = 1:
   the full 100 x 100 matrix, min / median / max per-pair epsilon by hop distance and by (hop distance, common
   neighbours), with the ratio local / pair; the same for degrees 3, 6 and 8.

Run as a script: ``python benchmarks/bench_network_dp.py`` (writes ``benchmarks/results/network_dp.json``);
``--quick`` runs 100 observer rows of the large case instead of all 1,000 (and does not write the results).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from privdist.algorithms import DPSGD
from privdist.data import dzoa_regression, horizontal_partition
from privdist.network import random_regular
from privdist.privacy.pairwise.network_report import pairwise_report
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.runtime import run

__all__ = ["run_benchmark"]

DELTA = 1e-5
OUT = Path(__file__).resolve().parent / "results" / "network_dp.json"


def _case(n: int, degree: int, rounds: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    net = random_regular(n, degree, rng)
    ds = dzoa_regression(rng, n_agents=n, samples_per_agent=10, n_features=5)
    problem = HorizontalERM(horizontal_partition(ds.X, ds.y, n_agents=n), make_loss("squared"),
                            make_regularizer("l2"), 1.0)
    alg = DPSGD(alpha0=0.3, epsilon=1.0, delta=DELTA, budget="total", gaussian_constant=2.0).for_rounds(rounds)
    t0 = time.perf_counter()
    res = run(alg, problem, net, rounds, seed=seed, transcript="none")
    return alg.linear_protocol(problem, net, rounds), res.ledger, time.perf_counter() - t0


def _profile(section: dict, key: str = "by_distance") -> list[dict]:
    return [{k: d[k] for k in ("distance", "common_neighbours", "pairs", "epsilon", "local_over_pair_epsilon")
             if k in d} for d in section[key]]


def _peak_gb(who) -> float:
    """Peak resident memory of this process (``RUSAGE_SELF``) or of its largest finished child
    (``RUSAGE_CHILDREN``: the forked workers), in GB."""
    kb = resource.getrusage(who).ru_maxrss  # kilobytes on Linux
    return kb / 1024 ** 2 if sys.platform != "darwin" else kb / 1024 ** 3


def _large(protocol, ledger, run_s: float, observers: int, workers: int, rtol: float) -> dict:
    load_before = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    sec = pairwise_report(protocol, ledger, DELTA, observers=range(observers), rtol=rtol, workers=workers)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"agents": 1000, "degree": 4, "rounds": 100, "observers": observers, "pairs": sec["summary"]["pairs"],
            "rtol": rtol, "workers": workers, "run_seconds": run_s, "report_seconds": seconds,
            "report_cpu_seconds_main_process": cpu, "seconds_per_observer_row": seconds / observers,
            "phase_cpu_seconds": sec["phase_seconds"], "view_rows_per_observer": sorted(set(sec["view_rows"])),
            "peak_rss_gb": _peak_gb(resource.RUSAGE_SELF), "peak_rss_gb_workers": _peak_gb(resource.RUSAGE_CHILDREN),
            "load_average_before": load_before, "load_average_after": os.getloadavg(),
            "local_epsilon": sec["summary"]["local_epsilon"], "by_distance": _profile(sec),
            "by_distance_common": [d for d in _profile(sec, "by_distance_common") if d["distance"] <= 2],
            "sdp_pairs": sec["bound"]["sdp_pairs"], "max_relative_gap": sec["bound"]["max_relative_gap"]}


def run_benchmark(observers: int = 1000, workers: int = 2) -> dict:
    """Both parts of the module docstring; returns (and, for all 1,000 observers, writes) the measured numbers."""
    out = {"name": "network_dp", "delta": DELTA}
    protocol, ledger, run_s = _case(1000, 4, 100)
    out["large"] = [_large(protocol, ledger, run_s, observers, workers, rtol) for rtol in (2e-2, 1e-2, 1e-3)]
    out["done_when"] = []
    for degree in (4, 3, 6, 8):
        protocol, ledger, _ = _case(100, degree, 30)
        t0 = time.perf_counter()
        sec = pairwise_report(protocol, ledger, DELTA)
        out["done_when"].append({"agents": 100, "degree": degree, "rounds": 30, "seconds": time.perf_counter() - t0,
                                 "pairs": sec["summary"]["pairs"], "local_epsilon": sec["summary"]["local_epsilon"],
                                 "summary": sec["summary"], "by_distance": _profile(sec),
                                 "by_distance_common": _profile(sec, "by_distance_common"),
                                 "sdp_pairs": sec["bound"]["sdp_pairs"],
                                 "max_relative_gap": sec["bound"]["max_relative_gap"]})
    if observers == 1000:
        OUT.parent.mkdir(exist_ok=True)
        OUT.write_text(json.dumps(out, indent=1) + "\n")
    return out


def _print(out: dict) -> None:
    for big in out["large"]:
        ph = ", ".join(f"{k} {v:.0f} s" for k, v in big["phase_cpu_seconds"].items())
        print(f"1,000 agents x 100 rounds, rtol {big['rtol']:g}, {big['workers']} workers: {big['observers']} "
              f"observer rows x 1,000 targets ({big['pairs']} pairs) in {big['report_seconds']:.1f} s "
              f"({big['seconds_per_observer_row']:.3f} s per row; CPU: {ph}); max gap in mu "
              f"{big['max_relative_gap']:.2%}; peak RSS {big['peak_rss_gb']:.2f} GB (workers "
              f"{big['peak_rss_gb_workers']:.2f} GB); load average before {big['load_average_before'][0]:.2f}, "
              f"after {big['load_average_after'][0]:.2f}")
    for case in out["done_when"]:
        print(f"100 agents, degree {case['degree']}, 30 rounds: full matrix in {case['seconds']:.1f} s; local eps "
              f"{case['local_epsilon']['max']:.3g}")
        for d in case["by_distance"] + [d for d in case["by_distance_common"] if d["common_neighbours"]]:
            e, r = d["epsilon"], d["local_over_pair_epsilon"]
            what = (f"distance {d['distance']}" if "common_neighbours" not in d else
                    f"distance {d['distance']}, {d['common_neighbours']} common neighbour(s)")
            print(f"  {what}: eps {e['min']:.3g} / {e['median']:.3g} / {e['max']:.3g}, "
                  f"local / pair {r['min']:.2f} / {r['median']:.2f} / {r['max']:.2f} ({d['pairs']} pairs)")


if __name__ == "__main__":
    _print(run_benchmark(100 if "--quick" in sys.argv[1:] else 1000))
