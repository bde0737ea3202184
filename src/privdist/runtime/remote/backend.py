"""The coordinator's backend for parties that run in their own processes (issue 38): a fourth backend, not a fourth
copy of the algorithms.

:class:`RemoteBackend` runs :func:`privdist.run` with every party (one agent each) behind a *link* to its own
process (:class:`~privdist.runtime.remote.party_side.RemoteParty` there) and the coordinator's role here, in the
coordinator's process, which holds no party data. It follows the Ray backends' protocol: round-0 outboxes from each
party's ``init``, then each round one ``step`` call per party with its rows of the inbox; secure-aggregation messages
arrive masked and the protocol of :mod:`privdist.runtime.secure.secure_round` unmasks their sum with the parties'
answers. A party whose link breaks in a secure run is lost from then on (its agent is in no later sum, the recomputed
guarantee counts the honest parties left, :meth:`secure_lost`); in a run without secure sums a lost party ends the
run (:class:`~privdist.runtime.ray_common.AgentFailedError`).

A link is any object with ``call(method, args) -> result`` that raises :class:`LinkLostError` when its party is gone
(:mod:`privdist.runtime.remote.links`: in-process through the wire format, OS pipes, gRPC with mutual TLS).
Randomness is a function of (seed, trial, agent, round) as everywhere: a seeded run over processes gives the
simulator's transcript (tested).
"""

from __future__ import annotations

import numpy as np

from ...contract import BackendBase
from ...errors import PrivdistError
from ..ray_common import AgentFailedError
from ..rng import COORDINATOR_DOMAIN, AgentStreams, party_keys
from ..secure.secagg import session_id
from ..secure.secagg_plus import BUNDLE
from ..secure.secure_round import active_names, secure_specs
from ..simulator import join_outboxes

__all__ = ["RemoteBackend", "LinkLostError"]


class LinkLostError(PrivdistError, ConnectionError):
    """A party's link ended (its process died, its connection broke or timed out)."""


