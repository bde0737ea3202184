"""Issue 38: a party's lifetime ledger: persistent, locked, write-ahead, composed through privdist's accountants."""

import json
import multiprocessing
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privdist.errors import (JobConflictError, LedgerCorruptError, LedgerLockedError, LedgerStateError,
                             RoundConflictError, ValidationError)
from privdist.privacy import agent_epsilon, gaussian_release, laplace_release
from privdist.privacy.lifetime import LifetimeLedger, normalise_releases
from privdist.privacy.plan import PrivacyPlan

from _lifetime_plans import make_plan

G1, G2, L1 = gaussian_release(5.0), gaussian_release(8.0), laplace_release(20.0)


def test_round_trip_through_the_file(tmp_path):
    led = LifetimeLedger(tmp_path)
    assert led.jobs() == [] and led.spent(1e-5).epsilon == 0.0
    plan = make_plan()
    led.announce("job-1", "hub", plan, 2, [(G1, 3), (L1, 1)])
    assert led.record_round("job-1", 0, [L1]) is True
    led.record_round("job-1", 1, [(G1, 1)])
    led.record_round("job-1", 2, [G1, G1])
    led.finish("job-1")
    back = LifetimeLedger(tmp_path).job("job-1")
    assert back.status == "finished" and back.coordinator == "hub" and back.party == 2
    assert PrivacyPlan.from_dict(back.plan) == plan
    assert back.declared == ((G1, 3), (L1, 1))
    assert back.rounds == {0: ((L1, 1),), 1: ((G1, 1),), 2: ((G1, 2),)}
    assert back.entries() == [(L1, 1), (G1, 3)]
    assert set(back.times) == {"announced", "running", "finished"}
    assert json.loads((tmp_path / "ledger.json").read_text())["format"] == "privdist.lifetime/1"


def test_spent_composes_every_event_of_every_job(tmp_path):
    led = LifetimeLedger(tmp_path)
    jobs = {"a": [(G1, 4), (L1, 2)], "b": [(G2, 3), (L1, 1), (G1, 2)]}
    for job, entries in jobs.items():
        led.announce(job, "hub", make_plan(), 0, entries)
        t = 0
        for r, c in entries:
            for _ in range(c):
                led.record_round(job, t, [r])
                t += 1
        led.finish(job)
    everything = jobs["a"] + jobs["b"]
    for accountant in ("pld", "rdp"):
        spent = led.spent(1e-5, accountant)
        assert spent.epsilon == agent_epsilon(everything, 1e-5, accountant)
        per_job = dict(spent.per_job)
        assert per_job == {j: agent_epsilon(e, 1e-5, accountant) for j, e in jobs.items()}
        assert spent.basic_epsilon == pytest.approx(sum(per_job.values()))
        assert spent.basic_delta == pytest.approx(2e-5)
        assert spent.epsilon < spent.basic_epsilon  # tight composition beats the sum
    assert led.spent(1e-5).to_dict()["basic_composition"]["epsilon"] == led.spent(1e-5).basic_epsilon


def test_idempotent_rerecord_and_conflicting_rerecord(tmp_path):
    led = LifetimeLedger(tmp_path)
    led.announce("j", "hub", make_plan(), 0, [(G1, 5)])
    assert led.record_round("j", 1, [G1, (L1, 2)]) is True
    before = led.spent(1e-5).epsilon
    assert led.record_round("j", 1, [(L1, 1), L1, G1]) is False  # the same releases (any order): a retry
    assert led.spent(1e-5).epsilon == before
    assert LifetimeLedger(tmp_path).job("j").rounds[1] == ((G1, 1), (L1, 2))
    with pytest.raises(RoundConflictError, match="round 1 of job 'j'.*fresh noise"):
        led.record_round("j", 1, [G2])
    with pytest.raises(RoundConflictError):
        led.record_round("j", 1, [G1, L1])  # a different count is a different release
    assert led.spent(1e-5).epsilon == before


