"""Experiment specifications: TOML files describing a figure as data (DESIGN idea 5).

A spec names the data, network, problem, the algorithm runs (with optional per-run sweeps), metrics, plots,
privacy reporting and the paper's claims in checkable form. Unknown keys are errors, so a typo never silently
falls back to a default. See ``catalog/quickstart.toml`` for a complete example.

Every key's type, range and default is in the schema (:mod:`privdist.experiments.schema`, pydantic); its typed
result becomes the :class:`ExperimentSpec` (``spec.privacy.delta``, ``spec.data.partition``, ...), so no default is
restated downstream. :func:`parse_spec` then checks what depends on registries and on several keys at once.
"""

from __future__ import annotations

import dataclasses
import itertools
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .papers import PAPER_ALIASES, PAPERS

if typing.TYPE_CHECKING:  # the schema (pydantic) is imported when a spec is parsed (start-up time)
    from .schema import DataSpec, NetworkSpec, OutputSpec, PrivacySpec, RunEntry, SpecModel, TuningSpec

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ExperimentSpec", "RunSpec", "parse_spec", "load_spec_file", "PAPERS", "PAPER_ALIASES"]

#: Top-level tables a setting may create when the spec does not have them yet (e.g. ``privacy.secure=true``).
_SECTION_KEYS = frozenset({"data", "network", "problem", "privacy", "quick", "params", "output"})


@dataclass(frozen=True)
class RunSpec:
    """One algorithm configuration (after sweep expansion).

    Attributes:
        label: unique label in the experiment.
        algorithm: registry name; params: its hyperparameters.
        group: label template of the entry it came from; sweep: the swept values of this run.
    """

    label: str
    algorithm: str
    params: dict[str, Any]
    group: str
    sweep: dict[str, Any] = field(default_factory=dict)
    entry: int = field(default=0, compare=False)  # index of its [[runs]] entry (for key paths in errors)


