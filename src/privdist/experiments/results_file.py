"""The part of a results directory's ``results.json`` that ``privdist report`` and ``summary.md`` read, checked
before anything is formatted (issue 26: a hand-edited epsilon ``"nan"`` was a ``TypeError`` deep in the table code).

:func:`check_results` validates the fields the tables read (types, not values: a NaN written by
:func:`privdist._io.write_json` is ``null`` and shows as ``nan``; ``"inf"`` is infinity) and lets every other key
through. A directory written by ``privdist fit`` (a model, not experiment results) is named as such.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from ..errors import OutputDirError

__all__ = ["check_results"]

_Number = Optional[float]  # null: NaN (write_json), or a claim that does not apply


class _Loose(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class _Metric(_Loose):
    final_mean: _Number
    final_std: _Number


class _Agent(_Loose):
    epsilon: dict[str, _Number]
    paper_note: Optional[str] = None


class _Privacy(_Loose):
    per_agent: list[_Agent]
    delta: float
    not_guaranteed: list[str] = []
    exposures: list[str] = []
    assumptions: list[str] = []


class _Run(_Loose):
    label: str
    params: dict[str, Any] = {}
    metrics: dict[str, _Metric] = {}
    privacy: _Privacy
    seconds: float


class _Claim(_Loose):
    holds: Optional[bool]
    text: str
    evidence: str


class _Results(_Loose):
    experiment: str
    title: str
    trials: int
    seed: int
    complete: bool
    runs: list[_Run] = Field(min_length=1)
    claims: list[_Claim] = []
    config: dict[str, Any] = {}


def check_results(data, source: str) -> dict:
    """Return ``data`` (a parsed ``results.json``) if the fields the report reads have their types.

    Raises:
        OutputDirError: not a results dictionary, a ``privdist fit`` output, or a field of the wrong type (the
            message names its key path, e.g. ``runs[0].privacy.per_agent[1].epsilon.rdp``).
    """
    if isinstance(data, dict) and "runs" not in data and {"settings", "privacy", "release_boundary"} <= set(data):
        raise OutputDirError(f"{source} is the output of privdist fit (a model and its privacy report), not of "
                             "privdist run or reproduce: privdist report reads experiment results")
    if not isinstance(data, dict):
        raise OutputDirError(f"{source} is not a privdist results file (not a JSON object)")
    try:
        _Results.model_validate(data)
    except PydanticError as exc:
        problems = []
        for err in exc.errors()[:4]:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
            problems.append(f"{where or 'top level'}: {err['msg'].lower()}, got {_short(err.get('input'))}")
        raise OutputDirError(f"{source} is not a privdist results file: " + "; ".join(problems)) from None
    return data


def _short(value) -> str:
    from .._checks import shown

    return shown(value, 40)
