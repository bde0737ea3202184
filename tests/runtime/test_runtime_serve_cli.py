"""``privdist serve`` end to end (issue 17): a local served cluster, two ``privdist run`` processes that find it
without ``--address`` and share its warm actors, ``--status`` and ``--stop`` (which stops the Ray processes serve
started). Slow (a Ray head start-up and three CLI processes): run with ``-m slow``."""

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_start_run_twice_status_stop(tmp_path):
    import tempfile

    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(1)
    for k in range(2):
        X = rng.standard_normal((12, 3))
        np.savez(data / f"p{k}.npz", X=X, y=X.sum(axis=1))
    spec = tmp_path / "s.toml"
    spec.write_text('name = "served"\ntrials = 1\nrounds = 5\nmetrics = ["objective"]\n[data]\nkind = "per_party"\n'
                    'params = { n_features = 3, parties = ["$SERVE_TEST_DIR/p0.npz", "$SERVE_TEST_DIR/p1.npz"] }\n'
                    '[network]\nkind = "ring"\nparams = { n = 2 }\n[problem]\nkind = "party_horizontal"\n'
                    '[[runs]]\nlabel = "admm"\nalgorithm = "consensus_admm"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "SERVE_TEST_DIR", "RAY_AUTH_MODE")}
    env["PRIVDIST_SERVE_STATE"] = str(tmp_path / "state.json")
    port = _free_port()
    cli = [sys.executable, "-m", "privdist"]
    server = subprocess.Popen(cli + ["serve", "--parties", "2", "--num-cpus", "1", "--port", str(port),
                                     "--temp-dir", tempfile.mkdtemp(prefix="pdt-")],
                              env={**env, "SERVE_TEST_DIR": str(data)}, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        line = server.stdout.readline()
        if not line.startswith("serving"):
            pytest.skip(f"privdist serve could not start a Ray head here: {line!r}")
        pids = []
        for out in ("a", "b"):  # no --address: the state file of the server names it
            done = subprocess.run(cli + ["run", str(spec), "--backend", "ray", "--out", str(tmp_path / out),
                                         "--no-progress"], env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-2000:]
            assert f"using the privdist server at 127.0.0.1:{port}" in done.stderr
            # a user's data: the run details are owner-only evaluation (issue 24), beside results.json
            (info,) = json.loads((tmp_path / out / "owner_only" / "metrics.json").read_text())["runs"][0]["info"]
            assert info["ray"]["served"] and info["metrics_where"]["objective"].startswith("at the parties")
            pids.append({n: p["pid"] for n, p in info["ray"]["placement"].items()})
        assert pids[0] == pids[1]
        status = json.loads(subprocess.run(cli + ["serve", "--status"], env=env, capture_output=True, text=True,
                                           timeout=120, check=True).stdout)
        assert status["runs"] == 2 and status["started_cluster"] is True
        stop = subprocess.run(cli + ["serve", "--stop"], env=env, capture_output=True, text=True, timeout=300)
        assert stop.returncode == 0 and "stopped the privdist server" in stop.stdout
        server.wait(timeout=120)
        assert not (tmp_path / "state.json").exists()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 15)
            server.wait(timeout=120)
    time.sleep(1)


def _kill_groups(server, head) -> None:
    """Whatever a killed-server test left: the server's and the ray start's process groups."""
    import signal

    if server.poll() is None:
        os.killpg(server.pid, signal.SIGKILL)
    if head is not None:
        try:
            os.killpg(head, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_serve_killed_is_found_and_stopped(tmp_path):
    """Issue 26: after kill -9 of privdist serve, --status reports the cluster it left and --stop ends it."""
    import signal
    import tempfile

    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env["PRIVDIST_SERVE_STATE"] = str(tmp_path / "state.json")
    cli = [sys.executable, "-m", "privdist"]
    server = subprocess.Popen(cli + ["serve", "--parties", "1", "--num-cpus", "1", "--port", str(_free_port()),
                                     "--temp-dir", tempfile.mkdtemp(prefix="pdt-")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    head = None
    try:
        line = server.stdout.readline()
        if not line.startswith("serving"):
            pytest.skip(f"privdist serve could not start a Ray head here: {line!r}")
        head = json.loads((tmp_path / "state.json").read_text())["head_pid"]
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
        status = json.loads(subprocess.run(cli + ["serve", "--status"], env=env, capture_output=True, text=True,
                                           timeout=120, check=True).stdout)
        assert status["server_alive"] is False and status["cluster_left"] is True
        stop = subprocess.run(cli + ["serve", "--stop"], env=env, capture_output=True, text=True, timeout=300)
        assert stop.returncode == 0 and "had died" in stop.stdout, stop.stderr[-2000:]
        assert not (tmp_path / "state.json").exists()
        from privdist.cli.serve_cmd import _group_alive

        assert not _group_alive(head)  # every process of the ray start process group has ended
    finally:
        _kill_groups(server, head)


def test_serve_killed_while_starting_is_found_and_stopped(tmp_path):
    """Issue 40: kill -9 of privdist serve while its Ray head is still starting; --status finds it (state
    "starting") instead of "no server found", and --stop ends what it left."""
    import signal
    import tempfile

    from conftest import wait_until

    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env["PRIVDIST_SERVE_STATE"] = str(tmp_path / "state.json")
    cli = [sys.executable, "-m", "privdist"]
    server = subprocess.Popen(cli + ["serve", "--parties", "1", "--num-cpus", "1", "--port", str(_free_port()),
                                     "--temp-dir", tempfile.mkdtemp(prefix="pdt-")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def started_head():
        try:
            state = json.loads((tmp_path / "state.json").read_text())
        except (OSError, ValueError):
            return None
        return state if state.get("head_pid") else None

    head = None
    try:
        state = wait_until(started_head, timeout=120, what="the state file naming the ray start process")
        head = state["head_pid"]
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
        status = json.loads(subprocess.run(cli + ["serve", "--status"], env=env, capture_output=True, text=True,
                                           timeout=120, check=True).stdout)
        assert status["server_alive"] is False and status["server_pid"] == server.pid
        assert status["state"] in ("starting", "serving")  # "starting" unless the head came up within the poll
        stop = subprocess.run(cli + ["serve", "--stop"], env=env, capture_output=True, text=True, timeout=300)
        assert stop.returncode == 0 and "had died" in stop.stdout, stop.stderr[-2000:]
        assert not (tmp_path / "state.json").exists()
        from privdist.cli.serve_cmd import _group_alive

        assert not _group_alive(head)
    finally:
        _kill_groups(server, head)
