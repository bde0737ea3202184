"""Issue 38: a job across organisations. The coordinator holds no data; three parties in their own processes check the
plan, then train; the model equals ``privdist fit``'s estimator on the same per-party split (a seeded run: the same
transcript); a party whose admission check refuses the plan reads no data and the job stops by name."""

import numpy as np
import pytest

from privdist.learn import DistributedLogisticRegression
from privdist.learn.job import JobRefusedError, JobRequest, PartyJob, coordinate
from privdist.runtime.remote import LocalLink, spawn_party

from conftest import job_rows

K = 3
COLUMNS = ["age", "income", "score"]
BOUNDS = {"age": (18, 90), "income": (0, 200), "score": (-5, 5)}


def _rows(k: int):
    return job_rows(k, seed=10, n=120, step=30)


class Refuse:
    def admit(self, plan, declared, job_id, party):
        return False, ["max_epsilon_per_job: the plan's epsilon 1 exceeds 0.5"]


def _party(k: int, refuse: bool = False):
    X, y = _rows(k)
    reads = []

    def load():
        reads.append(1)
        return X, y, COLUMNS

    gate = Refuse() if refuse else None
    job = PartyJob(f"party{k}", load, {"rows": len(X), "columns": COLUMNS, "classes": sorted(set(y))}, gate=gate)
    job.reads = reads
    return job


REQUEST = JobRequest(epsilon=1.0, delta=1e-5, scale="bounds", bounds=BOUNDS, seed=11)


def _pooled_fit():
    X = np.vstack([_rows(k)[0] for k in range(K)])
    y = np.concatenate([_rows(k)[1] for k in range(K)])
    groups = np.concatenate([np.full(len(_rows(k)[0]), k) for k in range(K)])
    import pandas as pd

    return DistributedLogisticRegression(epsilon=1.0, delta=1e-5, scale="bounds", bounds=BOUNDS,
                                         random_state=11).fit(pd.DataFrame(X, columns=COLUMNS), y, groups=groups)


def test_a_job_in_one_process_equals_the_estimator():
    model = coordinate(REQUEST, [LocalLink(_party(k)) for k in range(K)])
    with pytest.warns(Warning):
        ref = _pooled_fit()
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert model.intercept_ == ref.intercept_ and list(model.classes_) == ["no", "yes"]
    assert model.privacy_plan_ == ref.privacy_plan_
    assert all(model.ledger_.entries(k) == ref.ledger_.entries(k) for k in range(K))
    assert model.privacy_report_["guaranteed"] and model.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    X = np.vstack([_rows(k)[0] for k in range(K)])
    np.testing.assert_array_equal(model.decision_function(X), ref.decision_function(X))


def test_a_job_over_party_processes_equals_the_estimator():
    started = [spawn_party(_party, k) for k in range(K)]
    try:
        model = coordinate(REQUEST, [link for _, link in started])
    finally:
        for proc, _ in started:
            proc.join(timeout=60)
    with pytest.warns(Warning):
        ref = _pooled_fit()
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    # the same with the DP range step's round (secure aggregation of the parties' histograms) over processes
    started = [spawn_party(_party, k) for k in range(K)]
    try:
        ranged = coordinate(JobRequest(epsilon=1.0, delta=1e-5, scale="dp", seed=11),
                            [link for _, link in started])
    finally:
        for proc, _ in started:
            proc.join(timeout=60)
    assert ranged.privacy_plan_.range.released and ranged.remote_["range_step"]["rounds"][0]["present"] == K
    assert ranged.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert model.remote_["names"] == ["party0", "party1", "party2"]
    assert all(proc.exitcode == 0 for proc, _ in started)


def test_a_refused_plan_stops_the_job_before_any_data_is_read():
    parties = [_party(k, refuse=(k == 1)) for k in range(K)]
    with pytest.raises(JobRefusedError, match="party1.*max_epsilon_per_job"):
        coordinate(REQUEST, [LocalLink(p) for p in parties])
    assert parties[1].reads == [] and all(p.closed for p in parties)


