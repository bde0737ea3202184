"""What a party has spent (issue 38): its lifetime ledger as a JSON-ready report, for ``privdist party --ledger``.

:func:`ledger_report` gives the composed lifetime epsilon (and, labelled, the looser sum of per-job epsilons), each
job with its coordinator, plan, status and epsilon, and the epsilon composed per coordinator. The CLI renders it
(:func:`privdist.cli.ledger_view.render_ledger_report`).
"""

from __future__ import annotations

from .._checks import check_probability
from ..errors import UnknownNameError, ValidationError
from .accountants import agent_epsilon
from .lifetime import LifetimeLedger
from .policy import POLICY_ACCOUNTANTS, PartyPolicy

__all__ = ["ledger_report"]


def ledger_report(ledger: LifetimeLedger, delta: float | None = None, *, accountant: str | None = None,
                  policy: PartyPolicy | None = None) -> dict:
    """The party's lifetime ledger in numbers (JSON-ready).

    Args:
        ledger: the party's lifetime ledger.
        delta: where epsilon is computed (default ``policy.lifetime_delta``; required without a policy).
        accountant: ``"pld"`` or ``"rdp"`` (default ``policy.accountant``, else ``"pld"``).
        policy: the party's policy: adds its lifetime budget and what is committed against it.

    Returns:
        ``{"ledger", "delta", "accountant", "spent": {...}, "committed": {...}, "jobs": [...],
        "coordinators": {name: {"jobs": [ids], "epsilon": composed over their jobs' releases}}, "policy"?,
        "budget"?}``. ``spent`` composes every recorded release of every job (:meth:`LifetimeLedger.spent`, with the
        sum of per-job epsilons beside it as ``basic_composition``); ``committed`` counts the jobs still announced
        or running at their reservation.

    Raises:
        ValidationError: no delta, or one outside (0, 1). UnknownNameError: an unknown accountant.
        LedgerCorruptError: the ledger file is damaged.
    """
    if delta is None:
        if policy is None:
            raise ValidationError("ledger_report needs a delta (or a policy, whose lifetime_delta is used)")
        delta = policy.lifetime_delta
    delta = check_probability(delta, "delta")
    accountant = accountant or (policy.accountant if policy is not None else "pld")
    if accountant not in POLICY_ACCOUNTANTS:
        raise UnknownNameError("accountant", str(accountant), POLICY_ACCOUNTANTS)
    jobs = ledger.jobs()
    spent = ledger.spent(delta, accountant)
    committed = ledger.committed(delta, accountant)
    rows = []
    by_coordinator: dict[str, dict] = {}
    for job in jobs:
        entries = job.entries()
        plan = job.plan
        rows.append({
            "job": job.job, "coordinator": job.coordinator, "status": job.status, "party": job.party,
            "kind": plan.get("kind"), "algorithm": plan.get("algorithm"), "trust": plan.get("trust"),
            "parties": plan.get("parties"), "plan_epsilon": plan.get("epsilon"), "plan_delta": plan.get("delta"),
            "rounds_recorded": len(job.rounds), "planned_rounds": plan.get("rounds"),
            "releases": sum(c for _, c in entries),
            "epsilon": agent_epsilon(entries, delta, accountant),
            "reserved_epsilon": agent_epsilon(job.reserved(), delta, accountant) if job.active else None,
            "times": job.times, "reason": job.reason,
        })
        mine = by_coordinator.setdefault(job.coordinator, {"jobs": [], "entries": []})
        mine["jobs"].append(job.job)
        mine["entries"].extend(entries)
    coordinators = {name: {"jobs": v["jobs"], "epsilon": agent_epsilon(v["entries"], delta, accountant)}
                    for name, v in by_coordinator.items()}
    out = {"ledger": str(ledger.path), "delta": delta, "accountant": accountant, "spent": spent.to_dict(),
           "committed": {"epsilon": committed.epsilon,
                         "active_jobs": [j.job for j in jobs if j.active],
                         "note": "jobs still announced or running count at the larger of what they declared and "
                                 "what they recorded"},
           "jobs": rows, "coordinators": coordinators}
    if policy is not None:
        out["policy"] = policy.to_dict()
        if delta == policy.lifetime_delta and accountant == policy.accountant:
            out["budget"] = {"lifetime_epsilon": policy.lifetime_epsilon, "committed_epsilon": committed.epsilon,
                             "headroom": max(0.0, policy.lifetime_epsilon - committed.epsilon),
                             "note": "epsilons do not add: a new job is admitted by composing its releases with "
                                     "the ledger's (usually less than the sum), so the headroom is indicative"}
    return out
