"""``privdist fit --algorithm ssp`` (issue 39): the one-shot sufficient statistics run from the command line, spend
the requested total and write the plan they ran; a decentralized network is refused (ssp has a coordinator)."""

import json

import numpy as np
import pandas as pd

from privdist.cli.main import main


def _csv(tmp_path, n=900):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) / 2
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["r"] = X @ np.array([2.0, -1.0, 0.5]) + 0.3 * rng.normal(size=n)
    df.to_csv(tmp_path / "d.csv", index=False)
    return str(tmp_path / "d.csv")


def test_fit_with_ssp_spends_the_total_and_records_its_plan(tmp_path):
    out = tmp_path / "out"
    assert main(["fit", _csv(tmp_path), "--target", "r", "--agents", "4", "--algorithm", "ssp", "--epsilon", "1",
                 "--delta", "1e-5", "--seed", "0", "--draws", "1", "--curve", "1", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["plan"]["algorithm"] == "ssp" and results["plan"]["rounds"] == 2
    assert results["plan"]["trust"] == "secure_aggregation"
    privacy = results["privacy"]
    assert privacy["guaranteed"] and all(a["guarantee_rdp"] <= 1.0 + 1e-9 for a in privacy["per_agent"])


def test_ssp_takes_no_network(tmp_path, capsys):
    assert main(["fit", _csv(tmp_path, 200), "--target", "r", "--algorithm", "ssp", "--network", "ring",
                 "--epsilon", "1", "--delta", "1e-5"]) == 2
    assert "ssp gathers" in capsys.readouterr().err
