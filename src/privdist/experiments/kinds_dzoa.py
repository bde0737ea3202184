"""Experiment pieces for the D-ZOA papers (S0, S1; spec §2.11, §7): epsilon-bar axes, the Gaussianity check,
a "comparable" claim (the baselines' grid search on disjoint seeds is
:func:`privdist.experiments.tuning.grid_search`).

* Problem kind ``dzoa_probe``: the ``horizontal_erm`` problem with a :class:`~privdist.algorithms.dzoa.ProbeSink`
  attached; metrics ``ne``, ``probe1``, ``probe2`` (the entry of ``g_k^{(t)}`` that D-ZOA's ``probe_*``
  parameters select, recorded in every outer round; NaN when nothing was probed). In-process backends only.
* Plot kinds ``final_vs_epsbar`` (final metric vs the total epsilon of S1(25), read from each run's privacy report,
  i.e. the *realised* epsilon after rounding ``J``), ``probe_hist`` and ``probe_qq`` (S1 Figs 2-3; column
  ``round`` of the probe trace across trials, with Shapiro-Wilk and Anderson-Darling statistics printed on the
  axes).
* Claim kind ``within_factor``: the final metric of ``run`` is within a factor ``value`` of every run in
  ``than`` (S1 Fig. 1, "comparable").
"""

from __future__ import annotations

import math

import numpy as np

from ..algorithms.dzoa import ProbeSink
from .problem_kinds import ProblemKind, Trial, register_problem_kind
from .claims import _final, register_claim_kind
from .kinds import build_horizontal_erm
from .plots import group_label, moment_sampler_used, register_plotter, tagged

__all__ = ["build_dzoa_probe", "normality_stats", "paper_epsilon_bar"]


def build_dzoa_probe(spec, rng, data_dir) -> Trial:
    """``horizontal_erm`` trial whose problem carries a probe sink read by the ``probe1``/``probe2`` metrics."""
    trial = build_horizontal_erm(spec, rng, data_dir)
    sink = ProbeSink(2)
    trial.problem.probe_sink = sink
    def probe(i):
        def metric(est):
            return sink.pop(i)

        metric.nan_ok = True  # NaN = nothing probed this round, not divergence
        return metric

    trial.metrics["probe1"], trial.metrics["probe2"] = probe(0), probe(1)
    return trial


register_problem_kind(ProblemKind("dzoa_probe", frozenset({"loss", "regularizer", "reg_weight", "reference", "loss_scale"}),
                                  ("ne", "probe1", "probe2"), build_dzoa_probe))


def paper_epsilon_bar(run: dict) -> float | None:
    """The largest per-agent total epsilon of a run under the paper accountant (S1(25) for 2.1-Gaussians)."""
    vals = [a["epsilon"].get("paper") for a in run.get("privacy", {}).get("per_agent", [])]
    vals = [v for v in vals if v is not None]
    return max(vals) if vals else None


def _final_vs_epsbar(ax, plot, runs, traces):
    metric = plot.get("metric")
    groups: dict[str, list] = {}
    moments = set()
    for r in runs:
        if plot.get("runs") and r.get("group") not in plot["runs"] and r["label"] not in plot["runs"]:
            continue
        eb = paper_epsilon_bar(r)
        if eb is None:
            continue
        data = traces[f"{r['label']}::{metric}"][:, -1]
        groups.setdefault(r["group"], []).append((eb, data.mean(), data.std()))
        if moment_sampler_used(r):
            moments.add(r["group"])
    for group, pts in groups.items():
        pts.sort()
        xs, ys, ss = map(np.asarray, zip(*pts))
        ax.errorbar(xs, ys, yerr=ss if len(pts) > 1 else None, marker="o", capsize=3,
                    label=tagged(group_label(group), group in moments))
    ax.set_xlabel("total epsilon-bar (S1(25), realised)")


