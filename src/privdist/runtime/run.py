"""``run``: one algorithm on one problem and network, on a backend (DESIGN "runtime"; STYLE #10).

The loop below is the whole protocol of :mod:`privdist.contract`; a backend only decides where
``step`` runs. The CLI, the experiment runner and the estimators are thin adapters over this function.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from .._checks import check_int
from .._io import check_writable_dir, fingerprint
from ..errors import OutputWriteError, ShapeMismatchError, UnknownNameError, ValidationError
from .checkpoint import load_checkpoint, save_checkpoint
from ..contract import AGENT, BACKEND_MEMBERS, COORDINATOR, Backend
from .result import RunResult
from .routing import Router
from .ray_backend import RayBackend
from .secure.secagg_plus import graph_parameters as _graph
from .secure.secure_round import check_dropout, prepare_round, protocol_of, secure_bits, secure_specs, secure_sum
from .simulator import SimulatorBackend, sent_messages
from .transcript import Transcript

__all__ = ["run", "run_many", "BACKENDS", "make_backend", "versions", "noise_provenance"]

BACKENDS: dict[str, Callable[[], Backend]] = {"simulate": SimulatorBackend, "ray": RayBackend}  # ray: imported lazily


def make_backend(backend) -> Backend:
    """A backend instance from a name in :data:`BACKENDS`, or ``backend`` itself if it implements
    :class:`privdist.contract.Backend` (TypeError naming the missing members otherwise)."""
    if isinstance(backend, str):
        if backend not in BACKENDS:
            raise UnknownNameError("backend", backend, list(BACKENDS))
        return BACKENDS[backend]()
    if not isinstance(backend, Backend):
        missing = [m for m in BACKEND_MEMBERS if not hasattr(backend, m)]
        raise TypeError(f"backend must be a name in {list(BACKENDS)} or implement privdist.contract.Backend "
                        f"(subclass BackendBase for the defaults); {type(backend).__name__} lacks {missing}")
    return backend


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str], ...]:
    import importlib.metadata as md

    out = {}
    for pkg in ("privdist", "numpy", "scipy", "scikit-learn", "cvxpy", "dp-accounting", "networkx"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return tuple(out.items())


def versions() -> dict[str, str]:
    """Versions of privdist and of the libraries that shape results."""
    return dict(_versions())


def noise_provenance(secure: bool) -> dict:
    """What results record about where the noise came from (DESIGN idea 4)."""
    if secure:
        return {"mode": "secure", "keys": "one per party",
                "note": "each party (and the coordinator) drew its own noise key from OS entropy where it runs (its "
                        "actor, or its own stream in the simulator); no key was recorded or sent to the driver, so "
                        "neither the driver nor another party can regenerate a party's noise"}
    return {"mode": "seeded", "note": "research mode: every noise draw can be regenerated from the recorded seed "
            "(and with it the noise-free iterates); these results are not for release (use secure mode)"}


def _evaluate(fn, est: np.ndarray, t: int) -> float:
    """A metric value at round ``t`` (round-aware metrics get ``t``)."""
    return float(fn(est, t) if getattr(fn, "with_round", False) else fn(est))


def _party_local(problem, be, metrics):
    """Issue 17 hook: a party-local problem runs on the backend's party mode (data resolved on the parties'
    nodes) or, on a backend without one (the simulator), materialized in this process. Returns the problem and
    backend to use and what results record about where data and metrics were."""
    from .party import PooledDataUnavailableError, is_party_local

    if not is_party_local(problem):
        return problem, be, {}
    be = be.for_problem(problem)
    if not be.party_local:
        where = {name: "driver, on the materialized problem (every party's data in this process)"
                 for name in metrics}
        return problem.materialize(), be, {"data": {**problem.describe(), "resolved": "driver (materialized)"},
                                           "metrics_where": where}
    pooled = [name for name, fn in metrics.items() if getattr(fn, "needs_pooled_data", False)]
    if pooled:
        raise PooledDataUnavailableError(
            f"metric(s) {pooled} need pooled data, which a party-local run never holds in one place; compute them "
            "from data a party or an evaluator is declared to hold (a metric function without needs_pooled_data)")
    where = {name: getattr(fn, "where", "driver, from the released values (messages)") for name, fn in metrics.items()}
    return problem, be, {"data": {**problem.describe(), "resolved": "each party's actor, on its node"},
                         "metrics_where": where}


def _party_metric_values(party_metrics: dict, problem, be, est) -> None:
    """Set each :class:`PartyMetric`'s value for this round: summed from the parties' actors on a party-local
    backend, else computed here on the (materialized) problem with the coordinator state the backend holds."""
    if not party_metrics:
        return
    if be.party_local:
        values = be.party_values(party_metrics)
    else:
        cstate = be.coordinator_state()
        values = {name: pm.pooled(problem, est, cstate) for name, pm in party_metrics.items()}
    for name, pm in party_metrics.items():
        pm.value = float(values[name])


def run(algorithm, problem, network, rounds: int, *, seed: int = 0, trial: int = 0, backend="simulate",
        metrics: Mapping[str, Callable[[np.ndarray], float]] | None = None, keep_iterates: bool = False,
        transcript: str = "digest", checkpoint: str | Path | None = None, checkpoint_every: int = 0,
        resume: bool = False, secure: bool = False, dropout=None, ledger=None) -> RunResult:
    """Run ``algorithm`` for ``rounds`` rounds.

    Args:
        algorithm: an object following :class:`privdist.contract.Algorithm`.
        problem: the problem object the algorithm expects (e.g. :class:`privdist.problems.HorizontalERM`).
        network: a ``Network`` or ``TimeVaryingNetwork`` with as many agents as the problem.
        rounds: number of rounds ``T >= 1``.
        seed, trial: randomness coordinates; streams are derived per (seed, trial, agent, round).
        backend: ``"simulate"`` (default) or a backend object.
        metrics: ``name -> f(estimates (K, P)) -> float`` evaluated after init (round 0) and after every round;
            a function with attribute ``with_round = True`` is called as ``f(estimates, t)``; one with attribute
            ``party_metric`` (a :class:`privdist.runtime.party.PartyMetric`) is the sum of the parties' own parts,
            computed in their actors on a party-local backend (recorded as an exposure), else in this process.
        keep_iterates: also return every round's released values.
        transcript: ``"full"``, ``"digest"`` or ``"none"``.
        checkpoint: file to save progress to every ``checkpoint_every`` rounds (and at the end).
        resume: continue from ``checkpoint`` if it exists (the continuation is identical to an
            uninterrupted run, because randomness depends only on (seed, trial, agent, round)).
        secure: draw the algorithm's noise from fresh OS entropy instead of ``seed``: what a release needs. Each
            party draws its own 128-bit key (:mod:`secrets`) where it runs (its Ray actor, or its own stream in
            the simulator) and the coordinator another; this function draws and holds none, and no key is
            recorded, returned or put in a checkpoint, so neither the driver nor another party can regenerate a
            party's noise (DESIGN idea 4). With ``secure=False`` (research mode) anyone who knows the seed
            regenerates every noise draw and with it the noise-free iterates; ``config["noise"]`` says which
            mode produced the result. A secure run resumed from ``checkpoint`` on the simulator or
            :class:`RayBackend` draws new keys: the rounds after the checkpoint never left the failed run (its
            process, its reset actors) and are released once, in the result; a party-local run
            (:class:`~privdist.runtime.ray_party.PartyBackend`) keeps each key on its party's node and repeats
            those rounds' noise. Every backend takes ``start(..., secure=...)`` (declared in
            :class:`privdist.contract.Backend`).
        dropout: simulated failures of an algorithm with secure-sum messages (issue 27): ``None``, a probability
            (each party fails to send with it, each round) or a :class:`~privdist.runtime.secure.secure_round.Dropout`;
            failed parties are left out of that round's sum and its guarantee is recomputed from those in it
            (``config["secure_aggregation"]["rounds"]`` records who was in each sum).
        ledger: the job's :class:`~privdist.privacy.PrivacyLedger` so far (releases made before the run, e.g. an
            estimator's DP range step recorded in round 0 of the job, or a former one-vs-rest class's run): the
            run's releases are recorded after them, in a copy, and the result's ledger is the job's (issue 37).

    Returns:
        :class:`RunResult`.

    Raises:
        ShapeMismatchError: network and problem disagree on the number of agents, or an outbox does not
            match the declared messages.
        CheckpointError: ``resume`` with a checkpoint of another configuration.
        OutputWriteError: ``checkpoint`` cannot be written (checked before the first round).
    """
    steps = _rounds(algorithm, problem, network, rounds, seed, trial, backend, metrics, keep_iterates, transcript,
                    checkpoint, checkpoint_every, resume, secure, dropout, ledger)
    request = next(steps)
    while True:
        be, t, inbox = request
        try:
            out = be.step_agents(t, inbox)
        except BaseException as exc:
            steps.throw(exc)  # raised inside the protocol: its clean-up (backend close) runs
            raise
        try:
            request = steps.send(out)
        except StopIteration as stop:
            return stop.value


def run_many(algorithm, problems, networks, rounds: int, *, seed: int = 0, trials=None, metrics=None,
             transcript: str = "digest", secure: bool = False) -> list:
    """Several independent runs of one algorithm (e.g. an experiment's trials) stepped in lockstep on the simulator.

    Each round, the agents of every unfinished run go through one ``algorithm.step_many`` call (an algorithm
    without batched arithmetic steps them one run at a time), so per-step overhead is paid once per round instead
    of once per run (issue 14: D-ZOA's inner loop is bound by it). Streams stay per (seed, trial, agent, round) (in
    secure mode each run's agents draw their own keys, as in :func:`run`) and every run keeps its own router,
    ledger, transcript and metrics, so each result is that of :func:`run` with the same arguments (tested: same
    transcript digest).

    Args:
        algorithm: the algorithm factory (one for all runs).
        problems, networks: one per run.
        rounds, seed, transcript, secure: as in :func:`run`.
        trials: the trial index of each run (default ``0, 1, ...``).
        metrics: one metrics mapping per run (or None).

    Returns:
        One entry per run: its :class:`RunResult`, or the exception that stopped it (e.g. a metric's
        ``DivergenceError``); the other runs continue without it.
    """
    from .simulator import step_agents_many

    n = len(problems)
    trials = list(range(n)) if trials is None else list(trials)
    metrics = [None] * n if metrics is None else list(metrics)
    if not (len(networks) == len(trials) == len(metrics) == n):
        raise ShapeMismatchError("run_many needs one network, trial and metrics mapping per problem")
    steps = [_rounds(algorithm, problems[i], networks[i], rounds, seed, trials[i], SimulatorBackend(), metrics[i],
                     False, transcript, None, 0, False, secure) for i in range(n)]
    results: list = [None] * n
    pending = {}
    for i, g in enumerate(steps):
        try:
            pending[i] = next(g)
        except Exception as exc:  # noqa: BLE001 - reported per run
            results[i] = exc
    while pending:
        idx = list(pending)
        try:
            outs = step_agents_many([pending[i][0] for i in idx], pending[idx[0]][1], [pending[i][2] for i in idx])
        except BaseException:
            for i in idx:
                steps[i].close()
            raise
        for i, out in zip(idx, outs):
            try:
                pending[i] = steps[i].send(out)
            except StopIteration as stop:
                results[i] = stop.value
                del pending[i]
            except Exception as exc:  # noqa: BLE001 - reported per run
                results[i] = exc
                del pending[i]
    return results


def _rounds(algorithm, problem, network, rounds, seed, trial, backend, metrics, keep_iterates, transcript, checkpoint,
            checkpoint_every, resume, secure, dropout=None, prior_ledger=None):
    """The protocol of :func:`run` as a generator: it yields ``(backend, t, inbox)`` where the agents must be
    stepped and receives their outboxes, so :func:`run_many` can step several runs' agents in one call; its return
    value is the :class:`RunResult`."""
    from ..privacy import PrivacyLedger

    rounds = check_int(rounds, "rounds", 1)
    check_int(seed, "seed", 0)
    check_int(trial, "trial", 0)
    K = network.n_agents
    n_prob = getattr(problem, "n_agents", K)
    if n_prob != K:
        raise ShapeMismatchError(f"the network has {K} agents but the problem has {n_prob}")
    metrics = dict(metrics or {})
    if hasattr(algorithm, "for_rounds"):  # optional in the contract: a total budget is spread over this run (issue 23)
        algorithm = algorithm.for_rounds(rounds)
    if type(secure) is not bool:
        raise TypeError(f"secure must be a bool, got {type(secure).__name__}")
    be = make_backend(backend)
    problem, be, party_config = _party_local(problem, be, metrics)
    party_metrics = {name: fn.party_metric for name, fn in metrics.items() if hasattr(fn, "party_metric")}
    specs = algorithm.messages(problem, network)
    router = Router(specs, network)
    config = {"algorithm": algorithm.name, "params": algorithm.params(), "seed": seed, "trial": trial,
              "n_agents": K, "backend": be.name, "noise": noise_provenance(secure)}
    secure_msgs, dropout = secure_specs(specs), check_dropout(dropout)
    secure_rounds: list[dict] = []
    if secure_msgs:
        if not getattr(be, "supports_secure_aggregation", False):
            raise ValidationError(f"{algorithm.name} sends secure-sum messages, which the {be.name!r} backend cannot "
                                  "aggregate; run it on the simulator or the Ray backend")
        recovery, threshold = protocol_of(algorithm, K)
        config["secure_aggregation"] = {
            "protocol": "pairwise masks (X25519 + HKDF-SHA256, AES-256 counter-mode masks) mod 2^bits; dropouts "
                        + ("recovered from the present parties' answers, a retried attempt when one fails after "
                           "sending (privdist.runtime.secure.secagg)" if recovery == "retry" else
                           f"recovered by {threshold}-out-of-{K} Shamir sharing of per-round seeds, double masking "
                           "(privdist.runtime.secure.secagg_threshold)" if recovery == "shamir" else
                           "masks with the neighbours of a fresh random regular graph per round, recovered by Shamir "
                           "sharing among neighbours (SecAgg+; privdist.runtime.secure.secagg_plus)"),
            "recovery": recovery, "threshold": threshold,
            **({"graph": _graph(algorithm, K).to_dict()} if recovery == "sparse" else {}),
            "bits": secure_bits(secure_msgs), "parties": K,
            "dropout": None if dropout is None else {"rate": dropout.rate, "after_send": dropout.after_send},
            "rounds": secure_rounds}
    elif dropout is not None:
        raise ValidationError(f"dropout simulates failures of secure aggregation, and {algorithm.name} sends no "
                              "secure-sum message")
    if hasattr(algorithm, "mechanism_info"):  # the mechanism every release went through (budget, noise multiplier)
        config["mechanism"] = algorithm.mechanism_info()
    fp = fingerprint({k: v for k, v in config.items() if k != "backend"})

    if checkpoint is not None:  # an unwritable checkpoint is found before the first round, not at the first save
        check_writable_dir(Path(checkpoint).parent, "checkpoint directory")
        if Path(checkpoint).is_dir():
            raise OutputWriteError(f"checkpoint {checkpoint} is a directory: give a file name")
    t0 = time.perf_counter()
    # secure mode: every party draws its own noise key where it runs; none exists in the driver (DESIGN idea 4)
    agent_out, coord_out = be.start(algorithm, problem, network, seed, trial, secure=secure)
    start_round = 1
    if resume and checkpoint is not None and Path(checkpoint).exists():
        payload = load_checkpoint(checkpoint, fp)
        be.restore(payload["snapshot"])
        agent_out, coord_out = payload["agent_out"], payload["coord_out"]
        ledger, record, curves, iterates = payload["ledger"], payload["transcript"], payload["curves"], payload["iterates"]
        secure_rounds.extend(payload.get("secure_rounds", []))
        start_round = payload["round"] + 1
    else:
        ledger, record = PrivacyLedger(K) if prior_ledger is None else prior_ledger.copy(), Transcript(transcript)
        if ledger.n_agents != K:
            raise ShapeMismatchError(f"the job's ledger has {ledger.n_agents} agents, the problem {K}")
        for text in algorithm.assumptions():
            ledger.add_assumption(text)
        if secure_msgs and protocol_of(algorithm, K)[0] == "sparse":  # the graph's guarantee, beside epsilon
            ledger.add_assumption("secure aggregation graph: " + _graph(algorithm, K).describe())
        for text in getattr(algorithm, "exposures", lambda: [])():
            ledger.add_exposure(text)
        if be.party_local:  # a party's own objective value leaves the party (issue 17)
            for pm in party_metrics.values():
                ledger.add_exposure(pm.exposure())
        router.check_outbox(AGENT, agent_out, K, 0)
        record.record(0, AGENT, sent_messages(algorithm, agent_out, 0))
        if secure_msgs:  # the public keys every party advertised at setup (broadcast back as one table)
            record.record(0, AGENT, {"secagg.public_keys": be.secure_keys})
        if coord_out is not None:
            router.check_outbox(COORDINATOR, coord_out, K, 0)
            record.record(0, COORDINATOR, coord_out)
        est = be.estimate()
        _party_metric_values(party_metrics, problem, be, est)
        curves = {name: [_evaluate(fn, est, 0)] for name, fn in metrics.items()}
        iterates = [est.copy()] if keep_iterates else None
    t_init = time.perf_counter() - t0

    def _save(t):
        snap = be.durable_snapshot()  # party-local: the states stay on the parties' nodes
        save_checkpoint(checkpoint, {"fingerprint": fp, "round": t, "snapshot": snap, "agent_out": agent_out,
                                     "coord_out": coord_out, "ledger": ledger, "transcript": record,
                                     "curves": curves, "iterates": iterates, "secure_rounds": secure_rounds})

    agents = np.arange(K)
    t1 = time.perf_counter()
    try:
        for t in range(start_round, rounds + 1):
            inbox = router.agent_inbox(agent_out, coord_out, t)
            if secure_msgs:  # threshold recovery: the round's keys and shares before anything is masked
                round_keys, keyed = prepare_round(be, algorithm, secure_msgs, t)
            agent_out = yield be, t, inbox
            router.check_outbox(AGENT, agent_out, K, t)
            if secure_msgs:  # masked where the agents run; the aggregator's side of the protocol
                agent_out, sums, present, extra, info = secure_sum(be, algorithm, secure_msgs, t, agent_out, dropout,
                                                                   seed, trial, round_keys)
                extra = keyed + extra
                secure_rounds.append({"round": t, **info})
            record.record(t, AGENT, sent_messages(algorithm, agent_out, t))
            if secure_msgs:
                for out in extra:
                    record.record(t, AGENT, out)
                ledger.record_round(agents, algorithm.secure_events(t, present, problem))
            else:
                ledger.record_round(agents, be.dp_events(t))
            if algorithm.has_coordinator:
                cin = router.coordinator_inbox(agent_out)
                if secure_msgs:
                    cin.update(sums)
                coord_out = be.step_coordinator(t, cin)
                router.check_outbox(COORDINATOR, coord_out, K, t)
                record.record(t, COORDINATOR, coord_out)
            est = be.estimate()
            _party_metric_values(party_metrics, problem, be, est)
            for name, fn in metrics.items():
                curves[name].append(_evaluate(fn, est, t))
            if keep_iterates:
                iterates.append(est.copy())
            if checkpoint is not None and checkpoint_every and t % checkpoint_every == 0 and t < rounds:
                _save(t)
        if checkpoint is not None:
            _save(rounds)
        final = be.snapshot()
    finally:
        be.close()
    t_rounds = time.perf_counter() - t1
    ran = rounds - start_round + 1
    return RunResult(
        algorithm=algorithm.name, params=algorithm.params(), rounds=rounds, seed=seed, trial=trial,
        estimates=be.estimate(), curves={k: np.asarray(v) for k, v in curves.items()}, transcript=record,
        ledger=ledger, timings={"init": t_init, "rounds": t_rounds, "per_round": t_rounds / max(ran, 1)},
        final_state=final["state"], final_coordinator_state=final["cstate"],
        iterates=None if iterates is None else np.stack(iterates), config={**config, "rounds": rounds,
                                                                          "versions": versions(), **party_config,
                                                                          **be.report()})
