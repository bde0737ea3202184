"""Benchmark ``laadmm_adult``: l-AADMM on Adult with 100 agents (S3, spec §4.10).

Measures, on trial 0 of ``s3_fig3`` (Adult, 100 agents, complete graph): the seconds per ADMM iteration of
l-AADMM with l = 10 (metric evaluation included, as in the reproduction), the per-round cost of every baseline
of Fig. 3, the trial build time, and from them the projected wall time of the whole S3 reproduction (all four
panels, 10 trials, sequential). ``run_benchmark(full=True)`` instead runs ``privdist reproduce laadmm``
(10 trials) into a temporary directory and reports its measured wall time. Target (issue 5): the full
reproduction in under 600 s on this machine.
"""

from __future__ import annotations

import tempfile
import time

from privdist.algorithms import make_algorithm
from privdist.experiments import experiments_of_paper, run_experiment
from privdist.experiments.build import build_trial
from privdist.runtime import run

TARGET_SECONDS = 600.0


def _per_round(spec, built, rounds: int) -> dict[str, float]:
    out = {}
    for rs in spec.runs:
        alg = make_algorithm(rs.algorithm, **rs.params)
        t0 = time.perf_counter()
        run(alg, built.problem, built.network, rounds, seed=spec.seed, trial=0, metrics=built.metrics,
            transcript="none")
        out[rs.label] = (time.perf_counter() - t0) / rounds
    return out


def run_benchmark(rounds: int = 5, full: bool = False) -> dict:
    specs = {s.name: s for s in experiments_of_paper("laadmm")}
    result = {"name": "laadmm_adult", "target_seconds": TARGET_SECONDS}
    if full:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            for spec in specs.values():
                run_experiment(spec, f"{out}/{spec.name}", progress=False)
        result["reproduction_seconds"] = time.perf_counter() - t0
        result["meets_target"] = result["reproduction_seconds"] <= TARGET_SECONDS
        return result
    t0 = time.perf_counter()
    built = build_trial(specs["s3_fig3"], 0)
    build_s = time.perf_counter() - t0
    projected, per_round = 0.0, {}
    for name, spec in specs.items():
        costs = _per_round(spec, built, rounds)
        per_round.update({f"{name}::{k}": v for k, v in costs.items()})
        projected += spec.trials * (build_s + spec.rounds * sum(costs.values()))
    result.update({"seconds_per_iteration_laadmm_l10": per_round["s3_fig3::l-AADMM eps=1.0"],
                   "seconds_build_trial": build_s, "seconds_per_round": per_round,
                   "projected_reproduction_seconds": projected,
                   "meets_target": projected <= TARGET_SECONDS})
    return result


if __name__ == "__main__":
    print(run_benchmark())
