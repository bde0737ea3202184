"""Every claim kind: a case that holds, one that fails, and "not evaluated" when there is nothing to compare."""

import numpy as np
import pytest

from privdist.experiments.build import _load_builtin_kinds
from privdist.experiments.claims import CLAIM_KINDS, check_claims

_load_builtin_kinds()  # the kinds_* modules register their claim kinds at import


def _run(label, final=None, group=None, curve=None, trials=3, metrics=None, privacy=None):
    curve = list(curve) if curve is not None else [1.0, final]
    m = {"ne": {"final_mean": curve[-1], "final_std": 0.0, "curve_mean": np.asarray(curve, float)}}
    for name, value in (metrics or {}).items():
        arr = np.asarray(value, float) if np.ndim(value) else np.asarray([value, value], float)
        m[name] = {"final_mean": float(arr[-1]), "final_std": 0.0, "curve_mean": arr}
    return {"label": label, "group": group, "metrics": m, "info": [{}] * trials,
            "privacy": privacy or {"per_agent": [{"epsilon": {"paper": 1.0, "rdp": 0.5, "pld": 0.4}}]}}


def _check(claim, runs):
    claim = {"id": "c", "text": "t", **claim}
    return check_claims([claim], runs, "ne")[0]


def _regret_metrics(per_round):
    """One node, one vertex: regret terms per round (curve_mean includes a dropped last entry)."""
    return {"regret_1_1": list(per_round) + [0.0]}


CASES = {
    "final_below": (
        ({"kind": "final_below", "run": "a", "than": ["b"]}, [_run("a", 1.0), _run("b", 2.0)]),
        ({"kind": "final_below", "run": "a", "than": ["b"]}, [_run("a", 3.0), _run("b", 2.0)]),
        ({"kind": "final_below", "run": "a", "than": []}, [_run("a", 3.0)]),
    ),
    "below_value": (
        ({"kind": "below_value", "run": "g", "value": 1.0}, [_run("x", 0.5, "g"), _run("y", 0.7, "g")]),
        ({"kind": "below_value", "run": "g", "value": 0.6}, [_run("x", 0.5, "g"), _run("y", 0.7, "g")]),
        ({"kind": "below_value", "run": "g", "value": 0.6}, [_run("x", 0.5)]),
    ),
    "monotone": (
        ({"kind": "monotone", "runs": ["a", "b", "c"]}, [_run("a", 3.0), _run("b", 2.0), _run("c", 1.0)]),
        ({"kind": "monotone", "runs": ["a", "b", "c"]}, [_run("a", 3.0), _run("b", 3.0), _run("c", 1.0)]),
        ({"kind": "monotone", "runs": ["a"]}, [_run("a", 3.0)]),
    ),
    "within_factor": (
        ({"kind": "within_factor", "run": "a", "than": ["b"], "value": 2}, [_run("a", 1.0), _run("b", 1.5)]),
        ({"kind": "within_factor", "run": "a", "than": ["b"], "value": 2}, [_run("a", 1.0), _run("b", 5.0)]),
        None,
    ),
    "at_most_factor": (
        ({"kind": "at_most_factor", "run": "a", "than": ["b"], "value": 2}, [_run("a", 1.0), _run("b", 50.0)]),
        ({"kind": "at_most_factor", "run": "a", "than": ["b"], "value": 2}, [_run("a", 5.0), _run("b", 1.0)]),
        ({"kind": "at_most_factor", "run": "a", "than": [], "value": 2}, [_run("a", 1.0)]),
    ),
    "regret_vanishing": (
        ({"kind": "regret_vanishing", "run": "a"}, [_run("a", 0, metrics=_regret_metrics([1.0] * 2 + [0.0] * 18))]),
        ({"kind": "regret_vanishing", "run": "a"}, [_run("a", 0, metrics=_regret_metrics([1.0] * 20))]),
        ({"kind": "regret_vanishing", "runs": ["g"]}, [_run("a", 0, metrics=_regret_metrics([1.0] * 20))]),
    ),
    "regret_order": (
        ({"kind": "regret_order", "runs": ["a", "b"]},
         [_run("a", 0, metrics=_regret_metrics([1.0] * 10)), _run("b", 0, metrics=_regret_metrics([2.0] * 10))]),
        ({"kind": "regret_order", "runs": ["a", "b"]},
         [_run("a", 0, metrics=_regret_metrics([2.0] * 10)), _run("b", 0, metrics=_regret_metrics([1.0] * 10))]),
        ({"kind": "regret_order", "runs": ["a"]}, [_run("a", 0, metrics=_regret_metrics([1.0] * 10))]),
    ),
    "regret_nodes_alike": (
        ({"kind": "regret_nodes_alike", "run": "a", "value": 0.1},
         [_run("a", 0, metrics={"regret_1_1": [1.0, 1.0, 0], "regret_2_1": [1.0, 1.02, 0]})]),
        ({"kind": "regret_nodes_alike", "run": "a", "value": 0.1},
         [_run("a", 0, metrics={"regret_1_1": [1.0, 1.0, 0], "regret_2_1": [1.0, 3.0, 0]})]),
        None,
    ),
    "sharing_reaches_all_features": (
        ({"kind": "sharing_reaches_all_features", "run": "a", "value": 0.01},
         [_run("a", 0.33, metrics={"sklearn_all_test_log_loss": 0.325})]),
        ({"kind": "sharing_reaches_all_features", "run": "a", "value": 0.001},
         [_run("a", 0.40, metrics={"sklearn_all_test_log_loss": 0.325})]),
        None,
    ),
    "sharing_beats_local_features": (
        ({"kind": "sharing_beats_local_features", "runs": ["a"]},
         [_run("a", 0.33, metrics={"sklearn_local_test_log_loss": 0.35})]),
        ({"kind": "sharing_beats_local_features", "runs": ["a"]},
         [_run("a", 0.40, metrics={"sklearn_local_test_log_loss": 0.35})]),
        ({"kind": "sharing_beats_local_features", "runs": []}, [_run("a", 0.40)]),
    ),
    "sharing_fewer_epochs_than_sgd": (
        ({"kind": "sharing_fewer_epochs_than_sgd", "run": "a"},
         [_run("a", curve=[1, 0.5, 0.3, 0.3], metrics={"sklearn_all_test_log_loss": 0.3,
                                                      "sgd_test_log_loss": [1, 0.9, 0.6, 0.3]})]),
        ({"kind": "sharing_fewer_epochs_than_sgd", "run": "a"},
         [_run("a", curve=[1, 0.9, 0.6, 0.3], metrics={"sklearn_all_test_log_loss": 0.3,
                                                      "sgd_test_log_loss": [1, 0.5, 0.3, 0.3]})]),
        None,
    ),
    "sharing_non_increasing": (
        ({"kind": "sharing_non_increasing", "run": "a"}, [_run("a", curve=[1, 2, 1.5, 1.0])]),
        ({"kind": "sharing_non_increasing", "run": "a"}, [_run("a", curve=[1, 2, 1.5, 1.6])]),
        ({"kind": "sharing_non_increasing", "run": "a", "value": 3}, [_run("a", curve=[1, 2, 1.5, 1.6])]),
    ),
    "sharing_accountants_below_paper": (
        ({"kind": "sharing_accountants_below_paper", "runs": ["a"]}, [_run("a", 1.0)]),
        ({"kind": "sharing_accountants_below_paper", "runs": ["a"]},  # not a guarantee: inf beats nothing
         [_run("a", 1.0, privacy={"per_agent": [{"epsilon": {"paper": 5.0, "rdp": float("inf"),
                                                              "pld": float("inf")}}]})]),
        ({"kind": "sharing_accountants_below_paper", "runs": ["g"]}, [_run("a", 1.0)]),
    ),
}


