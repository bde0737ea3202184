"""Preprocessing that does not leak: public feature bounds and row clipping.

The sensitivity of every DP algorithm rests on bounded rows (``||x|| <= 1``) or on clipped per-sample gradients.
Scaling features by a min/max *read off the private data* is itself a release the accountant does not see, so it is
never done silently:

* :func:`scale_by_bounds` maps each column into [-1, 1] with bounds the user states as public knowledge (an age
  in [17, 90], a 0/1 indicator, ...), clipping values outside them: no data is read to choose them;
* :func:`clip_rows` scales every row to Euclidean norm <= ``max_norm`` (a public constant): a per-row operation
  that cannot reveal another row;
* :func:`data_bounds` reads per-column min/max from the data. It is **not private**: callers that use it (the
  estimators' ``scale="data"``, ``privdist fit --scale data``) must record it as a non-private step, which
  :class:`Preprocessor` does in its ``record``;
* ``scale="dp"`` (the estimators' default): columns with public bounds are mapped by them, every other column by
  bounds a differentially private range step released (:mod:`privdist.privacy.dp_ranges`, run by
  :mod:`privdist.learn.ranges`, which spends a share of the budget and records the release); this module only
  says which columns need the step (:meth:`Preprocessor.dp_columns`) and applies the bounds it returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._checks import check_positive
from ..errors import ShapeMismatchError, UnknownColumnError, ValidationError

__all__ = ["clip_rows", "scale_by_bounds", "data_bounds", "bounds_array", "partial_bounds", "Preprocessor", "SCALES",
           "non_private_reasons"]

#: ``"none"``: features used as given (only row clipping); ``"bounds"``: public per-column bounds;
#: ``"data"``: per-column min/max of the training data (NOT private, recorded); ``"dp"``: public bounds where
#: stated, bounds from a DP range step for every other column.
SCALES = ("none", "bounds", "data", "dp")


def clip_rows(X, max_norm: float = 1.0):
    """Every row scaled to Euclidean norm at most ``max_norm`` (rows inside the ball are unchanged)."""
    max_norm = check_positive(max_norm, "max_norm")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=float, copy=True)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X.data /= np.repeat(np.maximum(1.0, norms / max_norm), np.diff(X.indptr))
        return X
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1)
    return X / np.maximum(1.0, norms / max_norm)[:, None]


def bounds_array(bounds, feature_names: Sequence[str] | None, n_features: int) -> np.ndarray:
    """Public bounds as a ``(2, n_features)`` array of (lower, upper).

    ``bounds`` is an array of shape ``(2, d)``, a pair of scalars (the same for every column), or a mapping
    ``column name -> (lower, upper)`` (unnamed columns get ``(-1, 1)``, i.e. are assumed already in range).

    Raises:
        UnknownColumnError: a mapping key that is not a column.
        ValidationError: a lower bound not below its upper bound.
    """
    if isinstance(bounds, Mapping):
        out = _set_named(np.tile(np.array([[-1.0], [1.0]]), (1, n_features)), bounds, feature_names)
    else:
        arr = _numbers(bounds)
        if arr.shape == (2,):
            arr = np.repeat(arr[:, None], n_features, axis=1)
        if arr.shape != (2, n_features):
            raise ShapeMismatchError(f"bounds must have shape (2, {n_features}) (lower, upper), got {arr.shape}")
        out = arr.copy()
    if not np.all(np.isfinite(out)) or np.any(out[0] >= out[1]):
        j = int(np.flatnonzero(~(out[0] < out[1]))[0]) if np.any(out[0] >= out[1]) else 0
        raise ValidationError(f"bounds must be finite with lower < upper, column {j} has "
                              f"{tuple(float(v) for v in out[:, j])}")
    return out


def _set_named(out: np.ndarray, bounds: Mapping, feature_names) -> np.ndarray:
    """``out[:, j] = (lower, upper)`` for each ``column name -> (lower, upper)`` of ``bounds`` (columns unnamed:
    ``x0, x1, ...``); returns ``out``. Raises UnknownColumnError for a name that is not a column."""
    n_features = out.shape[1]
    names = [str(n) for n in (feature_names or [f"x{j}" for j in range(n_features)])]
    where = {n: j for j, n in enumerate(names)}
    for key, pair in bounds.items():
        if str(key) not in where:
            raise UnknownColumnError(f"bounds name column {key!r}, which is not a feature; features: {names}")
        values = _numbers(pair)
        if values.shape != (2,):
            raise ValidationError(f"bounds of column {key!r} must be a pair (lower, upper), got {pair!r}")
        out[:, where[str(key)]] = values
    return out


def _numbers(bounds) -> np.ndarray:
    """``bounds`` as a float array; a named error for anything that is not numbers (issue 26)."""
    try:
        return np.asarray(bounds, dtype=float)
    except (TypeError, ValueError):
        raise ValidationError(f"bounds must be numbers: a (2, d) array of (lower, upper), a pair, or "
                              f"{{column: (lower, upper)}}; got {bounds!r}") from None


def partial_bounds(bounds, feature_names: Sequence[str] | None, n_features: int) -> np.ndarray:
    """Public bounds of SOME columns as a ``(2, n_features)`` array, NaN where a column has none (``scale="dp"``).

    ``bounds`` is None (no public bounds), a mapping ``column name -> (lower, upper)``, or a ``(2, d)`` array with
    NaN in the columns without public bounds.

    Raises:
        UnknownColumnError: a mapping key that is not a column. ValidationError: a lower bound not below its upper.
    """
    out = np.full((2, n_features), np.nan)
    if bounds is None:
        return out
    if isinstance(bounds, Mapping):
        _set_named(out, bounds, feature_names)
    else:
        arr = _numbers(bounds)
        if arr.shape != (2, n_features):
            raise ShapeMismatchError(f"bounds must have shape (2, {n_features}) (lower, upper; NaN = none), "
                                     f"got {arr.shape}")
        out = arr.copy()
    known = ~np.isnan(out).any(axis=0)
    if not np.all(np.isfinite(out[:, known])) or np.any(out[0, known] >= out[1, known]):
        j = int(np.flatnonzero(known & ~(out[0] < out[1]))[0]) if np.any(known & ~(out[0] < out[1])) else 0
        raise ValidationError(f"bounds must be finite with lower < upper, column {j} has "
                              f"{tuple(float(v) for v in out[:, j])}")
    return out


def scale_by_bounds(X, bounds: np.ndarray):
    """Map each column from ``[lower, upper]`` into [-1, 1], clipping values outside (dense output)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    lo, hi = bounds
    return np.clip(2.0 * (X - lo) / (hi - lo) - 1.0, -1.0, 1.0)


