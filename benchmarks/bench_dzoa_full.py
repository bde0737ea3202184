"""Benchmark ``dzoa_full``: projected wall time of ``privdist reproduce dzoa`` in full mode (S0 + S1, issue 14).

For every run of every S0/S1 catalog entry (full mode: every sweep point) one trial is built and the algorithm is
timed over ``PROBE_ROUNDS`` rounds (setup included once); the full-mode cost is projected as
``per-round seconds x rounds x trials`` (D-ZOA's per-round cost does not depend on the round: ``J_k`` and ``T`` are
fixed), summed, and divided by the 2 jobs of ``--jobs 2``. Target: < 3600 s wall on this 2-core machine. Reports
the projection per entry and the three most expensive runs, so the result says where the time goes.
"""

from __future__ import annotations

import time

from privdist.algorithms import make_algorithm
from privdist.experiments.build import build_trial
from privdist.experiments.catalog import experiments_of_paper
from privdist.runtime import run as run_algorithm

__all__ = ["run_benchmark"]

PROBE_ROUNDS = 2
JOBS = 2
TARGET_SECONDS = 3600.0


def run_benchmark(probe_rounds: int = PROBE_ROUNDS) -> dict:
    per_spec, per_run = {}, []
    for spec in experiments_of_paper("dzoa"):
        built = build_trial(spec, 0, seed=spec.seed)
        total = 0.0
        for rs in spec.runs:
            t0 = time.perf_counter()
            run_algorithm(make_algorithm(rs.algorithm, **rs.params), built.problem, built.network, probe_rounds,
                          seed=spec.seed, trial=0, metrics={}, transcript="none")
            sec = (time.perf_counter() - t0) / probe_rounds * spec.rounds * spec.trials
            total += sec
            per_run.append((sec, f"{spec.name}: {rs.label}"))
        per_spec[spec.name] = total
    serial = sum(per_spec.values())
    out = {"projected_serial_seconds": serial, "projected_wall_seconds_jobs2": serial / JOBS,
           "target_wall_seconds": TARGET_SECONDS, "meets_target": serial / JOBS < TARGET_SECONDS,
           "probe_rounds": probe_rounds}
    out.update({f"spec {k} (serial s)": v for k, v in sorted(per_spec.items())})
    for i, (sec, lab) in enumerate(sorted(per_run, reverse=True)[:3]):
        out[f"top{i + 1}"] = f"{lab}: {sec:.0f} s"
    return out


if __name__ == "__main__":
    for k, v in run_benchmark().items():
        print(f"{k:40s} {v}")
