"""Issue 40, per-pair reports: each case of the issue ends in a complete run with a summary and a figure, or in a
one-line named error (``privdist.errors``)."""

import copy
import json

import numpy as np
import pytest

from privdist.cli.run_cmd import diverged_exit
from privdist.errors import SpecError
from privdist.experiments import parse_spec, run_experiment
from privdist.experiments.pairwise import pairwise_lines
from privdist.experiments.pairwise_plot import pairwise_figure

DPADMM = {"label": "dpadmm", "algorithm": "dpadmm", "params": {"rho": 1.0, "eta0": 1.0, "epsilon": 1.0}}
DPSGD = {"label": "dpsgd", "algorithm": "dpsgd", "params": {"alpha0": 0.3, "epsilon": 1.0}}


def _spec(n=20, runs=(DPSGD,), network="ring", **privacy) -> dict:
    return {"name": "pw40", "trials": 1, "rounds": 6, "seed": 0,
            "data": {"kind": "dzoa_synthetic", "params": {"n_agents": n, "samples_per_agent": 4, "n_features": 3}},
            "network": {"kind": network, "params": {"n": n}},
            "problem": {"loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
            "privacy": {"delta": 1e-5, "budget": "total", "pairwise": True, **privacy},
            "runs": [copy.deepcopy(r) for r in runs]}


def _run(tmp_path, raw) -> dict:
    out = tmp_path / "out"
    results = run_experiment(parse_spec(raw), out, progress=False)
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["complete"] and "figure_errors" not in on_disk and (out / "summary.md").is_file()
    return results


def _ordered(stats: dict) -> bool:
    return stats["min"] <= stats["median"] <= stats["max"]


def test_ring_of_20_default_epsilon_and_tight_rtol_run_to_summary_and_figure(tmp_path):
    # three cases of the issue in one spec: a ring of 20, dpsgd at its default epsilon, pairwise_rtol = 1e-12
    default = {"label": "dpsgd default", "algorithm": "dpsgd", "params": {}}
    results = _run(tmp_path, _spec(runs=(DPSGD, default), pairwise_rtol=1e-12))
    for r in results["runs"]:
        pw = r["privacy"]["pairwise"]
        assert pw["status"] == "model" and pw["summary"]["pairs"] == 20 * 19
        for group in [pw["summary"], *pw["by_distance"], *pw["by_distance_common"]]:
            assert _ordered(group["mu"]) and _ordered(group["epsilon"]) and _ordered(group["local_epsilon"])
    assert {"pairwise_dpsgd.png", "pairwise_dpsgd_default.png"} <= set(results["figures"])
    assert (tmp_path / "out" / "pairwise_dpsgd_default.png").stat().st_size > 0


def test_dpadmm_on_a_ring_of_10_with_its_coordinator_as_observer(tmp_path):
    results = _run(tmp_path, _spec(n=10, runs=(DPADMM,), pairwise_observers=[10, 3]))
    pw = results["runs"][0]["privacy"]["pairwise"]
    assert pw["observers"] == [[10], [3]] and pw["observer_labels"] == ["coordinator", "agent 3"]
    assert pw["summary"]["pairs"] == 10 + 9 and "pairwise_dpadmm.png" in results["figures"]


def test_figure_draws_a_profile_whose_minimum_exceeds_its_median_by_rounding(tmp_path):
    # the figure on the input (summaries written by an older privdist): bars clamped, never negative
    results = _run(tmp_path, _spec(n=8))
    section = copy.deepcopy(results["runs"][0]["privacy"]["pairwise"])
    first = section["by_distance"][0]["epsilon"]
    first["min"] = first["median"] + 1e-15
    import matplotlib.pyplot as plt

    fig = pairwise_figure(section, "rounding")  # raised ValueError: 'yerr' must not contain negative values
    profile = fig.axes[1]
    assert profile.containers and profile.get_yscale() == "log"  # the median / min-max error bars are drawn
    plt.close(fig)


def test_one_agent_reports_no_pair_and_draws_no_figure(tmp_path):
    results = _run(tmp_path, _spec(n=1, network="complete"))
    pw = results["runs"][0]["privacy"]["pairwise"]
    assert pw["summary"]["pairs"] == 0 and pw["summary"]["epsilon"]["median"] is None
    assert not any(f.startswith("pairwise_") for f in results["figures"])
    line = next(x for x in pairwise_lines(results) if x.startswith("- dpsgd"))
    assert "no observer x target pair" in line and "n/a" not in line
    assert "no observer x target pair" in (tmp_path / "out" / "summary.md").read_text()


def test_one_agent_with_a_coordinator_has_one_pair_and_a_figure(tmp_path):
    results = _run(tmp_path, _spec(n=1, network="complete", runs=(DPADMM,)))
    pw = results["runs"][0]["privacy"]["pairwise"]
    assert pw["summary"]["pairs"] == 1 and "pairwise_dpadmm.png" in results["figures"]


def test_observers_of_the_docs_example_are_zero_based(tmp_path):
    results = _run(tmp_path, _spec(pairwise_observers=[0, 5]))  # docs/network_dp.md's example
    pw = results["runs"][0]["privacy"]["pairwise"]
    assert pw["observers"] == [[0], [5]] and pw["summary"]["pairs"] == 2 * 19
    eps = np.array([[np.nan if v is None else v for v in row] for row in pw["epsilon"]], dtype=float)
    assert np.isnan(eps[0, 0]) and np.isnan(eps[1, 5])  # each observer's own column is not a pair


@pytest.mark.parametrize("privacy, words", [
    ({"pairwise_observers": []}, "pairwise_observers must be a non-empty array"),
    ({"pairwise_observers": [-1]}, "pairwise_observers[0]"),
    ({"pairwise_observers": [1, 20]}, "valid observers are agents 0..19"),
    ({"pairwise_observers": [3.0]}, "pairwise_observers[0]"),
    ({"pairwise_observers": [[1, 2]]}, "pairwise_observers[0]"),
    ({"pairwise_rtol": 0.0}, "pairwise_rtol"),
    ({"pairwise": False, "pairwise_observers": [1]}, "pairwise is false"),
    ({"pairwise": False, "pairwise_rtol": 0.1}, "pairwise is false"),
])
def test_invalid_pairwise_options_are_one_line_spec_errors(privacy, words):
    with pytest.raises(SpecError) as err:
        parse_spec(_spec(**privacy))
    assert words in str(err.value) and "\n" not in str(err.value)


def test_coordinator_id_is_refused_for_a_protocol_without_one():
    with pytest.raises(SpecError, match=r"pairwise_observers\[0\] = 10 is not a party of run 'dpsgd'"):
        parse_spec(_spec(n=10, runs=(DPSGD, DPADMM), pairwise_observers=[10]))
    parse_spec(_spec(n=10, runs=(DPADMM,), pairwise_observers=[10]))  # dpadmm's coordinator is party N


def test_a_failing_figure_leaves_complete_results_and_is_named(tmp_path, monkeypatch, capsys):
    import privdist.experiments.pairwise_plot as plot

    def broken(section, title):
        raise ValueError("'yerr' must not contain negative values")

    monkeypatch.setattr(plot, "pairwise_figure", broken)
    out = tmp_path / "out"
    results = run_experiment(parse_spec(_spec(n=6)), out, progress=False)
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["complete"] and on_disk["runs"][0]["privacy"]["pairwise"]["summary"]["pairs"] == 30
    assert on_disk["figure_errors"] == ["pairwise_dpsgd: ValueError: 'yerr' must not contain negative values"]
    assert "## Figures not drawn" in (out / "summary.md").read_text()
    assert diverged_exit(results, out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "figure(s) not drawn" in err and "are complete" in err


def test_a_configuration_without_a_model_is_refused_before_the_run(tmp_path, monkeypatch):
    import privdist.experiments.trials as trials
    from privdist.errors import ValidationError

    def never(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(trials, "run_algorithm", never)
    correlated = {"label": "c", "algorithm": "dpsgd", "params": {"trust": "correlated", "epsilon": 1.0}}
    with pytest.raises(ValidationError, match="trust='correlated' does not release those"):
        run_experiment(parse_spec(_spec(n=6, runs=(correlated,))), tmp_path / "o", progress=False)
