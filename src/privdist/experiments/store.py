"""Results directories: one per experiment run, written atomically, resumable (DESIGN "Results on disk").

Layout::

    OUT/.privdist-experiment   marker: experiment name and config fingerprint (guards against mixing)
    OUT/.privdist-lock         the owner's pid and host while a run writes here (exclusive; see ResultsDir)
    OUT/.privdist-complete     written LAST by a finished run or fit; readers refuse the directory without it
                               (issue 40; privdist._io.check_complete). Temporary files ``.*.tmp`` left by a
                               killed writer are removed when the directory is opened again (--resume)
    OUT/trials/trial_0000.json one file per finished trial (atomic), the unit of resume
    OUT/results.json           aggregated results (schema in the README), rewritten after every trial
    OUT/traces.npz             per-run, per-metric curves of every trial, shape (trials, rounds + 1)
    OUT/*.png, OUT/*.svg       figures;  OUT/summary.md  human-readable summary
    OUT/owner_only/            on a user's data: metrics, traces, figures, summary, per-trial curves (owner-only
                               evaluation, not covered by the guarantee; see privdist.experiments.boundary)
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import numpy as np

from .._checks import shown
from .._io import (EXPERIMENT_MARKER, atomic_write_bytes, clear_complete, fingerprint, is_temporary, mark_complete,
                   read_json, remove_temporaries, write_json)
from ..errors import OutputDirError, ResultsLockedError

__all__ = ["ResultsDir", "acquire_lock", "release_lock", "inside", "LOCK", "FIT_EXPERIMENT"]

MARKER = EXPERIMENT_MARKER
LOCK = ".privdist-lock"
#: The experiment name a ``privdist fit`` output directory carries in its marker (issue 26): another command's
#: results are not replaced without ``--overwrite``, and two fits never write into one directory at once.
FIT_EXPERIMENT = "privdist fit"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return True


def acquire_lock(directory: Path) -> Path:
    """Take the exclusive lock of a results directory: create ``LOCK`` holding this process's pid and host.

    The lock file appears atomically with its content (a hard link of a written temporary file). A lock left by a
    dead process on this host is stale and replaced; a lock of a live process, or of another host (whose
    processes cannot be checked), is refused.

    Raises:
        ResultsLockedError: another live process holds the lock.
        OutputDirError: the lock cannot be written.
    """
    lock = directory / LOCK
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    tmp = directory / f".privdist-lock.{me['pid']}.tmp"
    try:
        tmp.write_text(json.dumps(me))
        for _ in range(3):
            try:
                os.link(tmp, lock)
                return lock
            except FileExistsError:
                owner = _read_lock(lock)
                if owner is None:
                    continue  # removed meanwhile
                pid, host = owner.get("pid"), owner.get("host")
                if not isinstance(pid, int) or not isinstance(host, str):
                    raise ResultsLockedError(
                        f"{directory} has a lock file {lock} that privdist cannot read (not written by privdist, or "
                        "damaged); if no privdist process writes into this directory, delete the lock file") from None
                if host == me["host"] and isinstance(pid, int) and not _alive(pid):
                    _remove_if(lock, owner)  # stale: its owner died without releasing it
                    continue
                raise ResultsLockedError(
                    f"{directory} is in use by privdist process {pid} on host {host!r} (lock file {lock}); wait for "
                    "it to finish, choose another --out, or delete the lock file if that process is gone") from None
        raise ResultsLockedError(f"{directory}: could not take the lock {lock} (it keeps changing owner)")
    except OutputDirError:  # (an OSError itself: FileExistsError)
        raise
    except OSError as exc:
        raise OutputDirError(f"cannot write the lock file in {directory}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _read_lock(lock: Path) -> dict | None:
    try:
        info = json.loads(lock.read_text())
        return info if isinstance(info, dict) else {}
    except FileNotFoundError:
        return None
    except (ValueError, OSError):
        return {}


def _remove_if(lock: Path, owner: dict) -> None:
    if _read_lock(lock) == owner:
        lock.unlink(missing_ok=True)


def _differences(old, new, limit: int = 4) -> str:
    """What differs between a recorded configuration and this one, as key paths with both values (issue 26:
    ``--resume`` with other ``--trials`` now says ``trials: 2 -> 3``)."""
    if not isinstance(old, dict):
        return "the directory does not record its configuration"
    found: list[str] = []

    def walk(a, b, path):
        if len(found) > limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                walk(a.get(key, _UNSET), b.get(key, _UNSET), f"{path}.{key}" if path else str(key))
        elif a != b:
            found.append(f"{path or 'config'}: {_show(a)} there, {_show(b)} now")

    walk(_restore_json(old), _restore_json(new), "")
    more = "; ..." if len(found) > limit else ""
    return "; ".join(found[:limit]) + more if found else "the same keys, another fingerprint"


_UNSET = object()


def _show(value) -> str:
    return "unset" if value is _UNSET else shown(value, 40)


def _restore_json(config):
    """``config`` as it reads back from JSON (tuples as lists, inf as ``"inf"``), so equal values compare equal."""
    return json.loads(json.dumps(config, default=str))


def release_lock(lock: Path) -> None:
    """Remove a lock taken by :func:`acquire_lock` in this process (no-op if it is not ours any more)."""
    owner = _read_lock(lock)
    if owner and owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname():
        lock.unlink(missing_ok=True)


def inside(directory: Path, name: str) -> Path:
    """``directory / name``, refusing a name that would leave ``directory`` (``..``, absolute, separators)."""
    path = (directory / name)
    if Path(name).is_absolute() or ".." in Path(name).parts or path.resolve().parent != directory.resolve():
        raise OutputDirError(f"output file name {name!r} would leave the results directory {directory}")
    return path


class ResultsDir:
    """The output directory of one experiment.

    Args:
        path: directory (created if missing).
        experiment: experiment name; config: its configuration (fingerprinted).
        overwrite: allow replacing another experiment's results.
        resume: keep finished trials of the same configuration.
        subdirs: subdirectories made in it (an experiment's ``trials``; none for a fit).
        defer_clear: leave a former run's files (and its completion marker) in place until :meth:`start_writing`
            (a fit calls it just before writing its files), so that a run failing before that, on a typo in a
            column name, say, does not destroy the results it would have replaced (issue 39).

    The directory is locked (:func:`acquire_lock`) from construction until :meth:`close` (or the end of a
    ``with`` block), before anything in it is read or removed: a second run into the same directory is refused
    instead of mixing its trials with this one's.

    Raises:
        OutputDirError: the directory holds another experiment's (or another configuration's, when
            resuming) results and ``overwrite`` is false, or it is a non-empty directory privdist did not make,
            or it cannot be created.
        ResultsLockedError: another live process is writing into it.
    """

    def __init__(self, path, experiment: str, config: dict, overwrite: bool = False, resume: bool = False,
                 subdirs: tuple[str, ...] = ("trials",), defer_clear: bool = False):
        self.path = Path(path)
        self.subdirs = subdirs
        self._pending: tuple[bool, str] | None = None
        self.config = config
        self.fingerprint = fingerprint(config)
        self.lock: Path | None = None
        marker = self.path / MARKER
        if self.path.exists() and not self.path.is_dir():
            raise OutputDirError(f"output path {self.path} exists and is not a directory")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputDirError(f"cannot create results directory {self.path}: {exc.strerror or exc}") from None
        self.lock = acquire_lock(self.path)
        try:
            fresh = all(c.name == LOCK or c.name.startswith(".privdist-lock.") or is_temporary(c)
                        for c in self.path.iterdir())  # a writer killed during its first file left only a .tmp
            self._prepare(marker, experiment, overwrite, resume, fresh)
            if not defer_clear:
                self.start_writing()
        except BaseException:
            self.close()
            raise

    def _prepare(self, marker: Path, experiment: str, overwrite: bool, resume: bool, fresh: bool) -> None:
        if marker.exists():
            try:
                info = json.loads(marker.read_text())
            except (ValueError, OSError):
                info = {}
            if not isinstance(info, dict):
                info = {}
            other = info.get("experiment")
            if other != experiment and not overwrite:
                raise OutputDirError(f"{self.path} holds results of experiment {other!r}, not {experiment!r}; "
                                     "choose another --out or pass --overwrite")
            if resume and info.get("fingerprint") != self.fingerprint and not overwrite:
                raise OutputDirError(f"{self.path} holds results of a different configuration of {experiment!r} "
                                     f"({_differences(info.get('config'), self.config)}); cannot --resume (pass "
                                     "--overwrite to start over)")
            clear = not resume or other != experiment or info.get("fingerprint") != self.fingerprint
        elif not fresh and not overwrite:
            raise OutputDirError(f"{self.path} is not empty and holds no privdist results; "
                                 "choose another --out or pass --overwrite")
        else:
            clear = overwrite
        self._pending = (clear, experiment)

    def start_writing(self) -> None:
        """Clear the former run's files (unless resuming), mark the directory incomplete and as this run's; once
        (at construction unless ``defer_clear``)."""
        if self._pending is None:
            return
        clear, experiment = self._pending
        self._pending = None
        if clear:
            self._clear()
        marker = self.path / MARKER
        try:
            clear_complete(self.path)  # from here until mark_complete, readers refuse the directory (issue 40)
            remove_temporaries(self.path)  # left by a killed writer (we hold the lock: no live writer's)
            for sub in self.subdirs:
                (self.path / sub).mkdir(parents=True, exist_ok=True)
            write_json(marker, {"experiment": experiment, "fingerprint": self.fingerprint, "config": self.config,
                                "completion_marker": True})
        except OSError as exc:
            raise OutputDirError(f"cannot write into results directory {self.path}: {exc.strerror or exc}") from None

    def mark_complete(self) -> None:
        """Write the completion marker, after every other file of the run or fit (issue 40)."""
        mark_complete(self.path)

    def close(self) -> None:
        """Release the directory's lock."""
        if self.lock is not None:
            release_lock(self.lock)
            self.lock = None

    def __enter__(self) -> "ResultsDir":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def file(self, name: str) -> Path:
        """Path of an output file ``name`` inside the directory (OutputDirError if it would leave it)."""
        return inside(self.path, name)

    def _clear(self) -> None:
        for child in self.path.iterdir():
            if child.name == MARKER or child.name == LOCK:
                continue
            shutil.rmtree(child) if child.is_dir() else child.unlink()

    def trial_file(self, trial: int) -> Path:
        return self.path / "trials" / f"trial_{trial:04d}.json"

    def finished_trials(self) -> dict[int, dict]:
        """Trials already on disk (readable ones; a corrupt file is ignored and will be rerun)."""
        out = {}
        for f in sorted((self.path / "trials").glob("trial_*.json")):
            try:
                data = read_json(f)
                out[int(data["trial"])] = data
            except (ValueError, KeyError, TypeError, OSError):
                continue
        return out

    def save_trial(self, data: dict) -> None:
        write_json(self.trial_file(int(data["trial"])), data)

    def save_traces(self, traces: dict[str, np.ndarray], path: Path | None = None) -> None:
        """Write ``traces`` to ``traces.npz`` (or ``path``, e.g. the owner-only directory of a run on a user's
        data, :mod:`privdist.experiments.boundary`)."""
        import io

        buf = io.BytesIO()
        np.savez_compressed(buf, **traces)
        atomic_write_bytes(self.path / "traces.npz" if path is None else path, buf.getvalue())
