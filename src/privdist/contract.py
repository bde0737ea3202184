"""The algorithm and backend contracts (DESIGN.md "Core contracts"; STYLE #1, #2, #13).

An algorithm is a small factory object holding hyperparameters. It never touches transport: each round the
backend calls ``step`` for a *block of agents at once* (leading agent axis; the simulator passes all agents,
the distributed backend one block per worker), and delivers what ``step`` returns as the outbox.

Round structure (``t = 1..T``), identical on every backend:

1. ``init`` returns the state of the agents and their round-0 outbox (data-independent values, e.g. zeros);
   an algorithm with a coordinator role also gets ``init_coordinator``.
2. In round ``t`` every agent block runs ``step(state, inbox, t, rng)``. ``inbox`` holds, per incoming message
   name, the receiver-side aggregate (:class:`Aggregation`) of the messages sent in round ``t - 1``.
3. Then the coordinator (if any) runs ``step_coordinator`` on the ``GATHER``-ed agent messages of round ``t``;
   what it sends reaches the agents in round ``t + 1``.

Secure aggregation (issue 27): the agents' ``SECURE_SUM`` messages of round ``t`` are masked where the agents run and
summed by the protocol of :mod:`privdist.runtime.secure.secagg` before ``step_coordinator``; what the ledger records for that
round is ``secure_events(t, present, problem)`` (one release or None per agent, from public facts and the parties
``present`` in the sum), and ``dp_events`` of such an algorithm declares the worst case its calibration assumes (for callers that
step it outside a run). A backend runs secure aggregation when it has ``supports_secure_aggregation = True`` and the
members ``secure_answer``/``secure_remask`` (the simulator and the Ray backend).

Every privacy-costing message is declared by ``dp_events(state, t)``: one :class:`privdist.privacy.Release`
(or ``None``) per agent of the block, for the outbox of round ``t``, computed from hyperparameters and public
constants only. The runtime records them in the per-agent ledger. ``None`` means the outbox depends on no
private data (post-processing of received messages, data-free values); a data-dependent message without noise
is ``non_private_release`` (epsilon = inf), and a release whose assumptions privdist does not enforce is a
claim (``Release.guarantee = False``), never a guarantee.

A *backend* (:class:`Backend`) decides only where ``step`` runs: :func:`privdist.run` drives every backend through
the members declared there (the in-process simulator, the Ray backend, the party-local Ray backend), and
:class:`BackendBase` gives the defaults of the optional ones. This module sits below the algorithms and the runtime,
so importing an algorithm loads no backend (issue 23).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

from .privacy.secure_params import MAX_BITS, RECOVERIES, check_bits  # re-exported: the message specs use them

__all__ = ["Aggregation", "MessageSpec", "check_bits", "MAX_BITS", "RECOVERIES", "Algorithm", "AgentBlock", "AGENT", "COORDINATOR", "Backend", "BackendBase",
           "BACKEND_MEMBERS"]

AGENT = "agent"
COORDINATOR = "coordinator"


class Aggregation(str, enum.Enum):
    """How the receiver combines the messages of one name.

    NEIGHBOR_SUM: ``inbox_k = sum_{l in N_k} out_l`` over the undirected network's neighbours (``k`` excluded).
    MIX: ``inbox_k = sum_l W(t)[k, l] out_l`` with the network's mixing matrix of the receiving round ``t``
        (Metropolis weights of a static network, ``weights(t)`` of a time-varying one); includes ``k``'s own.
    GATHER: agent -> coordinator; the coordinator receives every agent's message stacked, shape (K, ...).
    BROADCAST: coordinator -> agents; one message, every agent receives the same copy.
    SCATTER: coordinator -> agents; the coordinator sends (K, ...) and agent ``k`` receives row ``k``.
    SECURE_SUM: agent -> coordinator through secure aggregation (issue 27, :mod:`privdist.runtime.secure.secagg`): each agent
        sends an integer vector, the backend masks it where the agent runs, and the coordinator receives only the sum
        mod ``2^bits`` (``MessageSpec.bits``) over the agents in the round's sum, as centred integers of the
        message's shape. An algorithm with such messages declares their releases through
        ``secure_events(t, present, problem)`` and may declare a message silent in a round with
        ``secure_silent(name, t)``.
    """

    NEIGHBOR_SUM = "neighbor_sum"
    MIX = "mix"
    GATHER = "gather"
    BROADCAST = "broadcast"
    SCATTER = "scatter"
    SECURE_SUM = "secure_sum"


_SENDER = {
    Aggregation.NEIGHBOR_SUM: AGENT,
    Aggregation.MIX: AGENT,
    Aggregation.GATHER: AGENT,
    Aggregation.BROADCAST: COORDINATOR,
    Aggregation.SCATTER: COORDINATOR,
    Aggregation.SECURE_SUM: AGENT,
}





@dataclass(frozen=True)
class MessageSpec:
    """Name, per-sender shape and receiver-side aggregation of one message (``bits``: the modulus exponent of a
    ``SECURE_SUM`` message)."""

    name: str
    shape: tuple[int, ...]
    aggregation: Aggregation
    bits: int | None = None

    @property
    def sender(self) -> str:
        """``"agent"`` or ``"coordinator"``."""
        return _SENDER[self.aggregation]


@dataclass(frozen=True)
class AgentBlock:
    """Which agents a ``step`` call serves, and the public facts about the network they may use.

    Attributes:
        agents: global agent ids of the block, in order (rows of the state arrays).
        n_agents: total number of agents ``K``.
        degrees: ``d_k`` of the block's agents in the undirected network (None for directed networks).
    """

    agents: np.ndarray
    n_agents: int
    degrees: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.agents)


Outbox = Mapping[str, np.ndarray]


@runtime_checkable
class Algorithm(Protocol):
    """What every registered algorithm provides (coordinator methods only when ``has_coordinator``)."""

    name: str
    has_coordinator: bool

    def params(self) -> dict[str, Any]:
        """Hyperparameters, JSON-serialisable (recorded with results)."""

    def for_rounds(self, rounds: int) -> "Algorithm":
        """The factory to run for ``rounds`` rounds (a total privacy budget is spread over them); optional: an
        algorithm without it runs as it is."""

    def messages(self, problem, network) -> tuple[MessageSpec, ...]:
        """Every message the algorithm sends, with per-sender shapes for this problem."""

    def init(self, problem, network, block: AgentBlock, rng) -> tuple[Any, Outbox]:
        """State of the block's agents and their round-0 outbox."""

    def step(self, state, inbox: Mapping[str, np.ndarray], t: int, rng) -> tuple[Any, Outbox]:
        """One round for the block; returns a new state (the input is not mutated) and the outbox."""

    def dp_events(self, state, t: int) -> list:
        """One ``Release`` or ``None`` per agent of the block, for the outbox of round ``t``."""

    def estimate(self, state) -> np.ndarray:
        """The values the agents last released, shape (block size, P) (scored by metrics, AMB-X1)."""

    def assumptions(self) -> list[str]:
        """Caveats of the privacy analysis to carry into results (spec §1.3)."""

    def exposures(self) -> list[str]:
        """Named exposures no DP event covers (e.g. labels in the clear); optional, default none."""


