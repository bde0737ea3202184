"""Small input checks shared by every layer (STYLE #11): each raises a named error naming the value."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import NonFiniteDataError, ParameterTypeError, ResourceLimitError, ValidationError

__all__ = ["MAX_BYTES", "MAX_SECONDS", "check_estimate", "shown", "check_finite", "check_positive", "check_nonnegative",
           "check_probability", "check_int"]


#: Above these estimates (peak memory, serial CPU time) ``privdist run``, ``privdist fit`` and ``privdist audit`` (and
#: their Python functions) refuse to start unless confirmed: ``--yes`` / ``allow_large=True`` (issues 15, 26).
MAX_BYTES = 4 * 2**30
MAX_SECONDS = 24 * 3600.0


def check_estimate(what: str, nbytes: float, seconds: float, allow_large: bool, detail: str) -> None:
    """Refuse a job whose estimated memory ``nbytes`` or time ``seconds`` is above :data:`MAX_BYTES` or
    :data:`MAX_SECONDS`, unless ``allow_large``.

    Args:
        what: the job, e.g. ``"experiment 'x'"`` or ``"this fit"``.
        detail: the public sizes the estimate rests on (named in the message).

    Raises:
        ResourceLimitError: above a limit and not ``allow_large``.
    """
    if allow_large:
        return
    over = []
    if nbytes > MAX_BYTES:
        over.append(f"about {nbytes / 2**30:.3g} GiB of memory (limit {MAX_BYTES / 2**30:g} GiB)")
    if seconds > MAX_SECONDS:
        over.append(f"about {seconds / 3600:.3g} CPU hours (limit {MAX_SECONDS / 3600:g} h)")
    if over:
        raise ResourceLimitError(f"{what} needs {' and '.join(over)} ({detail}); pass --yes (allow_large=True) to "
                                 "run it anyway")


def shown(value, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters; numpy scalars (also inside lists, tuples and
    dicts) appear as the plain numbers they are, never as ``np.float64(...)`` (issue 26)."""
    text = repr(_plain(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


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
        raise ParameterTypeError(f"{name} must be a real number, got {type(value).__name__} {shown(value)}")
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
        raise ParameterTypeError(f"{name} must be an integer, got {type(value).__name__} {shown(value)}")
    if value < minimum:
        raise ValidationError(f"{name} must be >= {minimum}, got {value}")
    return int(value)
