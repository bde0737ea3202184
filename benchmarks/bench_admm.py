"""Benchmark ``admm_round``: consensus ADMM round time for K=100 and K=1000 agents.

Random geometric graph, ridge regression with P=10 features and 20 samples per agent, simulator backend.
Target (issue #2): the 1000-agent round costs at most 10x the 100-agent round (linear scaling: the simulator
has no Python loop over agents).
"""

from __future__ import annotations

import time

import numpy as np

from privdist.algorithms import ConsensusADMM
from privdist.network import random_geometric
from privdist.problems import HorizontalERM, L2, SquaredLoss
from privdist.runtime import run


def _round_seconds(K: int, rounds: int, P: int = 10, n: int = 20) -> float:
    rng = np.random.default_rng(K)
    net = random_geometric(K, rng=rng)
    omega = rng.standard_normal(P)
    parts = []
    for _ in range(K):
        X = rng.standard_normal((n, P)) / np.sqrt(P)
        parts.append((X, X @ omega + 0.3 * rng.standard_normal(n)))
    prob = HorizontalERM(parts, SquaredLoss(), L2(), 1.0)
    run(ConsensusADMM(rho=1.0), prob, net, 3, transcript="none")  # warm-up (eigendecompositions cached)
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        run(ConsensusADMM(rho=1.0), prob, net, rounds, transcript="none")
        best = min(best, (time.perf_counter() - t0) / rounds)
    return best


def run_benchmark(rounds: int = 50) -> dict:
    t100, t1000 = _round_seconds(100, rounds), _round_seconds(1000, rounds)
    return {"name": "admm_round", "rounds": rounds, "seconds_per_round_K100": t100,
            "seconds_per_round_K1000": t1000, "ratio_1000_over_100": t1000 / t100, "target_ratio_max": 10.0,
            "meets_target": t1000 / t100 <= 10.0}


if __name__ == "__main__":
    print(run_benchmark())
