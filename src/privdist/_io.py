"""File helpers shared by every layer: atomic writes, JSON that keeps infinities, stable configuration hashes.

Below every subpackage (like :mod:`privdist.errors` and :mod:`privdist._checks`), so that the runtime's
checkpoints, the experiments' results directories, the estimators' ``model.json`` and the CLI's outputs all write
through one implementation and no layer imports a higher one for a file helper (issue 23).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .errors import OutputWriteError, PrivdistError

__all__ = ["atomic_write_bytes", "check_writable_dir", "write_json", "read_json", "fingerprint", "mark_complete",
           "clear_complete", "is_temporary", "check_complete", "follows_protocol", "remove_temporaries",
           "EXPERIMENT_MARKER", "COMPLETE_MARKER"]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``:
    a reader sees the old file or the new one, never a partial one. Missing parent directories are created.

    Raises:
        OutputWriteError: the file or its directory cannot be written (the message names the path and why).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputWriteError(f"cannot write {path}: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, PrivdistError):
            raise OutputWriteError(f"cannot write {path}: {_reason(exc)}") from None
        raise


def check_writable_dir(directory: str | os.PathLike, what: str = "output directory") -> Path:
    """Create ``directory`` (and its parents) if needed and check that a file can be written in it, before any
    work whose result would go there (issue 26: an unwritable ``--out`` is found before training, not after).

    Raises:
        OutputWriteError: it exists and is not a directory, or it cannot be created or written.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise OutputWriteError(f"{what} {directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".privdist-probe."):
            pass
    except OSError as exc:
        raise OutputWriteError(f"cannot write into {what} {directory}: {_reason(exc)}") from None
    return directory


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def write_json(path, obj) -> None:
    """Write ``obj`` as JSON atomically (NaN becomes null; +-inf the strings ``"inf"``/``"-inf"``, which
    :func:`read_json` turns back into floats: an infinite epsilon must never read as "n/a")."""
    atomic_write_bytes(path, json.dumps(_clean(obj), indent=1).encode())


def read_json(path):
    """Read a file written by :func:`write_json` (``"inf"``/``"-inf"`` back to floats)."""
    return _restore(json.loads(Path(path).read_text()))


def fingerprint(config: dict) -> str:
    """Stable hash of a JSON-serialisable configuration (16 hex digits)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _restore(obj):
    if isinstance(obj, dict):
        return {k: _restore(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_restore(v) for v in obj]
    if obj in ("inf", "-inf"):
        return float(obj)
    return obj


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        if np.isnan(obj):
            return None
        return float(obj) if np.isfinite(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


# -- completion markers (issue 40) ------------------------------------------------------------------------------------
#: The marker of an output directory of ``privdist run`` or ``privdist fit`` (written by
#: :class:`privdist.experiments.store.ResultsDir` before anything else; its ``completion_marker`` field says that the
#: directory follows the completion protocol below).
EXPERIMENT_MARKER = ".privdist-experiment"
#: Written atomically LAST, after every other file of the run or fit; removed before the first file of a new one.
COMPLETE_MARKER = ".privdist-complete"


def mark_complete(directory) -> None:
    """Write the completion marker of ``directory``: the last file a finished run or fit writes."""
    atomic_write_bytes(Path(directory) / COMPLETE_MARKER, json.dumps({"complete": True}).encode())


def clear_complete(directory) -> None:
    """Remove the completion marker (before a run or fit writes its first file)."""
    (Path(directory) / COMPLETE_MARKER).unlink(missing_ok=True)


def follows_protocol(directory) -> bool:
    """Whether ``directory`` was written under the completion protocol (its experiment marker says so); a directory
    written by an older privdist (no such field) is read as before, by its ``results.json``'s ``complete`` flag."""
    try:
        info = json.loads((Path(directory) / EXPERIMENT_MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("completion_marker") is True


def check_complete(directory) -> None:
    """Refuse an output directory whose writer did not finish (no completion marker).

    Raises:
        IncompleteOutputError: ``directory`` follows the completion protocol and has no marker.
    """
    from .errors import IncompleteOutputError

    directory = Path(directory)
    if follows_protocol(directory) and not (directory / COMPLETE_MARKER).is_file():
        raise IncompleteOutputError(f"{directory} is incomplete: the run was interrupted (no completion marker "
                                    f"{COMPLETE_MARKER}); rerun it or continue it with --resume")


def is_temporary(path) -> bool:
    """A temporary file of :func:`atomic_write_bytes` (``.NAME.XXXX.tmp``); lock files are not ours to remove."""
    name = Path(path).name
    return name.startswith(".") and name.endswith(".tmp") and not name.startswith(".privdist-lock.")


def remove_temporaries(directory) -> list[Path]:
    """Remove the temporary files an interrupted :func:`atomic_write_bytes` left under ``directory`` (a killed process
    cannot remove them); call it only while holding the directory's lock. Returns the files removed."""
    removed = []
    for path in Path(directory).rglob(".*.tmp"):
        if path.is_file() and is_temporary(path):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
