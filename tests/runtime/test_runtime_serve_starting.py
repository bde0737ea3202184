"""Issue 40: a ``privdist serve`` killed while still starting left Ray processes that ``--status`` did not see ("no
server found"). The state file is now written before the first Ray process, with ``"state": "starting"``.

No real Ray here: ``ray start --head`` is replaced by a stand-in process that blocks (in ``select``) with the
server's temporary directory on its command line, as the real one has; the kill is simulated by a start-up that never
returns (the head never answers) in a server whose pid is a process that has ended, and no ``finally`` clean-up (a
``kill -9`` runs none).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import types

import pytest

from privdist.cli import serve_cmd

BLOCK = "import select; select.select([], [], [])"


class _Killed(BaseException):
    """Stands for the SIGKILL that ends the server in the middle of its start-up."""


def _args(**kw):
    base = dict(address=None, parties=1, resources=None, num_cpus=1, port=6391, temp_dir=None, no_prewarm=True,
                stop=False, force=False, status=False)
    return types.SimpleNamespace(**{**base, **kw})


@pytest.fixture()
def state(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    monkeypatch.setenv("PRIVDIST_SERVE_STATE", str(path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return path


@pytest.fixture()
def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_server_killed_while_starting_is_found_by_status_and_stopped(state, monkeypatch, dead_pid, capsys):
    import shutil
    import tempfile

    short_dir = tempfile.mkdtemp(prefix="pdt-")  # Ray's limit on --temp-dir: 45 characters
    started = []
    real_popen = subprocess.Popen

    def fake_popen(cmd, **kw):  # the "ray start --head" stand-in, a process group of its own like the real one
        assert state.is_file() and json.loads(state.read_text())["state"] == "starting"  # written BEFORE Ray
        temp_dir = cmd[cmd.index("--temp-dir") + 1]
        started.append(real_popen([sys.executable, "-c", BLOCK, temp_dir], start_new_session=True))
        return started[-1]

    def killed(*a, **kw):
        raise _Killed

    monkeypatch.setattr(serve_cmd.subprocess, "Popen", fake_popen)
    monkeypatch.setattr(serve_cmd, "_wait_for_head", killed)
    monkeypatch.setattr(serve_cmd, "_shutdown", lambda *a: None)  # kill -9: no clean-up runs
    monkeypatch.setattr(serve_cmd.os, "getpid", lambda: dead_pid)  # the server's process: ended
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(_Killed):
            serve_cmd._serve_local(_args(temp_dir=short_dir))
    finally:
        signal.signal(signal.SIGTERM, previous)
    monkeypatch.undo()
    monkeypatch.setenv("PRIVDIST_SERVE_STATE", str(state))
    head = started[0]
    try:
        recorded = json.loads(state.read_text())
        assert recorded["state"] == "starting" and recorded["head_pid"] == head.pid
        assert serve_cmd.served_address() is None  # nothing for privdist run to connect to
        assert serve_cmd._main(_args(status=True)) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["server_alive"] is False and status["cluster_left"] is True and status["state"] == "starting"
        assert "died while starting" in status["note"]
        assert serve_cmd._main(_args(stop=True)) == 0
        assert "had died" in capsys.readouterr().out
        assert head.wait(timeout=60) == -signal.SIGTERM and not state.exists()
    finally:
        if head.poll() is None:
            head.kill()
            head.wait()
        shutil.rmtree(short_dir, ignore_errors=True)


def test_a_live_server_still_starting_is_reported_not_missing(state, capsys, monkeypatch):
    import os

    state.write_text(json.dumps({"address": "127.0.0.1:6391", "pid": os.getpid(), "temp_dir": "/nonexistent",
                                 "state": "starting", "head_pid": None}))
    assert serve_cmd.served_address() is None
    assert serve_cmd._main(_args(status=True)) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["state"] == "starting" and status["server_alive"] is True
    sent = []
    monkeypatch.setattr(serve_cmd.os, "kill", lambda pid, sig: sig and sent.append((pid, sig)))  # 0: alive?
    assert serve_cmd._main(_args(stop=True)) == 0
    assert sent == [(os.getpid(), signal.SIGTERM)] and "asked the starting privdist server" in capsys.readouterr().out


def test_wait_for_head_gives_up_when_asked_to_stop():
    class _Head:
        def poll(self):
            return None

    with pytest.raises(KeyboardInterrupt):
        serve_cmd._wait_for_head(_Head(), "127.0.0.1:1", stop=[1])
