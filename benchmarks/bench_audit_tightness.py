"""Benchmark ``audit_tightness``: how close the audit's lower bounds come to DPSGD's guarantee (issue 24).

DPSGD with a total budget of epsilon 1 at delta 1e-5 over one round (one Gaussian release per agent, PLD-calibrated
noise multiplier 3.73, i.e. ``mu = 0.268``-GDP), the worst-case canary of the audit's default problem, ``releases``
releases per dataset (half select the test, half evaluate it), over several base seeds. Reported per seed: the
time to generate the releases and to run both tests, the threshold test's ``epsilon_lb`` at delta 1e-5
(Clopper-Pearson, 95 %), the trade-off test's ``mu_lb`` and ``epsilon_lb_gdp`` (the epsilon of ``mu_lb``-GDP at
1e-5, Nasr et al. 2023) and its ratio to the PLD guarantee.

Target (issue 24): ``epsilon_lb_gdp / guarantee >= 0.85`` with <= 1e5 releases per dataset.
Run: ``python benchmarks/bench_audit_tightness.py`` (writes ``benchmarks/results/audit_tightness.json``) or
``python benchmarks/run.py audit_tightness``.
"""

from __future__ import annotations

import time

import numpy as np

from privdist.algorithms import make_algorithm
from privdist.audit import collect_releases, neighbours, problem_for
from privdist.privacy import privacy_report
from privdist.privacy.audit_stats import threshold_audit
from privdist.privacy.audit_tradeoff import tradeoff_audit
from privdist.runtime import run

EPSILON, DELTA = 1.0, 1e-5


def run_benchmark(releases: int = 100_000, seeds=(0, 1, 2, 3, 4)) -> dict:
    algo = make_algorithm("dpsgd", epsilon=EPSILON, delta=DELTA, budget="total").for_rounds(1)
    problem, network = problem_for(algo, 1)
    d0, d1 = neighbours(problem, "worst")
    guarantee = privacy_report(run(algo, d0, network, 1).ledger, DELTA)["per_agent"][0]["epsilon"]["pld"]
    collect_releases(algo, d0, d1, network, 1, 200)  # warm-up (imports, the copies check)
    per_seed = []
    for seed in seeds:
        t0 = time.perf_counter()
        x0, x1, info = collect_releases(algo, d0, d1, network, 1, releases, seed=seed * 1_000_003)
        t1 = time.perf_counter()
        test = threshold_audit(x0, x1, DELTA)
        trade = tradeoff_audit(x0, x1)
        t2 = time.perf_counter()
        gdp = trade.epsilon_lb_gdp(DELTA)
        per_seed.append({"seed": seed * 1_000_003, "release_seconds": t1 - t0, "test_seconds": t2 - t1,
                         "epsilon_lb_threshold": test.epsilon_lb(DELTA), "mu_lb": trade.mu_lb,
                         "epsilon_lb_gdp": gdp, "ratio": gdp / guarantee, "mode": info["mode"]})
    ratios = np.array([s["ratio"] for s in per_seed])
    return {"name": "audit_tightness", "algorithm": "dpsgd", "epsilon": EPSILON, "delta": DELTA, "rounds": 1,
            "releases_per_dataset": releases, "guarantee_pld": guarantee, "mu_claim": 1 / algo.mechanism.noise_multiplier,
            "ratio_min": float(ratios.min()), "ratio_mean": float(ratios.mean()), "ratio_max": float(ratios.max()),
            "threshold_ratio_mean": float(np.mean([s["epsilon_lb_threshold"] for s in per_seed]) / guarantee),
            "release_seconds_mean": float(np.mean([s["release_seconds"] for s in per_seed])),
            "test_seconds_mean": float(np.mean([s["test_seconds"] for s in per_seed])),
            "per_seed": per_seed, "target_ratio": 0.85, "met_by_every_seed": bool(ratios.min() >= 0.85)}


if __name__ == "__main__":
    import json
    from pathlib import Path

    res = run_benchmark()
    print(json.dumps(res, indent=1))
    out = Path(__file__).resolve().parent / "results" / "audit_tightness.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {out.name}")
