"""One trial of an experiment: every configured run on that trial's data, with curves, privacy report and timings.

:func:`run_trial` (one trial) and :func:`run_trials` (several, stepped in lockstep) are what the runner
(:mod:`privdist.experiments.runner`), its worker processes and its Ray tasks (:mod:`privdist.experiments.ray_parallel`)
call; a module of its own so that the runner imports the Ray path and the Ray path imports this, never the reverse
(issue 23: no import circles).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from ..algorithms import make_algorithm
from ..errors import DivergenceError
from ..privacy import privacy_report
from ..runtime import run as run_algorithm
from .boundary import without_guarantee
from .build import build_trial
from .pairwise import check_pairwise_model, pairwise_protocol, unmodelled
from .spec import ExperimentSpec

__all__ = ["run_trial", "run_trials", "TRIAL_BATCH", "PARTY_CHECKPOINT_EVERY"]


def _guarded(name: str, fn, label: str):
    """``fn`` that raises :class:`DivergenceError` on non-finite estimates or a non-finite value (a metric
    with attribute ``nan_ok = True`` may return NaN: "no value this round")."""
    nan_ok = getattr(fn, "nan_ok", False)
    calls = [0]

    def metric(est, *t):
        r = calls[0]
        calls[0] += 1
        arr = np.asarray(est, dtype=float) if isinstance(est, np.ndarray) else None
        if arr is not None and not np.all(np.isfinite(arr)):
            raise DivergenceError(f"run {label!r} diverged: non-finite estimate at round {r}")
        value = fn(est, *t)
        if not math.isfinite(float(value)) and not (nan_ok and math.isnan(float(value))):
            raise DivergenceError(f"run {label!r} diverged: metric {name} is {float(value)} at round {r}")
        return value

    metric.with_round = getattr(fn, "with_round", False)
    for attr in ("party_metric", "where", "needs_pooled_data"):  # where and how run() computes it (issue 17)
        if hasattr(fn, attr):
            setattr(metric, attr, getattr(fn, attr))
    return metric


PARTY_CHECKPOINT_EVERY = 10  # rounds between driver checkpoints of a party-local run (issue 17)


def _checkpoint_file(checkpoint_dir, problem, trial: int, label: str):
    """The driver checkpoint of one party-local run inside the results directory, or None (other problems and
    runs outside a results directory are not checkpointed within a trial: a trial is the unit of resume)."""
    from ..runtime.party import is_party_local

    if checkpoint_dir is None or not is_party_local(problem):
        return None
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
    return Path(checkpoint_dir) / f"trial_{trial:04d}_{safe}.ckpt"


def run_trial(spec: ExperimentSpec, trial: int, data_dir=None, backend="simulate", checkpoint_dir=None) -> dict:
    """Run every configured algorithm on one trial's data; return curves, privacy and timings per run.

    With ``checkpoint_dir``, a party-local run saves a driver checkpoint every :data:`PARTY_CHECKPOINT_EVERY` rounds
    (the parties' states stay on their nodes) and continues from it when one of the same configuration is there
    (``privdist run --resume`` of an interrupted run); the file is removed when the run finishes.

    A run whose estimates or metrics become non-finite (NaN, inf) is stopped there: its entry records the
    :class:`DivergenceError` message under ``"diverged"``, its curves are NaN from that round on, and its privacy
    report is that of the whole planned run (the releases it declared).
    """
    built = build_trial(spec, trial, data_dir=data_dir)
    secure = spec.privacy.secure
    runs = {}
    for rs in spec.runs:
        algorithm = make_algorithm(rs.algorithm, **rs.params)
        check_pairwise_model(spec, algorithm, built)  # a per-pair report that cannot be made fails before the run
        metrics = {m: _guarded(m, fn, rs.label) for m, fn in built.metrics.items()}
        ckpt = _checkpoint_file(checkpoint_dir, built.problem, trial, rs.label)
        t0 = time.perf_counter()
        try:
            res = run_algorithm(algorithm, built.problem, built.network, spec.rounds, seed=spec.seed, trial=trial,
                                backend=backend, metrics=metrics, secure=secure, checkpoint=ckpt,
                                checkpoint_every=PARTY_CHECKPOINT_EVERY, resume=ckpt is not None)
        except _STOPS as exc:
            res = exc
        if ckpt is not None and not isinstance(res, BaseException):
            ckpt.unlink(missing_ok=True)
        runs[rs.label] = _entry(spec, rs, algorithm, res, time.perf_counter() - t0, _data_steps(built), built)
    return {"trial": trial, "runs": runs}


#: Trials stepped together by :func:`run_trials` (issue 14): enough rows to amortise D-ZOA's per-step overhead,
#: few enough that an interrupted run loses little (finished batches are saved).
TRIAL_BATCH = 50
_STOPS = (DivergenceError, FloatingPointError, OverflowError)  # a run stopped by these is recorded as diverged


def _batches(spec: ExperimentSpec, backend) -> bool:
    """Whether :func:`run_trials` steps trials together: on the in-process simulator with data held in this process
    (party-local data stay per trial, with their checkpoints)."""
    return backend == "simulate" and spec.data.kind != "per_party"


def run_trials(spec: ExperimentSpec, trials, data_dir=None, backend="simulate") -> list[dict]:
    """:func:`run_trial` of several trials, each run's trials stepped in lockstep (:func:`privdist.runtime.run_many`):
    the round's random streams are created together, and an algorithm that batches its arithmetic (``step_many``;
    D-ZOA and D-ZOA + Gaussian) pays its per-step overhead once per round for all the trials. Every trial's entry
    equals :func:`run_trial`'s (same streams and per-agent arithmetic: tested on the transcript digests), except
    ``seconds``, the batch's time shared equally."""
    from ..runtime import run_many

    trials = list(trials)
    if len(trials) < 2 or not _batches(spec, backend):
        return [run_trial(spec, t, data_dir, backend) for t in trials]
    built = [build_trial(spec, t, data_dir=data_dir) for t in trials]
    secure = spec.privacy.secure
    out = [{"trial": t, "runs": {}} for t in trials]
    for rs in spec.runs:
        algorithm = make_algorithm(rs.algorithm, **rs.params)
        for b in built:
            check_pairwise_model(spec, algorithm, b)
        metrics = [{m: _guarded(m, fn, rs.label) for m, fn in b.metrics.items()} for b in built]
        t0 = time.perf_counter()
        results = run_many(algorithm, [b.problem for b in built], [b.network for b in built], spec.rounds,
                           seed=spec.seed, trials=trials, metrics=metrics, secure=secure)
        seconds = (time.perf_counter() - t0) / len(trials)
        for entry, res, b in zip(out, results, built):
            if isinstance(res, BaseException) and not isinstance(res, _STOPS):
                raise res
            entry["runs"][rs.label] = _entry(spec, rs, algorithm, res, seconds, _data_steps(b), b)
    return out


