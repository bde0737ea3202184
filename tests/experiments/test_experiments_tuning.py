"""The fair tuning protocol (issue 14 item 2): grids on tuning draws, equal size, choices recorded."""

import pytest

from privdist.errors import SpecError
from privdist.experiments import load_experiment, run_experiment
from privdist.experiments.spec import parse_spec


def _raw(**tuning):
    raw = dict(load_experiment("quickstart").raw)
    raw.update(trials=2, rounds=30)
    raw["tuning"] = {"seed": 1000, "trials": 1, **tuning}
    return raw


def test_grids_are_searched_on_tuning_draws_and_recorded(tmp_path):
    raw = _raw(grids={"DPSGD eps={epsilon}": {"alpha0": [0.03, 0.3]},
                      "consensus ADMM (non-private)": {"rho": [0.1, 1.0]}})
    results = run_experiment(parse_spec(raw, source="t"), tmp_path / "o", progress=False)
    rec = results["tuning"]
    assert rec["seed"] == 1000 and rec["trials"] == 1 and rec["equal_size"] is True
    dpsgd = rec["entries"]["DPSGD eps={epsilon}"]
    assert dpsgd["points"] == 2 and len(dpsgd["scores"]) == 2
    best = min(dpsgd["scores"], key=lambda s: s["score"])["params"]
    assert dpsgd["chosen"] == best
    used = {r["label"]: r["params"] for r in results["runs"]}
    assert used["DPSGD eps=0.15"]["alpha0"] == best["alpha0"] == used["DPSGD eps=0.95"]["alpha0"]
    assert used["consensus ADMM (non-private)"]["rho"] == rec["entries"]["consensus ADMM (non-private)"]["chosen"]["rho"]
    summary = (tmp_path / "o" / "summary.md").read_text()
    assert "## Tuning" in summary and "tuned DPSGD eps={epsilon}: alpha0 in [0.03, 0.3] (2 points)" in summary
    from privdist.cli.report_cmd import report_markdown

    assert "tuning runs" in report_markdown([tmp_path / "o"], notes=False)


@pytest.mark.parametrize("tuning, match", [
    ({"grids": {"DPSGD eps={epsilon}": {"alpha0": [0.1, 0.3]}, "consensus ADMM (non-private)": {"rho": [1.0]}}},
     "unequal size"),
    ({"grids": {"nope": {"alpha0": [0.1]}}}, "not a \\[\\[runs\\]\\] label"),
    ({"grids": {"DPSGD eps={epsilon}": {"epsilon": [0.1]}}}, "sweeps"),
    ({"seed": 0, "grids": {"DPSGD eps={epsilon}": {"alpha0": [0.1]}}}, "must differ"),
    ({"grids": {"DPSGD eps={epsilon}": {"alpha0": []}}}, "non-empty"),
])
def test_bad_tuning_tables_are_named_errors(tuning, match):
    raw = _raw()
    raw["tuning"] = {**raw["tuning"], **tuning}
    with pytest.raises(SpecError, match=match):
        parse_spec(raw, source="t")


def test_unequal_grids_allowed_only_when_said():
    raw = _raw(equal_size=False, grids={"DPSGD eps={epsilon}": {"alpha0": [0.1, 0.3]},
                                         "consensus ADMM (non-private)": {"rho": [1.0]}})
    assert parse_spec(raw, source="t").tuning.equal_size is False


def test_tuning_sweep_and_share_bound_the_cost_and_spread_the_choice(tmp_path):
    """``sweep`` tunes on chosen sweep points only; ``share`` applies one entry's choice to another entry of the
    same method; ``[quick] tuning`` replaces trials/rounds in quick mode (issue 14: bounded tuning cost)."""
    raw = _raw(sweep={"epsilon": [0.95]}, share={"DPSGD eps={epsilon}": ["DPSGD again eps={epsilon}"]},
               grids={"DPSGD eps={epsilon}": {"alpha0": [0.03, 0.3]}})
    raw["runs"] = list(raw["runs"]) + [{**raw["runs"][1], "label": "DPSGD again eps={epsilon}"}]
    raw["quick"] = {"tuning": {"rounds": 10}}
    spec = parse_spec(raw, source="t")
    results = run_experiment(spec, tmp_path / "o", progress=False)
    rec = results["tuning"]
    entry = rec["entries"]["DPSGD eps={epsilon}"]
    assert entry["tuned_on"] == ["DPSGD eps={epsilon} [tuning epsilon=0.95]"] and rec["runs"] == 2
    used = {r["label"]: r["params"].get("alpha0") for r in results["runs"]}
    assert used["DPSGD again eps=0.15"] == used["DPSGD eps=0.15"] == entry["chosen"]["alpha0"]
    quick = spec.quick()
    assert quick.tuning.rounds == 10 and quick.tuning.trials == 1 and quick.tuning.sweep == {"epsilon": [0.95]}


