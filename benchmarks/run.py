"""Run privdist's benchmarks: ``python benchmarks/run.py [NAME ...] [--json OUT]``.

Each benchmark is a module ``benchmarks/bench_*.py`` exposing ``run_benchmark() -> dict``; this script prints a
table of what they measured and writes all results as JSON. Performance targets live here, not in unit tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = {"admm_round": "bench_admm", "accountant": "bench_accountant", "ray_overhead": "bench_ray_overhead",
              "ray_cluster": "bench_ray_cluster", "dpdonc": "bench_dpdonc", "sharing_a9a": "bench_sharing",
              "laadmm_adult": "bench_laadmm", "dzoa_inner": "bench_dzoa_inner", "dzoa_full": "bench_dzoa_full",
              "startup": "bench_startup", "audit_throughput": "bench_audit_throughput",
              "serve_cli": "bench_serve_cli", "audit_tightness": "bench_audit_tightness",
              "network_dp": "bench_network_dp", "correlated": "bench_correlated", "rgg_2000": "bench_rgg",
              "remote": "bench_remote"}


def _load(module: str):
    spec = importlib.util.spec_from_file_location(module, HERE / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("names", nargs="*", help=f"benchmarks to run (default all): {', '.join(BENCHMARKS)}")
    p.add_argument("--json", help="write the results to this JSON file")
    args = p.parse_args(argv)
    names = args.names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        p.error(f"unknown benchmark(s) {unknown}; known: {list(BENCHMARKS)}")
    results = []
    for name in names:
        t0 = time.perf_counter()
        res = _load(BENCHMARKS[name]).run_benchmark()
        res["wall_seconds"] = time.perf_counter() - t0
        results.append(res)
        print(f"== {name}")
        for k, v in res.items():
            print(f"  {k:32s} {v:.6g}" if isinstance(v, float) else f"  {k:32s} {v}")
    if args.json:
        out = {"machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                           "processor": platform.processor()}, "benchmarks": results}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
