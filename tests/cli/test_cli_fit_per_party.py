"""``privdist fit``'s per-party evaluation (issue 39) and its tables without NaN (issue 40)."""

import json
import math

import numpy as np
import pandas as pd

from privdist.cli.main import main


def _no_nan(value, where="evaluation.json") -> list[str]:
    """Every NaN in a JSON value, by path."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _no_nan(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _no_nan(v, f"{where}[{i}]")]
    return [where] if isinstance(value, float) and math.isnan(value) else []


def _silos_csv(path, seed=0, one_class_site=False):
    rng = np.random.default_rng(seed)
    frames = []
    for k, (site, n) in enumerate([("north", 60), ("south", 80), ("east", 100), ("west", 120)]):
        x = rng.uniform(-1, 1, size=(n, 3))
        beta = np.array([1.5, -1.0, 0.5]) + rng.normal(scale=0.3, size=3)
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-3 * x @ beta))).astype(int)
        if one_class_site and site == "north":
            y[:] = 1
        df = pd.DataFrame(x, columns=["a", "b", "c"])
        df["y"], df["site"] = y, site
        frames.append(df)
    pd.concat(frames).to_csv(path, index=False)


def test_fit_writes_per_party_rows_with_party_names_and_no_nan(tmp_path, capsys):
    _silos_csv(tmp_path / "d.csv", one_class_site=True)
    out = tmp_path / "out"
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "y", "--party-column", "site", "--epsilon", "1",
                 "--delta", "1e-5", "--rounds", "5", "--curve", "", "--draws", "1", "--seed", "0",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "personalised model: at least as good as alone for" in text
    assert "global private model: at least as good as alone for" in text
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert _no_nan(evaluation) == []
    per_party = evaluation["per_party"]
    assert per_party["metric"] == "accuracy"
    assert [r["name"] for r in per_party["parties"]] == ["east", "north", "south", "west"]
    for row in per_party["parties"]:
        assert row["test_rows"] > 0 and {"alone", "global", "personal", "gain_personal"} <= set(row)
    north = per_party["parties"][1]
    assert north["alone"] == 1.0 and north["personal_strength"] == "global coefficients"  # one class: alone predicts it
    summary = per_party["summary"]["all"]
    assert summary["parties"] == 4 and 0 <= summary["personal_gains"] <= 4
    local = {r["name"]: r for r in evaluation["local_only"]}
    assert local["north"]["log_loss"] is None and "not computable" in local["north"]["note"]
    assert "nan" not in text.lower()  # the console shows n/a, never nan


def test_a_one_value_regression_target_is_a_named_error(tmp_path, capsys):
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(60, 2)), columns=["a", "b"])
    df["t"] = 2.5
    df.to_csv(tmp_path / "c.csv", index=False)
    assert main(["fit", str(tmp_path / "c.csv"), "--target", "t", "--task", "regression", "--agents", "2",
                 "--epsilon", "1", "--delta", "1e-5", "--curve", ""]) == 2
    assert "holds one value only" in capsys.readouterr().err


def test_r2_of_a_constant_test_target_is_not_computable():
    from privdist.cli.fit_cmd import _cell, _spread
    from privdist.cli.fit_common import held_out_metrics

    m = held_out_metrics("regression", np.full(5, 3.0), np.arange(5.0))
    assert m["r2"] is None and m["rmse"] > 0
    spread = _spread([m, m])
    assert spread["r2"] is None and _cell(spread, "r2") == "n/a"
