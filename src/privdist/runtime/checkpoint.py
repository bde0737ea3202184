"""Checkpoints of a running algorithm: pickled, written atomically, tied to the run's fingerprint."""

from __future__ import annotations

import pickle
from typing import Any

from .._io import atomic_write_bytes
from ..errors import CheckpointError

__all__ = ["save_checkpoint", "load_checkpoint"]


def save_checkpoint(path, payload: dict[str, Any]) -> None:
    """Pickle ``payload`` (must hold ``fingerprint`` and ``round``) atomically."""
    atomic_write_bytes(path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))


def load_checkpoint(path, expected_fingerprint: str) -> dict[str, Any]:
    """Load a checkpoint; raise :class:`CheckpointError` if unreadable or from another configuration."""
    try:
        with open(path, "rb") as fh:
            payload = pickle.load(fh)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {path}") from None
    except Exception as exc:  # corrupt or truncated file
        raise CheckpointError(f"checkpoint {path} cannot be read: {exc}") from exc
    if payload.get("fingerprint") != expected_fingerprint:
        raise CheckpointError(
            f"checkpoint {path} belongs to another run configuration "
            f"({payload.get('fingerprint')} != {expected_fingerprint}); remove it or run without resume")
    return payload
