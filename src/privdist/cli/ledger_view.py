"""The party's lifetime ledger on a terminal (issue 38; for ``privdist party --ledger``).

:func:`render_ledger_report` prints a :func:`privdist.privacy.lifetime_report.ledger_report` with ``rich``: the
composed lifetime epsilon (and the looser basic-composition sum, labelled), one row per job with its coordinator,
and one row per coordinator.
"""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

__all__ = ["render_ledger_report"]


def _eps(x) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.4g}"


def render_ledger_report(report: dict, console: Console) -> None:
    """Print ``report`` (a :func:`~privdist.privacy.lifetime_report.ledger_report`) on ``console``."""
    spent, basic = report["spent"], report["spent"]["basic_composition"]
    console.print(f"[bold]Lifetime ledger[/bold] {report['ledger']}")
    console.print(f"spent: epsilon {_eps(spent['epsilon'])} at delta {report['delta']:g} ({report['accountant']}, "
                  f"every release of every job composed)")
    console.print(f"  basic composition, for comparison: sum of per-job epsilons {_eps(basic['epsilon'])} at delta "
                  f"{basic['delta']:g}")
    committed = report["committed"]
    if committed["active_jobs"]:
        console.print(f"committed (jobs still running count at their reservation): epsilon "
                      f"{_eps(committed['epsilon'])}; active: {', '.join(committed['active_jobs'])}")
    budget = report.get("budget")
    if budget is not None:
        console.print(f"lifetime budget: epsilon {budget['lifetime_epsilon']:g}; committed "
                      f"{_eps(budget['committed_epsilon'])}")
    jobs = Table(title="jobs")
    for column, justify in (("job", "left"), ("coordinator", "left"), ("status", "left"), ("kind", "left"),
                            ("algorithm", "left"), ("trust", "left"), ("rounds", "right"), ("releases", "right"),
                            ("plan epsilon", "right"), ("epsilon spent", "right"), ("announced", "left")):
        jobs.add_column(column, justify=justify)
    for row in report["jobs"]:
        plan_eps = row["plan_epsilon"]
        jobs.add_row(row["job"], row["coordinator"], row["status"] + (f" ({row['reason']})" if row["reason"] else ""),
                     str(row["kind"]), str(row["algorithm"]), str(row["trust"]),
                     f"{row['rounds_recorded']}/{row['planned_rounds']}", str(row["releases"]),
                     "none" if plan_eps is None else str(plan_eps), _eps(row["epsilon"]),
                     row["times"].get("announced", "-"))
    console.print(jobs)
    by = Table(title="by coordinator")
    by.add_column("coordinator")
    by.add_column("jobs", justify="right")
    by.add_column("epsilon (composed)", justify="right")
    for name, item in report["coordinators"].items():
        by.add_row(name, str(len(item["jobs"])), _eps(item["epsilon"]))
    console.print(by)
