"""The registry of problem kinds: what a ``[problem] kind`` builds (:class:`ProblemKind`) and what it returns
(:class:`Trial`).

Each ``kinds*.py`` module registers its kinds here at import; :mod:`privdist.experiments.build` imports those
modules and looks kinds up. The registry sits below both, so a kind module never imports the module that loads it
(issue 23: no import circles).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["Trial", "ProblemKind", "PROBLEM_KINDS", "register_problem_kind"]


@dataclass
class Trial:
    """Objects shared by every run of one trial.

    Attributes:
        problem, network: what ``privdist.run`` receives.
        metrics: ``name -> f(estimates) -> float`` evaluated every round.
        extras: anything else a builder wants to keep (reference solutions, ...).
    """

    problem: Any
    network: Any
    metrics: dict[str, Callable[[np.ndarray], float]]
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProblemKind:
    """A family of problems an experiment can build.

    Attributes:
        name: value of ``[problem].kind``.
        keys: keys accepted in ``[problem]`` besides ``kind``.
        metrics: metric names it offers (the first is the default).
        build: ``build(spec, rng, data_dir) -> Trial``.
        unavailable: metric name -> why this kind cannot offer it (a clear spec error instead of "unknown").
    """

    name: str
    keys: frozenset[str]
    metrics: tuple[str, ...]
    build: Callable[..., Trial]
    unavailable: dict = field(default_factory=dict)


PROBLEM_KINDS: dict[str, ProblemKind] = {}


def register_problem_kind(kind: ProblemKind) -> ProblemKind:
    """Add (or replace) a problem kind; returns it."""
    PROBLEM_KINDS[kind.name] = kind
    return kind
