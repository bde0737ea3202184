"""Plot and claim kinds of the (epsilon, delta)-calibrated S2 panels (spec §3.6, §3.7; not a paper figure).

``sharing_epsilon`` draws a metric at the last round against the per-iteration ``epsilon`` of swept DP ADMM
sharing runs (one line per run group, e.g. per choice of ``b1``), each point annotated with the total epsilon
of the first party over the run under the chosen accountant(s) (from the run's privacy report: S2 Cor. 1
advanced composition ``paper``, ``rdp``, ``pld``), beside the scikit-learn reference lines of
:mod:`privdist.experiments.kinds_sharing`. ``sharing_accountants_below_paper`` checks that the RDP and PLD totals
of every listed run are below the paper's advanced-composition total (same ``delta``); for a run whose releases are
only the paper's claim (issue 12) it compares the RDP/PLD composition of the declared events and says so.
"""

from __future__ import annotations

import math

from .claims import register_claim_kind
from .kinds_sharing import _PRETTY, _reference_lines, _selected
from .plots import register_plotter
from .summary import max_epsilon

__all__: list[str] = []

_SHORT = {"paper": "adv. comp.", "rdp": "RDP", "pld": "PLD"}


def _total(run, accountant: str, claimed: bool = False) -> float | None:
    """Largest total epsilon over parties of ``run`` under ``accountant`` (None when not reported): the guarantee
    (inf for a claim), or with ``claimed`` the RDP/PLD composition of the declared events (issue 12)."""
    use = claimed and accountant != "paper" and all("claimed" in a for a in run["privacy"]["per_agent"])
    return max_epsilon(run["privacy"], accountant, "claimed" if use else "epsilon")


def _guaranteed(run) -> bool:
    return all(a.get("guaranteed", True) for a in run["privacy"]["per_agent"])


def _total_text(run, accountant: str) -> str:
    """``RDP 12.3``; for a run that is only the paper's claim ``RDP inf (claim 12.3)``."""
    value = _total(run, accountant)
    text = f"{_SHORT.get(accountant, accountant)} {_fmt(value)}"
    if accountant != "paper" and value is not None and not math.isfinite(value):
        claim = _total(run, accountant, claimed=True)
        if claim is not None and math.isfinite(claim):
            text += f" (claim {_fmt(claim)})"
    return text


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if not math.isfinite(v) or v >= 1e5:
        return f"{v:.1e}"
    return f"{v:.3g}"


def _epsilon(ax, plot, runs, traces):
    """``metric`` at the last round against the per-iteration epsilon, one line per run group; grey text gives
    each epsilon's total over the run (the same for every group: it depends on epsilon, delta and T only),
    written at the bottom of the panel (leave room with ``ylim``)."""
    from matplotlib.transforms import blended_transform_factory  # matplotlib only when drawing

    metric = plot["metric"]
    accountants = list(plot.get("accountants", ["rdp", "pld"]))
    groups: dict[str, list] = {}
    for r in _selected(plot, runs):
        if "epsilon" in r["sweep"]:
            groups.setdefault(r.get("group") or r["label"], []).append(r)
    totals: dict[float, str] = {}
    for gi, (group, members) in enumerate(groups.items()):
        members.sort(key=lambda r: r["sweep"]["epsilon"])
        xs = [r["sweep"]["epsilon"] for r in members]
        ys = [float(traces[f"{r['label']}::{metric}"][:, -1].mean()) for r in members]
        name = group.replace("{epsilon}", "").strip(" ,=")
        ax.plot(xs, ys, marker="o", lw=1.6, label=f"{name}: {_PRETTY.get(metric, metric)}")
        for r, x, y in zip(members, xs, ys):
            ax.annotate(f"{y:.3f}", (x, y), textcoords="offset points", xytext=(8, 4 if gi % 2 == 0 else -10),
                        fontsize=7, color=f"C{gi}")
            totals.setdefault(x, "\n".join(_total_text(r, a) for a in accountants))
    _reference_lines(ax, plot, runs, traces)
    if "ylim" in plot:
        ax.set_ylim(*plot["ylim"])
    place = blended_transform_factory(ax.transData, ax.transAxes)  # x in data, y in axes units
    for x, text in totals.items():  # text, not tick labels: draw_plots resets the tickers when it sets the scale
        ax.text(x, 0.015, text, transform=place, ha="center", va="bottom", fontsize=6, color="dimgray")
    ax.set_xlabel("per-iteration epsilon per party (S2 Thm 3); grey: total epsilon over the run")


register_plotter("sharing_epsilon", _epsilon, {"accountants", "baselines", "paper", "ylim"})


def _below_paper(c, by_label, metric):
    """For every run of ``runs`` (labels or groups): the *guaranteed* RDP and PLD totals below the paper's
    advanced-composition claim. Fails for a run whose releases are not a guarantee (inf); the evidence then also
    gives the claimed RDP/PLD of the paper's model (below the paper's total by construction for Gaussians, which is
    why the claimed values cannot decide this claim)."""
    labels = [lab for ref in c["runs"] for lab, r in by_label.items() if lab == ref or r.get("group") == ref]
    if not labels:
        return None, "no run matched"
    holds, parts = True, []
    for lab in labels:
        tot = {a: _total(by_label[lab], a) for a in ("paper", "rdp", "pld")}
        if any(v is None for v in tot.values()):
            holds = False
        else:
            holds = holds and tot["rdp"] < tot["paper"] and tot["pld"] < tot["paper"]
        tail = ""
        if not _guaranteed(by_label[lab]):
            claim = {a: _total(by_label[lab], a, claimed=True) for a in ("rdp", "pld")}
            tail = (" (NOT guaranteed; the paper's model composed tightly: "
                    + ", ".join(f"{_SHORT[a]} {_fmt(v)}" for a, v in claim.items()) + ")")
        parts.append(f"{lab}: " + ", ".join(f"{_SHORT[a]} {_fmt(v)}" for a, v in tot.items()) + tail)
    return holds, "; ".join(parts)


register_claim_kind("sharing_accountants_below_paper", _below_paper)
