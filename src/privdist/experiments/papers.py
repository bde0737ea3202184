"""The source papers an experiment may reproduce (a spec's ``paper``) and the names ``privdist reproduce`` accepts."""

from __future__ import annotations

__all__ = ["PAPERS", "PAPER_ALIASES"]

PAPERS = ("S0", "S1", "S2", "S3", "S4")
PAPER_ALIASES = {"dzoa": ("S0", "S1"), "sharing": ("S2",), "laadmm": ("S3",), "dpdonc": ("S4",)}
