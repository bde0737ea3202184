"""Issue 38, a vertical job: three parties hold COLUMNS of the same rows (each in its own process or behind a link in
this one), the coordinator holds the labels. A seeded job equals SharedFeatureLogisticRegression fitted on the same
data with the same feature groups: the plan, every party's ledger, the privacy report and, joined from the blocks the
parties kept, the coefficients bit for bit; local trust and secure aggregation. No party's block crosses the wire."""

import warnings

import numpy as np
import pandas as pd
import pytest

from privdist.learn import SharedFeatureLogisticRegression
from privdist.learn.job import JobRefusedError
from privdist.learn.job_vertical import VerticalJobRequest, VerticalPartyJob, coordinate_vertical, join_party_blocks
from privdist.runtime.remote import LocalLink, spawn_party

N = 90
COLUMNS = [["age", "income"], ["score", "visits"], ["weight"]]
BOUNDS = {"age": (18, 90), "income": (0, 200), "score": (-5, 5), "visits": (0, 20)}  # weight: already in range


def _all():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(18, 90, N), rng.uniform(0, 200, N), rng.normal(size=N),
                         rng.integers(0, 20, N), rng.uniform(-1, 1, N)])
    y = np.where(0.03 * (X[:, 0] - 50) + 0.01 * (X[:, 1] - 100) + X[:, 2] - X[:, 4] > 0, "yes", "no")
    return pd.DataFrame(X, columns=[c for g in COLUMNS for c in g]), y


def _party(k: int, out=None):
    X = _all()[0][COLUMNS[k]]
    reads = []

    def load():
        reads.append(1)
        return X.to_numpy(), list(X.columns)

    job = VerticalPartyJob(f"party{k}", load, {"rows": len(X), "columns": COLUMNS[k]}, out=out)
    job.reads = reads
    return job


def _request(trust: str, protocol: str = "admm_sharing", **kw):
    return VerticalJobRequest(epsilon=1.0, delta=1e-5, trust=trust, rounds=8, bounds=BOUNDS, seed=17,
                              protocol=protocol, **kw)


def _reference(trust: str, protocol: str = "admm_sharing"):
    X, y = _all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SharedFeatureLogisticRegression(epsilon=1.0, delta=1e-5, rounds=8, feature_groups=COLUMNS,
                                               scale="bounds", bounds=BOUNDS, trust=trust, random_state=17,
                                               protocol=protocol).fit(X, y)


def _same(model, ref, K=3):
    assert model.privacy_plan_ == ref.privacy_plan_
    assert all(model.ledger_.entries(k) == ref.ledger_.entries(k) for k in range(K))
    assert model.privacy_report_ == ref.privacy_report_
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert model.intercept_ == ref.intercept_
    assert list(model.classes_) == list(ref.classes_)
    X = _all()[0]
    np.testing.assert_array_equal(model.decision_function(X), ref.decision_function(X))


@pytest.mark.parametrize("trust", ["local", "secure_aggregation"])
def test_a_vertical_job_in_one_process_equals_the_estimator(trust):
    parties = [_party(k) for k in range(3)]
    model = coordinate_vertical(_request(trust), [LocalLink(p) for p in parties], _all()[1])
    assert not hasattr(model, "coef_")  # the coordinator holds no block
    assert model.privacy_plan_.trust == trust and model.privacy_report_["guaranteed"]
    join_party_blocks(model, [p.block for p in parties])
    _same(model, _reference(trust))
    assert all(p.closed and p.reads == [1] for p in parties)


def _spawned(k: int, out: str):
    return _party(k, out)


@pytest.mark.parametrize("trust,protocol", [("local", "admm_sharing"), ("secure_aggregation", "admm_sharing"),
                                            ("local", "pool")])
def test_a_vertical_job_over_party_processes_equals_the_estimator(trust, protocol, tmp_path):
    import json

    files = [tmp_path / f"party{k}" / "parties" / f"party_{k}.json" for k in range(3)]
    started = [spawn_party(_spawned, k, str(tmp_path / f"party{k}")) for k in range(3)]
    try:
        model = coordinate_vertical(_request(trust, protocol), [link for _, link in started], _all()[1])
    finally:
        for proc, _ in started:
            proc.join(timeout=60)
    assert all(proc.exitcode == 0 for proc, _ in started)
    join_party_blocks(model, [json.loads(f.read_text()) for f in files])
    _same(model, _reference(trust, protocol))
    assert model.remote_["names"] == ["party0", "party1", "party2"]


def test_the_release_holds_no_block_and_loads_beside_the_blocks(tmp_path):
    """The coordinator's model.json has no coefficients; with the parties' block files beside it, load_model
    scores as the estimator does."""
    import json
    import shutil

    from privdist.learn.model_io import load_model, save_model

    out = tmp_path / "release"
    files = [tmp_path / f"party{k}" / "parties" / f"party_{k}.json" for k in range(3)]
    parties = [_party(k, tmp_path / f"party{k}") for k in range(3)]
    model = coordinate_vertical(_request("local"), [LocalLink(p) for p in parties], _all()[1])
    (written,) = save_model(model, out / "model.json", feature_names=list(model.feature_names_in_),
                            party_blocks=False)
    data = json.loads(written.read_text())
    assert data["coef"] is None and data["intercept"] is None
    assert [p["columns"] for p in data["vertical"]["parties"]] == [[0, 1], [2, 3], [4]]
    for f in files:
        (out / "parties").mkdir(exist_ok=True)
        shutil.copy(f, out / "parties" / f.name)
    ref = _reference("local")
    X = _all()[0]
    np.testing.assert_array_equal(load_model(out / "model.json").decision_function(X.to_numpy()),
                                  ref.decision_function(X))


