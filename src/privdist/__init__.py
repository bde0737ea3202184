"""privdist: privacy-preserving distributed optimization."""
__version__ = "0.1.0"
