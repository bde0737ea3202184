"""DP events as plain data: hashable normal form and JSON-safe (de)serialisation.

Releases carry a :class:`dp_accounting.DpEvent` (STYLE #6). dp-accounting's events are frozen ``attrs``
classes, but :class:`~dp_accounting.dp_event.ComposedDpEvent` holds a ``list`` and is therefore not hashable;
:func:`freeze_event` rebuilds such events with tuples so that a release can be used as a dictionary key (the
ledger's run-length compression and the accountants' cache rely on it). :func:`event_to_dict` and
:func:`event_from_dict` turn an event into nested JSON-safe dictionaries and back, by event class name and
``attrs`` fields, for every event class of ``dp_accounting.dp_event`` except ``UnsupportedDpEvent``, and for
privdist's own events (:data:`PRIVDIST_EVENTS`: the Skellam release of :mod:`privdist.privacy.skellam`, issue 27).
"""

from __future__ import annotations

import importlib
import numbers
from typing import Any

import attr

from .._lazy import lazy
from ..errors import UnsupportedEventError, ValidationError

dp_event = lazy("dp_accounting.dp_event")  # imported on first use (start-up time)

__all__ = ["freeze_event", "event_to_dict", "event_from_dict", "walk_events", "PRIVDIST_EVENTS"]

#: privdist's own DP events (subclasses of dp-accounting's ``DpEvent``): class name -> module (imported on first use).
PRIVDIST_EVENTS: dict[str, str] = {"SkellamDpEvent": "privdist.privacy.skellam"}


def _privdist_class(name: str):
    module = PRIVDIST_EVENTS.get(name)
    return None if module is None else getattr(importlib.import_module(module), name)


def _event_class(name: str) -> type[dp_event.DpEvent]:
    cls = getattr(dp_event, name, None) if name not in PRIVDIST_EVENTS else _privdist_class(name)
    if (
        not isinstance(cls, type)
        or not issubclass(cls, dp_event.DpEvent)
        or cls is dp_event.DpEvent
        or cls is dp_event.UnsupportedDpEvent
    ):
        raise UnsupportedEventError(f"event type {name!r} cannot be serialised or restored")
    return cls


def _check_event(event: Any) -> dp_event.DpEvent:
    if not isinstance(event, dp_event.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
    cls = type(event)
    if getattr(cls, "privdist_event", False) and _privdist_class(cls.__name__) is cls:
        return event
    if cls is dp_event.UnsupportedDpEvent or getattr(dp_event, cls.__name__, None) is not cls:
        raise UnsupportedEventError(f"event type {cls.__name__!r} is not supported by privdist")
    return event


def _freeze_value(value: Any) -> Any:
    if isinstance(value, dp_event.DpEvent):
        return freeze_event(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze_value(v) for v in value)
    return value


def freeze_event(event: dp_event.DpEvent) -> dp_event.DpEvent:
    """Return ``event`` with every list field (recursively) replaced by a tuple, so that it is hashable.

    Args:
        event: A dp-accounting event.

    Returns:
        An equal-in-meaning event that can be hashed; ``event`` itself when nothing had to change.

    Raises:
        TypeError: ``event`` is not a ``DpEvent``.
        UnsupportedEventError: ``event`` is ``UnsupportedDpEvent`` or a class foreign to dp-accounting.
    """
    _check_event(event)
    changes = {}
    for field in attr.fields(type(event)):
        value = getattr(event, field.name)
        frozen = _freeze_value(value)
        if frozen is not value:
            changes[field.name] = frozen
    return attr.evolve(event, **changes) if changes else event


def walk_events(event: dp_event.DpEvent):
    """Yield ``event`` and every event nested in it (depth first)."""
    yield event
    for field in attr.fields(type(event)):
        value = getattr(event, field.name)
        values = value if isinstance(value, (list, tuple)) else (value,)
        for v in values:
            if isinstance(v, dp_event.DpEvent):
                yield from walk_events(v)


def _value_to_json(value: Any, where: str) -> Any:
    if isinstance(value, dp_event.DpEvent):
        return event_to_dict(value)
    if isinstance(value, (list, tuple)):
        return [_value_to_json(v, where) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise UnsupportedEventError(f"field {where} holds a {type(value).__name__}, which cannot be serialised")


def event_to_dict(event: dp_event.DpEvent) -> dict[str, Any]:
    """Serialise an event as ``{"type": <class name>, <field>: <value>, ...}`` (nested events as dicts).

    Args:
        event: A dp-accounting event, e.g. ``GaussianDpEvent(2.0)`` or a composition of events.

    Returns:
        A JSON-safe dictionary, e.g. ``{"type": "GaussianDpEvent", "noise_multiplier": 2.0}``.

    Raises:
        UnsupportedEventError: the event (or a nested one) is ``UnsupportedDpEvent``, a class foreign to
            ``dp_accounting.dp_event``, or holds a value that is not a number, string, list or event.
    """
    _check_event(event)
    cls = type(event)
    out: dict[str, Any] = {"type": cls.__name__}
    for field in attr.fields(cls):
        out[field.name] = _value_to_json(getattr(event, field.name), f"{cls.__name__}.{field.name}")
    return out


def _value_from_json(value: Any) -> Any:
    if isinstance(value, dict):
        return event_from_dict(value)
    if isinstance(value, list):
        return tuple(_value_from_json(v) for v in value)
    return value


def event_from_dict(data: dict[str, Any]) -> dp_event.DpEvent:
    """Rebuild an event serialised by :func:`event_to_dict` (lists come back as tuples).

    Args:
        data: The dictionary, with a ``"type"`` key naming a ``dp_accounting.dp_event`` class.

    Returns:
        The event, in hashable normal form (see :func:`freeze_event`).

    Raises:
        UnsupportedEventError: the type is unknown or unsupported.
        ValidationError: the dictionary is malformed (missing type, wrong or missing fields).
    """
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValidationError(f"a serialised event must be a dict with a string 'type', got {data!r}")
    cls = _event_class(data["type"])
    names = {f.name for f in attr.fields(cls)}
    given = set(data) - {"type"}
    if given != names:
        raise ValidationError(
            f"serialised {data['type']} must have fields {sorted(names)}, got {sorted(given)}"
        )
    kwargs = {name: _value_from_json(data[name]) for name in names}
    return freeze_event(cls(**kwargs))
