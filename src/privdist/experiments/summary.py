"""``summary.md``: a human-readable account of one experiment's results."""

from __future__ import annotations

from pathlib import Path

from .._io import atomic_write_bytes
from .pairwise import pairwise_lines

__all__ = ["write_summary", "max_epsilon", "fmt_guarantee", "fmt_pld", "pld_header", "skellam_bound", "privacy_notes",
           "results_table", "claim_lines",
           "tuning_lines", "requested_epsilon", "private_runs", "agent_cells", "per_agent_lines", "claim_counts"]


def max_epsilon(privacy: dict, accountant: str, key: str = "epsilon"):
    """Largest epsilon over agents under ``accountant`` (None if it does not apply); ``key="claimed"`` reads the
    RDP/PLD composition of the releases as declared instead of the guarantee."""
    vals = [a[key].get(accountant) for a in privacy["per_agent"]]
    return None if not vals or any(v is None for v in vals) else max(vals)


def requested_epsilon(run: dict, agent: int | None = None):
    """The total epsilon a run was given (``budget = "total"``; one per agent or the largest over agents when
    ``agent`` is None), or None for a per-round budget (the papers': the guarantee columns are its total)."""
    params = run.get("params") or {}
    eps = params.get("epsilon")
    if params.get("budget") != "total" or eps in (None, False):
        return None
    if isinstance(eps, (list, tuple)):
        return max(eps) if agent is None else eps[agent]
    return eps


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _num(x, spec: str = ".4g") -> str:
    """A metric value; ``None`` is a NaN as :func:`privdist._io.write_json` stores it (a diverged run)."""
    return "nan" if x is None else format(x, spec)


def _cell(text: str) -> str:
    """``text`` for a markdown table cell (a ``|`` in a label such as ``||x||^2`` would start a new cell)."""
    return text.replace("|", "\\|")


def fmt_guarantee(privacy: dict, accountant: str) -> str:
    """The guarantee column: the largest epsilon over agents, ``inf (not private)`` when any agent has none."""
    value = max_epsilon(privacy, accountant)
    if value is not None and value == float("inf"):
        return "inf (not private)"
    return "n/a" if value is None else f"{value:.4g}"


def skellam_bound(privacy: dict) -> bool:
    """Whether some agent's guarantee (its ``pld`` value) is the Skellam RDP bound (secure sums: no PLD is published
    for them; ``guarantee_accountant`` of :func:`privdist.privacy.privacy_report`)."""
    return any(a.get("guarantee_accountant") == "skellam_rdp" for a in privacy["per_agent"])


def fmt_pld(privacy: dict) -> str:
    """The PLD guarantee column of a run (:func:`fmt_guarantee`), marked ``(Skellam RDP)`` where the value is that
    bound."""
    text = fmt_guarantee(privacy, "pld")
    return f"{text} (Skellam RDP)" if skellam_bound(privacy) else text


def pld_header(results: dict) -> str:
    """The name of the PLD guarantee column: ``PLD``, or ``PLD or Skellam RDP`` when a run's value is that bound."""
    return "PLD or Skellam RDP" if any(skellam_bound(r["privacy"]) for r in results["runs"]) else "PLD"


def privacy_notes(results: dict) -> list[str]:
    """Markdown bullets: why a guarantee is missing, named exposures, invalid paper formulas, noise provenance; a
    note that several runs share is one bullet naming them all."""
    runs_of: dict[tuple[str, str], list[str]] = {}  # (kind, note) -> labels, in order of first appearance
    for r in results["runs"]:
        p = r["privacy"]
        notes = [("no guarantee", why) for why in p.get("not_guaranteed", [])]
        notes += [("exposure", what) for what in p.get("exposures", [])]
        notes += [("paper claim", n) for n in sorted({a.get("paper_note") for a in p["per_agent"]} - {None})]
        for note in notes:
            runs_of.setdefault(note, []).append(r["label"])
    lines = [f"- {', '.join(labels)}: {kind} - {text}" for (kind, text), labels in runs_of.items()]
    noise = results.get("noise")
    if noise:
        lines.append(f"- noise: {noise['mode']} - {noise['note']}")
    return lines


