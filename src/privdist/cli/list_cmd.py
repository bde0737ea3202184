"""``privdist list``: the experiment catalog."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from ..experiments.catalog import catalog_index, resolve_paper

__all__ = ["register"]


def register(sub) -> None:
    p = sub.add_parser("list", help="list the experiments of the catalog")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--paper", help="only this paper (S0..S4, dzoa, sharing, laadmm, dpdonc)")
    p.set_defaults(func=_main)


def _main(args) -> int:
    rows = catalog_index()  # read from the TOML files: no spec building, no algorithm imports (start-up time)
    if args.paper:
        ids = resolve_paper(args.paper)
        rows = [r for r in rows if r["paper"] in ids]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = Table(title="privdist experiments")
    for col in ("name", "paper", "figure", "trials", "est. runtime", "title"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["paper"] or "-", r["figure"], str(r["trials"]),
                      f"{r['estimated_seconds']:.0f} s", r["title"])
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    return 0
