"""``privdist reproduce PAPER``: every catalog experiment of one source paper.

The screen gets one short block per entry as it finishes (its claim counts, the claims that do not hold, where its
files are) and, at the end, a one-screen tally; the long tables (every run, every agent's epsilon, tuning) are in
each entry's ``summary.md`` and ``privdist report``.
"""

from __future__ import annotations

import os
import sys
import time

from rich.console import Console
from rich.table import Table

from ..errors import UnknownNameError
from .run_cmd import add_run_options, check_run_options, diverged_exit, quick_variant

__all__ = ["register", "tally_table"]


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="run every catalog experiment of a paper (S0..S4 or dzoa, sharing, ...)")
    p.add_argument("paper", help="S0, S1, S2, S3, S4, or dzoa (S0 and S1), sharing, laadmm, dpdonc")
    p.add_argument("--quick", action="store_true",
                   help="each spec's quick variant: quick_trials trials and its [quick] rounds/sweep points")
    p.add_argument("--out", default="results", help="parent directory of the results (default: results)")
    add_run_options(p)
    p.set_defaults(func=_main)


def tally_table(rows: list[tuple[str, dict, float, str]]) -> Table:
    """The final tally: per entry (name, results, wall seconds, output folder) its mode, trials, claims holding /
    not holding / not evaluated, runtime and folder, with a total row."""
    from ..experiments.summary import claim_counts

    table = Table(title="reproduction tally")
    for col in ("entry", "mode", "trials", "hold", "do not hold", "not evaluated", "seconds", "output folder"):
        table.add_column(col, justify="right" if col in ("trials", "hold", "do not hold", "not evaluated",
                                                         "seconds") else "left")
    sums = [0, 0, 0]
    for name, results, seconds, out in rows:
        counts = claim_counts(results)
        sums = [a + b for a, b in zip(sums, counts)]
        table.add_row(name, results.get("config", {}).get("mode", "full"), str(results["trials"]),
                      *(str(c) for c in counts), f"{seconds:.0f}", out)
    table.add_row("total", "", "", *(str(s) for s in sums), f"{sum(r[2] for r in rows):.0f}", "", style="bold")
    return table


def _entry_lines(name: str, results: dict, seconds: float, out: str) -> list[str]:
    from ..experiments.summary import claim_counts

    holds, fails, unknown = claim_counts(results)
    lines = [f"{name}: {holds} claim(s) hold, {fails} do not, {unknown} not evaluated ({seconds:.0f} s) -> "
             f"{out}/summary.md"]
    lines += [f"  does not hold: {c['text']} ({c['evidence']})" for c in results["claims"] if c["holds"] is False]
    return lines


def _main(args) -> int:
    console = Console(width=None if sys.stdout.isatty() else 140)
    check_run_options(args)
    from ..experiments import experiments_of_paper, resolve_paper, run_experiment  # start-up time

    ids = resolve_paper(args.paper)
    specs = experiments_of_paper(args.paper)
    if not specs:
        raise UnknownNameError(f"catalog entry for paper {'/'.join(ids)} (none shipped yet)", args.paper, [])
    specs = [quick_variant(s) if args.quick else s for s in specs]
    total = sum(s.estimated_seconds for s in specs)
    par = f", about {total / args.jobs / 60:.1f} min with --jobs {args.jobs}" if args.jobs > 1 else ""
    console.print(f"reproducing {', '.join(ids)}: {len(specs)} experiment(s) ({'quick' if args.quick else 'full'} mode), "
                  f"expected runtime about {total / 60:.1f} min serial on a 2-core machine{par}")
    status, rows = 0, []
    for spec in specs:
        spec = spec.with_overrides(seed=args.seed, secure=True if args.secure else None)
        out = os.path.join(args.out, spec.name)
        start = time.perf_counter()
        results = run_experiment(spec, out, jobs=args.jobs, overwrite=args.overwrite, resume=args.resume,
                                 progress=not args.no_progress, data_dir=args.data_dir, backend=args.backend,
                                 parallel=args.parallel, allow_large=args.yes)
        rows.append((spec.name, results, time.perf_counter() - start, out))
        for line in _entry_lines(*rows[-1]):
            console.print(line, markup=False, highlight=False)
        status = max(status, diverged_exit(results, out))
    console.print(tally_table(rows))
    console.print(f"tables, every agent's epsilon and figures: each folder's summary.md; markdown of them all: "
                  f"privdist report {os.path.join(args.out, '*')}", markup=False, highlight=False)
    return status
