"""Registry of algorithm factories by name."""

from __future__ import annotations

import dataclasses

from ..errors import UnknownNameError, ValidationError
from .consensus_admm import ConsensusADMM
from .dpadmm import DPADMM
from .dpdonc import DPDONC
from .dpsgd import DPSGD
from .dvp import DVP
from .dzoa import DZOA
from .dzoa_gauss import DZOAGauss
from .fdml import FDMLSGD
from .laadmm import LAADMM
from .orzo import ORZO
from .pvp import PVP
from .radmm import RADMM
from .sharing import ADMMSharing
from .zooadmm import ZOOADMM

__all__ = ["ALGORITHMS", "make_algorithm"]

#: Every algorithm by registry name: the foundation's, then by paper (S0/S1, S2, S3, S4).
ALGORITHMS: dict[str, type] = {
    "consensus_admm": ConsensusADMM, "dpsgd": DPSGD,
    "dzoa": DZOA, "dzoa_gauss": DZOAGauss, "dpadmm": DPADMM, "orzo": ORZO, "zooadmm": ZOOADMM, "pvp": PVP, "dvp": DVP,
    "admm_sharing": ADMMSharing, "fdml_sgd": FDMLSGD,
    "laadmm": LAADMM, "radmm": RADMM,
    "dpdonc": DPDONC,
}

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
