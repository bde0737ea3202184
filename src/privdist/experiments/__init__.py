"""Experiments: TOML specs, the shipped catalog, the runner, results directories, figures and claim checks.

Names are imported from their modules on first use (``privdist list`` and ``privdist --help`` must not pay for the
algorithms, scipy and dp-accounting; issue 16).
"""

from __future__ import annotations

import importlib

_WHERE = {
    "catalog": ".catalog", "catalog_index": ".catalog", "experiments_of_paper": ".catalog",
    "load_experiment": ".catalog", "resolve_paper": ".catalog",
    "aggregate": ".runner", "run_experiment": ".runner", "run_trial": ".runner",
    "ExperimentSpec": ".spec", "RunSpec": ".spec", "load_spec_file": ".spec", "parse_spec": ".spec",
    "ResultsDir": ".store",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
