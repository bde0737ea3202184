"""``privdist reproduce`` ends with a one-screen tally and leaves the per-agent tables to summary.md (issue 28)."""

from __future__ import annotations

import io

from rich.console import Console

from privdist.cli.reproduce_cmd import _entry_lines, tally_table
from privdist.experiments.summary import claim_counts, per_agent_lines, privacy_notes


def _results(verdicts, agents=3, mode="quick"):
    per_agent = [{"agent": i, "guaranteed": True, "epsilon": {"paper": 1.3, "rdp": 1.1, "pld": 1.0},
                  "claimed": {}, "paper_note": None} for i in range(agents)]
    run = {"label": "DPSGD |x|", "params": {"epsilon": 1.0, "budget": "total"}, "seconds": 0.5,
           "metrics": {"ne": {"final_mean": 1.0, "final_std": 0.1}},
           "privacy": {"delta": 1e-5, "per_agent": per_agent, "not_guaranteed": [], "exposures": ["labels"],
                       "assumptions": []}}
    inf = [{**a, "epsilon": {"paper": float("inf"), "rdp": float("inf"), "pld": float("inf")}} for a in per_agent]
    clear = {**run, "label": "ADMM", "params": {},
             "privacy": {**run["privacy"], "per_agent": inf, "not_guaranteed": ["sent in the clear"]}}
    claims = [{"id": f"c{i}", "text": f"claim {i}", "holds": v, "evidence": "numbers"} for i, v in enumerate(verdicts)]
    return {"runs": [run, clear], "claims": claims, "trials": 2, "config": {"mode": mode}}


def test_claim_counts_and_entry_lines_name_what_fails():
    r = _results([True, True, False, None])
    assert claim_counts(r) == (2, 1, 1)
    lines = _entry_lines("s0_fig2", r, 12.3, "out/s0_fig2")
    assert lines[0] == "s0_fig2: 2 claim(s) hold, 1 do not, 1 not evaluated (12 s) -> out/s0_fig2/summary.md"
    assert lines[1:] == ["  does not hold: claim 2 (numbers)"]


def test_tally_fits_one_screen_whatever_the_agent_count():
    rows = [(f"entry{i}", _results([True, False], agents=100), 10.0 * i, f"out/entry{i}") for i in range(9)]
    buf = io.StringIO()
    Console(file=buf, width=140).print(tally_table(rows))
    text = buf.getvalue()
    assert len(text.splitlines()) <= 16  # header, 9 entries, total: no per-agent rows
    total = next(line for line in text.splitlines() if "total" in line)
    assert [int(x) for x in total.replace("│", " ").split()[1:5]] == [9, 9, 0, 360]


def test_per_agent_table_and_grouped_notes_for_summary_md():
    r = _results([True], agents=4)
    table = per_agent_lines(r)
    assert table[0] == "| agent | DPSGD \\|x\\| |" and len(table) == 2 + 4  # the | of a label is escaped
    assert table[2] == "| 0 | 1 / 1.3 / 1.1 / 1 |"  # requested total / paper / RDP / PLD
    notes = privacy_notes(r)
    assert "- DPSGD |x|, ADMM: exposure - labels" in notes  # one bullet for a note the runs share
    assert "- ADMM: no guarantee - sent in the clear" in notes
