"""Experiments: TOML specs, the shipped catalog, the runner, results directories, figures and claim checks.

Names are imported from their modules on first use (``privdist list`` and ``privdist --help`` must not pay for the
algorithms, scipy and dp-accounting; issue 16).
"""

from __future__ import annotations

import importlib

# light modules, imported now: the function ``catalog`` must shadow the submodule of the same name (a lazy name
# would lose to the submodule attribute that any ``import privdist.experiments.catalog`` sets)
from .catalog import catalog, catalog_index, experiments_of_paper, load_experiment, resolve_paper
from .spec import ExperimentSpec, RunSpec, load_spec_file, parse_spec

_WHERE = {"aggregate": ".runner", "run_experiment": ".runner", "run_trial": ".trials", "ResultsDir": ".store"}

__all__ = sorted([*_WHERE, "catalog", "catalog_index", "experiments_of_paper", "load_experiment", "resolve_paper",
                  "ExperimentSpec", "RunSpec", "load_spec_file", "parse_spec"])


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
