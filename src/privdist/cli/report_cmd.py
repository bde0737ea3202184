"""``privdist report DIR... [--markdown] [--metric M] [--page FILE.md]``: tables generated from results directories.

Result tables in the documentation are produced by this command from the results directories of real runs, never
typed by hand (issue 14 item 6): ``--page`` writes the report into the generated block of a documentation page (the
per-paper pages of the docs site, issue 28), with a claim tally and the figures. Each directory must hold a complete
``results.json`` (see :mod:`privdist.experiments.store`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import OutputDirError, ValidationError

__all__ = ["register", "report_markdown", "PAGE_START", "PAGE_END", "page_block", "write_page"]

#: The markers around the generated part of a page written by ``--page``; text outside them is kept.
PAGE_START = "<!-- privdist report: generated from results, do not edit by hand -->"
PAGE_END = "<!-- privdist report: end -->"


def register(sub) -> None:
    p = sub.add_parser("report", help="markdown tables from results directories (the docs' result tables)")
    p.add_argument("dirs", nargs="+", help="results directories (each with results.json)")
    p.add_argument("--metric", help="metric of the table (default: the experiment's first metric)")
    p.add_argument("--markdown", action="store_true", help="print markdown (the default; kept for clarity)")
    p.add_argument("--no-claims", action="store_true", help="leave out the claim verdicts")
    p.add_argument("--no-notes", action="store_true", help="leave out the per-run privacy notes")
    p.add_argument("--page", metavar="FILE.md",
                   help="write the report, a claim tally and the figures into the generated block of FILE.md "
                        "(created if missing; the text around the block is kept) instead of printing it")
    p.set_defaults(func=_main)


def _load(path: Path) -> dict:
    from .._io import check_complete, read_json  # here, not at import: start-up time
    from ..experiments.results_file import check_results

    f = path / "results.json"
    if path.exists() and not path.is_dir():
        raise OutputDirError(f"{path} is not a directory (give a results directory, e.g. results/NAME)")
    check_complete(path)  # interrupted (issue 40): refused even when its results.json looks whole
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


def report_markdown(dirs, metric: str | None = None, claims: bool = True, notes: bool = True,
                    page_dir=None) -> str:
    """The markdown report of ``dirs`` (a title line, the results table, privacy notes, tuning choices and claim
    verdicts each). With ``page_dir`` (the folder of the page it goes into) each entry gets a heading and its PNG
    figures linked relative to ``page_dir``.

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
        about = (f"`{results['experiment']}`, {results['trials']} trial(s), seed {results['seed']}"
                 f"{', quick mode' if mode == 'quick' else ''}")
        head = (f"### {results['title']}\n\n{about}" if page_dir is not None
                else f"**{results['title']}** ({about})")
        parts += [head, "", *results_table(results, m if m in metrics else None), ""]
        rb = results.get("release_boundary", {})
        if rb.get("private_data"):
            parts += [f"- release boundary: {rb['note']}", ""]
        for lines in (privacy_notes(results) if notes else [], pairwise_lines(results), tuning_lines(results)):
            if lines:
                parts += [*lines, ""]
        if claims and results.get("claims"):
            parts += [*claim_lines(results), ""]
        if page_dir is not None:
            rel = Path(os.path.relpath(d, page_dir)).as_posix()
            parts += [f"![{Path(f).stem}]({rel}/{f})" for f in results.get("figures", []) if f.endswith(".png")] + [""]
    return "\n".join(parts)


def _tally(dirs) -> list[str]:
    from ..experiments.summary import claim_counts

    lines = ["| entry | mode | trials | claims hold | do not hold | not evaluated |", "|---|---|---|---|---|---|"]
    for d in dirs:
        results = _load(Path(d))
        counts = claim_counts(results)
        lines.append(f"| `{results['experiment']}` | {results.get('config', {}).get('mode', 'full')} | "
                     f"{results['trials']} | " + " | ".join(str(c) for c in counts) + " |")
    return lines


def page_block(dirs, page_dir, metric: str | None = None, claims: bool = True, notes: bool = True) -> str:
    """The generated block of a page in ``page_dir``: markers, the claim tally and :func:`report_markdown`."""
    body = report_markdown(dirs, metric, claims, notes, page_dir=page_dir).rstrip("\n")
    return "\n".join([PAGE_START, "", *_tally(dirs), "", body, "", PAGE_END])


def write_page(page, dirs, metric: str | None = None, claims: bool = True, notes: bool = True) -> None:
    """Replace the generated block of ``page`` (or append one; create the file if missing), atomically."""
    from .._io import atomic_write_bytes

    page = Path(page)
    block = page_block(dirs, page.parent, metric, claims, notes)
    text = page.read_text(encoding="utf-8") if page.is_file() else ""
    if (PAGE_START in text) != (PAGE_END in text):
        raise OutputDirError(f"{page} has only one of the generated-block markers; restore the other or remove both")
    if PAGE_START in text:
        head, rest = text.split(PAGE_START, 1)
        text = head + block + rest.split(PAGE_END, 1)[1]
    else:
        text = text + ("\n" if text and not text.endswith("\n") else "") + block + "\n"
    atomic_write_bytes(page, text.encode("utf-8"))


def _main(args) -> int:
    if args.page:
        write_page(args.page, args.dirs, args.metric, not args.no_claims, not args.no_notes)
        print(f"wrote the report of {len(args.dirs)} results director{'y' if len(args.dirs) == 1 else 'ies'} "
              f"into {args.page}")
        return 0
    print(report_markdown(args.dirs, args.metric, not args.no_claims, not args.no_notes))
    return 0
