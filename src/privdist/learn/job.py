"""A job across organisations (issue 38): the coordinator's side and the party's side of one private fit.

The coordinator holds no data. :func:`coordinate` asks every party for its public facts (row count, column names,
class names: public under replace-one neighbours and stated by the party), builds the job's privacy plan from them
(:func:`privdist.learn.plan.horizontal_plan`, the same builder as ``privdist fit``) and offers it with the job's
public settings; each party checks the offer against its own policy and lifetime ledger and answers before it reads
a single value of its data (:class:`PartyJob`). When every party accepts, the rounds run with the parties in their
own processes (:class:`~privdist.runtime.remote.backend.RemoteBackend`); the coordinator keeps the sums and the
model and writes the same release as ``privdist fit`` (the model and its privacy report, the plan beside it).

Scope of this version: the horizontal estimators' optimisers with a coordinator (:data:`JOB_ALGORITHMS`: ``dpmm``,
the default, or ``ssp``; secure aggregation or local trust; the plan names it, so every party checks and builds the
optimiser it accepted), binary labels; the
columns without public bounds get theirs from the plan's DP range step, run as its own round of the parties before
training (:mod:`privdist.learn.job_ranges`).

Each party builds its algorithm itself, from the plan and its installed privdist: the noise it adds is what its own
code computes from the plan it accepted, never a number sent to it.

After the rounds the coordinator sends each party the release (``release``: the model file's content, public), so a
party can fit its owner-only personal model from it and its own rows (issue 39,
:mod:`privdist.learn.personal_release`); then ``close``. A party whose training ended (its ledger entry finished)
counts as finished even if the release never arrives.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import PrivdistError, UnknownNameError, ValidationError

__all__ = ["JOB_ALGORITHMS", "JobRequest", "PartyJob", "LifetimeGate", "JobRefusedError", "coordinate",
           "job_estimator", "check_job_algorithm"]

#: The optimisers a horizontal job runs: the estimators' algorithms whose parties only talk to a coordinator (the
#: remote backend's star; the others exchange with graph neighbours), dpmm first (the default).
JOB_ALGORITHMS = ("dpmm", "ssp")


class JobRefusedError(PrivdistError, RuntimeError):
    """A party refused the job's plan (its reasons are in the message), or parties disagree on public facts."""


@dataclass(frozen=True)
class JobRequest:
    """What the coordinator's operator asks for: the budget, the trust model and the public settings every party
    runs with (the same meaning as :class:`~privdist.learn.DistributedLogisticRegression`'s parameters)."""

    epsilon: float | None = 1.0
    delta: float = 1e-5
    trust: str = "auto"
    secure_aggregation: dict | None = None
    rounds: int | None = None
    alpha: float = 1e-4
    row_norm: float = 1.0
    fit_intercept: bool = True
    scale: str = "dp"
    bounds: object = None
    job_id: str = "job"
    seed: int | None = None
    algorithm: str = "dpmm"

    def __post_init__(self):
        check_job_algorithm(self.algorithm)

    def settings(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(self).items()}


def check_job_algorithm(name) -> str:
    """``name`` if a job can run it (:data:`JOB_ALGORITHMS`).

    Raises:
        UnknownNameError: not a registered algorithm. ValidationError: registered, but not a job's optimiser.
    """
    from ..algorithms import ALGORITHMS

    if not isinstance(name, str) or name not in ALGORITHMS:
        raise UnknownNameError("algorithm", str(name), JOB_ALGORITHMS)
    if name not in JOB_ALGORITHMS:
        raise ValidationError(f"a job across organisations runs {' or '.join(JOB_ALGORITHMS)} (parties that talk "
                              f"only to the coordinator); {name!r} exchanges with graph neighbours")
    return name


def job_estimator(settings: dict, parties: int):
    """The estimator object both sides build from the job's public settings (never fitted on pooled data): its
    plan builder and algorithm factory are ``privdist fit``'s, with the job's optimiser (``settings["algorithm"]``,
    default ``dpmm``)."""
    from .linear import DistributedLogisticRegression

    if settings.get("scale") not in ("dp", "bounds", "none"):
        raise ValidationError("a job across organisations takes scale='dp' (a DP range step for the columns without "
                              "public bounds), 'bounds' (public bounds of every column) or 'none' (columns already in "
                              f"range); got scale={settings.get('scale')!r}")
    return DistributedLogisticRegression(
        algorithm=check_job_algorithm(settings.get("algorithm", "dpmm")), epsilon=settings["epsilon"],
        delta=settings["delta"], n_agents=parties,
        rounds=settings["rounds"], alpha=settings["alpha"], fit_intercept=settings["fit_intercept"],
        row_norm=settings["row_norm"], scale=settings["scale"], bounds=settings["bounds"], trust=settings["trust"],
        secure_aggregation=settings["secure_aggregation"], secure=settings["seed"] is None,
        random_state=settings["seed"])


