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

Ray is imported only when this backend starts. Failures are named: :class:`RayUnavailableError` (Ray missing,
with the install command), :class:`RayConnectionError` (cluster address unreachable within a bounded timeout),
:class:`AgentFailedError` (an actor died; says which agents and which round).
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
from typing import Any

import numpy as np

from .._checks import check_int, check_positive
from ..errors import CheckpointError, PrivdistError
from ..contract import AgentBlock
from .rng import COORDINATOR_DOMAIN, AgentStreams, party_keys
from .simulator import join_outboxes

__all__ = ["RayBackend", "RayUnavailableError", "RayConnectionError", "AgentFailedError", "connect", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'privdist[ray]'   (or: pip install 'ray>=2.9')"
_MAX_IDLE = 8  # idle actors kept for the next run of this process (avoids paying actor start-up per run)


class RayUnavailableError(PrivdistError, ImportError):
    """Ray is not installed; the message gives the install command."""


class RayConnectionError(PrivdistError, ConnectionError):
    """The Ray cluster address cannot be reached within the timeout."""


class AgentFailedError(PrivdistError, RuntimeError):
    """An actor died during a run.

    Attributes:
        agents: the agent ids the actor served (empty for the coordinator).
        round: the round in which the failure was seen (0 = initialisation).
        role: ``"agent"`` or ``"coordinator"``.
    """

    def __init__(self, agents, round_: int, role: str = "agent", detail: str = ""):
        self.agents, self.round, self.role = [int(a) for a in agents], int(round_), role
        who = "the coordinator" if role == "coordinator" else (
            f"agent {self.agents[0]}" if len(self.agents) == 1 else f"agents {self.agents}")
        super().__init__(f"the Ray actor of {who} died in round {self.round}"
                         + (f" ({detail})" if detail else "")
                         + "; finished trials are kept, rerun with --resume to continue")


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(f"the ray backend needs Ray, which is not installed: {INSTALL_HINT}") from exc
    return ray


def _check_reachable(address: str, timeout: float) -> None:
    """Open a TCP connection to ``host:port`` (``ray://`` prefix allowed) within ``timeout`` seconds."""
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise RayConnectionError(f"Ray address must be 'HOST:PORT', 'ray://HOST:PORT' or 'auto', got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise RayConnectionError(
            f"cannot reach the Ray cluster at {address!r} within {timeout:g} s ({exc}); start one with "
            "`ray start --head` and pass the address it prints, or omit --ray-address for a local Ray") from None


def cluster_requires_token(address: str) -> bool:
    """True when the Ray cluster at ``HOST:PORT`` refuses a client without an authentication token.

    Asks the cluster's GCS once without a token (about a second); a Ray without token authentication, a Ray
    Client address (``ray://``) or any other failure answers False (``ray.init`` then reports the problem).
    """
    if "://" in address:
        return False
    try:
        from ray._raylet import GcsClient
        from ray.exceptions import AuthenticationError
    except ImportError:  # older Ray: no token authentication
        return False
    try:
        GcsClient(address=address)
    except AuthenticationError:
        return True
    except Exception:
        return False
    return False


def _token_auth_if_required(address: str) -> None:
    """Turn on Ray token authentication for this process only when the cluster requires it (issue 17).

    ``RAY_AUTH_MODE`` set by the user is the explicit choice and is left to Ray. Otherwise the cluster is asked:
    one started without tokens is joined without (Ray's own rule for an explicit address); one that requires
    tokens is joined with the token of this account (``~/.ray/auth_token``, ``RAY_AUTH_TOKEN(_PATH)``).

    Raises:
        RayConnectionError: the cluster requires a token and none is available here.
    """
    if os.environ.get("RAY_AUTH_MODE") is not None or not cluster_requires_token(address):
        return
    from ray._private.authentication import authentication_token_setup as auth

    if not auth.maybe_enable_token_auth_if_token_available(warn_if_disabled=False):
        raise RayConnectionError(f"the Ray cluster at {address!r} requires token authentication and no token is "
                                 "available here: copy the head node's ~/.ray/auth_token (or set RAY_AUTH_TOKEN)")


def connect(address: str | None = None, *, num_cpus: int | None = None, timeout: float = 10.0):
    """Initialise Ray in this process once and return the ``ray`` module.

    Args:
        address: ``None`` for a local Ray (or the cluster in ``$RAY_ADDRESS``), ``"auto"`` for the cluster
            started on this machine by ``ray start --head``, or ``HOST:PORT`` / ``ray://HOST:PORT``. Token
            authentication is used only when the cluster requires it (see :func:`cluster_requires_token`) or
            ``RAY_AUTH_MODE=token`` says so.
        num_cpus: CPUs of a local Ray (default: the CPUs present).
        timeout: seconds to wait for a remote address to answer.

    Returns:
        The imported ``ray`` module, initialised (an existing initialisation is reused).

    Raises:
        RayUnavailableError: Ray is not installed.
        RayConnectionError: the address cannot be reached.
    """
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    check_positive(timeout, "timeout")
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address is None or address == "local":
        kwargs["num_cpus"] = num_cpus or os.cpu_count() or 1
        address = "local"
    else:
        if address != "auto":
            _check_reachable(address, timeout)
            _token_auth_if_required(address)
    try:  # Ray itself gives up on an address that answers but is no Ray cluster after a bounded retry (~20 s)
        ray.init(address=address, **kwargs)
    except ConnectionError as exc:
        raise RayConnectionError(f"cannot connect to the Ray cluster at {address!r}: {exc} (a cluster with token "
                                 "authentication also needs its token: RAY_AUTH_MODE=token, ~/.ray/auth_token)"
                                 ) from None
    except ValueError as exc:
        if "ray[client]" in str(exc):  # ray://HOST:PORT needs the client extra of Ray
            raise RayUnavailableError(f"{address!r} is a Ray Client address, which needs: pip install 'ray[client]'"
                                      ) from None
        raise
    return ray


class _Worker:
    """Actor body: one block of agents (``init``/``step``) or the coordinator (``init_coordinator``/...)."""

    def pid(self) -> int:
        return os.getpid()

    def reset(self) -> None:
        self.__dict__.clear()

    def _new_keys(self, n: int) -> list[int]:
        """Secure mode: this actor's own keys for ``n`` agents, drawn here; they never leave the actor."""
        return party_keys(n)

    def init(self, algorithm, problem, network, block, seed, trial, secure=False):
        problem, network = pickle.loads(problem), pickle.loads(network)
        self.algorithm, self.block, self.seed, self.trial = algorithm, block, seed, trial
        self._keys = self._new_keys(len(block.agents)) if secure else None
        rng = AgentStreams(seed, trial, block.agents, 0, keys=self._keys)
        self.state, out = algorithm.init(problem, network, block, rng)
        return out, np.asarray(algorithm.estimate(self.state))

    def step(self, t, inbox):
        rng = AgentStreams(self.seed, self.trial, self.block.agents, t, keys=self._keys)
        self.state, out = self.algorithm.step(self.state, inbox, t, rng)
        return out, list(self.algorithm.dp_events(self.state, t)), np.asarray(self.algorithm.estimate(self.state))

    def events(self, t):
        return list(self.algorithm.dp_events(self.state, t))

    def init_coordinator(self, algorithm, problem, network, seed, trial, secure=False):
        problem, network = pickle.loads(problem), pickle.loads(network)
        self.algorithm, self.block, self.seed, self.trial = algorithm, None, seed, trial
        self._keys = self._new_keys(1) if secure else None
        rng = AgentStreams(seed, trial, [0], 0, domain=COORDINATOR_DOMAIN, keys=self._keys)
        self.state, out = algorithm.init_coordinator(problem, network, rng)
        return out

    def step_coordinator(self, t, inbox):
        rng = AgentStreams(self.seed, self.trial, [0], t, domain=COORDINATOR_DOMAIN, keys=self._keys)
        self.state, out = self.algorithm.step_coordinator(self.state, inbox, t, rng)
        return out

    def get_state(self):
        return self.state

    def set_state(self, state):
        self.state = state
        return None if self.block is None else np.asarray(self.algorithm.estimate(state))


_ACTOR_CLASS: list = []
_IDLE: dict = {"job": None, "actors": []}


def _acquire(ray, n: int) -> list:
    """``n`` worker actors: idle ones of this Ray session first, new ones for the rest."""
    if not _ACTOR_CLASS:
        _ACTOR_CLASS.append(ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(_Worker))
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


class RayBackend:
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
        from .party import is_party_local

        if not is_party_local(problem):
            return self
        from .ray_party import PartyBackend

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
        return join_outboxes([out for out, _ in results]), cout

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
        refs = [a.step.remote(t, inbox if one else {k: np.ascontiguousarray(v[b.agents]) for k, v in inbox.items()})
                for a, b in zip(self._actors, self.blocks)]
        results = self._get(refs, t)
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

    def snapshot(self):
        """Every actor's state (same layout as ``SimulatorBackend(blocks=len(actors))``) plus the block split."""
        states = self._get([a.get_state.remote() for a in self._actors], self.t)
        cstate = None if self._coord is None else self._get([self._coord.get_state.remote()], self.t, True)[0]
        return {"state": states[0] if len(states) == 1 else states, "cstate": cstate,
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
