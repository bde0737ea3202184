"""Benchmark ``secagg``: secure aggregation with distributed Skellam noise (issue 27), utility and protocol cost.

**Utility.** Adult (the shipped data, its own train/test split, the documented public bounds; the splits of
``bench_utility.py``: 10 parties; 100 x 100; 1,000 x 30), :class:`privdist.learn.DistributedLogisticRegression`
from the defaults (dpmm, 20 rounds) at total epsilon 1, delta 1e-5 per party, with ``trust="local"`` (each party's
release carries all its noise) and ``trust="secure_aggregation"`` (the sums under secure aggregation, each party adding
a Skellam share; no party assumed colluding, no dropout tolerance): test accuracy, mean +- sd over ``--draws`` noise
draws (``random_state`` 0, 1, ...), beside the same estimator without noise.

**Cost.** dpmm on the simulator, K = 10, 100, 1,000 parties of 30 synthetic rows with Adult's 105 features (+ an
intercept), 20 rounds, total epsilon 1: plain (``trust="local"``) against secure aggregation (32-bit modulus):
setup seconds (``run``'s init: key generation, advertisement and agreement), round-1 seconds (the Gram round), seconds
per gradient round (the median of rounds 2-19, timed by a metric that reads the clock after every round), the 20-round
total with the setup, and the
bytes each party sends per round, on average (plain: float64 values; secure: the masked vector and the answer, 4 bytes
per value, retried attempts included; messages the schedule leaves silent are not counted; setup: a 32-byte public
key up, the K x 32-byte table down). One extra secure run at K = 100 with simulated dropouts
(10 % before sending, 2 % after sending, per round) gives the same numbers under failures. All parties are simulated
in one process on this machine: the seconds are the simulator's, not a deployment's.

**The sparse graph** (``recovery="sparse"``, SecAgg+, Bell et al. CCS 2020; issue 41): the same cost runs at the
default graph (no colluding party, no dropout tolerance: a ring, ``k = 2``), at 100 parties with threshold ``K/2``
(``k = t = 50``) and with the dropouts above (tolerance 0.2, so that the graph is chosen for them); their bytes add, per
round, the commitment (32), the padded shares (32 per neighbour) and the revealed ones (32 per neighbour, and the
party's own seed in 32; the first reveal, round seeds with absent neighbours only, is not counted).

**Whole fits** (``--fits``): :class:`privdist.learn.DistributedLogisticRegression` (defaults, epsilon 1) on ``K``
parties of 10 synthetic rows and 8 features, local trust against secure aggregation by the default protocol (the
sparse graph from 100 parties on), each fit in its own process: seconds of ``fit`` and the peak resident memory of
that process (``VmHWM`` of ``/proc/self/status``: Linux carries ``getrusage``'s maxrss across ``exec``, so a child
started from this benchmark would report the benchmark's own peak).

**Threshold recovery** (``recovery="shamir"``, Bonawitz et al.'s double masking): the same runs with fresh round keys
and Shamir-shared seeds every round, at the default threshold ``t = colluding + 1 = 1`` for every K and at the
majority threshold ``t = K/2 + 1`` for K <= 100 (at 1,000 parties one round would take the simulator hours: the
per-seed costs below), plus the run with dropouts at K = 100. Their bytes per party add, per round, the round key
(32), the encrypted shares (32 per other party) and the revealed shares (16 per party). Separately, pycryptodome's
``Shamir.split`` and ``combine`` of one 16-byte seed at each (t, K): a party splits two seeds per round, the
aggregator combines K seeds per round.

Run: ``python benchmarks/bench_secagg.py [--draws 3] [--sizes 10,100,1000] [--skip-utility] [--skip-cost]
[--skip-shamir] [--repeats 3] [--fits 1000,10000] [--skip-fits]``; writes
``benchmarks/results/secagg.json`` and ``benchmarks/results/secagg.md``. ``--repeats N`` runs every cost plan ``N``
times, interleaved, and reports medians (times, and ratios to the plain run of the same repeat): on a shared machine
one run's ratio can be off by 2x.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROUNDS, FEATURES, ROWS = 20, 105, 30


def _bench_utility():
    spec = importlib.util.spec_from_file_location("bench_utility", HERE / "bench_utility.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------------------------ utility
def utility_rows(draws: int) -> list[dict]:
    from privdist.learn import DistributedLogisticRegression

    cases = [c for c in _bench_utility().adult_cases() if not c.get("party_names")]  # 10, 100 x 100, 1,000 x 30
    rows = []
    for case in cases:
        row = {"dataset": case["name"], "parties": int(case["groups"].max()) + 1, "n_train": len(case["ytr"]),
               "draws": draws}

        def fit(eps, seed, trust):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = DistributedLogisticRegression(epsilon=eps, delta=1e-5, random_state=seed, bounds=case["bounds"],
                                                  trust=trust).fit(case["Xtr"], case["ytr"], groups=case["groups"])
            return float(m.score(case["Xte"], case["yte"])), m

        for trust in ("local", "secure_aggregation"):
            t0 = time.perf_counter()
            acc, eps = [], []
            for d in range(draws):
                a, m = fit(1.0, d, trust)
                acc.append(a)
                eps.append(float(m.privacy_report_["epsilon"]))
            row[trust] = {"accuracy": acc, "mean": float(np.mean(acc)), "std": float(np.std(acc)),
                          "guarantee_epsilon": max(eps), "seconds_per_fit": (time.perf_counter() - t0) / draws,
                          "mechanism": m.privacy_report_["calibration"]["mechanism"]}
        row["non_private"] = fit(None, 0, "local")[0]
        rows.append(row)
        print(f"{row['dataset']:22s} local {row['local']['mean']:.4f} +- {row['local']['std']:.4f}  secure "
              f"{row['secure_aggregation']['mean']:.4f} +- {row['secure_aggregation']['std']:.4f}  non-private "
              f"{row['non_private']:.4f}  [{row['secure_aggregation']['seconds_per_fit']:.0f} s per secure fit]",
              flush=True)
    return rows


# --------------------------------------------------------------------------------------------------------- cost
def _problem(K: int):
    from privdist.problems import HorizontalERM, make_loss, make_regularizer

    rng = np.random.default_rng(K)
    P = FEATURES + 1
    parts = []
    for _ in range(K):
        X = rng.normal(size=(ROWS, P)) / math.sqrt(P)
        X[:, -1] = 1.0 / math.sqrt(2.0)
        parts.append((X, np.where(X @ rng.normal(size=P) > 0, 1.0, -1.0)))
    return HorizontalERM(parts, make_loss("logistic"), make_regularizer("l2"), 1e-4)


#: Transcript entries that are not the parties' messages: the setup keys, and under threshold recovery the round's
#: key table (counted as 32 bytes per party below) and the seeds the aggregator rebuilt (the shares are counted).
_NOT_SENT = ("secagg.public_keys", "secagg.round_keys", "secagg.rebuilt_seeds@attempt0", "secagg.shares",
             "secagg.revealed@attempt0", "secagg.revealed@phase1")


def _bytes(res, K: int, value_bytes: int, shamir: bool, degree: int | None = None) -> dict:
    """Bytes each party sent, on average, in round 1 and in round 2, from the full transcript: the rows of the
    agents' messages that carry something (a row of zeros is a message the schedule leaves silent, e.g. dpmm's Gram
    after round 1, or a party that dropped out), times the bytes per value. Threshold recovery adds per round its
    round key (32), its encrypted shares (32 per other party) and the shares it reveals (16 per party)."""
    per_round = {}
    for t, msgs in res.transcript.rounds.items():
        sent = 0
        for (role, name), a in msgs.items():
            if role == "agent" and name not in _NOT_SENT:
                rows = a.reshape(a.shape[0], -1)
                sent += int(np.any(rows != 0, axis=1).sum()) * rows.shape[1]
        extra = (32 + 32 * degree + 32 * (degree + 1)) if degree else (32 + 32 * (K - 1) + 16 * K) if shamir else 0
        per_round[t] = sent / K * value_bytes + extra
    return {"round_1": per_round.get(1, 0.0), "gradient_round": per_round.get(2, 0.0)}


def _plans(sizes: list[int], shamir: bool, retry_max: int | None = None) -> list[tuple]:
    """``(K, trust, dropout, recovery, threshold, colluding)`` of every cost run (``threshold`` None: the default;
    ``colluding`` with a sparse graph chosen for 10 % colluding and 10 % dropped parties; the complete graph's
    retry only up to ``retry_max`` parties, None: at every size)."""
    from privdist.runtime.secure.secure_round import Dropout

    plans = [(K, trust, None, rec, None, 0) for K in sizes for trust, rec in
             (("local", None), ("secure_aggregation", "retry"), ("secure_aggregation", "sparse"))
             if rec != "retry" or retry_max is None or K <= retry_max]
    plans += [(K, "secure_aggregation", None, "sparse", K // 2, 0) for K in sizes if K == 100]
    plans += [(K, "secure_aggregation", None, "sparse", None, K // 10) for K in sizes if K >= 100]
    if 100 in sizes:
        plans.append((100, "secure_aggregation", Dropout(0.1, after_send=0.02), "retry", None, 0))
        plans.append((100, "secure_aggregation", Dropout(0.1, after_send=0.02), "sparse", None, 0))
    if shamir:
        plans += [(K, "secure_aggregation", None, "shamir", 1, 0) for K in sizes]
        plans += [(K, "secure_aggregation", None, "shamir", K // 2 + 1, 0) for K in sizes if K <= 100]
        if 100 in sizes:
            plans.append((100, "secure_aggregation", Dropout(0.1, after_send=0.02), "shamir", 1, 0))
    return plans


def cost_rows(sizes: list[int], shamir: bool = True, repeats: int = 1, retry_max: int | None = None) -> list[dict]:
    """The cost rows; with ``repeats > 1`` every plan runs that many times, interleaved (all plans, then all again),
    and a row keeps the median of each time, its ratios the median of the ratios to the plain run of the same repeat
    (on a shared machine the load drifts; neighbouring runs see similar load), and the repeats' values."""
    plans = _plans(sizes, shamir, retry_max)
    runs = [[_cost_row(*plan) for plan in plans] for _ in range(max(1, int(repeats)))]
    for rep in runs:  # ratios against the plain run of the same size and repeat
        for r in rep:
            plain = next(p for p in rep if p["parties"] == r["parties"] and p["trust"] == "local")
            r["ratio_gradient_round"] = r["gradient_round_seconds"] / plain["gradient_round_seconds"]
            r["ratio_total"] = r["total_seconds"] / plain["total_seconds"]
    rows = []
    for i in range(len(plans)):
        row, keys = dict(runs[0][i]), ("setup_seconds", "round1_seconds", "gradient_round_seconds", "total_seconds",
                                       "ratio_gradient_round", "ratio_total")
        if len(runs) > 1:
            row["repeats"] = {k: [rep[i][k] for rep in runs] for k in keys}
            row.update({k: float(np.median(row["repeats"][k])) for k in keys})
        rows.append(row)
    return rows


