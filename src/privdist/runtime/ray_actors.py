"""Party actors and where they come from (issue 17; issue 23 gave them this module of their own).

:class:`PartyWorker` is the actor body of a party (or of the coordinator) of a party-local run: the shared
:class:`~privdist.runtime.ray_common.Worker` plus node-local checkpoints, the party's metric parts and its node's
identity. :class:`PartyPool` keeps idle party actors of one Ray session by custom resource (their processes keep the
data they loaded); :class:`ServedPool` is the same interface over the keeper of a cluster served by
``privdist serve`` (:mod:`privdist.runtime.serve`), found with :func:`served_pool`. The party backend
(:mod:`privdist.runtime.ray_party`) and the server both import this module; it imports neither.
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from .._io import atomic_write_bytes
from ..errors import PrivdistError
from .ray_common import Worker

__all__ = ["PartyWorker", "party_class", "PartyPool", "DEFAULT_POOL", "ServedPool", "served_pool", "find_keeper",
           "ServeError", "ServeBusyError", "RESOURCE_AMOUNT", "NAMESPACE", "KEEPER"]

RESOURCE_AMOUNT = 0.001  # of a party's custom resource per actor: a replacement fits beside a dying actor
NAMESPACE = "privdist"
KEEPER = "privdist-keeper"
_POLL = 0.5


class ServeError(PrivdistError, RuntimeError):
    """``privdist serve`` cannot do what was asked (no server on that cluster, one already there, ...)."""


class ServeBusyError(ServeError):
    """Another run holds the served actors for longer than this run agreed to wait."""


def _ckpt_path(token: str, name: str) -> Path:
    base = os.environ.get("PRIVDIST_CHECKPOINT_DIR") or tempfile.gettempdir()
    return Path(base) / "privdist-party-checkpoints" / token / f"{name}.pkl"


class PartyWorker(Worker):
    """A party's (or the coordinator's) actor: ``Worker`` plus node-local checkpoints and node identity.

    Secure mode (:mod:`privdist.runtime.ray_party`): the actor's key is written, before its first message leaves, to
    an owner-only file on its node (``<token>/<name>.key``, ``key_at=(token, name)``) and into every node
    checkpoint; a replacement reads it there instead of drawing a new one (:meth:`key_origin` says which)."""

    def init(self, algorithm, problem, network, block, seed, trial, secure=False, key_at=None):
        self._key_at, self._key_origin = key_at, None
        out = super().init(algorithm, problem, network, block, seed, trial, secure)
        self.problem = pickle.loads(problem)  # the handle: its subset() resolves from this process's data cache
        return out

    def init_coordinator(self, algorithm, problem, network, seed, trial, secure=False, key_at=None):
        self._key_at, self._key_origin = key_at, None
        return super().init_coordinator(algorithm, problem, network, seed, trial, secure)

    def _new_keys(self, n: int) -> list[int]:
        """Secure mode: the key in this node's file (a replacement), else drawn here and written there first."""
        if self._key_at is None:  # no run token: nothing to keep on the node
            return super()._new_keys(n)
        path = _ckpt_path(*self._key_at).with_suffix(".key")
        if path.exists():
            self._key_origin = "node"
            return pickle.loads(path.read_bytes())
        self._key_origin = "drawn"
        keys = super()._new_keys(n)
        atomic_write_bytes(path, pickle.dumps(keys))  # a mkstemp file: readable by this account only
        return keys

    def key_origin(self):
        """``"drawn"`` here, read from this ``"node"``'s files, or None (research mode): never the key."""
        return self._key_origin

    def party_values(self, metrics) -> dict:
        """Each :class:`PartyMetric`'s part of this actor: a party's on its own data and model, the coordinator's
        on its state. Only these scalars leave the node."""
        if self.block is None:
            return {n: float(pm.coordinator(self.state)) if pm.coordinator is not None else 0.0
                    for n, pm in metrics.items()}
        local = self.problem.subset(self.block.agents)
        rows = np.atleast_2d(np.asarray(self.algorithm.estimate(self.state)))
        return {n: float(pm.party(local, rows)) for n, pm in metrics.items()}

    def warm(self) -> int:
        """Import what a run's first call needs (a served actor waiting for its first run)."""
        import importlib

        for module in ("privdist.algorithms", "privdist.problems", "privdist.runtime.party"):
            importlib.import_module(module)

        return os.getpid()

    def where(self) -> dict:
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid()}

    def save_local(self, token: str, name: str, t: int) -> None:
        """The state of round ``t`` (and in secure mode the key) to a file on this node."""
        atomic_write_bytes(_ckpt_path(token, name), pickle.dumps((t, self.state, self._keys),
                                                                 protocol=pickle.HIGHEST_PROTOCOL))

    def load_local(self, token: str, name: str):
        """Restore the node checkpoint if there is one: ``(round, estimate or None)``; ``(0, None)`` otherwise.
        A secure checkpoint's key replaces this actor's (and its run's key file on this node)."""
        path = _ckpt_path(token, name)
        if not path.exists():
            return 0, None
        with open(path, "rb") as fh:
            t, state, *keys = pickle.load(fh)
        if keys and keys[0] is not None and self._keys is not None:
            self._keys, self._key_origin = keys[0], "node"
            if self._key_at is not None:
                atomic_write_bytes(_ckpt_path(*self._key_at).with_suffix(".key"), pickle.dumps(self._keys))
        return t, self.set_state(state)

    def drop_local(self, token: str) -> None:
        shutil.rmtree(_ckpt_path(token, "x").parent, ignore_errors=True)


