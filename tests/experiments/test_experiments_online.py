"""Online problem kinds, the round-aware regret metrics, the regret plot and claims (S4 catalog entries)."""

import json

import numpy as np
import pytest

from privdist.algorithms import make_algorithm
from privdist.errors import SpecError
from privdist.experiments import load_experiment, run_experiment
from privdist.experiments.build import build_trial
from privdist.experiments.spec import parse_spec
from privdist.problems.online import regret_terms
from privdist.runtime import run


def _small(name, rounds=30, trials=2):
    raw = dict(load_experiment(name).raw)
    raw.update(rounds=rounds, trials=trials)
    return parse_spec(raw, source=f"{name} (test)")


def test_catalog_entries_parse():
    for name in ("s4_fig1_2", "s4_fig3"):
        spec = load_experiment(name)
        assert spec.paper == "S4" and spec.rounds == 500 and spec.trials == 100
        assert len(spec.metrics) == 25 and spec.metrics[0] == "regret_rate"
        assert spec.problem["kind"] == "online_localization"


def test_round_clock_metrics_equal_direct_regret_terms():
    spec = _small("s4_fig1_2", rounds=12)
    trial = build_trial(spec, 0)
    assert trial.problem.horizon == 13 and trial.extras["theta"] == pytest.approx(4.030199, abs=1e-6)
    algo = make_algorithm("dpdonc", epsilon=1.0, theta=4.030198506277327)
    for _ in range(2):  # the metrics are reused by the next run of the trial: counters wrap at rounds + 1
        res = run(algo, trial.problem, trial.network, 12, metrics=trial.metrics, keep_iterates=True)
    direct = np.array([regret_terms(trial.problem, k + 1, res.iterates[k]) for k in range(13)])
    np.testing.assert_allclose(res.curves["regret_3_2"], direct[:, 2, 1])
    np.testing.assert_allclose(res.curves["regret_6_4"], direct[:, 5, 3])
    rate = np.cumsum(direct, axis=0).max(axis=(1, 2)) / np.arange(1, 14)
    np.testing.assert_allclose(res.curves["regret_rate"], rate)


def test_small_s4_run_writes_figures_and_claims(tmp_path):
    spec = _small("s4_fig1_2", rounds=40, trials=2)
    res = run_experiment(spec, tmp_path / "out", progress=False)
    claims = {c["id"]: c for c in res["claims"]}
    assert set(claims) == {"sublinear_all_levels", "privacy_tradeoff", "nodes_alike"}
    assert all("->" in c["evidence"] or "per-node" in c["evidence"] for c in claims.values())
    assert (tmp_path / "out" / "fig1_regret_privacy_levels.png").exists()
    assert (tmp_path / "out" / "fig2_regret_per_node.png").exists()
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    by_label = {r["label"]: r for r in saved["runs"]}
    assert by_label["eps=5.0"]["privacy"]["per_agent"][0]["epsilon"]["paper"] == pytest.approx(200.0)
    assert by_label["without DP"]["privacy"]["per_agent"][0]["epsilon"]["paper"] == "inf"  # JSON: the string "inf"


def test_online_spec_errors():
    raw = dict(load_experiment("s4_fig3").raw)
    with pytest.raises(SpecError, match="unknown metric"):
        parse_spec({**raw, "metrics": ["ne"]})
    bad_net = {**raw, "network": {"kind": "s4", "params": {"schedule": "cyclic", "foo": 1}}}
    with pytest.raises(SpecError, match="foo"):
        build_trial(parse_spec(bad_net), 0)
    too_many = {**raw, "metrics": ["regret_7_1"]}
    with pytest.raises(SpecError, match="regret_7_1"):
        build_trial(parse_spec(too_many), 0)


@pytest.mark.slow
def test_s4_quick_reproduction_claims_hold(tmp_path):
    spec = load_experiment("s4_fig1_2")
    spec = spec.with_overrides(trials=spec.quick_trials)
    res = run_experiment(spec, tmp_path / "s4", progress=False)
    assert all(c["holds"] for c in res["claims"]), res["claims"]
