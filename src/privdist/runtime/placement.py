"""Placement of party-local actors (issue 17): which Ray custom resource (hence which node) runs each party.

A placement maps party ids (and ``"coordinator"``) to custom resources; the node started with
``ray start --resources '{"party_k": 1}'`` offers ``party_k``. See :class:`privdist.runtime.ray_party.PartyBackend`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from ..errors import PrivdistError, ValidationError

__all__ = ["PlacementError", "default_placement", "load_placement", "COORDINATOR_KEY"]

COORDINATOR_KEY = "coordinator"


class PlacementError(PrivdistError, LookupError):
    """A party (or the coordinator) is placed on a custom resource that no live node of the cluster offers."""


def default_placement(n_parties: int) -> dict:
    """``{k: "party_k"}`` for every party and ``{"coordinator": "coordinator"}``."""
    return {**{k: f"party_{k}" for k in range(n_parties)}, COORDINATOR_KEY: COORDINATOR_KEY}


def load_placement(placement, n_parties: int) -> dict | None:
    """Normalise a placement: None (default names), False (no custom resources), a mapping party -> resource
    (keys ints, their strings, or ``"coordinator"``) or a JSON/TOML file holding such a mapping.

    Raises:
        ValidationError: a key that is neither a party id nor ``"coordinator"``, or a party without a resource.
    """
    if placement is False:
        return None
    if placement is None:
        return default_placement(n_parties)
    if isinstance(placement, (str, os.PathLike)):
        text = Path(placement).read_text()
        if str(placement).endswith(".toml"):
            import tomllib

            placement = tomllib.loads(text)
            placement = placement.get("placement", placement)
        else:
            placement = json.loads(text)
    if not isinstance(placement, Mapping):
        raise TypeError(f"placement must be a mapping, a file, None or False, got {type(placement).__name__}")
    out = {}
    for key, res in placement.items():
        if key == COORDINATOR_KEY:
            out[COORDINATOR_KEY] = str(res)
            continue
        try:
            k = int(key)
        except (TypeError, ValueError):
            raise ValidationError(f"placement keys are party ids or 'coordinator', got {key!r}") from None
        if not 0 <= k < n_parties:
            raise ValidationError(f"placement names party {k}, the problem has parties 0..{n_parties - 1}")
        out[k] = str(res)
    missing = [k for k in range(n_parties) if k not in out]
    if missing:
        raise ValidationError(f"placement gives no resource to parties {missing}")
    return out