_CLASS: list = []


def party_class(ray):
    """The Ray actor class of a party, registered once per process."""
    if not _CLASS:
        _CLASS.append(ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(PartyWorker))
    return _CLASS[0]


class PartyPool:
    """Idle party actors of one Ray session, by resource name (their processes keep the data they loaded)."""

    def __init__(self, max_idle_per_resource: int = 64):
        self.max_idle = max_idle_per_resource
        self.job, self.idle = None, {}

    def acquire(self, ray, resources: list) -> list:
        ctx = ray.get_runtime_context()
        job = (ctx.get_job_id(), ctx.get_node_id())
        if self.job != job:
            self.job, self.idle = job, {}
        picked = [self.idle.get(r, []).pop() if self.idle.get(r) else None for r in resources]
        return self._alive_or_new(ray, picked, resources)

    def _alive_or_new(self, ray, picked: list, resources: list) -> list:
        """``picked`` (idle actors or None per resource) with dead or missing actors replaced by new ones."""
        pings = {i: a.pid.remote() for i, a in enumerate(picked) if a is not None}
        for i, ref in pings.items():
            try:
                ray.get(ref, timeout=30)
            except Exception:  # died while idle: replaced below
                picked[i] = None
        return [a if a is not None else self.new(ray, r) for a, r in zip(picked, resources)]

    @staticmethod
    def new(ray, resource):
        opts = {"resources": {resource: RESOURCE_AMOUNT}} if resource else {}
        return party_class(ray).options(**opts).remote()

    def release(self, ray, actors: list, resources: list, dead: set) -> None:
        for a, r in zip(actors, resources):
            if a is None:
                continue
            if id(a) not in dead and len(self.idle.setdefault(r, [])) < self.max_idle:
                a.reset.remote()
                self.idle[r].append(a)
            else:
                ray.kill(a, no_restart=True)

    def clear(self, ray) -> None:
        for actors in self.idle.values():
            for a in actors:
                ray.kill(a, no_restart=True)
        self.idle = {}


DEFAULT_POOL = PartyPool()


def find_keeper(ray):
    """The keeper of this cluster, or None."""
    try:
        return ray.get_actor(KEEPER, namespace=NAMESPACE)
    except ValueError:
        return None


class ServedPool(PartyPool):
    """The :class:`PartyPool` interface over a keeper: actors are detached and survive this driver."""

    served = True

    def __init__(self, keeper, wait: float):
        super().__init__()
        self.keeper, self.wait = keeper, wait
        self.run_id, self.owner = uuid.uuid4().hex, None

    def acquire(self, ray, resources: list) -> list:
        who = f"pid {os.getpid()} on {os.uname().nodename}"
        self.owner = [ray.put(self.run_id)]  # owned by this driver: its loss frees the lease
        deadline = time.monotonic() + self.wait
        while True:
            got = ray.get(self.keeper.take.remote(self.run_id, self.owner, who, list(resources)))
            if got["ok"]:
                break
            if time.monotonic() >= deadline:
                raise ServeBusyError(f"the served cluster is in use by another run ({got['holder']}, for "
                                     f"{time.time() - got['since']:.0f} s); waited {self.wait:g} s "
                                     "(set PRIVDIST_SERVE_WAIT to wait longer)")
            time.sleep(_POLL)
        return self._alive_or_new(ray, got["actors"], resources)  # an idle actor may have died since its last run

    @staticmethod
    def new(ray, resource):
        opts = {"resources": {resource: RESOURCE_AMOUNT}} if resource else {}
        return party_class(ray).options(lifetime="detached", namespace=NAMESPACE,
                                            name=f"privdist-party-{uuid.uuid4().hex[:12]}", **opts).remote()

    def release(self, ray, actors: list, resources: list, dead: set) -> None:
        keep, where = [], []
        for a, r in zip(actors, resources):
            if a is None:
                continue
            if id(a) in dead:
                ray.kill(a, no_restart=True)
            else:
                keep.append(a)
                where.append(r)
        if keep:  # reset before another driver may get them (ordering across drivers is not guaranteed)
            try:
                ray.get([a.reset.remote() for a in keep], timeout=60)
            except Exception:
                keep, where = [], []
        ray.get(self.keeper.give.remote(self.run_id, keep, where))

    def clear(self, ray) -> None:
        pass  # the server's actors are stopped by `privdist serve --stop`


def served_pool(ray, wait: float | None = None):
    """The keeper's pool when this cluster is served by ``privdist serve``, else None."""
    keeper = find_keeper(ray)
    if keeper is None:
        return None
    wait = float(os.environ.get("PRIVDIST_SERVE_WAIT", 600)) if wait is None else wait
    return ServedPool(keeper, wait)
