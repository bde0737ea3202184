"""S2 privacy panel kinds, mean-scale baselines and objective metrics (spec §3.6, §3.7, §3.9; issue 4)."""

import numpy as np
import pytest

from privdist.experiments.build import build_trial
from privdist.experiments.claims import CLAIM_KINDS
from privdist.experiments.kinds_sharing import load_train_test
from privdist.experiments.runner import run_experiment
from privdist.experiments.spec import parse_spec
from privdist.problems.vertical import log_loss
from privdist.runtime import data_rng

DATA = {"kind": "gisette_synthetic", "params": {"n_train": 200, "n_test": 80, "n_features": 30, "n_informative": 20}}


def _spec(**over):
    raw = {
        "name": "s2_privacy_small", "paper": "S2", "trials": 1, "seed": 0, "rounds": 8,
        "metrics": ["test_log_loss", "objective", "objective_gap", "sklearn_all_test_log_loss",
                    "sklearn_local_test_log_loss"],
        "data": DATA, "network": {"kind": "complete", "params": {"n": 2}},
        "problem": {"kind": "vertical_logistic", "blocks": [15, 15], "reg_weight": 0.01, "loss_scale": "mean"},
        "privacy": {"delta": 0.01},
        "runs": [{"label": "out b1=1 eps {epsilon}", "algorithm": "admm_sharing",
                  "params": {"rho": 0.01, "mode": "output", "delta": 0.01, "b1": 1.0, "clip": False},
                  "sweep": {"epsilon": [0.5, 5.0]}},
                 {"label": "clipped b1=1 eps {epsilon}", "algorithm": "admm_sharing",
                  "params": {"rho": 0.01, "mode": "output", "delta": 0.01, "b1": 1.0},
                  "sweep": {"epsilon": [5.0]}}],
        "plots": [{"kind": "sharing_epsilon", "metric": "test_log_loss", "file": "eps", "xscale": "log",
                   "baselines": ["sklearn_all_test_log_loss"], "accountants": ["rdp", "pld", "paper"],
                   "ylim": [0.05, 20.0]}],
        "claims": [{"id": "tight", "kind": "sharing_accountants_below_paper", "runs": ["out b1=1 eps {epsilon}"]},
                   {"id": "gap", "kind": "sharing_non_increasing", "run": "out b1=1 eps 5.0",
                    "metric": "objective", "value": 3}],
    }
    raw.update(over)
    return parse_spec(raw)


def test_mean_scale_baselines_and_objective_metrics():
    from sklearn.linear_model import LogisticRegression

    trial = build_trial(_spec(), 0)
    p = trial.problem
    assert p.loss_scale == "mean" and set(trial.metrics) == set(_spec().metrics)
    beta_c = p.centralized_solution()
    est = np.zeros((2, p.n_features))
    assert trial.metrics["objective"](est) == pytest.approx(np.log(2))  # mean loss at 0
    f_star = trial.extras["centralized_objective"]
    assert trial.metrics["objective_gap"](est) == pytest.approx((np.log(2) - f_star) / f_star)
    est[0] = beta_c
    assert abs(trial.metrics["objective_gap"](est)) < 1e-8
    # scikit-learn with C = 1/(N lambda): the code's loss-to-penalty ratio for the mean loss
    tr, te, _ = load_train_test(_spec(), data_rng(0, 0), None)  # the builder's draw
    np.testing.assert_array_equal(tr.X[:, :15], np.asarray(p.blocks[0])[:, 1:])
    m = LogisticRegression(C=1.0 / (200 * 0.01), max_iter=1000).fit(tr.X, tr.y)
    assert trial.metrics["sklearn_all_test_log_loss"](est) == pytest.approx(
        log_loss(m.decision_function(te.X), te.y), rel=1e-6)


def test_privacy_panel_runs_plots_and_checks_claims(tmp_path):
    res = run_experiment(_spec(), tmp_path / "out", progress=False)
    assert (tmp_path / "out" / "eps.png").stat().st_size > 1000
    claims = {c["id"]: c for c in res["claims"]}
    # clip=False is only the paper's claim: privdist's guarantee is inf, so "below the paper" does not hold
    assert claims["tight"]["holds"] is False and "NOT guaranteed" in claims["tight"]["evidence"]
    assert "epoch 3" in claims["gap"]["evidence"]
    per_agent = res["runs"][0]["privacy"]["per_agent"]
    assert per_agent[0]["epsilon"]["rdp"] == float("inf") and not per_agent[0]["guaranteed"]
    assert per_agent[0]["claimed"]["rdp"] < per_agent[0]["epsilon"]["paper"]
    clipped = res["runs"][2]["privacy"]["per_agent"][0]
    assert clipped["guaranteed"] and clipped["epsilon"]["rdp"] < clipped["epsilon"]["paper"]
    assert res["runs"][1]["metrics"]["test_log_loss"]["final_mean"] < res["runs"][0]["metrics"]["test_log_loss"][
        "final_mean"]  # less noise (larger epsilon) -> lower test loss


def _run(curve=None, eps=None):
    privacy = {"per_agent": [{"agent": 0, "epsilon": eps or {}}]}
    return {"metrics": {"m": {"curve_mean": np.asarray(curve or [0.0])}}, "privacy": privacy, "group": "g"}


def test_claim_kinds_on_hand_made_results():
    below = CLAIM_KINDS["sharing_accountants_below_paper"]
    ok = {"a": _run(eps={"paper": 10.0, "rdp": 2.0, "pld": 1.5})}
    bad = {"a": _run(eps={"paper": 1.0, "rdp": 2.0, "pld": 0.5})}
    missing = {"a": _run(eps={"paper": None, "rdp": 2.0, "pld": 0.5})}
    assert below({"runs": ["g"]}, ok, "m")[0]
    claim = {"a": _run(eps={"paper": 10.0, "rdp": float("inf"), "pld": float("inf")})}
    claim["a"]["privacy"]["per_agent"][0].update(guaranteed=False, claimed={"rdp": 2.0, "pld": 1.5})
    holds, ev = below({"runs": ["a"]}, claim, "m")
    assert not holds and "NOT guaranteed" in ev and "RDP 2" in ev  # decided on the guarantee (issue 14 item 7)
    assert not below({"runs": ["a"]}, bad, "m")[0]
    assert not below({"runs": ["a"]}, missing, "m")[0]
    assert below({"runs": ["zzz"]}, ok, "m") == (None, "no run matched")
    mono = CLAIM_KINDS["sharing_non_increasing"]
    runs = {"r": _run(curve=[5.0, 5.0, 1.0, 2.0, 1.5, 1.0])}
    holds, ev = mono({"run": "r"}, runs, "m")
    assert not holds and "first rise after epoch 2" in ev
    assert mono({"run": "r", "value": 3}, runs, "m")[0]
