"""The one validation of a ``model.json`` (format ``privdist-linear-model/1``, :mod:`privdist.learn.model_io`), issue
40: every field a prediction rests on is checked before a :class:`~privdist.learn.model_io.LinearModel` is built, so
that a file :func:`~privdist.learn.model_io.load_model` accepts always predicts, and predicts something meaningful.

Checked: the required fields and their types; ``kind``; ``classes`` (a classifier: a list of distinct scalar labels,
two for ``"logistic"``, three or more for ``"logistic_ovr"``; a regression: null); ``coef`` (one finite number per
feature name; one-vs-rest: one such row per class); ``intercept`` (one number; one-vs-rest: one per class);
``preprocessing`` (``bounds`` as ``[[lower...], [upper...]]`` with ``lower < upper`` per column, ``row_norm`` in
``(0, MAX_ROW_NORM]``, ``target_bounds`` as ``[low, high]`` with ``low <= high``); ``objective`` when present
(issue 39; older files lack it): ``loss`` matching ``kind`` (``"logistic"`` for a classifier, ``"squared"`` for a
regression), ``regularizer`` in ``("l2", "l1")``, ``alpha`` a finite number >= 0, ``fit_intercept`` a bool (and
false only with every intercept 0).

**Magnitude limit.** Every coefficient and intercept must satisfy ``|v| <= MAX_MODEL_VALUE`` (1e100). The model's
own preprocessing maps each column into [-1, 1] (``bounds``) and clips each row to Euclidean norm ``row_norm`` <=
1e6, so a score ``x . coef + intercept`` of a preprocessed row is at most ``1e6 * sqrt(d) * 1e100 + 1e100`` in
magnitude: finite (float64 reaches 1.8e308) for any feature count a file can hold. A file of 1e308 coefficients
would give infinite scores (and then NaN probabilities); a fit never produces values near the limit (the estimators
refuse non-finite models, and their preprocessed features are bounded). A model with neither ``bounds`` nor
``row_norm`` scores raw rows: there the caller's rows bound the score.

Every failure is one :class:`~privdist.errors.ModelFileError` naming the file, the field and what is wrong.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np

from .._checks import shown
from ..errors import ModelFileError

__all__ = ["MAX_MODEL_VALUE", "KINDS", "LOSSES", "check_model_dict", "check_block", "check_objective"]

#: Largest magnitude of a coefficient or intercept in a model file (module docstring: keeps every score finite).
MAX_MODEL_VALUE = 1e100

#: The model kinds of format ``privdist-linear-model/1``.
KINDS = ("logistic", "logistic_ovr", "regression")

#: The loss of ``objective`` each kind must state.
LOSSES = {"logistic": "logistic", "logistic_ovr": "logistic", "regression": "squared"}


class _Checker:
    def __init__(self, path):
        self.path = path

    def fail(self, field: str, what: str):
        raise ModelFileError(f"{self.path}: a malformed model file: {field} {what}")

    def number(self, value, field: str, limit: float | None = MAX_MODEL_VALUE, allow_inf: bool = False) -> float:
        if value is None:
            self.fail(field, "is null (NaN when the file was written), not a number")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            self.fail(field, f"must be a number, got {type(value).__name__} {shown(value)}")
        value = float(value)
        if math.isnan(value) or (math.isinf(value) and not allow_inf):
            self.fail(field, f"must be finite, got {value}")
        if limit is not None and abs(value) > limit:
            self.fail(field, f"is {value:g}, beyond the limit |v| <= {limit:g} of a model file (it would make the "
                             "decision function infinite)")
        return value

    def vector(self, value, field: str, length: int | None = None, length_of: str = "") -> np.ndarray:
        if not isinstance(value, list):
            self.fail(field, f"must be a list of numbers, got {type(value).__name__} {shown(value)}")
        if length is not None and len(value) != length:
            self.fail(field, f"has {len(value)} value(s), but the model has {length} {length_of}")
        if not value:
            self.fail(field, "is empty")
        return np.array([self.number(v, f"{field}[{i}]") for i, v in enumerate(value)], dtype=float)


def _classes(c: _Checker, data: dict, kind: str):
    classes = data.get("classes")
    if kind == "regression":
        if classes is not None:
            c.fail("classes", f"must be null for a regression model, got {shown(classes)}")
        return None
    if not isinstance(classes, list):
        c.fail("classes", f"must be a list of the class labels of a {kind} model, got "
                          f"{'nothing' if classes is None else type(classes).__name__ + ' ' + shown(classes)}")
    for i, label in enumerate(classes):
        if isinstance(label, float) and not math.isfinite(label):
            c.fail(f"classes[{i}]", f"is {label}, not a label")
        if not isinstance(label, (str, numbers.Real)):
            c.fail(f"classes[{i}]", f"must be a string or a number, got {type(label).__name__} {shown(label)}")
    if len(set(classes)) != len(classes):
        c.fail("classes", f"repeats a label: {shown(classes)}")
    wanted = "exactly 2" if kind == "logistic" else "at least 3"
    if (len(classes) == 2) != (kind == "logistic") or len(classes) < 2:
        c.fail("classes", f"has {len(classes)} label(s); a {kind} model has {wanted}")
    return classes


def _preprocessing(c: _Checker, pre, n_features: int):
    if not isinstance(pre, dict):
        c.fail("preprocessing", f"must be an object, got {type(pre).__name__} {shown(pre)}")
    for key in ("bounds", "row_norm"):
        if key not in pre:
            c.fail(f"preprocessing.{key}", "is missing")
    bounds = pre["bounds"]
    if bounds is not None:
        if not isinstance(bounds, list) or len(bounds) != 2:
            c.fail("preprocessing.bounds", f"must be [[lower...], [upper...]], got {shown(bounds)}")
        lo = c.vector(bounds[0], "preprocessing.bounds[0]", n_features, "coefficients")
        hi = c.vector(bounds[1], "preprocessing.bounds[1]", n_features, "coefficients")
        bad = np.flatnonzero(~(lo < hi))
        if bad.size:
            j = int(bad[0])
            c.fail("preprocessing.bounds", f"of column {j} are [{lo[j]:g}, {hi[j]:g}]: lower must be below upper")
        bounds = np.vstack([lo, hi])
    row_norm = pre["row_norm"]
    if row_norm is not None:
        from ._base import MAX_ROW_NORM

        row_norm = c.number(row_norm, "preprocessing.row_norm", MAX_ROW_NORM)
        if row_norm <= 0:
            c.fail("preprocessing.row_norm", f"must be positive, got {row_norm:g}")
    target = pre.get("target_bounds")
    if target is not None:
        if not isinstance(target, list) or len(target) != 2:
            c.fail("preprocessing.target_bounds", f"must be [low, high], got {shown(target)}")
        low, high = (c.number(v, f"preprocessing.target_bounds[{i}]", None, allow_inf=True)
                     for i, v in enumerate(target))
        if low > high:
            c.fail("preprocessing.target_bounds", f"are [{low:g}, {high:g}]: low must not exceed high")
        target = (low, high)
    return bounds, row_norm, target


def check_objective(path, objective, kind: str, intercept) -> dict | None:
    """The checked ``objective`` field (None when absent: a file older than issue 39), else :class:`ModelFileError`.
    """
    if objective is None:
        return None
    c = _Checker(Path(path))
    if not isinstance(objective, dict):
        c.fail("objective", f"must be an object (loss, regularizer, alpha, fit_intercept), got {shown(objective)}")
    for key in ("loss", "regularizer", "alpha", "fit_intercept"):
        if key not in objective:
            c.fail(f"objective.{key}", "is missing")
    if objective["loss"] != LOSSES[kind]:
        c.fail("objective.loss", f"of a {kind} model must be {LOSSES[kind]!r}, got {shown(objective['loss'])}")
    if objective["regularizer"] not in ("l2", "l1"):
        c.fail("objective.regularizer", f"must be 'l2' or 'l1', got {shown(objective['regularizer'])}")
    alpha = c.number(objective["alpha"], "objective.alpha")
    if alpha < 0:
        c.fail("objective.alpha", f"must be >= 0, got {alpha:g}")
    if not isinstance(objective["fit_intercept"], bool):
        c.fail("objective.fit_intercept", f"must be true or false, got {shown(objective['fit_intercept'])}")
    if not objective["fit_intercept"] and np.any(np.asarray(intercept) != 0):
        c.fail("objective.fit_intercept", "is false, but the intercept is not 0")
    return {"loss": objective["loss"], "regularizer": objective["regularizer"], "alpha": alpha,
            "fit_intercept": objective["fit_intercept"]}


def check_block(path, block: dict, columns: list) -> tuple[np.ndarray, float]:
    """A vertical party block's ``coef`` (one finite number per column it holds) and ``intercept``."""
    c = _Checker(path)
    return (c.vector(block.get("coef"), "coef", len(columns), "columns in this block"),
            c.number(block.get("intercept"), "intercept"))


