"""Party-local data sources (issue 17): where one party's raw data lives, resolved on the party's own node.

A :class:`PartySource` is a *description* (a path, a registered loader with parameters, or an importable
callable); it is small, picklable and holds no data. :meth:`PartySource.resolve` turns it into arrays in the
process that calls it: on a Ray cluster that is the party's actor on the party's node, so environment variables
in a path (``"$HOSPITAL_DATA/part.npz"``) are expanded with the node's environment, and a path that exists only
on that node is read only there. Resolved data are cached per process (a warm actor does not reload them).

File formats (by extension): ``.npz`` (arrays ``X`` and/or ``y``; other keys via ``x_key``/``y_key``),
``.npy`` (``X`` only), ``.csv``/``.txt`` (numbers; the label column ``label_column``, default the last, unless
``label_column=None``), ``.svm``/``.svmlight``/``.libsvm`` (svmlight, dense result). ``rows=[start, stop]`` and
``columns=[start, stop]`` select a slice after loading (any kind of source).
"""

from __future__ import annotations

import importlib
import os
import re
import socket
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import PrivdistError, ValidationError

__all__ = ["PartySource", "PartyDataError", "as_source", "clear_cache"]

_VAR = re.compile(r"\$(\w+)|\$\{([^}]+)\}")
_CACHE: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
_SELECT = ("rows", "columns")


class PartyDataError(PrivdistError, LookupError):
    """A party's data source cannot be resolved here (unset environment variable, missing file, bad loader)."""


def clear_cache() -> None:
    """Forget the data resolved in this process."""
    _CACHE.clear()


