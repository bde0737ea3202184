"""Issue 39: a party's personal model from the RELEASE (model.json, or the release a job's coordinator sends) and its
own rows equals ``personalize`` on the fitted estimator; the personal file is owner-only and not a release; bad
inputs get named errors; no ledger event is added."""

import copy
import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from privdist.errors import DataFormatError, ModelFileError, ParameterTypeError, ShapeMismatchError, ValidationError
from privdist.learn import DistributedLogisticRegression, DistributedRidge, load_model, save_model
from privdist.learn.personal import personalize
from privdist.learn.personal_release import (PERSONAL_FORMAT, load_personal, own_comparison, personalize_release,
                                             released_model, save_personal)

from conftest import job_rows

NAMES = ["a", "b", "c"]


def _data(kind: str, n: int = 240, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)) * [1.0, 2.0, 0.5], columns=NAMES)
    if kind == "regression":
        return X, 2.0 * X["a"].to_numpy() - X["b"].to_numpy() + rng.normal(size=n)
    if kind == "binary":
        return X, np.where(X["a"] + 0.5 * X["b"] + rng.normal(scale=0.5, size=n) > 0, "yes", "no")
    return X, np.array(["u", "v", "w"])[(X["a"] > 0).astype(int) + (X["b"] > 1).astype(int)]


@pytest.fixture(scope="module", params=["binary", "ovr", "regression"])
def fitted(request, tmp_path_factory):
    X, y = _data(request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls = DistributedRidge if request.param == "regression" else DistributedLogisticRegression
        est = cls(n_agents=3, epsilon=1.0, random_state=3, alpha=1e-3).fit(X, y)
    path = tmp_path_factory.mktemp(request.param) / "model.json"
    save_model(est, path, NAMES)
    return request.param, est, path


def test_the_release_gives_exactly_personalize_of_the_estimator(fitted):
    kind, est, path = fitted
    X, y = _data(kind, n=90, seed=7)  # one party's own rows
    ref = personalize(est, X, y, random_state=1)
    got = personalize_release(path, X, y, random_state=1)
    np.testing.assert_allclose(np.asarray(got.coef_), np.asarray(ref.coef_), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got.intercept_), np.asarray(ref.intercept_), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(got.strength_), np.asarray(ref.strength_))
    np.testing.assert_array_equal(got.predict(X), ref.predict(X))


def test_the_personal_file_is_owner_only_and_not_a_release(fitted, tmp_path):
    kind, est, path = fitted
    X, y = _data(kind, n=90, seed=8)
    personal = personalize_release(path, X, y)
    target = save_personal(personal, path, tmp_path / "personal-model.json")
    assert os.stat(target).st_mode & 0o777 == 0o600
    data = json.loads(target.read_text())
    assert data["format"] == PERSONAL_FORMAT and data["release"] is False and "owner-only" in data["owner_only"]
    with pytest.raises(DataFormatError, match="not a privdist-linear-model/1 file"):
        load_model(target)  # never mistaken for a release
    back = load_personal(target)
    np.testing.assert_allclose(back.decision_function(X.to_numpy()), personal.decision_function(X), atol=1e-12)
    with pytest.raises(DataFormatError, match="not a privdist-personal-model/1 file"):
        load_personal(path)


def test_own_comparison_holdout_and_cv(fitted):
    kind, est, path = fitted
    X, y = _data(kind, n=90, seed=9)
    personal = personalize_release(path, X, y)
    held = own_comparison(path, X, y, personal, holdout=0.3)
    assert held["method"] == "holdout" and held["test_rows"] == 27 and held["train_rows"] == 63
    assert held["metric"] == ("rmse" if kind == "regression" else "accuracy")
    cv = own_comparison(path, X, y, personal, holdout=0)
    assert cv["method"] == "cv" and all(np.isfinite(cv[k]) for k in ("alone", "global"))
    if getattr(personal, "multinomial_", False):  # three classes: the multinomial alone model, another loss scale
        assert cv["personal"] is None and "multinomial" in cv["note"]
    else:
        assert cv["personal"] <= max(cv["alone"], cv["global"]) + 1e-12  # the selection's own held-out losses
    with pytest.raises(ValidationError, match="holdout"):
        own_comparison(path, X, y, personal, holdout=1.5)


