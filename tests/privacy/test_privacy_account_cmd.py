"""``privdist account``: JSON output against dp-accounting computed here, Laplace, calibration, errors."""

import importlib.util
import json
import math
from pathlib import Path

import pytest
from dp_accounting import dp_event as de
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from privdist.cli.main import main
from privdist.privacy import agent_epsilon, mechanism_release


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_gaussian_json_equals_dp_accounting(capsys):
    out = _json(capsys, ["account", "--mechanism", "gaussian", "--noise-multiplier", "5", "--count", "100",
                         "--delta", "1e-5", "--json"])
    ev = de.SelfComposedDpEvent(de.GaussianDpEvent(5.0), 100)
    assert out["epsilon"]["rdp"] == pytest.approx(RdpAccountant().compose(ev).get_epsilon(1e-5), abs=1e-3)
    assert out["epsilon"]["pld"] == pytest.approx(PLDAccountant().compose(ev).get_epsilon(1e-5), abs=1e-3)
    # auto = moments: eps_bar = sqrt(2 M log(1/delta)) / Z
    assert out["epsilon"]["paper"] == pytest.approx(math.sqrt(200 * math.log(1e5)) / 5)
    assert {k: out[k] for k in ("mechanism", "noise_multiplier", "count", "delta", "paper_formula")} == {
        "mechanism": "gaussian", "noise_multiplier": 5.0, "count": 100, "delta": 1e-5, "paper_formula": "moments"}


def test_paper_formulas(capsys):
    base = ["account", "--noise-multiplier", "5", "--count", "200", "--delta", "1e-3", "--json"]
    dzoa = _json(capsys, [*base, "--paper-formula", "dzoa"])
    eps1 = math.sqrt(2.1 * math.log(1250)) / 5
    assert dzoa["epsilon"]["paper"] == pytest.approx(eps1 * math.sqrt(200 * math.log(1e3) / (1.05 * math.log(1250))))
    adv = _json(capsys, [*base, "--paper-formula", "advanced", "--delta-prime", "0.01"])
    eps1 = math.sqrt(2 * math.log(1250)) / 5
    assert adv["epsilon"]["paper"] == pytest.approx(math.sqrt(400 * math.log(100)) * eps1 + 200 * eps1 * math.expm1(eps1))
    assert adv["paper_delta"] == pytest.approx(200 * 1e-3 + 0.01)


def test_laplace_json(capsys):
    out = _json(capsys, ["account", "--mechanism", "laplace", "--noise-multiplier", "10", "--count", "100",
                         "--delta", "1e-5", "--json"])
    assert out["paper_formula"] == "basic"
    assert out["epsilon"]["paper"] == pytest.approx(100 / 10)
    assert out["epsilon"]["rdp"] <= 10 and out["epsilon"]["pld"] <= 10
    moments = _json(capsys, ["account", "--mechanism", "laplace", "--noise-multiplier", "10", "--count", "100",
                             "--delta", "1e-5", "--json", "--paper-formula", "moments"])
    assert moments["epsilon"]["paper"] is None and moments["paper_note"]


def test_calibrate_json(capsys):
    out = _json(capsys, ["account", "--calibrate", "--target-epsilon", "1", "--delta", "1e-5", "--count", "100",
                         "--json"])
    for name, z in out["noise_multiplier"].items():
        entries = [(mechanism_release("gaussian", z, 1e-5, "moments"), 100)]
        assert agent_epsilon(entries, 1e-5, name) <= 1.0
        entries = [(mechanism_release("gaussian", 0.99 * z, 1e-5, "moments"), 100)]
        assert agent_epsilon(entries, 1e-5, name) > 1.0


def test_table_output(capsys):
    assert main(["account", "--noise-multiplier", "5", "--count", "100", "--delta", "1e-5"]) == 0
    text = capsys.readouterr().out
    assert "paper (moments)" in text and "rdp" in text and "pld" in text and "9.99726" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["account", "--count", "10", "--delta", "1e-5"], "--noise-multiplier is required"),
        (["account", "--noise-multiplier", "-1", "--count", "10", "--delta", "1e-5"], "--noise-multiplier must be > 0"),
        (["account", "--noise-multiplier", "1", "--count", "10", "--delta", "2"], "--delta must be in (0, 1)"),
        (["account", "--calibrate", "--count", "10", "--delta", "1e-5"], "--target-epsilon is required"),
        (["account", "--calibrate", "--target-epsilon", "0", "--count", "10", "--delta", "1e-5"], "must be > 0"),
    ],
)
def test_errors_exit_2(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_benchmark_runs():  # its timings are the accountant benchmark's output, not asserted here (issue 37)
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_accountant.py"
    spec = importlib.util.spec_from_file_location("bench_accountant", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = bench.run_benchmark()
    assert out["name"] == "accountant" and out["agents"] == 1000 and out["rounds"] == 1000
    assert out["record_seconds"] >= 0 and out["report_seconds"] >= 0