@dataclass(frozen=True)
class ExperimentSpec:
    """A parsed, validated experiment: the schema's typed tables (:mod:`.schema`, every default filled in), the
    expanded runs, and the checked metrics, plots and claims.

    Attributes:
        data, network, privacy: the ``[data]``, ``[network]`` and ``[privacy]`` tables (:class:`.schema.DataSpec`,
            :class:`.schema.NetworkSpec`, :class:`.schema.PrivacySpec`).
        problem: the ``[problem]`` table (its keys are the problem kind's), ``kind`` always set.
        tuning: the ``[tuning]`` table (:class:`.schema.TuningSpec`) or None; ``tuning_record`` the choices made
            on the tuning draws (set by the runner; ``results.json["tuning"]``).
        raw: the spec as read (recorded in results and fingerprinted; overrides re-parse it).
    """

    name: str
    title: str
    paper: str
    figure: str
    description: str
    trials: int
    quick_trials: int
    seed: int
    rounds: int
    estimated_seconds: float
    data: DataSpec
    network: NetworkSpec
    problem: dict[str, Any]
    metrics: tuple[str, ...]
    runs: tuple[RunSpec, ...]
    privacy: PrivacySpec
    plots: tuple[dict[str, Any], ...]
    claims: tuple[dict[str, Any], ...]
    mode: str = "full"
    skipped_claims: tuple[dict[str, Any], ...] = ()
    tuning: TuningSpec | None = None
    tuning_record: dict[str, Any] | None = None
    output: OutputSpec | None = None  # ``[output]`` (:class:`.schema.OutputSpec`); None: the defaults
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def with_overrides(self, trials: int | None = None, seed: int | None = None,
                       secure: bool | None = None) -> "ExperimentSpec":
        """A copy with ``trials`` and/or ``seed`` replaced, or secure noise (``[privacy] secure``) switched."""
        raw = dict(self.raw)
        if secure is not None:
            raw["privacy"] = {**raw.get("privacy", {}), "secure": secure}
        if trials is not None:
            raw["trials"] = trials
        if seed is not None:
            raw["seed"] = seed
        return parse_spec(raw, source=f"{self.name} (overridden)")

    def with_settings(self, settings: list[str]) -> "ExperimentSpec":
        """A copy with ``KEY.PATH=VALUE`` settings applied (``privdist run --set runs.0.params.epsilon=0.5``).

        ``KEY.PATH`` walks tables by key and arrays by index (``runs.0``, ``plots.1.file``); ``VALUE`` is read as a
        TOML value (``0.5``, ``true``, ``[1, 2]``, ``"text"``), or as a bare string when it is not one. The result
        goes through the whole validation again, so a setting never bypasses it.

        Raises:
            SpecError: a malformed setting, or a path that does not exist in the spec (named).
        """
        import copy

        try:
            import tomllib
        except ModuleNotFoundError:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        raw = copy.deepcopy(dict(self.raw))
        for item in settings:
            path, sep, text = item.partition("=")
            keys = path.strip().split(".")
            if not sep or not all(keys):
                raise SpecError(f"--set {item!r}: expected KEY.PATH=VALUE, e.g. runs.0.params.epsilon=0.5")
            try:
                value = tomllib.loads(f"v = {text}")["v"]
            except tomllib.TOMLDecodeError:
                value = text
            node = raw
            for depth, key in enumerate(keys[:-1]):
                where = ".".join(keys[: depth + 1])
                if isinstance(node, list) and key.isdigit() and int(key) < len(node):
                    node = node[int(key)]
                elif isinstance(node, dict):
                    node = node.setdefault(key, {}) if key in _SECTION_KEYS else node.get(key)
                else:
                    node = None
                if not isinstance(node, (dict, list)):
                    raise SpecError(f"--set {item!r}: {where} is not a table or array of this spec")
            last = keys[-1]
            if isinstance(node, list):
                if not (last.isdigit() and int(last) < len(node)):
                    raise SpecError(f"--set {item!r}: no element {last} in {'.'.join(keys[:-1])}")
                node[int(last)] = value
            else:
                node[last] = value
        return parse_spec(raw, source=f"{self.name} (--set)")

    def quick(self) -> "ExperimentSpec":
        """The quick variant (``privdist reproduce --quick``): ``quick_trials`` trials and the ``[quick]`` table.

        ``[quick]`` may set ``rounds``, ``sweep`` (``{param = [values]}``: every run entry that sweeps ``param``
        sweeps these values instead), ``skip_runs`` (labels of ``[[runs]]`` entries left out),
        ``estimated_seconds`` and ``tuning`` (``trials``, ``rounds``, ``sweep`` replacing those of ``[tuning]``: quick
        mode tunes too, on fewer draws; :mod:`.tuning`). Plots drop the runs that no longer exist (and are left out when none remain);
        claims that refer to such runs are kept as ``skipped_claims`` and reported as not evaluated. The result
        records ``mode = "quick"``, so its fingerprint differs from the full experiment's.
        """
        if self.mode == "quick":
            return self
        raw = {k: v for k, v in self.raw.items() if k != "quick"}
        q = self.raw.get("quick", {})
        raw.update(mode="quick", trials=self.quick_trials, rounds=q.get("rounds", self.rounds))
        if "tuning" in q:  # checked by parse_spec: keys of the [tuning] table the spec has
            raw["tuning"] = {**self.raw["tuning"], **q["tuning"]}
        if "estimated_seconds" in q:
            raw["estimated_seconds"] = q["estimated_seconds"]
        else:
            raw["estimated_seconds"] = self.estimated_seconds * self.quick_trials / self.trials * raw["rounds"] / self.rounds
        sweep = q.get("sweep", {})
        skip = set(q.get("skip_runs", []))
        raw["runs"] = [{**e, "sweep": {p: sweep.get(p, vals) for p, vals in e["sweep"].items()}} if "sweep" in e else e
                       for e in self.raw.get("runs", []) if e.get("label") not in skip]
        if skip and "tuning" in raw:  # skipped entries are neither tuned nor receive a shared choice
            t = raw["tuning"]
            raw["tuning"] = {**t, "grids": {k: v for k, v in t.get("grids", {}).items() if k not in skip},
                             **({"share": {k: [o for o in v if o not in skip] for k, v in t["share"].items()
                                           if k not in skip}} if "share" in t else {})}
        return parse_spec(raw, source=f"{self.name} (quick)")

    def config(self) -> dict[str, Any]:
        """JSON-serialisable configuration (recorded in results.json and fingerprinted)."""
        return dict(self.raw)


