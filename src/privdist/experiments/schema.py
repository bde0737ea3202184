"""The experiment spec's schema: one pydantic model per TOML table, with every key's type, range and default.

:func:`check_structure` validates a raw spec (as read from TOML) against :class:`SpecModel` and returns the typed
result, which :func:`privdist.experiments.spec.parse_spec` turns into the :class:`ExperimentSpec` the runner uses:
``spec.privacy.delta``, ``spec.data.partition``, ``spec.tuning.score`` come from here, so each default is stated
once (issue 23). What depends on registries (algorithms and their parameters, problem kinds, metrics, plot and
claim kinds, data loaders, network generators) and on several keys at once (run labels, references between
claims, plots and runs, tuning grids) is checked afterwards by ``parse_spec``, :mod:`.validate` and :mod:`.tuning`.

A new key is a field with its default in its table's model (e.g. a ``[privacy]`` setting: a field of
:class:`PrivacySpec`); an unknown key is an error naming the allowed ones. Every failing key becomes one line of a
single :class:`~privdist.errors.SpecError` with its key path (``[privacy].delta must be < 0.1, got 0.5``).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticError

from .._checks import shown
from ..errors import SpecError
from ..privacy.accountants import ACCOUNTANTS
from .papers import PAPERS

__all__ = ["SpecModel", "DataSpec", "NetworkSpec", "PrivacySpec", "QuickSpec", "TuningSpec", "RunEntry", "PlotEntry",
           "ClaimEntry", "check_structure", "raise_problems", "short", "SAFE_NAME", "DELTA_RANGE",
           "DEFAULT_PROBLEM_KIND", "INT64"]

#: A name that is a plain file name (experiment ``name``, plot ``file``): no separators, no leading dot.
SAFE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.+=-]{0,127}$"
#: Accepted delta, ``[privacy] delta`` and an algorithm's ``delta``: ``lo <= delta < hi``. A delta of 0.1 or more
#: allows the mechanism to expose a record with that probability, and the paper formulas then look better
#: than RDP (issue 15: a per-release delta 0.5 gave paper epsilon 1.9 against RDP 6.4).
DELTA_RANGE = (1e-12, 0.1)
#: ``[data] partition``: contiguous | shuffle | column (natural silos, params.party_column) | dirichlet[:ALPHA]
#: (label skew).
PARTITION = r"^(contiguous|shuffle|column|dirichlet(:[0-9.eE+-]+)?)$"
_PATTERN_TEXT = {SAFE_NAME: "a plain file name (letters, digits, _ . + = -; no '/' and no leading '.')",
                 PARTITION: "'contiguous', 'shuffle', 'column' or 'dirichlet[:ALPHA]'"}
#: ``[problem] kind`` when the table does not name one.
DEFAULT_PROBLEM_KIND = "horizontal_erm"
INT64 = 2**63 - 1


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


_Int = Annotated[int, Field(ge=1, le=INT64)]
#: a party id: agents are numbered from 0 everywhere (``agent 0``, ``party 0``); ``N`` is a coordinator
_PartyId = Annotated[int, Field(ge=0, le=INT64)]
_NonEmpty = Annotated[list[Any], Field(min_length=1)]
_Sweep = dict[str, _NonEmpty]  # parameter -> the values it takes


class RunEntry(_Model):
    """One ``[[runs]]`` entry (a label template, expanded over its sweep by ``parse_spec``)."""

    label: Annotated[str, Field(min_length=1, max_length=200)]
    algorithm: str
    params: dict[str, Any] = {}
    sweep: _Sweep = {}


class DataSpec(_Model):
    """``[data]``: the data set (a loader of the data registry), its parameters and how rows go to agents."""

    kind: str
    params: dict[str, Any] = {}
    partition: Annotated[str, Field(pattern=PARTITION)] = "contiguous"


class NetworkSpec(_Model):
    """``[network]``: the network generator and its parameters."""

    kind: str
    params: dict[str, Any] = {}


class PrivacySpec(_Model):
    """``[privacy]``: how every run's privacy is reported, and where its noise comes from."""

    delta: Annotated[float, Field(ge=DELTA_RANGE[0], lt=DELTA_RANGE[1])] = 1e-5
    accountants: Annotated[list[Literal[ACCOUNTANTS]], Field(min_length=1)] = list(ACCOUNTANTS)
    secure: bool = False  # noise from fresh OS entropy, never recorded (research mode: from the seed)
    # how every DP run's ``epsilon`` is meant when the run does not say (issue 23): "round" = per release (the
    # papers'), "total" = each agent's budget for the whole run (PLD-calibrated; ``delta`` above is then its delta)
    budget: Optional[Literal["round", "total"]] = None
    # per-pair (network) DP of every run with a linear-Gaussian model (issue 29): observer x target matrix; the
    # observers (party ids: agents 0..N-1, and N for the coordinator of a protocol with one) default to every agent
    # up to 200 agents, else 20 evenly spaced ones; an empty list is refused (leave the key out for the default).
    # The range is checked against the spec's agents (validate.check_pairwise) and each run's protocol
    pairwise: bool = False
    pairwise_observers: Optional[Annotated[list[_PartyId], Field(min_length=1)]] = None
    # each per-pair mu is a certified upper bound within this relative gap (in mu^2) of an attained value; 2e-2 is
    # about 3x faster than the default on a 1,000-agent matrix (benchmarks/bench_network_dp.py)
    pairwise_rtol: Annotated[float, Field(gt=0, le=0.5)] = 1e-3


