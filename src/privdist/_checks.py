"""Small input checks shared by every layer (STYLE #11): each raises a named error naming the value."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import NonFiniteDataError, ValidationError

__all__ = ["check_finite", "check_positive", "check_nonnegative", "check_probability", "check_int"]


def check_finite(array, name: str) -> np.ndarray:
    """Return ``array`` as a float ndarray; raise :class:`NonFiniteDataError` if it has NaN or inf."""
    arr = np.asarray(array, dtype=float)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        where = tuple(int(i) for i in bad[0]) if bad.size else ()
        raise NonFiniteDataError(
            f"{name} contains {int((~np.isfinite(arr)).sum())} non-finite value(s) (NaN or inf), first at index {where}"
        )
    return arr


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise NonFiniteDataError(f"{name} must be finite, got {value}")
    return value


def check_positive(value, name: str) -> float:
    """Return ``float(value)``; raise :class:`ValidationError` unless it is finite and > 0."""
    v = _number(value, name)
    if v <= 0:
        raise ValidationError(f"{name} must be > 0, got {v}")
    return v


def check_nonnegative(value, name: str) -> float:
    """Return ``float(value)``; raise :class:`ValidationError` unless it is finite and >= 0."""
    v = _number(value, name)
    if v < 0:
        raise ValidationError(f"{name} must be >= 0, got {v}")
    return v


def check_probability(value, name: str) -> float:
    """Return ``float(value)``; raise :class:`ValidationError` unless it lies in the open interval (0, 1)."""
    v = _number(value, name)
    if not 0 < v < 1:
        raise ValidationError(f"{name} must be in (0, 1), got {v}")
    return v


def check_int(value, name: str, minimum: int = 1) -> int:
    """Return ``int(value)``; raise unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValidationError(f"{name} must be >= {minimum}, got {value}")
    return int(value)
