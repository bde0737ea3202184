"""Registry of algorithm factories by name."""

from __future__ import annotations

import dataclasses
import numbers
import types
import typing

from .._checks import shown
from ..errors import ParameterTypeError, UnknownNameError, ValidationError
from .base import Budgeted
from .consensus_admm import ConsensusADMM
from .dpadmm import DPADMM
from .dpdonc import DPDONC
from .dpmm import DPMM
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
from .ssp import SSP
from .zooadmm import ZOOADMM

__all__ = ["ALGORITHMS", "make_algorithm"]

#: Every algorithm by registry name: the foundation's, then by paper (S0/S1, S2, S3, S4).
ALGORITHMS: dict[str, type] = {
    "consensus_admm": ConsensusADMM, "dpsgd": DPSGD,
    "dzoa": DZOA, "dzoa_gauss": DZOAGauss, "dpadmm": DPADMM, "orzo": ORZO, "zooadmm": ZOOADMM, "pvp": PVP, "dvp": DVP,
    "admm_sharing": ADMMSharing, "fdml_sgd": FDMLSGD,
    "laadmm": LAADMM, "radmm": RADMM,
    "dpdonc": DPDONC,
    "dpmm": DPMM, "ssp": SSP,
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
    if isinstance(params.get("epsilon"), (list, tuple)) and issubclass(cls, Budgeted):
        params = {**params, "epsilon": tuple(params["epsilon"])}  # one budget per agent (validated by the factory)
        _check_types(name, cls, {k: v for k, v in params.items() if k != "epsilon"})
    else:
        _check_types(name, cls, params)
    return cls(**params)


def _allowed(hint) -> set:
    """The plain types a field annotation admits (``float | None`` -> {float, NoneType})."""
    if hint is typing.Any:
        return {object}
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_allowed(a) for a in typing.get_args(hint)))
    if origin is not None:
        return {origin}
    return {hint}


def _check_types(name: str, cls: type, params: dict) -> None:
    """Reject a value of the wrong type before the factory sees it (a :class:`ParameterTypeError`, also a
    TypeError, naming the parameter, STYLE #11): a string where a number is expected would otherwise fail deep
    inside a comparison."""
    hints = typing.get_type_hints(cls)
    for key, value in params.items():
        allowed = _allowed(hints.get(key, typing.Any))
        if object in allowed or type(value) in allowed:
            continue
        if value is False and type(None) in allowed:  # TOML has no null: false means "none" (e.g. epsilon)
            continue
        is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if is_number and (float in allowed or (int in allowed and float(value).is_integer()
                                               and isinstance(value, numbers.Integral))):
            continue
        if isinstance(value, (list, tuple)) and (tuple in allowed or list in allowed):
            continue
        names = sorted(getattr(t, "__name__", str(t)).replace("NoneType", "None") for t in allowed)
        raise ParameterTypeError(f"{name}: parameter {key} must be {' or '.join(names)}, got "
                                 f"{type(value).__name__} {shown(value)}")