@runtime_checkable
class Backend(Protocol):
    """What :func:`privdist.run` needs of a backend (the simulator, the Ray backend, the party-local Ray backend).

    The rounds are the run's (see the module docstring); a backend holds the agents' and the coordinator's state
    and steps them where it places them. Subclass :class:`BackendBase` for the defaults of ``party_local``,
    ``for_problem``, ``coordinator_state``, ``party_values``, ``durable_snapshot`` and ``report``.
    """

    name: str
    """Recorded in results (``config["backend"]``)."""
    party_local: bool
    """True when each party resolves its own data where its actor runs (the driver never holds a party's arrays);
    then metrics that are sums of the parties' parts come from :meth:`party_values`."""

    def for_problem(self, problem) -> "Backend":
        """The backend that runs a party-local ``problem``: this one, or another (the Ray backend hands such a
        problem to its party-local backend); a backend without a party mode returns itself and the problem is
        materialized in the driver."""

    def start(self, algorithm, problem, network, seed: int, trial: int, *,
              secure: bool = False) -> tuple[Outbox, Outbox | None]:
        """Initialise the agents (and the coordinator); return the round-0 outboxes ``(agents, coordinator or
        None)``. ``seed`` is the root of the noise streams in research mode; with ``secure`` every party (and the
        coordinator) draws its own key from OS entropy where it runs (:func:`privdist.runtime.rng.party_keys`),
        which roots its streams instead and never reaches the driver or another party."""

    def step_agents(self, t: int, inbox: Mapping[str, np.ndarray]) -> Outbox:
        """Round ``t`` of every agent on its inbox rows; returns the agents' outbox (agent axis first)."""

    def step_coordinator(self, t: int, inbox: Mapping[str, np.ndarray]) -> Outbox:
        """Round ``t`` of the coordinator on the gathered agent messages; returns its outbox."""

    def dp_events(self, t: int) -> list:
        """The releases of round ``t``'s agent outbox: one ``Release`` or None per agent."""

    def estimate(self) -> np.ndarray:
        """The values the agents last released, shape (K, P)."""

    def coordinator_state(self) -> Any:
        """The coordinator's current state (None without a coordinator): for metrics computed in the driver."""

    def party_values(self, metrics: Mapping[str, Any]) -> dict[str, float]:
        """On a party-local backend: each party metric summed over the parties' parts, computed where they run."""

    def snapshot(self) -> dict:
        """``{"state": ..., "cstate": ...}``: everything needed to continue the run (``final_state`` of results)."""

    def durable_snapshot(self) -> dict:
        """What a driver checkpoint stores to continue the run (a party-local backend keeps the states on the
        parties' nodes and returns only where they are)."""

    def restore(self, snap: dict) -> None:
        """Continue from a :meth:`durable_snapshot` (after :meth:`start`)."""

    def report(self) -> dict:
        """What results record about the run on this backend (merged into ``RunResult.config``), after close."""

    def close(self) -> None:
        """Release the backend's resources (actors, processes); called once at the end of every run."""


#: Every member :class:`Backend` declares (attributes and methods), for checks that name what is missing.
BACKEND_MEMBERS: tuple[str, ...] = tuple(sorted({*Backend.__annotations__} | {
    name for name, value in vars(Backend).items() if callable(value) and not name.startswith("_")}))


class BackendBase:
    """Defaults of the optional members of :class:`Backend` (a backend without a party mode or run report)."""

    party_local = False
    supports_secure_aggregation = False

    def for_problem(self, problem) -> "BackendBase":
        return self

    def coordinator_state(self) -> Any:
        return self.snapshot()["cstate"]

    def party_values(self, metrics: Mapping[str, Any]) -> dict[str, float]:
        raise NotImplementedError(f"{type(self).__name__} is not party-local: party metrics are computed in the "
                                  "driver on the materialized problem")

    def durable_snapshot(self) -> dict:
        return self.snapshot()

    def report(self) -> dict:
        return {}