def data_bounds(X) -> np.ndarray:
    """Per-column (min, max) of ``X``: NOT private (it reads the data); constant columns get a width of 1."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    lo, hi = X.min(axis=0), X.max(axis=0)
    hi = np.where(hi > lo, hi, lo + 1.0)
    return np.vstack([lo, hi])


def non_private_reasons(steps) -> list[str]:
    """One reason per recorded preprocessing step that read the data without DP (``private`` false): what voids a
    guarantee (issue 24: reported as ``guaranteed: false``, never only a warning)."""
    return [f"preprocessing step {s['step']} read the data without DP: {s.get('note', '')}"
            for s in steps if not s.get("private", True)]


@dataclass
class Preprocessor:
    """Scale (``"none"``, ``"bounds"``, ``"data"`` or ``"dp"``) then clip rows to ``row_norm``; fit once, apply to
    any split.

    ``scale="dp"``: ``bounds`` (optional) are the public bounds of some columns (:func:`partial_bounds`); the other
    columns (:meth:`dp_columns`) need bounds from the DP range step, passed to :meth:`fit` as ``dp_bounds`` with
    the step's ``dp_record`` (what :mod:`privdist.learn.ranges` does). No such column: no step, nothing spent.

    ``row_norm=None`` leaves rows unclipped: per-column maps only, e.g. for vertical parties (each party maps its own
    columns; no party sees a whole row).

    Attributes:
        scale: one of :data:`SCALES`.
        bounds: public bounds (with ``scale="bounds"``, see :func:`bounds_array`; with ``scale="dp"`` of some
            columns, see :func:`partial_bounds`).
        row_norm: public row-norm bound (rows are clipped to it), or None (no row clipping).
        bounds_: the fitted ``(2, d)`` bounds (``None`` with ``scale="none"``).
        record: the steps, each with ``private`` (True = uses no private data) and a note.
    """

    scale: str = "none"
    bounds: object = None
    row_norm: float | None = 1.0
    bounds_: np.ndarray | None = None
    record: list = field(default_factory=list)

    def dp_columns(self, n_features: int, feature_names=None) -> np.ndarray:
        """Indices of the columns a ``scale="dp"`` fit estimates with the DP range step (those without public
        bounds); empty for every other scale."""
        if self.scale != "dp":
            return np.zeros(0, dtype=int)
        return np.flatnonzero(np.isnan(partial_bounds(self.bounds, feature_names, n_features)).any(axis=0))

    def fit(self, X, feature_names=None, dp_bounds=None, dp_record: dict | None = None) -> "Preprocessor":
        """Fit the maps; with ``scale="dp"``, ``dp_bounds`` (2, m) are the released bounds of the
        :meth:`dp_columns` (in that order) and ``dp_record`` the step's record (``private`` true: a DP release)."""
        if self.scale not in SCALES:
            raise ValidationError(f"scale must be one of {SCALES}, got {self.scale!r}")
        if self.row_norm is not None:
            check_positive(self.row_norm, "row_norm")
        self.record = []
        if self.scale == "bounds":
            if self.bounds is None:
                raise ValidationError("scale='bounds' needs bounds=... (public lower/upper per column)")
            self.bounds_ = bounds_array(self.bounds, feature_names, X.shape[1])
            self.record.append({"step": "scale_by_public_bounds", "private": True,
                                "note": "columns mapped into [-1, 1] by bounds stated as public; values outside "
                                        "are clipped"})
        elif self.scale == "data":
            self.bounds_ = data_bounds(X)
            self.record.append({"step": "scale_by_data_min_max", "private": False,
                                "note": "NOT PRIVATE: per-column min/max read from the training data and used "
                                        "without noise; the DP guarantee covers the training messages given these "
                                        "bounds, not the bounds themselves (state public bounds instead)"})
        elif self.scale == "dp":
            names = None if feature_names is None else [str(n) for n in feature_names]
            out = partial_bounds(self.bounds, names, X.shape[1])
            cols = np.flatnonzero(np.isnan(out).any(axis=0))
            if cols.size < X.shape[1]:
                self.record.append({"step": "scale_by_public_bounds", "private": True,
                                    "columns": [names[j] if names else f"x{j}"
                                                for j in np.flatnonzero(~np.isnan(out).any(axis=0))],
                                    "note": "columns mapped into [-1, 1] by bounds stated as public; values "
                                            "outside are clipped"})
            if cols.size:
                if dp_bounds is None or np.shape(dp_bounds) != (2, cols.size):
                    raise ValidationError(f"scale='dp' needs the DP range step's bounds of the {cols.size} column(s) "
                                          "without public bounds (privdist.learn runs the step; or pass "
                                          "bounds for every column)")
                out[:, cols] = dp_bounds
                self.record.append(dict(dp_record or {"step": "scale_by_dp_ranges", "private": True}))
            self.bounds_ = out
        else:
            self.bounds_ = None
        if self.row_norm is not None:
            self.record.append({"step": "clip_rows", "private": True, "max_norm": float(self.row_norm),
                                "note": f"every row scaled to Euclidean norm <= {self.row_norm} (public bound)"})
        return self

    def transform(self, X):
        if self.bounds_ is not None:
            X = scale_by_bounds(X, self.bounds_)
        return X if self.row_norm is None else clip_rows(X, self.row_norm)
