"""Benchmark ``optimisers``: which private optimiser of the horizontal estimators wins where (issue 25).

Every ``algorithm=`` the estimators offer is fitted from its defaults (step sizes and rounds from public quantities,
``privdist.learn``) at total epsilon 1, delta 1e-5 per party, with ``trust="auto"`` (secure aggregation for dpmm and
ssp, local DP for the others, which have no secure sum) and, for dpmm, also ``trust="local"``, on cases of
``bench_utility`` (same splits, parties and public bounds): Adult with 10 and 100 x 100 parties, the synthetic
mixed-scale set, breast cancer and, for ridge, diabetes. Private = mean +- sd over ``--draws`` noise draws (default
3). Writes ``benchmarks/results/optimisers.{json,md}``.

Run: ``python benchmarks/bench_optimisers.py [--draws N] [--cases NAME ...] [--page docs/benchmarks.md]``
(``--page`` replaces the optimiser-table block of that page).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_utility as bu  # noqa: E402  (the same cases and metric)

#: (algorithm, trust) pairs per task; ridge runs dpmm (sufficient statistics) and the gradient methods
CLASSIFIERS = [("dpmm", "auto"), ("dpmm", "local"), ("ssp", "auto"), ("dpsgd", "auto"), ("dpadmm", "auto"),
               ("pvp", "auto"), ("dvp", "auto"), ("laadmm", "auto")]
REGRESSORS = [("dpmm", "auto"), ("dpmm", "local"), ("ssp", "auto"), ("dpsgd", "auto"), ("dpadmm", "auto")]
START, END = "<!-- optimiser-table:start -->", "<!-- optimiser-table:end -->"
CASES = ("Adult, 10 parties", "Adult, 100 x 100", "synthetic", "breast cancer", "diabetes")


def cases(names):
    out = [c for c in bu.adult_cases() + bu.sklearn_cases() if any(c["name"].startswith(n) for n in names)]
    return out


def run(case, algorithm: str, trust: str, draws: int) -> dict:
    from privdist.learn import DistributedLogisticRegression, DistributedRidge

    task = case.get("task", "classification")
    Est = DistributedLogisticRegression if task == "classification" else DistributedRidge
    kw = {"bounds": case["bounds"]} if case.get("bounds") is not None else {}
    scores, errors, t0 = [], [], time.perf_counter()
    for d in range(draws):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = Est(algorithm=algorithm, trust=trust, epsilon=1.0, delta=1e-5, random_state=d, **kw).fit(
                    case["Xtr"], case["ytr"], groups=case["groups"])
            scores.append(bu._metric(task, m, case["Xte"], case["yte"]))
        except Exception as exc:  # a named error is a result too (e.g. divergence)
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    return {"dataset": case["name"], "task": task, "algorithm": algorithm, "trust": trust, "draws": draws,
            "scores": scores, "mean": float(np.mean(scores)) if scores else None,
            "std": float(np.std(scores)) if scores else None, "errors": errors,
            "seconds": time.perf_counter() - t0}


def table(rows) -> str:
    names = list(dict.fromkeys(r["dataset"] for r in rows))
    methods = list(dict.fromkeys(f"{r['algorithm']} ({r['trust']})" for r in rows))
    lines = ["| algorithm (trust) | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for meth in methods:
        cells = []
        for n in names:
            r = next((r for r in rows if r["dataset"] == n and f"{r['algorithm']} ({r['trust']})" == meth), None)
            if r is None:
                cells.append("")
            elif r["mean"] is None:
                cells.append("error")
            else:
                best = min if r["task"] == "regression" else max
                top = best(x["mean"] for x in rows if x["dataset"] == n and x["mean"] is not None)
                v = f"{bu._fmt(r['mean'], r['task'])} ± {bu._fmt(r['std'], r['task'], r['mean'])}"
                cells.append(f"**{v}**" if r["mean"] == top else v)
        lines.append(f"| {meth} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=3)
    p.add_argument("--cases", nargs="*", default=list(CASES), help="case name prefixes (default: all five)")
    p.add_argument("--out", default=str(HERE / "results" / "optimisers"))
    p.add_argument("--page", help="replace the optimiser-table block of this page (docs/benchmarks.md)")
    args = p.parse_args(argv)
    rows = []
    for case in cases(args.cases):
        pairs = CLASSIFIERS if case.get("task", "classification") == "classification" else REGRESSORS
        for algorithm, trust in pairs:
            rows.append(run(case, algorithm, trust, args.draws))
            r = rows[-1]
            print(f"{r['dataset'][:34]:34s} {algorithm:7s} {trust:6s} "
                  + (f"{r['mean']:.4f} +- {r['std']:.4f}" if r["mean"] is not None else "error")
                  + (f"  ({len(r['errors'])} errors: {r['errors'][0]})" if r["errors"] else "")
                  + f"  [{r['seconds']:.1f} s]", flush=True)
    md = table(rows) + (f"\nTotal epsilon 1, delta 1e-5 per party; mean ± sd over {args.draws} noise draws; test "
                        "accuracy (RMSE for diabetes, lower is better); best per column in bold. trust=auto is "
                        "secure aggregation for dpmm and ssp (one-shot sufficient statistics, issue 39) and local DP for the "
                        "others.\n")
    print()
    print(md)
    stem = Path(args.out)
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps({"benchmark": "optimisers", "draws": args.draws,
                                                     "versions": bu._versions(), "rows": rows}, indent=1) + "\n")
    stem.with_suffix(".md").write_text(md)
    print(f"wrote {stem.with_suffix('.json')} and {stem.with_suffix('.md')}")
    if args.page:
        page = Path(args.page)
        page.write_text(bu.replace_block(page.read_text(), md, START, END))
        print(f"updated the optimiser table in {page.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
