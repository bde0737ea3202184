"""The privacy-region plot of an audit: the test's (FPR, FNR) against the (epsilon, delta) regions."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..privacy.audit_stats import region_fnr

__all__ = ["plot_privacy_region"]


def plot_privacy_region(result, path) -> list[str]:
    """Write the plot of :class:`~privdist.audit.AuditResult` ``result`` as PNG and SVG next to ``path``.

    Drawn: the boundary of the privacy region of the audited claim and of the lower bound at the audited delta;
    the chosen statistic's (FPR, FNR) at every threshold on the evaluation half; the chosen test's point and its
    Clopper-Pearson upper corner. A (epsilon, delta)-DP mechanism keeps every test above the claim's boundary.

    Returns:
        The written file paths (``.png`` and ``.svg``).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = result.test
    b = t.bounds[result.delta]
    fig, ax = plt.subplots(figsize=(5, 5))
    x = np.linspace(0, 1, 501)
    claim = result.audited_claim
    if claim is not None and math.isfinite(claim):
        ax.plot(x, region_fnr(x, claim, result.delta), color="tab:green",
                label=f"{result.claim} claim: eps={claim:.3g}, delta={result.delta:.2g}")
    if result.epsilon_lb > 0:
        ax.plot(x, region_fnr(x, result.epsilon_lb, result.delta), color="tab:red", ls="--",
                label=f"lower bound: eps={result.epsilon_lb:.3g}")
    ax.plot(t.curve[:, 0], t.curve[:, 1], color="tab:blue", lw=1, alpha=0.7, label=f"test ({t.statistic}), all thresholds")
    ax.plot([b["fpr"]], [b["fnr"]], "o", color="black", label="chosen threshold")
    ax.plot([b["fpr_ub"]], [b["fnr_ub"]], "x", color="black", label=f"{b['confidence']:.0%} upper bounds")
    ax.plot([0, 1], [1, 0], color="grey", lw=0.5)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="false-positive rate", ylabel="false-negative rate",
           title=f"audit {result.algorithm}: {result.canary} canary, {result.rounds} round(s), "
                 f"N={result.releases}: {result.verdict}")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, loc="upper right")
    base = Path(path)
    base = base.with_suffix("") if base.suffix.lower() in (".png", ".svg") else base
    base.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in (".png", ".svg"):
        fig.savefig(str(base) + ext, dpi=120, bbox_inches="tight")
        out.append(str(base) + ext)
    plt.close(fig)
    return out