def _cost_row(K, trust, dropout, rec, threshold, colluding) -> dict:
    from privdist.algorithms import make_algorithm
    from privdist.network import make_network
    from privdist.privacy import privacy_report
    from privdist.runtime import run

    problem, net = _problem(K), make_network("complete", n=K)
    recovery = {} if rec is None else {"recovery": rec, "threshold": threshold}
    tolerance = (0.2 if rec == "sparse" else 0.1) if dropout else 0.1 if colluding else 0.0  # graph chosen for it
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, rounds=ROUNDS, trust=trust, colluding=colluding,
                          dropout_tolerance=tolerance, **recovery)
    kw = {"dropout": dropout} if dropout else {}
    clock = {"clock": lambda est: time.perf_counter()}  # evaluated after init and after every round
    res = run(algo, problem, net, ROUNDS, seed=0, transcript="full", metrics=clock, **kw)
    ticks = np.diff(res.curves["clock"])  # seconds of rounds 1..T (the transcript and ledger included)
    value_bytes = 8 if trust == "local" else math.ceil(res.config["secure_aggregation"]["bits"] / 8)
    graph = res.config.get("secure_aggregation", {}).get("graph")
    row = {"parties": K, "trust": trust, "recovery": rec, "graph": graph, "dropout_tolerance": tolerance,
           "colluding": colluding,
           "threshold": threshold if graph is None else graph["threshold"],
           "dropout": None if dropout is None else vars(dropout),
           "setup_seconds": res.timings["init"], "round1_seconds": float(ticks[0]),
           "gradient_round_seconds": float(np.median(ticks[1:-1])),
           "total_seconds": res.timings["init"] + res.timings["rounds"],
           "bytes_per_party": _bytes(res, K, value_bytes, rec == "shamir", graph and graph["degree"]),
           "setup_bytes_per_party": {"up": 32, "down": 32 * K} if trust != "local" else None}
    if dropout is not None:
        rounds = res.config["secure_aggregation"]["rounds"][:-1]
        row["present_mean"] = float(np.mean([r["present"] for r in rounds]))
        row["attempts_max"] = max(r["attempts"] for r in rounds)
        row["attempts_total"] = sum(r["attempts"] for r in rounds)
        report = privacy_report(res.ledger, 1e-5)["per_agent"]
        row["recomputed_epsilon"] = {"min": min(a["epsilon"]["rdp"] for a in report),
                                     "max": max(a["epsilon"]["rdp"] for a in report)}
    print(f"K={K:5d} {_label(row):44s} setup {row['setup_seconds']:8.3f} s  round 1 {row['round1_seconds']:8.3f}"
          f" s  gradient round {row['gradient_round_seconds']:8.4f} s  total {row['total_seconds']:8.2f} s  "
          f"bytes/party: round 1 {row['bytes_per_party']['round_1']:,.0f}, gradient "
          f"{row['bytes_per_party']['gradient_round']:,.0f}", flush=True)
    if dropout is not None:
        print(f"        {row['attempts_total']} attempts over {len(rounds)} rounds; each party's epsilon, "
              f"recomputed from the parties in each sum: {row['recomputed_epsilon']['min']:.3f} to "
              f"{row['recomputed_epsilon']['max']:.3f} (calibrated: 1 with 10 % missing)", flush=True)
    return row