def _unknown(keys, allowed, where, source):
    extra = sorted(set(keys) - set(allowed))
    if extra:
        raise SpecError(f"{source}: unknown key(s) {extra} in {where}; allowed: {sorted(allowed)}")


def _expand_runs(entries: list[RunEntry], source) -> tuple[RunSpec, ...]:
    runs: list[RunSpec] = []
    for i, entry in enumerate(entries):
        where = f"runs[{i}]"
        label, algorithm, params, sweep = entry.label, entry.algorithm, dict(entry.params), entry.sweep
        names = sorted(sweep)
        for values in itertools.product(*(sweep[n] for n in names)) if names else [()]:
            point = dict(zip(names, values))
            try:
                lab = label.format(**{**params, **point})
            except (KeyError, IndexError) as exc:
                raise SpecError(f"{source}: {where}.label {label!r} refers to unknown field {exc}") from None
            except (ValueError, AttributeError, TypeError) as exc:
                raise SpecError(f"{source}: {where}.label {label!r} is not a valid template: {exc}") from None
            runs.append(RunSpec(lab, algorithm, _none_for_false({**params, **point}, algorithm), label, point, i))
    labels = [r.label for r in runs]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise SpecError(f"{source}: run labels must be unique, repeated: {dup} (put swept values in the label)")
    return tuple(runs)


def _with_budget(runs: tuple[RunSpec, ...], privacy) -> tuple[RunSpec, ...]:
    """``[privacy] budget`` for every run of a budgeted (DP) algorithm that does not set its own ``budget``; with a
    total budget the run's ``delta`` defaults to ``[privacy] delta`` (the guarantee is then reported at the delta
    it was calibrated for). Written into the run's parameters, so results record what each run was given."""
    if privacy.budget is None:
        return runs
    from .validate import algorithm_fields

    out = []
    for r in runs:
        fields = algorithm_fields(r.algorithm) or {}
        params = dict(r.params)
        if "budget" in fields and "budget" not in params:
            params["budget"] = privacy.budget
            if privacy.budget == "total" and "delta" in fields and "delta" not in params:
                params["delta"] = privacy.delta
        out.append(dataclasses.replace(r, params=params))
    return tuple(out)


def _none_for_false(params: dict, algorithm: str) -> dict:
    """TOML has no null: ``false`` for an optional (``X | None``) non-bool algorithm parameter means None."""
    from .validate import algorithm_fields

    fields = algorithm_fields(algorithm) or {}
    return {k: None if v is False and k in fields and fields[k] is not bool and type(None) in
            typing.get_args(fields[k]) else v for k, v in params.items()}


def _check_tuning(table: TuningSpec | None, runs, seed: int, source: str) -> None:
    """Cross-checks of the ``[tuning]`` table (:mod:`privdist.experiments.tuning`); a tuned parameter is never
    swept."""
    if table is None:
        return
    from .tuning import check_tuning

    check_tuning(table, {r.group for r in runs}, seed, source, {r.group: r.algorithm for r in runs})
    for template, grid in table.grids.items():
        swept = sorted(set(grid) & {p for r in runs if r.group == template for p in r.sweep})
        if swept:
            raise SpecError(f"{source}: [tuning].grids.{template!r} tunes {swept}, which the entry sweeps")


def _check_quick(model: SpecModel, source: str) -> None:
    """``[quick]`` names only what the spec has: swept parameters, run labels, a ``[tuning]`` table."""
    quick = model.quick
    unswept = sorted(set(quick.sweep) - {p for e in model.runs for p in e.sweep})
    if unswept:
        raise SpecError(f"{source}: [quick].sweep names parameter(s) {unswept} that no run sweeps")
    bad_skip = sorted(set(quick.skip_runs) - {e.label for e in model.runs})
    if bad_skip:
        raise SpecError(f"{source}: [quick].skip_runs names unknown [[runs]] label(s) {bad_skip}")
    if quick.tuning is not None and model.tuning is None:
        raise SpecError(f"{source}: [quick].tuning replaces keys of the spec's [tuning] table, which it does not have")


