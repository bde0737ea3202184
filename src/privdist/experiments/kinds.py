"""Problem kinds shipped with the experiments layer (see :mod:`privdist.experiments.build`).

``horizontal_erm``: a dataset from the data registry split evenly among the network's agents, a loss and a
regularizer (spec §2.1 form ``f_k = w_k sum loss + reg_weight / K * R`` with ``[problem].loss_scale`` ``"mean"``
(``w_k = 1/N_k``, default) or ``"sum"`` (``w_k = 1``, AMB-D12 revised: S1(30)/(31) is then the distributed
minimiser exactly)), the reference ``beta^c`` (AMB-D12) and
the metrics ``ne`` (normalized error, spec §1.5) and ``objective_gap``.
"""

from __future__ import annotations

import numpy as np

from ..data import column_groups, dirichlet_groups, horizontal_partition, load_dataset, split_rows
from ..errors import SpecError
from ..network import make_network
from ..problems import (HorizontalERM, literal_reference, make_loss, make_regularizer, normalized_error,
                        objective_gap, reference_solution)
from .problem_kinds import ProblemKind, Trial, register_problem_kind

__all__ = ["build_horizontal_erm", "make_spec_network", "load_spec_dataset"]


def load_spec_dataset(spec, rng, data_dir):
    """The ``[data]`` dataset of a spec."""
    return load_dataset(spec.data.kind, rng=rng, data_dir=data_dir, **dict(spec.data.params))


def make_spec_network(spec, rng):
    """The ``[network]`` network of a spec."""
    return make_network(spec.network.kind, rng=rng, **spec.network.params)


def _partition(partition, dataset, n_agents: int, rng):
    """Rows per agent: ``contiguous``, ``shuffle``, ``column`` (the file's ``party_column``, one agent per value)
    or ``dirichlet`` / ``dirichlet:ALPHA`` (label skew, seeded by the trial's stream; alpha 0.5 by default)."""
    if partition in ("contiguous", "shuffle"):
        return horizontal_partition(dataset.X, dataset.y, n_agents=n_agents,
                                    rng=rng if partition == "shuffle" else None)
    if partition == "column":
        if "party" not in dataset.extras:
            raise SpecError("[data].partition 'column' needs params.party_column (a column naming each row's party)")
        groups, names = column_groups(dataset.extras["party"])
        if len(names) != n_agents:
            raise SpecError(f"[data].partition 'column': the party column has {len(names)} values {names} but the "
                            f"network has {n_agents} agents")
        return split_rows(dataset.X, dataset.y, groups, n_agents)
    if isinstance(partition, str) and partition.split(":")[0] == "dirichlet":
        try:
            alpha = float(partition.split(":", 1)[1]) if ":" in partition else 0.5
        except ValueError:
            raise SpecError(f"[data].partition {partition!r}: write dirichlet:ALPHA with a number") from None
        return split_rows(dataset.X, dataset.y, dirichlet_groups(dataset.y, n_agents, alpha, rng), n_agents)
    raise SpecError(f"[data].partition must be 'contiguous', 'shuffle', 'column' or 'dirichlet[:ALPHA]', "
                    f"got {partition!r}")


def build_horizontal_erm(spec, rng, data_dir) -> Trial:
    dataset = load_spec_dataset(spec, rng, data_dir)
    network = make_spec_network(spec, rng)
    parts = _partition(spec.data.partition, dataset, network.n_agents, rng)
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
    if "ne" in spec.metrics and not np.any(beta_c):  # NE divides by ||beta_c||^2 (issue 26: was "ne is nan")
        raise SpecError(f"[problem]: the reference solution is 0 (reg_weight {prob.get('reg_weight', 0.0):g} makes "
                        "every coefficient zero), so the normalized error 'ne', divided by ||beta_c||^2, is undefined; "
                        "lower [problem].reg_weight, or set metrics = [\"objective_gap\"]")
    f_star = problem.objective(beta_c)
    metrics = {
        "ne": lambda est: normalized_error(est, beta_c),
        "objective_gap": lambda est: objective_gap(problem, est, f_star),
    }
    return Trial(problem, network, metrics, {"beta_c": beta_c, "dataset": dataset})


register_problem_kind(ProblemKind("horizontal_erm", frozenset({"loss", "regularizer", "reg_weight", "reference",
                                                               "loss_scale"}),
                                  ("ne", "objective_gap"), build_horizontal_erm))
