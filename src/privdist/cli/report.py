"""Terminal rendering of experiment results (rich tables)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from ..experiments.summary import max_epsilon

__all__ = ["print_results"]


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def print_results(results: dict, out_dir, console: Console | None = None) -> None:
    """Print the accuracy/privacy table, per-agent epsilon, claims and where the files are."""
    console = console or Console(width=None if sys.stdout.isatty() else 140)
    metric = next(iter(results["runs"][0]["metrics"]))
    delta = results["runs"][0]["privacy"]["delta"]
    table = Table(title=f"{results['title']}  ({results['trials']} trials)")
    table.add_column("run")
    table.add_column(f"final {metric} mean ± std", justify="right")
    for acc in ("paper", "rdp", "pld"):
        table.add_column(f"max eps {acc}", justify="right")
    table.add_column("seconds", justify="right")
    for r in results["runs"]:
        m = r["metrics"][metric]
        p = r["privacy"]
        table.add_row(r["label"], f"{m['final_mean']:.3e} ± {m['final_std']:.1e}",
                      *(_fmt(max_epsilon(p, a)) for a in ("paper", "rdp", "pld")), f"{r['seconds']:.2f}")
    console.print(table)
    private = [r for r in results["runs"] if any(max_epsilon(r["privacy"], a) for a in ("rdp", "pld"))]
    if private:
        agents = Table(title=f"epsilon per agent: paper / RDP / PLD (delta = {delta})")
        agents.add_column("agent")
        for r in private:
            agents.add_column(r["label"], justify="right")
        for i, entry in enumerate(private[0]["privacy"]["per_agent"]):
            cells = []
            for r in private:
                e = r["privacy"]["per_agent"][i]["epsilon"]
                cells.append(" / ".join(_fmt(e.get(a)) for a in ("paper", "rdp", "pld")))
            agents.add_row(str(entry["agent"]), *cells)
        console.print(agents)
    for c in results["claims"]:
        mark = ("[yellow]not evaluated[/yellow]" if c["holds"] is None
                else "[green]holds[/green]" if c["holds"] else "[red]does not hold[/red]")
        console.print(f"claim {c['id']}: {mark} - {c['text']} ({c['evidence']})")
    console.print(f"results: {out_dir}/results.json, summary.md, " + ", ".join(results["figures"]))