def _handle(settings: dict, parties: int, columns: int, max_rows: int, sources):
    from ..problems import make_loss, make_regularizer
    from ..runtime import HorizontalParties

    P = columns + (1 if settings["fit_intercept"] else 0)
    return HorizontalParties(sources, make_loss("logistic"), make_regularizer("l2"), float(settings["alpha"]),
                             n_features=P, public={"max_party_rows": int(max_rows)})


_CALLED_OFF = ("the job was called off before its rounds ended (another party refused, or the coordinator stopped "
               "it); what was released stays charged")


_UNREADABLE = ("it accepted the plan but could not read its data as the job needs (the error, which describes its "
               "data, stays on its machine); nothing was released")


class LifetimeGate:
    """A party's policy and lifetime ledger in a job (:mod:`privdist.privacy.admission`,
    :mod:`privdist.privacy.lifetime`): the plan is admitted (and announced in the ledger, under its lock) before any
    data is read; every round's releases are recorded before they leave (write-ahead); the job ends finished, or
    aborted when its coordinator went away (what was released stays charged)."""

    def __init__(self, ledger, policy, coordinator: str):
        self.ledger, self.policy, self.coordinator, self.job = ledger, policy, coordinator, None

    def admit(self, plan, declared, job_id: str, party: int):
        from ..privacy.admission import admit_job

        decision = admit_job(self.ledger, job_id, self.coordinator, plan, self.policy, party, declared)
        if decision.accept:
            self.job = job_id
        return decision.accept, list(decision.reasons)

    def record(self, t: int, releases) -> None:
        released = [r for r in releases if r is not None]
        if released:
            self.ledger.record_round(self.job, int(t), released)

    def amend(self, t: int, releases) -> None:
        """Round ``t``'s releases found weaker than recorded (a secure sum with parties gone), before they are
        unmasked: the ledger's record of the round is replaced by them."""
        self.ledger.amend_round(self.job, int(t), [r for r in releases if r is not None])

    def end(self, finished: bool, reason: str = "the coordinator went away before the job ended") -> None:
        if self.job is None:
            return
        if finished:
            self.ledger.finish(self.job)
        else:
            self.ledger.abort(self.job, reason)


