"""The package version (one place: ``privdist.__version__`` and ``privdist --version`` read it)."""

__version__ = "0.1.0"
