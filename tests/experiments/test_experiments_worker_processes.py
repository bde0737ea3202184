"""Issue 26: the worker processes of ``privdist run --jobs 2`` end when the parent is killed (kill -9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def test_kill_9_of_run_jobs_2_leaves_no_worker(tmp_path):
    spec = tmp_path / "long.toml"
    spec.write_text(LONG)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    parent = subprocess.Popen([sys.executable, "-m", "privdist", "run", str(spec), "--jobs", "2", "--no-progress",
                               "--out", str(tmp_path / "out")], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline and parent.poll() is None:
            time.sleep(0.2)
            workers = _children(parent.pid)
        assert len(workers) >= 2, "the pool's workers did not start"
        time.sleep(1.0)  # the workers are inside their trials
        assert all(_alive(w) for w in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [w for w in workers if _alive(w)]
        assert not left, f"worker(s) {left} still alive 10 s after kill -9 of their parent"
    finally:
        for pid in workers + [parent.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
