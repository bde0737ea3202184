"""Issue 26: the cases of ``audit``, ``report``, ``run`` and ``serve`` the issue lists end in a named error (one
``error: ...`` line, exit 2) or in success, never in a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from privdist.cli.main import main

TINY = """name = "tiny"
trials = 2
rounds = 3
[data]
kind = "dzoa_synthetic"
[network]
kind = "dzoa5"
[[runs]]
label = "admm"
algorithm = "consensus_admm"
[[runs]]
label = "dp"
algorithm = "dpsgd"
params = { epsilon = 1.0 }
"""


def _error(argv, capsys) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, lines)
    return lines[0]


@pytest.fixture
def results(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    assert main(["run", str(spec), "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    capsys.readouterr()
    return tmp_path / "r"


# ---------------------------------------------------------------------------------------------- audit
def test_audit_param_of_the_wrong_type(capsys):
    assert "parameter epsilon must be None or float, got str 'abc'" in _error(
        ["audit", "dpsgd", "--params", "epsilon=abc"], capsys)


@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_audit_outputs_checked_before_the_releases(tmp_path, capsys, monkeypatch, option):
    import privdist.audit as audit_pkg

    monkeypatch.setattr(audit_pkg, "audit", lambda *a, **k: pytest.fail("the releases were drawn"))
    (tmp_path / "file").write_text("x")
    assert f"the directory of {option}" in _error(
        ["audit", "dpsgd", "--releases", "100", option, str(tmp_path / "file" / "x.json")], capsys)
    assert "is a directory" in _error(["audit", "dpsgd", "--releases", "100", option, str(tmp_path)], capsys)


def test_audit_huge_releases_need_yes(capsys):
    assert "pass --yes" in _error(["audit", "dpsgd", "--releases", "1000000000000"], capsys)


def test_audit_target_agent_out_of_range(capsys):
    assert "--target-agent must be in 0..1" in _error(["audit", "dpsgd", "--target-agent", "5"], capsys)


# ---------------------------------------------------------------------------------------------- report
def test_report_epsilon_nan_is_named(results, capsys):
    data = json.loads((results / "results.json").read_text())
    data["runs"][1]["privacy"]["per_agent"][0]["epsilon"]["pld"] = "nan"
    (results / "results.json").write_text(json.dumps(data))
    err = _error(["report", str(results)], capsys)
    assert "runs[1].privacy.per_agent[0].epsilon.pld" in err and "'nan'" in err


def test_report_of_a_diverged_run_shows_nan(tmp_path, capsys):
    spec = tmp_path / "div.toml"
    spec.write_text(TINY.replace("trials = 2", "trials = 1").replace("{ epsilon = 1.0 }",
                                                                     "{ epsilon = 1.0, alpha0 = 1e200 }"))
    assert main(["run", str(spec), "--out", str(tmp_path / "d"), "--no-progress"]) == 2  # diverged, recorded
    capsys.readouterr()
    assert main(["report", str(tmp_path / "d")]) == 0
    assert "| dp | nan ± nan |" in capsys.readouterr().out


def test_report_of_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert "is not a directory" in _error(["report", str(tmp_path / "f")], capsys)


# ---------------------------------------------------------------------------------------------- run messages
def test_delta_zero_is_not_asked_for_an_integer(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(TINY.replace("rounds = 3", "rounds = 3\n[privacy]\ndelta = 0"))
    err = _error(["run", str(spec), "--out", str(tmp_path / "o")], capsys)
    assert "[privacy].delta must be >= 1e-12, got 0" in err and "integer" not in err


def test_one_agent_lasso_runs(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "one"\ntrials = 1\nrounds = 3\n[data]\nkind = "dzoa_synthetic"\n'
                    'params = { n_agents = 1, samples_per_agent = 5 }\n[network]\nkind = "complete"\n'
                    'params = { n = 1 }\n[problem]\nregularizer = "l1"\n[[runs]]\nlabel = "a"\n'
                    'algorithm = "consensus_admm"\n')
    assert main(["run", str(spec), "--out", str(tmp_path / "o"), "--no-progress"]) == 0


def test_zero_reference_solution_is_named(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(TINY.replace("rounds = 3", 'rounds = 3\n[problem]\nregularizer = "l1"\nreg_weight = 1e6'))
    err = _error(["run", str(spec), "--out", str(tmp_path / "o"), "--no-progress"], capsys)
    assert "the reference solution is 0" in err and "objective_gap" in err


def test_resume_says_what_differs(results, capsys):
    spec = results.parent / "tiny.toml"
    err = _error(["run", str(spec), "--out", str(results), "--resume", "--trials", "3", "--no-progress"], capsys)
    assert "trials: 2 there, 3 now" in err


def test_garbage_lock_file(results, capsys):
    (results / ".privdist-lock").write_text("garbage")
    err = _error(["run", str(results.parent / "tiny.toml"), "--out", str(results), "--no-progress"], capsys)
    assert "cannot read" in err and "None" not in err


def test_no_numpy_reprs_in_messages():
    import numpy as np

    from privdist.algorithms import make_algorithm
    from privdist.errors import PrivdistError
    from privdist.learn import DistributedLogisticRegression

    for call in (lambda: make_algorithm("dpsgd", clip=np.float64(1.0)),
                 lambda: DistributedLogisticRegression(epsilon=np.float64(-1.0)).fit(np.ones((4, 1)), [0, 1, 0, 1]),
                 lambda: DistributedLogisticRegression(n_agents=np.int64(0)).fit(np.ones((4, 1)), [0, 1, 0, 1])):
        with pytest.raises(PrivdistError) as info:
            call()
        assert "np." not in str(info.value), str(info.value)


# ---------------------------------------------------------------------------------------------- serve
def _running(pid: int) -> bool:
    """The process exists and has not ended (a zombie waiting to be reaped has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False



@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to recognise the left-over process")
def test_serve_stop_finds_what_a_killed_server_left(tmp_path, monkeypatch, capsys):
    """A killed server's state file names its address and its ``ray start`` process group; ``--status`` says what
    is left and ``--stop`` ends it (here a stand-in process with the server's temporary directory on its command
    line; the Ray end to end is the slow test of test_runtime_serve_cli)."""
    temp_dir = str(tmp_path / "privdist-serve-x")
    # the stand-in is started by a process that exits at once, so that (like a killed server's ray start) it is
    # nobody's child here and is reaped by init when it ends; it waits for a signal (no time limit to outlast)
    launcher = subprocess.run([sys.executable, "-c", "import subprocess, sys; print(subprocess.Popen([sys.executable, "
                               "'-c', 'import signal; signal.pause()', '--temp-dir', sys.argv[1]], "
                               "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)", temp_dir],
                              capture_output=True, text=True, check=True)
    head = int(launcher.stdout)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state = tmp_path / "serve.json"
    state.write_text(json.dumps({"address": "127.0.0.1:1", "pid": dead.pid, "temp_dir": temp_dir,
                                 "head_pid": head}))
    monkeypatch.setenv("PRIVDIST_SERVE_STATE", str(state))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        assert main(["serve", "--status"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["server_alive"] is False and status["cluster_left"] is True
        assert main(["serve", "--stop"]) == 0
        assert "had died; stopped the Ray processes it left" in capsys.readouterr().out
        assert not _running(head)
        assert not state.exists()
    finally:
        try:
            os.killpg(head, 9)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("extra,text", [(["--port", "0"], "--port must be from 1 to 65535"),
                                        (["--port", "70000"], "--port must be from 1 to 65535"),
                                        (["--num-cpus", "0"], "--num-cpus must be >= 1")])
def test_serve_options_checked_before_ray_starts(tmp_path, monkeypatch, capsys, extra, text):
    monkeypatch.setenv("PRIVDIST_SERVE_STATE", str(tmp_path / "serve.json"))
    assert text in _error(["serve", "--parties", "2", *extra], capsys)
