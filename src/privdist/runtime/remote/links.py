"""Links between the coordinator's :class:`~privdist.runtime.remote.backend.RemoteBackend` and a party's
:class:`~privdist.runtime.remote.party_side.RemoteParty` (issue 38). Every link carries the wire format of
:mod:`privdist.runtime.remote.codec` (data only: a call is a method name and its arguments, never code).

* :class:`LocalLink`: the party in this process, every call and result through the wire format (tests, rehearsal);
* :class:`PipeLink` / :class:`PipeEnd`: the two ends of an OS pipe to a party process on this machine
  (:func:`spawn_party` starts one); a party process that dies ends its link with :class:`LinkLostError`.

The gRPC link with mutual TLS (parties on other machines) speaks the same calls.
"""

from __future__ import annotations

import multiprocessing
import time

from .backend import LinkLostError
from .codec import decode, encode
from .party_side import RemoteCallError, serve_link

__all__ = ["LocalLink", "PipeLink", "PipeEnd", "spawn_party", "party_process", "unwrap_reply"]


def unwrap_reply(reply):
    """The result of a party's reply ``{"ok": ...}``, or its named error ``{"error": ...}`` raised."""
    if not isinstance(reply, dict) or set(reply) not in ({"ok"}, {"error"}):
        raise RemoteCallError(f"a party answered something that is not a reply: {type(reply).__name__}")
    if "error" in reply:
        raise RemoteCallError(str(reply["error"]))
    return reply["ok"]


class LocalLink:
    """The party ``party`` (a :class:`RemoteParty`) in this process, reached through the wire format."""

    def __init__(self, party):
        self.party, self.alive = party, True

    def call(self, method: str, args: dict):
        if not self.alive:
            raise LinkLostError(f"party {self.party.party}: link closed")
        request = decode(encode({"method": method, "args": args}))
        try:
            reply = {"ok": self.party.handle(request["method"], request["args"])}
        except Exception as exc:  # noqa: BLE001 - the caller gets the named error through the wire
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        return unwrap_reply(decode(encode(reply)))


class PipeLink:
    """The coordinator's end of a pipe to a party process. ``timeout``: seconds to wait for an answer before the
    party counts as lost (None: wait as long as its process lives)."""

    def __init__(self, conn, process=None, timeout: float | None = 600.0):
        self.conn, self.process, self.timeout = conn, process, timeout

    def call(self, method: str, args: dict):
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            self.conn.send_bytes(encode({"method": method, "args": args}))
            while not self.conn.poll(1.0):  # wake up each second to see whether the party process still lives
                if self.process is not None and not self.process.is_alive():
                    raise EOFError("the party process ended")
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"no answer to {method!r} within {self.timeout:g} s")
            return unwrap_reply(decode(self.conn.recv_bytes()))
        except (EOFError, OSError, TimeoutError) as exc:
            raise LinkLostError(f"party link lost during {method!r}: {type(exc).__name__}: {exc}") from None


class PipeEnd:
    """The party's end of the pipe (what :func:`serve_link` reads calls from)."""

    def __init__(self, conn):
        self.conn = conn

    def receive(self):
        try:
            request = decode(self.conn.recv_bytes())
        except (EOFError, OSError):
            return None
        return request["method"], request["args"]

    def reply(self, result) -> None:
        self.conn.send_bytes(encode({"ok": result}))

    def fail(self, error: str) -> None:
        self.conn.send_bytes(encode({"error": error}))


def party_process(conn, build, build_args) -> None:
    """Body of a party process: ``build(*build_args)`` returns its :class:`RemoteParty` (the party builds its
    algorithm and problem itself, from its own data); then it answers calls until ``close``."""
    party = build(*build_args)
    try:
        serve_link(party, PipeEnd(conn))
    finally:
        conn.close()


def spawn_party(build, *build_args, timeout: float | None = 600.0):
    """Start a party process (``spawn``: a fresh interpreter that imports privdist as installed) whose
    :class:`RemoteParty` is ``build(*build_args)``; returns ``(process, PipeLink)``. ``build`` must be importable."""
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=party_process, args=(theirs, build, build_args), daemon=True)
    proc.start()
    theirs.close()
    return proc, PipeLink(ours, proc, timeout)
