"""Benchmark ``remote``: a job across organisations on one machine (issue 38), K = 10 and 50 party processes.

**Data.** The shipped UCI Adult (``privdist.data.adult.load_adult_public``: its 105 numeric columns, the 6 numeric
attributes and 99 one-hot columns of the public category lists; adult.data trains, adult.test scores). Public bounds
of every column, as ``privdist fit adult`` has them: the documented ranges of the 6 numeric attributes
(``extras["public_bounds"]``, e.g. age 17-90, fnlwgt 0-1,500,000) and [0, 1] for every one-hot column; the job maps
each column into [-1, 1] with them (``scale="bounds"``; nothing is estimated, nothing spent on ranges). The 30,162
training rows are split at random over K parties (``make_groups("random")``, a fixed seed), each party's rows
written to its own CSV (the 105 columns and the label ``<=50K`` / ``>50K``).

**(a) Over processes.** Certificates made here (:mod:`privdist.runtime.remote.pki`: a consortium CA, the
coordinator's and every party's key, signed), then one ``privdist coordinate`` process and K ``privdist party``
processes on 127.0.0.1, gRPC with mutual TLS: dpmm, secure aggregation (``trust=auto``), total epsilon 1, delta 1e-5
per party, research mode ``--seed`` (every party's policy file says ``seeded_allowed = true``), each party with a
fresh lifetime ledger and ``--no-personal`` (the job alone: each party's personal model comes after it, and ten of
them fitting at once on two cores measure the machine, not the job). Measured from this script: the coordinator's
start-up (launch to its port file), the parties' start-up (their launch to the last party's ``dialling`` line,
printed just before it connects: Python, imports, its files and ledger checked), the job's wall time (the
coordinator's launch to the last process's exit); from the coordinator's ``results.json`` (``remote.timings``,
:func:`privdist.run`'s clock in the coordinator): ``init`` (the parties' ``init`` calls and the secure-aggregation
key setup) and ``rounds`` (every round, the close calls included) and their mean per round; each process's exit and
peak RSS (polled every 0.2 s: :class:`_Watch`).

**(b) Simulator.** :class:`privdist.learn.DistributedLogisticRegression` with the same split (``groups``), bounds,
epsilon, delta and ``random_state`` = the seed, in this process, fitted ``REPEATS`` times: the fit's wall time, and
:func:`privdist.run`'s timings of its training run (caught by wrapping ``privdist.runtime.run``; the estimator
evaluates its training objective after every round, which the coordinator, holding no data, does not).

Both models are scored on adult.test; the same seed gives the same transcript, so the coefficients are compared
too. Run: ``python benchmarks/bench_remote.py [--sizes 10,50] [--trust local]`` or ``python benchmarks/run.py
remote``; writes ``benchmarks/results/remote.json`` (the full sizes and the default trust only; ``--trust local``
runs the same job with plain rounds, what the secure rounds are compared against). Not part of the test suite.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "remote.json"
SIZES = (10, 50)
SEED, SPLIT_SEED, EPSILON, DELTA, REPEATS = 38, 2038, 1.0, 1e-5, 2
CLASSES = ("<=50K", ">50K")
TIMEOUT = 900.0


def _adult():
    """Adult's numeric design, its train/test split and the public bounds of every column ``{name: (lo, hi)}``."""
    from privdist.cli.fit_cmd import _onehot_bounds
    from privdist.data.adult import load_adult_public

    ds = load_adult_public()
    X = np.asarray(ds.X, dtype=float)
    names = list(ds.feature_names)
    bounds = {**{k: tuple(map(float, v)) for k, v in _onehot_bounds(ds).items()},
              **{k: tuple(map(float, v)) for k, v in ds.extras["public_bounds"].items()}}
    assert set(bounds) == set(names), "every column needs a public bound"
    label = np.where(np.asarray(ds.y) > 0, CLASSES[1], CLASSES[0])
    n = ds.extras["n_train"]
    return names, bounds, X[:n], label[:n], X[n:], label[n:]


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "privdist", *map(str, args)]


def _pki(d: Path, K: int) -> None:
    from privdist.runtime.remote.pki import rehearsal_consortium

    rehearsal_consortium(d, [f"party{k}" for k in range(K)])


