"""Shared plumbing of algorithm factories (STYLE #1: hyperparameters in the factory, state elsewhere)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeMismatchError, ValidationError

if TYPE_CHECKING:  # the privacy layer is imported where a release is made (start-up time)
    from ..privacy import Release

__all__ = ["AlgorithmBase", "PerIterationGaussian", "check_problem_network", "degrees_of", "in_the_clear",
           "per_iteration_gaussian_releases"]


class AlgorithmBase:
    """Mixin for frozen-dataclass algorithm factories: ``params()``, no coordinator, no caveats by default."""

    name: str = ""
    has_coordinator: bool = False

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def assumptions(self) -> list[str]:
        return []

    def exposures(self) -> list[str]:
        """Named exposures of the protocol that no DP event covers (e.g. labels sent in the clear)."""
        return []

    def step_many(self, requests: list, t: int) -> list:
        """``step`` for several independent runs at once (``requests``: ``(state, inbox, rng)`` per run; returns
        ``(state, outbox)`` per run). One run at a time by default; algorithms bound by per-step overhead batch
        their arithmetic over the runs' agents, with each run's numbers those of ``step`` alone."""
        return [self.step(state, inbox, t, rng) for state, inbox, rng in requests]

    def run_info(self, states: list) -> dict[str, Any]:
        """JSON-ready facts of a finished run worth recording beside its results (e.g. calibrated per-agent
        constants), from the final state of each agent block in agent order. None by default."""
        return {}


class PerIterationGaussian:
    """Mixin for algorithms whose every release is a Gaussian with per-iteration ``(epsilon, delta)`` and
    ``sigma_t / Delta_t = sqrt(C log(1.25/delta)) / epsilon`` (C = ``gaussian_constant``: 2.1 in the D-ZOA
    comparison mode, S1(20), AMB-X2; 2 native). Needs fields ``epsilon``, ``delta``, ``c1``, ``gaussian_constant``."""

    def _check_gaussian_privacy(self) -> None:
        from .._checks import check_positive, check_probability

        check_positive(self.c1, "c1")
        check_probability(self.delta, "delta")
        if self.epsilon is not None:
            check_positive(self.epsilon, "epsilon")
        if self.gaussian_constant not in (2.0, 2.1):
            raise ValidationError(f"gaussian_constant must be 2 or 2.1, got {self.gaussian_constant}")

    def unenforced(self) -> str | None:
        """Why the releases are only the paper's claim (``clip=False``: the c1 bound is assumed), else None."""
        if getattr(self, "clip", True):
            return None
        return (f"{self.name}: per-sample gradient norm <= c1={self.c1} is assumed, not enforced (clip=false); the "
                "squared loss violates it (AMB-D8/AMB-B6), so the sensitivity and the epsilon are not guaranteed")

    @property
    def noise_multiplier(self) -> float:
        """``sigma_t / Delta_t``, the same every round."""
        return float(np.sqrt(self.gaussian_constant * np.log(1.25 / self.delta)) / self.epsilon)


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


def in_the_clear(name: str, what: str = "iterates") -> Release:
    """The release of a data-dependent message sent without noise (epsilon = inf, DESIGN idea 3)."""
    from ..privacy import non_private_release

    return non_private_release(f"{name}: {what} sent without noise (not private)")


def per_iteration_gaussian_releases(algo, n: int, reason: str | None = None) -> list:
    """``n`` copies of the per-iteration Gaussian release of an algorithm with ``epsilon``, ``delta``,
    ``gaussian_constant`` and ``noise_multiplier`` (in the clear when ``epsilon`` is None): composed by S1(25)
    for the 2.1 constant (D-ZOA comparison mode, AMB-X2) and by the moments bound (spec §1.3-2) for 2.
    ``reason`` makes the releases the paper's claim only (an assumption privdist does not enforce)."""
    if algo.epsilon is None:
        return [in_the_clear(algo.name)] * n
    from ..privacy import gaussian_release

    composition = "dzoa" if algo.gaussian_constant == 2.1 else "moments"
    return [gaussian_release(algo.noise_multiplier, epsilon=algo.epsilon, delta=algo.delta,
                             composition=composition, reason=reason)] * n
