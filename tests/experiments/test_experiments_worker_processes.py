"""Issue 26: the worker processes of ``privdist run --jobs 2`` end when the parent is killed (kill -9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_until

from privdist.runtime.workers import WATCHDOG_OS_NAME

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table in /proc")

LONG = """name = "long"
trials = 4
rounds = 40000
[data]
kind = "dzoa_synthetic"
params = { samples_per_agent = 200, n_features = 50 }
[network]
kind = "dzoa5"
[[runs]]
label = "dp"
algorithm = "dpsgd"
params = { epsilon = 1.0 }
"""


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:  # field 4 of /proc/PID/stat: the parent's pid
            out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its entry waits for a reaper


def _watching(pid: int) -> bool:
    """The parent watchdog thread of worker ``pid`` runs (privdist.runtime.workers names it for the OS)."""
    for comm in Path(f"/proc/{pid}/task").glob("*/comm"):
        try:
            if comm.read_text().strip() == WATCHDOG_OS_NAME:
                return True
        except OSError:
            continue
    return False


def test_kill_9_of_run_jobs_2_leaves_no_worker(tmp_path):
    spec = tmp_path / "long.toml"
    spec.write_text(LONG)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    parent = subprocess.Popen([sys.executable, "-m", "privdist", "run", str(spec), "--jobs", "2", "--no-progress",
                               "--out", str(tmp_path / "out")], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        def pool_started():
            workers[:] = _children(parent.pid)
            return len(workers) >= 2 or parent.poll() is not None

        wait_until(pool_started, timeout=120, what="the pool's workers")
        assert len(workers) >= 2, "the pool's workers did not start"
        # each worker watches its parent once its initializer has run (its watchdog thread exists)
        wait_until(lambda: all(_watching(w) for w in workers), timeout=120, what="the workers' watchdog threads")
        assert all(_alive(w) for w in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_until(lambda: not any(_alive(w) for w in workers), timeout=60,
                   what=f"the workers {workers} to end after kill -9 of their parent")
    finally:
        for pid in workers + [parent.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
