"""benchmarks/bench_utility.py: its core on a tiny synthetic case, the markdown table and the page block (the block of
docs/benchmarks.md; tests/docs checks the committed page against benchmarks/results/utility.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_utility.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_utility", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows(bench):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) * np.array([1.0, 10.0, 0.1, 100.0])
    y = (X[:, 0] + X[:, 1] / 10 > 0).astype(int)
    cls = dict(name="tiny classification", Xtr=X[:480], ytr=y[:480], groups=np.arange(480) % 3, Xte=X[480:],
               yte=y[480:])
    t = X @ np.array([1.0, 0.1, 10.0, 0.01]) + 50
    reg = dict(name="tiny regression", Xtr=X[:480], ytr=t[:480], groups=np.arange(480) % 2, Xte=X[480:],
               yte=t[480:], task="regression")
    return [bench.run_case(cls, draws=1), bench.run_case(reg, draws=1)]


def test_core_row(rows):
    c, r = rows
    assert c["parties"] == 3 and c["party_sizes"] == [160, 160, 160] and c["draws"] == 1
    for key in ("private_mean", "non_private", "pooled", "local_mean", "baseline"):
        assert 0.0 <= c[key] <= 1.0
    assert c["local_min"] <= c["local_mean"] <= c["local_max"] and c["local_parties_scored"] == 3
    assert r["metric"] == "rmse" and r["baseline_kind"] == "mean predictor" and r["non_private"] > 0
    assert abs(c["guarantee_epsilon"] - 1.0) < 1e-6 and c["seconds"] >= 0


def test_table_and_page_block(bench, rows):
    md = bench.markdown_table(rows)
    lines = md.strip().splitlines()
    assert lines[0].startswith("| data, parties | private (epsilon 1) |") and "diffprivlib" not in lines[0]
    assert len(lines) == 4 and lines[2].startswith("| tiny classification | ")
    rows2 = [dict(rows[0], diffprivlib=[0.5]), rows[1]]
    assert "diffprivlib pooled" in bench.markdown_table(rows2).splitlines()[0]
    assert "n/a" in bench.markdown_table(rows2).splitlines()[3]
    readme = f"# T\n\nabove\n{bench.START}\nold table\n{bench.END}\nbelow\n"
    new = bench.replace_block(readme, md)
    assert "old table" not in new and md.strip() in new and new.startswith("# T\n\nabove\n")
    assert new.endswith(f"{bench.END}\nbelow\n")
    assert bench.replace_block(new, md) == new  # idempotent
    with pytest.raises(ValueError, match="markers"):
        bench.replace_block("no markers here", md)


def test_below_flags(bench, rows):
    bad = dict(rows[0], private_mean=rows[0]["baseline"] - 0.1, diffprivlib=[1.0])
    flags = bench.below([bad])
    assert any("majority class" in f for f in flags) and any("diffprivlib" in f for f in flags)


def test_readme_summary(bench, rows):
    rows2 = [dict(rows[0], diffprivlib=[0.5, 0.7]), rows[1]]
    lines = bench.compact_table(rows2).strip().splitlines()
    assert lines[0].startswith("| data | private (epsilon 1) |") and len(lines) == 4
    c, r = rows
    assert lines[2].split(" | ")[4] == f"{c['local_max']:.3f}" and lines[2].endswith("| 0.600 |")
    assert lines[3].split(" | ")[4] == bench._fmt(r["local_min"], "regression") and lines[3].endswith("| n/a |")
    assert bench._fmt(0.0213, "regression") == "0.021" and bench._fmt(72.345, "regression") == "72.3"
    readme = f"x\n{bench.README_START}\nold\n{bench.README_END}\n"
    assert "old" not in bench.replace_block(readme, lines[0], bench.README_START, bench.README_END)


def test_case_selection_and_algorithm_comparison(bench):
    """Issue 39: ``--cases`` keeps the cases whose names contain a substring; ``--algorithms`` specs parse into a
    name and its parameters (``rounds`` goes to the estimator) and fill a second table."""
    cases = [{"name": "Adult, 10 parties"}, {"name": "diabetes, 5 parties"}]
    assert [c["name"] for c in bench.select_cases(cases, ["DIAB"])] == ["diabetes, 5 parties"]
    assert len(bench.select_cases([{"name": "a"}, {"name": "b"}], [])) == 2
    assert bench.parse_algorithm("ssp:lambda_rule=floor,gram_uses=4") == ("ssp", {"lambda_rule": "floor",
                                                                                  "gram_uses": 4})
    assert bench.parse_algorithm("dpmm") == ("dpmm", {})
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    t = X @ np.array([1.0, 2.0, -1.0]) + 10
    case = dict(name="tiny", Xtr=X[:240], ytr=t[:240], groups=np.arange(240) % 2, Xte=X[240:], yte=t[240:],
                task="regression")
    row = bench.run_case(case, draws=1, algorithms=["ssp", "dpmm:rounds=3"])
    assert set(row["by_algorithm"]) == {"ssp", "dpmm:rounds=3"} and len(row["by_algorithm"]["ssp"]["values"]) == 1
    lines = bench.algorithm_table([row], ["ssp", "dpmm:rounds=3"]).strip().splitlines()
    assert lines[0].endswith("| ssp private | dpmm:rounds=3 private |") and lines[2].startswith("| tiny | ")