class PartyJob:
    """A party's side of a job (module docstring).

    Args:
        name: the party's name (its certificate's, on the wire).
        load: ``load() -> (X, y, feature_names)``, the party's own data; called only once it has accepted the plan.
        facts: the party's public facts ``{"rows", "columns", "classes"}`` (what it states; read from its file's
            shape and header, not from its values).
        gate: the party's admission and records (:class:`LifetimeGate`, or any object with ``admit(plan, declared,
            job_id, party) -> (accepted, reasons)``, ``record(t, releases)`` and ``end(finished)``); None accepts
            every private plan and records nothing.
    """

    #: After training, wait for the coordinator's ``release`` (a horizontal job's model; module docstring).
    awaits_release = True

    def __init__(self, name: str, load, facts: dict, *, gate=None):
        self.name, self.load, self.facts, self.gate = name, load, dict(facts), gate
        self.party, self.decision, self.phase, self.called_off, self.trained = None, None, None, False, False
        self.data_read, self.data_error_ = False, None  # the error reading its own data: stays on this machine
        self.closed, self._ended, self._range_started = False, False, False
        self.finished = False  # the training ended and its ledger entry is finished
        self.release_, self.own_ = None, None  # the coordinator's release; the party's own (X, y, names)
        self.preprocessor_, self.job_classes_ = None, None  # the column maps it trained with; the job's classes

    def handle(self, method: str, args: dict):
        if self.finished:  # after the rounds: the release, then close
            if method == "release":
                self.release_ = args.get("model")
            elif method != "close":
                from ..runtime.remote import RemoteCallError

                raise RemoteCallError(f"{self.name}: {method!r} after the job's rounds ended")
            self.closed = True
            return None
        if method == "hello":
            return {"name": self.name, **self.facts}
        if method == "offer":
            return self._offer(args)
        if method == "close" and (self.party is None or (self.phase == "ranges" and not self._range_started)):
            # a job called off before (or between) its rounds, the range step's round included
            self.party = None
            self._end(False, _CALLED_OFF)
            self.closed, self.called_off = True, True
            return None
        if method == "train" and getattr(self, "phase", None) == "ranged":
            self._train(args)
            return None
        if self.party is None:
            from ..runtime.remote import RemoteCallError

            raise RemoteCallError(f"{self.name}: {method!r} before an accepted offer")
        out = self.party.handle(method, args)
        if method == "init" and self.phase == "ranges":
            self._range_started = True
        elif method == "init":
            self.trained = True
        if method == "close" and self.phase == "ranges":  # the range step's round is over; training follows
            self.party, self.phase = None, "ranged"
            return out
        if method == "close":
            if not self.trained:  # closed before the training started: the job was called off
                self.called_off = True
            self._end(self.trained, None if self.trained else _CALLED_OFF)
            if self.trained and self.awaits_release:  # the release comes next (module docstring)
                self.finished = True
                return out
        self.closed = self.party.closed
        return out

    def abandon(self, reason: str | None = None) -> bool:
        """The coordinator went away (or the party was interrupted) before closing the job: it ends aborted in the
        party's ledger (between the range step and training too). Returns whether this ended it."""
        if not self.closed and not self.finished:
            return self._end(False, reason)
        return False

    def _end(self, finished: bool, reason: str | None = None) -> bool:
        """End the accepted job in the party's ledger, once; returns whether this call ended it."""
        if self.gate is None or self._ended or self.decision is None or not self.decision[0]:
            return False
        self._ended = True
        if finished:
            self.gate.end(True)
        else:
            self.gate.end(False, *(() if reason is None else (reason,)))
        return True

    def _offer(self, args):
        from ..privacy.plan import PrivacyPlan
        from .plan import declared_ledger

        plan = PrivacyPlan.from_dict(args["plan"])
        settings, k = dict(args["settings"]), int(args["party"])
        job_algorithm = settings.get("algorithm", "dpmm")
        if plan.kind != "horizontal" or plan.algorithm != job_algorithm:  # the party builds what the plan names
            reason = (f"the plan's optimiser {plan.algorithm!r} ({plan.kind} plan) is not the job's settings' "
                      f"{job_algorithm!r}")
            self.decision = (False, [reason])
            return {"accepted": False, "reasons": [reason]}
        est = job_estimator(settings, plan.parties)
        P = plan.columns + (1 if settings["fit_intercept"] else 0)
        algo = est._algorithm(plan, 0, P)[0]
        declared = declared_ledger(plan, [algo], {"features": P}).entries(k)
        accepted, reasons = (plan.private, [] if plan.private else ["the plan adds no noise"]) \
            if self.gate is None else self.gate.admit(plan, declared, str(settings["job_id"]), k)
        self.decision = (bool(accepted), list(reasons))
        if not accepted:
            return {"accepted": False, "reasons": list(reasons)}
        try:
            X, y, names = self.load()  # only now: the plan fits the party's policy
            names = [str(n) for n in names]
            if names != list(args["columns"]) or X.shape[0] != int(self.facts["rows"]):
                raise JobRefusedError(f"{self.name}: the data read do not match the facts it stated ({X.shape[0]} "
                                      f"rows, columns {names}; stated {self.facts['rows']} rows, the job's columns "
                                      f"{list(args['columns'])})")
        except Exception as exc:  # noqa: BLE001 - its text describes the party's data: it never leaves this machine
            return self._unreadable(exc)
        self.data_read = True
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        self.own_ = (X, np.asarray(y), names)  # kept on this machine for its personal model
        self.job_classes_ = [str(c) for c in args["classes"]]
        y_pm = np.where(np.asarray(y).astype(str) == str(args["classes"][1]), 1.0, -1.0)
        self._job = (plan, settings, k, est, algo, X, y_pm, names, int(args["max_rows"]))
        if plan.range is not None and plan.range.released:  # the range step's round comes first
            from ..network import complete
            from ..runtime.remote import RemoteParty
            from .job_ranges import RangeHistograms, RangeRows

            colluding = 0 if plan.secure is None else plan.secure.colluding
            rows = RangeRows(plan.parties, plan.rows, k, X[:, [names.index(c) for c in plan.range.columns]])
            self.party = RemoteParty(RangeHistograms(plan.range, colluding), rows, complete(plan.parties), k,
                                     on_release=None if self.gate is None else lambda t, r: self.gate.record(0, r),
                                     on_amend=_amender(self.gate, lambda t: 0))
            self.phase = "ranges"
        else:
            self._train({})
        return {"accepted": True, "reasons": []}

    def _unreadable(self, exc: Exception) -> dict:
        """The party accepted the plan but cannot read its data as the job needs (a missing value, a label outside
        the stated classes, ...): the job is aborted in its ledger (nothing was released) and the coordinator gets a
        refusal without the error's text, which describes the party's data; the error is kept for its owner."""
        self.data_error_ = exc
        self._end(False, "this party could not read its data for the job; nothing was released")
        reason = _UNREADABLE
        self.decision = (False, [reason])
        return {"accepted": False, "reasons": [reason]}

    def _train(self, released: dict) -> None:
        """Build the training party: the job's preprocessing (public bounds, and the range step's released bounds
        when it ran) on its own rows, its block of the problem, the algorithm the plan parameterises."""
        from ..network import complete
        from ..runtime.remote import RemoteParty

        plan, settings, k, est, algo, X, y_pm, names, max_rows = self._job
        self.preprocessor_ = _preprocessor(est, names, plan, released, X)  # kept: a release is checked against it
        Z = est._design(self.preprocessor_.transform(X))
        handle = _handle(settings, plan.parties, plan.columns, max_rows,
                         [f"held-by-party-{j}" for j in range(plan.parties)])
        handle._local[(k,)] = _own_problem(handle, k, Z, y_pm)  # its own block; no other source is ever resolved
        self.party = RemoteParty(algo, handle, complete(plan.parties), k,
                                 on_release=None if self.gate is None else self.gate.record,
                                 on_amend=_amender(self.gate, lambda t: t))
        self.phase = "train"


