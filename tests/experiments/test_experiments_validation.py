"""Issue 15: every listed bad spec is a named error naming its key path, before any data is generated."""

import copy

import pytest

from privdist.errors import ResourceLimitError, SpecError
from privdist.experiments import parse_spec, run_experiment
from privdist.experiments.resources import check_resources

BASE = {"name": "t", "trials": 1, "rounds": 3, "data": {"kind": "dzoa_synthetic"}, "network": {"kind": "dzoa5"},
        "runs": [{"label": "a", "algorithm": "dpsgd", "params": {"epsilon": 0.5}}]}


def spec_with(path: str, value, base=BASE) -> dict:
    """A copy of ``base`` with the dotted ``path`` (``runs.0.params.epsilon``) set to ``value``."""
    raw = copy.deepcopy(base)
    *parents, last = path.split(".")
    cur = raw
    for part in parents:
        cur = cur[int(part)] if part.isdigit() else cur.setdefault(part, {})
    cur[int(last) if last.isdigit() else last] = value
    return raw


# (case id, path, value, text the message must contain)
CASES = [
    ("epsilon_string", "runs.0.params.epsilon", "1", r"runs[0].params.epsilon must be a number"),
    ("epsilon_true", "runs.0.params.epsilon", True, r"runs[0].params.epsilon must be a number"),
    ("alpha0_string", "runs.0.params.alpha0", "0.3", r"runs[0].params.alpha0 must be a number"),
    ("n_agents_float", "data.params.n_agents", 5.0, r"[data].params.n_agents must be an integer"),
    ("epsilon_1e308", "runs.0.params.epsilon", 1e308, r"runs[0].params.epsilon must lie in"),
    ("epsilon_1e-300", "runs.0.params.epsilon", 1e-300, r"runs[0].params.epsilon must lie in"),
    ("privacy_delta_1e308", "privacy.delta", 1e308, r"[privacy].delta"),
    ("per_release_delta_0.5", "runs.0.params.delta", 0.5, r"runs[0].params.delta must lie in"),
    ("name_traversal", "name", "../../x", "name must be a plain file name"),
    ("n_agents_huge", "data.params.n_agents", 10**7, "[data].params.n_agents"),
    ("n_features_huge", "data.params.n_features", 10**9, "[data].params.n_features"),
    ("sweep_value_string", "runs.0", {"label": "a {epsilon}", "algorithm": "dpsgd", "sweep": {"epsilon": [0.1, "x"]}},
     "runs[0].sweep.epsilon[1]"),
    ("unknown_algorithm_param", "runs.0.params.epsilonn", 1.0, "runs[0].params.epsilonn is not a parameter"),
    ("trials_zero", "trials", 0, "trials"),
    ("seed_negative", "seed", -1, "seed"),
    ("privacy_secure_string", "privacy.secure", "yes", "[privacy].secure"),
]


@pytest.mark.parametrize("path,value,text", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_listed_bad_values_are_named_spec_errors(path, value, text):
    with pytest.raises(SpecError) as err:
        parse_spec(spec_with(path, value))
    assert text in str(err.value)
    assert "\n" not in str(err.value)


def test_rho_list_is_a_named_error():
    raw = {**BASE, "runs": [{"label": "a", "algorithm": "consensus_admm", "params": {"rho": [1, 2]}}]}
    with pytest.raises(SpecError, match=r"runs\[0\]\.params\.rho must be a number, got list"):
        parse_spec(raw)


def test_error_names_the_entry_of_a_later_run():
    raw = copy.deepcopy(BASE)
    raw["runs"] += [{"label": "b", "algorithm": "consensus_admm"}, {"label": "c", "algorithm": "dpsgd",
                                                                       "params": {"epsilon": "1"}}]
    with pytest.raises(SpecError, match=r"runs\[2\]\.params\.epsilon"):
        parse_spec(raw)


@pytest.mark.parametrize("kind,param", [("adult", "n_agents"), ("a9a", "path")])
def test_unknown_data_params_are_named(kind, param):
    raw = spec_with(f"data.params.{param}", 5, {**BASE, "data": {"kind": kind}})
    with pytest.raises(SpecError, match=rf"\[data\]\.params\.{param} is not a parameter of data set '{kind}'"):
        parse_spec(raw)


def test_plot_file_outside_the_directory_is_named():
    with pytest.raises(SpecError, match=r"plots\[0\]\.file must be a plain file name"):
        parse_spec({**BASE, "plots": [{"kind": "curves", "file": "../../x"}]})


@pytest.mark.parametrize("data_agents,network", [(5, {"kind": "ring", "params": {"n": 10}}),
                                                 (10, {"kind": "dzoa5"})])
def test_agent_counts_of_data_and_network_must_agree(data_agents, network):
    raw = spec_with("data.params.n_agents", data_agents, {**BASE, "network": network})
    with pytest.raises(SpecError, match=r"\[data\]\.params\.n_agents: .* agents, but \[network\]"):
        parse_spec(raw)


def test_consistent_agent_counts_pass():
    raw = spec_with("data.params.n_agents", 10, {**BASE, "network": {"kind": "ring", "params": {"n": 10}}})
    assert parse_spec(raw).network.params["n"] == 10


@pytest.mark.parametrize("path,value", [("rounds", 10**12), ("trials", 10**9),
                                        ("data.params", {"samples_per_agent": 10**6, "n_features": 1000})])
def test_huge_experiments_need_confirmation(path, value, tmp_path):
    spec = parse_spec(spec_with(path, value))
    with pytest.raises(ResourceLimitError, match="pass --yes"):
        run_experiment(spec, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()  # refused before anything is created
    assert check_resources(spec, allow_large=True).bytes > 0


def test_every_catalog_spec_validates_and_its_quick_variant_is_small():
    from privdist.experiments import catalog

    for spec in catalog().values():
        assert check_resources(spec.quick()).seconds < 3600


def test_false_means_none_for_an_optional_parameter():
    raw = {**BASE, "runs": [{"label": "a", "algorithm": "dzoa", "params": {"epsilon": False, "mode": "fixed"}}]}
    assert parse_spec(raw).runs[0].params["epsilon"] is None
