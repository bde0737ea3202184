"""Shared plumbing of algorithm factories (STYLE #1: hyperparameters in the factory, state elsewhere)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import ShapeMismatchError, ValidationError

__all__ = ["AlgorithmBase", "check_problem_network", "degrees_of", "per_iteration_gaussian_releases"]


class AlgorithmBase:
    """Mixin for frozen-dataclass algorithm factories: ``params()``, no coordinator, no caveats by default."""

    name: str = ""
    has_coordinator: bool = False

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def assumptions(self) -> list[str]:
        return []


def check_problem_network(problem, network, needs_degrees: bool = True) -> None:
    """Validate that an ERM problem and an undirected network fit together."""
    if not hasattr(problem, "prox_solve"):
        raise ValidationError(f"this algorithm needs a horizontal ERM problem, got {type(problem).__name__}")
    if needs_degrees and getattr(network, "degrees", None) is None:
        raise ValidationError("this algorithm needs a static undirected Network (with degrees)")
    if network.n_agents != problem.n_agents_total:
        raise ShapeMismatchError(f"network has {network.n_agents} agents, problem has {problem.n_agents_total}")


def degrees_of(block) -> np.ndarray:
    """Degrees ``d_k`` of the block's agents as floats."""
    return np.asarray(block.degrees, dtype=float)


def per_iteration_gaussian_releases(algo, n: int) -> list:
    """``n`` copies of the per-iteration Gaussian release of an algorithm with ``epsilon``, ``delta``,
    ``gaussian_constant`` and ``noise_multiplier`` (none when ``epsilon`` is None): composed by S1(25) for the
    2.1 constant (D-ZOA comparison mode, AMB-X2) and by the moments bound (spec §1.3-2) for 2."""
    if algo.epsilon is None:
        return [None] * n
    from ..privacy import gaussian_release

    composition = "dzoa" if algo.gaussian_constant == 2.1 else "moments"
    return [gaussian_release(algo.noise_multiplier, epsilon=algo.epsilon, delta=algo.delta,
                             composition=composition)] * n