@dataclass(frozen=True)
class PartySource:
    """Where one party's data come from. Exactly one of ``path``, ``loader`` and ``call``.

    Args:
        path: a file; ``$VAR``/``${VAR}`` and ``~`` are expanded where the source is resolved (on the node).
        loader: a name of :data:`privdist.data.DATASETS` (``seed`` in ``params`` seeds a synthetic one).
        call: ``"package.module:function"`` importable where the source is resolved; called with ``params``,
            returns ``(X, y)``, ``X`` alone, or an object with ``X`` and ``y``.
        params: format options (``x_key``, ``y_key``, ``label_column``), loader or callable keyword arguments,
            and the selections ``rows``/``columns`` = ``[start, stop]``.

    Raises:
        ValidationError: not exactly one kind given, or a selection that is not two integers.
    """

    path: str | None = None
    loader: str | None = None
    call: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        given = [k for k in ("path", "loader", "call") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValidationError(f"a party source needs exactly one of path, loader, call; got {given or 'none'}")
        if self.call is not None and ":" not in self.call:
            raise ValidationError(f"call must be 'package.module:function', got {self.call!r}")
        for key in _SELECT:
            sel = self.params.get(key)
            if sel is not None and (len(sel) != 2 or not all(isinstance(v, int) for v in sel)):
                raise ValidationError(f"{key} must be [start, stop] (two integers), got {sel!r}")
        object.__setattr__(self, "params", dict(self.params))

    @property
    def key(self) -> str:
        """A stable text of the description (cache key; never the data)."""
        return repr((self.path, self.loader, self.call, sorted(self.params.items(), key=lambda kv: kv[0])))

    def describe(self) -> str:
        """Short public description for results (the unexpanded path, loader or callable name)."""
        return self.path if self.path is not None else (f"loader:{self.loader}" if self.loader else f"call:{self.call}")

    def resolve(self, party: int | str = "?") -> tuple[np.ndarray, np.ndarray | None]:
        """Load the data here (cached per process): ``(X, y)`` with ``y`` None when the source has no labels.

        Raises:
            PartyDataError: an environment variable of the path is unset on this node, the file does not exist
                here, or the loader/callable cannot be found (the message names the party and the host).
        """
        if self.key in _CACHE:
            return _CACHE[self.key]
        if self.path is not None:
            X, y = self._read(self._expand(party), party)
        elif self.loader is not None:
            X, y = self._load(party)
        else:
            X, y = self._call(party)
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        y = None if y is None else np.asarray(y, dtype=float).ravel()
        if X.ndim == 1:
            X = X[:, None]
        rows, cols = self.params.get("rows"), self.params.get("columns")
        if rows is not None:
            X, y = X[rows[0]:rows[1]], None if y is None else y[rows[0]:rows[1]]
        if cols is not None:
            X = X[:, cols[0]:cols[1]]
        _CACHE[self.key] = (X, y)
        return X, y

    # ------------------------------------------------------------------------------------------ kinds
    def _expand(self, party) -> str:
        missing = [a or b for a, b in _VAR.findall(self.path) if (a or b) not in os.environ]
        if missing:
            raise PartyDataError(f"party {party}: the data path {self.path!r} uses environment variable(s) "
                                 f"{', '.join(sorted(set(missing)))}, not set on node {socket.gethostname()} "
                                 f"(pid {os.getpid()}); set them in the environment of that node's `ray start`")
        path = os.path.expanduser(os.path.expandvars(self.path))
        if not os.path.exists(path):
            raise PartyDataError(f"party {party}: data file {path!r} (from {self.path!r}) does not exist on node "
                                 f"{socket.gethostname()}")
        return path

    def _read(self, path: str, party):
        p, lower = self.params, path.lower()
        if lower.endswith(".npz"):
            with np.load(path, allow_pickle=False) as z:
                xk, yk = p.get("x_key", "X"), p.get("y_key", "y")
                if xk not in z and yk not in z:
                    raise PartyDataError(f"party {party}: {path} has neither {xk!r} nor {yk!r} "
                                         f"(arrays: {sorted(z.files)})")
                y = z[yk] if yk in z else None
                return (z[xk] if xk in z else np.empty((len(y), 0))), y
        if lower.endswith(".npy"):
            return np.load(path, allow_pickle=False), None
        if lower.endswith((".csv", ".txt")):
            A = np.loadtxt(path, delimiter="," if lower.endswith(".csv") else None, ndmin=2)
            col = p.get("label_column", -1)
            if col is None:
                return A, None
            return np.delete(A, col, axis=1), A[:, col]
        if lower.endswith((".svm", ".svmlight", ".libsvm")):
            from sklearn.datasets import load_svmlight_file

            X, y = load_svmlight_file(path, n_features=p.get("n_features"))
            return X, y
        raise PartyDataError(f"party {party}: unknown data file format {path!r} "
                             "(.npz, .npy, .csv, .txt, .svm, .svmlight, .libsvm)")

    def _kwargs(self) -> dict:
        return {k: v for k, v in self.params.items() if k not in _SELECT}

    def _load(self, party):
        from .registry import DATASETS, load_dataset

        if self.loader not in DATASETS:
            raise PartyDataError(f"party {party}: unknown loader {self.loader!r}; known: {sorted(DATASETS)}")
        kw = self._kwargs()
        seed = kw.pop("seed", None)
        rng = None if seed is None else np.random.default_rng(seed)
        ds = load_dataset(self.loader, rng=rng, **kw)
        return ds.X, ds.y

    def _call(self, party):
        module, _, name = self.call.partition(":")
        try:
            fn = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise PartyDataError(f"party {party}: cannot import {self.call!r} on node {socket.gethostname()}: "
                                 f"{exc}") from None
        out = fn(**self._kwargs())
        if isinstance(out, tuple):
            return out[0], (out[1] if len(out) > 1 else None)
        if hasattr(out, "X"):
            return out.X, getattr(out, "y", None)
        return out, None


def as_source(value) -> PartySource:
    """A :class:`PartySource` from itself, a path string, or a mapping (``{"path": ...}``, ``{"loader": ...,
    "params": {...}}``, ``{"call": ...}``; other keys go into ``params``)."""
    if isinstance(value, PartySource):
        return value
    if isinstance(value, (str, os.PathLike)):
        return PartySource(path=os.fspath(value))
    if isinstance(value, Mapping):
        d = dict(value)
        kinds = {k: d.pop(k) for k in ("path", "loader", "call") if k in d}
        params = {**d.pop("params", {}), **d}
        return PartySource(**kinds, params=params)
    raise TypeError(f"a party source is a path, a mapping or a PartySource, got {type(value).__name__}")
