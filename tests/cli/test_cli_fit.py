"""``privdist fit`` on a CSV a user writes (issue 16 'done when')."""

import json

import numpy as np
import pandas as pd

from privdist.cli.main import main
from privdist.learn import load_model


def test_fit_csv_prints_requested_total_budget(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 3)) / 2
    df = pd.DataFrame(X, columns=["age", "income", "score"])
    df["city"] = rng.choice(["x", "y"], n)
    df["bought"] = np.where(X @ np.array([2.0, -1.0, 0.5]) > 0, "yes", "no")
    df.to_csv(tmp_path / "mine.csv", index=False)
    out = tmp_path / "out"
    rc = main(["fit", str(tmp_path / "mine.csv"), "--target", "bought", "--onehot", "--agents", "3",
               "--categories", "city=x,y", "--classes", "no,yes", "--evaluation",
               "--epsilon", "0.8", "--delta", "1e-5", "--rounds", "20", "--curve", "0.8,4", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "guarantee epsilon = 0.8000 (Skellam RDP" in text
    for name in ("private distributed", "non-private distributed", "centralized", "party 0 alone", "majority"):
        assert name in text
    results = json.loads((out / "results.json").read_text())
    assert all(abs(a["guarantee_pld"] - 0.8) <= 1e-3 * 0.8 for a in results["privacy"]["per_agent"])
    assert results["privacy"]["guaranteed"] and results["privacy"]["noise"]["mode"] == "secure"
    assert (out / "privacy_utility.png").stat().st_size > 0
    model = load_model(out / "model.json")
    assert model.classes == ["no", "yes"]
    pred = model.predict(pd.get_dummies(df.drop(columns="bought"), dtype=float).to_numpy())
    assert np.mean(pred == df["bought"].to_numpy()) > 0.6


def test_fit_bad_target_is_a_named_error(tmp_path, capsys):
    pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}).to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "nope", "--epsilon", "1", "--delta", "1e-5"]) == 2
    assert "'nope' is not a column" in capsys.readouterr().err


def test_fit_on_the_shipped_adult_data_beats_the_majority_class(tmp_path, capsys):
    """make demo's job, shortened: the Adult files shipped in privdist, 10 parties, total epsilon 1."""
    out = tmp_path / "demo"
    assert main(["fit", "adult", "--agents", "10", "--epsilon", "1", "--delta", "1e-5", "--rounds", "30",
                 "--curve", "1", "--seed", "0", "--out", str(out)]) == 0
    assert "guarantee epsilon = 1.0000 (Skellam RDP" in capsys.readouterr().out
    rows = json.loads((out / "evaluation.json").read_text())["test"]
    assert rows["private distributed"]["accuracy"] > rows["majority class"]["accuracy"] + 0.03


def test_a_party_too_small_for_a_train_test_split_is_a_named_error(tmp_path, capsys):
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(41, 2)), columns=["a", "b"])
    df["y"] = (df["a"] > 0).astype(int)
    df["site"] = ["s0"] * 20 + ["s1"] * 20 + ["s2"]  # s2 holds one row
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "y", "--party-column", "site", "--epsilon", "1",
                 "--delta", "1e-5", "--rounds", "5", "--curve", ""]) == 2
    assert "fewer than 2 rows" in capsys.readouterr().err


def test_fit_on_a_numeric_target_completes(tmp_path, capsys):
    """A regression target used to end in a traceback after training (DistributedRidge has no decision_function);
    it fits and reports the RMSE and R^2."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    df["t"] = df["a"] - 0.5 * df["b"] + 0.1 * rng.normal(size=120)
    df.to_csv(tmp_path / "r.csv", index=False)
    out = tmp_path / "out"
    assert main(["fit", str(tmp_path / "r.csv"), "--target", "t", "--agents", "2", "--epsilon", "1", "--delta",
                 "1e-5", "--rounds", "10", "--curve", "1,2", "--seed", "0", "--out", str(out)]) == 0
    rows = json.loads((out / "evaluation.json").read_text())
    assert {"rmse", "r2"} <= set(rows["test"]["private distributed"]) and len(rows["privacy_utility"]) == 2
    capsys.readouterr()
