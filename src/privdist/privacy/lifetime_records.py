"""The records of a party's lifetime ledger (issue 38): jobs, compositions and the file format.

:class:`JobRecord` is one job as :class:`~privdist.privacy.lifetime.LifetimeLedger` holds it, :class:`Spent` a
composition over the ledger, :func:`job_to_dict` / :func:`job_from_dict` a job in the ledger file (each job's distinct
releases once, then ``[index, count]`` runs for its declaration and for each round).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..errors import ValidationError
from .accountants import agent_epsilon
from .release import Release

__all__ = ["JobRecord", "Spent", "STATUSES", "ACTIVE", "FORMAT", "normalise_releases", "compose_jobs", "job_to_dict",
           "job_from_dict", "as_record", "check_pair", "check_name",
           "describe_releases"]

FORMAT = "privdist.lifetime/1"
#: Job statuses; ``finished`` and ``aborted`` are final.
STATUSES = ("announced", "running", "finished", "aborted")
#: The statuses of a job that may still release (its declared budget is reserved).
ACTIVE = ("announced", "running")


@dataclass(frozen=True)
class JobRecord:
    """One job of a lifetime ledger (read-only view).

    Attributes:
        job: the job id. coordinator: the coordinator's name. party: this party's index in the plan.
        plan: the plan as its JSON dictionary (kept as written: an old ledger stays readable whatever plans become).
        status: one of :data:`STATUSES`. declared: the releases the plan declares for this party, ``(Release,
        count)`` pairs. rounds: ``{round: ((Release, count), ...)}``, the releases recorded per round.
        times: ``{status: ISO time}`` when each status was reached. reason: why it was aborted (or None).
    """

    job: str
    coordinator: str
    party: int
    plan: dict
    status: str
    declared: tuple
    rounds: dict
    times: dict
    reason: str | None = None

    @property
    def active(self) -> bool:
        """Announced or running: its declared budget is reserved."""
        return self.status in ACTIVE

    def entries(self) -> list[tuple[Release, int]]:
        """The recorded releases, round by round, consecutive equal releases merged (as :class:`PrivacyLedger`)."""
        return _run_length(r for t in sorted(self.rounds) for r in self.rounds[t])

    def reserved(self) -> list[tuple[Release, int]]:
        """What the job counts for: the recorded releases once it is final; while active, each distinct release at
        the larger of its declared and recorded counts (composition does not depend on order)."""
        if not self.active:
            return self.entries()
        want: Counter = Counter()
        for r, c in self.declared:
            want[r] += c
        done: Counter = Counter()
        for r, c in self.entries():
            done[r] += c
        return [(r, max(want[r], done[r])) for r in dict.fromkeys([*want, *done])]


@dataclass(frozen=True)
class Spent:
    """A composition over a lifetime ledger (JSON-ready by :meth:`to_dict`).

    Attributes:
        epsilon: every counted release of every job composed as one sequence, at ``delta`` (the guarantee).
        delta, accountant: where and how it was computed.
        per_job: ``((job id, epsilon at delta), ...)`` for each job that counts anything.
        basic_epsilon: the sum of the per-job epsilons, a bound at ``basic_delta`` = ``delta`` x those jobs (basic
            composition, for comparison; looser than ``epsilon``).
    """

    epsilon: float
    delta: float
    accountant: str
    per_job: tuple
    basic_epsilon: float
    basic_delta: float

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "accountant": self.accountant,
                "per_job": {job: eps for job, eps in self.per_job},
                "basic_composition": {"epsilon": self.basic_epsilon, "delta": self.basic_delta,
                                      "note": "sum of the per-job epsilons (each at delta): a looser bound at delta "
                                              "x jobs, shown for comparison"}}


def normalise_releases(releases) -> tuple[tuple[Release, int], ...]:
    """One round's releases as ``((Release, count), ...)``: each distinct release once with its total count, in
    order of first appearance (the order inside a round does not change its privacy cost).

    Args:
        releases: :class:`Release` objects and/or ``(Release, count)`` pairs; ``None`` items (nothing released)
            are skipped.

    Raises:
        TypeError / ValidationError: an item that is neither, a count that is not an integer >= 1.
    """
    total: Counter = Counter()
    for item in releases:
        if item is None:
            continue
        release, count = (item, 1) if isinstance(item, Release) else check_pair(item)
        total[release] += count
    return tuple(total.items())



def compose_jobs(jobs, delta: float, accountant: str) -> Spent:
    per_job = tuple((job, agent_epsilon(entries, delta, accountant)) for job, entries in jobs if entries)
    everything = [e for _, entries in jobs for e in entries]
    return Spent(epsilon=agent_epsilon(everything, delta, accountant), delta=float(delta), accountant=accountant,
                 per_job=per_job, basic_epsilon=float(sum(eps for _, eps in per_job)),
                 basic_delta=float(delta) * max(1, len(per_job)))


def _run_length(entries) -> list[tuple[Release, int]]:
    out: list[list] = []
    for r, c in entries:
        if out and out[-1][0] == r:
            out[-1][1] += c
        else:
            out.append([r, c])
    return [(r, c) for r, c in out]


def check_pair(item) -> tuple[Release, int]:
    if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], Release)):
        raise TypeError(f"a release must be a Release or a (Release, count) pair, got {item!r}")
    count = item[1]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationError(f"a release count must be an integer >= 1, got {count!r}")
    return item[0], int(count)




def check_name(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string, got {value!r}")
    return value




def describe_releases(entries) -> str:
    return ", ".join(f"{type(r.event).__name__} x{c}" for r, c in entries) or "nothing"


def as_record(job: dict) -> JobRecord:
    return JobRecord(job=job["job"], coordinator=job["coordinator"], party=job["party"], plan=job["plan"],
                     status=job["status"], declared=tuple(job["declared"]), rounds=dict(job["rounds"]),
                     times=dict(job["times"]), reason=job["reason"])


def job_to_dict(job: dict) -> dict:
    """One job for the file: its distinct releases once (``releases``), then ``[index, count]`` runs; the rounds as
    ``[first round, number of rounds, runs]`` blocks of consecutive rounds with the same releases (lossless: a job of
    a thousand equal rounds is one block, so the file and each write stay small over a party's lifetime)."""
    index: dict[Release, int] = {}

    def runs(entries):
        return [[index.setdefault(r, len(index)), c] for r, c in entries]

    declared = runs(job["declared"])
    rounds: list[list] = []
    last = None
    for t in sorted(job["rounds"]):
        entries = job["rounds"][t]
        if last is not None and t == last[0] + last[1] and entries == last[2]:
            last[1] += 1
            rounds[-1][1] += 1
            continue
        last = [t, 1, entries]
        rounds.append([t, 1, runs(entries)])
    return {"job": job["job"], "coordinator": job["coordinator"], "party": job["party"], "plan": job["plan"],
            "status": job["status"], "times": job["times"], "reason": job["reason"],
            "releases": [r.to_dict() for r in index], "declared": declared, "rounds": rounds}


_JOB_KEYS = {"job", "coordinator", "party", "plan", "status", "times", "reason", "releases", "declared", "rounds"}


def job_from_dict(data) -> dict:
    if not isinstance(data, dict) or set(data) != _JOB_KEYS:
        raise ValidationError(f"a job entry needs the keys {sorted(_JOB_KEYS)}")
    if data["status"] not in STATUSES:
        raise ValidationError(f"job {data['job']!r} has an unknown status {data['status']!r}")
    if not isinstance(data["plan"], dict) or not isinstance(data["times"], dict):
        raise ValidationError(f"job {data['job']!r}: plan and times must be objects")
    table = [Release.from_dict(r) for r in data["releases"]]

    def entries(runs):
        out = []
        for item in runs:
            i, c = item
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(table):
                raise ValidationError(f"job {data['job']!r}: release index {i!r} out of range")
            out.append(check_pair((table[i], c)))
        return tuple(out)

    rounds = {}
    for first, n, runs in data["rounds"]:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (first, n)) or first < 0 or n < 1:
            raise ValidationError(f"job {data['job']!r}: bad block of rounds {[first, n]!r}")
        released = entries(runs)
        for t in range(first, first + n):
            if t in rounds:
                raise ValidationError(f"job {data['job']!r}: round {t} recorded twice")
            rounds[t] = released
    return {"job": check_name(data["job"], "job id"), "coordinator": check_name(data["coordinator"], "coordinator"),
            "party": data["party"], "plan": data["plan"], "status": data["status"], "times": data["times"],
            "reason": data["reason"], "declared": entries(data["declared"]), "rounds": rounds}