def parse_spec(raw: dict[str, Any], source: str = "<spec>") -> ExperimentSpec:
    """Validate a spec dictionary (as read from TOML) and expand its sweeps.

    Raises:
        SpecError: unknown or missing keys, wrong types, bad references between claims/plots and runs.
    """
    from .build import problem_kind  # the problem kind decides which keys and metrics exist
    from .claims import CLAIM_KINDS
    from .plots import PLOTTERS
    from .schema import PlotEntry, check_structure
    from .validate import check_semantics

    model = check_structure(raw, source)  # every key's type, range and name (pydantic), before anything uses them
    problem = model.problem
    kind = problem_kind(problem["kind"])
    _unknown(problem, kind.keys | {"kind"}, f"[problem] (kind {kind.name!r})", source)
    metrics = tuple(model.metrics or [kind.metrics[0]])
    bad = [m for m in metrics if m not in kind.metrics]
    unavailable = {m: kind.unavailable[m] for m in bad if m in kind.unavailable}
    if unavailable:
        raise SpecError(f"{source}: metric(s) {sorted(unavailable)} are unavailable for problem kind {kind.name!r}: "
                        + "; ".join(f"{m}: {why}" for m, why in unavailable.items()))
    if bad:
        raise SpecError(f"{source}: unknown metric(s) {bad} for problem kind {kind.name!r}; known: {list(kind.metrics)}")
    runs = _with_budget(_expand_runs(model.runs, source), model.privacy)
    labels = {r.label for r in runs} | {r.group for r in runs}
    mode = model.mode
    _check_quick(model, source)
    plots = []
    for i, p in enumerate(raw.get("plots", [])):
        if p.get("kind") not in PLOTTERS:
            raise SpecError(f"{source}: plots[{i}].kind must be one of {sorted(PLOTTERS)}, got {p.get('kind')!r}")
        _unknown(p, set(PlotEntry.model_fields) | PLOTTERS[p["kind"]][1], f"plots[{i}]", source)
        if p.get("metric", metrics[0]) not in metrics:
            raise SpecError(f"{source}: plots[{i}].metric {p.get('metric')!r} is not among metrics {list(metrics)}")
        p = dict(p)
        if "runs" in p:
            missing = [r for r in p["runs"] if r not in labels]
            if missing and mode != "quick":
                raise SpecError(f"{source}: plots[{i}] refers to unknown run label(s) {missing}")
            p["runs"] = [r for r in p["runs"] if r in labels]
            if not p["runs"]:  # a quick variant left none of its runs: no figure (an empty list would mean "all")
                continue
        plots.append(p)
    claims, skipped = [], []
    for i, c in enumerate(raw.get("claims", [])):
        if c.get("kind") not in CLAIM_KINDS:
            raise SpecError(f"{source}: claims[{i}].kind must be one of {sorted(CLAIM_KINDS)}, got {c.get('kind')!r}")
        refs = [c.get("run")] + list(c.get("than", [])) + list(c.get("runs", []))
        missing = [r for r in refs if r is not None and r not in labels]
        c = {"id": c.get("id", f"claim{i + 1}"), **c}
        if missing and mode == "quick":
            skipped.append({**c, "missing": missing})
        elif missing:
            raise SpecError(f"{source}: claims[{i}] refers to unknown run label(s) {missing}")
        else:
            claims.append(c)
    _check_tuning(model.tuning, runs, model.seed, source)
    spec = ExperimentSpec(
        name=model.name, title=model.title, paper=model.paper, figure=model.figure, description=model.description,
        trials=model.trials, quick_trials=model.quick_trials, seed=model.seed, rounds=model.rounds,
        estimated_seconds=model.estimated_seconds, data=model.data, network=model.network, problem=problem,
        metrics=metrics, runs=runs, privacy=model.privacy, plots=tuple(plots), claims=tuple(claims), mode=mode,
        skipped_claims=tuple(skipped), tuning=model.tuning, output=model.output, raw=raw)
    check_semantics(spec, model.runs, source)
    return spec


def load_spec_file(path: str | Path) -> ExperimentSpec:
    """Read and validate a TOML spec file (SpecError on malformed TOML, naming the file and position)."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"no experiment spec file {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: malformed TOML: {exc}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read experiment spec file {path}: {exc}") from None
    return parse_spec(raw, source=str(path))
