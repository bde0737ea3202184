"""Audit the FILES a fit or run writes as a release: are neighbouring datasets separable from them? (issue 24)

The guarantee privdist prints covers every file it writes as a release, not only the messages. This module turns
release files (JSON, ``.npz``) written by repeated runs on two neighbouring datasets ``D`` and ``D'`` into rows of
numbers and runs the threshold test of :mod:`privdist.privacy.audit_stats` on them:

* every numeric leaf of a JSON file (key path -> value) and every entry of an ``.npz`` array is a column;
* every other leaf (strings, booleans, null) becomes an indicator column (equal to its most common value among the
  runs on ``D``), so a name read from the data (``city=<rare value>``) separates the datasets like a number would;
* a key present in some runs only is an indicator too.

A column that separates the two datasets perfectly on the selection half (a noise-free function of the data, e.g.
a coefficient block written without noise) is tested on its own as well; the lower bound is the largest over the
tests, each chosen on the selection half and evaluated on the other. ``refuted`` when that lower bound exceeds the
printed epsilon.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..privacy.audit_stats import threshold_audit

__all__ = ["flatten_release", "read_release", "ArtifactAudit", "audit_artifacts"]


def flatten_release(obj, prefix: str = "") -> dict[str, object]:
    """``{key path: leaf}`` of a JSON-like object (dict keys and list indices joined by ``/``; numpy arrays give
    one leaf per entry)."""
    out: dict[str, object] = {}
    if isinstance(obj, dict):
        for k in sorted(obj, key=str):
            out.update(flatten_release(obj[k], f"{prefix}/{k}"))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.update(flatten_release(v, f"{prefix}/{i}"))
    elif isinstance(obj, np.ndarray):
        for i, v in enumerate(np.ravel(obj)):
            out[f"{prefix}/{i}"] = v.item() if hasattr(v, "item") else v
    else:
        out[prefix] = obj
    return out


def read_release(directory, names) -> dict[str, object]:
    """The flattened content of the release files ``names`` of ``directory`` (JSON via privdist's reader, which
    restores infinities; ``.npz`` arrays by name)."""
    from .._io import check_complete, read_json

    directory = Path(directory)
    check_complete(directory)  # an interrupted fit's files are no release (issue 40)
    out: dict[str, object] = {}
    for name in names:
        path = directory / name
        if not path.is_file():
            out[f"{name}:missing"] = True
            continue
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                content = {k: np.asarray(z[k]) for k in z.files}
        else:
            content = read_json(path)
        out.update(flatten_release(content, name))
    return out


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _matrix(runs0: list[dict], runs1: list[dict]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    keys = sorted(set().union(*runs0, *runs1))
    cols0, cols1, names = [], [], []
    for key in keys:
        v0 = [r.get(key, _MISSING) for r in runs0]
        v1 = [r.get(key, _MISSING) for r in runs1]
        if all(_is_number(v) for v in v0 + v1):
            a0, a1 = np.asarray(v0, dtype=float), np.asarray(v1, dtype=float)
            a0 = np.where(np.isfinite(a0), a0, np.sign(a0) * 1e300)
            a1 = np.where(np.isfinite(a1), a1, np.sign(a1) * 1e300)
        else:  # an indicator of the most common value on D
            common = Counter(map(repr, v0)).most_common(1)[0][0]
            a0 = np.array([repr(v) == common for v in v0], dtype=float)
            a1 = np.array([repr(v) == common for v in v1], dtype=float)
        if np.ptp(np.concatenate([a0, a1])) == 0:
            continue  # the same in every run: carries nothing
        cols0.append(a0)
        cols1.append(a1)
        names.append(key)
    if not names:
        return np.zeros((len(runs0), 1)), np.zeros((len(runs1), 1)), []
    return np.column_stack(cols0), np.column_stack(cols1), names


_MISSING = "<missing>"


@dataclass
class ArtifactAudit:
    """What :func:`audit_artifacts` found."""

    epsilon: float
    delta: float
    epsilon_lb: float
    verdict: str
    runs: tuple[int, int]
    varying: list[str] = field(default_factory=list)
    separating: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "epsilon_lb": self.epsilon_lb, "verdict": self.verdict,
                "runs": list(self.runs), "varying": self.varying, "separating": self.separating}


def audit_artifacts(runs0: list[dict], runs1: list[dict], epsilon: float, delta: float,
                    confidence: float = 0.95) -> ArtifactAudit:
    """Threshold tests on release files of runs on ``D`` (``runs0``) and ``D'`` (``runs1``), each run a
    :func:`read_release` mapping; the epsilon lower bound at ``delta`` against the printed ``epsilon``.

    Raises:
        ValidationError: fewer than 8 runs per dataset.
    """
    if len(runs0) < 8 or len(runs1) < 8:
        raise ValidationError(f"an artifact audit needs at least 8 runs per dataset, got {len(runs0)} and "
                              f"{len(runs1)}")
    x0, x1, names = _matrix(runs0, runs1)
    if not names:
        return ArtifactAudit(float(epsilon), float(delta), 0.0, "consistent", (len(runs0), len(runs1)))
    k0, k1 = len(x0) // 2, len(x1) // 2
    lb = threshold_audit(x0, x1, delta, confidence=confidence).epsilon_lb(delta)
    separating = []
    for j, name in enumerate(names):  # screened on the selection half only
        s0, s1 = x0[:k0, j], x1[:k1, j]
        if s0.max() < s1.min() or s1.max() < s0.min():
            separating.append(name)
            test = threshold_audit(x0[:, [j]], x1[:, [j]], delta, statistics=("projection",), confidence=confidence)
            lb = max(lb, test.epsilon_lb(delta))
    refuted = lb > epsilon if math.isfinite(epsilon) else False
    return ArtifactAudit(float(epsilon), float(delta), float(lb), "refuted" if refuted else "consistent",
                         (len(runs0), len(runs1)), names, separating)
