"""``[privacy] pairwise`` (issue 29): per-pair section in results, summary, report, CLI and a figure."""

import json

import numpy as np

from privdist.cli.report_cmd import report_markdown
from privdist.experiments import parse_spec, run_experiment

SPEC = {
    "name": "pairwise_small", "trials": 2, "rounds": 6, "seed": 3,
    "data": {"kind": "dzoa_synthetic", "params": {"n_agents": 10, "samples_per_agent": 5, "n_features": 3}},
    "network": {"kind": "random_regular", "params": {"n": 10, "d": 3}},
    "problem": {"loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
    "privacy": {"delta": 1e-5, "budget": "total", "pairwise": True},
    "runs": [{"label": "dpsgd", "algorithm": "dpsgd", "params": {"alpha0": 0.3, "epsilon": 1.0}},
             {"label": "dzoa_gauss", "algorithm": "dzoa_gauss", "params": {"epsilon": 1.0, "T": 5}}],
    "plots": [{"kind": "curves", "file": "curves"}],
}


def test_pairwise_section_summary_report_and_figure(tmp_path):
    out = tmp_path / "out"
    run_experiment(parse_spec(SPEC), out, progress=False)
    data = json.loads((out / "results.json").read_text())
    dpsgd, dzoa = data["runs"]
    pw = dpsgd["privacy"]["pairwise"]
    assert pw["status"] == "model" and pw["trial"] == 0 and len(pw["epsilon"]) == 10
    eps = np.array([[np.nan if v is None else v for v in row] for row in pw["epsilon"]], dtype=float)
    local = np.array(pw["local"]["epsilon"])
    assert np.all(np.isnan(np.diag(eps)))
    off = ~np.eye(10, dtype=bool)
    assert np.all(eps[off] <= np.broadcast_to(local, eps.shape)[off] * (1 + 1e-6))
    assert np.allclose(local, [a["epsilon"]["pld"] for a in dpsgd["privacy"]["per_agent"]], rtol=1e-6)
    assert dzoa["privacy"]["pairwise"]["status"] == "not modelled"
    summary = (out / "summary.md").read_text()
    assert "## Per-pair (network) DP" in summary and "by hop distance" in summary and "not modelled" in summary
    md = report_markdown([out])
    assert "per-pair epsilon" in md and "local / pair" in md
    line = next(x for x in summary.splitlines() if "by hop distance / common neighbours:" in x)
    assert " 2 / 1: " in line and "common neighbours" in md
    assert (out / "pairwise_dpsgd.png").stat().st_size > 0 and "pairwise_dpsgd.png" in data["figures"]
    assert not (out / "pairwise_dzoa_gauss.png").exists()


def test_pairwise_is_off_by_default(tmp_path):
    spec = {**SPEC, "privacy": {"delta": 1e-5, "budget": "total"}, "runs": SPEC["runs"][:1], "trials": 1}
    data = run_experiment(parse_spec(spec), tmp_path / "o", progress=False)
    assert "pairwise" not in data["runs"][0]["privacy"]
