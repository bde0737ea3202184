"""``privdist reproduce PAPER``: every catalog experiment of one source paper."""

from __future__ import annotations

import os
import sys

from rich.console import Console

from ..errors import UnknownNameError
from .run_cmd import add_run_options, check_run_options, diverged_exit, quick_variant

__all__ = ["register"]


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="run every catalog experiment of a paper (S0..S4 or dzoa, sharing, ...)")
    p.add_argument("paper")
    p.add_argument("--quick", action="store_true",
                   help="each spec's quick variant: quick_trials trials and its [quick] rounds/sweep points")
    p.add_argument("--out", default="results", help="parent directory of the results (default: results)")
    add_run_options(p)
    p.set_defaults(func=_main)


def _main(args) -> int:
    console = Console(width=None if sys.stdout.isatty() else 140)
    check_run_options(args)
    from ..experiments import experiments_of_paper, resolve_paper, run_experiment  # start-up time
    from .report import print_results

    ids = resolve_paper(args.paper)
    specs = experiments_of_paper(args.paper)
    if not specs:
        raise UnknownNameError(f"catalog entry for paper {'/'.join(ids)} (none shipped yet)", args.paper, [])
    specs = [quick_variant(s) if args.quick else s for s in specs]
    total = sum(s.estimated_seconds for s in specs)
    par = f", about {total / args.jobs / 60:.1f} min with --jobs {args.jobs}" if args.jobs > 1 else ""
    console.print(f"reproducing {', '.join(ids)}: {len(specs)} experiment(s) ({'quick' if args.quick else 'full'} mode), "
                  f"expected runtime about {total / 60:.1f} min serial on a 2-core machine{par}")
    status = 0
    for spec in specs:
        spec = spec.with_overrides(seed=args.seed, secure=True if args.secure else None)
        out = os.path.join(args.out, spec.name)
        results = run_experiment(spec, out, jobs=args.jobs, overwrite=args.overwrite, resume=args.resume,
                                 progress=not args.no_progress, data_dir=args.data_dir, backend=args.backend,
                                 parallel=args.parallel, allow_large=args.yes)
        print_results(results, out, console)
        status = max(status, diverged_exit(results, out))
    return status
