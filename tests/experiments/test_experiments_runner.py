import json

import numpy as np
import pytest

from privdist.errors import OutputDirError
from privdist.experiments import load_experiment, parse_spec, run_experiment

SMALL = {
    "name": "small", "trials": 3, "rounds": 30, "seed": 5, "data": {"kind": "dzoa_synthetic"},
    "network": {"kind": "dzoa5"}, "problem": {"loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
    "privacy": {"delta": 1e-3},
    "runs": [{"label": "admm", "algorithm": "consensus_admm", "params": {"rho": 1.0}},
             {"label": "dpsgd {epsilon}", "algorithm": "dpsgd", "params": {"alpha0": 0.3},
              "sweep": {"epsilon": [0.2, 0.9]}}],
    "plots": [{"kind": "curves", "file": "curves"}, {"kind": "final_vs_param", "x": "epsilon", "file": "tradeoff"}],
    "claims": [{"id": "c1", "kind": "final_below", "run": "admm", "than": ["dpsgd 0.2", "dpsgd 0.9"]},
               {"id": "c2", "kind": "below_value", "run": "dpsgd 0.2", "value": 1e-12}],
}


def test_results_directory_contents(tmp_path):
    res = run_experiment(parse_spec(SMALL), tmp_path / "out", progress=False)
    out = tmp_path / "out"
    data = json.loads((out / "results.json").read_text())
    assert data["experiment"] == "small" and data["trials"] == 3 and data["complete"] is True
    run = data["runs"][1]
    assert set(run) >= {"label", "algorithm", "params", "metrics", "privacy", "seconds"}
    assert set(run["metrics"]["ne"]) == {"final_mean", "final_std", "curve_mean", "curve_std"}
    assert len(run["metrics"]["ne"]["curve_mean"]) == 31
    eps = run["privacy"]["per_agent"][0]["epsilon"]
    assert set(eps) == {"paper", "rdp", "pld"} and all(v > 0 for v in eps.values())
    assert data["runs"][0]["privacy"]["per_agent"][0]["epsilon"]["rdp"] == "inf"  # non-private: inf, never 0
    assert data["noise"]["mode"] == "seeded" and "not for release" in data["noise"]["note"]
    claims = {c["id"]: c for c in data["claims"]}
    assert claims["c1"]["holds"] is True and claims["c2"]["holds"] is False and "dpsgd 0.2" in claims["c2"]["evidence"]
    for f in ("curves.png", "curves.svg", "tradeoff.png", "summary.md", "traces.npz"):
        assert (out / f).stat().st_size > 0
    traces = np.load(out / "traces.npz")
    assert traces["admm::ne"].shape == (3, 31)
    np.testing.assert_allclose(traces["admm::ne"][:, -1].mean(), res["runs"][0]["metrics"]["ne"]["final_mean"])
    assert len(list((out / "trials").glob("trial_*.json"))) == 3


def test_same_results_with_parallel_trials(tmp_path):
    a = run_experiment(parse_spec(SMALL), tmp_path / "a", progress=False)
    b = run_experiment(parse_spec(SMALL), tmp_path / "b", progress=False, jobs=2)
    for ra, rb in zip(a["runs"], b["runs"]):
        assert ra["metrics"]["ne"]["final_mean"] == rb["metrics"]["ne"]["final_mean"]


def test_resume_runs_only_missing_trials(tmp_path):
    spec = parse_spec(SMALL)
    full = run_experiment(spec, tmp_path / "full", progress=False)
    out = tmp_path / "r"
    run_experiment(spec, out, progress=False)
    (out / "trials" / "trial_0001.json").unlink()  # as if killed before trial 1 finished
    kept = (out / "trials" / "trial_0000.json").stat().st_mtime_ns
    res = run_experiment(spec, out, progress=False, resume=True)
    assert (out / "trials" / "trial_0000.json").stat().st_mtime_ns == kept
    assert res["trials"] == 3
    assert res["runs"][1]["metrics"]["ne"]["final_mean"] == full["runs"][1]["metrics"]["ne"]["final_mean"]


def test_output_directory_guard(tmp_path):
    out = tmp_path / "o"
    run_experiment(parse_spec(SMALL), out, progress=False)
    other = parse_spec({**SMALL, "name": "other", "trials": 1})
    with pytest.raises(OutputDirError, match="holds results of experiment 'small'"):
        run_experiment(other, out, progress=False)
    run_experiment(other, out, progress=False, overwrite=True)
    assert json.loads((out / "results.json").read_text())["experiment"] == "other"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("x")
    with pytest.raises(OutputDirError, match="not empty"):
        run_experiment(other, foreign, progress=False)
    with pytest.raises(OutputDirError, match="different configuration"):
        run_experiment(parse_spec({**SMALL, "name": "other", "trials": 2}), out, progress=False, resume=True)


def test_quickstart_catalog_entry_runs(tmp_path):
    spec = load_experiment("quickstart").with_overrides(trials=2)
    res = run_experiment(spec, tmp_path / "qs", progress=False)
    assert res["runs"][0]["metrics"]["ne"]["final_mean"] < 1e-8
