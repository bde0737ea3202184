"""Data validation and the column-then-row normalisation shared by the papers (spec §1.4).

The normalisation is the one D-ZOA (S0/S1), l-AADMM (S3) and the DP-ADMM baseline apply before fitting: every
column is scaled into [-1, 1] by its largest absolute value, then every row is scaled so that its Euclidean norm is
at most 1. The per-sample sensitivity bounds of those papers (``c_1 = 1``) rely on the row step.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import NonFiniteDataError, ShapeMismatchError, ValidationError
from .bounds import clip_rows

__all__ = ["normalize_columns_rows", "check_data"]


def normalize_columns_rows(X):
    """Scale columns by their max-abs value, then rows to Euclidean norm at most 1.

    Implements spec §1.4 with resolution [AMB-D7]:

    1. column ``j``: ``X[:, j] /= max_i |X[i, j]|`` (all-zero columns are left unchanged);
    2. row ``i``: ``X[i, :] /= max(1, ||X[i, :]||_2)``.

    After step 1 every entry lies in [-1, 1]; after step 2 every row norm is <= 1 (rows already inside the unit
    ball are not enlarged; row norms are <= 1 up to floating-point rounding). Labels or responses are never
    touched by this function. Unlike scikit-learn's ``maxabs_scale``, which leaves columns whose max-abs is below
    ``10 * eps`` unscaled, every column that is not exactly zero is scaled, as the spec states.

    Args:
        X: Data matrix, a 2-D array-like or a ``scipy.sparse`` matrix/array, shape ``(n_samples, n_features)``.

    Returns:
        A new float64 array (dense input) or CSR matrix (sparse input) with the normalised rows; the input is not
        modified.

    Raises:
        ShapeMismatchError: If ``X`` is not 2-D.
        NonFiniteDataError: If ``X`` contains NaN or infinity.

    References:
        Spec §1.4 and [AMB-D7]; S1 §VI ("normalize columns so that the maximum value of each column is 1, then
        normalize rows so that their l2 norm is at most 1"); S3 §5.2.
    """
    X = _as_matrix(X, "X")
    _check_finite_matrix(X, "X")
    if sp.issparse(X):
        col_max = np.asarray(abs(X).max(axis=0).todense()).ravel()
    else:
        col_max = np.max(np.abs(X), axis=0, initial=0.0)
    col_div = np.where(col_max > 0, col_max, 1.0)  # all-zero columns are left as they are
    if sp.issparse(X):
        scaled = X.copy()
        scaled.sum_duplicates()
        scaled.data /= col_div[scaled.indices]  # division (not a reciprocal) keeps |entries| <= 1 exactly
    else:
        scaled = X / col_div
    return clip_rows(scaled, 1.0)


def check_data(X, y, name: str = "data"):
    """Validate a data matrix and its labels; return them as float arrays.

    Args:
        X: Features, 2-D array-like or ``scipy.sparse`` matrix, shape ``(n_samples, n_features)``.
        y: Labels or responses, 1-D array-like of length ``n_samples``.
        name: Name of the data set, used in error messages.

    Returns:
        ``(X, y)`` with ``X`` a float64 ndarray (or a float64 CSR matrix when ``X`` is sparse) and ``y`` a
        float64 1-D ndarray. Dense inputs that already have that type are returned without copying.

    Raises:
        ShapeMismatchError: If ``X`` is not 2-D, ``y`` is not 1-D, or ``len(y)`` differs from the number of rows.
        NonFiniteDataError: If ``X`` or ``y`` contains NaN or infinity (the message names the data set and the
            first offending row and column).
        ValidationError: If ``X`` or ``y`` is not numeric.
    """
    X = _as_matrix(X, f"X of {name}")
    try:
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"labels y of {name} must be numeric: {exc}") from None
    if y.ndim != 1:
        raise ShapeMismatchError(f"labels y of {name} must be 1-D, got shape {y.shape}")
    if y.shape[0] != X.shape[0]:
        raise ShapeMismatchError(f"{name}: X has {X.shape[0]} rows but y has {y.shape[0]} labels; they must be equal")
    _check_finite_matrix(X, f"X of {name}")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise NonFiniteDataError(
            f"labels y of {name} contain {bad.size} non-finite value(s) (NaN or inf), first at row {int(bad[0])}"
        )
    return X, y


def _as_matrix(X, what: str):
    """Return ``X`` as a float64 2-D ndarray or CSR matrix (sparse input)."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ShapeMismatchError(f"{what} must be 2-D, got shape {X.shape}")
        return sp.csr_matrix(X, dtype=float)
    try:
        arr = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} must be numeric: {exc}") from None
    if arr.ndim != 2:
        raise ShapeMismatchError(f"{what} must be 2-D (n_samples, n_features), got shape {arr.shape}")
    return arr


def _check_finite_matrix(X, what: str) -> None:
    """Raise :class:`NonFiniteDataError` naming the first non-finite entry (row, column) of ``X``."""
    if sp.issparse(X):
        coo = X.tocoo()
        bad = np.flatnonzero(~np.isfinite(coo.data))
        if bad.size:
            first = np.lexsort((coo.col[bad], coo.row[bad]))[0]
            row, col = int(coo.row[bad][first]), int(coo.col[bad][first])
            raise NonFiniteDataError(
                f"{what} contains {bad.size} non-finite value(s) (NaN or inf), first at row {row}, column {col}"
            )
        return
    mask = ~np.isfinite(X)
    if mask.any():
        row, col = (int(i) for i in np.argwhere(mask)[0])
        raise NonFiniteDataError(
            f"{what} contains {int(mask.sum())} non-finite value(s) (NaN or inf), first at row {row}, column {col}"
        )
