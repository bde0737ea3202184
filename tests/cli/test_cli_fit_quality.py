"""``privdist fit`` on anyone's data (issue 25): regression, three or more classes, the spread over noise draws,
warnings that name the cause, and the release boundary of these owner-only outputs."""

import json

import numpy as np
import pandas as pd
import pytest

from privdist.cli.main import main
from privdist.learn import load_model


def _regression_csv(tmp_path, n=300):
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.uniform(-1, 1, size=(n, 3)), columns=["a", "b", "c"])
    df["t"] = 2 * df["a"] - df["b"] + 0.1 * rng.normal(size=n)
    path = tmp_path / "reg.csv"
    df.to_csv(path, index=False)
    return path, df


def _three_class_csv(tmp_path, n=450):
    rng = np.random.default_rng(4)
    centers = np.array([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]])
    k = rng.integers(0, 3, n)
    df = pd.DataFrame(centers[k] * 0.6 + 0.15 * rng.normal(size=(n, 2)), columns=["x1", "x2"])
    df["kind"] = np.array(["red", "green", "blue"])[k]
    path = tmp_path / "three.csv"
    df.to_csv(path, index=False)
    return path, df


def test_fit_regression_csv_end_to_end(tmp_path, capsys):
    path, df = _regression_csv(tmp_path)
    out = tmp_path / "out"
    assert main(["fit", str(path), "--target", "t", "--agents", "2", "--epsilon", "4", "--delta", "1e-5",
                 "--rounds", "100", "--target-bounds=-4:4", "--curve", "1,4", "--seed", "0",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    for name in ("private distributed", "non-private distributed", "centralized", "mean predictor", "party 0 alone",
                 "rmse", "r2"):
        assert name in text
    evaluation = json.loads((out / "evaluation.json").read_text())
    rows = evaluation["test"]
    assert {"rmse", "r2"} <= set(rows["private distributed"]) and {"rmse", "r2"} <= set(rows["mean predictor"])
    assert rows["non-private distributed"]["r2"] > 0.8 and abs(rows["mean predictor"]["r2"]) < 0.1
    assert all("rmse" in c for c in evaluation["privacy_utility"])
    model = load_model(out / "model.json")
    assert model.kind == "regression"
    pred = model.predict(df[["a", "b", "c"]].to_numpy())
    assert pred.shape == (len(df),) and np.all(np.isfinite(pred))
    results = json.loads((out / "results.json").read_text())
    assert abs(results["privacy"]["epsilon"] - 4) <= 4e-3
    assert any(s["step"] == "scale_target_by_public_bounds" for s in results["privacy"]["preprocessing"])


def test_fit_three_classes_one_vs_rest(tmp_path, capsys):
    path, df = _three_class_csv(tmp_path)
    out = tmp_path / "out"
    assert main(["fit", str(path), "--target", "kind", "--classes", "red,green,blue", "--agents", "3",
                 "--epsilon", "2", "--delta", "1e-5", "--rounds", "30", "--curve", "", "--evaluation",
                 "--draws", "2", "--trust", "local", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "one-vs-rest over 3 classes" in text and "majority class" in text and "±" in text
    results = json.loads((out / "results.json").read_text())
    privacy = results["privacy"]
    assert privacy["guaranteed"] and privacy["multiclass"]["budget_rule"] == "gaussian_mu2_shares"
    assert all(abs(a["guarantee_pld"] - 2) <= 2e-3 for a in privacy["per_agent"])  # all classes composed
    evaluation = json.loads((out / "evaluation.json").read_text())
    rows = evaluation["test"]
    assert rows["non-private distributed"]["accuracy"] > 0.9
    assert 0 < rows["majority class"]["accuracy"] < 0.5 and rows["majority class"]["log_loss"] > 1.0
    assert evaluation["draws"]["n"] == 2 and rows["private distributed"]["draws"] == 2
    # the spread is owner-only: named as an exposure, its numbers only in evaluation.json
    assert any("spread" in e and "2 fits together" in e for e in privacy["exposures"])
    for release in ("results.json", "model.json"):
        assert '"accuracy"' not in (out / release).read_text()
    model = load_model(out / "model.json")
    assert model.kind == "logistic_ovr" and model.classes == ["red", "green", "blue"]
    X = df[["x1", "x2"]].to_numpy()
    assert model.decision_function(X).shape == (len(df), 3)
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)
    assert set(model.predict(X)) <= {"red", "green", "blue"}


def test_vertical_fit_of_three_classes_is_a_named_error(tmp_path, capsys):
    path, _ = _three_class_csv(tmp_path, 90)
    assert main(["fit", str(path), "--target", "kind", "--classes", "red,green,blue", "--vertical", "2",
                 "--epsilon", "1", "--delta", "1e-5", "--rounds", "5", "--curve", ""]) == 2
    err = capsys.readouterr().err
    assert "vertical fits" in err and "binary" in err and "horizontal" in err


def test_secure_mode_fits_no_extra_draws_and_warnings_name_the_cause(tmp_path, capsys):
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"small": rng.normal(size=120), "big": 500 * rng.normal(size=120)})
    df["y"] = (df["small"] > 0).astype(int)
    df.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "y", "--agents", "12", "--epsilon", "1",
                 "--delta", "1e-5", "--rounds", "10", "--draws", "3", "--scale", "none", "--out", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "features unscaled: big reach" in text and "--bounds" in text
    assert "tiny parties: 12 of 12 parties" in text
    assert "±" not in text and "one draw fitted" in text
    results = json.loads((out / "results.json").read_text())
    assert not any("spread" in e for e in results["privacy"]["exposures"])
    assert not (out / "evaluation.json").exists()
    assert "features unscaled" not in (out / "results.json").read_text()  # console only


def test_the_curve_plot_has_the_party_alone_line(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from privdist.cli.fit_release import _curve_png

    rows = {"private distributed": {"rmse": 1.0}, "non-private distributed": {"rmse": 0.5},
            "centralized (pooled, non-private)": {"rmse": 0.4}, "mean predictor": {"rmse": 2.0}}
    png = _curve_png([{"epsilon": 1.0, "rmse": 1.0}, {"epsilon": 4.0, "rmse": 0.7}], "regression", rows,
                     [{"party": 0, "rmse": 0.9}, {"party": 1, "rmse": 1.1}])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
