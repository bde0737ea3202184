"""The release boundary of ``privdist run`` (issue 24 item 5): which file of a results directory the printed
guarantee covers.

Every output of a run is one of two kinds:

* **release**: covered by the printed guarantee: the privacy reports (computed from the declared releases and
  public parameters), the configuration, noise provenance and versions, and the per-trial privacy reports and
  transcript digests (a hash of the noisy messages only).
* **owner-only evaluation**: not covered: every metric (``objective_gap``, ``accuracy``, ... are computed
  noise-free from the data, or from non-released state such as a node's clean decision), the traces, figures and
  summary tables made of them, the claims checked on them, and the run diagnostics (``info``: calibrated constants,
  where data were resolved).

On a user's own data (``[data] kind = "file"`` or ``"per_party"``) the two are kept apart: ``results.json`` and
``trials/`` hold release material only; owner-only material goes to ``owner_only/`` (``metrics.json``,
``traces.npz``, figures, ``summary.md``, ``trials/``) and each file written there is a named exposure of every run's
privacy report. In secure mode (``[privacy] secure``, ``--secure``) it is not written unless asked for
(``[output] owner_metrics = true`` or ``privdist run --owner-metrics``); ``[output] owner_metrics = false`` withholds
it in any mode. Synthetic and public benchmark data (the paper reproductions) are no one's private data: their
layout is unchanged (metrics in ``results.json``, ``traces.npz``, figures, ``summary.md``), and ``results.json``'s
``release_boundary`` still classifies every file.
"""

from __future__ import annotations

__all__ = ["PRIVATE_DATA_KINDS", "OWNER_DIR", "private_data", "owner_outputs", "split_trial", "boundary",
           "owner_exposures", "without_guarantee"]

#: ``[data] kind`` values that are a user's own data (everything else is synthetic or a public benchmark).
PRIVATE_DATA_KINDS: tuple[str, ...] = ("file", "per_party")

#: The subdirectory of the owner-only evaluation of a run on a user's data.
OWNER_DIR = "owner_only"

#: Keys of a trial's run entry that are owner-only evaluation.
_OWNER_KEYS = ("curves", "info")


def private_data(spec) -> bool:
    """Whether the spec's data are a user's own (``[data] kind`` in :data:`PRIVATE_DATA_KINDS`)."""
    return spec.data.kind in PRIVATE_DATA_KINDS


def owner_outputs(spec) -> bool:
    """Whether owner-only evaluation is written: always for public data; for a user's data unless
    ``[output] owner_metrics = false``, or in secure mode unless ``[output] owner_metrics = true``."""
    if not private_data(spec):
        return True
    asked = getattr(spec.output, "owner_metrics", None)
    return bool(asked) if asked is not None else not spec.privacy.secure


def split_trial(data: dict) -> tuple[dict, dict]:
    """A trial's data as ``(release part, owner-only part)``: the owner-only part holds each run's curves and info."""
    release = {"trial": data["trial"], "runs": {}}
    owner = {"trial": data["trial"], "runs": {}}
    for label, entry in data["runs"].items():
        release["runs"][label] = {k: v for k, v in entry.items() if k not in _OWNER_KEYS}
        owner["runs"][label] = {k: entry[k] for k in _OWNER_KEYS if k in entry}
    return release, owner


def owner_exposures(spec, figures) -> list[str]:
    """The named exposures of the owner-only files written for a run on a user's data (empty otherwise)."""
    if not private_data(spec) or not owner_outputs(spec):
        return []
    metrics = ", ".join(spec.metrics)
    what = f"{metrics} computed noise-free from the data (owner-only evaluation)"
    out = [f"{OWNER_DIR}/metrics.json: final and mean curves of {what}",
           f"{OWNER_DIR}/traces.npz: {what}",
           f"{OWNER_DIR}/trials/: per-trial curves of {what} and run diagnostics (info)",
           f"{OWNER_DIR}/summary.md: tables of {what}"]
    out += [f"{OWNER_DIR}/{f}: figure of {what}" for f in figures]
    if spec.claims:
        out.append(f"{OWNER_DIR}/metrics.json: claims checked on {what}")
    return out


def boundary(spec, figures) -> dict:
    """``results.json["release_boundary"]``: the release files, the owner-only files (written or withheld)."""
    release = ["results.json (config, noise provenance, versions, per-run privacy reports; no metric values)",
               "trials/*.json (per-trial privacy reports, transcript digests of the noisy messages, seconds)"]
    if not private_data(spec):
        return {"private_data": False, "owner_outputs_written": True,
                "release": ["results.json: config, noise, versions, runs[].privacy",
                            "trials/*.json: privacy, transcript_digest, seconds"],
                "owner_only": ["results.json: runs[].metrics, runs[].info, claims (metrics computed from the data)",
                               "trials/*.json: curves, info", "traces.npz", "summary.md", *figures],
                "note": f"{spec.data.kind!r} data are synthetic or a public benchmark, not a user's private data: the "
                        "evaluation is kept in place (paper reproductions)"}
    written = owner_outputs(spec)
    files = [f"{OWNER_DIR}/metrics.json", f"{OWNER_DIR}/traces.npz", f"{OWNER_DIR}/trials/*.json",
             f"{OWNER_DIR}/summary.md", *[f"{OWNER_DIR}/{f}" for f in figures]]
    return {"private_data": True, "owner_outputs_written": written, "release": release,
            "owner_only": files if written else [],
            "withheld": [] if written else [f.replace(f"{OWNER_DIR}/", "") for f in files[:4]],
            "note": ("owner-only evaluation of the data owner, not covered by the printed guarantee (each file is a "
                     "named exposure)" if written else
                     "owner-only evaluation not written (secure mode on a user's data; ask with [output] "
                     "owner_metrics = true or --owner-metrics)")}


def without_guarantee(report: dict, steps) -> dict:
    """``report`` (of :func:`privdist.privacy.privacy_report`) with every agent's guarantee (``rdp``, ``pld``) inf
    and the reasons in ``not_guaranteed`` when a data step in ``steps`` read the data without DP (``private``
    false); unchanged otherwise. The claims (``paper``, ``claimed``) stay: they describe the messages."""
    from ..data.bounds import non_private_reasons

    reasons = non_private_reasons(steps)
    if not reasons:
        return report
    inf = float("inf")
    for a in report["per_agent"]:
        a["guaranteed"] = False
        a["epsilon"] = {k: (inf if k in ("rdp", "pld") else v) for k, v in a["epsilon"].items()}
    report["not_guaranteed"] = list(report.get("not_guaranteed", [])) + reasons
    if "assumptions" in report.get("pairwise", {}):  # the per-pair numbers rest on the same data (issue 29)
        report["pairwise"]["assumptions"] = report["pairwise"]["assumptions"] + reasons
    return report
