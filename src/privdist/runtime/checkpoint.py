"""Checkpoints of a running algorithm: pickled, written atomically, tied to the run's fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from ..errors import CheckpointError

__all__ = ["fingerprint", "save_checkpoint", "load_checkpoint", "atomic_write_bytes"]


def fingerprint(config: dict) -> str:
    """Stable hash of a JSON-serialisable configuration."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``:
    a reader sees the old file or the new one, never a partial one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
