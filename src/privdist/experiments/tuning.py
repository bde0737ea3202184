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
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from ..errors import SpecError

__all__ = ["TUNING_KEYS", "check_tuning", "tune"]

TUNING_KEYS = frozenset({"seed", "trials", "rounds", "score", "grids", "equal_size"})


def _points(grid: dict) -> list[dict]:
    names = sorted(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def check_tuning(table: dict, run_templates: set[str], seed: int, source: str) -> dict:
    """Validate a ``[tuning]`` table (names the key path of what is wrong).

    Raises:
        SpecError: unknown keys, a grid for an unknown run entry, empty or unequal grids, the reported seed reused.
    """
    if not isinstance(table, dict):
        raise SpecError(f"{source}: [tuning] must be a table")
    unknown = sorted(set(table) - TUNING_KEYS)
    if unknown:
        raise SpecError(f"{source}: [tuning] has unknown key(s) {unknown}; known: {sorted(TUNING_KEYS)}")
    for key in ("seed", "trials"):
        if not isinstance(table.get(key), int) or isinstance(table.get(key), bool) or table[key] < (key == "trials"):
            raise SpecError(f"{source}: [tuning].{key} must be an integer{' >= 1' if key == 'trials' else ' >= 0'}")
    if table["seed"] == seed:
        raise SpecError(f"{source}: [tuning].seed must differ from the reported trials' seed {seed} (tuning draws "
                        "are never the reported ones)")
    if "rounds" in table and (not isinstance(table["rounds"], int) or table["rounds"] < 1):
        raise SpecError(f"{source}: [tuning].rounds must be an integer >= 1")
    if table.get("score", "log") not in ("log", "mean"):
        raise SpecError(f"{source}: [tuning].score must be 'log' or 'mean', got {table.get('score')!r}")
    grids = table.get("grids")
    if not isinstance(grids, dict) or not grids:
        raise SpecError(f"{source}: [tuning].grids must map run labels to {{param = [values]}} tables")
    sizes = {}
    for label, grid in grids.items():
        if label not in run_templates:
            raise SpecError(f"{source}: [tuning].grids names {label!r}, which is not a [[runs]] label; known: "
                            f"{sorted(run_templates)}")
        if not isinstance(grid, dict) or not grid or any(not isinstance(v, list) or not v for v in grid.values()):
            raise SpecError(f"{source}: [tuning].grids.{label!r} must map parameters to non-empty lists")
        sizes[label] = math.prod(len(v) for v in grid.values())
    if table.get("equal_size", True) and len(set(sizes.values())) > 1:
        raise SpecError(f"{source}: [tuning] grids of unequal size {sizes} (equal effort per method; set "
                        "equal_size = false to allow it, which the results then record)")
    return table


def tune(spec, run_group, data_dir=None, backend="simulate"):
    """Choose every tuned entry's hyperparameters on the tuning draws; return ``(spec_with_choices, record)``.

    Args:
        spec: the experiment (its ``tuning`` table set).
        run_group: ``run_group(spec, trials) -> {label: [final metric per trial]}``: runs ``spec`` on the given
            trials (the runner's own trial function), so tuning goes through exactly the code of the reported runs.
        data_dir, backend: as for the runner.
    """
    table = spec.tuning
    metric = spec.metrics[0]
    rounds = int(table.get("rounds", spec.rounds))
    trials = list(range(int(table["trials"])))
    use_log = table.get("score", "log") == "log"
    record = {"seed": table["seed"], "trials": len(trials), "rounds": rounds, "metric": metric,
              "score": "mean of log(final metric)" if use_log else "mean final metric",
              "equal_size": bool(table.get("equal_size", True)), "entries": {}}
    chosen: dict[str, dict] = {}
    for template, grid in table["grids"].items():
        members = [rs for rs in spec.runs if rs.group == template]
        scores = []
        for point in _points(grid):
            runs = tuple(dataclasses.replace(rs, params={**rs.params, **point}) for rs in members)
            sub = dataclasses.replace(spec, runs=runs, seed=int(table["seed"]), rounds=rounds)
            finals = run_group(sub, trials)
            vals = np.array([v for lab in finals for v in finals[lab]], dtype=float)
            if not np.all(np.isfinite(vals)) or (use_log and np.any(vals <= 0)):
                score = math.inf
            else:
                score = float(np.mean(np.log(vals)) if use_log else np.mean(vals))
            scores.append({"params": point, "score": score})
        best = min(scores, key=lambda s: s["score"])
        chosen[template] = best["params"]
        record["entries"][template] = {"grid": grid, "points": len(scores), "scores": scores,
                                       "chosen": best["params"],
                                       "at_grid_edge": sorted(k for k, v in best["params"].items()
                                                              if len(grid[k]) > 1 and v in (grid[k][0], grid[k][-1]))}
    runs = tuple(dataclasses.replace(rs, params={**rs.params, **chosen.get(rs.group, {})}) for rs in spec.runs)
    return dataclasses.replace(spec, runs=runs), record