def results_table(results: dict, metric: str) -> list[str]:
    """Markdown table of a results dictionary: final ``metric``, guarantee (RDP, PLD), paper's claim, seconds."""
    total = any(requested_epsilon(r) is not None for r in results["runs"])  # a column only where a total was given
    lines = [f"| run | {f'final {metric} (mean ± std)' if metric else 'metrics'} | {'requested eps (total) | ' if total else ''}guarantee eps (RDP) | "
             f"guarantee eps ({pld_header(results)}) | paper's claim | seconds |", "|---|---|---|---|---|---|" + ("---|" if total else "")]
    for r in results["runs"]:
        fm = r.get("metrics", {}).get(metric) if metric else None  # None: owner-only evaluation, not written here
        p = r["privacy"]
        req = f"{_fmt(requested_epsilon(r))} | " if total else ""
        cell = f"{_num(fm['final_mean'])} ± {_num(fm['final_std'], '.2g')}" if fm else "owner-only"
        lines.append(f"| {_cell(r['label'])} | {cell} | {req}"
                     f"{fmt_guarantee(p, 'rdp')} | {fmt_pld(p)} | "
                     f"{_fmt(max_epsilon(p, 'paper'))} | {r['seconds']:.2f} |")
    return lines


def private_runs(results: dict) -> list[dict]:
    """The runs with a finite, nonzero guarantee (RDP or PLD) for some agent: the ones a per-agent table shows."""
    return [r for r in results["runs"]
            if any(0 < (max_epsilon(r["privacy"], a) or 0) < float("inf") for a in ("rdp", "pld"))]


def per_agent_lines(results: dict) -> list[str]:
    """Markdown table of each agent's epsilon in every private run: requested total (where one was given) /
    paper's claim / guarantee RDP / guarantee PLD; empty when no run has a finite guarantee."""
    private = private_runs(results)
    if not private:
        return []
    total = any(requested_epsilon(r) is not None for r in private)
    lines = ["| agent | " + " | ".join(_cell(r["label"]) for r in private) + " |", "|---" * (len(private) + 1) + "|"]
    for i, entry in enumerate(private[0]["privacy"]["per_agent"]):
        lines.append(f"| {entry['agent']} | " + " | ".join(agent_cells(private, i, total)) + " |")
    return lines


def agent_cells(private: list, i: int, total: bool) -> list[str]:
    """Agent ``i``'s epsilons in each private run: ``[requested total /] paper / rdp / pld`` (the pld value marked
    ``(Skellam RDP)`` where it is that bound)."""
    cells = []
    for r in private:
        agent = r["privacy"]["per_agent"][i]
        e = agent["epsilon"]
        req = [_fmt(requested_epsilon(r, i))] if total else []
        mark = " (Skellam RDP)" if agent.get("guarantee_accountant") == "skellam_rdp" else ""
        cells.append(" / ".join(req + [_fmt(e.get(a)) for a in ("paper", "rdp", "pld")]) + mark)
    return cells


def claim_counts(results: dict) -> tuple[int, int, int]:
    """How many claims of ``results`` hold, do not hold and were not evaluated."""
    verdicts = [c["holds"] for c in results.get("claims", [])]
    return (sum(v is True for v in verdicts), sum(v is False for v in verdicts), sum(v is None for v in verdicts))


def claim_lines(results: dict) -> list[str]:
    """One markdown bullet per claim: verdict, text, evidence."""
    out = []
    for c in results["claims"]:
        verdict = "not evaluated" if c["holds"] is None else ("holds" if c["holds"] else "does not hold")
        out.append(f"- **{verdict}** - {c['text']} ({c['evidence']})")
    return out


def _short(params: dict) -> str:
    return ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in params.items())


