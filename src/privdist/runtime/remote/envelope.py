"""Signed message envelopes (issue 38): data only, authenticated, in order, bound to one job.

Nothing executable crosses the wire: an envelope is a JSON header and the raw little-endian bytes of numeric numpy
arrays, never pickle. The wire format (all integers big-endian)::

    b"PDE1" | u8 len(sender) | sender (utf-8) | u32 len(header) | header (JSON, utf-8) | array bytes ... | signature

The header holds the job id, receiver, kind, round, sequence number and the payload: its JSON values, and for each
array its name, dtype (``"<f8"``, ``"|u1"``, ...; numbers and booleans only), shape and byte count, in the order of
the array bytes that follow. The signature is ECDSA P-256 over SHA-256 of everything before it, by the sender's
certificate key, as 64 bytes (r | s), so any byte changed anywhere, lengths included, fails verification.

The receiver (:class:`Inbox`) checks, in this order, and raises a distinct error for each: the frame
(:class:`MalformedEnvelopeError`), the sender is a known member (:class:`UnknownSenderError`), the signature against
the sender's certificate (:class:`TamperedMessageError`), the job (:class:`WrongJobError`), the receiver
(:class:`MisdirectedMessageError`), and the sequence number: each sender numbers what it sends to each receiver
0, 1, 2, ... A number already accepted with the same content is a :class:`ReplayedMessageError`; a number that
skips ahead or goes back to a different message is an :class:`OutOfOrderMessageError`. A rejected envelope changes
no state.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from ...errors import PrivdistError
from .pki import check_name

__all__ = [
    "MAGIC", "Envelope", "Outbox", "Inbox", "EnvelopeError", "MalformedEnvelopeError", "UnknownSenderError",
    "TamperedMessageError", "WrongJobError", "MisdirectedMessageError", "ReplayedMessageError",
    "OutOfOrderMessageError", "encode", "peek_sender", "peek", "decode",
]

MAGIC = b"PDE1"
_SIG = 64
_KINDS = "biuf"  # booleans, signed and unsigned integers, floats: the dtypes an array may have


class EnvelopeError(PrivdistError, ValueError):
    """An envelope was rejected (the subclass says why)."""


class MalformedEnvelopeError(EnvelopeError):
    """The bytes are not an envelope (bad magic, lengths, JSON or dtype), or a payload cannot be sent."""


class UnknownSenderError(EnvelopeError):
    """The envelope names a sender whose certificate the receiver does not hold."""


class TamperedMessageError(EnvelopeError):
    """The signature does not verify against the sender's certificate: the bytes were changed or forged."""


class WrongJobError(EnvelopeError):
    """The envelope belongs to another job."""


class MisdirectedMessageError(EnvelopeError):
    """The envelope is addressed to someone else, or does not come from the peer at the other end."""


class ReplayedMessageError(EnvelopeError):
    """The same envelope (sequence number and content) was accepted before."""


class OutOfOrderMessageError(EnvelopeError):
    """The sequence number skips ahead, or goes back to a number already used for a different message."""


@dataclass(frozen=True)
class Envelope:
    """One message: who to whom, in which job, round and sequence, and its payload (JSON values and arrays)."""

    job: str
    sender: str
    receiver: str
    kind: str
    round: int
    seq: int
    payload: Mapping[str, Any] = field(default_factory=dict)


