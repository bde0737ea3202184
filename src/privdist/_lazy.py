"""Lazy module references: heavy dependencies are imported where they are first used, not at ``import privdist``.

``privdist --help``, ``privdist list`` and ``import privdist`` must start in well under a second (issue 16); about
90% of a cold start used to be dp-accounting (which imports scipy.signal and friends) even for non-private runs.
``lazy("dp_accounting.dp_event")`` returns a stand-in whose first attribute access imports the module.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["lazy"]


class _LazyModule:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not yet imported"
        return f"<lazy module {self._name!r} ({state})>"


def lazy(name: str) -> _LazyModule:
    """A reference to module ``name`` that imports it on first attribute access."""
    return _LazyModule(name)
