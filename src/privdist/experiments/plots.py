"""Figures of an experiment (matplotlib, PNG and SVG), drawn from the aggregated traces."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from .._io import atomic_write_bytes
from .store import inside

__all__ = ["draw_plots", "save_figure", "PLOTTERS", "register_plotter", "group_label", "moment_sampler_used", "tagged"]


def _setup():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def moment_sampler_used(run: dict) -> bool:
    """True when any agent of any trial of ``run`` drew its inner-loop averages with D-ZOA's moment sampler
    (``info[...]["inner_sampler_per_agent"]``, issue 14 item 5)."""
    return any("moments" in (info or {}).get("inner_sampler_per_agent", ()) for info in run.get("info", ()))


_MOMENTS_TAG = " [moments]"


def tagged(label: str, moments: bool) -> str:
    """``label`` with the moment-sampler tag when the curve or group used it."""
    return label + (_MOMENTS_TAG if moments else "")


def _shown(plot, r) -> bool:
    return not plot.get("runs") or r["label"] in plot["runs"] or r.get("group") in plot["runs"]


def _curves(ax, plot, runs, traces):
    metric = plot.get("metric")
    for r in runs:
        if not _shown(plot, r):
            continue
        data = traces[f"{r['label']}::{metric}"]
        x = np.arange(data.shape[1])
        mean = data.mean(axis=0)
        line, = ax.plot(x, mean, label=tagged(r["label"], moment_sampler_used(r)), lw=1.6)
        if data.shape[0] > 1:  # spread over trials: 10-90 % band (positive, unlike mean - std on a log axis)
            lo, hi = np.quantile(data, [0.1, 0.9], axis=0)
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
    ax.set_xlabel(plot.get("x", "iteration"))


def group_label(group: str) -> str:
    """Legend text of a swept group: its label template without the swept ``name={field}`` tokens."""
    return re.sub(r"\s*[^\s{}]*\{\w+\}", "", group).strip().strip(",;").strip()


def _final_vs_param(ax, plot, runs, traces):
    metric, param = plot.get("metric"), plot["x"]
    groups: dict[str, list] = {}
    moments = set()
    for r in runs:
        if param in r.get("sweep", {}):
            if plot.get("runs") and r.get("group") not in plot["runs"]:
                continue
            data = traces[f"{r['label']}::{metric}"][:, -1]
            groups.setdefault(r["group"], []).append((r["sweep"][param], data.mean(), data.std()))
            if moment_sampler_used(r):
                moments.add(r["group"])
    for group, pts in groups.items():
        pts.sort()
        xs, ys, ss = map(np.asarray, zip(*pts))
        ax.errorbar(xs, ys, yerr=ss if len(pts) else None, marker="o", capsize=3,
                    label=tagged(group_label(group), group in moments))
    ax.set_xlabel(param)


#: ``kind -> (draw(ax, plot, runs, traces), extra keys accepted in the [[plots]] table)``.
PLOTTERS: dict = {"curves": (_curves, frozenset()), "final_vs_param": (_final_vs_param, frozenset())}


def register_plotter(kind: str, draw, keys=frozenset()) -> None:
    """Add a plot kind: ``draw(ax, plot, runs, traces)`` draws one panel on a matplotlib axis."""
    PLOTTERS[kind] = (draw, frozenset(keys))


def draw_plots(spec, runs: list[dict], traces: dict[str, np.ndarray], out_dir: Path) -> list[str]:
    """Draw every ``[[plots]]`` entry of ``spec``; return the file names written (PNG and SVG)."""
    plt = _setup()
    files = []
    for i, plot in enumerate(spec.plots):
        plot = {"metric": spec.metrics[0], **plot}
        fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
        PLOTTERS[plot["kind"]][0](ax, plot, runs, traces)
        ax.set_yscale(plot.get("yscale", "log"))
        ax.set_xscale(plot.get("xscale", "linear"))
        ax.set_ylabel({"ne": "normalized error (sum over agents)"}.get(plot["metric"], plot["metric"]))
        title = plot.get("title", spec.title)
        if spec.mode == "quick":  # a quick figure never passes for the paper's
            title += f"\n[quick mode: {spec.trials} trial(s), {spec.rounds} rounds]"
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if len(ax.get_legend_handles_labels()[0]) > 5:  # many curves: the legend beside the axes, not over them
            fig.set_size_inches(9.6, 4.4)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        else:
            ax.legend(fontsize=8)
        if any(moment_sampler_used(r) for r in runs if _shown(plot, r)):
            fig.text(0.01, 0.005, f"{_MOMENTS_TAG.strip()}: D-ZOA inner-loop averages drawn from their exact mean and "
                     "covariance for agents with J_k >= threshold (see results.json info)", fontsize=6, ha="left",
                     va="bottom")
            fig.tight_layout(rect=(0, 0.03, 1, 1))
        else:
            fig.tight_layout()
        files += save_figure(fig, out_dir, plot.get("file", f"figure_{i + 1}"))
        plt.close(fig)
    return files


def save_figure(fig, out_dir: Path, stem: str) -> list[str]:
    """Write ``fig`` as ``STEM.png`` and ``STEM.svg`` in ``out_dir`` (rendered in memory, written atomically under
    a unique temporary name); returns the file names."""
    files = []
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext)
        atomic_write_bytes(inside(Path(out_dir), f"{stem}.{ext}"), buf.getvalue())
        files.append(f"{stem}.{ext}")
    return files
