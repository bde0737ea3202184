"""The estimators' input validation: privdist's own table checks (:func:`privdist.data.frames.check_table`: text
columns and Unicode-twin column names named, issue 40), a missing or infinite value named by its column and row
(:class:`~privdist.errors.NonFiniteDataError`; scikit-learn's own message named neither and pointed to
HistGradientBoosting, issue 39), then scikit-learn's ``validate_data``."""

from __future__ import annotations

import numpy as np

from ..data.frames import check_table
from ..errors import NonFiniteDataError

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _sklearn_validate_data
except ImportError:  # pragma: no cover
    def _sklearn_validate_data(est, *args, **kwargs):
        return est._validate_data(*args, **kwargs)

__all__ = ["validate_data"]


def validate_data(est, X, *args, **kwargs):
    """scikit-learn's ``validate_data(est, X, ...)`` after :func:`~privdist.data.frames.check_table` on ``X``."""
    check_table(X)
    _check_finite(X, "X")
    if args and args[0] is not None and not isinstance(args[0], str):
        _check_finite(args[0], "y")
    return _sklearn_validate_data(est, X, *args, **kwargs)


def _check_finite(values, what: str) -> None:
    """:class:`NonFiniteDataError` naming the first NaN or infinite cell of a dense numeric ``values`` (a
    DataFrame's column by its name); anything else (sparse, text, ragged) is left to scikit-learn."""
    import scipy.sparse as sp

    if sp.issparse(values):
        return
    try:
        A = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return
    bad = ~np.isfinite(A)
    if A.ndim not in (1, 2) or not bad.any():
        return
    row, col = (int(i) for i in np.argwhere(bad)[0]) if A.ndim == 2 else (int(np.flatnonzero(bad)[0]), None)
    columns = getattr(values, "columns", None)
    where = "" if col is None else f" in column {str(columns[col]) if columns is not None else col!r}"
    raise NonFiniteDataError(f"{what}: {int(bad.sum())} missing or infinite value(s) (NaN or inf), first{where} at "
                             f"row {row}; privdist does not impute: drop or fill them")
