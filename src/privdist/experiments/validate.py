"""The checks of a spec that depend on registries, after its structure (:mod:`privdist.experiments.schema`; issue 15).

:func:`check_semantics` checks every algorithm parameter against the type of the algorithm's frozen-dataclass field
(introspected, so new parameters are checked without a change here) and the algorithm's own range checks;
``[data]`` and ``[network]`` parameters against the loader's or generator's signature; agent counts of ``[data]``,
``[problem]`` and ``[network]`` against each other. The memory and time a spec needs are estimated by
:mod:`privdist.experiments.resources`.

Every problem becomes one :class:`~privdist.errors.SpecError` that lists each failure with its key path
(``runs[2].params.epsilon: must be a number, got str '1'``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import types
import typing
import warnings
from typing import Annotated, Any, Literal, Optional

from pydantic import ConfigDict, Strict, TypeAdapter
from pydantic import ValidationError as PydanticError

from .schema import DELTA_RANGE, SAFE_NAME, raise_problems, short

__all__ = ["check_semantics", "check_pairwise", "algorithm_fields", "data_kinds", "network_kinds",
           "n_agents_of_network", "SAFE_NAME", "EPSILON_RANGE", "DELTA_RANGE", "MAX_INT_PARAM"]

#: Accepted per-release epsilon (an algorithm's ``epsilon``; ``inf``/``false`` mean no noise where supported).
EPSILON_RANGE = (1e-6, 1e3)
#: Largest integer algorithm hyperparameter (J, T, iterations, chunk, ...).
MAX_INT_PARAM = 10**6


# ------------------------------------------------------------------------------------------------ typed parameters
def _lenient(annotation):
    """The strict pydantic type of a dataclass/signature annotation (``tuple`` also from a TOML array)."""
    if annotation is tuple or typing.get_origin(annotation) is tuple:
        return Annotated[annotation, Strict(False)]
    return annotation


def _optional(annotation) -> bool:
    return type(None) in typing.get_args(annotation)


def _type_name(annotation) -> str:
    names = {float: "a number", int: "an integer", str: "a string", bool: "true or false", tuple: "an array",
             type(None): "false (none)"}
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    args = typing.get_args(annotation) if union else (annotation,)
    return " or ".join(names.get(a, getattr(a, "__name__", str(a))) for a in args)


@functools.lru_cache(maxsize=None)
def _adapter(annotation) -> TypeAdapter:
    return TypeAdapter(_lenient(annotation), config=ConfigDict(strict=True, allow_inf_nan=True))


def _check_value(name: str, value, annotation, path: str) -> str | None:
    """None if ``value`` fits ``annotation`` and the sane ranges of its name, else the problem."""
    if value is False and _optional(annotation) and annotation is not bool:
        return None  # TOML has no null: ``false`` stands for None in an optional parameter
    if annotation is not Any:
        try:
            _adapter(annotation).validate_python(value)
        except PydanticError:
            return f"{path} must be {_type_name(annotation)}, got {type(value).__name__} {short(value)}"
    if name == "epsilon" and isinstance(value, list):  # one budget per agent: each entry is an epsilon
        if not value:
            return f"{path} must hold one epsilon per agent, got an empty list"
        return next((p for j, v in enumerate(value) if (p := _check_value(name, v, float, f"{path}[{j}]"))), None)
    if isinstance(value, float) and math.isnan(value):
        return f"{path} must not be nan"
    if isinstance(value, float) and math.isinf(value) and name != "epsilon":
        return f"{path} must be finite, got {value}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if name == "epsilon" and math.isfinite(value) and not EPSILON_RANGE[0] <= value <= EPSILON_RANGE[1]:
        return (f"{path} must lie in [{EPSILON_RANGE[0]:g}, {EPSILON_RANGE[1]:g}] (inf or false for no "
                f"noise where the algorithm supports it), got {value:g}")
    if name == "delta" and not DELTA_RANGE[0] <= value < DELTA_RANGE[1]:
        return (f"{path} must lie in [{DELTA_RANGE[0]:g}, {DELTA_RANGE[1]:g}) (a larger delta lets a release "
                f"expose a record with that probability), got {value:g}")
    if isinstance(value, int) and abs(value) > MAX_INT_PARAM:
        return f"{path} must be at most {MAX_INT_PARAM} in absolute value, got {value}"
    return None


def algorithm_fields(name: str) -> dict[str, Any] | None:
    """``field -> type annotation`` of the registered algorithm ``name`` (None if unknown)."""
    from ..algorithms.registry import ALGORITHMS

    cls = ALGORITHMS.get(name)
    if cls is None:
        return None
    from ..algorithms.base import Budgeted

    hints = typing.get_type_hints(cls)
    out = {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls)}
    if issubclass(cls, Budgeted):  # a DP algorithm takes one budget per agent too (issue 23)
        out["epsilon"] = typing.Optional[typing.Union[float, list[float]]]
    return out


def _signature_fields(func, skip=("rng", "data_dir", "name", "name_or_path", "split")) -> dict[str, tuple[Any, Any]]:
    hints = typing.get_type_hints(func)
    return {p.name: (hints.get(p.name, Any), p.default) for p in inspect.signature(func).parameters.values()
            if p.name not in skip and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


@functools.lru_cache(maxsize=1)
def data_kinds() -> dict[str, dict[str, tuple[Any, Any]]]:
    """``[data] kind -> {param: (type, default)}`` from the loaders' signatures."""
    from ..data.adult import load_adult
    from ..data.files import file_dataset, load_file
    from ..data.gisette import gisette_synthetic
    from ..data.svmlight import LIBSVM_FILES, load_svmlight
    from ..data.synthetic import dzoa_regression

    gis = _signature_fields(gisette_synthetic)
    out = {"dzoa_synthetic": _signature_fields(dzoa_regression), "adult": _signature_fields(load_adult),
           "gisette_synthetic": gis, "gisette": {**gis, "source": (Literal["auto", "real", "synthetic"], "auto")},
           "generated": {},
           # a user's own file: file_dataset's preprocessing options plus load_file's reader options
           "file": {**_signature_fields(load_file, skip=()), **_signature_fields(file_dataset, skip=())},
           # party-local sources (issue 17): resolved on each party's node, checked by the party_* problem kinds
           "per_party": {"parties": (list, inspect.Parameter.empty), "n_features": (Optional[int], None),
                         "dims": (Optional[list], None), "n_samples": (Optional[int], None),
                         "labels": (Any, None), "placement": (Any, None), "public": (Optional[dict], None)}}
    out.update({name: _signature_fields(load_svmlight) for name in LIBSVM_FILES})
    return out


