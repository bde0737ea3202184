"""The Ray backend: agents in Ray actors, the coordinator in its own actor (issue 7; DESIGN "runtime").

Same protocol as :class:`privdist.runtime.simulator.SimulatorBackend`, on https://docs.ray.io actors:

* the ``K`` agents are split into contiguous blocks exactly like ``SimulatorBackend(blocks=n)``; each block
  lives in one actor that holds only that block's state (``algorithm.init`` restricts the problem to the
  block's agents; the problem itself is put once in the object store and passed to every actor by reference);
* each round, :func:`privdist.run` aggregates the outboxes with the unchanged :class:`Router` (neighbour sum,
  ``W(t)`` mix, gather, broadcast, scatter) and this backend sends every actor its rows of the inbox; one
  remote call per actor and round returns the block's outbox, its ``dp_events`` and its ``estimate`` together;
* an algorithm with a coordinator gets one more actor that runs ``init_coordinator``/``step_coordinator``.

Routing stays in the driver because the driver sees every message anyway (transcript, shape checks, ledger):
each actor receives only its aggregated rows, the minimum traffic; Ray moves large arguments through its object
store by reference. Randomness comes from :class:`AgentStreams` (a function of seed, trial, agent and round), so
a run on Ray is the simulator's run with the same blocks (identical transcripts in the tests), and agrees with
the single-block simulator to 1e-9 per message (iterative local solvers stop per block). Live actors are kept
idle after a run (at most ``_MAX_IDLE``) and reused by the next run of the process.

Secure mode (``start(..., secure=True)``, DESIGN idea 4): each actor draws one key per agent it serves (the
coordinator's actor its own) from OS entropy in ``init``; the keys root those agents' streams, are never returned
(outboxes, events, estimates and states only) and are cleared with the actor's ``reset`` after the run. The driver
runs the protocol's calls and no others; one that ran its own code in the actors could read them (Ray lets a job's
driver do so), so the claim is about what the protocol sends, as for every message.

Secure aggregation (issue 27): for an algorithm with ``SECURE_SUM`` messages each actor draws its agents' secrets and
masks their secure messages itself (:class:`~privdist.runtime.ray_common.Worker`); the driver, in the aggregator's seat,
only forwards the public keys and sees masked vectors, answers and the sums (:mod:`privdist.runtime.secure.secure_round`).
Such a run survives an agent actor that dies after setup: its agents drop out of that round's sum and of every later
one (a dropout the protocol recovers from), and ``config["lost_agents"]`` records them with the round.

Ray is imported only when this backend starts. Failures are named (:mod:`privdist.runtime.ray_common`, where the
connection and the actor body shared with the party backend live): :class:`RayUnavailableError` (Ray missing, with
the install command), :class:`RayConnectionError` (cluster address unreachable within a bounded timeout),
:class:`AgentFailedError` (an actor died; says which agents and which round).
"""

from __future__ import annotations

import numpy as np

from .._checks import check_int, check_positive
from ..contract import AgentBlock, BackendBase
from ..errors import CheckpointError
from .party import is_party_local
from .ray_common import (INSTALL_HINT, AgentFailedError, RayConnectionError, RayUnavailableError, Worker,
                         connect)
from .ray_party import PartyBackend
from .secure.secagg import session_id
from .secure.secagg_plus import BUNDLE
from .secure.secure_round import active_names, secure_specs
from .simulator import join_outboxes

# the named failures are defined in ray_common (shared with the party backend) and importable from here too
__all__ = ["RayBackend", "RayUnavailableError", "RayConnectionError", "AgentFailedError", "connect", "INSTALL_HINT"]

_MAX_IDLE = 8  # idle actors kept for the next run of this process (avoids paying actor start-up per run)
_ACTOR_CLASS: list = []
_IDLE: dict = {"job": None, "actors": []}


def _acquire(ray, n: int) -> list:
    """``n`` worker actors: idle ones of this Ray session first, new ones for the rest."""
    if not _ACTOR_CLASS:
        _ACTOR_CLASS.append(ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(Worker))
    ctx = ray.get_runtime_context()
    job = (ctx.get_job_id(), ctx.get_node_id())  # a new Ray session invalidates the idle actors
    if _IDLE["job"] != job:
        _IDLE.update(job=job, actors=[])
    reused = []
    while _IDLE["actors"] and len(reused) < n:
        actor = _IDLE["actors"].pop()
        try:  # an idle actor may have died since its last run
            ray.get(actor.pid.remote(), timeout=30)
            reused.append(actor)
        except Exception:  # dead, unreachable, or of another session: never reused
            pass
    new = [_ACTOR_CLASS[0].options(scheduling_strategy="SPREAD").remote() for _ in range(n - len(reused))]
    return reused + new