class RemoteBackend(BackendBase):
    """Parties behind ``links`` (``links[k]`` reaches party ``k``); the coordinator's role in this process."""

    name = "remote"
    party_local = True
    supports_secure_aggregation = True

    def __init__(self, links):
        self.links = list(links)
        self._lost: dict[int, int] = {}

    def for_problem(self, problem):
        return self

    # ------------------------------------------------------------------ calls
    def _call(self, k: int, method: str, args: dict, t: int):
        try:
            return self.links[k].call(method, args)
        except LinkLostError as exc:
            if self._specs:
                self._lost.setdefault(k, t)
                return None
            raise AgentFailedError([k], t, "agent", str(exc)) from None

    def _gather(self, method: str, args_of, t: int, fallback) -> list:
        """``method`` on every party not lost; a party lost now (secure runs) yields ``fallback(k)``."""
        out = []
        for k in range(len(self.links)):
            res = None if k in self._lost else self._call(k, method, args_of(k), t)
            out.append(fallback(k) if k in self._lost else res)
        return out

    def secure_lost(self) -> np.ndarray:
        lost = np.zeros(len(self.links), dtype=bool)
        lost[list(self._lost)] = True
        return lost

    # ------------------------------------------------------------------ the run
    def start(self, algorithm, problem, network, seed: int, trial: int, *, secure: bool = False):
        if network.n_agents != len(self.links):
            raise AgentFailedError([], 0, "agent", f"{len(self.links)} party links for {network.n_agents} agents")
        self.algorithm, self.seed, self.trial, self.t = algorithm, seed, trial, 0
        self._specs = secure_specs(algorithm.messages(problem, network))
        first = [self._call(k, "init", {"seed": seed, "trial": trial, "secure": secure}, 0)
                 for k in range(len(self.links))]
        if any(r is None for r in first):
            raise AgentFailedError(sorted(self._lost), 0, "agent", "a party was lost before the run started")
        self._est = [_estimate(r["estimate"]) for r in first]
        self._events = None
        names = {s.name for s in self._specs}
        self._silent = [{n: np.zeros(np.shape(v), dtype=np.uint64 if n in names else np.asarray(v).dtype)
                         for n, v in r["out"].items()} for r in first]
        self._coord_key = party_keys(1) if secure and algorithm.has_coordinator else None
        self.cstate, cout = None, None
        if algorithm.has_coordinator:
            self.cstate, cout = algorithm.init_coordinator(problem, network, self._coord_streams(0))
        if self._specs:  # each party draws its secrets where it runs; only the public keys table travels
            self.secure_session = session_id(seed, trial, secure)
            keys = self._gather("secure_setup", lambda k: {"session": self.secure_session, "secure": secure}, 0,
                                lambda k: np.zeros((1, 32), dtype=np.uint8))
            self.secure_keys = np.vstack(keys)
            self._gather("secure_agree", lambda k: {"table": self.secure_keys}, 0, lambda k: None)
        return join_outboxes([r["out"] for r in first]), cout

    def _coord_streams(self, t: int) -> AgentStreams:
        return AgentStreams(self.seed, self.trial, [0], t, domain=COORDINATOR_DOMAIN, keys=self._coord_key)

    def step_agents(self, t: int, inbox):
        res = self._gather("step", lambda k: {"t": t, "inbox": {n: v[k:k + 1] for n, v in inbox.items()}}, t,
                           lambda k: {"out": self._silent[k], "releases": [None], "estimate": self._est[k]})
        self.t = t
        self._events = (t, [r["releases"][0] for r in res])
        self._est = [_estimate(r["estimate"]) for r in res]
        return join_outboxes([{**self._silent[k], **r["out"]} for k, r in enumerate(res)])  # silent ones: zeros

    def step_coordinator(self, t: int, inbox):
        self.cstate, out = self.algorithm.step_coordinator(self.cstate, inbox, t, self._coord_streams(t))
        return out

    def dp_events(self, t: int) -> list:
        if self._events is not None and self._events[0] == t:
            return list(self._events[1])
        return [e for ev in self._gather("events", lambda k: {"t": t}, t, lambda k: [None]) for e in ev]

    def estimate(self) -> np.ndarray | None:
        """The parties' released models, or None when a party keeps its own (e.g. a vertical party's block)."""
        if any(e is None for e in self._est):
            return None
        return np.concatenate(self._est)

    def coordinator_state(self):
        return self.cstate

    # ------------------------------------------------------------------ secure aggregation, the parties' side
    def _dim(self, t: int) -> int:
        return sum(int(np.prod(s.shape)) for s in self._specs if s.name in active_names(self.algorithm, self._specs,
                                                                                           t))

    def secure_answer(self, t: int, attempt: int, present) -> np.ndarray:
        return np.vstack(self._gather("secure_answer", lambda k: {"t": t, "attempt": attempt, "present": present}, t,
                                      lambda k: np.zeros((1, self._dim(t)), dtype=np.uint64)))

    def secure_remask(self, t: int, attempt: int, present) -> dict:
        active = [s for s in self._specs if s.name in active_names(self.algorithm, self._specs, t)]
        silent = {s.name: np.zeros((1, *s.shape), dtype=np.uint64) for s in active}
        return join_outboxes(self._gather("secure_remask", lambda k: {"t": t, "attempt": attempt, "present": present},
                                          t, lambda k: silent))

    def secure_prepare(self, t: int):
        K = len(self.links)
        sparse = getattr(self, "secure_graph", None) is not None  # shares go out in a later call (secure_share)
        parts = self._gather("secure_prepare", lambda k: {"t": t}, t,
                             lambda k: [np.zeros((1, 32), dtype=np.uint8),
                                        np.zeros((1, 0, BUNDLE) if sparse else (1, K, 32), dtype=np.uint8)])
        return np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])

    def secure_share(self, t: int, table) -> np.ndarray:
        """Sparse graph: each party's encrypted shares for its neighbours, (K, k, BUNDLE)."""
        k = self.secure_graph.degree
        return np.vstack(self._gather("secure_share", lambda k_: {"t": t, "table": table}, t,
                                      lambda k_: np.zeros((1, k, BUNDLE), dtype=np.uint8)))

    def secure_receive(self, t: int, table, sealed) -> None:
        self._gather("secure_receive", lambda k: {"t": t, "table": table, "sealed": sealed[:, [k]]}, t,
                     lambda k: None)

    def secure_reveal(self, t: int, present) -> np.ndarray:
        K = len(self.links)
        graph = getattr(self, "secure_graph", None)
        shape = (1, K, 16) if graph is None else (1, graph.degree + 1, 32)
        return np.vstack(self._gather("secure_reveal", lambda k: {"t": t, "present": present}, t,
                                      lambda k: np.zeros(shape, dtype=np.uint8)))

    # ------------------------------------------------------------------ what stays with the parties
    def snapshot(self):
        """The coordinator's state only: the parties' states never leave them."""
        return {"state": None, "cstate": self.cstate}

    def restore(self, snap) -> None:
        from ...errors import CheckpointError

        raise CheckpointError("a remote run resumes from the parties' own records, not from a driver checkpoint")

    def party_values(self, metrics) -> dict:
        raise PrivdistError("party metrics of a remote run are computed by each party for itself (owner-only)")

    def report(self) -> dict:
        lost = {int(k): int(t) for k, t in self._lost.items()}
        return {"remote": {"parties": len(self.links), **({"lost_parties": lost} if lost else {})}}

    def close(self) -> None:
        """Tell every party still reachable that the run is over (they forget their keys)."""
        for k, link in enumerate(self.links):
            if k not in self._lost:
                try:
                    link.call("close", {})
                except (LinkLostError, PrivdistError):
                    pass
        self._coord_key = None


def _estimate(value):
    return None if value is None else np.asarray(value)
