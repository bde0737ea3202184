"""Building a large random geometric graph: ``random_geometric(2000)`` and its Metropolis weights (sparse).

Moved here from a timed unit test (issue 37: the fast suite asserts no wall time; tests/network keeps checking
that the result is sparse and doubly stochastic). Target: both together under 10 s (the bound that test had).

Run as a script: ``python benchmarks/bench_rgg.py``.
"""

from __future__ import annotations

import json
import time

import numpy as np

from privdist.network import random_geometric

__all__ = ["run_benchmark"]

N_AGENTS = 2000
TARGET_SECONDS = 10.0


def run_benchmark() -> dict:
    """Wall seconds of the graph and of its Metropolis weights, and the graph's density."""
    t0 = time.perf_counter()
    net = random_geometric(N_AGENTS, rng=np.random.default_rng(0))
    graph_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    W = net.metropolis_weights()
    weights_seconds = time.perf_counter() - t0
    total = graph_seconds + weights_seconds
    return {"name": "rgg_2000", "agents": N_AGENTS, "edges": int(net.adjacency.nnz // 2), "weights_nnz": int(W.nnz),
            "graph_seconds": graph_seconds, "weights_seconds": weights_seconds, "target_seconds": TARGET_SECONDS,
            "meets_target": total < TARGET_SECONDS}


if __name__ == "__main__":
    print(json.dumps(run_benchmark(), indent=1))
