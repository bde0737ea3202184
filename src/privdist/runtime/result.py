"""``RunResult``: what one run of one algorithm produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .transcript import Transcript

__all__ = ["RunResult"]


@dataclass
class RunResult:
    """Outcome of :func:`privdist.run`.

    Attributes:
        algorithm: registry name of the algorithm.
        params: its hyperparameters.
        rounds: number of rounds run.
        seed, trial: the randomness coordinates.
        estimates: final released values, shape (K, P).
        curves: per-metric arrays of length ``rounds + 1`` (round 0 = initial values).
        iterates: released values of every round, (rounds + 1, K, P), when ``keep_iterates``.
        transcript: the messages (full, digest or none).
        ledger: per-agent :class:`privdist.privacy.PrivacyLedger` of declared releases.
        timings: seconds for ``init``, ``rounds`` and per round.
        final_state: the algorithm's state after the last round (and ``final_coordinator_state``).
        config: what produced it (algorithm, params, rounds, seed, trial, backend, versions).
    """

    algorithm: str
    params: dict[str, Any]
    rounds: int
    seed: int
    trial: int
    estimates: np.ndarray
    curves: dict[str, np.ndarray]
    transcript: Transcript
    ledger: Any
    timings: dict[str, float]
    final_state: Any = None
    final_coordinator_state: Any = None
    iterates: np.ndarray | None = None
    config: dict[str, Any] = field(default_factory=dict)

    def privacy(self, delta: float, accountants=None) -> dict:
        """Per-agent epsilon of the ledger under each accountant (see :func:`privdist.privacy.privacy_report`)."""
        from ..privacy import ACCOUNTANTS, privacy_report

        return privacy_report(self.ledger, delta, ACCOUNTANTS if accountants is None else accountants)
