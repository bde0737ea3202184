"""The in-process simulator backend: agents stepped at once along a leading agent axis.

No Python loop over agents on the hot path: with the default ``blocks=1`` one ``step`` call per round serves
all ``K`` agents, and :class:`Router` turns outboxes into inboxes with sparse products. ``blocks > 1`` splits the
agents into contiguous blocks stepped separately, as a distributed backend does with its workers; the result is
identical (same per-agent streams, same arithmetic per row), which the tests use to check that an algorithm
really keeps agents independent.

Secure mode (``start(..., secure=True)``, DESIGN idea 4): each agent's noise stream is rooted at its own key and the
coordinator at another, drawn here from OS entropy when the run starts (:func:`~privdist.runtime.rng.party_keys`),
kept per agent in this backend (never in a snapshot, a checkpoint or the result) and forgotten at :meth:`close`.
The simulator plays every party in one process, so that process could read them all: the per-agent keys give the
simulated run the noise a deployment gives (no agent's noise follows from the seed or another agent's key); the
parties' own processes are :class:`~privdist.runtime.ray_party.PartyBackend`'s actors.

Secure aggregation (issue 27): an algorithm with ``SECURE_SUM`` messages gets one
:class:`~privdist.runtime.secure.secure_round.PartySide` for all agents, set up in :meth:`start` (keys from the agents'
streams in research mode, from OS entropy in secure mode); :meth:`step_agents` masks those messages before returning
the outbox, each pair's mask expanded once for both ends.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_int
from ..contract import AgentBlock, BackendBase
from .rng import COORDINATOR_DOMAIN, AgentStreams, party_keys
from .secure.secagg import session_id
from .secure.secure_round import PartySide, secure_specs

__all__ = ["SimulatorBackend", "join_outboxes", "sent_messages", "step_agents_many"]


def join_outboxes(outs):
    """Concatenate the outboxes of consecutive agent blocks along the agent axis."""
    if len(outs) == 1:
        return outs[0]
    return {name: np.concatenate([o[name] for o in outs]) for name in outs[0]}


def sent_messages(algorithm, outbox: dict, t: int) -> dict:
    """The agents' messages of round ``t`` that carry something: those the algorithm's public schedule
    (``silent(name, t)``, in every trust mode) declares silent hold zeros (dpmm's Gram outside round 1, everything
    in its last round): they are neither recorded (the transcript holds what crossed the network) nor sent by a
    remote party (:mod:`privdist.runtime.remote`)."""
    silent = getattr(algorithm, "silent", None)
    return outbox if silent is None else {n: a for n, a in outbox.items() if not silent(n, t)}


class SimulatorBackend(BackendBase):
    """Runs an algorithm's agents (in ``blocks`` contiguous blocks) and its coordinator in this process."""

    name = "simulate"
    supports_secure_aggregation = True

    def __init__(self, blocks: int = 1):
        self.n_blocks = check_int(blocks, "blocks", 1)

    def start(self, algorithm, problem, network, seed: int, trial: int, *, secure: bool = False):
        """Initialise; return the round-0 outboxes ``(agent_out, coord_out or None)``. ``secure``: every agent and
        the coordinator draw their own key here (module docstring); ``seed`` then roots no noise."""
        self.algorithm, self.seed, self.trial = algorithm, seed, trial
        K = network.n_agents
        self._keys = party_keys(K) if secure else None  # agent k's key is self._keys[k]
        self._coord_key = party_keys(1) if secure and algorithm.has_coordinator else None
        degrees = getattr(network, "degrees", None)
        self.blocks = []
        for ids in np.array_split(np.arange(K), min(self.n_blocks, K)):
            deg = None if degrees is None else np.asarray(degrees)[ids]
            self.blocks.append(AgentBlock(ids, K, deg))
        self.states, outs = [], []
        for block in self.blocks:
            state, out = algorithm.init(problem, network, block, self._streams(block, 0))
            self.states.append(state)
            outs.append(out)
        self.cstate, cout = None, None
        if algorithm.has_coordinator:
            self.cstate, cout = algorithm.init_coordinator(problem, network, self._coord_streams(0))
        specs = secure_specs(algorithm.messages(problem, network))
        self._secure = None
        if specs:  # the setup of secure aggregation: keys advertised, the table broadcast, pair keys agreed
            self.secure_session = session_id(seed, trial, secure)
            self._secure = PartySide(algorithm, specs, np.arange(K), K, seed, trial, secure, self.secure_session)
            self.secure_keys = self._secure.public_keys()
            self._secure.agree(self.secure_keys)
        return join_outboxes(outs), cout

    def _streams(self, block, t: int) -> AgentStreams:
        keys = None if self._keys is None else [self._keys[a] for a in block.agents]
        return AgentStreams(self.seed, self.trial, block.agents, t, keys=keys)

    def _coord_streams(self, t: int) -> AgentStreams:
        return AgentStreams(self.seed, self.trial, [0], t, domain=COORDINATOR_DOMAIN, keys=self._coord_key)

    def step_agents(self, t: int, inbox):
        outs = []
        for i, block in enumerate(self.blocks):
            rows = inbox if len(self.blocks) == 1 else {k: v[block.agents] for k, v in inbox.items()}
            self.states[i], out = self.algorithm.step(self.states[i], rows, t, self._streams(block, t))
            outs.append(out)
        out = join_outboxes(outs)
        return out if self._secure is None else self._secure.mask_outbox(t, out)

    def secure_answer(self, t: int, attempt: int, present) -> np.ndarray:
        """The present agents' answers of round ``t``'s secure sum (:mod:`privdist.runtime.secure.secure_round`)."""
        return self._secure.answer(t, attempt, present)

    def secure_remask(self, t: int, attempt: int, present) -> dict:
        """The present agents' secure messages of round ``t`` under the masks of ``attempt``."""
        return self._secure.remask(t, attempt, present)

    def secure_prepare(self, t: int):
        """Threshold recovery: the round's public keys (K, 32) and encrypted shares (K, K, 32) of every agent."""
        return self._secure.prepare(t)

    def secure_share(self, t: int, table) -> np.ndarray:
        """Sparse graph: every agent's encrypted shares for its neighbours, (K, k, 32)."""
        return self._secure.share(t, table)

    def secure_receive(self, t: int, table, sealed) -> None:
        """Threshold recovery: the round's key table and the encrypted shares, delivered."""
        self._secure.receive(t, table, sealed)

    def secure_reveal(self, t: int, present) -> np.ndarray:
        """Threshold recovery: every agent's shares of the seeds the aggregator needs, (K, K, 16)."""
        return self._secure.reveal(t, present)

    def step_coordinator(self, t: int, inbox):
        self.cstate, out = self.algorithm.step_coordinator(self.cstate, inbox, t, self._coord_streams(t))
        return out

    def dp_events(self, t: int) -> list:
        return [e for s in self.states for e in self.algorithm.dp_events(s, t)]

    def estimate(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.algorithm.estimate(s)) for s in self.states])

    def coordinator_state(self):
        return self.cstate

    def snapshot(self):
        """Everything needed to continue the run (for checkpoints)."""
        return {"state": self.states[0] if len(self.states) == 1 else list(self.states), "cstate": self.cstate}

    def restore(self, snap) -> None:
        self.states = [snap["state"]] if len(self.blocks) == 1 else list(snap["state"])
        self.cstate = snap["cstate"]

    def close(self) -> None:
        """Forget the secure-mode keys and the secure-aggregation secrets (a finished run draws no more noise)."""
        self._keys = self._coord_key = self._secure = None


def step_agents_many(backends, t: int, inboxes) -> list:
    """Step the agents of several simulator runs of one algorithm (one block each) in one ``step_many`` call
    (:func:`privdist.runtime.run_many`); other configurations, or an algorithm without ``step_many``, are stepped
    run by run. Returns each run's outbox."""
    algorithm = backends[0].algorithm
    many = getattr(algorithm, "step_many", None)
    if many is None or any(len(be.blocks) != 1 or be.algorithm is not algorithm or be._secure is not None
                           for be in backends):  # secure messages are masked by step_agents
        return [be.step_agents(t, inbox) for be, inbox in zip(backends, inboxes)]
    streams = [be._streams(be.blocks[0], t) for be in backends]
    AgentStreams.prefetch(streams)
    done = many([(be.states[0], inbox, rng) for be, inbox, rng in zip(backends, inboxes, streams)], t)
    for be, (state, _) in zip(backends, done):
        be.states[0] = state
    return [out for _, out in done]
