"""Transcripts: everything that crossed the network in a run (DESIGN idea 2).

``full`` keeps every message array by (round, sender role, name) - what an eavesdropper sees; ``digest``
keeps only a SHA-256 over the same bytes in the same order (cheap, enough to assert identical runs);
``none`` records nothing.
"""

from __future__ import annotations

import hashlib
from typing import Mapping

import numpy as np

from ..errors import UnknownNameError

__all__ = ["Transcript", "TRANSCRIPT_MODES"]

TRANSCRIPT_MODES = ("full", "digest", "none")


class Transcript:
    """Messages of a run, recorded round by round.

    Attributes:
        mode: ``full``, ``digest`` or ``none``.
        rounds: ``{round: {(role, name): array}}`` (``full`` mode only); arrays have a leading sender axis.
    """

    def __init__(self, mode: str = "digest"):
        if mode not in TRANSCRIPT_MODES:
            raise UnknownNameError("transcript mode", mode, list(TRANSCRIPT_MODES))
        self.mode = mode
        self.rounds: dict[int, dict[tuple[str, str], np.ndarray]] = {}
        self._chain = b""  # hash chain: picklable, so a resumed run continues the same digest
        self.n_messages = 0

    def record(self, t: int, role: str, outbox: Mapping[str, np.ndarray]) -> None:
        """Record the outbox of ``role`` in round ``t`` (names in sorted order)."""
        if self.mode == "none":
            return
        h = hashlib.sha256(self._chain)
        for name in sorted(outbox):
            given = outbox[name]
            arr = np.ascontiguousarray(given, dtype=np.float64)
            self.n_messages += arr.shape[0] if arr.ndim else 1
            h.update(f"{t}|{role}|{name}|{arr.shape}".encode())
            h.update(memoryview(arr).cast("B"))  # the same bytes as arr.tobytes(), without a copy
            if self.mode == "full":  # a converted array is already a fresh copy (integer messages)
                fresh = not np.may_share_memory(arr, given) if isinstance(given, np.ndarray) else True
                self.rounds.setdefault(t, {})[(role, name)] = arr if fresh else arr.copy()
        self._chain = h.digest()

    @property
    def digest(self) -> str | None:
        """Hex SHA-256 chain over everything recorded (None in ``none`` mode)."""
        return None if self.mode == "none" else self._chain.hex()

    def messages(self, role: str, name: str) -> np.ndarray:
        """All rounds of one message, stacked: shape (rounds, senders, ...) (``full`` mode)."""
        if self.mode != "full":
            raise ValueError(f"messages() needs a full transcript, this one is {self.mode!r}")
        rounds = [self.rounds[t][(role, name)] for t in sorted(self.rounds) if (role, name) in self.rounds[t]]
        return np.stack(rounds)
