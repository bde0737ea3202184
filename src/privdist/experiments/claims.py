"""Automatic checks of a paper's claims against measured results (reported as holding or not, with numbers)."""

from __future__ import annotations

__all__ = ["check_claims", "CLAIM_KINDS", "register_claim_kind"]


def _final(runs_by_label: dict, label: str, metric: str) -> float:
    return runs_by_label[label]["metrics"][metric]["final_mean"]


def _group_members(runs_by_label: dict, label: str) -> list[str]:
    """A label of one run, or of a swept group (all its runs, in sweep order)."""
    if label in runs_by_label:
        return [label]
    return [lab for lab, r in runs_by_label.items() if r.get("group") == label]


def _final_below(c, by_label, metric):
    a = _final(by_label, c["run"], metric)
    others = {lab: _final(by_label, lab, metric) for lab in c["than"]}
    evidence = f"{metric} {c['run']}: {a:.4g}; " + "; ".join(f"{k}: {v:.4g}" for k, v in others.items())
    return all(a < v for v in others.values()), evidence


def _below_value(c, by_label, metric):
    vals = {lab: _final(by_label, lab, metric) for lab in _group_members(by_label, c["run"])}
    evidence = "; ".join(f"{k}: {v:.4g}" for k, v in vals.items()) + f" (threshold {c['value']:.4g})"
    return all(v < c["value"] for v in vals.values()), evidence


def _monotone(c, by_label, metric):
    labels = [lab for ref in c["runs"] for lab in _group_members(by_label, ref)]
    vals = [_final(by_label, lab, metric) for lab in labels]
    increasing = c.get("direction", "decreasing") == "increasing"
    holds = all((b > a) if increasing else (b < a) for a, b in zip(vals, vals[1:]))
    return holds, " -> ".join(f"{lab}: {v:.4g}" for lab, v in zip(labels, vals))


#: ``kind -> check(claim, runs_by_label, metric) -> (holds, evidence)``.
CLAIM_KINDS = {"final_below": _final_below, "below_value": _below_value, "monotone": _monotone}


def register_claim_kind(kind: str, check) -> None:
    """Add a claim kind: ``check(claim, runs_by_label, metric) -> (holds: bool, evidence: str)``."""
    CLAIM_KINDS[kind] = check


def check_claims(claims, runs: list[dict], default_metric: str, skipped=()) -> list[dict]:
    """Evaluate every claim.

    Kinds:
        final_below: the final mean metric of ``run`` is below that of every run in ``than``.
        below_value: the final mean metric of ``run`` (or of every run of a group) is below ``value``.
        monotone: along ``runs`` (labels or sweep groups, in order) the final mean metric is strictly
            ``decreasing`` (default) or ``increasing``.

    Args:
        skipped: claims a quick run cannot check (their runs are not part of it); reported with ``holds = None``.

    Returns:
        ``[{"id", "text", "holds", "evidence"}]``; ``evidence`` quotes the measured values.
    """
    by_label = {r["label"]: r for r in runs}
    out = []
    for c in claims:
        holds, evidence = CLAIM_KINDS[c["kind"]](c, by_label, c.get("metric", default_metric))
        out.append({"id": c["id"], "text": c.get("text", ""), "holds": bool(holds), "evidence": evidence})
    for c in skipped:
        out.append({"id": c["id"], "text": c.get("text", ""), "holds": None,
                    "evidence": f"not evaluated in quick mode: run(s) {', '.join(c['missing'])} not part of it"})
    return out