def _write_parties(d: Path, names, Xtr, ytr, groups, K: int) -> list[int]:
    import pandas as pd

    rows = []
    for k in range(K):
        df = pd.DataFrame(Xtr[groups == k], columns=names)
        df["label"] = ytr[groups == k]
        df.to_csv(d / f"party{k}.csv", index=False)
        rows.append(len(df))
    return rows


class _Lines(threading.Thread):
    """Reads a process's pipe; keeps its lines and the clock when the first line containing ``mark`` came."""

    def __init__(self, pipe, mark: str | None = None):
        super().__init__(daemon=True)
        self.pipe, self.mark, self.lines, self.when = pipe, mark, [], None

    def run(self):
        for line in self.pipe:
            self.lines.append(line)
            if self.mark and self.when is None and self.mark in line:
                self.when = time.perf_counter()


class _Watch(threading.Thread):
    """Every ``interval`` seconds: each live child's peak RSS (``VmHWM`` of ``/proc/PID/status``: the peak of its own
    address space since its ``exec``; ``wait4``'s ``ru_maxrss`` would carry this process's peak from the fork) and
    whether it has exited (``os.wait4(pid, WNOHANG)``: its exit code and the clock then)."""

    def __init__(self, interval: float = 0.2):
        super().__init__(daemon=True)
        self.interval, self.procs, self.done = interval, [], threading.Event()
        self.peak_mb, self.exit_at, self.lock = {}, {}, threading.Lock()

    def add(self, proc) -> None:
        with self.lock:
            self.procs.append(proc)

    def run(self):
        while True:
            with self.lock:
                live = [p for p in self.procs if p.pid not in self.exit_at]
            if self.procs and not live:
                self.done.set()
                return
            for p in live:
                try:
                    for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak_mb[p.pid] = max(self.peak_mb.get(p.pid, 0.0), int(line.split()[1]) / 1024)
                except (FileNotFoundError, ProcessLookupError):
                    pass
                pid, status, _ = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    p.returncode = os.waitstatus_to_exitcode(status)
                    self.exit_at[p.pid] = time.perf_counter()
            time.sleep(self.interval)