def test_a_round_found_weaker_is_amended_on_disk_and_only_while_the_job_runs(tmp_path):
    """A secure sum with parties gone is a weaker release than the one recorded when the vector left: the round's
    record is replaced (G1 has less noise than G2: more epsilon), never for a round not recorded or an ended job."""
    led = LifetimeLedger(tmp_path)
    led.announce("j", "hub", make_plan(), 0, [(G1, 5)])
    led.record_round("j", 1, [G2])
    before = led.spent(1e-5).epsilon
    with pytest.raises(LedgerStateError, match="round 2 of job 'j' was not recorded"):
        led.amend_round("j", 2, [G1])
    led.amend_round("j", 1, [G1])
    assert LifetimeLedger(tmp_path).job("j").rounds[1] == ((G1, 1),) and led.spent(1e-5).epsilon > before
    led.finish("j")
    with pytest.raises(LedgerStateError, match="finished"):
        led.amend_round("j", 1, [G1])


def test_job_states_and_conflicts(tmp_path):
    led = LifetimeLedger(tmp_path)
    plan = make_plan()
    led.announce("j", "hub", plan, 1, [(G1, 2)])
    assert led.announce("j", "hub", plan, 1, [(G1, 2)]).status == "announced"  # same facts: no-op
    with pytest.raises(JobConflictError, match="coordinator"):
        led.announce("j", "other", plan, 1, [(G1, 2)])
    with pytest.raises(JobConflictError, match="declared"):
        led.announce("j", "hub", plan, 1, [(G1, 3)])
    with pytest.raises(LedgerStateError, match="not in the lifetime ledger"):
        led.record_round("nope", 0, [G1])
    with pytest.raises(ValidationError, match="party"):
        led.announce("k", "hub", plan, 4, [])
    led.start("j")
    led.record_round("j", 0, [G1])
    led.abort("j", "coordinator went away")
    assert led.job("j").reason == "coordinator went away" and led.abort("j").status == "aborted"
    with pytest.raises(LedgerStateError, match="aborted"):
        led.record_round("j", 1, [G1])
    with pytest.raises(LedgerStateError):
        led.finish("j")
    assert led.spent(1e-5).epsilon == agent_epsilon([(G1, 1)], 1e-5, "pld")  # what was released stays spent


def test_active_job_reserves_its_declared_budget(tmp_path):
    led = LifetimeLedger(tmp_path)
    led.announce("j", "hub", make_plan(), 0, [(G1, 10)])
    led.record_round("j", 0, [G1])
    assert led.spent(1e-5).epsilon == agent_epsilon([(G1, 1)], 1e-5, "pld")
    assert led.committed(1e-5).epsilon == agent_epsilon([(G1, 10)], 1e-5, "pld")
    for t in range(1, 12):  # beyond the declaration: counted as recorded
        led.record_round("j", t, [G1])
    assert led.committed(1e-5).epsilon == agent_epsilon([(G1, 12)], 1e-5, "pld")
    led.finish("j")
    assert led.committed(1e-5).epsilon == led.spent(1e-5).epsilon


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "format", "bad_index", "bad_status",
                                    "repeated_round"])
def test_a_damaged_file_is_a_named_error_never_a_reset(tmp_path, damage):
    led = LifetimeLedger(tmp_path)
    led.announce("j", "hub", make_plan(), 0, [(G1, 2)])
    led.record_round("j", 0, [G1])
    path = tmp_path / "ledger.json"
    text = path.read_text()
    data = json.loads(text)
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff not json")
    elif damage == "empty":
        path.write_text("")
    elif damage == "format":
        path.write_text(json.dumps({**data, "format": "something/9"}))
    elif damage == "bad_index":
        data["jobs"][0]["rounds"][0][2][0][0] = 7
        path.write_text(json.dumps(data))
    elif damage == "bad_status":
        data["jobs"][0]["status"] = "paused"
        path.write_text(json.dumps(data))
    else:
        data["jobs"][0]["rounds"].append([0, 1, [[0, 1]]])
        path.write_text(json.dumps(data))
    damaged = path.read_bytes()
    for call in (lambda: led.spent(1e-5), lambda: led.record_round("j", 1, [G1]), led.jobs):
        with pytest.raises(LedgerCorruptError, match="ledger.json"):
            call()
    assert path.read_bytes() == damaged  # untouched


def test_a_held_lock_makes_a_writer_wait_or_fail_by_name(tmp_path):
    holder = LifetimeLedger(tmp_path)
    impatient = LifetimeLedger(tmp_path, timeout=0)
    with holder.locked():
        holder.announce("j", "hub", make_plan(), 0, [])
        with pytest.raises(LedgerLockedError, match="locked by process"):
            impatient.announce("k", "hub", make_plan(), 0, [])
    impatient.announce("k", "hub", make_plan(), 0, [])
    assert [j.job for j in LifetimeLedger(tmp_path).jobs()] == ["j", "k"]


