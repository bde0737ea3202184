"""What the Ray backends share (issue 23): Ray's import and connection, the named failures, the actor body.

:func:`connect` initialises Ray once per process (:func:`import_ray` names the install command when Ray is
missing); :class:`Worker` is the body of an actor that serves one block of agents or the coordinator, used by
:class:`privdist.runtime.ray_backend.RayBackend` and, extended with node-local checkpoints, by the party actors of
:mod:`privdist.runtime.ray_actors`. Nothing here imports Ray at module import, and no other backend module: the
backends (``ray_backend``, ``ray_party``, ``serve``) import this module, never each other in a circle.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
from typing import Any

import numpy as np

from .._checks import check_positive
from ..errors import PrivdistError
from .rng import COORDINATOR_DOMAIN, AgentStreams, party_keys

__all__ = ["INSTALL_HINT", "RayUnavailableError", "RayConnectionError", "AgentFailedError", "import_ray", "connect",
           "cluster_requires_token", "Worker"]

INSTALL_HINT = "pip install 'privdist[ray]'   (or: pip install 'ray>=2.9')"


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


def import_ray():
    """The ``ray`` module (:class:`RayUnavailableError` with the install command when Ray is missing)."""
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
    ray = import_ray()
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


class Worker:
    """Actor body: one block of agents (``init``/``step``) or the coordinator (``init_coordinator``/...).

    ``secure``: the actor draws its own key per agent it serves (:func:`~privdist.runtime.rng.party_keys`) and
    roots their streams at them; the keys are never returned and are cleared by ``reset``.

    Secure aggregation (issue 27, :mod:`privdist.runtime.secure.secure_round`): ``secure_setup`` gives the block's agents
    their secrets here (from OS entropy in secure mode) and returns their public keys only; ``step`` masks the secure
    messages before they leave the actor; ``secure_answer``/``secure_remask`` are the block's side of the unmasking,
    ``secure_prepare``/``secure_receive``/``secure_reveal`` its side of threshold recovery.
    """

    def pid(self) -> int:
        return os.getpid()

    def reset(self) -> None:
        self.__dict__.clear()

    def _new_keys(self, n: int) -> list[int]:
        """Secure mode: this actor's own keys for ``n`` agents, drawn here; they never leave the actor."""
        return party_keys(n)

    def init(self, algorithm, problem, network, block, seed, trial, secure=False):
        return self.start(algorithm, pickle.loads(problem), pickle.loads(network), block, seed, trial, secure)

    def start(self, algorithm, problem, network, block, seed, trial, secure=False):
        """``init`` with the problem and network as objects (a party process that built them itself)."""
        self.algorithm, self.block, self.seed, self.trial = algorithm, block, seed, trial
        self._keys = self._new_keys(len(block.agents)) if secure else None
        self._secure = None
        rng = AgentStreams(seed, trial, block.agents, 0, keys=self._keys)
        self.state, out = algorithm.init(problem, network, block, rng)
        return out, np.asarray(algorithm.estimate(self.state))

    def step(self, t, inbox):
        rng = AgentStreams(self.seed, self.trial, self.block.agents, t, keys=self._keys)
        self.state, out = self.algorithm.step(self.state, inbox, t, rng)
        if getattr(self, "_secure", None) is not None:  # secure sums leave the actor masked
            out = self._secure.mask_outbox(t, out)
        return out, list(self.algorithm.dp_events(self.state, t)), np.asarray(self.algorithm.estimate(self.state))

    def secure_setup(self, specs, n_agents, session, secure):
        """The block's secure-aggregation secrets, drawn here; returns their public keys (B, 32)."""
        from .secure.secure_round import PartySide

        self._secure = PartySide(self.algorithm, specs, self.block.agents, n_agents, self.seed, self.trial, secure,
                                 session)
        return self._secure.public_keys()

    def secure_agree(self, table) -> None:
        self._secure.agree(table)

    def secure_answer(self, t, attempt, present):
        return self._secure.answer(t, attempt, present)

    def secure_remask(self, t, attempt, present):
        return self._secure.remask(t, attempt, present)

    def secure_prepare(self, t):
        return self._secure.prepare(t)

    def secure_share(self, t, table):
        return self._secure.share(t, table)

    def secure_receive(self, t, table, inbound):
        self._secure.receive(t, table, inbound)

    def secure_reveal(self, t, present):
        return self._secure.reveal(t, present)

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
