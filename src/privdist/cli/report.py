"""Terminal rendering of experiment results (rich tables)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from ..experiments.pairwise import pairwise_lines
from ..experiments.summary import (agent_cells, fmt_guarantee, fmt_pld, max_epsilon, pld_header, privacy_notes,
                                   private_runs, requested_epsilon)

__all__ = ["print_results"]


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def print_results(results: dict, out_dir, console: Console | None = None) -> None:
    """Print the accuracy/privacy table, per-agent epsilon, claims and where the files are."""
    console = console or Console(width=None if sys.stdout.isatty() else 140)
    metric = next(iter(results["runs"][0].get("metrics", {})), None)  # None: owner-only, not in results.json
    delta = results["runs"][0]["privacy"]["delta"]
    table = Table(title=f"{results['title']}  ({results['trials']} trials)")
    table.add_column("run")
    table.add_column(f"final {metric} mean ± std" if metric else "metrics", justify="right")
    table.add_column("guarantee eps RDP", justify="right")
    table.add_column(f"guarantee eps {pld_header(results)}", justify="right")  # Skellam sums: their RDP bound
    table.add_column("paper's claim", justify="right")
    table.add_column("seconds", justify="right")
    for r in results["runs"]:
        m = r["metrics"][metric] if metric else None
        p = r["privacy"]
        cell = f"{m['final_mean']:.3e} ± {m['final_std']:.1e}" if m else "owner-only"
        table.add_row(r["label"], cell, fmt_guarantee(p, "rdp"),
                      fmt_pld(p), _fmt(max_epsilon(p, "paper")), f"{r['seconds']:.2f}")
    console.print(table)
    for line in privacy_notes(results):  # the same notes as summary.md (secure noise needs no warning)
        if not line.startswith("- noise: secure"):
            console.print(line[2:], style="yellow", markup=False)
    private = private_runs(results)
    if private:
        total = any(requested_epsilon(r) is not None for r in private)  # each party's request beside its guarantee
        agents = Table(title=f"epsilon per agent: {'requested total / ' if total else ''}paper's claim / guarantee "
                             f"RDP / guarantee PLD (delta = {delta})")
        agents.add_column("agent")
        for r in private:
            agents.add_column(r["label"], justify="right")
        for i, entry in enumerate(private[0]["privacy"]["per_agent"]):
            agents.add_row(str(entry["agent"]), *agent_cells(private, i, total))
        console.print(agents)
    for line in pairwise_lines(results):  # per-pair (network) DP, issue 29
        console.print(line[2:] if line.startswith("- ") else line, markup=False)
    for c in results["claims"]:
        mark = ("[yellow]not evaluated[/yellow]" if c["holds"] is None
                else "[green]holds[/green]" if c["holds"] else "[red]does not hold[/red]")
        console.print(f"claim {c['id']}: {mark} - {c['text']} ({c['evidence']})")
    rb = results.get("release_boundary", {})
    if rb.get("private_data"):
        console.print(f"release boundary: {rb['note']}", style="yellow", markup=False)
        console.print(f"results: {out_dir}/results.json (release)"
                      + (f"; owner-only: {', '.join(rb['owner_only'])}" if rb.get("owner_only") else ""))
        return
    console.print(f"results: {out_dir}/results.json, summary.md, " + ", ".join(results["figures"]))
