"""Trials and sweep points spread over Ray tasks (``privdist run NAME --parallel ray``; issue 7).

Part of the experiments layer (it runs trials); it uses the runtime's Ray connection, never the reverse.

Every (trial, run) pair of an experiment becomes one Ray task that calls
:func:`privdist.experiments.trials.run_trial` on the spec restricted to that run; a trial is handed back to the
runner (which saves it atomically, so ``--resume`` works as with processes) once all its runs are done. The data
of a trial depend only on (seed, trial), so the results are those of an in-process run.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

from ..errors import ValidationError
from ..runtime.ray_common import connect
from .trials import run_trial

__all__ = ["ray_trials", "check_cli_options"]


def check_cli_options(backend: str, parallel: str, jobs: int, address: str | None) -> None:
    """Validate the CLI's Ray options and connect to Ray once in this process (fail fast, before any trial).

    Raises:
        ValidationError: ``--backend ray`` with ``--jobs > 1`` (forked processes cannot share a Ray
            connection; spread trials with ``--parallel ray`` instead).
        RayUnavailableError, RayConnectionError: see :func:`connect`.
    """
    if backend == "ray" and parallel != "ray" and jobs > 1:
        raise ValidationError(f"--backend ray cannot be combined with --jobs {jobs}; use --parallel ray to spread "
                              "trials over the Ray cluster")
    connect(address)


def _one_run(spec, trial: int, data_dir, backend) -> dict:
    return run_trial(spec, trial, data_dir, backend)


def ray_trials(spec, trials, data_dir=None, backend="simulate", address: str | None = None) -> Iterator[dict]:
    """Run ``trials`` of ``spec`` as Ray tasks, one task per (trial, run); yield each trial when complete.

    Every task calls :func:`privdist.experiments.trials.run_trial` on the spec restricted to one run, so a
    trial's results are those of an in-process run (the data of a trial depend only on (seed, trial)).

    Args:
        spec: the experiment.
        trials: trial indices to run.
        data_dir: data directory for the tasks.
        backend: runtime backend inside each task (a name or a backend object).
        address: Ray cluster (see :func:`connect`).

    Yields:
        ``{"trial": t, "runs": {label: ...}}`` in completion order, runs in the spec's order.
    """
    ray = connect(address)
    task = ray.remote(num_cpus=1, max_retries=0)(_one_run)
    labels = [rs.label for rs in spec.runs]
    pending, partial = {}, {t: {} for t in trials}
    for t in trials:
        for rs in spec.runs:
            one = dataclasses.replace(spec, runs=(rs,))
            pending[task.remote(one, t, data_dir, backend)] = (t, rs.label)
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        t, label = pending.pop(ready[0])
        try:
            partial[t][label] = ray.get(ready[0])["runs"][label]
        except ray.exceptions.RayTaskError as exc:
            for ref in pending:
                ray.cancel(ref)
            raise exc.cause if isinstance(exc.cause, Exception) else exc
        if len(partial[t]) == len(labels):
            yield {"trial": t, "runs": {lab: partial[t][lab] for lab in labels}}