def _data_steps(built) -> list:
    """The preprocessing steps recorded by the trial's data set (a user's file: category lists, scaling, ...)."""
    dataset = built.extras.get("dataset") if isinstance(getattr(built, "extras", None), dict) else None
    return list(getattr(dataset, "extras", {}).get("preprocessing", [])) if dataset is not None else []


def _entry(spec, rs, algorithm, res, seconds, data_steps=(), built=None) -> dict:
    """One run's entry of a trial: curves, privacy report, run info and digest, or the diverged entry when
    ``res`` is the exception that stopped it. A data step that read the data without DP (``data_steps`` with
    ``private`` false: ``scale = "data"``, category lists or class names taken from a file) makes every agent's
    guarantee inf with the step named (issue 24: never only a warning). With ``[privacy] pairwise`` the report gets
    the per-pair section of the run's protocol on ``built``'s network (issue 29)."""
    delta, accountants = spec.privacy.delta, tuple(spec.privacy.accountants)
    if isinstance(res, BaseException):
        return _diverged(spec, rs, res, seconds, delta, accountants)
    states = res.final_state if isinstance(res.final_state, list) else [res.final_state]
    info_fn = getattr(algorithm, "run_info", None)  # optional (AlgorithmBase): calibrated constants etc.
    info = info_fn(states) if info_fn is not None and res.final_state is not None else {}
    # party-local runs (issue 17): where the data were resolved, where each metric was computed, Ray placement
    info = {**info, **{k: res.config[k] for k in ("data", "metrics_where", "ray") if k in res.config}}
    protocol, observers = pairwise_protocol(spec, algorithm, built) if built is not None else (None, None)
    report = privacy_report(res.ledger, delta, accountants, protocol=protocol, observers=observers,
                            pairwise_rtol=spec.privacy.pairwise_rtol)
    if spec.privacy.pairwise and protocol is None:
        report["pairwise"] = unmodelled(algorithm.name)
    return {"info": info, "curves": {m: res.curves[m].tolist() for m in spec.metrics},
            "privacy": without_guarantee(report, data_steps),
            "seconds": seconds,
            "transcript_digest": res.transcript.digest}


def _diverged(spec, rs, exc, seconds, delta, accountants) -> dict:
    """The entry of a run stopped by divergence: NaN curves, the declared privacy of the planned rounds."""
    message = str(exc) if isinstance(exc, DivergenceError) else f"run {rs.label!r} diverged: {exc}"
    nan = [float("nan")] * (spec.rounds + 1)
    privacy = {"delta": delta, "paper_delta": None, "per_agent": [], "not_guaranteed": [message], "exposures": [],
               "assumptions": []}  # a stopped run has no ledger: nothing is reported as guaranteed
    return {"info": {}, "curves": {m: list(nan) for m in spec.metrics}, "privacy": privacy, "seconds": seconds,
            "transcript_digest": None, "diverged": message}
