"""Party-local runs on a Ray cluster (issue 17): one actor per party on the party's node, data loaded there.

:class:`PartyBackend` runs a party-local problem (:mod:`privdist.runtime.party`): party ``k``'s actor asks for
the custom resource of its placement (default ``"party_k"``, offered by the node started with
``ray start --resources '{"party_k": 1}'``), receives the problem *handle* (sources and public facts only) and
resolves its own source inside the actor, so environment variables in a path are the node's. The driver routes
messages, keeps the transcript and the ledger, and never holds a party's arrays: no state is fetched into the
driver (``final_state`` is None, checkpoints of :func:`run` hold no state).

Placement is checked against ``ray.cluster_resources()`` before any actor starts (:class:`PlacementError`).

Driver checkpoints (``run(..., checkpoint=PATH, resume=True)``): the driver's file holds messages, ledger,
transcript and a token; each actor saves its state on its own node under that token (:meth:`durable_snapshot`),
and a resumed run's actors, initialised from their own sources, load it back (:meth:`restore`). These node files are
kept after the run (they back the driver's checkpoint); remove ``privdist-party-checkpoints/driver-*`` on the nodes.

Faults: every ``checkpoint_every`` rounds each actor writes its state to a file on its own node
(``$PRIVDIST_CHECKPOINT_DIR`` or the node's temporary directory); the driver keeps the inboxes it sent since. An
actor found dead is replaced by a new one on the same node (same resource), which re-initialises from its own
source, loads the node checkpoint and replays the kept inboxes; randomness being a function of (seed, trial,
agent, round), the run continues exactly as an uninterrupted one. At most ``max_restarts`` replacements per
actor and run; beyond that, or when the node is gone, the run ends with :class:`AgentFailedError`. Restarts are
recorded in ``RunResult.config["ray"]["restarts"]``.

Secure mode (DESIGN idea 4): each party's actor (and the coordinator's) draws its own key in ``init`` and writes it,
before its first message leaves, to an owner-only file on its node (``<token>/<name>.key``); node checkpoints hold
it too. A replacement reads it there and repeats the dead actor's noise, so no round is released twice with
different noise; one that finds no key on its node raises :class:`SecureReplayError` rather than draw a new one. A
driver checkpoint's node files keep the key (a resumed run repeats its rounds); they stay on the nodes with it.

:class:`privdist.runtime.serve.Cluster` keeps the Ray connection and the party actors (with their loaded data) warm
across the runs of one process; ``privdist serve`` (:mod:`privdist.runtime.serve`) keeps them warm across processes:
a run on a served cluster takes its actors from the server's keeper (one run at a time, the others queue). The
party actors themselves and their pools are in :mod:`privdist.runtime.ray_actors`.
"""

from __future__ import annotations

import time
import uuid

import numpy as np

from .._checks import check_int, check_positive
from ..contract import AgentBlock, BackendBase
from ..errors import CheckpointError, ValidationError
from .party import is_party_local
from .placement import COORDINATOR_KEY, PlacementError, default_placement, load_placement
from .ray_actors import DEFAULT_POOL, RESOURCE_AMOUNT, PartyPool, served_pool
from .ray_common import AgentFailedError, connect
from .simulator import join_outboxes

__all__ = ["PartyBackend", "PlacementError", "SecureReplayError", "default_placement", "load_placement",
           "RESOURCE_AMOUNT"]

_INIT_TIMEOUT = 120.0  # seconds for a (re)started actor to load its data and initialise


class SecureReplayError(AgentFailedError):
    """Secure mode: a replacement found no key of its party on its node (a new key would re-release rounds)."""


