"""Experiment runner: trials x runs -> results directory (results.json, traces, figures, summary, claims).

The runner knows no particular algorithm: it builds each run with :func:`privdist.algorithms.make_algorithm`
and executes it with :func:`privdist.run`. Trials are independent (own data stream, spec §7) and can run in
parallel processes; each finished trial is saved atomically, so an interrupted run keeps its finished trials and
``resume=True`` continues with the missing ones.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from .._checks import check_int
from .._io import read_json, write_json
from ..errors import ValidationError
from ..runtime import versions
from ..runtime.run import noise_provenance
from ..runtime.workers import worker_initializer
from .claims import check_claims
from .pairwise import aggregate_pairwise
from .pairwise_plot import draw_pairwise
from .plots import draw_plots
from .boundary import OWNER_DIR, boundary, owner_exposures, owner_outputs, private_data, split_trial
from .ray_parallel import ray_trials
from .resources import check_resources
from .spec import ExperimentSpec
from .store import ResultsDir
from .summary import write_summary
from .trials import TRIAL_BATCH, run_trial, run_trials

__all__ = ["run_experiment", "run_trial", "run_trials", "aggregate", "TRIAL_BATCH"]


def _per_run_processes(spec: ExperimentSpec, trials, jobs: int, data_dir, backend):
    """Run each (trial, run) pair in a worker process; yield each trial once all its runs are done.

    A trial's data depend only on (seed, trial), so every task rebuilds the same data and the results equal
    those of :func:`run_trial` on the whole spec.
    """
    labels = [rs.label for rs in spec.runs]
    partial: dict[int, dict] = {t: {} for t in trials}
    with _pool(jobs) as pool:  # a failed task (or an interrupt) cancels what has not started
        futures = {pool.submit(run_trial, dataclasses.replace(spec, runs=(rs,)), t, data_dir, backend): (t, rs.label)
                   for t in trials for rs in spec.runs}
        for fut in as_completed(futures):
            t, label = futures[fut]
            partial[t][label] = fut.result()["runs"][label]
            if len(partial[t]) == len(labels):
                yield {"trial": t, "runs": {lab: partial[t][lab] for lab in labels}}


def _largest(reports: list[dict], i: int, key: str) -> dict:
    out = {}
    for acc in reports[0]["per_agent"][i][key]:
        vals = [r["per_agent"][i][key].get(acc) for r in reports]
        out[acc] = None if any(v is None for v in vals) else max(vals)
    return out


def _guarantee_accountant(reports: list[dict], i: int) -> str:
    """What computed agent ``i``'s guarantee over the trials (``"skellam_rdp"`` if it did in any trial)."""
    by = {r["per_agent"][i].get("guarantee_accountant", "pld") for r in reports}
    return "skellam_rdp" if "skellam_rdp" in by else "pld"


def _privacy_max(reports: list[dict]) -> dict:
    """Per agent, the largest epsilon over trials under each accountant (conservative); the guarantee holds only
    where it holds in every trial; reasons, exposures and caveats are the union over trials."""
    first = reports[0]
    per_agent = []
    for i, entry in enumerate(first["per_agent"]):
        notes = [r["per_agent"][i].get("paper_note") for r in reports]
        per_agent.append({"agent": entry["agent"], "guaranteed": all(r["per_agent"][i]["guaranteed"] for r in reports),
                          "epsilon": _largest(reports, i, "epsilon"), "claimed": _largest(reports, i, "claimed"),
                          "paper_note": next((n for n in notes if n), None),
                          "guarantee_accountant": _guarantee_accountant(reports, i)})
    union = {}
    for key in ("not_guaranteed", "exposures", "assumptions"):
        union[key] = []
        for r in reports:
            union[key] += [a for a in r.get(key, []) if a not in union[key]]
    return {"delta": first["delta"], "paper_delta": first.get("paper_delta"), "per_agent": per_agent, **union}


