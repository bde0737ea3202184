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


def _trials(run: dict) -> int:
    return max(len(run.get("info", [])), 1)


def _spread_note(by_label: dict, labels) -> str:
    """Says when a verdict rests on one trial (no spread to compare against)."""
    n = min(_trials(by_label[lab]) for lab in labels)
    return " (decided by one trial: no spread over trials)" if n == 1 else f" (means over {n} trials)"


def _less(a: float, b: float, margin: float) -> bool:
    """``a`` below ``b`` by more than the relative ``margin`` (0: strictly below)."""
    return a < b - margin * abs(b) if margin else a < b


def _final_below(c, by_label, metric):
    if not c.get("than"):
        return None, "nothing to compare with (empty 'than')"
    a = _final(by_label, c["run"], metric)
    others = {lab: _final(by_label, lab, metric) for lab in c["than"]}
    margin = float(c.get("margin", 0.0))
    evidence = f"{metric} {c['run']}: {a:.4g}; " + "; ".join(f"{k}: {v:.4g}" for k, v in others.items())
    evidence += (f" (margin {margin:g})" if margin else "") + _spread_note(by_label, [c["run"], *c["than"]])
    return all(_less(a, v, margin) for v in others.values()), evidence


def _below_value(c, by_label, metric):
    vals = {lab: _final(by_label, lab, metric) for lab in _group_members(by_label, c["run"])}
    if not vals:
        return None, f"no run or group {c['run']!r} in the results"
    evidence = "; ".join(f"{k}: {v:.4g}" for k, v in vals.items()) + f" (threshold {c['value']:.4g})"
    return all(v < c["value"] for v in vals.values()), evidence + _spread_note(by_label, vals)


def _monotone(c, by_label, metric):
    labels = [lab for ref in c["runs"] for lab in _group_members(by_label, ref)]
    if len(labels) < 2:
        return None, f"a trend needs at least two runs, found {len(labels)}"
    vals = [_final(by_label, lab, metric) for lab in labels]
    increasing = c.get("direction", "decreasing") == "increasing"
    margin = float(c.get("margin", 0.0))
    holds = all(_less(a, b, margin) if increasing else _less(b, a, margin) for a, b in zip(vals, vals[1:]))
    return holds, (" -> ".join(f"{lab}: {v:.4g}" for lab, v in zip(labels, vals))
                   + (f" (margin {margin:g})" if margin else "") + _spread_note(by_label, labels))


#: ``kind -> check(claim, runs_by_label, metric) -> (holds, evidence)``.
CLAIM_KINDS = {"final_below": _final_below, "below_value": _below_value, "monotone": _monotone}


def register_claim_kind(kind: str, check) -> None:
    """Add a claim kind: ``check(claim, runs_by_label, metric) -> (holds: bool | None, evidence: str)``; ``None``
    means "not evaluated" (nothing to compare), never "holds"."""
    CLAIM_KINDS[kind] = check


def _referenced(c) -> list[str]:
    refs = [c[k] for k in ("run",) if k in c]
    return refs + [r for k in ("runs", "than") for r in c.get(k, [])]


def check_claims(claims, runs: list[dict], default_metric: str, skipped=()) -> list[dict]:
    """Evaluate every claim.

    Kinds:
        final_below: the final mean metric of ``run`` is below that of every run in ``than`` (by the relative
            ``margin``, default 0).
        below_value: the final mean metric of ``run`` (or of every run of a group) is below ``value``.
        monotone: along ``runs`` (labels or sweep groups, in order) the final mean metric is strictly
            ``decreasing`` (default) or ``increasing`` (each step by the relative ``margin``, default 0).

    A claim with nothing to compare (an empty group, fewer than two runs for a trend, a run missing from the
    results) is "not evaluated" (``holds = None``), never "holds". Evidence says when a verdict rests on one trial.

    Args:
        skipped: claims a quick run cannot check (their runs are not part of it); reported with ``holds = None``.

    Returns:
        ``[{"id", "text", "holds", "evidence"}]``; ``evidence`` quotes the measured values.
    """
    by_label = {r["label"]: r for r in runs}
    out = []
    for c in claims:
        missing = [r for r in _referenced(c) if not _group_members(by_label, r)]
        if missing:
            holds, evidence = None, f"not evaluated: no run or group {', '.join(map(repr, missing))} in the results"
        else:
            holds, evidence = CLAIM_KINDS[c["kind"]](c, by_label, c.get("metric", default_metric))
        out.append({"id": c["id"], "text": c.get("text", ""), "holds": None if holds is None else bool(holds),
                    "evidence": evidence})
    for c in skipped:
        out.append({"id": c["id"], "text": c.get("text", ""), "holds": None,
                    "evidence": f"not evaluated in quick mode: run(s) {', '.join(c['missing'])} not part of it"})
    return out