def test_the_coordinator_checks_rows_and_columns_before_any_offer():
    parties = [_party(k) for k in range(3)]
    with pytest.raises(JobRefusedError, match="same rows"):
        coordinate_vertical(_request("local"), [LocalLink(p) for p in parties], _all()[1][:-1])
    odd = _party(2)
    odd.facts["columns"] = ["age"]
    with pytest.raises(JobRefusedError, match="overlapping columns"):
        coordinate_vertical(_request("local"), [LocalLink(_party(0)), LocalLink(_party(1)), LocalLink(odd)],
                            _all()[1])
    assert all(p.reads == [] for p in parties + [odd])


def test_a_refused_plan_stops_the_vertical_job_before_any_data_is_read():
    class Refuse:
        def admit(self, plan, declared, job_id, party):
            return False, ["accepted_kinds is ['horizontal'], but the plan is a vertical job."]

    parties = [_party(k) for k in range(3)]
    parties[1].gate = Refuse()
    with pytest.raises(JobRefusedError, match="party1.*accepted_kinds"):
        coordinate_vertical(_request("local"), [LocalLink(p) for p in parties], _all()[1])
    assert parties[1].reads == [] and all(p.closed for p in parties)


def test_a_pooled_vertical_job_is_the_estimators_pool_and_sends_no_block(tmp_path):
    """Issue 39: the default of a private job under local trust is the pool. The coordinator sends the labels,
    each party fits its own block and keeps it; nothing computed from its columns crosses (the calls carry the
    labels out and an acknowledgement back); its ledger records the job finished with no release; the joined blocks
    are the estimator's pool bit for bit."""
    from privdist.learn.job import LifetimeGate
    from privdist.privacy.lifetime import LifetimeLedger
    from privdist.privacy.policy import PartyPolicy

    sent = []

    class Watched(LocalLink):
        def call(self, method, args):
            answer = super().call(method, args)
            sent.append((method, answer))
            return answer

    parties = [_party(k) for k in range(3)]
    ledgers = [LifetimeLedger(tmp_path / f"l{k}") for k in range(3)]
    for k in range(3):
        parties[k].gate = LifetimeGate(ledgers[k], PartyPolicy(seeded_allowed=True), "coord")
    model = coordinate_vertical(VerticalJobRequest(epsilon=1.0, delta=1e-5, bounds=BOUNDS, seed=17),
                                [Watched(p) for p in parties], _all()[1])
    assert model.protocol_ == "pool" and model.privacy_plan_.algorithm == "pool" and model.privacy_plan_.rounds == 0
    rep = model.privacy_report_
    assert rep["guaranteed"] and rep["epsilon"] == 0.0 and any(e.startswith("pool: labels") for e in rep["exposures"])
    assert [a for m, a in sent if m == "pool"] == [{"fitted": True}] * 3
    assert all(p.closed and p.reads == [1] and not p.called_off for p in parties)
    for ledger in ledgers:
        (job,) = ledger.jobs()
        assert job.status == "finished" and not job.rounds and ledger.committed(1e-5).epsilon == 0
    join_party_blocks(model, [p.block for p in parties])
    ref = _reference("local", "pool")
    _same(model, ref)
    assert ref.protocol_ == "pool" and _reference("local", "auto").protocol_ == "pool"


def test_a_pool_that_fails_at_one_party_calls_the_job_off():
    from privdist.runtime.remote import RemoteCallError

    class Broken(LocalLink):
        def call(self, method, args):
            if method == "pool":
                raise RemoteCallError("party2 went away")
            return super().call(method, args)

    parties = [_party(k) for k in range(3)]
    with pytest.raises(RemoteCallError, match="went away"):
        coordinate_vertical(_request("local", "pool"), [LocalLink(parties[0]), LocalLink(parties[1]),
                                                        Broken(parties[2])], _all()[1])
    assert all(p.closed for p in parties) and parties[2].called_off and parties[2].block is None
    assert not parties[0].called_off and parties[0].block is not None


def test_a_pooled_party_checks_the_labels_and_fits_once():
    from privdist.runtime.remote import RemoteCallError

    job = _party(1)
    links = LocalLink(job)
    plan_offer = {}

    class Capture(LocalLink):  # the coordinator's offer to party 1, replayed by hand below
        def call(self, method, args):
            if method == "offer" and args["party"] == 1:
                plan_offer.update(args)
            return super().call(method, args)

    coordinate_vertical(_request("local", "pool"), [Capture(_party(k)) for k in range(3)], _all()[1])
    assert links.call("offer", plan_offer)["accepted"]
    with pytest.raises(RemoteCallError, match="-1 and \\+1"):
        links.call("pool", {"labels": [1.0] * N})
    with pytest.raises(RemoteCallError, match="-1 and \\+1"):
        links.call("pool", {"labels": [1.0, -1.0]})
    y = np.where(_all()[1] == "yes", 1.0, -1.0)
    assert links.call("pool", {"labels": y.tolist()}) == {"fitted": True}
    with pytest.raises(RemoteCallError, match="twice"):
        links.call("pool", {"labels": y.tolist()})
    links.call("close", {})
    assert job.closed and not job.called_off and job.block["party"] == 1


def test_a_party_refuses_to_send_its_block():
    parties = [_party(k) for k in range(3)]
    links = [LocalLink(p) for p in parties]
    coordinate_vertical(_request("local"), links, _all()[1])
    job = _party(0)
    from privdist.runtime.remote import RemoteCallError, RemoteParty

    job.party = RemoteParty(parties[0].party.algorithm, parties[0].party.problem, parties[0].party.network, 0,
                            share_estimate=False)
    job.party.handle("init", {"seed": 1, "trial": 0, "secure": False})
    with pytest.raises(RemoteCallError, match="not a release"):
        LocalLink(job).call("estimate", {})
