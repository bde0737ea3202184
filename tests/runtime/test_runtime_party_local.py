"""Party-local data without Ray (issue 17): sources, problem handles, the simulator path, the spec kinds."""

import json
import os

import numpy as np
import pytest

from privdist.algorithms import make_algorithm
from privdist.data.per_party import PartyDataError, PartySource, as_source, clear_cache
from privdist.errors import ShapeMismatchError, ValidationError
from privdist.network import ring
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.problems.vertical import VerticalProblem
from privdist.runtime import SimulatorBackend, run
from privdist.runtime.party import (HorizontalParties, MetricUnavailableError, PooledDataUnavailableError,
                                   VerticalParties)
from privdist.runtime.ray_party import load_placement

ENV = "PRIVDIST_UNIT_PARTY_DIR"


@pytest.fixture
def files(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    parts = []
    for k in range(3):
        X, y = rng.standard_normal((10, 4)), rng.standard_normal(10)
        np.savez(tmp_path / f"p{k}.npz", X=X, y=y)
        parts.append((X, y))
    np.savetxt(tmp_path / "p.csv", np.column_stack([parts[0][0], parts[0][1]]), delimiter=",")
    np.savez(tmp_path / "labels.npz", y=np.where(rng.standard_normal(10) > 0, 1.0, -1.0))
    monkeypatch.setenv(ENV, str(tmp_path))
    yield tmp_path, parts
    clear_cache()


def test_sources_resolve_paths_loaders_and_callables(files, monkeypatch):
    root, parts = files
    X, y = PartySource(path=f"${ENV}/p1.npz").resolve(1)
    np.testing.assert_array_equal(X, parts[1][0])
    X, y = as_source({"path": f"${{{ENV}}}/p.csv", "rows": [2, 5]}).resolve(0)
    np.testing.assert_allclose(X, parts[0][0][2:5]) and np.testing.assert_allclose(y, parts[0][1][2:5])
    X, y = as_source({"loader": "dzoa_synthetic", "seed": 3, "n_agents": 1, "samples_per_agent": 7}).resolve(0)
    assert X.shape == (7, 10)
    X, y = PartySource(call="numpy:eye", params={"N": 3}).resolve(0)
    np.testing.assert_array_equal(X, np.eye(3)) and y is None
    clear_cache()
    monkeypatch.delenv(ENV)
    with pytest.raises(PartyDataError, match=f"party 2: .*{ENV}, not set on node"):
        PartySource(path=f"${ENV}/p2.npz").resolve(2)
    with pytest.raises(PartyDataError, match="does not exist"):
        PartySource(path=str(root / "nope.npz")).resolve(0)
    with pytest.raises(ValidationError, match="exactly one"):
        PartySource(path="a", loader="b")
    with pytest.raises(PartyDataError, match="cannot import"):
        PartySource(call="no_such_module_x:f").resolve(0)


def test_simulator_materializes_the_handle_and_equals_the_plain_problem(files):
    root, parts = files
    handle = HorizontalParties([f"${ENV}/p{k}.npz" for k in range(3)], make_loss("squared"),
                               make_regularizer("l2"), 1.0, n_features=4)
    plain = HorizontalERM(parts, make_loss("squared"), make_regularizer("l2"), 1.0)
    algo = make_algorithm("dpsgd", alpha0=0.3, epsilon=0.5)
    got = run(algo, handle, ring(3), 5, seed=1, transcript="full", backend=SimulatorBackend(blocks=3))
    ref = run(algo, plain, ring(3), 5, seed=1, transcript="full", backend=SimulatorBackend(blocks=3))
    assert got.transcript.digest == ref.transcript.digest
    assert got.config["data"]["resolved"] == "driver (materialized)"
    with pytest.raises(PooledDataUnavailableError, match="parts"):
        handle.parts()
    with pytest.raises(PooledDataUnavailableError):  # D-ZOA needs beta^c on pooled data: a named error
        make_algorithm("dzoa", check_rows=False, R="oracle").init(handle, ring(3), type("B", (), {"agents": np.arange(1), "size": 1,
                                                                      "n_agents": 3, "degrees": np.ones(1)})(), None)
    bad = HorizontalParties([f"${ENV}/p{k}.npz" for k in range(3)], make_loss("squared"), make_regularizer("l2"),
                            n_features=5)
    with pytest.raises(ShapeMismatchError, match="party 0 holds 4 features"):
        bad.subset([0])


def test_vertical_handle_matches_vertical_problem(files):
    root, parts = files
    handle = VerticalParties([f"${ENV}/p{k}.npz" for k in range(3)], f"${ENV}/labels.npz", dims=(4, 4, 4),
                             n_samples=10, reg_weight=0.1)
    plain = VerticalProblem([X for X, _ in parts], np.load(root / "labels.npz")["y"], reg_weight=0.1)
    a, b = handle.subset([1, 2]), plain.subset([1, 2])
    assert a.offsets == b.offsets and a.n_features == b.n_features
    for x, z in zip(a.blocks, b.blocks):
        np.testing.assert_array_equal(x, z)
    np.testing.assert_array_equal(handle.coordinator_data().labels, plain.coordinator_data().labels)
    np.testing.assert_array_equal(handle.subset([0]).blocks[0], plain.subset([0]).blocks[0])  # bias column


def test_placement_forms():
    assert load_placement(None, 2) == {0: "party_0", 1: "party_1", "coordinator": "coordinator"}
    assert load_placement(False, 2) is None
    assert load_placement({"0": "a", 1: "b"}, 2) == {0: "a", 1: "b"}
    with pytest.raises(ValidationError, match=r"no resource to parties \[1\]"):
        load_placement({0: "a"}, 2)
    with pytest.raises(ValidationError, match="party 5"):
        load_placement({0: "a", 1: "b", 5: "c"}, 2)


def test_per_party_spec_kinds(files):
    from privdist.experiments import parse_spec
    from privdist.experiments.build import build_trial

    spec = parse_spec({
        "name": "parties", "trials": 1, "rounds": 3, "seed": 0,
        "data": {"kind": "per_party", "params": {"n_features": 4, "parties": [f"${ENV}/p{k}.npz" for k in range(3)]}},
        "network": {"kind": "ring", "params": {"n": 3}},
        "problem": {"kind": "party_horizontal", "loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
        "metrics": ["disagreement"],
        "runs": [{"label": "admm", "algorithm": "consensus_admm", "params": {"rho": 1.0}}]})
    trial = build_trial(spec, 0)
    assert isinstance(trial.problem, HorizontalParties) and os.environ[ENV]
    res = run(make_algorithm("consensus_admm"), trial.problem, trial.network, 3, metrics=trial.metrics)
    assert res.curves["disagreement"].shape == (4,)
    from privdist.experiments import run_trial

    info = run_trial(spec, 0)["runs"]["admm"]["info"]  # the runner records where the data were resolved
    assert info["data"]["resolved"] == "driver (materialized)"


def test_party_objective_is_the_sum_of_the_parties_parts(files):
    """The party-evaluated objective (each party its own part, only scalars summed) equals the pooled objective:
    horizontal sum_k f_k(beta_k); vertical ADMM sharing without noise F(beta) (S2 (2))."""
    from privdist.experiments.kinds_party import horizontal_objective, vertical_objective
    from privdist.problems.vertical import VerticalProblem

    handle = HorizontalParties([f"${ENV}/p{k}.npz" for k in range(3)], make_loss("squared"), make_regularizer("l2"),
                               1.0, n_features=4)
    pooled = handle.materialize()
    res = run(make_algorithm("consensus_admm"), handle, ring(3), 4, keep_iterates=True,
              metrics={"objective": horizontal_objective()})
    want = [pooled.local_values(B).sum() for B in res.iterates]
    np.testing.assert_allclose(res.curves["objective"], want, rtol=1e-12)
    assert res.config["metrics_where"]["objective"].startswith("driver, on the materialized problem")
    assert not any("objective" in e for e in res.ledger.exposures)  # nothing left a party in this process

    rng = np.random.default_rng(2)
    blocks, labels = [rng.standard_normal((20, 2)) for _ in range(3)], np.where(rng.random(20) > 0.5, 1.0, -1.0)
    vp = VerticalProblem(blocks, labels, 0.1, "sum", True)
    res = run(make_algorithm("admm_sharing", rho=1.0), vp, ring(3), 5, keep_iterates=True,
              metrics={"objective": vertical_objective()})
    np.testing.assert_allclose(res.curves["objective"][1:], [vp.objective(B.sum(axis=0)) for B in res.iterates[1:]],
                               rtol=1e-10)
    with pytest.raises(MetricUnavailableError, match="computed by the parties"):
        horizontal_objective()(res.estimates)


def test_pooled_metrics_of_a_per_party_spec_are_a_named_error():
    from privdist.errors import SpecError
    from privdist.experiments import parse_spec

    with pytest.raises(SpecError, match=r"\['ne'\] are unavailable.*needs every party's data"):
        parse_spec({"name": "p", "trials": 1, "rounds": 2, "metrics": ["ne"],
                    "data": {"kind": "per_party", "params": {"n_features": 4, "parties": ["a.npz", "b.npz"]}},
                    "network": {"kind": "ring", "params": {"n": 2}}, "problem": {"kind": "party_horizontal"},
                    "runs": [{"label": "a", "algorithm": "consensus_admm"}]})


def test_runner_resumes_an_interrupted_party_local_run_from_its_checkpoint(files, tmp_path, monkeypatch):
    """privdist run --resume: a party-local run interrupted mid-trial continues from the driver checkpoint kept in
    the results directory (here on the simulator; the Ray path is tested on the two-node cluster)."""
    from privdist.experiments import kinds_party, parse_spec, run_experiment, trials

    spec = parse_spec({
        "name": "parties_resume", "trials": 1, "rounds": 7, "seed": 0, "metrics": ["disagreement", "objective"],
        "data": {"kind": "per_party", "params": {"n_features": 4, "parties": [f"${ENV}/p{k}.npz" for k in range(3)]}},
        "network": {"kind": "ring", "params": {"n": 3}},
        "problem": {"kind": "party_horizontal", "loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
        "runs": [{"label": "admm", "algorithm": "consensus_admm", "params": {"rho": 1.0}}]})
    def owner_metrics(out):  # per-party data are a user's data: metrics are owner-only evaluation (issue 24)
        return json.loads((out / "owner_only" / "metrics.json").read_text())["runs"][0]["metrics"]

    run_experiment(spec, tmp_path / "whole", progress=False)
    whole = owner_metrics(tmp_path / "whole")
    monkeypatch.setattr(trials, "PARTY_CHECKPOINT_EVERY", 2)
    calls, real = [], kinds_party.disagreement

    def interrupting(est):
        calls.append(1)
        if len(calls) == 6:  # after round 5: the checkpoint of round 4 is on disk
            raise KeyboardInterrupt
        return real(est)

    monkeypatch.setattr(kinds_party, "disagreement", interrupting)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(spec, tmp_path / "out", progress=False)
    ckpt = tmp_path / "out" / "checkpoints" / "trial_0000_admm.ckpt"
    assert ckpt.exists()
    run_experiment(spec, tmp_path / "out", progress=False, resume=True)
    got = owner_metrics(tmp_path / "out")
    assert len(calls) == 6 + 3  # rounds 5, 6, 7 after the resume, not 8 evaluations from round 0
    assert not ckpt.exists()
    for m in whole:
        np.testing.assert_allclose(got[m]["curve_mean"], whole[m]["curve_mean"], rtol=1e-12)