@pytest.mark.parametrize("extra, match", [
    ({"share": {"DPSGD eps={epsilon}": ["consensus ADMM (non-private)"]}}, "different algorithm"),
    ({"share": {"consensus ADMM (non-private)": ["DPSGD eps={epsilon}"]}}, "has no grid"),
    ({"sweep": {"epsilon": []}}, "non-empty"),
])
def test_bad_sweep_and_share_are_named_errors(extra, match):
    raw = _raw(grids={"DPSGD eps={epsilon}": {"alpha0": [0.1]}}, **extra)
    with pytest.raises(SpecError, match=match):
        parse_spec(raw, source="t")


def test_quick_tuning_keys_are_checked():
    raw = _raw(grids={"DPSGD eps={epsilon}": {"alpha0": [0.1]}})
    raw["quick"] = {"tuning": {"grids": {}}}
    with pytest.raises(SpecError, match="quick"):
        parse_spec(raw, source="t")


def test_resume_reuses_the_recorded_tuning(tmp_path, monkeypatch):
    """A resumed run applies the tuning choices recorded in results.json instead of tuning again."""
    import privdist.experiments.runner as runner

    raw = _raw(grids={"DPSGD eps={epsilon}": {"alpha0": [0.03, 0.3]}})
    first = run_experiment(parse_spec(raw, source="t"), tmp_path / "o", progress=False)

    def no_tuning(*a, **k):
        raise AssertionError("tuned again on resume")

    monkeypatch.setattr(runner, "_tuned", no_tuning)
    again = run_experiment(parse_spec(raw, source="t"), tmp_path / "o", progress=False, resume=True)
    assert again["tuning"] == first["tuning"]
    assert [r["params"] for r in again["runs"]] == [r["params"] for r in first["runs"]]
    import numpy as np

    for a, b in zip(again["runs"], first["runs"]):
        np.testing.assert_equal(a["metrics"], b["metrics"])


@pytest.mark.parametrize("tuning_trials", [1, 2])
def test_tuning_in_worker_processes_scores_like_in_process(tmp_path, tuning_trials):
    """``jobs = 2`` runs the grid points (or, with fewer points than workers, a point's trials) in worker processes:
    the same scores, choices and reported runs as in this process."""
    raw = _raw(grids={"DPSGD eps={epsilon}": {"alpha0": [0.03, 0.3]},
                      "consensus ADMM (non-private)": {"rho": [0.1, 1.0]}})
    raw["tuning"]["trials"] = tuning_trials
    one = run_experiment(parse_spec(raw, source="t"), tmp_path / "a", progress=False)
    two = run_experiment(parse_spec(raw, source="t"), tmp_path / "b", progress=False, jobs=2)
    for rec in (one["tuning"], two["tuning"]):
        rec.pop("seconds")
    assert one["tuning"] == two["tuning"]
    assert [r["params"] for r in one["runs"]] == [r["params"] for r in two["runs"]]


def test_tuning_splits_a_single_points_trials_over_workers(monkeypatch):
    """One grid point and two workers: its tuning trials are split into two tasks, finals kept in trial order."""
    import dataclasses

    import privdist.experiments.runner as runner

    raw = _raw(grids={"DPSGD eps={epsilon}": {"alpha0": [0.3]}})
    raw["tuning"]["trials"] = 2
    spec = parse_spec(raw, source="t")
    spec = dataclasses.replace(spec, runs=tuple(rs for rs in spec.runs if rs.group == "DPSGD eps={epsilon}"))
    calls = []
    real = runner.run_trials

    def spy(sub, trials, *a):
        calls.append(list(trials))
        return real(sub, trials, *a)

    monkeypatch.setattr(runner, "run_trials", spy)
    serial = runner._tuned(spec, None, "simulate", jobs=1).tuning_record
    assert calls == [[0, 1]]
    calls.clear()
    monkeypatch.setattr(runner, "_pool", _InlinePool)  # worker processes would not see the spy
    split = runner._tuned(spec, None, "simulate", jobs=2).tuning_record
    assert calls == [[0], [1]]
    assert serial["entries"] == split["entries"]


class _InlinePool:
    """Stand-in for the runner's process pool that runs each task at submission."""

    def __init__(self, jobs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        from concurrent.futures import Future

        fut = Future()
        fut.set_result(fn(*args))
        return fut