def test_changes_inside_a_failed_transaction_are_not_written(tmp_path):
    led = LifetimeLedger(tmp_path)
    with pytest.raises(RuntimeError):
        with led.locked():
            led.announce("j", "hub", make_plan(), 0, [(G1, 1)])
            raise RuntimeError("crash before the end")
    assert led.jobs() == []


def _writer(directory, job, plan_json, rounds, barrier, out):
    try:
        led = LifetimeLedger(directory)
        plan = PrivacyPlan.from_json(plan_json)
        barrier.wait()
        led.announce(job, "hub", plan, 0, [(G1, rounds)])
        for t in range(rounds):
            led.record_round(job, t, [G1])
            led.record_round(job, t, [G1])  # a retry: counted once
        led.finish(job)
        out.put((job, "ok"))
    except BaseException as exc:  # pragma: no cover - reported to the test
        out.put((job, repr(exc)))


def test_two_processes_writing_at_once_are_both_recorded(tmp_path):
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    plan_json = make_plan().to_json()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), job, plan_json, 25, barrier, out)) for job in "ab"]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=120)
    assert results == {"a": "ok", "b": "ok"}
    led = LifetimeLedger(tmp_path)
    jobs = {j.job: j for j in led.jobs()}
    assert set(jobs) == {"a", "b"}
    assert all(j.status == "finished" and sorted(j.rounds) == list(range(25)) for j in jobs.values())
    assert led.spent(1e-5).epsilon == agent_epsilon([(G1, 25), (G1, 25)], 1e-5, "pld")


def test_normalise_releases():
    assert normalise_releases([G1, None, (G1, 2), L1]) == ((G1, 3), (L1, 1))
    with pytest.raises(TypeError):
        normalise_releases(["G1"])
    with pytest.raises(ValidationError, match="count"):
        normalise_releases([(G1, 0)])


RELEASES = [gaussian_release(3.0), gaussian_release(12.0), laplace_release(15.0), laplace_release(40.0)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(1, 3), st.booleans()),
                min_size=1, max_size=8))
def test_spent_never_decreases_as_releases_are_recorded(steps):
    with tempfile.TemporaryDirectory() as directory:
        led = LifetimeLedger(directory)
        for job in range(3):
            led.announce(f"job{job}", "hub", make_plan(), 0, [])
        last, rounds = 0.0, [0, 0, 0]
        for job, which, count, retry in steps:
            t = rounds[job] - 1 if retry and rounds[job] else rounds[job]
            try:
                led.record_round(f"job{job}", t, [(RELEASES[which], count)])
            except RoundConflictError:
                continue  # a different release for a recorded round: refused, nothing recorded
            rounds[job] = max(rounds[job], t + 1)
            now = led.spent(1e-5).epsilon
            assert now >= last * (1 - 1e-12)
            last = now


def test_threads_sharing_one_ledger_object_take_turns(tmp_path):
    import threading

    led = LifetimeLedger(tmp_path)
    for job in "ab":
        led.announce(job, "hub", make_plan(), 0, [(G1, 30)])
    errors = []

    def work(job):
        try:
            for t in range(30):
                led.record_round(job, t, [G1])
        except BaseException as exc:  # pragma: no cover - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(job,)) for job in "ab"]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert all(sorted(j.rounds) == list(range(30)) for j in LifetimeLedger(tmp_path).jobs())


def test_equal_consecutive_rounds_are_one_block_on_disk(tmp_path):
    led = LifetimeLedger(tmp_path)
    led.announce("j", "hub", make_plan(), 0, [(L1, 1), (G1, 300)])
    led.record_round("j", 0, [L1])
    for t in range(1, 301):
        led.record_round("j", t, [G1])
    led.record_round("j", 305, [G1])  # a gap (rounds a party sat out) starts a new block
    data = json.loads((tmp_path / "ledger.json").read_text())
    assert data["jobs"][0]["rounds"] == [[0, 1, [[0, 1]]], [1, 300, [[1, 1]]], [305, 1, [[1, 1]]]]
    job = LifetimeLedger(tmp_path).job("j")
    assert len(job.rounds) == 302 and job.entries() == [(L1, 1), (G1, 301)]
