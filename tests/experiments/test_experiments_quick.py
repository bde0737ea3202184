"""Quick variants of experiments (``[quick]`` table, ``privdist reproduce --quick``) and per-run parallelism."""

import copy
import json

import pytest

from privdist.errors import SpecError
from privdist.experiments import experiments_of_paper, parse_spec, run_experiment

BASE = {
    "name": "q", "trials": 4, "quick_trials": 1, "rounds": 40, "seed": 3, "data": {"kind": "dzoa_synthetic"},
    "network": {"kind": "dzoa5"}, "problem": {"loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
    "privacy": {"delta": 1e-3},
    "quick": {"rounds": 10, "sweep": {"epsilon": [0.2]}, "skip_runs": ["slow"]},
    "runs": [{"label": "admm", "algorithm": "consensus_admm", "params": {"rho": 1.0}},
             {"label": "slow", "algorithm": "consensus_admm", "params": {"rho": 2.0}},
             {"label": "dpsgd {epsilon}", "algorithm": "dpsgd", "params": {"alpha0": 0.3},
              "sweep": {"epsilon": [0.2, 0.9]}}],
    "plots": [{"kind": "curves", "file": "curves", "runs": ["admm", "slow", "dpsgd 0.9"]},
              {"kind": "curves", "file": "only_slow", "runs": ["slow"]}],
    "claims": [{"id": "kept", "kind": "final_below", "run": "admm", "than": ["dpsgd 0.2"]},
               {"id": "gone", "kind": "final_below", "run": "admm", "than": ["dpsgd 0.9", "slow"]},
               {"id": "group", "kind": "monotone", "runs": ["dpsgd {epsilon}"]}],
}


def test_quick_variant_applies_rounds_sweep_and_skip():
    full = parse_spec(BASE)
    q = full.quick()
    assert (full.mode, q.mode) == ("full", "quick")
    assert (q.trials, q.rounds) == (1, 10)
    assert [r.label for r in q.runs] == ["admm", "dpsgd 0.2"]
    assert [c["id"] for c in q.claims] == ["kept", "group"]
    assert [(c["id"], c["missing"]) for c in q.skipped_claims] == [("gone", ["dpsgd 0.9", "slow"])]
    assert q.plots[0]["runs"] == ["admm"] and len(q.plots) == 1  # a figure left without runs is dropped
    assert q.config()["mode"] == "quick" and "quick" not in q.config()  # different fingerprint from the full run
    assert q.quick() is q
    # default estimate: scaled by trials and rounds
    assert parse_spec({**BASE, "estimated_seconds": 400.0}).quick().estimated_seconds == pytest.approx(400 / 4 / 4)


def test_quick_results_report_skipped_claims(tmp_path):
    res = run_experiment(parse_spec(BASE).quick(), tmp_path / "o", progress=False)
    claims = {c["id"]: c for c in res["claims"]}
    assert claims["kept"]["holds"] is True
    assert claims["gone"]["holds"] is None and "not evaluated in quick mode" in claims["gone"]["evidence"]
    assert len(res["runs"][0]["metrics"]["ne"]["curve_mean"]) == 11
    summary = (tmp_path / "o" / "summary.md").read_text()
    assert "**not evaluated**" in summary and "quick mode" in summary
    assert json.loads((tmp_path / "o" / "results.json").read_text())["config"]["mode"] == "quick"


@pytest.mark.parametrize("change, match", [
    (lambda r: r["quick"].update(skip_runs=["nope"]), "skip_runs names unknown"),
    (lambda r: r["quick"].update(sweep={"rho": [1.0]}), "no run sweeps"),
    (lambda r: r["quick"].update(rounds=0), "rounds must be an integer"),
    (lambda r: r["quick"].update(trials=2), "unknown key"),
    (lambda r: r.update(mode="fast"), "mode must be"),
    (lambda r: r["plots"][0].update(runs=["admm", "typo"]), "unknown run label"),
])
def test_bad_quick_tables(change, match):
    raw = copy.deepcopy(BASE)
    change(raw)
    with pytest.raises(SpecError, match=match):
        parse_spec(raw)


def test_per_run_processes_equal_serial(tmp_path):
    """Fewer trials than jobs: (trial, run) pairs go to worker processes; same numbers and digests as serial."""
    spec = parse_spec({**BASE, "trials": 1, "quick": {}})
    a = run_experiment(spec, tmp_path / "a", progress=False)
    b = run_experiment(spec, tmp_path / "b", progress=False, jobs=2)
    assert [r["label"] for r in a["runs"]] == [r["label"] for r in b["runs"]]
    for ra, rb in zip(a["runs"], b["runs"]):
        assert ra["metrics"]["ne"]["final_mean"] == rb["metrics"]["ne"]["final_mean"]
    ta = json.loads((tmp_path / "a" / "trials" / "trial_0000.json").read_text())
    tb = json.loads((tmp_path / "b" / "trials" / "trial_0000.json").read_text())
    assert {k: v["transcript_digest"] for k, v in ta["runs"].items()} == \
        {k: v["transcript_digest"] for k, v in tb["runs"].items()}


def test_dzoa_catalog_quick_variants_are_smaller():
    for spec in experiments_of_paper("dzoa"):
        q = spec.quick()
        assert q.trials < spec.trials and q.rounds <= spec.rounds and len(q.runs) <= len(spec.runs)
        # batched full trials (issue 14) can make a cheap entry's full run as fast as its less batched quick run
        # (s1_epsilon_trend: 10 trials in one batch vs 3 in batches of 2 and 1, both about a minute)
        assert q.estimated_seconds < spec.estimated_seconds or spec.estimated_seconds < 120
