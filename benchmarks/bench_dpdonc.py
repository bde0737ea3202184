"""Benchmark ``dpdonc``: DPDO-NC steps per second for N=6 (S4's network) and N=1000 (random time-varying digraph).

N=6: the localisation problem and cyclic A_1, A_2, A_3 of S4 §5 (spec §5.8), epsilon = 5. N=1000: the same
problem with the distinct sensor layout and 1000 sensors, on three random doubly stochastic digraphs
(``random_time_varying``, 3 in-neighbours + self per node) switched cyclically. One step = one round of all nodes
(Laplace noise, W(t) mixing, gradient, exact l1-ball projection), simulator backend, no transcript.
"""

from __future__ import annotations

import time

import numpy as np

from privdist.algorithms import make_algorithm
from privdist.network import TimeVaryingNetwork, random_time_varying, s4_matrices
from privdist.problems.online import make_localization
from privdist.runtime import run


def _steps_per_second(problem, network, rounds: int, repeats: int = 3) -> float:
    algo = make_algorithm("dpdonc", epsilon=5.0)
    run(algo, problem, network, 2, transcript="none")  # warm-up
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(algo, problem, network, rounds, transcript="none")
        best = min(best, time.perf_counter() - t0)
    return rounds / best


def run_benchmark(rounds_small: int = 500, rounds_large: int = 50) -> dict:
    rng = np.random.default_rng(0)
    small = _steps_per_second(make_localization(rng, rounds_small + 1), TimeVaryingNetwork(s4_matrices()),
                              rounds_small)
    n = 1000
    net = TimeVaryingNetwork(random_time_varying(n, 3, rng, density=3))
    large = _steps_per_second(make_localization(rng, rounds_large + 1, n_agents=n, layout="distinct"), net,
                              rounds_large)
    return {"name": "dpdonc", "steps_per_second_N6": small, "steps_per_second_N1000": large,
            "node_steps_per_second_N1000": large * n, "rounds_N6": rounds_small, "rounds_N1000": rounds_large}


if __name__ == "__main__":
    print(run_benchmark())