def check_model_dict(path, data: dict, coef=None, intercept=None) -> dict:
    """The checked content of a model file ``data`` read from ``path`` (module docstring); ``coef`` and
    ``intercept``: a vertical model's joined party blocks (its ``coef`` field is null).

    Returns:
        dict with ``kind``, ``coef`` (ndarray, 1-D; one-vs-rest 2-D), ``intercept`` (float; one-vs-rest ndarray),
        ``classes``, ``bounds``, ``row_norm``, ``target_bounds`` and ``objective`` (None in older files).

    Raises:
        ModelFileError: the first field that is missing, of the wrong type, inconsistent or non-finite (named).
    """
    c = _Checker(Path(path))
    for key in ("kind", "coef", "intercept", "preprocessing"):
        if key not in data:
            c.fail(key, "is missing")
    kind = data["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        c.fail("kind", f"must be one of {list(KINDS)}, got {shown(kind)}")
    names = data.get("feature_names")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            c.fail("feature_names", f"must be a list of strings, got {shown(names)}")
        if len(set(names)) != len(names):
            c.fail("feature_names", f"repeats a name: {shown(names)}")
    n_features = None if names is None else len(names)
    classes = _classes(c, data, kind)
    raw_coef, raw_intercept = (data["coef"], data["intercept"]) if coef is None else (coef, intercept)
    if kind == "logistic_ovr":
        if not isinstance(raw_coef, list) or not all(isinstance(r, list) for r in raw_coef):
            c.fail("coef", f"of a one-vs-rest model must be one list of numbers per class, got {shown(raw_coef)}")
        if len(raw_coef) != len(classes):
            c.fail("coef", f"has {len(raw_coef)} row(s), but classes has {len(classes)} labels (one row per class)")
        n_features = n_features if n_features is not None else len(raw_coef[0])
        coef = np.vstack([c.vector(r, f"coef[{k}]", n_features, "feature names") for k, r in enumerate(raw_coef)])
        intercept = c.vector(raw_intercept, "intercept", len(classes), "classes (one intercept per class)")
    else:
        if isinstance(raw_coef, list) and raw_coef and all(isinstance(r, list) for r in raw_coef):
            c.fail("coef", f"is {len(raw_coef)} rows of coefficients, but a {kind} model has one list (a "
                           "one-vs-rest model has kind 'logistic_ovr')")
        coef = c.vector(list(raw_coef) if isinstance(raw_coef, np.ndarray) else raw_coef, "coef", n_features,
                        "feature names")
        if isinstance(raw_intercept, list):
            c.fail("intercept", f"of a {kind} model must be one number, got a list {shown(raw_intercept)}")
        intercept = c.number(raw_intercept, "intercept")
    bounds, row_norm, target = _preprocessing(c, data["preprocessing"], coef.shape[-1])
    if "privacy" in data and not isinstance(data["privacy"], (dict, type(None))):
        c.fail("privacy", f"must be an object (the privacy report), got {shown(data['privacy'])}")
    objective = check_objective(path, data.get("objective"), kind, intercept)
    return {"kind": kind, "coef": coef, "intercept": intercept, "classes": classes, "bounds": bounds,
            "row_norm": row_norm, "target_bounds": target, "objective": objective}