def aggregate(spec: ExperimentSpec, trials: dict[int, dict]) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Aggregate finished trials into the ``runs`` list of results.json and the traces arrays."""
    order = sorted(trials)
    runs, traces = [], {}
    for rs in spec.runs:
        per_trial = [trials[t]["runs"][rs.label] for t in order]
        metrics = {}
        for m in spec.metrics:  # NaN where a trial's curves were withheld (owner-only, issue 24)
            data = np.array([pt.get("curves", {}).get(m, [np.nan] * (spec.rounds + 1)) for pt in per_trial],
                            dtype=float)
            traces[f"{rs.label}::{m}"] = data
            metrics[m] = {"final_mean": float(data[:, -1].mean()), "final_std": float(data[:, -1].std()),
                          "curve_mean": data.mean(axis=0), "curve_std": data.std(axis=0)}
        reports = [pt["privacy"] for pt in per_trial if pt["privacy"]["per_agent"]]
        diverged = [f"trial {t}: {pt['diverged']}" for t, pt in zip(order, per_trial) if pt.get("diverged")]
        privacy = _privacy_max(reports) if reports else per_trial[0]["privacy"]
        pairwise = aggregate_pairwise(per_trial, order)
        if pairwise is not None:
            privacy = {**privacy, "pairwise": pairwise}
        runs.append({"label": rs.label, "algorithm": rs.algorithm, "params": rs.params, "group": rs.group,
                     "sweep": rs.sweep, "metrics": metrics, "diverged": diverged,
                     "privacy": privacy,
                     "info": [pt.get("info", {}) for pt in per_trial],
                     "seconds": float(sum(pt["seconds"] for pt in per_trial))})
    return runs, traces


def _results(spec, trials, runs, claims, complete, figures):
    return {"experiment": spec.name, "title": spec.title, "paper": spec.paper, "figure": spec.figure,
            "seed": spec.seed, "noise": noise_provenance(spec.privacy.secure),
            "trials": len(trials), "trials_planned": spec.trials, "complete": complete,
            "versions": versions(), "config": spec.config(), "runs": runs, "claims": claims, "figures": figures,
            "errors": [f"{r['label']}: {d}" for r in runs for d in r.get("diverged", [])],
            **({"tuning": spec.tuning_record} if spec.tuning_record is not None else {})}


def _tuned(spec: ExperimentSpec, data_dir, backend, jobs: int = 1) -> ExperimentSpec:
    """``spec`` with the ``[tuning]`` choices applied and their record attached (:mod:`.tuning`); the tuning
    draws run through :func:`run_trials`, the code of the reported trials, in ``jobs`` worker processes (every grid
    point's trials one task; a point's trials split when there are fewer points than workers)."""
    from .tuning import tune

    metric = spec.metrics[0]

    def run_groups(subs, trials):
        tasks = [(i, chunk) for i, sub in enumerate(subs)
                 for chunk in (_chunks(trials, jobs) if len(subs) < jobs else [trials])]
        if jobs > 1 and len(tasks) > 1:
            with _pool(jobs) as pool:
                done = [pool.submit(run_trials, subs[i], chunk, data_dir, backend) for i, chunk in tasks]
                outs = [fut.result() for fut in done]
        else:
            outs = [run_trials(subs[i], chunk, data_dir, backend) for i, chunk in tasks]
        finals: list[dict[str, list[float]]] = [{} for _ in subs]
        for (i, _), out in zip(tasks, outs):  # tasks in sub and trial order: each label's finals in trial order
            for trial in out:
                for label, r in trial["runs"].items():
                    finals[i].setdefault(label, []).append(float(r["curves"][metric][-1]))
        return finals

    tuned, record = tune(spec, run_groups)
    return dataclasses.replace(tuned, tuning_record=record)


def _previous_tuning(store, spec) -> dict | None:
    """The tuning record of an earlier run of the same configuration in ``store`` (resume), if it has one."""
    path = store.path / "results.json"
    if not path.exists():
        return None
    record = read_json(path).get("tuning")
    ok = isinstance(record, dict) and record.get("mode") == spec.mode and isinstance(record.get("entries"), dict)
    return record if ok else None


def run_experiment(spec: ExperimentSpec, out_dir, *, jobs: int = 1, overwrite: bool = False, resume: bool = False,
                   progress: bool = True, data_dir=None, backend: str = "simulate", parallel: str = "process",
                   allow_large: bool = False) -> dict:
    """Run all trials of ``spec`` into ``out_dir`` and return the results dictionary (also in results.json).

    Args:
        spec: the experiment.
        out_dir: results directory (see :mod:`privdist.experiments.store`); locked while the run writes.
        jobs: parallel worker processes for trials (1 = in this process).
        overwrite: replace another experiment's results in ``out_dir``.
        resume: keep finished trials of the same configuration and run only the missing ones.
        progress: show a progress bar.
        data_dir: directory of downloadable data files (svmlight).
        backend: runtime backend name.
        parallel: ``"process"`` (``jobs`` worker processes) or ``"ray"`` (one Ray task per trial and run).
        allow_large: run even if the memory or time estimate is above the limits of
            :func:`privdist.experiments.resources.check_resources`.

    Raises:
        ValidationError: ``jobs < 1``, or ``resume`` together with ``overwrite``, or an unknown ``parallel``.
        ResourceLimitError: the estimate is above a limit and ``allow_large`` is false.
        OutputDirError, ResultsLockedError: see :class:`ResultsDir`.
        KeyboardInterrupt: interrupted; finished trials stay on disk (its message says how many and where).

    A run that diverges (non-finite estimate or metric) does not raise: it is recorded in ``results["errors"]``
    and in its run's ``"diverged"`` list.
    """
    check_int(jobs, "jobs")
    if resume and overwrite:
        raise ValidationError("resume and overwrite exclude each other: resume keeps finished trials, overwrite "
                              "removes them")
    if parallel not in ("process", "ray"):
        raise ValidationError(f"parallel must be 'process' or 'ray', got {parallel!r}")
    check_resources(spec, allow_large)
    with ResultsDir(out_dir, spec.name, spec.config(), overwrite=overwrite, resume=resume) as store:
        done = store.finished_trials() if resume else {}
        if spec.tuning is not None and spec.tuning_record is None:  # choose hyperparameters on the tuning draws first
            previous = _previous_tuning(store, spec) if resume else None
            if previous is not None:  # the same configuration was tuned already: reuse its choices
                from .tuning import apply_record

                spec = dataclasses.replace(apply_record(spec, previous), tuning_record=previous)
            else:
                spec = _tuned(spec, data_dir, backend, jobs if parallel == "process" else 1)
        try:
            return _run_into(store, spec, done, jobs, progress, data_dir, backend, parallel)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(f"{len(done)} finished trial(s) of {spec.name!r} kept in {store.path} "
                                    "(continue with --resume)") from None


def _release_only(spec, results: dict, exposures: list[str], figures) -> dict:
    """``results`` as written to results.json (issue 24): on a user's data without metrics, run info and claims (they
    are owner-only evaluation) and with the owner-only files written named as exposures; always with the
    ``release_boundary``."""
    out = {**results, "release_boundary": boundary(spec, figures)}
    if not private_data(spec):
        return out
    runs = []
    for r in results["runs"]:
        privacy = {**r["privacy"], "exposures": list(r["privacy"].get("exposures", [])) + exposures}
        runs.append({k: v for k, v in r.items() if k not in ("metrics", "info")} | {"privacy": privacy})
    return {**out, "runs": runs, "claims": [], "figures": []}


def _save_trial(store, spec, data: dict) -> None:
    """The trial file (release part only on a user's data) and, where written, its owner-only part."""
    if not private_data(spec):
        store.save_trial(data)
        return
    release, owner = split_trial(data)
    store.save_trial(release)
    if owner_outputs(spec):
        write_json(store.path / OWNER_DIR / "trials" / f"trial_{int(data['trial']):04d}.json", owner)


def _with_owner_parts(store, spec, done: dict) -> dict:
    """Resume on a user's data: merge the owner-only parts of finished trials back (curves stay NaN without them)."""
    if not private_data(spec):
        return done
    for t, data in done.items():
        f = store.path / OWNER_DIR / "trials" / f"trial_{t:04d}.json"
        if f.is_file():
            owner = read_json(f)
            for label, extra in owner.get("runs", {}).items():
                if label in data["runs"]:
                    data["runs"][label].update(extra)
    return done


def _run_into(store, spec, done, jobs, progress, data_dir, backend, parallel) -> dict:
    done = _with_owner_parts(store, spec, done)
    todo = [t for t in range(spec.trials) if t not in done]

    def finished(data):
        _save_trial(store, spec, data)
        done[data["trial"]] = data
        runs, _ = aggregate(spec, done)
        write_json(store.path / "results.json", _release_only(spec, _results(spec, done, runs, [], False, []), [], []))

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    cols = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*cols, disable=not progress, transient=True) as bar:
        task = bar.add_task(f"{spec.name}: trials", total=spec.trials, completed=len(done))
        if parallel == "ray":
            for data in ray_trials(spec, todo, data_dir, backend):
                finished(data)
                bar.advance(task)
        elif jobs > 1 and len(todo) >= jobs:
            with _pool(jobs) as pool:
                futures = [pool.submit(run_trials, spec, chunk, data_dir, backend) for chunk in _chunks(todo, jobs)]
                for fut in as_completed(futures):
                    for data in fut.result():
                        finished(data)
                        bar.advance(task)
        elif jobs > 1 and todo:  # fewer trials than workers: one task per (trial, run), as with Ray
            for data in _per_run_processes(spec, todo, jobs, data_dir, backend):
                finished(data)
                bar.advance(task)
        else:  # in this process: party-local runs keep driver checkpoints for --resume (issue 17)
            for t in todo:
                finished(run_trial(spec, t, data_dir, backend, checkpoint_dir=store.path / "checkpoints"))
                bar.advance(task)

    runs, traces = aggregate(spec, done)
    claims = check_claims(spec.claims, runs, spec.metrics[0], spec.skipped_claims)
    if not private_data(spec):  # public data: the layout of the paper reproductions, unchanged
        store.save_traces(traces)
        figures = draw_plots(spec, runs, traces, Path(store.path))
        results = _release_only(spec, _results(spec, done, runs, claims, True, figures), [], figures)
        write_json(store.path / "results.json", results)
        write_summary(spec, results, store.path)
        # the per-pair figures after the complete results (issue 40): one that fails is named in the results, and
        # the computation stays written (``privdist run`` exits 2 with an error: line)
        pairwise, failed = draw_pairwise(runs, Path(store.path))
        if pairwise or failed:
            figures = figures + pairwise
            results = _release_only(spec, _results(spec, done, runs, claims, True, figures), [], figures)
            results = {**results, **({"figure_errors": failed} if failed else {})}
            write_json(store.path / "results.json", results)
            write_summary(spec, results, store.path)
        store.mark_complete()  # last: readers refuse the directory without it (issue 40)
        return results
    figures, exposures = [], []
    if owner_outputs(spec):  # a user's data: owner-only evaluation apart, named as exposures
        owner = store.path / OWNER_DIR
        owner.mkdir(exist_ok=True)
        store.save_traces(traces, owner / "traces.npz")
        figures = draw_plots(spec, runs, traces, owner)
        full = _results(spec, done, runs, claims, True, figures)
        write_json(owner / "metrics.json", {"note": boundary(spec, figures)["note"], "claims": claims,
                                            "runs": [{"label": r["label"], "metrics": r["metrics"], "info": r["info"]}
                                                     for r in runs]})
        write_summary(spec, full, owner)
        exposures = owner_exposures(spec, figures)
    results = _release_only(spec, _results(spec, done, runs, claims, True, figures), exposures, figures)
    write_json(store.path / "results.json", results)
    store.mark_complete()  # last: readers refuse the directory without it (issue 40)
    return results


def _chunks(todo: list, jobs: int) -> list[list]:
    """Consecutive trial batches of at most :data:`TRIAL_BATCH`, at least ``jobs`` of them when there are enough
    trials (every worker busy)."""
    size = max(1, min(TRIAL_BATCH, -(-len(todo) // jobs)))
    return [todo[i:i + size] for i in range(0, len(todo), size)]


class _pool:
    """A process pool whose workers ignore Ctrl-C; on an interrupt (or error) pending trials are cancelled and
    the workers this run started are terminated instead of finishing their trials."""

    def __init__(self, jobs: int):
        # workers ignore Ctrl-C (the parent's to handle) and end with the parent, even a killed one (issue 26)
        self.pool = ProcessPoolExecutor(max_workers=jobs, initializer=worker_initializer)

    def __enter__(self) -> ProcessPoolExecutor:
        return self.pool

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.pool.shutdown(wait=True)
            return
        workers = list(getattr(self.pool, "_processes", {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for proc in workers:
            proc.terminate()
