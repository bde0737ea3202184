"""Benchmark ``dzoa_inner``: D-ZOA's vectorised two-point estimator on the S1 setting (spec §2.9).

Measures, in the same run: direction pairs evaluated per second by D-ZOA's inner loop at an S1 agent
(``N_k = 20``, ``P = 10``, squared loss + l1, ``J`` in {1e2, 1e3, 1e4, 1e5}, whole loops of up to 100 steps), this machine's rate of drawing standard
normals (``Generator.standard_normal``) and its fp64 GEMM rate (1000 x 1000 products). Ratios printed:

* draw ratio = pairs/s x 2P / normals/s (target >= 0.5: the estimator is bound by its random draws);
* flop ratio = useful flops/s / GEMM flops/s, useful flops per pair = the product ``(X^T X / N_k + q) nu2``
  (2 P^2 + 2 P) plus the reductions of the difference and the accumulation ``nu2 diff`` (about 14 P with the l1
  part) (target >= 0.3; out of reach by construction when the draws dominate: each pair needs 2P normals for
  only ~2 P^2 + 16 P flops in skinny (P x P) x (P x J) products).
"""

from __future__ import annotations

import time

import numpy as np

from privdist.algorithms.dzoa_inner import squared_inner_loop
from privdist.data import dzoa_regression

__all__ = ["run_benchmark"]


def _best(fn, repeat=3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_benchmark() -> dict:
    rng = np.random.default_rng(0)
    ds = dzoa_regression(rng)
    X, y = ds.X[:20], ds.y[:20]
    P, n = X.shape[1], X.shape[0]
    v = rng.standard_normal(P)
    out: dict = {"N_k": n, "P": P}
    draws = 2 * P * 100_000
    t_draw = _best(lambda: rng.standard_normal((2, P, 100_000)))
    out["normals_per_s"] = draws / t_draw
    A = rng.standard_normal((1000, 1000))
    t_gemm = _best(lambda: A @ A)
    out["gemm_flops_per_s"] = 2e9 / t_gemm
    flops_per_pair = 2 * P * P + 16 * P
    for J in (100, 1_000, 10_000, 100_000):
        T = max(1, min(100, 200_000 // J))  # whole inner loops (T steps) so that batching over steps counts
        alphas = 0.01 / np.sqrt(np.arange(1, T + 1))
        gen = np.random.default_rng(1)
        t = _best(lambda: squared_inner_loop(X, y, 12.0, v, 0.2, J, T, alphas, 1.0, gen), repeat=3) / T
        pairs = J / t
        out[f"J={J}"] = {"pairs_per_s": pairs, "draw_ratio": pairs * 2 * P / out["normals_per_s"],
                         "flop_ratio": pairs * flops_per_pair / out["gemm_flops_per_s"], "seconds_per_step": t}
    big = out["J=100000"]
    out["draw_ratio"], out["flop_ratio"] = big["draw_ratio"], big["flop_ratio"]
    out["targets"] = {"draw_ratio": 0.5, "flop_ratio": 0.3}
    return out


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run_benchmark(), indent=1))
