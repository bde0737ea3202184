"""The per-pair (network) DP figure of a run (issue 29): observer x target heatmap and distance profile.

Left: the per-pair epsilon matrix (rows: observers, columns: target agents) on a log colour scale (epsilon 0 grey,
inf red; blank: not a pair). When every agent
is an observer, rows and columns follow one reverse Cuthill-McKee order of the graph (neighbours get nearby
indices, so the loss concentrates in a band around the blank diagonal, an observer's own data); otherwise targets
are ordered by hop distance from the first observer. Right: epsilon by hop distance (median and min-max range over
pairs) against the local-DP epsilon of the same releases.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .plots import save_figure

__all__ = ["draw_pairwise", "pairwise_figure"]


def _matrix(rows) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def _order(section: dict, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column orders of the heatmap (module docstring)."""
    n_obs, n = dist.shape
    if [o for o in section["observers"]] == [[i] for i in range(n)]:
        import scipy.sparse as sp
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        adj = sp.csr_array(np.nan_to_num(dist, nan=0.0) == 1, dtype=float)
        perm = np.asarray(reverse_cuthill_mckee(adj, symmetric_mode=True))
        return perm, perm
    return np.arange(n_obs), np.lexsort((np.arange(n), np.nan_to_num(dist[0], nan=-1.0)))


def _number(x) -> float:
    """A statistic as results.json holds it (``None``, ``"inf"`` or a float) as a float (NaN for ``None``)."""
    return np.nan if x is None else float(x)


def _profile(bx, section: dict) -> None:
    """The right panel: epsilon by hop distance, median with min-max bars (each bar clamped at 0: the summaries are
    ordered by construction, :func:`~privdist.privacy.pairwise.network_report.pairwise_report`), on a log scale
    that cannot show a distance whose median epsilon is 0 (e.g. beyond the run's reach: the target's messages do
    not reach the observer in the run's rounds) or infinite distances: the axis label counts their pairs instead."""
    prof = [p for p in section["by_distance"] if np.isfinite(_number(p["distance"]))]
    d = np.array([p["distance"] for p in prof], dtype=float)
    lo, med, hi = (np.array([_number(p["epsilon"][k]) for p in prof]) for k in ("min", "median", "max"))
    shown = np.isfinite(med) & (med > 0)
    if shown.any():
        bars = [np.where(np.isfinite(b), np.maximum(b, 0.0), 0.0)[shown] for b in (med - lo, hi - med)]
        bx.errorbar(d[shown], med[shown], yerr=bars, marker="o", capsize=3, label="per pair: median, min-max")
        bx.set_yscale("log")
    local = _number(section["summary"]["local_epsilon"]["max"])
    if np.isfinite(local) and local > 0:
        bx.axhline(local, color="C3", ls="--", label=f"local DP (every message seen): {local:.3g}")
    if d.size:
        bx.set_xticks(d)
    zero = sum(p["pairs"] for p, s in zip(prof, shown) if not s)
    far = sum(p["pairs"] for p in section["by_distance"] if not np.isfinite(_number(p["distance"])))
    hidden = [f"{n} pairs {what}" for n, what in ((zero, "at median epsilon 0"), (far, "unreachable")) if n]
    bx.set_xlabel("hop distance observer - target" + (f"\n(not shown: {', '.join(hidden)})" if hidden else ""))
    bx.set_ylabel("epsilon")
    bx.grid(True, which="both", alpha=0.3)
    if bx.get_legend_handles_labels()[0]:
        bx.legend(fontsize=8)
    bx.set_title(f"{section['model']}: epsilon by distance ({section['summary']['pairs']} pairs)", fontsize=10)


def pairwise_figure(section: dict, title: str):
    """A matplotlib figure of one pairwise section (:func:`privdist.privacy.pairwise.network_report.pairwise_report`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    eps, dist = _matrix(section["epsilon"]), _matrix(section["distance"])
    rows, cols = _order(section, dist)
    shown = eps[np.ix_(rows, cols)]
    finite = shown[np.isfinite(shown) & (shown > 0)]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11.5, 4.6), dpi=120, gridspec_kw={"width_ratios": [1.25, 1]})
    cmap, norm, extend, label = matplotlib.colormaps["viridis"], None, "neither", ""
    if finite.size:  # epsilon 0 and inf have no place on a log scale: grey and red ends instead of blank cells
        norm = LogNorm(vmin=finite.min(), vmax=finite.max())
        zero, inf = shown == 0, np.isposinf(shown)
        shown = np.where(zero, finite.min() / 2, np.where(inf, finite.max() * 2, shown))
        cmap = cmap.with_extremes(under="0.75", over="C3")
        extend = {(False, False): "neither", (True, False): "min", (False, True): "max", (True, True): "both"}[
            (bool(zero.any()), bool(inf.any()))]
        label = "".join(t for t, on in (("; grey: 0", zero.any()), ("; red: inf", inf.any())) if on)
    im = ax.imshow(np.ma.masked_invalid(shown), aspect="auto", interpolation="nearest", cmap=cmap, norm=norm)
    fig.colorbar(im, ax=ax, extend=extend, label=f"per-pair epsilon (delta = {section['delta']:g}{label})")
    square = rows.size == cols.size
    ax.set_xlabel("target agent (" + ("graph order" if square else "by hop distance from the first observer") + ")")
    ax.set_ylabel("observer" + (" (same order)" if square else ""))
    labels = [section["observer_labels"][i] for i in rows]
    if len(labels) <= 25:
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
    ax.set_title("who learns what: observer x target", fontsize=10)
    _profile(bx, section)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def draw_pairwise(runs: list[dict], out_dir: Path) -> tuple[list[str], list[str]]:
    """One PNG and SVG per run with a modelled pairwise section that has pairs (``pairwise_<label>``).

    Returns:
        ``(files written, failures)``: a figure that cannot be drawn is not fatal (the runner has written the
        complete results before, issue 40); each failure is one line ``"pairwise_<label>: <error>"``.
    """
    files, failed = [], []
    for r in runs:
        section = r.get("privacy", {}).get("pairwise")
        if not section or section.get("status") != "model" or not section["summary"]["pairs"]:
            continue  # not modelled, or no pair to show (summary.md says so: :func:`.pairwise.pairwise_lines`)
        stem = "pairwise_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", r["label"]).strip("_")
        fig = None
        try:
            fig = pairwise_figure(section, f"{r['label']} - per-pair (network) DP, status: model (docs/network_dp.md)")
            files += save_figure(fig, out_dir, stem)
        except (ValueError, TypeError, LookupError, ArithmeticError, OSError) as exc:
            failed.append(f"{stem}: {type(exc).__name__}: {exc}")
        finally:
            if fig is not None:
                import matplotlib.pyplot as plt

                plt.close(fig)
    return files, failed
