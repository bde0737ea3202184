"""Registry of algorithm factories by name."""

from __future__ import annotations

import dataclasses

from ..errors import UnknownNameError, ValidationError
from .consensus_admm import ConsensusADMM
from .dpsgd import DPSGD

__all__ = ["ALGORITHMS", "make_algorithm"]

ALGORITHMS: dict[str, type] = {"consensus_admm": ConsensusADMM, "dpsgd": DPSGD}


def make_algorithm(name: str, **params):
    """Instantiate the algorithm registered under ``name`` with ``params``.

    Raises:
        UnknownNameError: unknown algorithm.
        ValidationError: unknown parameter name (the message lists the known ones), or a bad value.
    """
    try:
        cls = ALGORITHMS[name]
    except KeyError:
        raise UnknownNameError("algorithm", name, list(ALGORITHMS)) from None
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValidationError(f"unknown parameter(s) {unknown} for algorithm {name!r}; known: {known}")
    return cls(**params)
