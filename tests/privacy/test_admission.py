"""Issue 38: a party checks a job's plan against its policy and its lifetime ledger before any data is read."""

import dataclasses
import io
import warnings

import numpy as np
import pytest
from rich.console import Console

from privdist.cli.ledger_view import render_ledger_report
from privdist.errors import JobConflictError
from privdist.learn import DistributedLogisticRegression
from privdist.learn.plan import declared_ledger
from privdist.privacy import agent_epsilon, gaussian_release
from privdist.privacy.admission import admit_job, check_job
from privdist.privacy.lifetime import LifetimeLedger
from privdist.privacy.lifetime_report import ledger_report
from privdist.privacy.plan import TrainingPlan
from privdist.privacy.policy import PartyPolicy
from privdist.privacy.release import claimed
from privdist.privacy.secure_params import SecureAggregation

from _lifetime_plans import make_plan


@pytest.fixture(scope="module")
def fitted():
    """privdist's default job (dpmm under secure aggregation, total epsilon 1, delta 1e-5) among 3 parties: its
    plan and the releases it declares for party 0, computed from the plan alone (as tests/learn/test_learn_plan)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DistributedLogisticRegression(n_agents=3).fit(X, y)  # fresh OS entropy: not seeded
    plan = m.privacy_plan_
    assert not plan.seeded
    P = plan.columns + 1
    declared = declared_ledger(plan, [m._algorithm(plan, 0, P)[0]], {"features": P, "loss": "logistic"})
    assert declared.entries(0) == m.ledger_.entries(0)
    return plan, declared


def _run(ledger, job, entries):
    """Release what was declared, round by round (write-ahead), then finish."""
    t = 0
    for r, c in entries:
        for _ in range(c):
            ledger.record_round(job, t, [r])
            t += 1
    ledger.finish(job)


def test_privdists_default_job_is_accepted_by_the_default_policy(fitted, tmp_path):
    plan, declared = fitted
    d = check_job(plan, PartyPolicy(), LifetimeLedger(tmp_path), 0, declared, coordinator="hub")
    assert d.accept and d.reasons == ()
    assert 0 < d.job_epsilon <= 1.0 and d.lifetime_before == 0 and d.lifetime_after == pytest.approx(d.job_epsilon)
    assert d.to_dict()["accept"] is True


def test_a_second_job_is_refused_when_it_would_exceed_the_lifetime_budget(fitted, tmp_path):
    plan, declared = fitted
    entries = declared.entries(0)
    both = agent_epsilon(entries + entries, 1e-5, "pld")
    one = agent_epsilon(entries, 1e-5, "pld")
    assert one < both < 2 * one  # composed, not summed
    ledger = LifetimeLedger(tmp_path)
    assert admit_job(ledger, "job-1", "hub", plan, PartyPolicy(lifetime_epsilon=both * 0.99), 0, declared).accept
    # while job-1 runs, its whole declaration is reserved: the second job is refused already
    tight = PartyPolicy(lifetime_epsilon=both * 0.99)
    assert not check_job(plan, tight, ledger, 0, declared).accept
    _run(ledger, "job-1", entries)
    assert ledger.spent(1e-5).epsilon == one
    d = admit_job(ledger, "job-2", "hub", plan, tight, 0, declared)
    assert not d.accept and len(d.reasons) == 1
    assert d.reasons[0] == (f"lifetime_epsilon is {both * 0.99:g}, but this job would bring the party's lifetime "
                            f"epsilon from {one:.4g} to {both:.4g} (composed at lifetime_delta 1e-05).")
    assert [j.job for j in ledger.jobs()] == ["job-1"]  # a refused job is not entered
    roomy = PartyPolicy(lifetime_epsilon=both * 1.01)
    d = admit_job(ledger, "job-2", "hub", plan, roomy, 0, declared)
    assert d.accept and d.lifetime_after == both
    assert ledger.job("job-2").status == "announced"
    assert ledger.committed(1e-5).epsilon == both


def test_admit_job_is_idempotent_and_a_finished_job_is_not_rerun(fitted, tmp_path):
    plan, declared = fitted
    ledger, policy = LifetimeLedger(tmp_path), PartyPolicy()
    assert admit_job(ledger, "j", "hub", plan, policy, 0, declared).accept
    assert admit_job(ledger, "j", "hub", plan, policy, 0, declared).accept  # re-announced: reserved once
    assert ledger.committed(1e-5).epsilon == agent_epsilon(declared.entries(0), 1e-5, "pld")
    with pytest.raises(JobConflictError):
        admit_job(ledger, "j", "other-hub", plan, policy, 0, declared)
    ledger.abort("j", "coordinator lost")
    d = admit_job(ledger, "j", "hub", plan, policy, 0, declared)
    assert not d.accept and "already aborted" in d.reasons[0] and "new job id" in d.reasons[0]


G = [(gaussian_release(40.0), 10)]  # a small declared cost (epsilon ~0.4 at 1e-5)
SECURE = SecureAggregation()


@pytest.mark.parametrize("policy,plan,coordinator,expected", [
    (dict(), make_plan(epsilon=2.0, training=(TrainingPlan(2.0, 1e-5),)), "hub",
     "max_epsilon_per_job is 1, but the plan spends epsilon 2 of this party in this job."),
    (dict(lifetime_delta=1e-6), make_plan(), "hub", "lifetime_delta is 1e-06, but the plan's delta is 1e-05."),
    (dict(trust=["local"]), make_plan(secure=SECURE), "hub",
     "trust accepts ['local'], but the plan's trust is 'secure_aggregation'."),
    (dict(accepted_kinds=["vertical"]), make_plan(), "hub",
     "accepted_kinds is ['vertical'], but the plan is a horizontal job."),
    (dict(), make_plan(parties=2), "hub", "min_parties is 3, but the plan has 2 parties."),
    (dict(), make_plan(secure=SecureAggregation(colluding=1, dropout_tolerance=0.5)), "hub",
     "min_honest_shares is 2, but each secure sum of the plan is calibrated for 1 honest parties (4 parties, 1 "
     "assumed colluding, 2 dropouts tolerated)."),
    (dict(min_colluding_assumed=1), make_plan(secure=SECURE), "hub",
     "min_colluding_assumed is 1, but the plan assumes 0 colluding parties."),
    (dict(), make_plan(seeded=True), "hub",
     "seeded_allowed is false, but the plan's noise is seeded (research mode: regenerable by whoever holds the seed)."),
    (dict(), make_plan(epsilon=None, training=(TrainingPlan(None, 1e-5),)), "hub",
     "allow_non_private is false, but the plan has no noise (epsilon None): this party's messages would go out in "
     "the clear."),
    (dict(coordinators=["hub"]), make_plan(), "rogue",
     "coordinators allows ['hub'], but the job comes from coordinator 'rogue'."),
], ids=["max_epsilon_per_job", "lifetime_delta", "trust", "accepted_kinds", "min_parties", "min_honest_shares",
        "min_colluding_assumed", "seeded_allowed", "allow_non_private", "coordinators"])
def test_each_policy_rule_refuses_with_its_reason(tmp_path, policy, plan, coordinator, expected):
    ledger = LifetimeLedger(tmp_path)
    d = check_job(plan, PartyPolicy(**policy), ledger, 0, G, coordinator=coordinator)
    assert not d.accept and d.reasons == (expected,)
    ok = check_job(plan, PartyPolicy(**{**policy, **_relaxed(expected)}), ledger, 0, G, coordinator="hub")
    assert ok.accept, ok.reasons  # the same job with that one rule relaxed is accepted


def _relaxed(reason):
    key = reason.split(" ")[0]
    return {"max_epsilon_per_job": dict(max_epsilon_per_job=2.0), "lifetime_delta": dict(lifetime_delta=1e-5),
            "trust": dict(trust=["local", "secure_aggregation"]),
            "accepted_kinds": dict(accepted_kinds=["horizontal"]), "min_parties": dict(min_parties=2),
            "min_honest_shares": dict(min_honest_shares=1), "min_colluding_assumed": dict(min_colluding_assumed=0),
            "seeded_allowed": dict(seeded_allowed=True), "allow_non_private": dict(allow_non_private=True),
            "coordinators": dict(coordinators=["hub", "rogue"])}[key]


def test_declared_releases_above_the_per_job_budget_are_refused(tmp_path):
    loud = [(gaussian_release(2.0), 50)]  # the plan says epsilon 1, its releases compose to far more
    d = check_job(make_plan(), PartyPolicy(), LifetimeLedger(tmp_path), 0, loud)
    eps = agent_epsilon(loud, 1e-5, "pld")
    assert not d.accept and d.reasons[0] == (f"max_epsilon_per_job is 1, but the releases the plan declares for this "
                                             f"party compose to epsilon {eps:.4g} at the plan's delta 1e-05.")
    claim = [(claimed(gaussian_release(40.0), "noise model not enforced"), 1)]  # not a guarantee: infinite
    d = check_job(make_plan(), PartyPolicy(), LifetimeLedger(tmp_path), 0, claim)
    assert not d.accept and any("compose to epsilon inf" in r for r in d.reasons)


def test_several_broken_rules_give_several_reasons(tmp_path):
    plan = dataclasses.replace(make_plan(parties=2), seeded=True)
    d = check_job(plan, PartyPolicy(coordinators=["hub"]), LifetimeLedger(tmp_path), 0, G, coordinator=None)
    assert [r.split(" ")[0] for r in d.reasons] == ["coordinators", "min_parties", "seeded_allowed"]


def test_ledger_report_and_its_table(fitted, tmp_path):
    plan, declared = fitted
    ledger, policy = LifetimeLedger(tmp_path), PartyPolicy()
    entries = declared.entries(0)
    for job, hub in (("a", "hub-1"), ("b", "hub-2"), ("c", "hub-1")):
        assert admit_job(ledger, job, hub, plan, policy, 0, declared).accept
    _run(ledger, "a", entries)
    ledger.record_round("b", 0, [entries[0]])
    ledger.abort("b", "coordinator lost")
    report = ledger_report(ledger, policy=policy)
    spent = entries + [entries[0]]
    assert report["spent"]["epsilon"] == agent_epsilon(spent, 1e-5, "pld")
    assert report["spent"]["basic_composition"]["epsilon"] == pytest.approx(
        agent_epsilon(entries, 1e-5, "pld") + agent_epsilon([entries[0]], 1e-5, "pld"))
    assert report["committed"]["active_jobs"] == ["c"]
    assert report["committed"]["epsilon"] == agent_epsilon(spent + entries, 1e-5, "pld")
    rows = {r["job"]: r for r in report["jobs"]}
    assert rows["a"]["status"] == "finished" and rows["a"]["rounds_recorded"] == sum(c for _, c in entries)
    assert rows["b"]["reason"] == "coordinator lost" and rows["c"]["epsilon"] == 0.0
    assert report["coordinators"]["hub-1"] == {"jobs": ["a", "c"], "epsilon": agent_epsilon(entries, 1e-5, "pld")}
    assert report["budget"]["lifetime_epsilon"] == 10.0
    assert ledger_report(ledger, 1e-6, accountant="rdp")["spent"]["epsilon"] == agent_epsilon(spent, 1e-6, "rdp")
    console = Console(file=io.StringIO(), width=220, record=True)
    render_ledger_report(report, console)
    text = console.export_text()
    for word in ("hub-1", "hub-2", "finished", "aborted (coordinator lost)", "announced", "basic composition"):
        assert word in text