@functools.lru_cache(maxsize=1)
def network_kinds() -> dict[str, dict[str, tuple[Any, Any]]]:
    """``[network] kind -> {param: (type, default)}`` from the generators' signatures (static and online)."""
    from ..network import generators

    out = {kind: _signature_fields(getattr(generators, kind), skip=("rng",)) for kind in generators.NETWORK_KINDS}
    sched = {"schedule": (Literal["cyclic", "random"], "cyclic"), "seed": (Optional[int], None)}
    out["s4"] = dict(sched)
    out["random_time_varying"] = {"n": (int, inspect.Parameter.empty), "n_matrices": (int, 3), "density": (int, 2),
                                  **sched}
    return out


#: Types of the ``[problem]`` keys of the shipped problem kinds (their names are checked by the problem kind).
_PROBLEM_TYPES = {"kind": str, "loss": str, "regularizer": str, "reg_weight": float, "reference": str, "lam": float, "loss_scale": str,
                  "layout": str, "radius": float, "noise": float, "n_agents": int, "dim": int,
                  "sgd": dict}
_ONLINE_NETWORKS = ("s4", "random_time_varying")
_SIZE_PARAMS = ("n", "n_agents", "samples_per_agent", "n_features", "n_train", "n_test", "n_informative",
                "n_factors", "n_matrices", "dim", "max_attempts")


def _check_table(params: dict, fields: dict, where: str, what: str) -> list[str]:
    problems = []
    for key in params:
        if key not in fields:
            problems.append(f"{where}.{key} is not a parameter of {what}; known: {sorted(fields)}")
    for key, (annotation, default) in fields.items():
        if key not in params:
            if default is inspect.Parameter.empty:
                problems.append(f"{where}.{key} is a required parameter of {what}")
            continue
        value = params[key]
        problem = _check_value(key, value, annotation, f"{where}.{key}")
        if problem is None and key in _SIZE_PARAMS and isinstance(value, int) and value < 1:
            problem = f"{where}.{key} must be >= 1, got {value}"
        if problem:
            problems.append(problem)
    return problems


def n_agents_of_network(network) -> int | None:
    """Number of agents of a ``[network]`` table (:class:`~privdist.experiments.schema.NetworkSpec`), without building
    it (None if it cannot be told)."""
    kind, params = network.kind, network.params
    if kind == "dzoa5":
        return 5
    if kind == "s4":
        return 6
    n = params.get("n")
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _data_agents(spec) -> tuple[int | None, str]:
    if spec.data.kind == "dzoa_synthetic":  # the loader's own default when the spec does not set it
        return spec.data.params.get("n_agents", data_kinds()["dzoa_synthetic"]["n_agents"][1]), "[data].params.n_agents"
    if "n_agents" in spec.problem:
        return spec.problem["n_agents"], "[problem].n_agents"
    return None, ""