def _release(ray, actors: list, dead: list) -> None:
    """Reset live actors and keep them idle (up to ``_MAX_IDLE``); kill the dead and the surplus."""
    for actor in actors:
        if actor not in dead and len(_IDLE["actors"]) < _MAX_IDLE:
            actor.reset.remote()
            _IDLE["actors"].append(actor)
        else:
            ray.kill(actor, no_restart=True)


class RayBackend(BackendBase):
    """Agents in Ray actors (contiguous blocks, as ``SimulatorBackend(blocks=actors)``), coordinator in its own.

    Args:
        address: Ray cluster (see :func:`connect`); None starts a local Ray with the CPUs present.
        actors: number of agent actors (1 <= actors; capped at ``K``); None = one per CPU of the cluster,
            at most ``K``. ``actors=K`` puts every agent in its own actor.
        timeout: seconds to wait for a remote cluster address to answer.
        placement, max_restarts, checkpoint_every: for party-local problems only (issue 17): a run on a
            :class:`privdist.runtime.party.HorizontalParties` / ``VerticalParties`` goes to
            :class:`privdist.runtime.ray_party.PartyBackend` with these settings (one actor per party on its node,
            data resolved there, restarts from node-local checkpoints).

    Raises (when the run starts):
        RayUnavailableError, RayConnectionError: see :func:`connect`.
        AgentFailedError: an actor died (which agents, which round).
    """

    name = "ray"
    supports_secure_aggregation = True

    def __init__(self, address: str | None = None, actors: int | None = None, timeout: float = 10.0, *,
                 placement=None, max_restarts: int = 3, checkpoint_every: int = 10, _pool=None):
        self.address = address
        self.n_actors = None if actors is None else check_int(actors, "actors", 1)
        self.timeout = check_positive(timeout, "timeout")
        self.party_options = {"placement": placement, "max_restarts": check_int(max_restarts, "max_restarts", 0),
                              "checkpoint_every": check_int(checkpoint_every, "checkpoint_every", 1)}
        self._pool = _pool
        self._actors: list = []
        self._coord = None

    def __getstate__(self):  # a backend handed to a process or Ray task travels as its configuration only
        return {"address": self.address, "n_actors": self.n_actors, "timeout": self.timeout,
                "party_options": self.party_options, "_pool": None, "_actors": [], "_coord": None}

    def for_problem(self, problem):
        """The backend that runs ``problem``: this one, or a :class:`PartyBackend` for a party-local problem."""
        if not is_party_local(problem):
            return self
        return PartyBackend(self.address, timeout=self.timeout, pool=self._pool, **self.party_options)

    def start(self, algorithm, problem, network, seed: int, trial: int, *, secure: bool = False):
        """Create (or reuse) the actors, initialise them; return the round-0 outboxes. ``secure``: each actor
        draws its agents' keys (module docstring)."""
        ray = self._ray = connect(self.address, timeout=self.timeout)
        self.algorithm, self.t, self.trial, self._dead = algorithm, 0, trial, []
        K = network.n_agents
        n = self.n_actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
        degrees = getattr(network, "degrees", None)
        self.blocks = [AgentBlock(ids, K, None if degrees is None else np.asarray(degrees)[ids])
                       for ids in np.array_split(np.arange(K), min(n, K))]
        self._actors = _acquire(ray, len(self.blocks))
        # pickled once into the object store, shared by reference; unpickled in each actor into writable arrays
        problem_ref, network_ref = ray.put(ray.cloudpickle.dumps(problem)), ray.put(ray.cloudpickle.dumps(network))
        refs = [a.init.remote(algorithm, problem_ref, network_ref, b, seed, trial, secure)
                for a, b in zip(self._actors, self.blocks)]
        cref = None
        if algorithm.has_coordinator:
            self._coord = _acquire(ray, 1)[0]
            cref = self._coord.init_coordinator.remote(algorithm, problem_ref, network_ref, seed, trial, secure)
        results = self._get(refs, 0)
        self._events, self._est = None, [est for _, est in results]
        cout = None if cref is None else self._get([cref], 0, coordinator=True)[0]
        self._specs = secure_specs(algorithm.messages(problem, network))
        self._lost: dict[int, int] = {}  # block index -> round its actor was found dead (secure runs only)
        secure_names = {s.name for s in self._specs}  # a lost block sends nothing: zero rows, masked dtype
        self._silent_out = [{k: np.zeros(np.shape(v), dtype=np.uint64 if k in secure_names else np.asarray(v).dtype)
                             for k, v in out.items()} for out, _ in results]
        if self._specs:  # secure aggregation: each actor draws its agents' secrets; the keys table is all that travels
            session = self.secure_session = session_id(seed, trial, secure)
            self.secure_keys = np.vstack(self._get([a.secure_setup.remote(self._specs, K, session, secure)
                                                    for a in self._actors], 0))
            self._get([a.secure_agree.remote(self.secure_keys) for a in self._actors], 0)
        return join_outboxes([out for out, _ in results]), cout

    def _gather(self, call, t: int, fallback) -> list:
        """``call(i, actor)`` on every agent actor. In a secure run an actor found dead is lost from then on (its
        agents drop out of every later sum; recorded) and yields ``fallback(i)``; otherwise a death stops the run
        (:class:`AgentFailedError`)."""
        if not self._specs:
            return self._get([call(i, a) for i, a in enumerate(self._actors)], t)
        refs = {i: call(i, a) for i, a in enumerate(self._actors) if i not in self._lost}
        out = []
        for i in range(len(self._actors)):
            if i in refs:
                try:
                    out.append(self._get([refs[i]], t)[0])
                    continue
                except AgentFailedError:
                    self._lost[i] = t
            out.append(fallback(i))
        return out

    def secure_lost(self) -> np.ndarray:
        """The agents whose actor died (bool, (K,)): they are in no sum from the round it was found dead on."""
        lost = np.zeros(self.blocks[0].n_agents, dtype=bool)
        for i in self._lost:
            lost[self.blocks[i].agents] = True
        return lost

    def _active(self, t: int) -> list:
        return [s for s in self._specs if s.name in active_names(self.algorithm, self._specs, t)]

    def secure_answer(self, t: int, attempt: int, present) -> np.ndarray:
        """Every actor's answers of round ``t``'s secure sum (:mod:`privdist.runtime.secure.secure_round`)."""
        dim = sum(int(np.prod(s.shape)) for s in self._active(t))
        return np.vstack(self._gather(lambda i, a: a.secure_answer.remote(t, attempt, present), t,
                                      lambda i: np.zeros((self.blocks[i].size, dim), dtype=np.uint64)))

    def secure_remask(self, t: int, attempt: int, present) -> dict:
        """Every actor's secure messages of round ``t`` under the masks of ``attempt``."""
        return join_outboxes(self._gather(
            lambda i, a: a.secure_remask.remote(t, attempt, present), t,
            lambda i: {s.name: np.zeros((self.blocks[i].size, *s.shape), dtype=np.uint64) for s in self._active(t)}))

    def secure_prepare(self, t: int):
        """Threshold recovery: every actor's round public keys (K, 32) and encrypted shares (K, K, 32)."""
        K = self.blocks[0].n_agents
        sparse = getattr(self, "secure_graph", None) is not None  # shares go out in a later call (secure_share)
        parts = self._gather(lambda i, a: a.secure_prepare.remote(t), t,
                             lambda i: (np.zeros((self.blocks[i].size, 32), dtype=np.uint8),
                                        np.zeros((self.blocks[i].size, 0, BUNDLE) if sparse else
                                                 (self.blocks[i].size, K, 32), dtype=np.uint8)))
        return np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])

    def secure_share(self, t: int, table) -> np.ndarray:
        """Sparse graph: every actor's encrypted shares for its agents' neighbours, (K, k, BUNDLE)."""
        k = self.secure_graph.degree
        return np.vstack(self._gather(lambda i, a: a.secure_share.remote(t, table), t,
                                      lambda i: np.zeros((self.blocks[i].size, k, BUNDLE), dtype=np.uint8)))

    def secure_receive(self, t: int, table, sealed) -> None:
        """Threshold recovery: each actor gets the key table and the shares addressed to its agents."""
        self._gather(lambda i, a: a.secure_receive.remote(t, table, sealed[:, self.blocks[i].agents]), t,
                     lambda i: None)

    def secure_reveal(self, t: int, present) -> np.ndarray:
        """Threshold recovery: every actor's shares of the seeds the aggregator needs, (K, K, 16)."""
        K = self.blocks[0].n_agents
        graph = getattr(self, "secure_graph", None)
        shape = (K, 16) if graph is None else (graph.degree + 1, 32)
        return np.vstack(self._gather(lambda i, a: a.secure_reveal.remote(t, present), t,
                                      lambda i: np.zeros((self.blocks[i].size, *shape), dtype=np.uint8)))

    def report(self) -> dict:
        """Agents lost with their actor in a secure run, and the round it was found dead on."""
        lost = {int(a): r for i, r in self._lost.items() for a in self.blocks[i].agents}
        return {"lost_agents": lost} if lost else {}

    def _get(self, refs, t: int, coordinator: bool = False) -> list:
        """``ray.get`` the references; an actor's death becomes :class:`AgentFailedError` naming its agents."""
        ray = self._ray
        try:
            return ray.get(refs)
        except ray.exceptions.RayActorError as exc:
            dead = getattr(exc, "actor_id", None)
            owners = [self._coord] if coordinator else self._actors
            i = next((i for i, a in enumerate(owners) if dead is not None and a._actor_id.hex() == dead), None)
            if i is None:  # identify the dead actor by probing each reference
                for i, ref in enumerate(refs):
                    try:
                        ray.get(ref)
                    except ray.exceptions.RayActorError:
                        break
            self._dead.append(owners[i])
            agents = [] if coordinator else self.blocks[i].agents
            raise AgentFailedError(agents, t, "coordinator" if coordinator else "agent",
                                   type(exc).__name__) from None
        except ray.exceptions.RayTaskError as exc:  # the algorithm raised: re-raise its own error
            raise exc.cause if isinstance(exc.cause, Exception) else exc

    def step_agents(self, t: int, inbox):
        """Send every actor its rows of ``inbox``; return the concatenated round-``t`` outbox."""
        one = len(self.blocks) == 1
        results = self._gather(
            lambda i, a: a.step.remote(t, inbox if one else {k: np.ascontiguousarray(v[self.blocks[i].agents])
                                                             for k, v in inbox.items()}), t,
            lambda i: (self._silent_out[i], [None] * self.blocks[i].size, self._est[i]))  # lost: nothing sent
        self.t = t
        self._events = (t, [e for _, ev, _ in results for e in ev])
        self._est = [est for _, _, est in results]
        return join_outboxes([out for out, _, _ in results])

    def step_coordinator(self, t: int, inbox):
        return self._get([self._coord.step_coordinator.remote(t, dict(inbox))], t, coordinator=True)[0]

    def dp_events(self, t: int) -> list:
        """The releases of round ``t`` (returned by the actors with the outbox of that round)."""
        if self._events is None or self._events[0] != t:  # not the round just stepped: ask the actors
            return [e for ev in self._get([a.events.remote(t) for a in self._actors], t) for e in ev]
        return list(self._events[1])

    def estimate(self) -> np.ndarray:
        return np.concatenate(self._est)

    def coordinator_state(self):
        return None if self._coord is None else self._get([self._coord.get_state.remote()], self.t, True)[0]

    def snapshot(self):
        """Every actor's state (same layout as ``SimulatorBackend(blocks=len(actors))``) plus the block split."""
        states = self._gather(lambda i, a: a.get_state.remote(), self.t, lambda i: None)  # a lost block: None
        return {"state": states[0] if len(states) == 1 else states, "cstate": self.coordinator_state(),
                "blocks": [b.agents.tolist() for b in self.blocks]}

    def restore(self, snap) -> None:
        states = snap["state"] if isinstance(snap["state"], list) else [snap["state"]]
        layout, mine = snap.get("blocks"), [b.agents.tolist() for b in self.blocks]
        if len(states) != len(mine) or (layout is not None and layout != mine):
            raise CheckpointError(f"checkpoint holds {len(states)} agent block(s) {layout}, this Ray backend has "
                                  f"{mine}; resume with actors={len(states)}")
        self._est = self._get([a.set_state.remote(s) for a, s in zip(self._actors, states)], self.t)
        if self._coord is not None:
            self._get([self._coord.set_state.remote(snap["cstate"])], self.t, True)

    def close(self) -> None:
        """Return the live actors to this process's idle pool; kill the dead one of a failed run."""
        if self._actors or self._coord is not None:
            actors = self._actors + ([self._coord] if self._coord is not None else [])
            _release(self._ray, actors, dead=self._dead)
        self._actors, self._coord, self._dead = [], None, []

    def actor_pids(self) -> list[int]:
        """Process ids of the agent actors, in block order (for diagnostics and failure tests)."""
        return self._get([a.pid.remote() for a in self._actors], self.t)
