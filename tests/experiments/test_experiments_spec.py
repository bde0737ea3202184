import pytest

from privdist.errors import SpecError, UnknownNameError
from privdist.experiments import catalog, experiments_of_paper, load_experiment, load_spec_file, parse_spec, resolve_paper

BASE = {
    "name": "t", "trials": 2, "rounds": 5, "data": {"kind": "dzoa_synthetic"}, "network": {"kind": "dzoa5"},
    "runs": [{"label": "a", "algorithm": "consensus_admm"}],
}


def test_catalog_quickstart_parses():
    spec = catalog()["quickstart"]
    assert [r.label for r in spec.runs] == ["consensus ADMM (non-private)", "DPSGD eps=0.15", "DPSGD eps=0.95"]
    assert spec.runs[1].sweep == {"epsilon": 0.15} and spec.runs[1].group == "DPSGD eps={epsilon}"


def test_unknown_top_level_and_section_keys():
    with pytest.raises(SpecError, match=r"unknown key\(s\) \['trails'\]"):
        parse_spec({**BASE, "trails": 3})
    with pytest.raises(SpecError, match=r"\[network\]"):
        parse_spec({**BASE, "network": {"kind": "ring", "size": 3}})
    with pytest.raises(SpecError, match="runs\\[0\\]"):
        parse_spec({**BASE, "runs": [{"label": "a", "algorithm": "x", "prams": {}}]})


def test_missing_and_mistyped_keys():
    bad = dict(BASE)
    del bad["rounds"]
    with pytest.raises(SpecError, match="missing required key 'rounds'"):
        parse_spec(bad)
    with pytest.raises(SpecError, match="trials must be an integer, got str"):
        parse_spec({**BASE, "trials": "many"})


def test_duplicate_labels_and_bad_claim_refs():
    with pytest.raises(SpecError, match="unique"):
        parse_spec({**BASE, "runs": [{"label": "a", "algorithm": "dpsgd", "sweep": {"epsilon": [0.1, 0.2]}}]})
    with pytest.raises(SpecError, match="unknown run label"):
        parse_spec({**BASE, "claims": [{"kind": "below_value", "run": "zzz", "value": 1.0}]})
    with pytest.raises(SpecError, match="kind must be one of"):
        parse_spec({**BASE, "claims": [{"kind": "vibes", "run": "a"}]})


def test_malformed_toml_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("name = 'x'\ntrials = [1, \n")
    with pytest.raises(SpecError, match="malformed TOML"):
        load_spec_file(f)
    with pytest.raises(SpecError, match="no experiment spec file"):
        load_spec_file(tmp_path / "absent.toml")


def test_unknown_experiment_and_paper_names():
    with pytest.raises(UnknownNameError, match="quickstart"):
        load_experiment("quickstrat")
    with pytest.raises(UnknownNameError, match="paper"):
        resolve_paper("S9")
    assert resolve_paper("dzoa") == ("S0", "S1") and resolve_paper("s3") == ("S3",)
    assert experiments_of_paper("sharing") == [] or all(s.paper == "S2" for s in experiments_of_paper("sharing"))


def test_defaults_are_the_schemas_and_the_runner_uses_the_typed_spec():
    """Issue 23: one pydantic model states every default; the runner reads the typed result (no restated defaults)."""
    from privdist.experiments import run_trial
    from privdist.experiments.schema import DataSpec, PrivacySpec
    from privdist.privacy import ACCOUNTANTS

    spec = parse_spec(BASE)
    assert spec.privacy == PrivacySpec() and spec.privacy.delta == 1e-5 and spec.privacy.secure is False
    assert tuple(spec.privacy.accountants) == ACCOUNTANTS
    assert spec.data == DataSpec(kind="dzoa_synthetic") and spec.data.partition == "contiguous"
    assert spec.problem["kind"] == "horizontal_erm" and spec.title == "t" and spec.quick_trials == 2
    assert spec.tuning is None and spec.tuning_record is None and spec.config() == BASE  # raw recorded as written
    spec = parse_spec({**BASE, "runs": [{"label": "a", "algorithm": "dpsgd", "params": {"epsilon": 0.5}}],
                       "privacy": {"delta": 1e-3, "accountants": ["rdp"]}})
    report = run_trial(spec, 0)["runs"]["a"]["privacy"]
    assert report["delta"] == 1e-3 and set(report["per_agent"][0]["epsilon"]) == {"rdp"}



def test_privacy_budget_applies_to_every_dp_run_that_does_not_set_its_own():
    """``[privacy] budget = "total"``: each DP run's epsilon is its agents' whole-run budget at [privacy] delta; a
    run's own ``budget`` wins; a non-private algorithm gets nothing (issue 23)."""
    runs = [{"label": "total", "algorithm": "dpsgd", "params": {"epsilon": 1.0}},
            {"label": "own", "algorithm": "dpadmm", "params": {"epsilon": 0.1, "budget": "round"}},
            {"label": "admm", "algorithm": "consensus_admm"}]
    spec = parse_spec({**BASE, "privacy": {"delta": 1e-6, "budget": "total"}, "runs": runs})
    by = {r.label: r.params for r in spec.runs}
    assert by["total"] == {"epsilon": 1.0, "budget": "total", "delta": 1e-6}
    assert by["own"] == {"epsilon": 0.1, "budget": "round"}
    assert by["admm"] == {}
    assert {r.label: r.params for r in parse_spec({**BASE, "runs": runs}).runs}["total"] == {"epsilon": 1.0}
    with pytest.raises(SpecError, match="budget"):
        parse_spec({**BASE, "privacy": {"budget": "per_round"}})


def test_total_budget_run_prints_the_request_as_guarantee(tmp_path):
    """A spec with a total budget of epsilon 1: the run's PLD guarantee per agent is within 1 % below 1, and the
    summary shows the request beside it."""
    from privdist.experiments import run_experiment

    runs = [{"label": "DPSGD", "algorithm": "dpsgd", "params": {"alpha0": 0.3, "epsilon": 1.0}}]
    spec = parse_spec({**BASE, "rounds": 60, "trials": 1, "privacy": {"delta": 1e-5, "budget": "total"},
                       "runs": runs})
    results = run_experiment(spec, out_dir=tmp_path, progress=False)
    for agent in results["runs"][0]["privacy"]["per_agent"]:
        assert 0.99 <= agent["epsilon"]["pld"] <= 1.0
    assert "requested eps (total)" in (tmp_path / "summary.md").read_text()