def check_semantics(spec, entries: list, source: str) -> None:
    """Check run, data and network parameters and cross-field consistency of a parsed spec.

    Args:
        spec: the :class:`~privdist.experiments.spec.ExperimentSpec` (runs expanded).
        entries: the ``[[runs]]`` entries as written (:class:`~privdist.experiments.schema.RunEntry`; key paths).
        source: name of the spec in messages.

    Raises:
        SpecError: naming every failing key path.
    """
    from ..algorithms.registry import ALGORITHMS, make_algorithm

    problems: list[str] = []
    for i, entry in enumerate(entries):
        fields = algorithm_fields(entry.algorithm)
        if fields is None:
            problems.append(f"runs[{i}].algorithm is an unknown algorithm {entry.algorithm!r}; known: "
                            f"{sorted(ALGORITHMS)}")
            continue
        for key, value in entry.params.items():
            if key not in fields:
                problems.append(f"runs[{i}].params.{key} is not a parameter of algorithm {entry.algorithm!r}; "
                                f"known: {list(fields)}")
            elif (p := _check_value(key, value, fields[key], f"runs[{i}].params.{key}")) is not None:
                problems.append(p)
        for key, values in entry.sweep.items():
            if key not in fields:
                problems.append(f"runs[{i}].sweep.{key} is not a parameter of algorithm {entry.algorithm!r}; "
                                f"known: {list(fields)}")
                continue
            problems += [p for j, v in enumerate(values)
                         if (p := _check_value(key, v, fields[key], f"runs[{i}].sweep.{key}[{j}]")) is not None]
    if not problems:  # types are right: let each algorithm check its own ranges (ValidationError names the value)
        for rs in spec.runs:
            try:
                with warnings.catch_warnings():  # caveats are warned about when the run is built, not here
                    warnings.simplefilter("ignore")
                    make_algorithm(rs.algorithm, **rs.params)
            except (ValueError, TypeError, LookupError) as exc:
                key = next((k for k in rs.params if str(exc).startswith(k)), None)
                where = f"runs[{rs.entry}].params.{key}" if key else f"runs[{rs.entry}] ({rs.label!r})"
                problems.append(f"{where}: {exc}")
    for key, value in spec.problem.items():
        if key in _PROBLEM_TYPES and (p := _check_value(key, value, _PROBLEM_TYPES[key], f"[problem].{key}")):
            problems.append(p)
    data_kind, net_kind = spec.data.kind, spec.network.kind
    known_data = data_kinds()
    if data_kind not in known_data:
        problems.append(f"[data].kind is an unknown data set {data_kind!r}; known: {sorted(known_data)}")
    else:
        problems += _check_table(spec.data.params, known_data[data_kind], "[data].params",
                                 f"data set {data_kind!r}")
    known_net = network_kinds()
    online = spec.problem["kind"].startswith("online_")
    allowed = [k for k in known_net if (k in _ONLINE_NETWORKS) == online]
    if net_kind not in allowed:
        problems.append(f"[network].kind is an unknown network kind {net_kind!r} for problem kind "
                        f"{spec.problem['kind']!r}; known: {sorted(allowed)}")
    else:
        problems += _check_table(spec.network.params, known_net[net_kind], "[network].params",
                                 f"network kind {net_kind!r}")
    if not problems:
        n_net = n_agents_of_network(spec.network)
        n_data, where = _data_agents(spec)
        if n_net is not None and n_data is not None and n_data != n_net:
            problems.append(f"{where}: {n_data} agents, but [network] {net_kind!r} has {n_net} agents; make them "
                            "equal (the data would otherwise be split over the network's agents)")
        problems += check_pairwise(spec, n_net if n_net is not None else n_data)
    raise_problems(problems, source)


def check_pairwise(spec, n_agents: int | None) -> list[str]:
    """Problems of ``[privacy] pairwise_observers`` against the spec's ``n_agents`` (when it can be told): each
    observer a party of every run with a per-pair model (issue 40). Parties are numbered from 0 as everywhere in
    privdist: agents ``0..N-1``, and ``N`` the coordinator of a protocol that has one (``has_coordinator``). A run
    without a model ignores the observers (its section says "not modelled"). The per-pair options without
    ``pairwise = true`` are problems too (they would be ignored)."""
    from ..algorithms.registry import make_algorithm

    observers = spec.privacy.pairwise_observers
    if not spec.privacy.pairwise:  # options of a report that is off would be silently ignored
        return [f"[privacy].{key} is set but [privacy].pairwise is false: set pairwise = true or remove {key}"
                for key in ("pairwise_observers", "pairwise_rtol") if key in spec.privacy.model_fields_set]
    if not observers or n_agents is None:
        return []
    problems = []
    for rs in spec.runs:
        algorithm = make_algorithm(rs.algorithm, **rs.params)
        if not hasattr(algorithm, "linear_protocol"):
            continue
        coordinator = bool(getattr(algorithm, "has_coordinator", False))
        top = n_agents if coordinator else n_agents - 1
        bad = [(i, o) for i, o in enumerate(observers) if o > top]
        if bad:
            i, o = bad[0]
            valid = (f"agents 0..{n_agents - 1} and the coordinator {n_agents}" if coordinator
                     else f"agents 0..{n_agents - 1}")
            problems.append(f"[privacy].pairwise_observers[{i}] = {o} is not a party of run {rs.label!r} "
                            f"({rs.algorithm}, {n_agents} agents): valid observers are {valid}")
    return problems