def _label(row: dict) -> str:
    rec = row.get("recovery") or ("shamir" if row.get("threshold") else "retry")
    if row["trust"] == "local":
        label = "local"
    elif rec == "sparse":
        label = f"secure, sparse k={row['graph']['degree']} t={row['graph']['threshold']}"
        if row.get("colluding"):
            label += f" (colluding {row['colluding']}, tolerance {row['dropout_tolerance']:g})"
    elif rec == "shamir":
        label = f"secure, shamir t={row['threshold']}"
    else:
        label = "secure, retry"
    return label + (f" (10 % + 2 % dropouts, tolerance {row.get('dropout_tolerance', 0.1):g})"
                    if row["dropout"] else "")


def shamir_rows(sizes: list[int]) -> list[dict]:
    """pycryptodome's ``Shamir.split`` into K shares and ``combine`` of t shares, one 16-byte seed, timed."""
    from privdist.runtime.secure.secagg_threshold import combine, split

    rows = []
    for K in sizes:
        for t in sorted({1, K // 2 + 1}):
            t0 = time.perf_counter()
            shares = split(bytes(16), t, K)
            t1 = time.perf_counter()
            combine(dict(enumerate(shares)), t)
            t2 = time.perf_counter()
            rows.append({"parties": K, "threshold": t, "split_seconds": t1 - t0, "combine_seconds": t2 - t1})
            print(f"K={K:5d} t={t:4d}: split {t1 - t0:.3g} s, combine {t2 - t1:.3g} s per seed", flush=True)
    return rows


# ------------------------------------------------------------------------------------------------------- fits
_FIT = """
import json, resource, sys, time, warnings
import numpy as np
from privdist.learn import DistributedLogisticRegression
K, rows, trust = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
X = rng.normal(size=(K * rows, 8))
y = (X @ rng.normal(size=8) + rng.normal(size=K * rows) > 0).astype(int)
groups = np.repeat(np.arange(K), rows)
warnings.simplefilter("ignore")
t0 = time.perf_counter()
m = DistributedLogisticRegression(epsilon=1.0, delta=1e-5, random_state=0, trust=trust).fit(X, y, groups=groups)
seconds = time.perf_counter() - t0
sec = m.privacy_report_.get("trust", {})
try:  # the peak of this process's own memory (Linux keeps getrusage's maxrss across exec: the parent's would show)
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "maxrss_mb": peak,
                  "epsilon": float(m.privacy_report_["epsilon"]), "accuracy": float(m.score(X, y)),
                  "graph": sec.get("graph")}))
"""


def fit_rows(sizes: list[int], rows: int = 10) -> list[dict]:
    """:class:`privdist.learn.DistributedLogisticRegression` (defaults, epsilon 1) on ``K`` parties of ``rows``
    synthetic rows and 8 features, local trust against secure aggregation (the default protocol: the sparse graph
    from 100 parties on), each fit in its own process (seconds of ``fit``, peak resident memory of the process)."""
    import os
    import subprocess

    out = []
    for K in sizes:
        for trust in ("local", "secure_aggregation"):
            proc = subprocess.run([sys.executable, "-c", _FIT, str(K), str(rows), trust], capture_output=True,
                                  text=True, env=dict(os.environ), check=True)
            row = {"parties": K, "rows": rows, "trust": trust, **json.loads(proc.stdout.strip().splitlines()[-1])}
            out.append(row)
            print(f"fit K={K:6d} x {rows} rows {trust:20s} {row['seconds']:8.2f} s  peak {row['maxrss_mb']:7.0f} MB  "
                  f"epsilon {row['epsilon']:.3f}", flush=True)
    for r in out:
        plain = next(p for p in out if p["parties"] == r["parties"] and p["trust"] == "local")
        r["ratio"] = r["seconds"] / plain["seconds"]
    return out


# ------------------------------------------------------------------------------------------------------ a party
def party_rows(configs=((1000, 0, 0.0), (1000, 100, 0.1), (10_000, 0, 0.0), (10_000, 1000, 0.1)),
               dim: int = FEATURES + 1, repeats: int = 5) -> list[dict]:
    """One party's own work in a round of the sparse protocol (what it does on Ray or in its own process), timed:
    its round seed and commitment (``prepare``), its shares for its ``k`` neighbours (``share``: ``k`` pair-secret
    agreements the first time a pair meets, here every time (a fresh process), ``k`` round-seed derivations, one Shamir
    split), receiving its neighbours' shares and keying its round masks (``receive``), masking a vector of ``dim``
    values and revealing its shares. The other parties exist only as far as
    the party needs them (every party's round key; its neighbours' shares). The median of ``repeats`` rounds."""
    from privdist.privacy.secagg_graph import choose_graph
    from privdist.runtime.secure.secagg import SecAggParties, party_secrets, session_id
    from privdist.runtime.secure.secagg_plus import BUNDLE, SparseParty, neighbours, route

    rows = []
    for K, colluding, tol in configs:
        params = choose_graph(K, colluding, int(math.floor(tol * K)))
        session, secrets_ = session_id(0, 0, False), party_secrets(range(K), 0, 0, False)

        def make(ids):
            ids = np.asarray(ids)
            return SparseParty(SecAggParties(ids, K, 32, [secrets_[a] for a in ids], session),
                               [secrets_[a][32:] for a in ids], params, session)

        everyone = make(np.arange(K))
        table = everyone.channel.public_keys()
        steps = {s: [] for s in ("prepare", "share", "receive", "mask", "reveal")}
        for t in range(1, repeats + 1):
            everyone.agree(table)
            round_table = everyone.prepare(t)[0]
            nbrs = neighbours(session, t, round_table, K, params.degree)
            near = make(nbrs[0])
            near.agree(table)
            near.prepare(t)
            sealed = np.zeros((K, params.degree, BUNDLE), dtype=np.uint8)
            sealed[nbrs[0]] = near.share(t, round_table)
            inbound = route(sealed, nbrs)[:, [0]]
            party = make([0])  # a fresh process: no channel key cached
            party.agree(table)
            x = np.arange(dim, dtype=np.int64)[None, :]
            marks = [time.perf_counter()]
            party.prepare(t)
            marks.append(time.perf_counter())
            party.share(t, round_table)
            marks.append(time.perf_counter())
            party.receive(t, round_table, inbound)
            marks.append(time.perf_counter())
            party.masking(t).mask(t, 0, x)
            marks.append(time.perf_counter())
            party.reveal(t, np.ones(K, dtype=bool))
            marks.append(time.perf_counter())
            for name, a, b in zip(steps, marks, marks[1:]):
                steps[name].append(b - a)
        row = {"parties": K, "colluding": colluding, "dropout_tolerance": tol, "degree": params.degree,
               "threshold": params.threshold, "dim": dim, **{f"{s}_seconds": float(np.median(v)) for s, v in
                                                            steps.items()}}
        row["total_seconds"] = sum(row[f"{s}_seconds"] for s in steps)
        rows.append(row)
        print(f"a party of K={K:6d} (k={params.degree}, t={params.threshold}): {row['total_seconds'] * 1e3:.2f} ms "
              f"per round (" + ", ".join(f"{s} {row[f'{s}_seconds'] * 1e3:.2f}" for s in steps) + " ms)", flush=True)
    return rows


# ------------------------------------------------------------------------------------------------------- output
def markdown(utility: list[dict], cost: list[dict], draws: int, shamir: list[dict] = (), fits: list[dict] = (),
             party: list[dict] = ()) -> str:
    out = []
    if party:
        out += ["| parties K | colluding | dropout tolerance | k | t | one party's round, ms | commit | shares | receive + "
                "pair keys | mask | reveal |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in party:
            out.append(f"| {r['parties']:,} | {r['colluding']} | {r['dropout_tolerance']:g} | {r['degree']} | "
                       f"{r['threshold']} | {r['total_seconds'] * 1e3:.2f} | {r['prepare_seconds'] * 1e3:.2f} | "
                       f"{r['share_seconds'] * 1e3:.2f} | {r['receive_seconds'] * 1e3:.2f} | "
                       f"{r['mask_seconds'] * 1e3:.2f} | {r['reveal_seconds'] * 1e3:.2f} |")
        out += ["", f"One party's own work per round of the sparse protocol (a vector of {party[0]['dim']} values; "
                "channel keys derived afresh), the median of 5 rounds: what a party does on Ray or in its own process.",
                ""]
    if fits:
        out += ["| parties x rows | trust | fit s | x local | peak memory MB | epsilon |", "|---|---|---|---|---|---|"]
        for r in fits:
            out.append(f"| {r['parties']:,} x {r['rows']} | {r['trust']} | {r['seconds']:.2f} | {r['ratio']:.2f} | "
                       f"{r['maxrss_mb']:.0f} | {r['epsilon']:.3f} |")
        out += ["", "DistributedLogisticRegression (defaults, epsilon 1, delta 1e-5), 8 synthetic features, each fit "
                "in its own process (peak resident memory of that process); secure aggregation by the default "
                "protocol (the sparse graph from 100 parties on: " + "; ".join(sorted({r["graph"] for r in fits
                                                                                        if r.get("graph")})) + ").", ""]
    if utility:
        out += ["| Adult, parties | local DP (epsilon 1) | secure aggregation (epsilon 1) | non-private distributed | "
                "seconds per secure fit |", "|---|---|---|---|---|"]
        for r in utility:
            loc, sec = r["local"], r["secure_aggregation"]
            out.append(f"| {r['dataset'].removeprefix('Adult, ')} | {loc['mean']:.3f} +- {loc['std']:.3f} | "
                       f"{sec['mean']:.3f} +- {sec['std']:.3f} | {r['non_private']:.3f} | "
                       f"{sec['seconds_per_fit']:.0f} |")
        out += ["", f"Test accuracy, mean +- sd over {draws} noise draws; total epsilon 1, delta 1e-5 per party "
                "(secure aggregation: RDP-accounted Skellam, no colluding party, no dropout tolerance).", ""]
    if cost:
        out += ["| parties | trust | setup s | round 1 s | s per gradient round | x plain (gradient round) | "
                "20 rounds + setup s | x plain (total) | bytes/party round 1 | bytes/party gradient round |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in cost:
            out.append(f"| {r['parties']:,} | {_label(r)} | {r['setup_seconds']:.3f} | {r['round1_seconds']:.3f} | "
                       f"{r['gradient_round_seconds']:.4f} | {r['ratio_gradient_round']:.2f} | "
                       f"{r['total_seconds']:.2f} | {r['ratio_total']:.2f} | "
                       f"{r['bytes_per_party']['round_1']:,.0f} | {r['bytes_per_party']['gradient_round']:,.0f} |")
        out += ["", f"dpmm on the simulator, {ROWS} rows x {FEATURES + 1} columns per party, {ROUNDS} rounds; plain "
                "values are float64, secure ones 4 bytes (32-bit modulus; the masked vector and the answer, or under "
                "threshold recovery the masked vector, the round key, the encrypted and the revealed shares, or on the "
                "sparse graph the masked vector, the commitment, the padded and the revealed shares); secure "
                "setup also sends a 32-byte key up and receives a K x 32-byte table.", ""]
    if shamir:
        out += ["| parties K | threshold t | split, one seed (s) | combine, one seed (s) | a party per round: 2 splits "
                "(s) | the aggregator per round: K combines (s) |", "|---|---|---|---|---|---|"]
        for r in shamir:
            out.append(f"| {r['parties']:,} | {r['threshold']} | {r['split_seconds']:.2g} | "
                       f"{r['combine_seconds']:.2g} | {2 * r['split_seconds']:.2g} | "
                       f"{r['parties'] * r['combine_seconds']:.2g} |")
        out += ["", "pycryptodome's Shamir over GF(2^128) on this machine; the last two columns multiply the measured "
                "per-seed times."]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=3, help="noise draws per utility case (default 3)")
    p.add_argument("--sizes", default="10,100,1000", help="party counts of the cost benchmark")
    p.add_argument("--skip-utility", action="store_true", help="keep the utility rows of an existing STEM.json")
    p.add_argument("--skip-cost", action="store_true", help="keep the cost rows of an existing STEM.json")
    p.add_argument("--skip-shamir", action="store_true", help="no complete-graph threshold-recovery rows (minutes)")
    p.add_argument("--retry-max", type=int, help="the complete graph's retry rows only up to this many parties "
                   "(minutes at 1,000 parties; default: every size)")
    p.add_argument("--repeats", type=int, default=1, help="runs of each cost plan, interleaved; medians reported")
    p.add_argument("--fits", default="1000,10000", help="party counts of the whole-fit rows (10 rows each)")
    p.add_argument("--skip-fits", action="store_true", help="keep the fit rows of an existing STEM.json")
    p.add_argument("--skip-party", action="store_true", help="keep the one-party rows of an existing STEM.json")
    p.add_argument("--out", default=str(HERE / "results" / "secagg"), help="stem of STEM.json and STEM.md")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    stem = Path(args.out)
    kept = json.loads(stem.with_suffix(".json").read_text()) if stem.with_suffix(".json").exists() else {}
    utility = kept.get("utility", []) if args.skip_utility else utility_rows(args.draws)  # a skipped part is kept
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    cost = (kept.get("cost", []) if args.skip_cost
            else cost_rows(sizes, not args.skip_shamir, args.repeats, args.retry_max))
    shamir = kept.get("shamir", []) if args.skip_cost or args.skip_shamir else shamir_rows(sizes)
    fits = kept.get("fits", []) if args.skip_fits else fit_rows([int(s) for s in args.fits.split(",") if s.strip()])
    party = kept.get("party", []) if args.skip_party else party_rows()
    md = markdown(utility, cost, utility[0]["draws"] if utility else args.draws, shamir, fits, party)
    print()
    print(md)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = {"benchmark": "secagg", "settings": {"draws": kept.get("settings", {}).get("draws", args.draws)
                                               if args.skip_utility else args.draws,
                                               "epsilon": 1.0, "delta": 1e-5, "rounds": ROUNDS},
           "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
           "wall_seconds": time.perf_counter() - t0, "utility": utility, "cost": cost, "shamir": shamir,
           "fits": fits, "party": party}
    stem.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
    stem.with_suffix(".md").write_text(md)
    print(f"wrote {stem.with_suffix('.json').name} and {stem.with_suffix('.md').name} in {stem.parent.name}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
