"""The states of DP ADMM sharing's parties and coordinator, and the helpers of a party step
(:mod:`privdist.algorithms.sharing`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SharingPartyState", "SharingCoordinatorState"]


def _clip(v: np.ndarray, bound: float) -> tuple[np.ndarray, bool]:
    """``v`` scaled to l2 norm <= ``bound`` (unchanged if already inside), and whether it was clipped."""
    norm = float(np.linalg.norm(v))
    if norm <= bound:
        return v, False
    return v * (bound / norm), True


class _Party:
    """Row ``i`` of a block's streams: what a mechanism reads to draw one party's noise (the party's id, the round,
    ``draw`` from that party's own generator). Lazy: a run without noise never touches ``rng``."""

    __slots__ = ("_rng", "_i")

    def __init__(self, rng, i: int):
        self._rng, self._i = rng, i

    @property
    def agents(self) -> np.ndarray:
        return np.asarray(self._rng.agents)[self._i:self._i + 1]

    @property
    def round(self) -> int:
        return self._rng.round

    def draw(self, fn) -> np.ndarray:
        return np.stack([fn(self._rng.generators()[self._i], 0)])


@dataclass(frozen=True)
class SharingPartyState:
    """Parties of one block: ``x`` (b, d) noise-free ``x_m`` embedded at their offsets, ``Q`` (b, N) last shares,
    ``chol``/``noise_factor`` per party (Cholesky factor; pseudo-inverse square root or None), ``dropped`` the
    number of null directions removed from ``D_m^T D_m`` (``paper_precision``), ``sigma`` (b,) the noise std the
    mechanism draws (0 in ``computed_heuristic``, calibrated each round), ``data`` the blocks, ``clip_bound``
    the public ``b1`` the party step clips ``y`` (to ``b1``) and ``v_m`` (to ``M b1``) to, or None, ``clipped``
    (b,) the number of rounds in which a party clipped ``y`` or ``v_m``, ``sensitivity`` (b,) the ``C`` each
    party's release is calibrated to, ``agents`` the parties' global ids, ``x_avg`` the running mean of ``x`` over
    the rounds stepped (``average=True``, else None) and ``steps`` their number."""

    x: np.ndarray
    Q: np.ndarray
    chol: tuple
    noise_factor: tuple
    dropped: tuple
    sigma: np.ndarray
    data: object
    clip_bound: float | None = None
    clipped: np.ndarray | None = None
    sensitivity: np.ndarray | None = None
    agents: np.ndarray | None = None
    x_avg: np.ndarray | None = None
    steps: int = 0


@dataclass(frozen=True)
class SharingCoordinatorState:
    """Coordinator: labels (private), ``z``, ``y``, ``s`` (N,), ``scale`` (secure aggregation)."""

    labels: np.ndarray
    loss_weight: float
    z: np.ndarray
    y: np.ndarray
    s: np.ndarray
    scale: float = 0.0  # secure aggregation: the public sensitivity 2 C the parties' sums are encoded with