def _write(tmp_path, data, name="m.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def test_bad_release_files_are_named(fitted, tmp_path):
    kind, est, path = fitted
    X, y = _data(kind, n=60, seed=10)
    data = json.loads(path.read_text())
    old = copy.deepcopy(data)
    old.pop("objective")  # a file older than issue 39: loadable for predictions, refused for a personal model
    load_model(_write(tmp_path, old)).predict(X.to_numpy())
    with pytest.raises(ModelFileError, match="without objective"):
        personalize_release(_write(tmp_path, old), X, y)
    for field, value, match in (("loss", "squared" if kind != "regression" else "logistic", "objective.loss"),
                                ("alpha", -1.0, "objective.alpha"), ("alpha", "x", "objective.alpha"),
                                ("fit_intercept", 1, "objective.fit_intercept"),
                                ("regularizer", "l3", "objective.regularizer")):
        bad = copy.deepcopy(data)
        bad["objective"][field] = value
        with pytest.raises(ModelFileError, match=match):
            load_model(_write(tmp_path, bad))
    l1 = copy.deepcopy(data)
    l1["objective"]["regularizer"] = "l1"
    with pytest.raises(ParameterTypeError, match="l2"):
        personalize_release(_write(tmp_path, l1), X, y)
    with pytest.raises(ShapeMismatchError, match="lacks the model's column"):
        personalize_release(path, X.rename(columns={"a": "z"}), y)
    with pytest.raises(ShapeMismatchError, match="column"):
        personalize_release(path, X.to_numpy()[:, :2], y)


def test_a_vertical_release_is_refused_by_name(tmp_path):
    from privdist.learn import SharedFeatureLogisticRegression

    X, y = _data("binary", n=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SharedFeatureLogisticRegression(n_parties=2, rounds=3, epsilon=1.0, random_state=0, scale="bounds",
                                              bounds={c: (-6.0, 6.0) for c in NAMES}).fit(X, y)
    save_model(est, tmp_path / "model.json", NAMES)
    assert json.loads((tmp_path / "model.json").read_text())["objective"] is None  # a vertical objective differs
    with pytest.raises(ParameterTypeError, match="vertical"):
        personalize_release(tmp_path / "model.json", X, y)
    with pytest.raises(ParameterTypeError, match="vertical"):
        released_model(json.loads((tmp_path / "model.json").read_text()))


# -- the release a job's coordinator sends, in one process (LocalLink) ------------------------------------------------
COLUMNS = ["age", "income", "score"]
BOUNDS = {"age": (18, 90), "income": (0, 200), "score": (-5, 5)}


def _rows(k: int):
    return job_rows(k, seed=10, n=120, step=30, shift=0.8)


def test_a_job_party_gets_the_release_and_its_personal_model_spends_nothing(tmp_path):
    from privdist.learn.job import JobRequest, LifetimeGate, PartyJob, coordinate
    from privdist.learn.personal_release import party_personal
    from privdist.privacy.lifetime import LifetimeLedger
    from privdist.privacy.policy import PartyPolicy
    from privdist.runtime.remote import LocalLink

    K = 3
    jobs = []
    for k in range(K):
        X, y = _rows(k)
        gate = LifetimeGate(LifetimeLedger(tmp_path / f"ledger{k}"), PartyPolicy(seeded_allowed=True), "coord")
        jobs.append(PartyJob(f"party{k}", lambda X=X, y=y: (X, y, COLUMNS),
                             {"rows": len(X), "columns": COLUMNS, "classes": ["no", "yes"]}, gate=gate))
    model = coordinate(JobRequest(epsilon=1.0, delta=1e-5, scale="bounds", bounds=BOUNDS, seed=11),
                       [LocalLink(j) for j in jobs])
    for k, job in enumerate(jobs):
        assert job.closed and job.finished and job.release_ is not None
        ledger_file = tmp_path / f"ledger{k}" / "ledger.json"
        before = ledger_file.read_bytes()
        path, comparison = party_personal(job, tmp_path / f"out{k}" / "personal-model.json")
        assert ledger_file.read_bytes() == before  # no ledger event: post-processing only
        X, y = _rows(k)
        ref = personalize(model, pd.DataFrame(X, columns=COLUMNS), y, random_state=0)
        data = json.loads(path.read_text())
        np.testing.assert_allclose(data["coef"], ref.coef_, rtol=0, atol=1e-10)
        assert data["intercept"] == pytest.approx(ref.intercept_, abs=1e-10)
        assert comparison["method"] == "holdout" and comparison["alone"] is not None
        assert [j.status for j in LifetimeLedger(tmp_path / f"ledger{k}").jobs()] == ["finished"]
    # a release that does not match the job the party took part in is refused by name
    forged = copy.deepcopy(jobs[0].release_)
    forged["objective"]["alpha"] = 0.5
    jobs[0].release_ = forged
    with pytest.raises(ModelFileError, match="objective"):
        party_personal(jobs[0], tmp_path / "forged.json")
    assert not (tmp_path / "forged.json").exists()
