"""Problem kinds shipped with the experiments layer (see :mod:`privdist.experiments.build`).

``horizontal_erm``: a dataset from the data registry split evenly among the network's agents, a loss and a
regularizer (spec §2.1 form ``f_k = w_k sum loss + reg_weight / K * R`` with ``[problem].loss_scale`` ``"mean"``
(``w_k = 1/N_k``, default) or ``"sum"`` (``w_k = 1``, AMB-D12 revised: S1(30)/(31) is then the distributed
minimiser exactly)), the reference ``beta^c`` (AMB-D12) and
the metrics ``ne`` (normalized error, spec §1.5) and ``objective_gap``.
"""

from __future__ import annotations

from ..data import horizontal_partition, load_dataset
from ..errors import SpecError
from ..network import make_network
from ..problems import (HorizontalERM, literal_reference, make_loss, make_regularizer, normalized_error,
                        objective_gap, reference_solution)
from .build import ProblemKind, Trial, register_problem_kind

__all__ = ["build_horizontal_erm", "make_spec_network", "load_spec_dataset"]


def load_spec_dataset(spec, rng, data_dir):
    """The ``[data]`` dataset of a spec."""
    return load_dataset(spec.data["kind"], rng=rng, data_dir=data_dir, **dict(spec.data.get("params", {})))


def make_spec_network(spec, rng):
    """The ``[network]`` network of a spec."""
    return make_network(spec.network["kind"], rng=rng, **spec.network.get("params", {}))


def build_horizontal_erm(spec, rng, data_dir) -> Trial:
    dataset = load_spec_dataset(spec, rng, data_dir)
    network = make_spec_network(spec, rng)
    partition = spec.data.get("partition", "contiguous")
    if partition not in ("contiguous", "shuffle"):
        raise SpecError(f"[data].partition must be 'contiguous' or 'shuffle', got {partition!r}")
    parts = horizontal_partition(dataset.X, dataset.y, n_agents=network.n_agents,
                                 rng=rng if partition == "shuffle" else None)
    prob = spec.problem
    loss, reg = make_loss(prob.get("loss", "squared")), make_regularizer(prob.get("regularizer", "l2"))
    problem = HorizontalERM(parts, loss, reg, prob.get("reg_weight", 0.0), loss_scale=prob.get("loss_scale", "mean"))
    reference = prob.get("reference", "distributed")
    if reference == "distributed":  # AMB-D12 default: minimiser of the distributed objective S1(1)
        beta_c = reference_solution(problem)
    elif reference == "literal":  # S1(30)/(31) on the pooled data
        X = dataset.X.toarray() if hasattr(dataset.X, "toarray") else dataset.X
        beta_c = literal_reference(X, dataset.y, loss, reg, prob.get("reg_weight", 0.0))
    else:
        raise SpecError(f"[problem].reference must be 'distributed' or 'literal', got {reference!r}")
    f_star = problem.objective(beta_c)
    metrics = {
        "ne": lambda est: normalized_error(est, beta_c),
        "objective_gap": lambda est: objective_gap(problem, est, f_star),
    }
    return Trial(problem, network, metrics, {"beta_c": beta_c, "dataset": dataset})


register_problem_kind(ProblemKind("horizontal_erm", frozenset({"loss", "regularizer", "reg_weight", "reference",
                                                               "loss_scale"}),
                                  ("ne", "objective_gap"), build_horizontal_erm))
