"""Benchmark ``dzoa_full``: projected wall time of ``privdist reproduce dzoa`` in full mode (S0 + S1, issue 14).

Every run of every S0/S1 catalog entry (full mode: every sweep point) goes through the runner's own
:func:`~privdist.experiments.runner.run_trials` (data, ``init``, metrics, transcript digest, privacy report; a
batch of trials as the runner forms them) twice, with ``R1`` and ``R2`` rounds, timed in process CPU
time (the machine is shared; wall time under load is
several times larger); the difference gives the per-round cost, the rest the fixed per-trial cost,
and the full-mode cost is ``(fixed + per_round x rounds) x trials``, summed over runs and divided by the 2 jobs of
``--jobs 2`` (trials and tuning grid points run in worker processes). D-ZOA's per-round cost does not depend on the round (``J_k``, ``T``
fixed), the baselines' barely. Target: < 3600 s wall on this 2-core machine. ``[tuning]`` tables (issue 14 item 2)
are projected the same way: each tuning run (``tuning_runs``: an entry's runs at the tuning sweep points) is probed
once and costs ``(fixed + per_round x tuning rounds) x tuning trials x grid points`` (a grid point changes step
sizes, not the per-round work).

``--reading catalog`` (default) projects the catalog as it is; ``--reading sum-auto`` forces ``loss_scale = "sum"``
on every S0/S1 problem and ``inner_sampler = "auto"`` on every D-ZOA run (the catalog issue 14 item 1 moves to).

Measured (issue 14, 2-core machine): 48,979 CPU s serial at the start of the full-mode work (D-ZOA 26,312,
``dzoa_gauss`` 18,867); 9,144 with trials batched by 25; 6,294 (3,147 s wall at ``--jobs 2``) with batches of 50,
vectorised streams, S1 Figs 2-3's probe rounds and parallel tuning, before the moment kernel's per-agent products.
The real ``privdist reproduce dzoa --jobs 2`` on the code after them took 2,899 s of wall time (README, Benchmarks).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from privdist.experiments.catalog import experiments_of_paper
from privdist.experiments.runner import TRIAL_BATCH, run_trials
from privdist.experiments.tuning import tuning_runs

__all__ = ["run_benchmark", "project_run"]

PROBE_ROUNDS = (1, 4)
JOBS = 2
TARGET_SECONDS = 3600.0
ZO = ("dzoa",)


def _with_reading(spec, reading: str):
    """``spec`` as it is, or with the sum loss and the ``auto`` inner sampler on every D-ZOA run."""
    if reading == "catalog":
        return spec
    if reading != "sum-auto":
        raise ValueError(f"reading must be 'catalog' or 'sum-auto', got {reading!r}")
    runs = tuple(dataclasses.replace(rs, params={**rs.params, "inner_sampler": "auto"}) if rs.algorithm in ZO
                 else rs for rs in spec.runs)
    return dataclasses.replace(spec, problem={**spec.problem, "loss_scale": "sum"}, runs=runs)


def project_run(spec, rs, probe_rounds=PROBE_ROUNDS, batch: int | None = None) -> dict:
    """Fixed and per-round seconds of one run per trial and its projected full-mode seconds: a batch of ``batch``
    trials (default ``min(trials, TRIAL_BATCH)``, as the runner forms them; every algorithm's trials go through
    :func:`~privdist.runtime.run_many` together) through :func:`run_trials`, divided by the batch size."""
    secs, info = [], {}
    size = min(spec.trials, TRIAL_BATCH) if batch is None else batch
    for r in probe_rounds:
        sub = dataclasses.replace(spec, runs=(rs,), rounds=r)
        t0 = time.process_time()  # CPU time of this process: less sensitive to other jobs on a shared machine
        out = run_trials(sub, range(size))[0]["runs"][rs.label]
        secs.append((time.process_time() - t0) / size)
        info = out
    r1, r2 = probe_rounds
    per_round = max(0.0, (secs[1] - secs[0]) / (r2 - r1))
    fixed = max(0.0, secs[0] - per_round * r1)
    Js = info.get("info", {}).get("J_per_agent")
    samplers = info.get("info", {}).get("inner_sampler_per_agent")
    return {"per_round": per_round, "fixed": fixed, "projected": (fixed + per_round * spec.rounds) * spec.trials,
            "J_max": max(Js) if Js else None,
            "moments": sum(s == "moments" for s in samplers) if samplers else None,
            "diverged": bool(info.get("diverged"))}


def project_tuning(spec) -> float:
    """Projected CPU seconds of the spec's ``[tuning]`` stage (0 without one)."""
    table = spec.tuning
    if table is None:
        return 0.0
    rounds, trials = table.rounds, table.trials
    tuning_spec = dataclasses.replace(spec, seed=table.seed)
    total = 0.0
    for template, grid in table.grids.items():
        points = 1
        for values in grid.values():
            points *= len(values)
        for rs in tuning_runs(spec, template):
            p = project_run(tuning_spec, rs, batch=trials)
            total += (p["fixed"] + p["per_round"] * rounds) * trials * points
    return total


def run_benchmark(reading: str = "catalog", only=None, verbose: bool = False) -> dict:
    per_spec, per_run, per_alg = {}, [], {}
    first = experiments_of_paper("dzoa")[0]
    project_run(first, first.runs[0])  # warm-up: imports and first-call costs would count as the first run's
    for spec in experiments_of_paper("dzoa"):
        if only and spec.name not in only:
            continue
        spec = _with_reading(spec, reading)
        total = 0.0
        for rs in spec.runs:
            p = project_run(spec, rs)
            total += p["projected"]
            per_alg[rs.algorithm] = per_alg.get(rs.algorithm, 0.0) + p["projected"]
            per_run.append((p["projected"], f"{spec.name}: {rs.label}", p))
            if verbose:
                print(f"  {spec.name:10s} {rs.label:55s} {p['per_round'] * 1e3:9.2f} ms/round fixed "
                      f"{p['fixed']:6.3f} s J_max {p['J_max']} moments {p['moments']} -> {p['projected']:9.0f} s"
                      + (" DIVERGED" if p["diverged"] else ""), file=sys.stderr, flush=True)
        tuning = project_tuning(spec)
        per_alg["[tuning]"] = per_alg.get("[tuning]", 0.0) + tuning
        per_spec[spec.name] = total + tuning
    serial = sum(per_spec.values())
    out = {"reading": reading, "projected_serial_seconds": serial, "projected_wall_seconds_jobs2": serial / JOBS,
           "target_wall_seconds": TARGET_SECONDS, "meets_target": serial / JOBS < TARGET_SECONDS,
           "probe_rounds": list(PROBE_ROUNDS)}
    out.update({f"spec {k} (serial s)": round(v, 1) for k, v in sorted(per_spec.items())})
    out.update({f"algorithm {k} (serial s)": round(v, 1) for k, v in sorted(per_alg.items())})
    for i, (sec, lab, p) in enumerate(sorted(per_run, key=lambda x: -x[0])[:5]):
        out[f"top{i + 1}"] = f"{lab}: {sec:.0f} s ({p['per_round'] * 1e3:.1f} ms/round, J_max {p['J_max']})"
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reading", default="catalog", choices=("catalog", "sum-auto"))
    ap.add_argument("--only", nargs="*", help="catalog entries to project (default: every S0/S1 entry)")
    args = ap.parse_args()
    for k, v in run_benchmark(args.reading, args.only, verbose=True).items():
        print(f"{k:40s} {v}")
