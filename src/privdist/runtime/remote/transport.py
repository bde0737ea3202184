"""gRPC with mutual TLS between a coordinator and its parties (issue 38): the party dials out, opens no port.

As Flower's SuperNode does with its SuperLink, each party opens one long-lived bidirectional stream to the
coordinator and everything flows on it both ways. The service has one method, ``/privdist.remote.Link/Exchange``,
registered through a generic handler with raw bytes in and out (no generated code); each message is a signed
:mod:`envelope <privdist.runtime.remote.envelope>`.

Identity: the TLS layer verifies both certificates against the consortium CA (the server requires a client
certificate). The coordinator names a party by the CN of the certificate the handshake verified
(``context.auth_context()``), checks that it is a party's certificate and, if it was given a roster, on it; the
party checks the coordinator's certificate name (``grpc.ssl_target_name_override``: the name, not the address, is
what the party trusts). The stream opens with two greetings (kind ``hello``, sequence number 0): the coordinator's
carries the job id and its certificate, which the party verifies (CA, role, name) before checking the greeting's
signature with it; the party's greeting proves its key signs envelopes and that it joins this job. Every later
envelope is checked by an :class:`~privdist.runtime.remote.envelope.Inbox` (signature, job, receiver, order).

Every wait is bounded: a party that does not answer in time raises :class:`PeerTimeoutError`, one whose stream
ended :class:`PeerDisconnectedError`; both are :class:`PeerUnavailableError`, which the job layer treats as a dropout.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from concurrent import futures
from typing import Any, Iterable, Mapping

import grpc

from ...errors import PrivdistError, ValidationError
from .envelope import Envelope, EnvelopeError, Inbox, Outbox, peek
from .pki import Identity, PkiError, load_certificate_pem, verify_certificate

__all__ = ["METHOD", "TransportError", "HandshakeError", "PeerRefusedError", "PeerUnavailableError",
           "PeerTimeoutError", "PeerDisconnectedError", "UnexpectedMessageError", "CoordinatorServer", "PartyClient"]

METHOD = "/privdist.remote.Link/Exchange"
HELLO = "hello"
_CLOSE, _GONE = object(), object()
_MAX_BYTES = 256 * 2**20


class TransportError(PrivdistError, ConnectionError):
    """A connection between a party and its coordinator failed."""


class PeerRefusedError(TransportError):
    """The other side refused the connection (not on the roster, already joined, wrong role or job)."""


class HandshakeError(PeerRefusedError):
    """No mutually authenticated connection could be opened (no server there, or a TLS handshake refused: a
    certificate the other side's CA did not sign, or a server name that does not match)."""


class PeerUnavailableError(TransportError):
    """A peer is gone or silent: the job layer's dropout."""


class PeerTimeoutError(PeerUnavailableError, TimeoutError):
    """A peer did not answer within the timeout."""


class PeerDisconnectedError(PeerUnavailableError):
    """A peer's stream ended (it closed, was killed, or the network failed)."""


class UnexpectedMessageError(PrivdistError, ValueError):
    """An authentic envelope of another kind or round than the protocol expects at this point."""


def _check_timeout(timeout) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
        raise ValidationError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    return float(timeout)


def _options(max_bytes: int) -> list[tuple[str, Any]]:
    return [("grpc.max_send_message_length", max_bytes), ("grpc.max_receive_message_length", max_bytes)]


def _take(q: "queue.Queue", who: str, kind, round, timeout: float) -> Envelope:
    try:
        item = q.get(timeout=timeout)
    except queue.Empty:
        what = f" ({kind}, round {round})" if kind is not None else ""
        raise PeerTimeoutError(f"{who} sent nothing{what} within {timeout:g} s") from None
    if item is _GONE:
        q.put(_GONE)  # every later wait sees it too
        raise PeerDisconnectedError(f"{who}'s stream has ended")
    if isinstance(item, Exception):
        raise item
    if (kind is not None and item.kind != kind) or (round is not None and item.round != round):
        raise UnexpectedMessageError(f"{who} sent {item.kind!r} for round {item.round}, expected {kind!r} for "
                                     f"round {round}")
    return item


class _Peer:
    def __init__(self, name: str):
        self.name = name
        self.stream = False
        self.inbox: Inbox | None = None
        self.outbox: Outbox | None = None
        self.outgoing: queue.Queue = queue.Queue()
        self.incoming: queue.Queue = queue.Queue()
        self.joined = threading.Event()
        self.gone = threading.Event()


class CoordinatorServer:
    """The coordinator's side: a gRPC server with mutual TLS that parties dial into.

    Args:
        identity: the coordinator's credentials (``role="coordinator"``).
        job: the job id every envelope carries.
        parties: the names allowed to join (None: any party the CA signed).
        host, port: where to listen (``port=0``: a free port, returned by :meth:`start`).
        timeout: the default bound of every wait, in seconds.
    """

    def __init__(self, identity: Identity, job: str, parties: Iterable[str] | None = None, host: str = "127.0.0.1",
                 port: int = 0, timeout: float = 60.0, max_message_bytes: int = _MAX_BYTES):
        if identity.role != "coordinator":
            raise ValidationError(f"the coordinator needs a coordinator's identity, got a {identity.role}'s")
        self.identity, self.job = identity, str(job)
        self.parties = None if parties is None else list(parties)
        self.host, self.port, self.timeout = host, int(port), _check_timeout(timeout)
        self._max = int(max_message_bytes)
        self._lock = threading.Lock()
        self._peers: dict[str, _Peer] = {}
        self._server: grpc.Server | None = None

    def start(self) -> int:
        """Start listening; returns the port."""
        workers = 8 + (len(self.parties) if self.parties is not None else 64)
        if not 0 <= self.port <= 65535:
            raise ValidationError(f"port must be in [0, 65535] (0: any free port), got {self.port}")
        # no SO_REUSEPORT (gRPC's default): a second coordinator on a port in use would share it, and parties
        # dialling it would join either job
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="privdist-link"),
                             options=_options(self._max) + [("grpc.so_reuseport", 0)])
        handler = grpc.stream_stream_rpc_method_handler(self._exchange)  # no (de)serialisers: raw bytes
        service, method = METHOD.strip("/").split("/")
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {method: handler}),))
        creds = grpc.ssl_server_credentials([(self.identity.key_pem(), self.identity.cert_pem())],
                                            root_certificates=self.identity.ca_pem(), require_client_auth=True)
        try:
            port = server.add_secure_port(f"{self.host}:{self.port}", creds)
        except RuntimeError:  # grpcio >= 1.60 raises where older versions returned 0
            port = 0
        if port == 0:
            raise TransportError(f"cannot listen on {self.host}:{self.port}: the port is in use (another coordinator?) "
                                 "or the host is not an address of this machine")
        server.start()
        self._server, self.port = server, port
        return port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def joined(self) -> list[str]:
        """The parties that have joined (greetings exchanged) and whose stream is still open, sorted."""
        with self._lock:
            return sorted(n for n, p in self._peers.items() if p.joined.is_set() and not p.gone.is_set())

    def wait_for_parties(self, names: Iterable[str] | None = None, timeout: float | None = None) -> list[str]:
        """Wait until every party in ``names`` (default: the roster) has joined; returns them.

        Raises:
            PeerTimeoutError: some did not join in time (the message names them).
        """
        names = list(names if names is not None else (self.parties or []))
        deadline = time.monotonic() + _check_timeout(timeout or self.timeout)
        for name in names:
            peer = self._peer(name)
            if not peer.joined.wait(max(0.0, deadline - time.monotonic())):
                missing = [n for n in names if not self._peer(n).joined.is_set()]
                raise PeerTimeoutError(f"parties {missing} did not join within {timeout or self.timeout:g} s")
        return names

    def _peer(self, name: str) -> _Peer:
        with self._lock:
            return self._peers.setdefault(name, _Peer(name))

    def send(self, party: str, kind: str, round: int, payload: Mapping[str, Any] | None = None) -> None:
        """Sign and queue one envelope to ``party``."""
        peer = self._peer(party)
        if not peer.joined.is_set() or peer.gone.is_set():
            raise PeerDisconnectedError(f"party {party!r} is not connected")
        peer.outgoing.put(peer.outbox.seal(party, kind, round, payload))

    def recv(self, party: str, kind: str | None = None, round: int | None = None,
             timeout: float | None = None) -> Envelope:
        """The next envelope from ``party`` (checked: signature, job, order; and ``kind``/``round`` if given).

        Raises:
            PeerTimeoutError, PeerDisconnectedError: the party is silent or gone (a dropout).
            EnvelopeError: its envelope was rejected (the subclass names why).
            UnexpectedMessageError: an authentic envelope of another kind or round.
        """
        return _take(self._peer(party).incoming, f"party {party!r}", kind, round,
                     _check_timeout(timeout or self.timeout))

    def gather(self, kind: str, round: int, parties: Iterable[str] | None = None, timeout: float | None = None
               ) -> tuple[dict[str, Envelope], dict[str, PeerUnavailableError]]:
        """One envelope of ``kind`` for ``round`` from each party, all within one deadline.

        Returns:
            ``(received, dropped)``: the envelopes by party, and the reason each silent or gone party dropped.
        """
        names = list(parties if parties is not None else self.joined())
        deadline = time.monotonic() + _check_timeout(timeout or self.timeout)
        received, dropped = {}, {}
        for name in names:
            try:
                received[name] = self.recv(name, kind, round, max(1e-3, deadline - time.monotonic()))
            except PeerUnavailableError as exc:
                dropped[name] = exc
        return received, dropped

    def close(self, grace: float = 1.0) -> None:
        """End every party's stream and stop the server."""
        with self._lock:
            peers = list(self._peers.values())
        for peer in peers:
            peer.outgoing.put(_CLOSE)
        if self._server is not None:
            self._server.stop(grace).wait(grace + 5.0)

    def __enter__(self) -> "CoordinatorServer":
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _authenticate(self, context) -> tuple[str, Any]:
        pems = context.auth_context().get("x509_pem_cert") or [b""]
        try:
            cert = load_certificate_pem(pems[0])
            name = verify_certificate(cert, self.identity.ca_cert, role="party")
        except PkiError as exc:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"refused: {exc}")
        if self.parties is not None and name not in self.parties:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"refused: {name!r} is not a party of job {self.job!r}")
        return name, cert

    def _exchange(self, requests, context):
        name, cert = self._authenticate(context)
        with self._lock:
            peer = self._peers.setdefault(name, _Peer(name))
            if peer.stream or peer.joined.is_set():  # one stream per party and job: no second join (yet)
                context.abort(grpc.StatusCode.ALREADY_EXISTS, f"refused: {name!r} has already joined job {self.job!r}")
            peer.stream = True
            peer.outgoing = out = queue.Queue()  # this stream's queue (a refused attempt's leftovers stay with it)
        me = self.identity.name
        peer.inbox = Inbox(self.job, me, {name: cert})  # one per party: its reader thread alone uses it
        peer.outbox = Outbox(self.job, me, self.identity.key)
        hello = peer.outbox.seal(name, HELLO, 0, {"certificate": self.identity.cert_pem().decode()})
        context.add_callback(lambda: self._gone(peer, out))
        threading.Thread(target=self._read, args=(peer, out, requests), daemon=True,
                         name=f"privdist-link-{name}").start()
        yield hello
        while True:
            item = out.get()
            if item is _CLOSE:
                return
            if isinstance(item, tuple):  # (status code, details): refuse the party
                context.abort(*item)
            yield item

    def _read(self, peer: _Peer, out: queue.Queue, requests) -> None:
        try:
            for wire in requests:
                try:
                    env = peer.inbox.open(wire, via=peer.name)
                except EnvelopeError as exc:
                    if not peer.joined.is_set():  # a greeting for another job, or not authentic
                        out.put((grpc.StatusCode.PERMISSION_DENIED, f"refused: {exc}"))
                        return
                    peer.incoming.put(exc)  # the job layer sees the named rejection when it receives
                    continue
                if not peer.joined.is_set():
                    if env.kind != HELLO:
                        out.put((grpc.StatusCode.FAILED_PRECONDITION, "refused: greet first"))
                        return
                    peer.joined.set()
                    continue
                peer.incoming.put(env)
        except grpc.RpcError:
            pass
        finally:
            self._gone(peer, out)

    def _gone(self, peer: _Peer, out: queue.Queue) -> None:
        """A stream ended: a party that had joined is gone for the job; one that had not may try again."""
        out.put(_CLOSE)
        with self._lock:
            if not peer.stream or peer.outgoing is not out:
                return
            peer.stream = False
            if peer.joined.is_set() and not peer.gone.is_set():
                peer.gone.set()
                peer.incoming.put(_GONE)