class OutputSpec(_Model):
    """``[output]``: what a run writes beside its release (issue 24, the release boundary of
    :mod:`privdist.experiments.boundary`). ``owner_metrics``: write the owner-only evaluation (metric traces,
    figures, summary, per-trial curves and run diagnostics, computed noise-free from the data) of a run on a user's
    own data; default (None): written, except in secure mode (``[privacy] secure``, ``--secure``) on a user's data."""

    owner_metrics: Optional[bool] = None


class QuickTuning(_Model):
    """``[quick] tuning``: the keys of ``[tuning]`` quick mode replaces."""

    trials: Optional[_Int] = None
    rounds: Optional[_Int] = None
    sweep: Optional[_Sweep] = None


class QuickSpec(_Model):
    """``[quick]``: the quick variant (``privdist reproduce --quick``; see ``ExperimentSpec.quick``). Keys left out
    keep the full experiment's values."""

    rounds: Optional[_Int] = None
    sweep: _Sweep = {}
    skip_runs: list[str] = []
    estimated_seconds: Optional[Annotated[float, Field(ge=0)]] = None
    tuning: Optional[QuickTuning] = None


class TuningSpec(_Model):
    """``[tuning]``: hyperparameters chosen on tuning draws (:mod:`privdist.experiments.tuning`)."""

    seed: Annotated[int, Field(ge=0, le=INT64)]
    trials: _Int
    rounds: Optional[_Int] = None  # None: the spec's rounds (filled in by SpecModel)
    score: Literal["log", "mean"] = "log"
    grids: Annotated[dict[str, Annotated[_Sweep, Field(min_length=1)]], Field(min_length=1)]
    equal_size: bool = True
    sweep: _Sweep = {}
    share: dict[str, list[str]] = {}


_Scale = Literal["linear", "log", "symlog", "logit"]


class PlotEntry(_Model):
    """One ``[[plots]]`` entry; a plot kind may accept more keys (checked by ``parse_spec``); the defaults of the keys
    left out are the plot code's (:mod:`privdist.experiments.plots`)."""

    model_config = ConfigDict(extra="allow")
    kind: str
    file: Optional[Annotated[str, Field(pattern=SAFE_NAME)]] = None
    metric: Optional[str] = None
    yscale: Optional[_Scale] = None
    xscale: Optional[_Scale] = None
    runs: Optional[list[str]] = None
    x: Optional[str] = None
    title: Optional[str] = None


class ClaimEntry(_Model):
    """One ``[[claims]]`` entry; the defaults of the keys left out are the claim kind's
    (:mod:`privdist.experiments.claims`)."""

    kind: str
    id: Optional[str] = None
    text: Optional[str] = None
    metric: Optional[str] = None
    run: Optional[str] = None
    than: Optional[list[str]] = None
    runs: Optional[list[str]] = None
    value: Optional[float] = None
    direction: Optional[str] = None
    margin: Optional[Annotated[float, Field(ge=0, lt=1)]] = None


class SpecModel(_Model):
    """A whole spec. Defaults that depend on other keys are filled in after validation: ``title`` (the name),
    ``quick_trials`` (``min(trials, 5)``), ``[problem] kind`` and ``[tuning] rounds`` (the spec's rounds);
    ``metrics`` left out is the problem kind's first metric (``parse_spec``, which knows the kinds)."""

    name: Annotated[str, Field(pattern=SAFE_NAME)]
    title: Optional[str] = None
    paper: Literal[("",) + PAPERS] = ""
    figure: str = ""  # a figure number may be written as an integer
    description: str = ""
    trials: _Int
    quick_trials: Optional[_Int] = None
    seed: Annotated[int, Field(ge=0, le=INT64)] = 0
    rounds: _Int
    estimated_seconds: Annotated[float, Field(ge=0)] = 0.0
    quick: QuickSpec = QuickSpec()
    mode: Literal["full", "quick"] = "full"
    data: DataSpec
    network: NetworkSpec
    problem: dict[str, Any] = {}
    metrics: Optional[Annotated[list[str], Field(min_length=1)]] = None
    runs: Annotated[list[RunEntry], Field(min_length=1)]
    privacy: PrivacySpec = PrivacySpec()
    output: OutputSpec = OutputSpec()
    plots: list[PlotEntry] = []
    claims: list[ClaimEntry] = []
    tuning: Optional[TuningSpec] = None

    @field_validator("figure", mode="before")
    @classmethod
    def _figure_number(cls, value):
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _derived_defaults(self) -> "SpecModel":
        self.title = self.name if self.title is None else self.title
        self.quick_trials = min(self.trials, 5) if self.quick_trials is None else self.quick_trials
        self.problem = {"kind": DEFAULT_PROBLEM_KIND, **self.problem}
        if self.tuning is not None and self.tuning.rounds is None:
            self.tuning.rounds = self.rounds
        return self


