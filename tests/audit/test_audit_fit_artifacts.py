"""Issue 24: what ``privdist fit`` writes as a release does not separate neighbouring datasets beyond the printed
epsilon (horizontal, natural silos, one-hot with public categories, public bounds, vertical), and what is read from
the data without DP is reported ``guaranteed: false`` (the audit then shows the leak it names).

Each configuration runs ``privdist fit`` 40 times in secure mode on a dataset ``D`` and 40 times on a neighbour
``D'`` (one record replaced; for vertical fits one cell of party 0's column block), reads ``model.json`` and
``results.json`` and runs :func:`privdist.audit.artifacts.audit_artifacts`. With 20 evaluation runs per side a
noise-free value that differs between ``D`` and ``D'`` gives a lower bound >= 1.6 (perfect separation, 95 %
Clopper-Pearson), above the printed 1.
"""

import json

import numpy as np
import pandas as pd
import pytest

from privdist._io import read_json
from privdist.audit.artifacts import audit_artifacts, read_release
from privdist.cli.main import main

RUNS = 40
RELEASE = ("model.json", "results.json")


def _frame(n=40, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    df["city"] = rng.choice(["north", "south"], n)
    df["site"] = np.repeat(["s0", "s1"], n // 2)
    df["y"] = (df["a"] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return df


def _neighbour(df):
    d1 = df.copy()
    d1.loc[0, ["a", "b", "y"]] = [2.5, -2.5, 1 - int(df.loc[0, "y"])]
    d1.loc[0, "city"] = "Zanzibar_PatientJaneDoe"
    return d1


def _runs(tmp_path, df, args, n=RUNS, drop=()):
    data, out = tmp_path / "data.csv", tmp_path / "out"
    df.drop(columns=list(drop)).to_csv(data, index=False)
    runs = []
    for _ in range(n):
        assert main(["fit", str(data), "--target", "y", "--epsilon", "1", "--delta", "1e-5", "--rounds", "5",
                     "--curve", "", "--out", str(out), *args]) == 0
        runs.append(read_release(out, RELEASE))
    report = read_json(out / "results.json")["privacy"]  # restores epsilon inf
    return runs, report


def _audit(tmp_path, args, drop=("city", "site")):
    df = _frame()
    r0, rep = _runs(tmp_path, df, args, drop=drop)
    r1, _ = _runs(tmp_path, _neighbour(df), args, drop=drop)
    return audit_artifacts(r0, r1, rep["epsilon"], 1e-5), rep


@pytest.mark.parametrize("args, drop", [
    (["--agents", "2"], ("city", "site")),
    (["--party-column", "site"], ("city",)),
    (["--agents", "2", "--bounds", "a=-3:3", "--bounds", "b=-3:3"], ("city", "site")),
], ids=["horizontal", "party-column", "public-bounds"])
def test_horizontal_release_files_are_covered(tmp_path, args, drop, capsys):
    result, rep = _audit(tmp_path, args, drop)
    assert rep["guaranteed"] and rep["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert result.verdict == "consistent" and not result.separating, result.to_dict()
    names = " ".join(rep["exposures"])
    assert "evaluation.json" in names and "console" in names  # every owner-only output named
    capsys.readouterr()


def test_onehot_with_public_categories_is_covered(tmp_path, capsys):
    """A category held by one record of D is never written: the public list fixes the columns."""
    result, rep = _audit(tmp_path, ["--agents", "2", "--onehot", "--categories", "city=north,south"], ("site",))
    assert rep["guaranteed"] and result.verdict == "consistent" and not result.separating, result.to_dict()
    capsys.readouterr()


def test_onehot_categories_from_the_data_are_not_a_guarantee(tmp_path, capsys):
    """Without public categories the rare value becomes a feature name: the report says guaranteed false (epsilon
    inf) and names the step; the audit sees the name separate D from D' perfectly."""
    result, rep = _audit(tmp_path, ["--agents", "2", "--onehot"], ("site",))
    assert not rep["guaranteed"] and rep["epsilon"] == float("inf") and rep["messages_epsilon"] <= 1.0 + 1e-3
    assert any("onehot_categories_from_data" in r for r in rep["not_guaranteed"])
    assert any("feature_names" in k for k in result.separating) and result.epsilon_lb > 1.0
    capsys.readouterr()


def test_scale_data_is_not_a_guarantee(tmp_path, capsys):
    """--scale data: the report says guaranteed false and names the step; the model file publishes a record's value
    verbatim (the outlier 25.0 of D' as the upper bound of column a whenever its row is in the training split)."""
    df = _frame()
    d1 = df.copy()
    d1.loc[0, "a"] = 25.0
    r0, rep = _runs(tmp_path, df, ["--agents", "2", "--scale", "data"], n=10, drop=("city", "site"))
    r1, _ = _runs(tmp_path, d1, ["--agents", "2", "--scale", "data"], n=10, drop=("city", "site"))
    assert not rep["guaranteed"] and rep["epsilon"] == float("inf")
    assert any("scale_by_data_min_max" in r for r in rep["not_guaranteed"])
    upper_a = "model.json/preprocessing/bounds/1/0"
    assert any(r[upper_a] == 25.0 for r in r1) and not any(r[upper_a] == 25.0 for r in r0)
    capsys.readouterr()


def test_vertical_model_file_holds_no_noise_free_block(tmp_path, capsys):
    """Column-level neighbours: one cell of party 0's block changed; the coordinator's files do not separate them
    (the blocks are in parties/party_<m>.json, owner-only)."""
    df = _frame()
    d1 = df.copy()
    d1.loc[0, "a"] = 2.5  # party 0 holds column a
    args = ["--feature-groups", "a;b"]
    r0, rep = _runs(tmp_path, df, args, drop=("city", "site"))
    r1, _ = _runs(tmp_path, d1, args, drop=("city", "site"))
    result = audit_artifacts(r0, r1, rep["epsilon"], 1e-5)
    assert rep["guaranteed"] and result.verdict == "consistent" and not result.separating, result.to_dict()
    assert any("parties/party_<m>.json" in e for e in rep["exposures"])
    model = json.loads((tmp_path / "out" / "model.json").read_text())
    assert model["coef"] is None and "clipped_rounds_per_party" not in json.dumps(model)
    capsys.readouterr()


def test_the_artifact_audit_catches_a_noise_free_model_file():
    """The planted leak of issue 24 item 1: a block written without noise separates perfectly."""
    rng = np.random.default_rng(0)
    runs0 = [{"model.json/coef/0": 0.5, "model.json/coef/1": float(rng.normal())} for _ in range(RUNS)]
    runs1 = [{"model.json/coef/0": 0.6, "model.json/coef/1": float(rng.normal())} for _ in range(RUNS)]
    result = audit_artifacts(runs0, runs1, 1.0, 1e-5)
    assert result.verdict == "refuted" and result.separating == ["model.json/coef/0"] and result.epsilon_lb > 1.5
