"""privdist: privacy-preserving distributed optimization.

``privdist.run`` is :func:`privdist.runtime.run` (imported on first use, so ``import privdist`` stays fast).
"""

from ._version import __version__

__all__ = ["run", "__version__"]


def __getattr__(name: str):
    if name == "run":
        from .runtime import run

        return run
    raise AttributeError(f"module 'privdist' has no attribute {name!r}")