class PartyClient:
    """A party's side: dials out to the coordinator (opens no port), greets it and exchanges envelopes.

    Args:
        identity: the party's credentials (``role="party"``).
        address: the coordinator's ``host:port``.
        coordinator: the name the coordinator's certificate must carry.
        job: the job id to expect (None: take the one the coordinator's signed greeting announces).
        timeout: the default bound of every wait, in seconds.
    """

    def __init__(self, identity: Identity, address: str, coordinator: str, job: str | None = None,
                 timeout: float = 60.0, max_message_bytes: int = _MAX_BYTES):
        if identity.role != "party":
            raise ValidationError(f"a party needs a party's identity, got a {identity.role}'s")
        self.identity, self.address, self.coordinator = identity, address, coordinator
        self.job, self.timeout, self._max = job, _check_timeout(timeout), int(max_message_bytes)
        self._outgoing: queue.Queue = queue.Queue()
        self._incoming: queue.Queue = queue.Queue()
        self._channel = self._call = self._inbox = self._outbox = None
        self._reader: threading.Thread | None = None

    def connect(self, timeout: float | None = None) -> "PartyClient":
        """Open the stream and exchange greetings; returns self with ``job`` set.

        Raises:
            HandshakeError: no mutually authenticated connection (no server, or a certificate refused).
            PeerRefusedError: the coordinator refused this party (roster, already joined).
            PeerTimeoutError: the coordinator did not greet in time.
            PkiError, EnvelopeError: the coordinator's greeting is not authentic, or for another job.
        """
        timeout = _check_timeout(timeout or self.timeout)
        ident = self.identity
        creds = grpc.ssl_channel_credentials(root_certificates=ident.ca_pem(), private_key=ident.key_pem(),
                                             certificate_chain=ident.cert_pem())
        options = _options(self._max) + [("grpc.ssl_target_name_override", self.coordinator)]
        self._channel = grpc.secure_channel(self.address, creds, options=options)
        self._call = self._channel.stream_stream(METHOD)(self._requests())
        self._reader = threading.Thread(target=self._read, daemon=True, name="privdist-link")
        self._reader.start()
        try:
            wire = _take(self._incoming, f"the coordinator {self.coordinator!r}", None, None, timeout)
            hello = peek(wire)
            cert = load_certificate_pem(str(hello.payload.get("certificate", "")).encode())
            verify_certificate(cert, ident.ca_cert, role="coordinator", name=self.coordinator)
            self.job = hello.job if self.job is None else self.job
            self._inbox = Inbox(self.job, ident.name, {self.coordinator: cert})
            env = self._inbox.open(wire, via=self.coordinator)
            if env.kind != HELLO:
                raise UnexpectedMessageError(f"the coordinator sent {env.kind!r} before greeting")
            self._outbox = Outbox(self.job, ident.name, ident.key)
            self._outgoing.put(self._outbox.seal(self.coordinator, HELLO, 0))
        except BaseException:
            self.close()
            raise
        return self

    def send(self, kind: str, round: int, payload: Mapping[str, Any] | None = None) -> None:
        """Sign and queue one envelope to the coordinator."""
        if self._outbox is None:
            raise TransportError("not connected: call connect() first")
        self._outgoing.put(self._outbox.seal(self.coordinator, kind, round, payload))

    def recv(self, kind: str | None = None, round: int | None = None, timeout: float | None = None) -> Envelope:
        """The next envelope from the coordinator (checked; and ``kind``/``round`` if given)."""
        if self._inbox is None:
            raise TransportError("not connected: call connect() first")
        item = _take(self._incoming, f"the coordinator {self.coordinator!r}", None, None,
                     _check_timeout(timeout or self.timeout))
        env = self._inbox.open(item, via=self.coordinator)
        if (kind is not None and env.kind != kind) or (round is not None and env.round != round):
            raise UnexpectedMessageError(f"the coordinator sent {env.kind!r} for round {env.round}, expected "
                                         f"{kind!r} for round {round}")
        return env

    def close(self, timeout: float = 5.0) -> None:
        """End the stream (the coordinator sees this party leave) and the channel."""
        self._outgoing.put(_CLOSE)
        if self._reader is not None:
            self._reader.join(timeout)
        if self._channel is not None:
            self._channel.close()

    def __enter__(self) -> "PartyClient":
        return self.connect() if self._channel is None else self

    def __exit__(self, *exc) -> None:
        self.close()

    def _requests(self):
        while True:
            item = self._outgoing.get()
            if item is _CLOSE:
                return
            yield item

    def _read(self) -> None:
        try:
            for wire in self._call:
                self._incoming.put(wire)
        except grpc.RpcError as exc:
            self._incoming.put(self._error(exc))
        finally:
            self._incoming.put(_GONE)

    def _error(self, exc: grpc.RpcError) -> Exception:
        code, details = exc.code(), exc.details()
        who = f"the coordinator {self.coordinator!r} at {self.address}"
        if code == grpc.StatusCode.UNAVAILABLE and self._inbox is None:
            return HandshakeError(f"no mutually authenticated connection to {who}: {details}")
        if code.name in ("PERMISSION_DENIED", "ALREADY_EXISTS", "FAILED_PRECONDITION", "UNAUTHENTICATED"):
            return PeerRefusedError(f"{who} refused {self.identity.name!r}: {details}")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return PeerTimeoutError(f"{who}: {details}")
        return PeerDisconnectedError(f"the stream to {who} ended: {code.name} {details}")