def _amender(gate, round_of):
    """``on_amend`` of a party's :class:`~privdist.runtime.remote.RemoteParty`: the gate's :meth:`LifetimeGate.amend`
    at the ledger's round number (``round_of(t)``), or None without a gate that amends."""
    amend = getattr(gate, "amend", None)
    return None if amend is None else (lambda t, releases: amend(round_of(t), releases))


def _preprocessor(est, names, plan=None, released=None, X=None):
    """The job's preprocessing: public bounds (or none) and, when the plan's range step ran, the bounds it released
    (``released``: ``bounds``, ``fallback``, ``noise_std``); rows clipped to ``row_norm``. Fitted from the column
    names and released values alone (``X`` only gives the party's own column count; nothing is read from a row)."""
    from ..data.bounds import Preprocessor
    from .ranges import _skipped, apply_range_release

    names = [str(n) for n in names]
    pre = Preprocessor(scale=est.scale, bounds=est.bounds, row_norm=est._clip_norm())
    X = np.zeros((1, len(names))) if X is None else X
    cols = pre.dp_columns(len(names), names)
    if not released:
        if plan is not None and plan.range is not None:  # decided not to run (swamped): the estimator's record
            _skipped(pre, X, names, cols, plan.range, None, None)
            return pre
        return pre.fit(X, names)
    apply_range_release(pre, X, names, cols, plan.range, np.asarray(released["bounds"], dtype=float),
                        np.asarray(released["fallback"], dtype=bool), released["noise_std"], delta=plan.delta)
    return pre


def _preprocessor_cols(est, columns) -> tuple:
    """Names of the columns the plan's DP range step estimates (those without public bounds; none unless
    ``scale="dp"``)."""
    from ..data.bounds import Preprocessor

    names = [str(c) for c in columns]
    cols = Preprocessor(scale=est.scale, bounds=est.bounds).dp_columns(len(names), names)
    return tuple(names[j] for j in cols)


def _own_problem(handle, k: int, Z, y):
    from ..problems import HorizontalERM

    return HorizontalERM([(Z, y)], handle.loss, handle.regularizer, handle.reg_weight,
                         n_agents_total=handle.n_agents, agent_ids=np.array([k]))


