"""Admission control of a party (issue 38): check a job's privacy plan against the party's policy and its lifetime
ledger BEFORE any data is read.

:func:`check_job` reads only public facts: the plan, the releases it declares for this party (computed by the
party's own installed privdist from the plan: :func:`privdist.learn.plan.declared_ledger`), the policy and the
ledger. It returns a :class:`Decision`: accept, or refuse with one sentence per broken rule, each naming the policy
key and both values. :func:`admit_job` checks and enters the job into the ledger under the ledger's lock, so that two
jobs checked at once cannot both take the last of the lifetime budget.

The lifetime test composes, at the policy's ``lifetime_delta``, the releases the ledger already counts (each job's
recorded releases; a job still announced or running at its reservation, see
:meth:`~privdist.privacy.lifetime.LifetimeLedger.committed`) together with the new job's declared releases: one
composition of every event, not a sum of per-job epsilons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ValidationError
from .accountants import agent_epsilon
from .ledger import PrivacyLedger
from .lifetime import LifetimeLedger
from .plan import PrivacyPlan
from .policy import PartyPolicy

__all__ = ["Decision", "check_job", "admit_job"]

#: Relative slack of "the declared releases compose to at most the plan's epsilon" (float noise of calibration).
_RTOL = 1e-9


@dataclass(frozen=True)
class Decision:
    """The outcome of :func:`check_job`.

    Attributes:
        accept: True when every rule of the policy holds.
        reasons: one sentence per broken rule (empty when accepted).
        job_epsilon: the party's declared releases of this job composed at the plan's delta (None: no noise).
        lifetime_before, lifetime_after: the party's committed lifetime epsilon at ``lifetime_delta`` without and
            with this job (None when not computed: a plan without noise).
        lifetime_delta: where they were computed.
    """

    accept: bool
    reasons: tuple
    job_epsilon: float | None = None
    lifetime_before: float | None = None
    lifetime_after: float | None = None
    lifetime_delta: float | None = None

    def to_dict(self) -> dict:
        return {"accept": self.accept, "reasons": list(self.reasons), "job_epsilon": self.job_epsilon,
                "lifetime_before": self.lifetime_before, "lifetime_after": self.lifetime_after,
                "lifetime_delta": self.lifetime_delta}


def check_job(plan: PrivacyPlan, policy: PartyPolicy, ledger: LifetimeLedger, party: int, declared, *,
              coordinator: str | None = None) -> Decision:
    """Whether this party may run ``plan`` (module docstring); nothing is written.

    Args:
        plan: the job's privacy plan (as received and validated: :meth:`PrivacyPlan.from_json`).
        policy: the party's policy.
        ledger: the party's lifetime ledger.
        party: this party's index in the plan.
        declared: the releases the plan declares for this party: ``(Release, count)`` pairs, or the plan's
            declared :class:`PrivacyLedger` (its ``party`` entries are taken).
        coordinator: the coordinator's name (checked against ``policy.coordinators`` when that is set).

    Returns:
        A :class:`Decision`.

    Raises:
        TypeError / ValidationError: arguments of the wrong type, ``party`` outside the plan.
    """
    if not isinstance(plan, PrivacyPlan):
        raise TypeError(f"plan must be a PrivacyPlan, got {type(plan).__name__}")
    if not isinstance(policy, PartyPolicy):
        raise TypeError(f"policy must be a PartyPolicy, got {type(policy).__name__}")
    if not isinstance(ledger, LifetimeLedger):
        raise TypeError(f"ledger must be a LifetimeLedger, got {type(ledger).__name__}")
    if isinstance(party, bool) or not isinstance(party, int) or not 0 <= party < plan.parties:
        raise ValidationError(f"party must be this party's index in the plan, in [0, {plan.parties}), got {party!r}")
    if isinstance(declared, PrivacyLedger):
        declared = declared.entries(party)
    declared = list(declared)
    reasons = _structural_reasons(plan, policy, coordinator)
    if not plan.private:
        if not policy.allow_non_private:
            reasons.append("allow_non_private is false, but the plan has no noise (epsilon None): this party's "
                           "messages would go out in the clear.")
        return Decision(not reasons, tuple(reasons))

    promised = plan.epsilon[party] if isinstance(plan.epsilon, tuple) else plan.epsilon
    if promised > policy.max_epsilon_per_job:
        reasons.append(f"max_epsilon_per_job is {policy.max_epsilon_per_job:g}, but the plan spends epsilon "
                       f"{promised:g} of this party in this job.")
    job_eps = agent_epsilon(declared, plan.delta, policy.accountant)
    if job_eps > policy.max_epsilon_per_job * (1 + _RTOL) and promised <= policy.max_epsilon_per_job:
        reasons.append(f"max_epsilon_per_job is {policy.max_epsilon_per_job:g}, but the releases the plan declares "
                       f"for this party compose to epsilon {_num(job_eps)} at the plan's delta {plan.delta:g}.")
    if plan.delta > policy.lifetime_delta:
        reasons.append(f"lifetime_delta is {policy.lifetime_delta:g}, but the plan's delta is {plan.delta:g}.")
    before_entries = ledger.committed_entries()
    before = agent_epsilon(before_entries, policy.lifetime_delta, policy.accountant)
    after = agent_epsilon(before_entries + declared, policy.lifetime_delta, policy.accountant)
    if after > policy.lifetime_epsilon:
        reasons.append(f"lifetime_epsilon is {policy.lifetime_epsilon:g}, but this job would bring the party's "
                       f"lifetime epsilon from {_num(before)} to {_num(after)} (composed at lifetime_delta "
                       f"{policy.lifetime_delta:g}).")
    return Decision(not reasons, tuple(reasons), job_eps, before, after, policy.lifetime_delta)


def admit_job(ledger: LifetimeLedger, job_id: str, coordinator: str, plan: PrivacyPlan, policy: PartyPolicy,
              party: int, declared) -> Decision:
    """:func:`check_job` and, when accepted, :meth:`LifetimeLedger.announce`, both under the ledger's lock.

    A job id the ledger already holds: with the same facts and still active, accepted again (a coordinator that
    re-announces after a reconnect); finished or aborted, refused (a rerun is a new job, charged anew).

    Raises:
        JobConflictError: the id is in the ledger with other facts. LedgerLockedError, LedgerCorruptError.
    """
    if isinstance(declared, PrivacyLedger):
        declared = declared.entries(party)
    declared = list(declared)
    with ledger.locked():
        if any(j.job == job_id for j in ledger.jobs()):
            record = ledger.announce(job_id, coordinator, plan, party, declared)  # same facts, or JobConflictError
            if record.active:
                return Decision(True, ())
            return Decision(False, (f"job {job_id!r} is already {record.status} in this party's ledger; a rerun "
                                    "needs a new job id (and is charged anew).",))
        decision = check_job(plan, policy, ledger, party, declared, coordinator=coordinator)
        if decision.accept:
            ledger.announce(job_id, coordinator, plan, party, declared)
        return decision


def _structural_reasons(plan: PrivacyPlan, policy: PartyPolicy, coordinator: str | None) -> list[str]:
    reasons = []
    if policy.coordinators is not None and coordinator not in policy.coordinators:
        reasons.append(f"coordinators allows {list(policy.coordinators)}, but the job comes from coordinator "
                       f"{coordinator!r}.")
    if plan.kind not in policy.accepted_kinds:
        reasons.append(f"accepted_kinds is {list(policy.accepted_kinds)}, but the plan is a {plan.kind} job.")
    if plan.trust not in policy.trust:
        reasons.append(f"trust accepts {list(policy.trust)}, but the plan's trust is {plan.trust!r}.")
    if plan.parties < policy.min_parties:
        reasons.append(f"min_parties is {policy.min_parties}, but the plan has {plan.parties} parties.")
    if plan.secure is not None and plan.private:
        s = plan.secure
        shares = s.shares(plan.parties)
        if shares < policy.min_honest_shares:
            reasons.append(f"min_honest_shares is {policy.min_honest_shares}, but each secure sum of the plan is "
                           f"calibrated for {shares} honest parties ({plan.parties} parties, {s.colluding} assumed "
                           f"colluding, {s.dropouts(plan.parties)} dropouts tolerated).")
        if s.colluding < policy.min_colluding_assumed:
            reasons.append(f"min_colluding_assumed is {policy.min_colluding_assumed}, but the plan assumes "
                           f"{s.colluding} colluding parties.")
    if plan.seeded and not policy.seeded_allowed:
        reasons.append("seeded_allowed is false, but the plan's noise is seeded (research mode: regenerable by "
                       "whoever holds the seed).")
    return reasons


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"
