"""Warm Ray sessions (issue 17): :class:`Cluster` within one process, ``privdist serve`` across processes.

``privdist serve`` keeps a Ray cluster and the party actors (with the data they loaded) alive between separate
``privdist run`` invocations. On the cluster it starts a *keeper*: a detached actor named ``KEEPER`` in the
namespace ``NAMESPACE`` that holds the idle party actors (detached too) by custom resource and a lease. A
:class:`PartyBackend` whose driver finds the keeper takes its actors from it
(:class:`~privdist.runtime.ray_actors.ServedPool`) instead of starting new worker processes, and gives them back,
reset, when the run ends; the second run pays neither Ray's start-up nor actor start-up nor data loading, only the
driver's connection.

Two runs at once: the keeper leases all its actors to one run at a time; a second run queues (polls the lease) up
to ``PRIVDIST_SERVE_WAIT`` seconds (default 600), then raises :class:`ServeBusyError`. A lease whose driver has
died is taken back: the lease holds an object owned by the driver, whose loss the keeper detects
(``OwnerDiedError``), so a killed ``privdist run`` never blocks the server.
"""

from __future__ import annotations

import time

from .ray_actors import KEEPER, NAMESPACE, PartyPool, ServeBusyError, ServedPool, ServeError, find_keeper, served_pool
from .ray_backend import RayBackend
from .ray_common import connect, import_ray

# the served pool, the keeper's lookup and the named errors live in ray_actors (the party backend uses them too)
__all__ = ["Cluster", "ServeBusyError", "ServeError", "served_pool", "find_keeper", "start_keeper", "stop_keeper",
           "NAMESPACE", "KEEPER"]


class _Keeper:
    """The served cluster's registry: idle party actors by resource and the lease of the run that uses them."""

    def __init__(self, info: dict):
        self.info, self.idle, self.lease, self.runs = dict(info), {}, None, 0

    def _holder_alive(self) -> bool:
        import ray

        if self.lease is None:
            return False
        try:
            ray.get(self.lease["owner"][0], timeout=5)
            return True
        except Exception:  # OwnerDiedError / ObjectLostError: the driver that held the lease is gone
            self.lease = None
            return False

    def take(self, run_id: str, owner: list, who: str, resources: list) -> dict:
        """Lease the actors to ``run_id`` and hand out one idle actor per resource (None where there is none), or
        say who holds the lease."""
        if self.lease is not None and self.lease["run"] != run_id and self._holder_alive():
            return {"ok": False, "holder": self.lease["who"], "since": self.lease["since"]}
        self.lease = {"run": run_id, "owner": owner, "who": who, "since": time.time()}
        picked = [self.idle[r].pop() if self.idle.get(r) else None for r in resources]
        return {"ok": True, "actors": picked}

    def give(self, run_id: str, actors: list, resources: list) -> None:
        """Take back (reset) actors and end ``run_id``'s lease."""
        for a, r in zip(actors, resources):
            self.idle.setdefault(r, []).append(a)
        if self.lease is not None and self.lease["run"] == run_id:
            self.lease, self.runs = None, self.runs + 1

    def status(self) -> dict:
        busy = self.lease is not None and self._holder_alive()
        return {**self.info, "idle": {str(r): len(a) for r, a in self.idle.items()}, "runs": self.runs,
                "busy": {"who": self.lease["who"], "since": self.lease["since"]} if busy else None}

    def stop(self, force: bool) -> dict:
        """Kill the idle actors (refused while a live run holds them, unless ``force``)."""
        import ray

        if not force and self.lease is not None and self._holder_alive():
            return {"ok": False, "holder": self.lease["who"]}
        n = 0
        for actors in self.idle.values():
            for a in actors:
                ray.kill(a, no_restart=True)
                n += 1
        self.idle = {}
        return {"ok": True, "killed": n}


def start_keeper(ray, info: dict, prewarm: list | None = None):
    """Create the keeper (detached) and, for each resource of ``prewarm``, one warm party actor.

    Raises:
        ServeError: the cluster already has a keeper.
    """
    if find_keeper(ray) is not None:
        raise ServeError("this Ray cluster is already served by privdist (privdist serve --status; --stop ends it)")
    keeper = ray.remote(num_cpus=0, max_restarts=0)(_Keeper).options(
        name=KEEPER, namespace=NAMESPACE, lifetime="detached").remote(info)
    ray.get(keeper.status.remote())
    if prewarm:
        actors = [ServedPool.new(ray, r) for r in prewarm]
        ray.get([a.warm.remote() for a in actors])
        ray.get(keeper.give.remote(None, actors, list(prewarm)))
    return keeper


def stop_keeper(ray, force: bool = False) -> dict:
    """Kill the served actors and the keeper.

    Raises:
        ServeError: no keeper on this cluster.
        ServeBusyError: a run holds the actors and ``force`` is false.
    """
    keeper = find_keeper(ray)
    if keeper is None:
        raise ServeError("no privdist server on this Ray cluster (start one with privdist serve)")
    out = ray.get(keeper.stop.remote(force))
    if not out["ok"]:
        raise ServeBusyError(f"a run ({out['holder']}) is using the served actors; wait for it or pass --force")
    ray.kill(keeper, no_restart=True)
    return out


class Cluster:
    """A Ray session kept warm across runs: one connection, and party actors that keep their loaded data.

    ``with Cluster("HEAD:PORT") as cluster: run(..., backend=cluster.backend())`` -- the second run reuses the
    actors (no actor start-up, no data loading). Problems held by the driver run on the same session through
    :class:`privdist.runtime.ray_backend.RayBackend`.

    Args:
        address: Ray cluster (see :func:`privdist.runtime.ray_common.connect`); None starts a local Ray.
        placement, max_restarts, checkpoint_every: defaults of :meth:`backend` (see :class:`PartyBackend`).
        num_cpus: CPUs of a local Ray.
        timeout: seconds to wait for a remote address.
    """

    def __init__(self, address: str | None = None, placement=None, *, max_restarts: int = 3,
                 checkpoint_every: int = 10, num_cpus: int | None = None, timeout: float = 10.0):
        self.address, self.placement, self.timeout = address, placement, timeout
        self.max_restarts, self.checkpoint_every = max_restarts, checkpoint_every
        ray = import_ray()
        self._owns = not ray.is_initialized()
        t0 = time.perf_counter()
        self.ray = connect(address, num_cpus=num_cpus, timeout=timeout)
        self.connect_seconds = time.perf_counter() - t0
        self._pool = PartyPool()

    def backend(self, placement=None, **kwargs):
        """A backend on this session: :class:`PartyBackend` for party-local problems, else :class:`RayBackend`
        (chosen per run by ``run``)."""
        kw = {"max_restarts": self.max_restarts, "checkpoint_every": self.checkpoint_every, **kwargs}
        return RayBackend(self.address, placement=self.placement if placement is None else placement,
                          _pool=self._pool, **kw)

    def resources(self) -> dict:
        """The cluster's resources (custom ones name the parties' nodes)."""
        return self.ray.cluster_resources()

    def close(self) -> None:
        """Kill the idle actors; disconnect if this object connected."""
        if self._pool is not None:
            self._pool.clear(self.ray)
            self._pool = None
            if self._owns:
                self.ray.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