def tuning_lines(results: dict) -> list[str]:
    """Markdown bullets of ``results["tuning"]`` (issue 14 item 2): draws, cost, and per tuned entry its grid and
    choice (flagged when at the edge of its grid); empty when the experiment was not tuned."""
    rec = results.get("tuning")
    if not rec:
        return []
    sweep = "; tuning sweep " + _short(rec["sweep"]) if rec.get("sweep") else ""
    lines = [f"- tuning ({rec.get('mode', 'full')} mode): seed {rec['seed']} (reported trials: seed "
             f"{results['seed']}), {rec['trials']} trial(s), {rec['rounds']} rounds, score {rec['score']}{sweep}; "
             f"{rec.get('runs', '?')} tuning runs" + (f", {rec['seconds']:.0f} s" if "seconds" in rec else "")]
    for template, e in rec["entries"].items():
        grid = "; ".join(f"{k} in {v}" for k, v in e["grid"].items())
        edge = f" (at grid edge: {', '.join(e['at_grid_edge'])})" if e["at_grid_edge"] else ""
        shared = f"; also used by {len(e['shared_with'])} other entr{'y' if len(e['shared_with']) == 1 else 'ies'}" \
            if e.get("shared_with") else ""
        lines.append(f"- tuned {template}: {grid} ({e['points']} points) -> {_short(e['chosen'])}{edge}{shared}")
    return lines


def write_summary(spec, results: dict, out_dir: Path) -> None:
    """Write ``summary.md`` for ``results`` into ``out_dir``."""
    m = spec.metrics[0]
    lines = [f"# {spec.title}", "", spec.description.strip(), "",
             f"Experiment `{spec.name}`" + (f", paper {spec.paper} {spec.figure}" if spec.paper else "")
             + f": {results['trials']} trials, seed {spec.seed}, {spec.rounds} rounds"
             + (" (quick mode: fewer trials, rounds and sweep points than the paper's; see `[quick]` in the spec)"
                if spec.mode == "quick" else "") + ".", "",
             *results_table(results, m)]
    delta = results["runs"][0]["privacy"]["delta"]
    lines += ["", f"Epsilon: the largest over agents and trials. The guarantee columns (RDP, PLD at delta = {delta}) "
              "compose only releases whose assumptions privdist enforces; inf means some message is not private or "
              "rests on an assumption privdist does not enforce. The paper's claim is the paper's own formula at its "
              "per-release delta, shown as the paper states it.", ""]
    notes = privacy_notes(results)
    if notes:
        lines += ["## What the epsilon means here", ""] + notes + [""]
    pairwise = pairwise_lines(results)
    if pairwise:
        lines += ["## Per-pair (network) DP", "", "Epsilon of what one observer's whole view reveals about one target "
                  "agent, beside the target's local DP (docs/network_dp.md).", "", *pairwise, ""]
    infos = [(r["label"], r["info"][0]) for r in results["runs"] if r.get("info") and r["info"][0]]
    if infos:
        lines += ["## Run details (first trial)", ""]
        lines += [f"- {lab}: " + "; ".join(f"{k} = {v}" for k, v in info.items()) for lab, info in infos] + [""]
    agents = per_agent_lines(results)
    if agents:
        total = any(requested_epsilon(r) is not None for r in private_runs(results))
        lines += ["## Epsilon per agent", "", f"Each cell: {'requested total / ' if total else ''}paper's claim / "
                  f"guarantee RDP / guarantee PLD (delta = {delta}).", "", *agents, ""]
    tuning = tuning_lines(results)
    if tuning:
        lines += ["## Tuning (chosen on tuning draws, not the reported trials)", "", *tuning, ""]
    if results["claims"]:
        lines += ["## Claims", "", *claim_lines(results), ""]
    assumptions = sorted({a for r in results["runs"] for a in r["privacy"]["assumptions"]})
    if assumptions:
        lines += ["## Assumptions of the privacy analyses", ""] + [f"- {a}" for a in assumptions] + [""]
    if results["figures"]:
        lines += ["## Figures", ""] + [f"![{f}]({f})" for f in results["figures"] if f.endswith(".png")] + [""]
    if results.get("figure_errors"):  # the results above are complete; only these figures are missing (issue 40)
        lines += ["## Figures not drawn", ""] + [f"- {e}" for e in results["figure_errors"]] + [""]
    lines += ["## Versions", "", ", ".join(f"{k} {v}" for k, v in results["versions"].items()), ""]
    atomic_write_bytes(out_dir / "summary.md", "\n".join(lines).encode())
