"""Results directories: one per experiment run, written atomically, resumable (DESIGN "Results on disk").

Layout::

    OUT/.privdist-experiment   marker: experiment name and config fingerprint (guards against mixing)
    OUT/trials/trial_0000.json one file per finished trial (atomic), the unit of resume
    OUT/results.json           aggregated results (schema in the README), rewritten after every trial
    OUT/traces.npz             per-run, per-metric curves of every trial, shape (trials, rounds + 1)
    OUT/*.png, OUT/*.svg       figures;  OUT/summary.md  human-readable summary
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from ..errors import OutputDirError
from ..runtime.checkpoint import atomic_write_bytes, fingerprint

__all__ = ["ResultsDir", "write_json"]

MARKER = ".privdist-experiment"


def write_json(path, obj) -> None:
    """Write ``obj`` as JSON atomically (NaN becomes null; +-inf the strings ``"inf"``/``"-inf"``, which
    :func:`read_json` turns back into floats: an infinite epsilon must never read as "n/a")."""
    atomic_write_bytes(path, json.dumps(_clean(obj), indent=1).encode())


def _restore(obj):
    if isinstance(obj, dict):
        return {k: _restore(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_restore(v) for v in obj]
    if obj in ("inf", "-inf"):
        return float(obj)
    return obj


def read_json(path):
    """Read a file written by :func:`write_json` (``"inf"``/``"-inf"`` back to floats)."""
    return _restore(json.loads(Path(path).read_text()))


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


class ResultsDir:
    """The output directory of one experiment.

    Args:
        path: directory (created if missing).
        experiment: experiment name; config: its configuration (fingerprinted).
        overwrite: allow replacing another experiment's results.
        resume: keep finished trials of the same configuration.

    Raises:
        OutputDirError: the directory holds another experiment's (or another configuration's, when
            resuming) results and ``overwrite`` is false, or it is a non-empty directory privdist did not make.
    """

    def __init__(self, path, experiment: str, config: dict, overwrite: bool = False, resume: bool = False):
        self.path = Path(path)
        self.fingerprint = fingerprint(config)
        marker = self.path / MARKER
        if self.path.exists() and not self.path.is_dir():
            raise OutputDirError(f"output path {self.path} exists and is not a directory")
        if marker.exists():
            info = json.loads(marker.read_text())
            other = info.get("experiment")
            if other != experiment and not overwrite:
                raise OutputDirError(f"{self.path} holds results of experiment {other!r}, not {experiment!r}; "
                                     "choose another --out or pass --overwrite")
            if resume and info.get("fingerprint") != self.fingerprint and not overwrite:
                raise OutputDirError(f"{self.path} holds results of a different configuration of {experiment!r}; "
                                     "cannot --resume (pass --overwrite to start over)")
            if not resume or other != experiment or info.get("fingerprint") != self.fingerprint:
                self._clear()
        elif self.path.exists() and any(self.path.iterdir()) and not overwrite:
            raise OutputDirError(f"{self.path} is not empty and holds no privdist results; "
                                 "choose another --out or pass --overwrite")
        elif self.path.exists() and overwrite:
            self._clear()
        (self.path / "trials").mkdir(parents=True, exist_ok=True)
        write_json(marker, {"experiment": experiment, "fingerprint": self.fingerprint})

    def _clear(self) -> None:
        for child in self.path.iterdir():
            if child.name == MARKER:
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
            except (ValueError, KeyError):
                continue
        return out

    def save_trial(self, data: dict) -> None:
        write_json(self.trial_file(int(data["trial"])), data)

    def save_traces(self, traces: dict[str, np.ndarray]) -> None:
        import io

        buf = io.BytesIO()
        np.savez_compressed(buf, **traces)
        atomic_write_bytes(self.path / "traces.npz", buf.getvalue())
