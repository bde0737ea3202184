"""The per-pair (network) DP figure of a run (issue 29): observer x target heatmap and distance profile.

Left: the per-pair epsilon matrix (rows: observers, columns: target agents) on a log colour scale. When every agent
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
    norm = LogNorm(vmin=finite.min(), vmax=finite.max()) if finite.size else None
    im = ax.imshow(np.ma.masked_invalid(shown), aspect="auto", interpolation="nearest", cmap="viridis", norm=norm)
    fig.colorbar(im, ax=ax, label=f"per-pair epsilon (delta = {section['delta']:g})")
    square = rows.size == cols.size
    ax.set_xlabel("target agent (" + ("graph order" if square else "by hop distance from the first observer") + ")")
    ax.set_ylabel("observer" + (" (same order)" if square else ""))
    labels = [section["observer_labels"][i] for i in rows]
    if len(labels) <= 25:
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
    ax.set_title("who learns what: observer x target", fontsize=10)
    prof = section["by_distance"]
    d = np.array([p["distance"] for p in prof], dtype=float)
    med = np.array([p["epsilon"]["median"] for p in prof])
    lo = np.array([p["epsilon"]["min"] for p in prof])
    hi = np.array([p["epsilon"]["max"] for p in prof])
    bx.errorbar(d, med, yerr=[med - lo, hi - med], marker="o", capsize=3, label="per pair: median, min-max")
    local = section["summary"]["local_epsilon"]
    bx.axhline(local["max"], color="C3", ls="--", label=f"local DP (every message seen): {local['max']:.3g}")
    bx.set_yscale("log")
    bx.set_xticks(d)
    bx.set_xlabel("hop distance observer - target")
    bx.set_ylabel("epsilon")
    bx.grid(True, which="both", alpha=0.3)
    bx.legend(fontsize=8)
    bx.set_title(f"{section['model']}: epsilon by distance ({section['summary']['pairs']} pairs)", fontsize=10)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def draw_pairwise(runs: list[dict], out_dir: Path) -> list[str]:
    """One PNG and SVG per run with a modelled pairwise section (``pairwise_<label>``); the file names written."""
    files = []
    for r in runs:
        section = r.get("privacy", {}).get("pairwise")
        if not section or section.get("status") != "model":
            continue
        import matplotlib.pyplot as plt

        fig = pairwise_figure(section, f"{r['label']} - per-pair (network) DP, status: model (docs/network_dp.md)")
        files += save_figure(fig, out_dir, "pairwise_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", r["label"]).strip("_"))
        plt.close(fig)
    return files
