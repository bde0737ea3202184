"""Issue 15: results directories are locked, confined and written atomically; divergence is recorded."""

import json
import os
import socket
import subprocess
import sys

import pytest

from privdist.errors import OutputDirError, ResultsLockedError
from privdist.experiments import parse_spec, run_experiment
from privdist.experiments.store import LOCK, ResultsDir, inside

TINY = {"name": "tiny", "trials": 2, "rounds": 3, "data": {"kind": "dzoa_synthetic"}, "network": {"kind": "dzoa5"},
        "runs": [{"label": "admm", "algorithm": "consensus_admm"}], "plots": [{"kind": "curves", "file": "c"}]}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_lock_of_a_live_process_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"pid": os.getppid(), "host": socket.gethostname()}))
    with pytest.raises(ResultsLockedError, match=f"in use by privdist process {os.getppid()}"):
        run_experiment(parse_spec(TINY), out, progress=False)


def test_lock_of_another_host_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"pid": 1, "host": "elsewhere.invalid"}))
    with pytest.raises(ResultsLockedError, match="elsewhere.invalid"):
        ResultsDir(out, "tiny", {})


def test_stale_lock_of_a_dead_process_is_replaced_and_released(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"pid": _dead_pid(), "host": socket.gethostname()}))
    res = run_experiment(parse_spec(TINY), out, progress=False)
    assert res["complete"] and not (out / LOCK).exists()


def test_second_run_into_a_busy_directory_is_refused_and_the_first_is_intact(tmp_path):
    out = tmp_path / "out"
    with ResultsDir(out, "tiny", parse_spec(TINY).config()):
        other = parse_spec({**TINY, "seed": 7})
        with pytest.raises(ResultsLockedError):
            run_experiment(other, out, progress=False, overwrite=True)
        assert json.loads((out / ".privdist-experiment").read_text())["experiment"] == "tiny"
    assert not (out / LOCK).exists()


def test_output_names_cannot_leave_the_directory(tmp_path):
    for name in ("../x", "/etc/x", "a/../../x"):
        with pytest.raises(OutputDirError, match="would leave"):
            inside(tmp_path, name)


def test_uncreatable_output_directory_is_a_named_error():
    with pytest.raises(OutputDirError, match="cannot create results directory"):
        run_experiment(parse_spec(TINY), "/proc/privdist-x", progress=False)


def test_figures_written_atomically_without_leftovers(tmp_path):
    res = run_experiment(parse_spec(TINY), tmp_path / "out", progress=False)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert res["figures"] == ["c.png", "c.svg"] and not [n for n in names if "tmp" in n or n == LOCK]


def test_divergence_is_recorded_not_silent(tmp_path):
    raw = {**TINY, "trials": 1, "runs": [{"label": "dpsgd", "algorithm": "dpsgd", "params": {"alpha0": 1e200}}]}
    res = run_experiment(parse_spec(raw), tmp_path / "out", progress=False)
    assert res["errors"] and "diverged" in res["errors"][0]
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["errors"] == res["errors"] and data["runs"][0]["diverged"]
