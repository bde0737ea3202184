"""Per-pair (network) DP in experiments (issue 29): ``[privacy] pairwise = true`` adds, to every run's privacy
report, the observer x target accounting of :func:`privdist.privacy.pairwise.network_report.pairwise_report` for the run's
protocol on the trial's network; here are the hook the trials call, the aggregation over trials and the text lines
of ``summary.md``, ``privdist report`` and ``privdist run``.

A run of an algorithm without a linear-Gaussian model (:mod:`privdist.algorithms.linear_models`) gets a section that
says so: its per-pair loss is bounded by its local DP only (an observer's view is a post-processing of the
target's releases and independent randomness).
"""

from __future__ import annotations

import math

from ..privacy.pairwise.linear_protocol import observer_ids

__all__ = ["pairwise_protocol", "check_pairwise_model", "unmodelled", "aggregate_pairwise", "pairwise_lines"]


def pairwise_protocol(spec, algorithm, built):
    """``(protocol, observers)`` of a run when ``[privacy] pairwise`` is on and the algorithm has a linear model,
    else ``(None, None)`` (the tolerance is ``spec.privacy.pairwise_rtol``)."""
    if not spec.privacy.pairwise or not hasattr(algorithm, "linear_protocol"):
        return None, None
    algo = algorithm.for_rounds(spec.rounds) if hasattr(algorithm, "for_rounds") else algorithm
    observers = spec.privacy.pairwise_observers
    return algo.linear_protocol(built.problem, built.network, spec.rounds), observers


def check_pairwise_model(spec, algorithm, built) -> None:
    """Fail before a run, not after it (issue 40), when its per-pair report cannot be made: the algorithm refuses a
    model of this configuration (e.g. DPSGD with ``trust="correlated"``), or an observer is not a party of the
    protocol (spec validation checks the range when the spec tells the number of agents; this is the check on the
    built network).

    Raises:
        ValidationError: naming the refusal, or the observer and the valid range.
    """
    protocol, observers = pairwise_protocol(spec, algorithm, built)
    for observer in observers or ():
        observer_ids(protocol, observer)


def unmodelled(name: str) -> dict:
    """The pairwise section of an algorithm without a linear-Gaussian model."""
    return {"model": None, "status": "not modelled",
            "reason": f"{name} has no linear-Gaussian model in privdist (see docs/network_dp.md): every observer's "
                      "view is a post-processing of the target's releases, so its loss is at most the local-DP "
                      "epsilon; no smaller per-pair value is claimed"}


def aggregate_pairwise(per_trial: list[dict], trials: list[int]) -> dict | None:
    """The pairwise section of a run over trials: the first trial's (random networks differ per trial; the
    section names the trial), or None when no trial has one."""
    for t, pt in zip(trials, per_trial):
        section = pt.get("privacy", {}).get("pairwise")
        if section is not None:
            return {**section, "trial": t}
    return None


def _fmt(x) -> str:
    if x is None or isinstance(x, str):  # results.json writes inf as "inf"
        return "n/a" if x is None else x
    return "inf" if math.isinf(x) else f"{x:.3g}"


def _triple(stats: dict) -> str:
    return " / ".join(_fmt(stats.get(k)) for k in ("min", "median", "max"))


def _distance_items(by_distance: list[dict]) -> list[str]:
    """One item per hop distance, except that consecutive distances whose every pair is at epsilon 0 (e.g. beyond
    the run's reach: the target's messages do not reach the observer in the run's rounds) make one item (issue 40:
    a ring of 1,000 agents over 6 rounds printed 494 items ``0 / 0 / 0``)."""
    items, zeros = [], []

    def flush():
        if zeros:
            span = f"{zeros[0]['distance']}" + (f"-{zeros[-1]['distance']}" if len(zeros) > 1 else "")
            items.append(f"{span}: 0 ({sum(d['pairs'] for d in zeros)} pairs at epsilon 0)")
            zeros.clear()

    for d in by_distance:
        if d["epsilon"]["max"] == 0:
            zeros.append(d)
            continue
        flush()
        items.append(f"{d['distance']}: {_triple(d['epsilon'])} ({d['pairs']} pairs, local / pair median "
                     f"{_fmt(d['local_over_pair_epsilon']['median'])})")
    flush()
    return items


def pairwise_lines(results: dict) -> list[str]:
    """Markdown lines per run with a pairwise section: min / median / max over pairs, local DP beside them, the
    distance profile, the profile by distance and number of common neighbours (where there are any), and the
    model's status and assumptions."""
    lines = []
    for r in results["runs"]:
        pw = r.get("privacy", {}).get("pairwise")
        if not pw:
            continue
        if pw.get("status") == "not modelled":
            lines.append(f"- {r['label']}: per-pair DP not modelled - {pw['reason']}")
            continue
        s = pw["summary"]
        if not s["pairs"]:  # e.g. one agent: its only observer is itself (issue 40); no figure either
            lines.append(f"- {r['label']}: per-pair epsilon: no observer x target pair ({len(pw['observers'])} "
                         "observer(s), each target agent among them: a party's own data is not a pair); the "
                         "local DP above is the only guarantee")
            continue
        gap = pw.get("bound", {}).get("max_relative_gap")
        within = "" if gap is None else f", each within {100 * gap:.2g}% of exact in mu"
        lines.append(f"- {r['label']}: per-pair epsilon (observer x target, delta = {pw['delta']:g}, "
                     f"{len(pw['observers'])} observers, trial {pw.get('trial', 0)}{within}) min / median / max "
                     f"{_triple(s['epsilon'])}; local DP {_triple(s['local_epsilon'])}; local / pair "
                     f"{_triple(s['local_over_pair_epsilon'])}")
        lines.append("  - by hop distance: " + "; ".join(_distance_items(pw["by_distance"])))
        near = [d for d in pw.get("by_distance_common", []) if d["common_neighbours"] > 0]
        if near:  # common neighbours exist at distance <= 2 only; farther pairs are the rows above
            lines.append("  - by hop distance / common neighbours: " + "; ".join(
                f"{d['distance']} / {d['common_neighbours']}: {_triple(d['epsilon'])} ({d['pairs']} pairs, local / "
                f"pair {_triple(d['local_over_pair_epsilon'])})" for d in near))
        lines.append(f"  - status: {pw['status']} ({pw['threat_model']}); " + "; ".join(pw["assumptions"]))
    return lines
