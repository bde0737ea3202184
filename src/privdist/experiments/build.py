"""Turn a spec into the objects of one trial: data, network, problem, reference solution, metrics.

Everything random comes from the trial's data stream (spec §7: common random numbers, so every algorithm of a
trial sees the same data and network).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..data import horizontal_partition, load_dataset
from ..errors import SpecError
from ..network import make_network
from ..problems import (HorizontalERM, literal_reference, make_loss, make_regularizer, normalized_error,
                        objective_gap, reference_solution)
from ..runtime import data_rng

__all__ = ["Trial", "build_trial"]


@dataclass
class Trial:
    """Objects shared by every run of one trial."""

    problem: HorizontalERM
    network: object
    beta_c: np.ndarray
    metrics: dict[str, Callable[[np.ndarray], float]]


def build_trial(spec, trial: int, seed: int | None = None, data_dir=None) -> Trial:
    """Build data, network, problem, reference and metric functions of ``trial``."""
    rng = data_rng(spec.seed if seed is None else seed, trial)
    data_params = dict(spec.data.get("params", {}))
    dataset = load_dataset(spec.data["kind"], rng=rng, data_dir=data_dir, **data_params)
    network = make_network(spec.network["kind"], rng=rng, **spec.network.get("params", {}))
    partition = spec.data.get("partition", "contiguous")
    if partition not in ("contiguous", "shuffle"):
        raise SpecError(f"[data].partition must be 'contiguous' or 'shuffle', got {partition!r}")
    parts = horizontal_partition(dataset.X, dataset.y, n_agents=network.n_agents,
                                 rng=rng if partition == "shuffle" else None)
    prob = spec.problem
    loss, reg = make_loss(prob.get("loss", "squared")), make_regularizer(prob.get("regularizer", "l2"))
    problem = HorizontalERM(parts, loss, reg, prob.get("reg_weight", 0.0))
    reference = prob.get("reference", "distributed")
    if reference == "distributed":  # AMB-D12 default: minimiser of the distributed objective S1(1)
        beta_c = reference_solution(problem)
    elif reference == "literal":  # S1(30)/(31) on the pooled data
        X = dataset.X.toarray() if hasattr(dataset.X, "toarray") else dataset.X
        beta_c = literal_reference(X, dataset.y, loss, reg, prob.get("reg_weight", 0.0))
    else:
        raise SpecError(f"[problem].reference must be 'distributed' or 'literal', got {reference!r}")
    f_star = problem.objective(beta_c)
    available = {
        "ne": lambda est: normalized_error(est, beta_c),
        "objective_gap": lambda est: objective_gap(problem, est, f_star),
    }
    return Trial(problem, network, beta_c, {m: available[m] for m in spec.metrics})