def test_a_job_called_off_releases_the_budget_the_other_parties_reserved(tmp_path):
    """One party refuses: the job is called off, and the parties that had accepted (and reserved its budget in
    their ledgers) end it aborted, having released nothing."""
    from privdist.learn.job import LifetimeGate
    from privdist.privacy.lifetime import LifetimeLedger
    from privdist.privacy.policy import PartyPolicy

    parties = [_party(k, refuse=(k == 1)) for k in range(K)]
    ledgers = {k: LifetimeLedger(tmp_path / f"l{k}") for k in (0, 2)}
    for k in (0, 2):
        parties[k].gate = LifetimeGate(ledgers[k], PartyPolicy(seeded_allowed=True), "coord")
    with pytest.raises(JobRefusedError):
        coordinate(REQUEST, [LocalLink(p) for p in parties])
    for k in (0, 2):
        (job,) = ledgers[k].jobs()
        assert job.status == "aborted" and not job.rounds and parties[k].called_off
        assert ledgers[k].committed(1e-5).epsilon == 0


def test_parties_that_disagree_on_columns_are_refused():
    odd = _party(2)
    odd.facts["columns"] = ["age", "income", "other"]
    with pytest.raises(JobRefusedError, match="different columns"):
        coordinate(REQUEST, [LocalLink(_party(0)), LocalLink(_party(1)), LocalLink(odd)])


def test_lifetime_ledgers_record_the_rounds_and_refuse_a_job_over_budget(tmp_path):
    """Each party's lifetime ledger holds the job's releases (written before they left) and the job finished; a
    second job that would take a party past its lifetime epsilon is refused before that party reads any data."""
    from privdist.learn.job import LifetimeGate
    from privdist.privacy.lifetime import LifetimeLedger
    from privdist.privacy.policy import PartyPolicy

    policy = PartyPolicy(lifetime_epsilon=1.2)  # two jobs at 1 compose to about 1.45
    ledgers = [LifetimeLedger(tmp_path / f"ledger{k}") for k in range(K)]

    def parties():
        out = []
        for k in range(K):
            job = _party(k)
            job.gate = LifetimeGate(ledgers[k], policy, "coord")
            out.append(job)
        return out

    model = coordinate(JobRequest(epsilon=1.0, delta=1e-5, bounds=BOUNDS), [LocalLink(p) for p in parties()])
    assert model.privacy_report_["noise"]["mode"] == "secure"
    for k in range(K):
        (record,) = ledgers[k].jobs()
        assert record.status == "finished" and record.coordinator == "coord"
        assert sum(c for _, c in ledgers[k].entries()) == model.ledger_.n_releases(k)
        assert ledgers[k].spent(1e-5).epsilon == pytest.approx(model.privacy_report_["per_agent"][k]
                                                               ["guarantee_pld"], rel=1e-6)
    second = parties()
    with pytest.raises(JobRefusedError, match="lifetime_epsilon"):
        coordinate(JobRequest(epsilon=1.0, delta=1e-5, bounds=BOUNDS, job_id="job2"),
                   [LocalLink(p) for p in second])
    assert all(p.reads == [] for p in second)


@pytest.mark.parametrize("trust", ["auto", "local"])
def test_a_job_with_the_dp_range_step_equals_the_estimator(trust):
    """scale='dp' with public bounds for one column: the other columns' ranges come from the plan's range step, run
    as its own round of the parties (secure sum of Skellam shares, or Gaussian releases under local trust); the
    model, plan, ledgers and preprocessing equal the estimator's on the same split (seeded)."""
    import pandas as pd

    request = JobRequest(epsilon=1.0, delta=1e-5, scale="dp", bounds={"score": (-5, 5)}, seed=13, trust=trust)
    model = coordinate(request, [LocalLink(_party(k)) for k in range(K)])
    X = np.vstack([_rows(k)[0] for k in range(K)])
    y = np.concatenate([_rows(k)[1] for k in range(K)])
    groups = np.concatenate([np.full(len(_rows(k)[0]), k) for k in range(K)])
    with pytest.warns(Warning):
        ref = DistributedLogisticRegression(epsilon=1.0, delta=1e-5, scale="dp", bounds={"score": (-5, 5)},
                                            random_state=13, trust=trust).fit(pd.DataFrame(X, columns=COLUMNS), y,
                                                                              groups=groups)
    assert model.privacy_plan_ == ref.privacy_plan_ and model.privacy_plan_.range.released
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert all(model.ledger_.entries(k) == ref.ledger_.entries(k) for k in range(K))
    step = [s for s in model.preprocessor_.record if s["step"] == "scale_by_dp_ranges"]
    assert step and step[0]["bounds"] == [s for s in ref.preprocessor_.record
                                          if s["step"] == "scale_by_dp_ranges"][0]["bounds"]


