"""The run's calls over the gRPC mutual-TLS transport (issue 38): parties on other machines.

:class:`GrpcLink` is the coordinator's link to one party through a :class:`~privdist.runtime.remote.transport.
CoordinatorServer`; :class:`GrpcEnd` is the party's end on its :class:`~privdist.runtime.remote.transport.
PartyClient` (the party dialled out; it opens no port). A call travels as one signed envelope of kind ``"call"``
whose payload is the call in the wire format of :mod:`privdist.runtime.remote.codec`; the answer as one of kind
``"reply"``. The envelope layer authenticates the sender (its certificate's key), the job and the order (a tampered,
replayed or out-of-order message is rejected by name); the codec carries data only. A party that is silent past the
timeout or gone is a lost link (:class:`~privdist.runtime.remote.backend.LinkLostError`): a dropout of the secure
sums.
"""

from __future__ import annotations

import numpy as np

from .backend import LinkLostError
from .codec import decode, encode
from .links import unwrap_reply

__all__ = ["GrpcLink", "GrpcEnd"]


def _bytes(payload) -> np.ndarray:
    return np.frombuffer(encode(payload), dtype=np.uint8)


class GrpcLink:
    """The coordinator's link to party ``name`` on ``server`` (a started ``CoordinatorServer``)."""

    def __init__(self, server, name: str, timeout: float | None = None):
        self.server, self.name, self.timeout, self.calls = server, name, timeout, 0

    def call(self, method: str, args: dict):
        from .transport import PeerUnavailableError

        self.calls += 1
        try:
            self.server.send(self.name, "call", self.calls, {"call": _bytes({"method": method, "args": args})})
            env = self.server.recv(self.name, "reply", self.calls, timeout=self.timeout)
        except PeerUnavailableError as exc:
            raise LinkLostError(f"party {self.name!r}: {type(exc).__name__}: {exc}") from None
        return unwrap_reply(decode(np.asarray(env.payload["reply"], dtype=np.uint8).tobytes()))


class GrpcEnd:
    """The party's end: calls arrive from its ``PartyClient``; :func:`~privdist.runtime.remote.party_side.
    serve_link` answers them. ``timeout``: how long the party waits for the coordinator's next call before it
    counts the coordinator as gone."""

    def __init__(self, client, timeout: float = 3600.0):
        self.client, self.timeout, self.round = client, timeout, 0

    def receive(self):
        from .transport import PeerUnavailableError

        try:
            env = self.client.recv("call", timeout=self.timeout)
        except PeerUnavailableError:
            return None
        self.round = env.round
        request = decode(np.asarray(env.payload["call"], dtype=np.uint8).tobytes())
        return request["method"], request["args"]

    def reply(self, result) -> None:
        self.client.send("reply", self.round, {"reply": _bytes({"ok": result})})

    def fail(self, error: str) -> None:
        self.client.send("reply", self.round, {"reply": _bytes({"error": error})})