# ------------------------------------------------------------------------------------------------ error messages
_SECTIONS = ("data", "network", "privacy", "quick", "problem", "tuning")


def _path(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not out and part in _SECTIONS:
            out = f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _strip(annotation):
    """The model or container type inside ``Optional[...]``/``Annotated[...]``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:
            return annotation


def _model_at(loc):
    """The model class of the table at ``loc`` (None if it is no model)."""
    annotation = SpecModel
    for part in loc:
        annotation = _strip(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part)
            if field is None:
                return None
            annotation = field.annotation
        elif typing.get_origin(annotation) in (list, dict):
            annotation = typing.get_args(annotation)[-1]
        else:
            return None
    annotation = _strip(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


_BOUNDS = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"), "less_than_equal": ("<=", "le"),
           "less_than": ("<", "lt")}
_EXPECT = {"int_type": "an integer", "float_type": "a number", "string_type": "a string", "bool_type": "true or false",
           "list_type": "an array", "dict_type": "a table", "model_type": "a table", "model_attributes_type": "a table"}


def _describe(err: dict) -> str:
    kind, value = err["type"], err.get("input")
    ctx = err.get("ctx", {})
    if kind in _BOUNDS:
        symbol, key = _BOUNDS[kind]
        # "an integer" only where the bound is one (a float field given 0 is not asked for an integer, issue 26)
        what = "an integer " if isinstance(value, int) and isinstance(ctx.get(key), int) else ""
        return f"must be {what}{symbol} {ctx.get(key)}, got {short(value)}"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')}, got {short(value)}"
    if kind in _EXPECT:
        return f"must be {_EXPECT[kind]}, got {type(value).__name__} {short(value)}"
    if kind == "too_short":
        what, n = ("table", "key") if isinstance(value, dict) else ("array", "item")
        least = ctx.get("min_length", 1)
        return f"must be a non-empty {what} (at least {least} {n}{'s' if least != 1 else ''}), got {short(value)}"
    if kind == "string_pattern_mismatch":
        pattern = ctx.get("pattern")
        return f"must be {_PATTERN_TEXT.get(pattern, f'a match of {pattern}')}, got {short(value)}"
    return f"{err['msg'][0].lower()}{err['msg'][1:]}, got {short(value)}"


def short(value) -> str:
    """``repr(value)``, cut to 60 characters (numpy scalars as plain numbers)."""
    return shown(value)


def raise_problems(problems: list[str], source: str) -> None:
    """One :class:`SpecError` listing the first 8 problems (and how many more), if there are any."""
    if problems:
        more = f" (and {len(problems) - 8} more)" if len(problems) > 8 else ""
        raise SpecError(f"{source}: " + "; ".join(problems[:8]) + more)


def _problems(exc: PydanticError) -> list[str]:
    """One line per failing key path; unknown keys grouped per table with the allowed ones, missing keys named."""
    problems, seen, unknown = [], set(), {}
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if p not in ("function-after",))
        if err["type"] == "extra_forbidden":
            unknown.setdefault(loc[:-1], []).append(loc[-1])
            continue
        if err["type"] == "missing":
            where = _path(loc[:-1]) or "spec"
            line = f"missing required key {loc[-1]!r} in {where}"
        else:
            line = f"{_path(loc) or 'spec'} {_describe(err)}"
        if line not in seen:
            seen.add(line)
            problems.append(line)
    for parent, keys in unknown.items():
        model = _model_at(parent)
        allowed = f"; allowed: {sorted(model.model_fields)}" if model is not None else ""
        problems.insert(0, f"unknown key(s) {sorted(map(str, keys))} in {_path(parent) or 'the top level'}{allowed}")
    return problems


def check_structure(raw, source: str) -> SpecModel:
    """Check the type, range and name of every key of a raw spec; return the typed spec with its defaults.

    Raises:
        SpecError: naming every failing key path.
    """
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: a spec must be a TOML table")
    try:
        return SpecModel.model_validate(raw)
    except PydanticError as exc:
        raise_problems(_problems(exc), source)
        raise  # pragma: no cover - _problems always names at least one