def _gated(tmp_path, parties, ks):
    from privdist.learn.job import LifetimeGate
    from privdist.privacy.lifetime import LifetimeLedger
    from privdist.privacy.policy import PartyPolicy

    ledgers = {k: LifetimeLedger(tmp_path / f"l{k}") for k in ks}
    for k in ks:
        parties[k].gate = LifetimeGate(ledgers[k], PartyPolicy(seeded_allowed=True), "coord")
    return ledgers


def test_a_job_called_off_before_its_range_step_is_aborted_in_the_ledgers_that_accepted_it(tmp_path):
    """With the DP range step (privdist coordinate's default), the coordinator's close after a refusal was taken
    for the end of the range step's round: the parties that had accepted kept the job 'announced' in their ledgers
    (its epsilon committed for ever) while they printed that it was aborted."""
    parties = [_party(k, refuse=(k == 1)) for k in range(K)]
    ledgers = _gated(tmp_path, parties, (0, 2))
    with pytest.raises(JobRefusedError, match="party1"):
        coordinate(JobRequest(epsilon=1.0, delta=1e-5, scale="dp", seed=11), [LocalLink(p) for p in parties])
    for k in (0, 2):
        (job,) = ledgers[k].jobs()
        assert job.status == "aborted" and parties[k].called_off and parties[k].closed
        assert ledgers[k].committed(1e-5).epsilon == 0


def test_a_party_that_cannot_read_its_data_keeps_the_error_and_aborts_the_job(tmp_path):
    """A party whose file has a missing value (found only once it reads it, after accepting): the coordinator
    learns that it could not read its data, not the error (it names the row of the missing value); the job is
    aborted in every ledger (it was left 'announced' in the failing party's), and the party keeps the error."""
    from privdist.errors import NonFiniteDataError

    parties = [_party(k) for k in range(K)]

    def broken():
        raise NonFiniteDataError("mine.csv: 1 missing value(s) (NaN), first in column 'age' at row 3")

    parties[1].load = broken
    ledgers = _gated(tmp_path, parties, range(K))
    with pytest.raises(JobRefusedError, match="party1.*could not read its data") as caught:
        coordinate(JobRequest(epsilon=1.0, delta=1e-5, scale="dp", seed=11), [LocalLink(p) for p in parties])
    assert "row 3" not in str(caught.value) and "mine.csv" not in str(caught.value)
    assert isinstance(parties[1].data_error_, NonFiniteDataError) and not parties[1].data_read
    for k in range(K):
        (job,) = ledgers[k].jobs()
        assert job.status == "aborted" and ledgers[k].committed(1e-5).epsilon == 0


class _DiesAt:
    """A party's link that breaks when round ``t`` is asked of it (the party is gone from then on)."""

    def __init__(self, link, t: int):
        self.link, self.t, self.dead = link, t, False

    def call(self, method, args):
        from privdist.runtime.remote import LinkLostError

        if self.dead or (method == "step" and int(args["t"]) == self.t):
            self.dead = True
            raise LinkLostError("gone")
        return self.link.call(method, args)


def test_a_dropout_beyond_the_tolerance_is_charged_in_the_remaining_parties_ledgers(tmp_path):
    """Party 2 gone at round 3 (dropout_tolerance 0): the later secure sums hold 2 honest noise shares, not the 3 of
    the calibration. The coordinator's report says so (epsilon above 1), but each remaining party's ledger recorded
    every round at the calibration (epsilon 1) and called the job finished: it now records a weaker sum's release
    before it helps unmask it, and its ledger counts no less than the report."""
    parties = [_party(k) for k in range(K)]
    ledgers = _gated(tmp_path, parties, (0, 1))
    links = [LocalLink(p) for p in parties]
    with pytest.warns(Warning, match="exceeds the requested"):
        model = coordinate(REQUEST, links[:2] + [_DiesAt(links[2], 3)])
    reported = model.privacy_report_["epsilon"]
    assert reported > 1.01 and model.remote_["lost_parties"] == {2: 3}
    for k in (0, 1):
        (job,) = ledgers[k].jobs()
        assert job.status == "finished"
        assert ledgers[k].spent(1e-5).epsilon >= reported * (1 - 1e-6)
