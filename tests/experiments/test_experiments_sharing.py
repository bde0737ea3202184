"""Problem kind vertical_logistic, S2 plots and claims (spec §3.9), on a small synthetic problem."""

import json
from pathlib import Path

import numpy as np
import pytest

from privdist.errors import DataFileNotFoundError, SpecError
from privdist.experiments.build import build_trial
from privdist.experiments.runner import run_experiment
from privdist.experiments.spec import parse_spec

LIBSVM = Path(__file__).resolve().parents[3] / "shared/datasets/libsvm"
DATA = {"kind": "gisette_synthetic", "params": {"n_train": 300, "n_test": 100, "n_features": 40, "n_informative": 30}}


def _spec(**over):
    raw = {
        "name": "s2_small", "paper": "S2", "trials": 1, "seed": 0, "rounds": 12,
        "metrics": ["test_log_loss", "train_objective", "sgd_train_objective", "sgd_test_log_loss",
                    "sklearn_all_test_log_loss", "sklearn_local_test_log_loss", "centralized_test_log_loss",
                    "n_train"],
        "data": DATA, "network": {"kind": "complete", "params": {"n": 3}},
        "problem": {"kind": "vertical_logistic", "blocks": [16, 16, 8], "reg_weight": 0.01,
                    "sgd": {"lr": 0.1, "batch_size": 50}},
        "runs": [{"label": "ADMM noise std {noise_std}", "algorithm": "admm_sharing",
                  "params": {"rho": 1.0}, "sweep": {"noise_std": [0.0, 0.1]}}],
        "plots": [{"kind": "sharing_epochs", "metric": "test_log_loss", "file": "epochs", "yscale": "linear",
                   "metrics": ["train_objective", "test_log_loss", "sgd_test_log_loss"],
                   "baselines": ["sklearn_all_test_log_loss"], "paper": {"all": 0.0854}, "xmax": 10},
                  {"kind": "sharing_noise", "metric": "test_log_loss", "file": "noise", "at": 10,
                   "baselines": ["sklearn_all_test_log_loss", "sklearn_local_test_log_loss"]}],
        "claims": [{"id": "a", "kind": "sharing_reaches_all_features", "run": "ADMM noise std 0.0", "value": 0.05},
                   {"id": "b", "kind": "sharing_beats_local_features", "runs": ["ADMM noise std 0.1"]},
                   {"id": "c", "kind": "sharing_fewer_epochs_than_sgd", "run": "ADMM noise std 0.0", "value": 0.05}],
    }
    raw.update(over)
    return parse_spec(raw)


def test_build_metrics_and_baselines():
    trial = build_trial(_spec(), 0)
    p = trial.problem
    assert p.dims == (17, 16, 8) and trial.network.n_agents == 3
    est = np.zeros((3, p.n_features))
    assert trial.metrics["test_log_loss"](est) == pytest.approx(np.log(2))
    assert trial.metrics["train_objective"](est) == pytest.approx(np.log(2))
    assert trial.metrics["n_train"](est) == 300
    metric = trial.metrics["sgd_test_log_loss"]
    assert metric.with_round
    sgd = [metric(est, t) for t in range(13)]
    assert sgd[0] == pytest.approx(np.log(2), abs=0.05) and sgd[-1] < sgd[0]  # epoch t at round t
    assert metric(est, 0) == sgd[0]
    assert 0 < trial.metrics["sklearn_all_test_log_loss"](est) < np.log(2)


def test_run_experiment_writes_figures_and_claims(tmp_path):
    res = run_experiment(_spec(), tmp_path / "out", progress=False)
    assert {c["id"] for c in res["claims"]} == {"a", "b", "c"}
    assert all("sklearn" in c["evidence"] or "epochs" in c["evidence"] for c in res["claims"])
    for f in ("epochs.png", "noise.png"):
        assert (tmp_path / "out" / f).stat().st_size > 1000
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["runs"][0]["metrics"]["test_log_loss"]["final_mean"] < np.log(2)


def test_bad_data_kind_and_missing_real_gisette(tmp_path):
    with pytest.raises(SpecError, match="a9a, gisette"):
        build_trial(_spec(data={"kind": "adult"}), 0)
    with pytest.raises(DataFileNotFoundError):
        build_trial(_spec(data={"kind": "gisette", "params": {"source": "real"}}), 0, data_dir=tmp_path)


@pytest.mark.skipif(not (LIBSVM / "a9a.gz").exists() and not (LIBSVM / "a9a").exists(), reason="a9a not present")
def test_a9a_vertical_split():
    spec = _spec(data={"kind": "a9a"}, metrics=["test_log_loss"], rounds=3,
                 problem={"kind": "vertical_logistic", "blocks": [66, 57]}, plots=[], claims=[])
    trial = build_trial(spec, 0, data_dir=LIBSVM)
    assert trial.problem.dims == (67, 57) and trial.problem.n_samples == 32561
    assert trial.metrics["test_log_loss"](np.zeros((2, 124))) == pytest.approx(np.log(2))
