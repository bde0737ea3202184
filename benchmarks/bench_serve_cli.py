"""Benchmark ``serve_cli``: ``privdist run`` wall times from the command line on a cluster kept warm by
``privdist serve`` (issue 17), 8 parties.

``privdist serve --parties 8`` starts a one-node Ray head on this machine (private ``--temp-dir`` and ``--port``)
offering ``party_0..party_7`` and ``coordinator``; the parties' data directory is known only in the server's
environment (``$PRIVDIST_BENCH_SERVE_DIR``), so every party loads its data in its own actor. Each ``privdist run``
is a new process (Python start-up, imports, connecting to the cluster, the run, writing results and plots):

* ``serve_ready_s``: from ``privdist serve`` to its "serving" line (Ray head start-up; with prewarm also one warm
  actor per party resource);
* ``run1_s``, ``run2_s``, ``run3_s``: three ``privdist run SPEC --backend ray`` one after the other; with
  ``--no-prewarm`` the first run starts the party actors itself (the cost a warm server saves);
* ``run*_inner_s``: the run's own seconds recorded in results.json (placement, actors, data, rounds).

Spec: consensus ADMM, ridge problem (P = 10, 20 samples per party), ring of 8, ``rounds`` rounds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

K, P, N = 8, 10, 20
ENV = "PRIVDIST_BENCH_SERVE_DIR"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spec(root: str, rounds: int) -> str:
    parties = ", ".join(f'"${ENV}/p{k}.npz"' for k in range(K))
    text = (f'name = "bench_serve"\ntrials = 1\nrounds = {rounds}\nseed = 0\nmetrics = ["disagreement"]\n'
            f'[data]\nkind = "per_party"\nparams = {{ n_features = {P}, parties = [{parties}] }}\n'
            f'[network]\nkind = "ring"\nparams = {{ n = {K} }}\n'
            '[problem]\nkind = "party_horizontal"\nloss = "squared"\nregularizer = "l2"\nreg_weight = 1.0\n'
            '[[runs]]\nlabel = "admm"\nalgorithm = "consensus_admm"\nparams = { rho = 1.0 }\n')
    path = os.path.join(root, "spec.toml")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def _scenario(root: str, prewarm: bool, rounds: int, env: dict) -> dict:
    data = os.path.join(root, "data")
    port, tag = _free_port(), "prewarm" if prewarm else "no_prewarm"
    serve_env = {**env, ENV: data, "PRIVDIST_SERVE_STATE": os.path.join(root, f"state_{tag}.json")}
    cmd = [sys.executable, "-m", "privdist", "serve", "--parties", str(K), "--num-cpus", "2", "--port", str(port),
           "--temp-dir", tempfile.mkdtemp(prefix="pd-")]  # short: Ray's socket paths + ([] if prewarm else ["--no-prewarm"])
    t0 = time.perf_counter()
    server = subprocess.Popen(cmd, env=serve_env, stdout=subprocess.PIPE, stderr=open(os.path.join(root, f"serve_{tag}.err"), "w"), text=True,
                              start_new_session=True)
    out = {}
    try:
        line = ""
        while not line.startswith("serving"):
            line = server.stdout.readline()
            if not line and server.poll() is not None:
                raise RuntimeError("privdist serve exited before serving: "
                                   + open(os.path.join(root, f"serve_{tag}.err")).read()[-800:])
        out[f"serve_ready_s_{tag}"] = time.perf_counter() - t0
        spec = _spec(root, rounds)
        for i in (1, 2, 3):
            res = os.path.join(root, f"out_{tag}_{i}")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "privdist", "run", spec, "--backend", "ray", "--address",
                            f"127.0.0.1:{port}", "--out", res, "--no-progress"], env=env, check=True,
                           capture_output=True, timeout=600)
            out[f"run{i}_s_{tag}"] = time.perf_counter() - t0
            (run,) = json.load(open(os.path.join(res, "results.json")))["runs"]
            out[f"run{i}_inner_s_{tag}"] = run["seconds"]
            assert run["info"][0]["ray"]["served"] is True
        subprocess.run([sys.executable, "-m", "privdist", "serve", "--stop", "--address", f"127.0.0.1:{port}"],
                       env=serve_env, check=True, capture_output=True, timeout=300)
        server.wait(timeout=120)
    finally:
        if server.poll() is None:  # only the server this benchmark started (its own process group)
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=120)
    return out


def run_benchmark(rounds: int = 50) -> dict:
    root = tempfile.mkdtemp(prefix="privdist-bench-serve-")
    os.makedirs(os.path.join(root, "data"))
    rng = np.random.default_rng(0)
    omega = rng.standard_normal(P)
    for k in range(K):
        X = rng.standard_normal((N, P)) / np.sqrt(P)
        np.savez(os.path.join(root, "data", f"p{k}.npz"), X=X, y=X @ omega + 0.1 * rng.standard_normal(N))
    env = {k: v for k, v in os.environ.items() if k not in (ENV, "RAY_ADDRESS")}
    out = {"parties": K, "rounds": rounds}
    try:
        for prewarm in (False, True):
            out.update(_scenario(root, prewarm, rounds, env))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


if __name__ == "__main__":
    print(json.dumps(run_benchmark(), indent=1))
