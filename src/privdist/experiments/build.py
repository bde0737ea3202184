"""Turn a spec into the objects of one trial: problem, network and metric functions.

The ``[problem]`` table's ``kind`` selects a *builder* from :data:`PROBLEM_KINDS` (default ``horizontal_erm``, set
by the spec's schema).
A builder declares the keys it accepts and the metrics it offers, and builds one trial from the trial's data
stream (spec §7: common random numbers, so every algorithm of a trial sees the same data and network). New problem
families (vertical ERM, online problems) register a :class:`ProblemKind` with :func:`register_problem_kind`
(:mod:`privdist.experiments.problem_kinds`, the registry below this module and the kind modules it loads).
"""

from __future__ import annotations

from ..errors import SpecError, UnknownNameError
from ..runtime.rng import data_rng
from .problem_kinds import PROBLEM_KINDS, ProblemKind, Trial, register_problem_kind

__all__ = ["Trial", "ProblemKind", "PROBLEM_KINDS", "register_problem_kind", "problem_kind", "build_trial"]


def problem_kind(name: str) -> ProblemKind:
    """The registered problem kind ``name`` (UnknownNameError otherwise)."""
    _load_builtin_kinds()
    if not isinstance(name, str) or name not in PROBLEM_KINDS:
        raise UnknownNameError("problem kind", repr(name) if not isinstance(name, str) else name, list(PROBLEM_KINDS))
    return PROBLEM_KINDS[name]


def _load_builtin_kinds() -> None:
    """Import the shipped problem-kind modules: each registers its problem kinds (and any plot or claim kinds it
    needs) at import. Imported on first use, not with this module (``privdist list`` start-up time); a new
    ``kinds_*.py`` module is added here (a test checks that none is missing)."""
    from . import (kinds, kinds_adult, kinds_dzoa, kinds_online, kinds_party, kinds_sharing,  # noqa: F401
                   kinds_sharing_privacy)


def build_trial(spec, trial: int, seed: int | None = None, data_dir=None) -> Trial:
    """Build problem, network and metric functions of ``trial`` of ``spec``."""
    rng = data_rng(spec.seed if seed is None else seed, trial)
    kind = problem_kind(spec.problem["kind"])
    built = kind.build(spec, rng, data_dir)
    missing = [m for m in spec.metrics if m not in built.metrics]
    if missing:
        raise SpecError(f"problem kind {kind.name!r} does not provide metric(s) {missing}")
    built.metrics = {m: built.metrics[m] for m in spec.metrics}
    return built
