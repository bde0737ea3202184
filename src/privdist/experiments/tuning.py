"""A fair tuning protocol (issue 14 item 2): hyperparameters chosen on tuning draws, equal effort per method.

A spec's ``[tuning]`` table names, per ``[[runs]]`` entry (its label template), a grid of hyperparameter values:

```toml
[tuning]
seed = 1000            # data and noise of the tuning draws: never the reported trials' seed
trials = 2             # tuning trials per grid point
rounds = 100           # optional, default the spec's rounds
score = "log"          # mean over the entry's runs and the trials of log(final metric) ("log", default) or of it
grids = { "D-ZOA eps={epsilon}" = { step_scale = [0.1, 0.3, 1.0] }, "DPSGD eps={epsilon}" = { alpha0 = [...] } }
```

Every grid must have the same number of points (equal effort per method; ``equal_size = false`` lifts it and says
so in the record). For each entry the runner scores every grid point on the tuning draws over *all* of the entry's
expanded runs (e.g. every epsilon of a sweep: S0's L is chosen over the whole epsilon range), keeps the best, and
runs the reported trials with it; ``results.json["tuning"]`` records the grids, every score and the choice.

Two optional keys bound the cost (issue 14: full mode within an hour):

* ``sweep = { epsilon = [0.05, 0.95] }``: the tuning draws use these values of a swept parameter instead of the
  entry's sweep points (as ``[quick].sweep`` does for the reported runs); an entry that does not sweep the
  parameter keeps its own runs.
* ``share = { "D-ZOA (a) delta=0.001 eps={epsilon}" = ["D-ZOA (a) delta=1e-06 eps={epsilon}", ...] }``: the
  choice of a tuned entry is also used by the listed entries (same algorithm, no grid of their own), so a figure
  with several sweeps of one method tunes it once.

``[quick] tuning = { trials = 1, rounds = 50, sweep = {...} }`` replaces those keys in quick mode (the grids stay
the same), so ``privdist reproduce --quick`` tunes too, more cheaply, and records what it did.

:func:`grid_search` is the stand-alone helper the catalog's baseline grids were chosen with: the mean final metric
of each grid point of one run on seeds disjoint from the evaluation seed (the papers tune baselines "for best
accuracy"; the grid and the choice are written into the catalog entries, which results.json records as ``config``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time

import numpy as np

from ..errors import SpecError

__all__ = ["apply_record", "check_tuning", "tune", "tuning_runs", "grid_search"]


def _points(grid: dict) -> list[dict]:
    names = sorted(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def check_tuning(table, run_templates: set[str], seed: int, source: str, algorithms: dict | None = None) -> None:
    """Check what a ``[tuning]`` table (:class:`privdist.experiments.schema.TuningSpec`, its keys' types and ranges
    already checked) says about the spec's runs (names the key path of what is wrong).

    Args:
        run_templates: the label templates of the spec's ``[[runs]]`` entries.
        seed: the reported trials' seed.
        algorithms: ``{template: algorithm}`` of the spec's entries (checks that ``share`` stays within a method).

    Raises:
        SpecError: a grid for an unknown run entry, unequal grids, the reported seed reused, a ``share`` naming an
            entry without a grid, one with its own grid or of another algorithm.
    """
    if table.seed == seed:
        raise SpecError(f"{source}: [tuning].seed must differ from the reported trials' seed {seed} (tuning draws "
                        "are never the reported ones)")
    sizes = {}
    for label, grid in table.grids.items():
        if label not in run_templates:
            raise SpecError(f"{source}: [tuning].grids names {label!r}, which is not a [[runs]] label; known: "
                            f"{sorted(run_templates)}")
        sizes[label] = math.prod(len(v) for v in grid.values())
    if table.equal_size and len(set(sizes.values())) > 1:
        raise SpecError(f"{source}: [tuning] grids of unequal size {sizes} (equal effort per method; set "
                        "equal_size = false to allow it, which the results then record)")
    algorithms = algorithms or {}
    receivers: list[str] = []
    for label, others in table.share.items():
        if label not in table.grids:
            raise SpecError(f"{source}: [tuning].share names {label!r}, which has no grid in [tuning].grids")
        for other in others:
            if other not in run_templates or other in table.grids or other in receivers:
                raise SpecError(f"{source}: [tuning].share.{label!r} names {other!r}, which is not a [[runs]] label "
                                "without its own grid (or is shared twice)")
            if algorithms.get(other) != algorithms.get(label):
                raise SpecError(f"{source}: [tuning].share.{label!r} names {other!r}, a different algorithm "
                                f"({algorithms.get(other)!r} vs {algorithms.get(label)!r})")
            receivers.append(other)


def tuning_runs(spec, template: str) -> list:
    """The runs of entry ``template`` the tuning draws use: its expanded runs, with ``[tuning].sweep`` values in
    place of its own sweep points for the parameters it sweeps (labels made unique per point)."""
    members = [rs for rs in spec.runs if rs.group == template]
    sweep = {p: v for p, v in spec.tuning.sweep.items() if members and p in members[0].sweep}
    if not sweep:
        return members
    out, seen = [], set()
    names = sorted(sweep)
    for rs in members:
        for values in itertools.product(*(sweep[n] for n in names)):
            point = {**rs.sweep, **dict(zip(names, values))}
            key = tuple(sorted(point.items()))
            if key in seen:
                continue
            seen.add(key)
            label = f"{template} [tuning {', '.join(f'{k}={v}' for k, v in key)}]"
            out.append(dataclasses.replace(rs, label=label, params={**rs.params, **point}, sweep=point))
    return out


def tune(spec, run_groups):
    """Choose every tuned entry's hyperparameters on the tuning draws; return ``(spec_with_choices, record)``.

    Args:
        spec: the experiment (its ``tuning`` table set).
        run_groups: ``run_groups(specs, trials) -> [{label: [final metric per trial]}, ...]``: runs each spec on the
            given trials (the runner's own trial function, so tuning goes through exactly the code of the reported
            runs), in any order or in parallel; every grid point of every entry is one spec, all handed over at once.
    """
    t0 = time.perf_counter()
    table = spec.tuning
    metric = spec.metrics[0]
    rounds = table.rounds
    trials = list(range(table.trials))
    use_log = table.score == "log"
    record = {"seed": table.seed, "trials": len(trials), "rounds": rounds, "metric": metric,
              "score": "mean of log(final metric)" if use_log else "mean final metric",
              "equal_size": table.equal_size, "mode": spec.mode, "sweep": dict(table.sweep),
              "share": dict(table.share), "entries": {}, "runs": 0}
    jobs = []  # (template, point, sub-spec): every grid point of every tuned entry
    members_of = {template: tuning_runs(spec, template) for template in table.grids}
    for template, grid in table.grids.items():
        members = members_of[template]
        if not members:  # the entry is left out in this mode (``[quick].skip_runs``): nothing to tune
            continue
        for point in _points(grid):
            runs = tuple(dataclasses.replace(rs, params={**rs.params, **point}) for rs in members)
            jobs.append((template, point, dataclasses.replace(spec, runs=runs, seed=table.seed, rounds=rounds)))
    results = run_groups([job[2] for job in jobs], trials)
    scores: dict[str, list] = {}
    for (template, point, sub), finals in zip(jobs, results):
        record["runs"] += len(sub.runs) * len(trials)
        vals = np.array([v for lab in finals for v in finals[lab]], dtype=float)
        if not np.all(np.isfinite(vals)) or (use_log and np.any(vals <= 0)):
            score = math.inf
        else:
            score = float(np.mean(np.log(vals)) if use_log else np.mean(vals))
        scores.setdefault(template, []).append({"params": point, "score": score})
    for template, entry_scores in scores.items():
        grid = table.grids[template]
        best = min(entry_scores, key=lambda s: s["score"])
        record["entries"][template] = {"grid": grid, "points": len(entry_scores), "scores": entry_scores,
                                       "tuned_on": [rs.label for rs in members_of[template]],
                                       "shared_with": list(table.share.get(template, [])),
                                       "chosen": best["params"],
                                       "at_grid_edge": sorted(k for k, v in best["params"].items()
                                                              if len(grid[k]) > 1 and v in (grid[k][0], grid[k][-1]))}
    record["seconds"] = time.perf_counter() - t0  # wall time of the tuning stage
    return apply_record(spec, record), record


def apply_record(spec, record: dict):
    """``spec`` with the choices of a tuning ``record`` (from :func:`tune`, e.g. read back from results.json when a
    run is resumed, so that finished tuning is not repeated) applied to its run entries and their shares."""
    chosen: dict[str, dict] = {}
    for template, entry in record["entries"].items():
        for name in (template, *entry.get("shared_with", [])):
            chosen[name] = entry["chosen"]
    runs = tuple(dataclasses.replace(rs, params={**rs.params, **chosen.get(rs.group, {})}) for rs in spec.runs)
    return dataclasses.replace(spec, runs=runs)


def grid_search(spec, label: str, grid: dict, *, seed: int = 1000, trials: int = 5, rounds: int | None = None,
                metric: str = "ne") -> list[dict]:
    """Mean final ``metric`` of run ``label`` of ``spec`` for every point of ``grid`` on trials of ``seed``.

    Args:
        spec: an :class:`~privdist.experiments.spec.ExperimentSpec`.
        label: the run (after sweep expansion) whose parameters are varied.
        grid: ``{param: [values]}``; every combination is run.
        seed: base seed of the tuning trials (use one disjoint from the evaluation seed).
        trials: tuning trials per grid point; rounds: override of the spec's rounds.

    Returns:
        ``[{"params": {...}, "final_mean": float}]`` sorted best first.
    """
    from ..algorithms import make_algorithm
    from ..runtime import run as run_algorithm
    from .build import build_trial

    base = next(r for r in spec.runs if r.label == label)
    names = sorted(grid)
    out = []
    built = [build_trial(spec, t, seed=seed) for t in range(trials)]
    for values in itertools.product(*(grid[n] for n in names)):
        params = {**base.params, **dict(zip(names, values))}
        finals = []
        for t, b in enumerate(built):
            res = run_algorithm(make_algorithm(base.algorithm, **params), b.problem, b.network,
                                rounds or spec.rounds, seed=seed, trial=t, metrics={metric: b.metrics[metric]},
                                transcript="none")
            finals.append(res.curves[metric][-1])
        val = float(np.mean(finals))
        out.append({"params": dict(zip(names, values)), "final_mean": val if np.isfinite(val) else math.inf})
    return sorted(out, key=lambda r: r["final_mean"])