def _cause(exc) -> str:
    """The exception's type and its last informative line (e.g. why an actor could not start on its node)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not set(ln.strip()) <= set("^~ ")]
    return f"{type(exc).__name__}: {lines[-1][:300]}" if lines else type(exc).__name__


class _Slot:
    """One actor of the run (a party or the coordinator) and what a replacement needs to catch up."""

    def __init__(self, name: str, resource, agents, role: str):
        self.name, self.resource, self.agents, self.role = name, resource, agents, role
        self.actor, self.init_args, self.since, self.ckpt_round, self.restarts = None, None, [], 0, 0
        self.released = False  # its round-0 message left the actor (secure mode: its key must be kept)


class PartyBackend(BackendBase):
    """One Ray actor per party on the party's node; the party resolves its own data (see module docstring).

    Args:
        address: Ray cluster (see :func:`privdist.runtime.ray_common.connect`).
        placement: party -> custom resource (see :func:`load_placement`); None = ``"party_k"`` and
            ``"coordinator"``; False = no custom resources (every actor anywhere: sources must resolve there).
        max_restarts: replacements of one actor per run before the run ends with :class:`AgentFailedError`.
        checkpoint_every: rounds between node-local state checkpoints (a replacement replays at most this many).
        timeout: seconds to wait for a remote cluster address to answer.
        pool: idle actors to reuse (a :class:`Cluster`'s); default: this process's pool.

    Raises (when the run starts):
        PlacementError: a party's resource is offered by no node (before any actor starts).
        AgentFailedError: an actor could not be brought back.
    """

    name = "ray"
    party_local = True

    def __init__(self, address: str | None = None, placement=None, *, max_restarts: int = 3,
                 checkpoint_every: int = 10, timeout: float = 10.0, pool: PartyPool | None = None):
        self.address, self.placement = address, placement
        self.max_restarts = check_int(max_restarts, "max_restarts", 0)
        self.checkpoint_every = check_int(checkpoint_every, "checkpoint_every", 1)
        self.timeout = check_positive(timeout, "timeout")
        self._pool = pool or DEFAULT_POOL
        self._slots: list[_Slot] = []
        self._coord: _Slot | None = None
        self._report: dict = {}

    def __getstate__(self):
        return {"address": self.address, "placement": self.placement, "max_restarts": self.max_restarts,
                "checkpoint_every": self.checkpoint_every, "timeout": self.timeout, "_pool": DEFAULT_POOL,
                "_slots": [], "_coord": None, "_report": {}}

    # ------------------------------------------------------------------------------------------ start
    def _check_placement(self, ray, problem, algorithm) -> tuple[list, object]:
        K = problem.n_agents
        declared = self.placement if self.placement is not None else problem.__dict__.get("placement")
        placement = load_placement(declared, K)
        if placement is None:
            return [None] * K, None
        offered = ray.cluster_resources()
        need = {k: placement[k] for k in range(K)}
        coord = None
        if algorithm.has_coordinator:
            coord = placement.get(COORDINATOR_KEY)
            if problem.kind == "horizontal" and coord not in offered:
                coord = None  # a coordinator that holds no data runs anywhere
            elif coord is not None:
                need[COORDINATOR_KEY] = coord
        missing = {k: r for k, r in need.items() if offered.get(r, 0) < RESOURCE_AMOUNT}
        if missing:
            custom = sorted(r for r in offered if not (r in ("CPU", "GPU", "memory", "object_store_memory")
                                                       or r.startswith("node:") or r.startswith("accelerator")))
            first_k, first_r = next(iter(missing.items()))
            who = "the coordinator" if first_k == COORDINATOR_KEY else f"party {first_k}"
            raise PlacementError(
                f"no live node of the Ray cluster offers the resource(s) {sorted(set(missing.values()))} needed by "
                f"{', '.join('the coordinator' if k == COORDINATOR_KEY else f'party {k}' for k in missing)} "
                f"(custom resources offered: {custom or 'none'}); start {who}'s node with "
                f"`ray start --address HEAD:PORT --resources '{{\"{first_r}\": 1}}'` or change the placement")
        return [need[k] for k in range(K)], coord

    def start(self, algorithm, problem, network, seed: int, trial: int, *, secure: bool = False):
        """Check placement, start (or reuse) one actor per party, initialise them on their nodes. ``secure``: each
        actor draws its party's key and keeps it on its node (module docstring)."""
        if not is_party_local(problem):
            raise ValidationError("PartyBackend runs party-local problems (HorizontalParties, VerticalParties); "
                                  "use RayBackend for a problem held by the driver")
        ray = self._ray = connect(self.address, timeout=self.timeout)
        self.algorithm, self.t, self.trial, self._secure = algorithm, 0, trial, secure
        self._token = uuid.uuid4().hex
        self._driver_token = None
        self._restarts: list[dict] = []
        self._dead: set = set()
        K = network.n_agents
        resources, coord_res = self._check_placement(ray, problem, algorithm)
        degrees = getattr(network, "degrees", None)
        self._slots = [_Slot(f"party_{k}", r, [k], "agent") for k, r in enumerate(resources)]
        self.blocks = [AgentBlock(np.array([k]), K, None if degrees is None else np.asarray(degrees)[[k]])
                       for k in range(K)]
        self._coord = _Slot(COORDINATOR_KEY, coord_res, [], "coordinator") if algorithm.has_coordinator else None
        slots = self._all()
        if self._pool is DEFAULT_POOL:  # a cluster kept warm by `privdist serve`: its actors, one run at a time
            self._pool = served_pool(ray) or self._pool
        try:
            return self._start_actors(ray, slots, algorithm, problem, network, seed, trial)
        except BaseException:
            self.close()
            raise

    def _start_actors(self, ray, slots, algorithm, problem, network, seed, trial):
        actors = self._pool.acquire(ray, [s.resource for s in slots])
        problem_ref, network_ref = ray.put(ray.cloudpickle.dumps(problem)), ray.put(ray.cloudpickle.dumps(network))
        for s, a in zip(slots, actors):
            s.actor = a
        secure, token = self._secure, self._token
        for s, b in zip(self._slots, self.blocks):
            s.init_args = ("init", (algorithm, problem_ref, network_ref, b, seed, trial, secure, (token, s.name)))
        if self._coord is not None:
            self._coord.init_args = ("init_coordinator", (algorithm, problem_ref, network_ref, seed, trial, secure,
                                                          (token, self._coord.name)))
        refs = [self._call_init(s) for s in slots]
        results = self._collect(slots, refs, 0, lambda s: self._call_init(s))
        for s in slots:
            s.released = True
        agent_res = results[:len(self._slots)]
        self._events, self._est = None, [est for _, est in agent_res]
        self._where = self._collect(slots, [s.actor.where.remote() for s in slots], 0,
                                    lambda s: s.actor.where.remote(), through=0)
        cout = results[-1] if self._coord is not None else None
        return join_outboxes([out for out, _ in agent_res]), cout

    def _all(self) -> list:
        return self._slots + ([self._coord] if self._coord is not None else [])

    def _call_init(self, slot):
        method, args = slot.init_args
        return getattr(slot.actor, method).remote(*args)

    # ------------------------------------------------------------------------------------------ faults
    def _collect(self, slots, refs, t: int, resubmit, through: int | None = None) -> list:
        """``ray.get`` each reference; a dead actor is replaced, caught up to the state after round ``through``
        (default ``t - 1``: the call was round ``t``'s step), then its call is resubmitted."""
        through = max(t - 1, 0) if through is None else through
        ray = self._ray
        out = []
        for s, ref in zip(slots, refs):
            while True:
                try:
                    out.append(ray.get(ref))
                    break
                except ray.exceptions.RayActorError as exc:
                    self._replace(s, t, through, _cause(exc))
                    ref = resubmit(s)
                except ray.exceptions.RayTaskError as exc:  # the algorithm raised: its own error
                    raise exc.cause if isinstance(exc.cause, Exception) else exc
        return out

    def _fail(self, s, t, detail):
        raise AgentFailedError(s.agents, t, s.role, detail)

    def _replace(self, s: _Slot, t: int, through: int, detail: str) -> None:
        """A new actor for slot ``s`` on its node, initialised from its source, at the state after ``through``."""
        ray = self._ray
        self._dead.add(id(s.actor))
        if s.restarts >= self.max_restarts:
            self._fail(s, t, f"{detail}; {s.restarts} restart(s) used, max_restarts={self.max_restarts}")
        if s.resource is not None and ray.cluster_resources().get(s.resource, 0) < RESOURCE_AMOUNT:
            self._fail(s, t, f"{detail}; its node (resource {s.resource!r}) has left the cluster")
        s.restarts += 1
        t0 = time.perf_counter()
        s.actor = self._pool.new(ray, s.resource)
        try:
            ray.get(self._call_init(s), timeout=_INIT_TIMEOUT)
            ckpt_round, _ = ray.get(s.actor.load_local.remote(self._token, s.name), timeout=_INIT_TIMEOUT)
            if self._secure and s.released and ray.get(s.actor.key_origin.remote(), timeout=_INIT_TIMEOUT) != "node":
                self._dead.add(id(s.actor))
                raise SecureReplayError(s.agents, t, s.role, f"{detail}; secure mode: its replacement found no key "
                                        f"of {s.name} on its node (resource {s.resource!r}), and a new key would "
                                        "release rounds it already released again with other noise")
            replay = [(r, inbox) for r, inbox in s.since if ckpt_round < r <= through]
            step = s.actor.step if s.role == "agent" else s.actor.step_coordinator
            for r, inbox in replay:
                ray.get(step.remote(r, inbox), timeout=_INIT_TIMEOUT)
            where = ray.get(s.actor.where.remote(), timeout=_INIT_TIMEOUT)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            self._dead.add(id(s.actor))
            self._fail(s, t, f"{detail}; its replacement failed too ({type(exc).__name__})")
        self._restarts.append({"role": s.role, "agents": list(s.agents), "round": t, "resumed_from_round": ckpt_round,
                               "replayed_rounds": len(replay), "resource": s.resource, "host": where["host"],
                               "node_id": where["node_id"], "seconds": time.perf_counter() - t0, "cause": detail})

    def _remember(self, s: _Slot, t: int, inbox) -> None:
        s.since.append((t, inbox))

    def _save_states(self, token: str, t: int) -> list:
        """Every actor writes its state of round ``t`` to its own node under ``token``; returns the slots."""
        slots = self._all()
        self._collect(slots, [s.actor.save_local.remote(token, s.name, t) for s in slots], t,
                      lambda s: s.actor.save_local.remote(token, s.name, t), through=t)
        return slots

    def _checkpoint(self, t: int, force: bool = False) -> None:
        if t % self.checkpoint_every and not force:
            return
        for s in self._save_states(self._token, t):
            s.since, s.ckpt_round = [], t

    # ------------------------------------------------------------------------------------------ rounds
    def step_agents(self, t: int, inbox):
        rows = [{k: np.ascontiguousarray(v[b.agents]) for k, v in inbox.items()} for b in self.blocks]
        for s, r in zip(self._slots, rows):
            self._remember(s, t, r)
        refs = [s.actor.step.remote(t, r) for s, r in zip(self._slots, rows)]
        by_slot = dict(zip(map(id, self._slots), rows))
        results = self._collect(self._slots, refs, t, lambda s: s.actor.step.remote(t, by_slot[id(s)]))
        self.t = t
        self._events = (t, [e for _, ev, _ in results for e in ev])
        self._est = [est for _, _, est in results]
        if self._coord is None:
            self._checkpoint(t)
        return join_outboxes([out for out, _, _ in results])

    def step_coordinator(self, t: int, inbox):
        inbox = dict(inbox)
        self._remember(self._coord, t, inbox)
        out = self._collect([self._coord], [self._coord.actor.step_coordinator.remote(t, inbox)], t,
                            lambda s: s.actor.step_coordinator.remote(t, inbox))[0]
        self._checkpoint(t)
        return out

    def dp_events(self, t: int) -> list:
        if self._events is None or self._events[0] != t:
            return [e for ev in self._collect(self._slots, [s.actor.events.remote(t) for s in self._slots], t,
                                              lambda s: s.actor.events.remote(t), through=t) for e in ev]
        return list(self._events[1])

    def estimate(self) -> np.ndarray:
        return np.concatenate(self._est)

    def party_values(self, metrics: dict) -> dict:
        """Sum over the actors (parties and coordinator) of each metric's part, computed on their nodes."""
        slots, t = self._all(), self.t
        parts = self._collect(slots, [s.actor.party_values.remote(metrics) for s in slots], t,
                              lambda s: s.actor.party_values.remote(metrics), through=t)
        return {n: float(sum(p[n] for p in parts)) for n in metrics}

    def snapshot(self):
        """No state leaves the parties: the states stay on their nodes (``final_state`` is None)."""
        return {"state": None, "cstate": None, "party_local": True}

    def durable_snapshot(self) -> dict:
        """For a driver checkpoint (:func:`privdist.run` with ``checkpoint=``): every actor writes its state to
        its own node (``$PRIVDIST_CHECKPOINT_DIR`` there, else the node's temporary directory, under a token
        kept across resumes); the driver's checkpoint holds only the token, the round and the actors' names."""
        if self._driver_token is None:
            self._driver_token = "driver-" + uuid.uuid4().hex
        slots, t = self._save_states(self._driver_token, self.t), self.t
        return {"state": None, "cstate": None, "party_local": True, "token": self._driver_token, "round": t,
                "actors": [s.name for s in slots]}

    def restore(self, snap) -> None:
        """Continue from a driver checkpoint: each actor (started and initialised from its own source) loads the
        state its node saved for that checkpoint.

        Raises:
            CheckpointError: the checkpoint is not a party-local one, names other actors, or a node has no state
                file of that round (removed, or the actor now runs on another node).
        """
        if not snap.get("party_local") or "token" not in snap:
            raise CheckpointError("this checkpoint is not of a party-local run (it holds states in the driver); "
                                  "resume it with the backend that wrote it")
        slots, t = self._all(), int(snap["round"])
        if snap["actors"] != [s.name for s in slots]:
            raise CheckpointError(f"checkpoint of actors {snap['actors']}, this run has {[s.name for s in slots]}")
        token = self._driver_token = snap["token"]
        loaded = self._collect(slots, [s.actor.load_local.remote(token, s.name) for s in slots], 0,
                               lambda s: s.actor.load_local.remote(token, s.name), through=0)
        wrong = {s.name: r for s, (r, _) in zip(slots, loaded) if r != t}
        if wrong:
            where = getattr(self, "_where", None) or [{}] * len(slots)
            hosts = {s.name: w.get("host") for s, w in zip(slots, where)}
            raise CheckpointError(
                f"the driver checkpoint is of round {t}, but the node checkpoints of "
                + ", ".join(f"{n} (host {hosts.get(n)}): {'none' if r == 0 else f'round {r}'}" for n, r in wrong.items())
                + f" (token {token}; kept under $PRIVDIST_CHECKPOINT_DIR or the node's temporary directory)")
        self._est = [est for _, est in loaded[:len(self._slots)]]
        self.t = t
        self._checkpoint(t, force=True)  # a replacement after this point starts from round t, not from init

    def report(self) -> dict:
        """What results record about this run: placement, nodes, restarts."""
        return dict(self._report)

    def close(self) -> None:
        if not self._slots:
            return
        slots = self._all()
        for s in slots:
            try:
                s.actor.drop_local.remote(self._token)
            except Exception:
                pass
        where = getattr(self, "_where", None) or [{}] * len(slots)
        self._report = {"ray": {
            "party_local": True, "checkpoint_every": self.checkpoint_every, "max_restarts": self.max_restarts,
            "placement": {s.name: {"resource": s.resource, "host": w.get("host"), "node_id": w.get("node_id"),
                                   "pid": w.get("pid")}
                          for s, w in zip(slots, where)},
            "restarts": list(self._restarts), "served": bool(getattr(self._pool, "served", False))}}
        try:
            self._pool.release(self._ray, [s.actor for s in slots], [s.resource for s in slots], self._dead)
        finally:
            self._slots, self._coord = [], None

    def actors(self) -> list:
        """The party actors in party order (diagnostics and failure tests)."""
        return [s.actor for s in self._slots]