def normality_stats(x) -> dict:
    """Shapiro-Wilk ``W`` and Anderson-Darling ``A^2`` with their p-values (``n`` finite values used)."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 3:
        return {"n": int(x.size)}
    w, p = stats.shapiro(x)
    ad = stats.anderson(x, dist="norm", method="interpolate")
    return {"n": int(x.size), "shapiro_w": float(w), "shapiro_p": float(p), "anderson": float(ad.statistic),
            "anderson_p": float(ad.pvalue)}


def _probe_values(plot, runs, traces):
    label = plot.get("runs", [runs[0]["label"]])[0]
    data = traces[f"{label}::{plot['metric']}"]
    col = int(plot.get("round", data.shape[1] - 1))
    return data[:, col], label, col


def _stats_text(x) -> str:
    s = normality_stats(x)
    if "shapiro_w" not in s:
        return f"n = {s['n']} (too few for a test)"
    return (f"n = {s['n']}\nShapiro-Wilk W = {s['shapiro_w']:.3f}, p = {s['shapiro_p']:.3g}\n"
            f"Anderson-Darling A2 = {s['anderson']:.3f}, p = {s['anderson_p']:.3g} (tabulated, clipped to [0.01, 0.15])")


def _probe_hist(ax, plot, runs, traces):
    x, label, col = _probe_values(plot, runs, traces)
    x = x[np.isfinite(x)]
    ax.hist(x, bins=max(5, int(np.sqrt(x.size)) + 2), color="C0", alpha=0.8, label=f"{label}, m={col}")
    ax.text(0.02, 0.97, _stats_text(x), transform=ax.transAxes, va="top", fontsize=7,
            bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
    ax.set_xlabel("entry of g_k^(t) (agent 2)")


def _probe_qq(ax, plot, runs, traces):
    from scipy import stats

    x, label, col = _probe_values(plot, runs, traces)
    x = x[np.isfinite(x)]
    (osm, osr), (slope, icpt, _) = stats.probplot(x, dist="norm")
    ax.plot(osm, osr, "o", ms=3, label=f"{label}, m={col}")
    ax.plot(osm, slope * osm + icpt, "r-", lw=1, label="normal fit")
    ax.text(0.02, 0.97, _stats_text(x), transform=ax.transAxes, va="top", fontsize=7,
            bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
    ax.set_xlabel("standard normal quantiles")


register_plotter("final_vs_epsbar", _final_vs_epsbar)
register_plotter("probe_hist", _probe_hist, frozenset({"round"}))
register_plotter("probe_qq", _probe_qq, frozenset({"round"}))


def _within_factor(c, by_label, metric):
    a = _final(by_label, c["run"], metric)
    others = {lab: _final(by_label, lab, metric) for lab in c["than"]}
    ratios = {lab: max(a / v, v / a) if a > 0 and v > 0 else math.inf for lab, v in others.items()}
    evidence = f"{metric} {c['run']}: {a:.4g}; " + "; ".join(
        f"{lab}: {others[lab]:.4g} (ratio {ratios[lab]:.3g})" for lab in others) + f" (allowed factor {c['value']})"
    return all(r <= c["value"] for r in ratios.values()), evidence


register_claim_kind("within_factor", _within_factor)


def _at_most_factor(c, by_label, metric):
    """``run``'s final metric is at most ``value`` times each ``than`` run's ("at least comparable", issue 14)."""
    if not c.get("than"):
        return None, "nothing to compare with (empty 'than')"
    a = _final(by_label, c["run"], metric)
    others = {lab: _final(by_label, lab, metric) for lab in c["than"]}
    evidence = f"{metric} {c['run']}: {a:.4g}; " + "; ".join(
        f"{lab}: {v:.4g} (ratio {a / v if v > 0 else math.inf:.3g})" for lab, v in others.items()) + \
        f" (allowed factor {c['value']})"
    return all(v > 0 and a <= c["value"] * v for v in others.values()), evidence


register_claim_kind("at_most_factor", _at_most_factor)
