"""The estimators' input validation: privdist's own table checks (:func:`privdist.data.frames.check_table`: text
columns and Unicode-twin column names named, issue 40), then scikit-learn's ``validate_data``."""

from __future__ import annotations

from ..data.frames import check_table

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _sklearn_validate_data
except ImportError:  # pragma: no cover
    def _sklearn_validate_data(est, *args, **kwargs):
        return est._validate_data(*args, **kwargs)

__all__ = ["validate_data"]


def validate_data(est, X, *args, **kwargs):
    """scikit-learn's ``validate_data(est, X, ...)`` after :func:`~privdist.data.frames.check_table` on ``X``."""
    check_table(X)
    return _sklearn_validate_data(est, X, *args, **kwargs)
