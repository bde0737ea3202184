"""Utility of DPSGD gossip with pairwise-cancelling correlated noise against local noise at the same printed
guarantee (issue 27, DECOR).

Cases: 20 agents on a ring and on a random 4-regular graph, synthetic logistic regression (50 rows per agent, 5
features, labels from a random linear model with 10 % flipped, rows scaled to norm <= 1, l2 regularisation 1e-2),
80 rounds, each agent's total budget epsilon = 1, delta = 1e-5 (PLD), ``colluding = 0`` and 1. For each trust
(``local``; ``correlated`` with ratios ``z_cor / z_ind`` of 1, 4 and 16; and without noise, for scale) and step
scale ``alpha0`` in {0.3, 1, 3, 10}:
3 draws (data, graph and noise from seeds 0, 1, 2); the objective gap ``F(beta) - F*`` of the agents' estimates
(mean over agents) and of their network average. The printed guarantee is checked from the ledger (worst agent's
PLD epsilon) for every run.

Run as a script: ``python benchmarks/bench_correlated.py`` (writes ``benchmarks/results/correlated.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from privdist.algorithms import DPSGD
from privdist.network import random_regular, ring
from privdist.privacy import privacy_report
from privdist.problems import HorizontalERM, make_loss, make_regularizer, reference_solution
from privdist.runtime import run

__all__ = ["run_benchmark"]

K, ROWS, FEATURES, ROUNDS, EPSILON, DELTA = 20, 50, 5, 80, 1.0, 1e-5
ALPHAS, RATIOS, DRAWS = (0.3, 1.0, 3.0, 10.0), (1.0, 4.0, 16.0), (0, 1, 2)
OUT = Path(__file__).resolve().parent / "results" / "correlated.json"


def _problem(seed: int) -> HorizontalERM:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(K * ROWS, FEATURES))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.normal(size=FEATURES) * 3 > 0, 1.0, -1.0)
    y[rng.random(y.size) < 0.1] *= -1
    parts = [(X[k * ROWS:(k + 1) * ROWS], y[k * ROWS:(k + 1) * ROWS]) for k in range(K)]
    return HorizontalERM(parts, make_loss("logistic"), make_regularizer("l2"), 1e-2)


def _network(kind: str, seed: int):
    return ring(K) if kind == "ring" else random_regular(K, 4, np.random.default_rng(100 + seed))


def _gaps(trust: str, ratio: float, alpha0: float, colluding: int, kind: str, epsilon=EPSILON) -> dict:
    agents, average, worst = [], [], []
    for seed in DRAWS:
        problem = _problem(seed)
        f_star = problem.objective(reference_solution(problem))
        alg = DPSGD(alpha0=alpha0, epsilon=epsilon, delta=DELTA, budget="total", gaussian_constant=2.0, trust=trust,
                    correlation=ratio, colluding=colluding)
        res = run(alg, problem, _network(kind, seed), ROUNDS, seed=seed, transcript="none")
        B = res.estimates
        agents.append(float(np.mean([problem.objective(b) for b in B]) - f_star))
        average.append(float(problem.objective(B.mean(axis=0)) - f_star))
        report = privacy_report(res.ledger, DELTA)["per_agent"]
        worst.append(max(report[k]["epsilon"]["pld"] for k in range(K)))
    return {"trust": trust if epsilon is not None else "no noise", "ratio": ratio if trust == "correlated" else None, "alpha0": alpha0,
            "colluding": colluding, "agents_gap": agents, "average_gap": average, "worst_pld_epsilon": worst,
            "agents_gap_mean": float(np.mean(agents)), "average_gap_mean": float(np.mean(average))}


def run_benchmark() -> dict:
    """The cases of the module docstring; returns (and writes) the measured numbers."""
    out = {"name": "correlated", "agents": K, "rounds": ROUNDS, "epsilon": EPSILON, "delta": DELTA, "cases": []}
    for kind in ("ring", "random_regular_4"):
        for alpha0 in ALPHAS:
            rows = [_gaps("local", 1.0, alpha0, 0, kind, None), _gaps("local", 1.0, alpha0, 0, kind)]
            rows += [_gaps("correlated", r, alpha0, c, kind) for c in (0, 1) for r in RATIOS]
            for row in rows:
                row["graph"] = kind
                print(f"{kind:17s} alpha0={alpha0:<4} {row['trust']:10s} ratio={row['ratio']} colluding="
                      f"{row['colluding']}  agents gap {row['agents_gap_mean']:.4f}  average gap "
                      f"{row['average_gap_mean']:.4f}  worst eps {max(row['worst_pld_epsilon']):.4f}", flush=True)
            out["cases"] += rows
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    tmp.replace(OUT)
    return out


if __name__ == "__main__":
    run_benchmark()