def coordinate(request: JobRequest, links, *, classes=None):
    """Run ``request`` with the parties behind ``links`` (``links[k].call(method, args)``); returns the fitted
    estimator (coefficients from the parties' released models, its ``privacy_report_`` from the run's ledger and
    its ``privacy_plan_``).

    Raises:
        JobRefusedError: parties that state different columns or classes, or a party that refused the plan.
    """
    from ..network import complete
    from ..privacy import PrivacyLedger
    from ..runtime import run
    from ..runtime.remote import RemoteBackend

    settings = request.settings()
    facts = [link.call("hello", {}) for link in links]
    columns = facts[0]["columns"]
    if any(f["columns"] != columns for f in facts):
        raise JobRefusedError(f"the parties state different columns: {[f['columns'] for f in facts]}")
    names = sorted({str(c) for f in facts for c in f["classes"]}) if classes is None else [str(c) for c in classes]
    if len(names) != 2:
        raise JobRefusedError(f"this job fits two classes; the parties state {names}")
    K, rows = len(links), [int(f["rows"]) for f in facts]
    est = job_estimator(settings, K)
    est._check_params()
    seed = int(np.random.SeedSequence().generate_state(1)[0]) if request.seed is None else int(request.seed)
    from .plan import horizontal_plan

    dp_cols = _preprocessor_cols(est, columns)
    plan = horizontal_plan(est, rows=sum(rows), columns=len(columns), parties=K, dp_columns=dp_cols,
                           dp_target=False, classes=1, seeded=request.seed is not None)
    offer = {"plan": plan.to_dict(), "settings": settings, "columns": columns, "classes": names,
             "max_rows": max(rows)}
    answers = [link.call("offer", {**offer, "party": k}) for k, link in enumerate(links)]
    refused = {facts[k]["name"]: a["reasons"] for k, a in enumerate(answers) if not a["accepted"]}
    if refused:
        for link in links:  # the job is off: every party forgets it
            link.call("close", {})
        raise JobRefusedError(f"refused by {sorted(refused)}: {refused}")
    secure = request.seed is None
    ledger, released, range_config = PrivacyLedger(K), {}, None
    if plan.range is not None and plan.range.released:  # the range step's round: its own run, then training
        from .job_ranges import RangeHistograms, RangeRows, range_total

        colluding = 0 if plan.secure is None else plan.secure.colluding
        ranged = run(RangeHistograms(plan.range, colluding), RangeRows(K, sum(rows)), complete(K), 1,
                     seed=seed % 2**63, secure=secure, ledger=ledger, backend=RemoteBackend(links))
        bounds, fallback, noise_std = range_total(plan.range, ranged.final_coordinator_state["total"], sum(rows), K)
        released = {"bounds": bounds, "fallback": fallback, "noise_std": noise_std}
        ledger, range_config = ranged.ledger, ranged.config.get("secure_aggregation")
        for link in links:
            link.call("train", released)
    pre = _preprocessor(est, columns, plan, released)
    handle = _handle(settings, K, len(columns), max(rows), [f"held-by-{f['name']}" for f in facts])
    algo = est._algorithm(plan, 0, handle.n_features)[0]
    result = run(algo, handle, complete(K), plan.rounds, seed=seed % 2**63, secure=secure, ledger=ledger,
                 backend=RemoteBackend(links))
    est.classes_, est.n_features_in_, est.feature_names_in_ = np.array(names), len(columns), np.array(columns)
    est.preprocessor_, est.target_bounds_, est.n_agents_ = pre, None, K
    B = np.asarray(result.estimates)
    est.agent_coefs_, est.agent_intercepts_ = est._split(B)
    coef, intercept = est._split(B.mean(axis=0)[None, :])
    est.coef_, est.intercept_ = coef[0], float(intercept[0])
    est.ledger_, est.privacy_plan_, est._algo, est._noise = result.ledger, plan, algo, result.config.get("noise")
    est.algorithm_params_ = algo.params()
    est.history_ = {"rounds": plan.rounds, "note": "no training objective: the coordinator holds no data"}
    est.privacy_report_ = est._report(plan, result.ledger, pre.record, est._noise)
    est.remote_ = {**result.config.get("remote", {}), "names": [f["name"] for f in facts], "rows": rows,
                   "secure_aggregation": result.config.get("secure_aggregation"), "range_step": range_config,
                   "timings": dict(result.timings)}  # the coordinator's seconds: init, rounds, mean per round
    _send_release(est, links, result.config.get("remote", {}).get("lost_parties", {}))
    return est


def _send_release(est, links, lost) -> None:
    """Every party still reachable gets the release (the model file's content: public), then ``close``."""
    from ..runtime.remote import LinkLostError
    from .model_io import model_to_dict

    release = model_to_dict(est, list(est.feature_names_in_))
    for k, link in enumerate(links):
        if int(k) in {int(j) for j in lost}:
            continue
        try:
            link.call("release", {"model": release})
        except (LinkLostError, PrivdistError):  # a party gone after its rounds keeps its ledger; no personal model
            pass
