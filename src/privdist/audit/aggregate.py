"""What the aggregator sees of an algorithm with secure sums: the audited release under ``trust="secure_aggregation"``.

Under secure aggregation a party's own outbox is masked (uniform modulo ``2^bits`` to anyone without the other
parties' keys), so auditing it would test nothing. What a party's data reach is the **sum** the aggregator
unmasks, and that is what the ledger's secure events are about (each party's release is the aggregate, protected by
the honest parties' noise shares, :mod:`privdist.algorithms._secure`). :class:`AggregateView` rebuilds that sum from a
run's full transcript exactly as the aggregator does (:func:`privdist.runtime.secure.secagg.unmask_sum` on the
masked vectors and the parties' answers of attempt 0, both recorded in the transcript), round by round, beside the
target's clear messages of the same round.

Only for runs in which every party is in every sum (no dropout: one attempt), one network per run (the audit's
``runs`` mode: a copies run would mask across copies).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from ..runtime.secure.secagg import unmask_sum
from ..runtime.secure.secure_round import active_names, secure_bits, secure_specs

__all__ = ["AggregateView", "aggregate_view"]

_ANSWER = "secagg.answer@attempt0"


@dataclass(frozen=True)
class AggregateView:
    """Rounds ``first..rounds`` of: the decoded-before-scaling secure sums (centred integers, the active secure
    messages in name order) and the target's clear agent messages (names sorted).

    Attributes:
        algorithm: the audited algorithm (its public ``secure_silent`` schedule names each round's active sums).
        secure: the names of its ``SECURE_SUM`` messages, in name order; bits: their modulus exponent.
        target: the agent whose data differ.
        last: only round ``rounds`` (``view="last"``), else every round from 1 (``"all"``).
    """

    algorithm: object
    secure: tuple
    bits: int
    target: int
    last: bool = False

    def rows(self, result, agents, rounds: int) -> np.ndarray:
        """One row (the run has one network): the aggregator's view of rounds ``1..rounds`` (or the last)."""
        if len(agents) != 1:
            raise ValidationError("the aggregate view audits one network per run (no disjoint copies)")
        parts = []
        for t in ([rounds] if self.last else range(1, rounds + 1)):
            msgs = result.transcript.rounds.get(t, {})
            clear = sorted(n for role, n in msgs if role == "agent" and n not in self.secure
                           and not n.startswith("secagg.") and "@attempt" not in n)
            for name in clear:
                parts.append(np.asarray(msgs[("agent", name)])[self.target].reshape(1, -1))
            names = active_names(self.algorithm, [_Spec(n) for n in self.secure], t)
            if not names:
                continue
            if ("agent", _ANSWER) not in msgs or any(("agent", f"{n}@attempt1") in msgs for n in names):
                raise ValidationError(f"round {t}: the aggregate view needs every party in the sum at attempt 0 "
                                      "(no dropout)")
            masked = np.concatenate([_words(msgs[("agent", n)]) for n in names], axis=1)
            answers = _words(msgs[("agent", _ANSWER)])
            present = np.ones(masked.shape[0], dtype=bool)
            parts.append(unmask_sum(masked, answers, present, self.bits).astype(float).reshape(1, -1))
        if not parts:
            raise ValidationError("the aggregate view found nothing released in the audited rounds")
        return np.concatenate(parts, axis=1)


@dataclass(frozen=True)
class _Spec:
    name: str


def _words(arr) -> np.ndarray:
    """Transcript values (float64, exact below 2^53) back to the uint64 words that crossed the network."""
    a = np.asarray(arr)
    return a.reshape(a.shape[0], -1).astype(np.uint64)


def aggregate_view(algorithm, problem, network, target: int, view: str) -> AggregateView | None:
    """The :class:`AggregateView` of ``algorithm`` on ``problem`` (``view``: ``"last"`` or ``"all"``), or ``None``
    when it declares no secure-sum message (its agents' outboxes are the release)."""
    specs = algorithm.messages(problem, network)
    sec = secure_specs(specs)
    if not sec:
        return None
    return AggregateView(algorithm, tuple(s.name for s in sec), secure_bits(sec), int(target), view == "last")