def _array_meta(name: str, value) -> tuple[dict, bytes]:
    a = np.asarray(value)
    if a.dtype.kind not in _KINDS:
        raise MalformedEnvelopeError(f"payload {name!r}: dtype {a.dtype} cannot be sent (numbers and booleans only)")
    a = a.astype(a.dtype.newbyteorder("<"), order="C", copy=False)  # not ascontiguousarray: it makes 0-d 1-d
    raw = a.tobytes()
    return {"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "nbytes": len(raw)}, raw


def encode(env: Envelope, key: ec.EllipticCurvePrivateKey) -> bytes:
    """The signed wire bytes of ``env`` (arrays as raw little-endian bytes, everything else JSON)."""
    sender = check_name(env.sender).encode()
    values, arrays, blobs = {}, [], []
    for name, value in env.payload.items():
        if not isinstance(name, str):
            raise MalformedEnvelopeError(f"payload names must be strings, got {name!r}")
        if isinstance(value, (np.ndarray, np.generic)):
            meta, raw = _array_meta(name, value)
            arrays.append(meta)
            blobs.append(raw)
        else:
            values[name] = value
    header = {"job": env.job, "receiver": env.receiver, "kind": env.kind, "round": int(env.round),
              "seq": int(env.seq), "values": values, "arrays": arrays}
    try:
        head = json.dumps(header, sort_keys=True, allow_nan=False, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise MalformedEnvelopeError(f"payload is not plain JSON or numeric arrays ({exc}); send NaN, inf and "
                                     f"numbers with a dtype as numpy arrays") from None
    body = b"".join([MAGIC, struct.pack(">B", len(sender)), sender, struct.pack(">I", len(head)), head, *blobs])
    der = key.sign(body, ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    return body + r.to_bytes(32, "big") + s.to_bytes(32, "big")


def peek_sender(wire: bytes) -> str:
    """The sender an envelope claims, read before its signature is checked (to pick the certificate)."""
    if len(wire) < len(MAGIC) + 1 + _SIG or wire[:len(MAGIC)] != MAGIC:
        raise MalformedEnvelopeError("not a privdist envelope (bad magic or too short)")
    n = wire[len(MAGIC)]
    try:
        return check_name(wire[len(MAGIC) + 1:len(MAGIC) + 1 + n].decode())
    except (UnicodeDecodeError, PrivdistError):
        raise MalformedEnvelopeError("the envelope's sender is not a valid name") from None


def peek(wire: bytes) -> Envelope:
    """Parse ``wire`` WITHOUT checking its signature: only to read the certificate a greeting carries, which is
    then verified against the CA before :func:`decode` checks the envelope's signature with it."""
    return _parse(wire[:-_SIG], peek_sender(wire))


def decode(wire: bytes, sender_cert: x509.Certificate) -> Envelope:
    """Verify the signature of ``wire`` against ``sender_cert`` and parse it (no state is checked here)."""
    sender = peek_sender(wire)
    body, sig = wire[:-_SIG], wire[-_SIG:]
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    try:
        sender_cert.public_key().verify(der, body, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, TypeError, ValueError):
        raise TamperedMessageError(f"the signature of an envelope from {sender!r} does not verify against its "
                                   f"certificate: the message was altered or forged") from None
    return _parse(body, sender)


def _parse(body: bytes, sender: str) -> Envelope:
    pos = len(MAGIC) + 1 + body[len(MAGIC)]
    try:
        (n,) = struct.unpack_from(">I", body, pos)
        header = json.loads(body[pos + 4:pos + 4 + n].decode())
        pos += 4 + n
        payload = dict(header["values"])
        for meta in header["arrays"]:
            dtype = np.dtype(meta["dtype"])
            if dtype.kind not in _KINDS or dtype.byteorder == ">" or meta["name"] in payload:
                raise ValueError(f"array {meta['name']!r}: dtype {dtype} or name not allowed")
            shape = tuple(int(d) for d in meta["shape"])
            nbytes = int(meta["nbytes"])
            if nbytes != dtype.itemsize * int(np.prod(shape, dtype=np.int64)) or pos + nbytes > len(body):
                raise ValueError(f"array {meta['name']!r}: {nbytes} bytes do not fit shape {shape} and {dtype}")
            payload[meta["name"]] = np.frombuffer(body, dtype=dtype, count=nbytes // dtype.itemsize,
                                                  offset=pos).reshape(shape).copy()
            pos += nbytes
        if pos != len(body):
            raise ValueError(f"{len(body) - pos} bytes after the last array")
        return Envelope(job=str(header["job"]), sender=sender, receiver=str(header["receiver"]),
                        kind=str(header["kind"]), round=int(header["round"]), seq=int(header["seq"]),
                        payload=payload)
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise MalformedEnvelopeError(f"a signed envelope from {sender!r} cannot be parsed: {exc}") from None


class Outbox:
    """The sending side of one member: signs envelopes and numbers them 0, 1, 2, ... per receiver."""

    def __init__(self, job: str, me: str, key: ec.EllipticCurvePrivateKey):
        self.job, self.me, self._key = job, check_name(me), key
        self._next: dict[str, int] = {}

    def seal(self, receiver: str, kind: str, round: int, payload: Mapping[str, Any] | None = None) -> bytes:
        """The signed wire bytes of the next envelope to ``receiver``."""
        seq = self._next.get(receiver, 0)
        wire = encode(Envelope(self.job, self.me, receiver, kind, round, seq, dict(payload or {})), self._key)
        self._next[receiver] = seq + 1
        return wire


class Inbox:
    """The receiving side of one member: verifies, checks and orders the envelopes addressed to it.

    Args:
        job: the job id every envelope must carry.
        me: this member's name (every envelope's receiver).
        peers: the certificates of the members it may hear from, by name (verified against the CA by the caller).
    """

    def __init__(self, job: str, me: str, peers: Mapping[str, x509.Certificate]):
        self.job, self.me = job, me
        self._peers = dict(peers)
        self._next: dict[str, int] = {}
        self._seen: dict[tuple[str, int], bytes] = {}

    def add_peer(self, name: str, cert: x509.Certificate) -> None:
        self._peers[name] = cert

    def open(self, wire: bytes, via: str | None = None) -> Envelope:
        """Accept one envelope or raise the named reason it is rejected.

        Args:
            via: the authenticated peer at the other end of the connection (its TLS certificate's name); the
                envelope must come from it. None for envelopes relayed by a third member.
        """
        sender = peek_sender(wire)
        if via is not None and sender != via:
            raise MisdirectedMessageError(f"an envelope signed as {sender!r} arrived on {via!r}'s connection")
        cert = self._peers.get(sender)
        if cert is None:
            raise UnknownSenderError(f"an envelope from {sender!r}, whose certificate {self.me!r} does not hold")
        env = decode(wire, cert)
        if env.job != self.job:
            raise WrongJobError(f"an envelope from {sender!r} for job {env.job!r}, this is job {self.job!r}")
        if env.receiver != self.me:
            raise MisdirectedMessageError(f"an envelope from {sender!r} addressed to {env.receiver!r}, "
                                          f"not to {self.me!r}")
        expected = self._next.get(sender, 0)
        digest = hashlib.sha256(wire[:-_SIG]).digest()
        if env.seq < expected and self._seen.get((sender, env.seq)) == digest:
            raise ReplayedMessageError(f"envelope {env.seq} from {sender!r} ({env.kind}, round {env.round}) was "
                                       f"already received: a replay")
        if env.seq != expected:
            raise OutOfOrderMessageError(f"envelope {env.seq} from {sender!r} ({env.kind}, round {env.round}) is out "
                                         f"of order: expected number {expected}")
        self._next[sender] = expected + 1
        self._seen[(sender, env.seq)] = digest
        return env