def remote_job(d: Path, K: int, job: str, trust: str = "auto") -> dict:
    """(a) of the module docstring."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out, port_file = d / f"out-{job}", d / f"{job}.port"
    t0 = time.perf_counter()
    coord = subprocess.Popen(_cli("coordinate", "--parties", ",".join(f"party{k}" for k in range(K)),
                                  "--key", d / "coord/coord.key", "--cert", d / "coord/coord.crt",
                                  "--ca", d / "ca/ca.crt", "--port", 0, "--port-file", port_file, "--job-id", job,
                                  "--epsilon", EPSILON, "--delta", DELTA, "--scale", "bounds",
                                  "--bounds", d / "bounds.json", "--seed", SEED, "--out", out, "--timeout", TIMEOUT,
                                  "--trust", trust),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    procs, watch = [coord], _Watch()
    watch.add(coord)
    watch.start()
    readers = [_Lines(coord.stdout, "job finished"), _Lines(coord.stderr)]
    for r in readers:
        r.start()
    try:
        while not (port_file.exists() and port_file.read_text().strip()):
            if coord.poll() is not None:
                raise RuntimeError("the coordinator exited: " + "".join(readers[1].lines)[-3000:])
            time.sleep(0.01)
        t_ready = time.perf_counter()
        port = port_file.read_text().strip()
        parties = []
        for k in range(K):
            home = d / f"party{k}"
            p = subprocess.Popen(
                _cli("party", d / f"party{k}.csv", "--target", "label", "--classes", ",".join(CLASSES),
                     "--key", home / f"party{k}.key", "--cert", home / f"party{k}.crt", "--ca", d / "ca/ca.crt",
                     "--coordinator", f"127.0.0.1:{port}", "--coordinator-name", "coord",
                     "--policy", d / "seeded.toml", "--ledger-dir", d / f"ledger-{job}-{k}", "--timeout", TIMEOUT,
                     "--no-personal"),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            parties.append(p)
            procs.append(p)
            watch.add(p)
            readers += [_Lines(p.stdout, "dialling"), _Lines(p.stderr)]
            readers[-2].start()
            readers[-1].start()
        t_launched = time.perf_counter()
        if not watch.done.wait(TIMEOUT + 120):
            raise RuntimeError(f"the job did not end within {TIMEOUT + 120:g} s")
    finally:
        for p in procs:  # only on a failure: the processes this function started, by their Popen objects
            if p.pid not in watch.exit_at:
                p.kill()
    t_end = max(watch.exit_at.values())
    for r in readers:
        r.join(timeout=10)
    codes = [p.returncode for p in parties] + [coord.returncode]
    if any(codes):
        stderr = ["".join(readers[2 * i + 1].lines)[-2000:] for i in range(K + 1)]  # the coordinator's first
        failed = [stderr[0 if i == K else i + 1] for i, c in enumerate(codes) if c]
        raise RuntimeError(f"exit codes (parties, then the coordinator) {codes}: {failed[:2]}")
    joined = [readers[2 + 2 * k].when for k in range(K)]
    results = json.loads((out / "results.json").read_text())
    timings = results["remote"]["timings"]
    rss = [watch.peak_mb.get(p.pid, float("nan")) for p in parties]
    exits = [watch.exit_at[p.pid] for p in parties]
    return {"wall_seconds": t_end - t0,
            "coordinator_startup_seconds": t_ready - t0,
            "launch_parties_seconds": t_launched - t_ready,
            "parties_joined_seconds": {"first": min(joined) - t_ready, "median": float(np.median(joined)) - t_ready,
                                       "last": max(joined) - t_ready},
            "coordinator_finished_seconds": readers[0].when - t0,
            "run_init_seconds": timings["init"], "run_rounds_seconds": timings["rounds"],
            "seconds_per_round": timings["per_round"], "rounds": results["plan"]["rounds"],
            "before_run_seconds": (readers[0].when - max(joined)) - timings["init"] - timings["rounds"],
            "coordinator_exit_seconds": watch.exit_at[coord.pid] - t0,
            "parties_exit_seconds": {"first": min(exits) - t0, "last": max(exits) - t0},
            "peak_rss_mb": {"coordinator": watch.peak_mb.get(coord.pid, float("nan")), "party_median": float(np.median(rss)),
                            "party_min": min(rss), "party_max": max(rss), "parties_sum": float(np.sum(rss))},
            "trust": results["plan"]["trust"], "guarantee_epsilon": results["privacy"]["epsilon"],
            "model": str(out / "model.json")}


def simulator_fit(names, bounds, Xtr, ytr, groups, trust: str = "auto") -> tuple[dict, object]:
    """(b) of the module docstring: ``REPEATS`` fits, each with its run's timings."""
    import pandas as pd

    import privdist.runtime as rt
    from privdist.learn import DistributedLogisticRegression

    caught, real = [], rt.run

    def timed_run(*a, **kw):
        res = real(*a, **kw)
        caught.append(dict(res.timings))
        return res

    df = pd.DataFrame(Xtr, columns=names)
    fits = []
    rt.run = timed_run
    try:
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = DistributedLogisticRegression(epsilon=EPSILON, delta=DELTA, scale="bounds", bounds=bounds,
                                                    random_state=SEED, trust=trust, classes=CLASSES).fit(df, ytr,
                                                                                                          groups=groups)
            fits.append(time.perf_counter() - t0)
    finally:
        rt.run = real
    return {"fit_seconds": fits, "run_init_seconds": [c["init"] for c in caught],
            "run_rounds_seconds": [c["rounds"] for c in caught],
            "seconds_per_round": [c["per_round"] for c in caught], "rounds": int(est.privacy_plan_.rounds),
            "trust": est.privacy_plan_.trust, "guarantee_epsilon": float(est.privacy_report_["epsilon"]),
            "peak_rss_mb_this_process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}, est


def run_benchmark(sizes=SIZES, trust: str = "auto") -> dict:
    """Both parts for every K in ``sizes``; returns (and, for the full sizes and the default trust, writes) the
    numbers. ``trust="local"``: the same job without secure aggregation (the plain rounds it is measured against)."""
    import pandas as pd

    from privdist.data import make_groups
    from privdist.learn.model_io import load_model

    names, bounds, Xtr, ytr, Xte, yte = _adult()
    out = {"name": "remote", "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                                         "cpus": os.cpu_count()},
           "data": {"train_rows": len(ytr), "test_rows": len(yte), "columns": len(names), "scale": "bounds"},
           "epsilon": EPSILON, "delta": DELTA, "seed": SEED, "cases": []}
    for K in sizes:
        groups = make_groups("random", len(ytr), K, rng=np.random.default_rng(SPLIT_SEED + K))
        with tempfile.TemporaryDirectory(prefix=f"privdist-remote-{K}-") as tmp:
            d = Path(tmp)
            t0 = time.perf_counter()
            _pki(d, K)
            rows = _write_parties(d, names, Xtr, ytr, groups, K)
            (d / "bounds.json").write_text(json.dumps({k: list(v) for k, v in bounds.items()}))
            (d / "seeded.toml").write_text("seeded_allowed = true\n")
            prep = time.perf_counter() - t0
            case = {"parties": K, "rows_per_party": {"min": min(rows), "max": max(rows)},
                    "pki_and_csv_seconds": prep}
            print(f"K = {K}: certificates and {K} CSVs in {prep:.1f} s; running the job over processes ...",
                  flush=True)
            case["remote"] = remote = remote_job(d, K, f"bench{K}", trust)
            model = load_model(remote.pop("model"))
            sim, est = simulator_fit(names, bounds, Xtr, ytr, groups, trust)
            case["simulator"] = sim
        remote["test_accuracy"] = float(np.mean(model.predict(Xte) == yte))
        sim["test_accuracy"] = float(est.score(pd.DataFrame(Xte, columns=names), yte))
        diff = np.abs(np.append(model.coef, model.intercept) - np.append(est.coef_, est.intercept_))
        case["same_model"] = {"max_abs_coef_diff": float(diff.max()), "identical": bool(diff.max() == 0.0)}
        case["per_round_ratio"] = remote["seconds_per_round"] / min(sim["seconds_per_round"])
        out["cases"].append(case)
        _print_case(case)
    if tuple(sizes) == SIZES and trust == "auto":
        OUT.parent.mkdir(exist_ok=True)
        OUT.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {OUT.relative_to(HERE.parent)}")
    return out


def _print_case(c: dict) -> None:
    r, s = c["remote"], c["simulator"]
    print(f"K = {c['parties']} ({c['rows_per_party']['min']}-{c['rows_per_party']['max']} rows per party), "
          f"{r['rounds']} rounds, trust {r['trust']}:")
    print(f"  processes: wall {r['wall_seconds']:.1f} s; coordinator up {r['coordinator_startup_seconds']:.2f} s; "
          f"parties joined {r['parties_joined_seconds']['first']:.1f} / {r['parties_joined_seconds']['median']:.1f} / "
          f"{r['parties_joined_seconds']['last']:.1f} s (first / median / last); run init "
          f"{r['run_init_seconds']:.2f} s; rounds {r['run_rounds_seconds']:.2f} s = {r['seconds_per_round']*1e3:.0f} "
          f"ms per round; peak RSS coordinator {r['peak_rss_mb']['coordinator']:.0f} MB, party median "
          f"{r['peak_rss_mb']['party_median']:.0f} MB, sum {r['peak_rss_mb']['parties_sum']:.0f} MB; "
          f"accuracy {r['test_accuracy']:.4f}; epsilon {r['guarantee_epsilon']:.4f}")
    print(f"  simulator: fit {', '.join(f'{x:.2f}' for x in s['fit_seconds'])} s; run init "
          f"{', '.join(f'{x:.3f}' for x in s['run_init_seconds'])} s; per round "
          f"{', '.join(f'{x*1e3:.1f}' for x in s['seconds_per_round'])} ms; accuracy {s['test_accuracy']:.4f}; "
          f"epsilon {s['guarantee_epsilon']:.4f}")
    print(f"  same model: {c['same_model']}; per round, processes / simulator: {c['per_round_ratio']:.1f}x")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="party counts (default 10,50)")
    ap.add_argument("--trust", choices=("auto", "local"), default="auto",
                    help="auto (secure aggregation, the default; writes the results file) or local (plain rounds)")
    args = ap.parse_args()
    run_benchmark(tuple(int(x) for x in args.sizes.split(",")), args.trust)
