"""Receiver-side aggregation of outboxes into inboxes (the :class:`Aggregation` rules), vectorised.

Neighbour sums and ``W(t)`` mixes are one sparse matrix product over the agent axis; gather, broadcast and
scatter are array views. The distributed backend applies the same functions to the blocks it routes, so the
arithmetic (and hence the transcript) is identical.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..errors import ShapeMismatchError
from ..contract import AGENT, Aggregation, MessageSpec

__all__ = ["Router"]


class Router:
    """Aggregation rules of one algorithm on one network.

    Args:
        specs: the algorithm's messages.
        network: a static ``Network`` (``adjacency``, ``metropolis_weights()``) or a time-varying one
            (``weights(t)``).
    """

    def __init__(self, specs: Sequence[MessageSpec], network):
        self.specs = {s.name: s for s in specs}
        self.network = network
        self._adjacency = getattr(network, "adjacency", None)
        self._static_mix = None

    def mixing(self, t: int):
        """``W(t)``: the time-varying network's ``weights(t)``, or the static network's Metropolis weights."""
        if hasattr(self.network, "weights"):
            return self.network.weights(t)
        if self._static_mix is None:
            self._static_mix = self.network.metropolis_weights()
        return self._static_mix

    def check_outbox(self, role: str, outbox: Mapping[str, np.ndarray], n_senders: int, t: int) -> None:
        """Raise :class:`ShapeMismatchError` unless ``outbox`` has exactly the declared messages and shapes."""
        expected = {n for n, s in self.specs.items() if s.sender == role}
        if set(outbox) != expected:
            raise ShapeMismatchError(f"round {t}: {role} outbox has messages {sorted(outbox)}, declared {sorted(expected)}")
        for name, arr in outbox.items():
            spec = self.specs[name]
            if spec.aggregation == Aggregation.SECURE_SUM and np.asarray(arr).dtype.kind not in "iu":
                raise ShapeMismatchError(f"round {t}: secure-sum message {name!r} must hold integers, got dtype "
                                         f"{np.asarray(arr).dtype}")
            lead = (n_senders,) if (role == AGENT or spec.aggregation == Aggregation.SCATTER) else ()
            if np.shape(arr) != lead + tuple(spec.shape):
                raise ShapeMismatchError(
                    f"round {t}: message {name!r} has shape {np.shape(arr)}, declared {lead + tuple(spec.shape)}")

    def agent_inbox(self, agent_out: Mapping[str, np.ndarray], coord_out: Mapping[str, np.ndarray] | None,
                    t: int, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Inbox of round ``t`` for the agents ``rows`` (all when None) from the round ``t-1`` outboxes."""
        inbox: dict[str, np.ndarray] = {}
        for name, spec in self.specs.items():
            agg = spec.aggregation
            if agg in (Aggregation.NEIGHBOR_SUM, Aggregation.MIX):
                out = np.asarray(agent_out[name])
                if not out.any():  # a message of zeros sums to zeros (exactly): skip the product
                    n = out.shape[0] if rows is None else len(rows)
                    inbox[name] = np.zeros((n,) + out.shape[1:])
                    continue
                M = self._adjacency if agg == Aggregation.NEIGHBOR_SUM else self.mixing(t)
                if rows is not None:
                    M = M[rows]
                flat = M @ out.reshape(out.shape[0], -1)
                inbox[name] = np.asarray(flat).reshape((flat.shape[0],) + out.shape[1:])
            elif agg == Aggregation.BROADCAST and coord_out is not None:
                n = self.network.n_agents if rows is None else len(rows)
                inbox[name] = np.broadcast_to(coord_out[name], (n,) + tuple(spec.shape))
            elif agg == Aggregation.SCATTER and coord_out is not None:
                inbox[name] = coord_out[name] if rows is None else coord_out[name][rows]
        return inbox

    def coordinator_inbox(self, agent_out: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Inbox of the coordinator: every ``GATHER`` message of the agents, stacked in agent order."""
        return {n: np.asarray(agent_out[n]) for n, s in self.specs.items() if s.aggregation == Aggregation.GATHER}
