"""Experiments: TOML specs, the shipped catalog, the runner, results directories, figures and claim checks."""

from .catalog import catalog, experiments_of_paper, load_experiment, resolve_paper
from .runner import aggregate, run_experiment, run_trial
from .spec import ExperimentSpec, RunSpec, load_spec_file, parse_spec
from .store import ResultsDir

__all__ = ["catalog", "experiments_of_paper", "load_experiment", "resolve_paper", "aggregate", "run_experiment",
           "run_trial", "ExperimentSpec", "RunSpec", "load_spec_file", "parse_spec", "ResultsDir"]