def test_every_registered_claim_kind_is_tested():
    assert set(CLAIM_KINDS) == set(CASES)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_claim_kind_verdicts(kind):
    holds, fails, empty = CASES[kind]
    assert _check(*holds)["holds"] is True, _check(*holds)["evidence"]
    assert _check(*fails)["holds"] is False, _check(*fails)["evidence"]
    if empty is not None:
        out = _check(*empty)
        assert out["holds"] is None, out["evidence"]


def test_missing_run_is_not_evaluated_and_one_trial_is_said():
    out = _check({"kind": "final_below", "run": "a", "than": ["nope"]}, [_run("a", 1.0)])
    assert out["holds"] is None and "nope" in out["evidence"]
    one = _check({"kind": "final_below", "run": "a", "than": ["b"]}, [_run("a", 1.0, trials=1), _run("b", 2.0)])
    assert one["holds"] is True and "one trial" in one["evidence"]


def test_margin_turns_a_flat_difference_into_a_failure():
    runs = [_run("a", 0.0895), _run("b", 0.0896)]
    assert _check({"kind": "final_below", "run": "a", "than": ["b"]}, runs)["holds"] is True
    assert _check({"kind": "final_below", "run": "a", "than": ["b"], "margin": 0.05}, runs)["holds"] is False
    assert _check({"kind": "monotone", "runs": ["b", "a"], "margin": 0.05}, runs)["holds"] is False


def test_a_real_catalog_entry_end_to_end(tmp_path):
    """The shipped quickstart, run for real: both of its claims are decided (and hold) from measured numbers."""
    from privdist.experiments import load_experiment, run_experiment

    spec = load_experiment("quickstart").with_overrides(trials=4)
    results = run_experiment(spec, tmp_path / "qs", progress=False)
    verdicts = {c["id"]: c["holds"] for c in results["claims"]}
    assert verdicts == {"admm_exact": True, "dpsgd_privacy_accuracy": True}


def test_a_spec_without_runs_is_refused():
    from privdist.errors import SpecError
    from privdist.experiments import load_experiment
    from privdist.experiments.spec import parse_spec

    raw = {**load_experiment("quickstart").raw, "runs": [], "plots": [], "claims": []}
    with pytest.raises(SpecError, match="at least 1|at least one"):
        parse_spec(raw, source="t")
