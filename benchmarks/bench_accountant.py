"""Benchmark of the privacy ledger and accountants: 1000 agents x 1000 rounds of Gaussian releases.

Each agent releases one Gaussian message per round; agents use one of a few noise levels (as when agents of
different degree or sample count get different sensitivities), so the accountants' cache by identical entry
sequences is exercised realistically. Times the recording (``PrivacyLedger.record_round`` every round) and
``privacy_report`` under the ``paper``, ``rdp`` and ``pld`` accountants, starting from an empty cache.

Run as a script: ``python benchmarks/bench_accountant.py``.
"""

from __future__ import annotations

import json
import time

from privdist.privacy import ACCOUNTANTS, PrivacyLedger, clear_accountant_cache, gaussian_release, privacy_report

__all__ = ["run_benchmark"]

N_AGENTS = 1000
N_ROUNDS = 1000
DELTA = 1e-5
NOISE_LEVELS = (20.0, 30.0, 45.0, 70.0)


def run_benchmark() -> dict:
    """Build the ledger, account it; return the timings.

    Returns:
        ``{"name": "accountant", "agents": 1000, "rounds": 1000, "record_seconds": float,
        "report_seconds": float}``.
    """
    releases = [gaussian_release(NOISE_LEVELS[k % len(NOISE_LEVELS)], delta=DELTA) for k in range(N_AGENTS)]
    agents = list(range(N_AGENTS))
    ledger = PrivacyLedger(N_AGENTS)
    t0 = time.perf_counter()
    for _ in range(N_ROUNDS):
        # A fresh list each round, as an algorithm's dp_events() would return.
        ledger.record_round(agents, list(releases))
    ledger.n_releases(0)  # materialise the per-agent runs inside the timed region
    record_seconds = time.perf_counter() - t0

    clear_accountant_cache()
    t0 = time.perf_counter()
    report = privacy_report(ledger, DELTA, ACCOUNTANTS)
    report_seconds = time.perf_counter() - t0
    if report["per_agent"][-1]["releases"] != N_ROUNDS:  # pragma: no cover - sanity check of the benchmark
        raise RuntimeError("benchmark ledger lost releases")
    return {
        "name": "accountant",
        "agents": N_AGENTS,
        "rounds": N_ROUNDS,
        "record_seconds": record_seconds,
        "report_seconds": report_seconds,
    }


if __name__ == "__main__":
    print(json.dumps(run_benchmark(), indent=1))
