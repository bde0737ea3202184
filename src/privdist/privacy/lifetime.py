"""A party's lifetime privacy ledger (issue 38): every release a party ever made, on its own disk, composed.

One data holder, one directory, one file (``ledger.json``) written atomically (a reader sees the old file or the
new one) under an exclusive ``fcntl`` lock (``ledger.lock``: a second process waits for it, or gets
:class:`~privdist.errors.LedgerLockedError` after ``timeout`` seconds; the lock dies with its holder, so a crashed
party leaves no stale lock). Each job is one entry: its id, its coordinator, the plan (its JSON), this party's index
in it, the releases the plan declares for this party, its status (``announced -> running -> finished | aborted``)
and, per round, the releases the party made.

**Write-ahead.** A party records a round's releases (:meth:`LifetimeLedger.record_round`, which returns only once
the file is on disk) BEFORE it sends them: a process that dies in between over-counts, never under-counts. Recording
the same releases for a round again is a no-op (a retried round); DIFFERENT releases for a recorded round are
:class:`~privdist.errors.RoundConflictError` (fresh noise for a round already released). A corrupt or truncated file
is :class:`~privdist.errors.LedgerCorruptError`, never reset.

**Composition.** :meth:`LifetimeLedger.spent` composes every recorded release of every job as one sequence through
privdist's accountants (:func:`~privdist.privacy.accountants.agent_epsilon`: PLD or RDP, Skellam releases by their RDP
bound), not a sum of per-job epsilons; the sum is given beside it, labelled basic composition.
:meth:`LifetimeLedger.committed` is what admission control uses: the same, with each job still announced or
running counted at the larger of what it declared and what it recorded (a job accepted earlier keeps its budget
reserved until it finishes or is aborted).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections import Counter
from pathlib import Path

from .._io import atomic_write_bytes
from ..errors import (JobConflictError, LedgerCorruptError, LedgerLockedError, LedgerStateError, RoundConflictError,
                      UnsupportedEventError, ValidationError)
from .ledger import PrivacyLedger
from .lifetime_records import (ACTIVE, FORMAT, STATUSES, JobRecord, Spent, as_record, check_name, check_pair,
                               compose_jobs, describe_releases, job_from_dict, job_to_dict, normalise_releases)
from .plan import PrivacyPlan
from .release import Release

__all__ = ["LifetimeLedger", "JobRecord", "Spent", "STATUSES", "LEDGER_FILE", "LOCK_FILE", "normalise_releases"]

LEDGER_FILE = "ledger.json"
LOCK_FILE = "ledger.lock"


class LifetimeLedger:
    """The lifetime ledger in ``directory`` (module docstring); created empty when it has no ledger file.

    Args:
        directory: the party's ledger directory (created if missing).
        timeout: seconds to wait for another process's lock (None: as long as it takes; 0: not at all).

    Every mutation takes the lock, reads the file, checks, changes and writes it back before returning; a failed
    check leaves the file untouched. :meth:`locked` holds the lock across several calls (check a job, then
    announce it, with no other process in between).
    """

    def __init__(self, directory, *, timeout: float | None = None):
        self.directory = Path(directory)
        self.path = self.directory / LEDGER_FILE
        self.lock_path = self.directory / LOCK_FILE
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout >= 0):
            raise ValidationError(f"timeout must be None or a number of seconds >= 0, got {timeout!r}")
        self.timeout = timeout
        self._jobs: dict[str, dict] | None = None  # the state while the lock is held (by thread ``_owner``)
        self._dirty = False
        self._owner: int | None = None
        self._thread_lock = threading.RLock()  # threads sharing this object take turns; flock orders processes

    # ------------------------------------------------------------------ locking and files
    @contextlib.contextmanager
    def locked(self):
        """Hold the exclusive lock (re-entrant within this object); the file is written once, on leaving, if
        anything changed and no exception was raised.

        Raises:
            LedgerLockedError: another process holds the lock beyond ``timeout``. LedgerCorruptError: see module.
        """
        with self._thread_lock:
            if self._owner == threading.get_ident():
                yield self
                return
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise LedgerStateError(f"cannot open the ledger lock {self.lock_path}: {exc.strerror or exc}") from None
            try:
                self._acquire(fd)
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode(), 0)
                self._jobs, self._dirty = self._load(), False
                self._owner = threading.get_ident()
                yield self
                if self._dirty:
                    self._save(self._jobs)
            finally:
                self._jobs, self._dirty, self._owner = None, False, None
                os.close(fd)  # releases the lock

    def _acquire(self, fd: int) -> None:
        if self.timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    raise LedgerLockedError(f"the lifetime ledger {self.path} is locked by process {holder} (lock "
                                            f"{self.lock_path}); waited {self.timeout} s") from None
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def _state(self) -> dict[str, dict]:
        if self._owner == threading.get_ident():
            return self._jobs
        return self._load()  # atomic writes: a reader without the lock sees one whole version

    def _load(self) -> dict[str, dict]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise LedgerCorruptError(f"cannot read the lifetime ledger {self.path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise LedgerCorruptError(f"the lifetime ledger {self.path} is not valid JSON (truncated or damaged: "
                                     f"{exc}); privdist never resets a ledger: restore it from a backup") from None
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT or set(data) != {"format", "jobs"}:
                raise ValidationError(f"not a {FORMAT} file with keys ['format', 'jobs']")
            jobs = {}
            for item in data["jobs"]:
                job = job_from_dict(item)
                if job["job"] in jobs:
                    raise ValidationError(f"job {job['job']!r} appears twice")
                jobs[job["job"]] = job
            return jobs
        except (ValidationError, UnsupportedEventError, KeyError, TypeError, ValueError) as exc:
            raise LedgerCorruptError(f"the lifetime ledger {self.path} is malformed ({exc}); privdist never resets a "
                                     "ledger: restore it from a backup") from None

    def _save(self, jobs: dict[str, dict]) -> None:
        data = {"format": FORMAT, "jobs": [job_to_dict(j) for j in jobs.values()]}
        atomic_write_bytes(self.path, json.dumps(data, indent=1, allow_nan=False).encode())
        try:  # the rename itself on disk (a power cut after it cannot bring the old file back)
            dfd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:  # pragma: no cover - file systems without directory fsync
            pass

    def _job(self, jobs: dict, job_id: str) -> dict:
        if job_id not in jobs:
            raise LedgerStateError(f"job {job_id!r} is not in the lifetime ledger {self.path}")
        return jobs[job_id]

    # ------------------------------------------------------------------ mutations
    def announce(self, job_id: str, coordinator: str, plan: PrivacyPlan, party: int, declared) -> JobRecord:
        """Enter a job (status ``announced``): its plan and the releases it declares for this party (``declared``:
        ``(Release, count)`` pairs, or the plan's declared :class:`PrivacyLedger`, whose ``party`` entries are
        taken). Announcing the same job again with the same facts is a no-op.

        Raises:
            JobConflictError: the id is in the ledger with another coordinator, plan, party or declaration.
            ValidationError / TypeError: an empty id or name, a party outside the plan, malformed releases.
        """
        job_id, coordinator = check_name(job_id, "job id"), check_name(coordinator, "coordinator")
        if not isinstance(plan, PrivacyPlan):
            raise TypeError(f"plan must be a PrivacyPlan, got {type(plan).__name__}")
        party = _party(party, plan)
        if isinstance(declared, PrivacyLedger):
            declared = declared.entries(party)
        new = {"job": job_id, "coordinator": coordinator, "party": party, "plan": json.loads(plan.to_json()),
               "status": "announced", "declared": tuple(check_pair(d) for d in declared), "rounds": {},
               "times": {"announced": _now()}, "reason": None}
        with self.locked():
            jobs = self._jobs
            old = jobs.get(job_id)
            if old is not None:
                differ = [k for k in ("coordinator", "party", "plan", "declared") if old[k] != new[k]]
                if differ:
                    raise JobConflictError(f"job {job_id!r} is already in the lifetime ledger with another "
                                           f"{', '.join(differ)}; a new job needs a new id")
                return as_record(old)
            jobs[job_id] = new
            self._dirty = True
            return as_record(new)

    def start(self, job_id: str) -> JobRecord:
        """``announced -> running`` (a running job: no-op).

        Raises:
            LedgerStateError: an unknown job, or one that finished or was aborted.
        """
        return self._move(job_id, "running")

    def finish(self, job_id: str) -> JobRecord:
        """``announced | running -> finished`` (a finished job: no-op). Its reservation becomes what it recorded.

        Raises:
            LedgerStateError: an unknown job, or an aborted one.
        """
        return self._move(job_id, "finished")

    def abort(self, job_id: str, reason: str | None = None) -> JobRecord:
        """``announced | running -> aborted`` (an aborted job: no-op). What it recorded stays spent.

        Raises:
            LedgerStateError: an unknown job, or a finished one.
        """
        return self._move(job_id, "aborted", reason)

    def _move(self, job_id: str, status: str, reason: str | None = None) -> JobRecord:
        with self.locked():
            job = self._job(self._jobs, job_id)
            if job["status"] == status:
                return as_record(job)
            if job["status"] not in ACTIVE or (status == "running" and job["status"] != "announced"):
                raise LedgerStateError(f"job {job_id!r} is {job['status']}; it cannot become {status}")
            job["status"] = status
            job["times"][status] = _now()
            if reason is not None:
                job["reason"] = check_name(reason, "reason")
            self._dirty = True
            return as_record(job)

    def record_round(self, job_id: str, round: int, releases) -> bool:
        """Record (write-ahead, on disk when this returns) the releases this party makes in ``round`` of a job
        (an announced job becomes running). Call it BEFORE sending them.

        Args:
            job_id: an announced or running job.
            round: the round number (an integer >= 0; the range step may use 0).
            releases: :class:`Release` objects and/or ``(Release, count)`` pairs (:func:`normalise_releases`).

        Returns:
            True when recorded; False when exactly these releases were recorded for this round already (a retry:
            nothing is counted twice).

        Raises:
            RoundConflictError: the round was recorded with different releases (fresh noise for a released round).
            LedgerStateError: an unknown job, or one that finished or was aborted.
        """
        if isinstance(round, bool) or not isinstance(round, int) or round < 0:
            raise ValidationError(f"round must be an integer >= 0, got {round!r}")
        entries = normalise_releases(releases)
        with self.locked():
            job = self._job(self._jobs, job_id)
            if job["status"] not in ACTIVE:
                raise LedgerStateError(f"job {job_id!r} is {job['status']}: nothing more may be released in it")
            old = job["rounds"].get(round)
            if old is not None:
                if Counter(dict(old)) == Counter(dict(entries)):
                    return False
                raise RoundConflictError(
                    f"round {round} of job {job_id!r} was recorded with {describe_releases(old)}; recording "
                    f"{describe_releases(entries)} would release fresh noise for a round already released")
            job["rounds"][round] = entries
            if job["status"] == "announced":
                job["status"] = "running"
                job["times"]["running"] = _now()
            self._dirty = True
            return True

    def amend_round(self, job_id: str, round: int, releases) -> None:
        """Replace round ``round``'s recorded releases by ``releases``, the same sums found weaker than recorded (a
        secure sum with fewer honest noise shares than its calibration assumed: parties gone). Write-ahead, like
        :meth:`record_round`: call it BEFORE helping release them.

        Raises:
            LedgerStateError: an unknown or ended job, or a round not recorded.
        """
        entries = normalise_releases(releases)
        with self.locked():
            job = self._job(self._jobs, job_id)
            if job["status"] not in ACTIVE:
                raise LedgerStateError(f"job {job_id!r} is {job['status']}: nothing more may be released in it")
            if job["rounds"].get(round) is None:
                raise LedgerStateError(f"round {round} of job {job_id!r} was not recorded: nothing to amend")
            if Counter(dict(job["rounds"][round])) != Counter(dict(entries)):
                job["rounds"][round] = entries
                self._dirty = True

    # ------------------------------------------------------------------ reading
    def jobs(self) -> list[JobRecord]:
        """Every job, in the order announced."""
        return [as_record(j) for j in self._state().values()]

    def job(self, job_id: str) -> JobRecord:
        """One job. Raises LedgerStateError when it is not in the ledger."""
        return as_record(self._job(self._state(), job_id))

    def entries(self) -> list[tuple[Release, int]]:
        """Every recorded release of every job: each job's :meth:`JobRecord.entries`, jobs in announce order."""
        return [e for job in self.jobs() for e in job.entries()]

    def committed_entries(self) -> list[tuple[Release, int]]:
        """What admission control counts: each job's :meth:`JobRecord.reserved`, jobs in announce order."""
        return [e for job in self.jobs() for e in job.reserved()]

    def spent(self, delta: float, accountant: str = "pld") -> Spent:
        """What this party has released, composed (module docstring): every recorded release of every job."""
        return compose_jobs([(j.job, j.entries()) for j in self.jobs()], delta, accountant)

    def committed(self, delta: float, accountant: str = "pld") -> Spent:
        """:meth:`spent` with active jobs counted at their reservation (:meth:`JobRecord.reserved`)."""
        return compose_jobs([(j.job, j.reserved()) for j in self.jobs()], delta, accountant)

    def __repr__(self) -> str:
        return f"LifetimeLedger({str(self.directory)!r})"


def _party(party, plan: PrivacyPlan) -> int:
    if isinstance(party, bool) or not isinstance(party, int) or not 0 <= party < plan.parties:
        raise ValidationError(f"party must be this party's index in the plan, in [0, {plan.parties}), got {party!r}")
    return int(party)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


