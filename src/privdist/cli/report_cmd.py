"""``privdist report DIR... [--markdown] [--metric M]``: tables generated from results directories.

The README's result tables are produced by this command from the results directories of real runs, never typed
by hand (issue 14 item 6). Each directory must hold a complete ``results.json`` (see
:mod:`privdist.experiments.store`).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import OutputDirError, ValidationError

__all__ = ["register", "report_markdown"]


def register(sub) -> None:
    p = sub.add_parser("report", help="markdown tables from results directories (what the README's tables are)")
    p.add_argument("dirs", nargs="+", help="results directories (each with results.json)")
    p.add_argument("--metric", help="metric of the table (default: the experiment's first metric)")
    p.add_argument("--markdown", action="store_true", help="print markdown (the default; kept for clarity)")
    p.add_argument("--no-claims", action="store_true", help="leave out the claim verdicts")
    p.add_argument("--no-notes", action="store_true", help="leave out the per-run privacy notes")
    p.set_defaults(func=_main)


def _load(path: Path) -> dict:
    from .._io import read_json  # here, not at import: start-up time
    from ..experiments.results_file import check_results

    f = path / "results.json"
    if path.exists() and not path.is_dir():
        raise OutputDirError(f"{path} is not a directory (give a results directory, e.g. results/NAME)")
    if not f.is_file():
        raise OutputDirError(f"{path} holds no results.json (not a privdist results directory)")
    try:
        results = read_json(f)
    except (ValueError, OSError) as exc:
        raise OutputDirError(f"{f} cannot be read as JSON: {exc}") from None
    results = check_results(results, str(f))
    if not results.get("complete", False):
        raise OutputDirError(f"{f} is from an unfinished run (complete = false); finish it with --resume first")
    return results


def report_markdown(dirs, metric: str | None = None, claims: bool = True, notes: bool = True) -> str:
    """The markdown report of ``dirs`` (a title line, the results table, privacy notes, tuning choices and claim
    verdicts each).

    Raises:
        OutputDirError: a directory holds no complete results.
        ValidationError: ``metric`` is not one of an experiment's metrics.
    """
    from ..experiments.pairwise import pairwise_lines
    from ..experiments.summary import claim_lines, privacy_notes, results_table, tuning_lines

    parts = []
    for d in dirs:
        results = _load(Path(d))
        metrics = list(results["runs"][0].get("metrics", {}))  # empty: owner-only evaluation (release boundary)
        m = metric or (metrics[0] if metrics else None)
        if m is not None and m not in metrics and metrics:
            raise ValidationError(f"{d}: no metric {m!r}; this experiment has {metrics}")
        mode = results.get("config", {}).get("mode", "full")
        head = (f"**{results['title']}** (`{results['experiment']}`, {results['trials']} trial(s), seed "
                f"{results['seed']}{', quick mode' if mode == 'quick' else ''})")
        parts += [head, "", *results_table(results, m if m in metrics else None), ""]
        rb = results.get("release_boundary", {})
        if rb.get("private_data"):
            parts += [f"- release boundary: {rb['note']}", ""]
        for lines in (privacy_notes(results) if notes else [], pairwise_lines(results), tuning_lines(results)):
            if lines:
                parts += [*lines, ""]
        if claims and results.get("claims"):
            parts += [*claim_lines(results), ""]
    return "\n".join(parts)


def _main(args) -> int:
    print(report_markdown(args.dirs, args.metric, not args.no_claims, not args.no_notes))
    return 0
