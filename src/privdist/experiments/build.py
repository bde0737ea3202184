"""Turn a spec into the objects of one trial: problem, network and metric functions.

The ``[problem]`` table's ``kind`` selects a *builder* from :data:`PROBLEM_KINDS` (default ``horizontal_erm``).
A builder declares the keys it accepts and the metrics it offers, and builds one trial from the trial's data
stream (spec §7: common random numbers, so every algorithm of a trial sees the same data and network). New problem
families (vertical ERM, online problems) register a :class:`ProblemKind` with :func:`register_problem_kind`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import SpecError, UnknownNameError
from ..runtime import data_rng

__all__ = ["Trial", "ProblemKind", "PROBLEM_KINDS", "register_problem_kind", "problem_kind", "build_trial"]


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


def problem_kind(name: str) -> ProblemKind:
    """The registered problem kind ``name`` (UnknownNameError otherwise)."""
    _load_builtin_kinds()
    if not isinstance(name, str) or name not in PROBLEM_KINDS:
        raise UnknownNameError("problem kind", repr(name) if not isinstance(name, str) else name, list(PROBLEM_KINDS))
    return PROBLEM_KINDS[name]


def _load_builtin_kinds() -> None:
    """Import ``kinds.py`` and every ``kinds_*.py`` module of this package: each registers its problem kinds
    (and any plot or claim kinds it needs) at import."""
    import importlib
    import pkgutil

    from . import kinds  # noqa: F401

    for mod in pkgutil.iter_modules(_package_path()):
        if mod.name.startswith("kinds_"):
            importlib.import_module(f"{__package__}.{mod.name}")


def _package_path():
    from pathlib import Path

    return [str(Path(__file__).parent)]


def build_trial(spec, trial: int, seed: int | None = None, data_dir=None) -> Trial:
    """Build problem, network and metric functions of ``trial`` of ``spec``."""
    rng = data_rng(spec.seed if seed is None else seed, trial)
    kind = problem_kind(spec.problem.get("kind", "horizontal_erm"))
    built = kind.build(spec, rng, data_dir)
    missing = [m for m in spec.metrics if m not in built.metrics]
    if missing:
        raise SpecError(f"problem kind {kind.name!r} does not provide metric(s) {missing}")
    built.metrics = {m: built.metrics[m] for m in spec.metrics}
    return built
