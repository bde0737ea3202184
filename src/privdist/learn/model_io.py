"""A fitted linear model on disk: ``model.json`` (format ``privdist-linear-model/1``), readable without privdist.

Fields: ``format``, ``kind`` (``"logistic"`` or ``"regression"``), ``coef`` (list, one per feature),
``intercept``, ``classes`` (logistic: ``[negative, positive]``), ``feature_names``, ``preprocessing``
(``bounds``: ``[[lower...], [upper...]]`` or null; ``row_norm``, null = rows not clipped), ``feature_groups``
(vertical models: the column indices of each party, else absent), ``privacy`` (the privacy report) and ``meta``.
To predict by hand: map each column with the bounds into [-1, 1] (``2 (x - lower) / (upper - lower) - 1``,
clipped), scale the row to Euclidean norm <= ``row_norm``, then ``score = row . coef + intercept``; logistic:
``P(classes[1]) = 1 / (1 + exp(-score))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import read_json, write_json
from ..errors import DataFormatError

__all__ = ["MODEL_FORMAT", "model_to_dict", "save_model", "load_model", "LinearModel"]

MODEL_FORMAT = "privdist-linear-model/1"


def model_to_dict(est, feature_names=None, meta: dict | None = None, classes=None) -> dict:
    """The JSON-ready description of a fitted estimator of :mod:`privdist.learn` (``classes``: the original
    label values when the estimator was fitted on encoded labels)."""
    pre = est.preprocessor_  # vertical models: row_norm None (per-column maps only)
    kind = "logistic" if hasattr(est, "classes_") else "regression"
    return {
        "format": MODEL_FORMAT,
        "kind": kind,
        "coef": [float(c) for c in np.ravel(est.coef_)],
        "intercept": float(est.intercept_),
        "classes": ([c.item() if hasattr(c, "item") else c for c in (est.classes_ if classes is None else classes)]
                    if kind == "logistic" else None),
        "feature_names": None if feature_names is None else [str(n) for n in feature_names],
        "preprocessing": {"bounds": None if pre.bounds_ is None else pre.bounds_.tolist(),
                          "row_norm": None if pre.row_norm is None else float(pre.row_norm), "steps": pre.record},
        **({"feature_groups": [[int(j) for j in g] for g in est.feature_groups_]}
           if hasattr(est, "feature_groups_") else {}),
        "privacy": est.privacy_report_,
        "meta": dict(meta or {}),
    }


def save_model(est, path, feature_names=None, meta: dict | None = None, classes=None) -> None:
    """Write ``est`` to ``path`` as JSON, atomically."""
    write_json(Path(path), model_to_dict(est, feature_names, meta, classes))


@dataclass(frozen=True)
class LinearModel:
    """A model read back by :func:`load_model`: ``decision_function``, ``predict`` and ``predict_proba``."""

    kind: str
    coef: np.ndarray
    intercept: float
    classes: list | None
    bounds: np.ndarray | None
    row_norm: float | None
    data: dict

    def decision_function(self, X) -> np.ndarray:
        from ..data.bounds import clip_rows, scale_by_bounds

        X = np.asarray(X, dtype=float)
        if self.bounds is not None:
            X = scale_by_bounds(X, self.bounds)
        if self.row_norm is not None:
            X = clip_rows(X, self.row_norm)
        return X @ self.coef + self.intercept

    def predict_proba(self, X) -> np.ndarray:
        from scipy.special import expit

        p = expit(self.decision_function(X))
        return np.column_stack([1 - p, p])

    def predict(self, X) -> np.ndarray:
        s = self.decision_function(X)
        if self.kind == "logistic":
            return np.asarray(self.classes, dtype=object)[(s > 0).astype(int)]
        return s


def load_model(path) -> LinearModel:
    """Read a ``model.json`` written by :func:`save_model` (or ``privdist fit``).

    Raises:
        DataFormatError: not a privdist model file.
    """
    data = read_json(Path(path))
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise DataFormatError(f"{path}: not a {MODEL_FORMAT} file")
    pre = data["preprocessing"]
    return LinearModel(data["kind"], np.asarray(data["coef"], dtype=float), float(data["intercept"]),
                       data.get("classes"), None if pre["bounds"] is None else np.asarray(pre["bounds"]),
                       None if pre["row_norm"] is None else float(pre["row_norm"]), data)
