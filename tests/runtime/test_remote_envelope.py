"""Issue 38: signed envelopes (runtime/remote/envelope): bit-exact arrays, no pickle, and every way an envelope is
rejected named (tampered, replayed, out of order, wrong job, misdirected, unknown sender, malformed)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from privdist.runtime.remote import envelope as ev

_NOW = __import__("datetime").datetime(2026, 1, 1, tzinfo=__import__("datetime").timezone.utc)


def _member(name: str):
    """A key and a self-signed certificate (the envelope layer only needs the public key; the CA is pki's)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(1).not_valid_before(_NOW).not_valid_after(_NOW.replace(year=2027))
            .sign(key, hashes.SHA256()))
    return key, cert


@pytest.fixture(scope="module")
def members():
    return {name: _member(name) for name in ("coord", "party_0", "party_1")}


def _pair(members, job="job-1"):
    out = ev.Outbox(job, "party_0", members["party_0"][0])
    inbox = ev.Inbox("job-1", "coord", {"party_0": members["party_0"][1], "party_1": members["party_1"][1]})
    return out, inbox


def _special_arrays() -> dict:
    nan_payload = np.array([0x7FF8_0000_0000_1234], dtype=np.uint64).view(np.float64)  # a NaN with payload bits
    rng = np.random.default_rng(7)
    return {
        "f64": np.concatenate([nan_payload, [-0.0, np.inf, -np.inf, 5e-324, 1.0 / 3.0], rng.normal(size=20)]),
        "f32": rng.normal(size=(3, 4)).astype(np.float32),
        "f16": np.array([1.5, -2.25], dtype=np.float16),
        "i64": np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max]),
        "u8": np.arange(256, dtype=np.uint8).reshape(16, 16),
        "bool": np.array([[True, False], [False, True]]),
        "scalar": np.float64(2.5),
        "zero_d": np.array(7, dtype=np.int32),
        "empty": np.zeros((0, 3)),
        "fortran": np.asfortranarray(rng.normal(size=(4, 5))),
        "transposed": rng.normal(size=(5, 6)).T,
        "big_endian": np.arange(6, dtype=">f8").reshape(2, 3),
    }


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.asarray(a)
    want_dtype = a.dtype.newbyteorder("<")
    return b.dtype == want_dtype and b.shape == a.shape and b.tobytes() == a.astype(want_dtype).tobytes(order="C")


def test_arrays_and_json_round_trip_bit_exactly(members):
    out, inbox = _pair(members)
    arrays = _special_arrays()
    payload = {**arrays, "note": "plan \u00fc", "sizes": [1, 2, 3], "meta": {"a": None, "b": 1.5}}
    env = inbox.open(out.seal("coord", "update", 3, payload), via="party_0")
    assert (env.job, env.sender, env.receiver, env.kind, env.round, env.seq) == \
        ("job-1", "party_0", "coord", "update", 3, 0)
    for name, a in arrays.items():
        assert _same(a, env.payload[name]), name
        assert env.payload[name].flags.writeable  # a copy, not a view of the wire bytes
    assert env.payload["note"] == "plan \u00fc" and env.payload["sizes"] == [1, 2, 3]
    assert env.payload["meta"] == {"a": None, "b": 1.5}


def test_nothing_executable_or_untyped_is_sent(members):
    out, _ = _pair(members)
    for bad in (np.array([object()], dtype=object), np.array(["text"]), np.array([b"x"]),
                np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]), np.array([1 + 2j])):
        with pytest.raises(ev.MalformedEnvelopeError, match="cannot be sent"):
            out.seal("coord", "x", 0, {"a": bad})
    for bad in (object(), {1, 2}, float("nan"), b"bytes"):
        with pytest.raises(ev.MalformedEnvelopeError, match="not plain JSON"):
            out.seal("coord", "x", 0, {"a": bad})


def _resign(wire: bytes, key, edit) -> bytes:
    """Parse ``wire``'s header, apply ``edit`` to it, and sign the result again with ``key`` (a sender that signs
    what it should not, as opposed to a tamperer who cannot sign)."""
    n = wire[len(ev.MAGIC)]
    pos = len(ev.MAGIC) + 1 + n
    (hlen,) = struct.unpack_from(">I", wire, pos)
    header = json.loads(wire[pos + 4:pos + 4 + hlen])
    edit(header)
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = wire[:pos] + struct.pack(">I", len(head)) + head + wire[pos + 4 + hlen:-64]
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    r, s = decode_dss_signature(key.sign(body, ec.ECDSA(hashes.SHA256())))
    return body + r.to_bytes(32, "big") + s.to_bytes(32, "big")


@pytest.mark.parametrize("where", ["header", "array bytes", "length field", "signature", "last byte"])
def test_a_tampered_envelope_is_rejected_by_name(members, where):
    out, inbox = _pair(members)
    good = out.seal("coord", "update", 0, {"x": np.arange(8.0), "round_note": "r0"})
    wire = bytearray(good)
    head_at = len(ev.MAGIC) + 1 + len("party_0") + 4
    offset = {"header": wire.index(b'"round":0') + 8, "array bytes": len(wire) - 64 - 8,
              "length field": head_at - 1, "signature": len(wire) - 40, "last byte": len(wire) - 1}[where]
    wire[offset] ^= 0x01
    with pytest.raises(ev.TamperedMessageError, match="does not verify"):
        inbox.open(bytes(wire), via="party_0")
    assert inbox.open(good, via="party_0").seq == 0  # the rejection changed nothing: envelope 0 still expected


def test_another_members_key_cannot_sign_for_a_sender(members):
    forger = ev.Outbox("job-1", "party_0", members["party_1"][0])  # party_1's key, claiming to be party_0
    _, inbox = _pair(members)
    with pytest.raises(ev.TamperedMessageError):
        inbox.open(forger.seal("coord", "update", 0, {"x": np.zeros(2)}))


def test_replayed_and_out_of_order_envelopes_are_rejected_by_name(members):
    out, inbox = _pair(members)
    wires = [out.seal("coord", "update", r, {"x": np.full(2, r)}) for r in range(4)]
    assert inbox.open(wires[0]).seq == 0
    assert inbox.open(wires[1]).seq == 1
    with pytest.raises(ev.ReplayedMessageError, match="envelope 1 from 'party_0'.*replay"):
        inbox.open(wires[1])
    with pytest.raises(ev.ReplayedMessageError):
        inbox.open(wires[0])
    with pytest.raises(ev.OutOfOrderMessageError, match="envelope 3 .* expected number 2"):
        inbox.open(wires[3])  # skips 2
    back = _resign(wires[2], members["party_0"][0], lambda h: h.update(seq=1))  # a new message numbered 1
    with pytest.raises(ev.OutOfOrderMessageError, match="expected number 2"):
        inbox.open(back)
    assert inbox.open(wires[2]).seq == 2 and inbox.open(wires[3]).seq == 3


def test_wrong_job_misdirected_and_unknown_sender_are_rejected_by_name(members):
    other_job, inbox = _pair(members, job="job-2")
    with pytest.raises(ev.WrongJobError, match="for job 'job-2', this is job 'job-1'"):
        inbox.open(other_job.seal("coord", "update", 0))
    out, inbox = _pair(members)
    with pytest.raises(ev.MisdirectedMessageError, match="addressed to 'party_1'"):
        inbox.open(out.seal("party_1", "update", 0))
    with pytest.raises(ev.MisdirectedMessageError, match="arrived on 'party_1'"):
        inbox.open(out.seal("coord", "update", 0), via="party_1")
    stranger = ev.Outbox("job-1", "stranger", _member("stranger")[0])
    with pytest.raises(ev.UnknownSenderError, match="'stranger'"):
        inbox.open(stranger.seal("coord", "update", 0))


def test_relayed_envelopes_are_checked_end_to_end(members):
    """A party-to-party envelope relayed by the coordinator: the receiving party verifies the sending party's
    signature, so the relay can neither read-and-alter nor forge it unnoticed (encryption is the job layer's)."""
    out = ev.Outbox("job-1", "party_0", members["party_0"][0])
    inbox = ev.Inbox("job-1", "party_1", {"party_0": members["party_0"][1]})
    env = inbox.open(out.seal("party_1", "share", 0, {"s": np.arange(3, dtype=np.uint64)}))
    assert env.sender == "party_0" and _same(np.arange(3, dtype=np.uint64), env.payload["s"])


@pytest.mark.parametrize("wire", [b"", b"XXXX" + b"\0" * 80, b"PDE1\x07party_0" + b"\0" * 10])
def test_malformed_bytes_are_rejected_by_name(members, wire):
    _, inbox = _pair(members)
    with pytest.raises((ev.MalformedEnvelopeError, ev.TamperedMessageError)):
        inbox.open(wire)


def test_a_signed_but_inconsistent_frame_is_malformed(members):
    out, inbox = _pair(members)
    wire = out.seal("coord", "update", 0, {"x": np.arange(4.0)})
    lying = _resign(wire, members["party_0"][0], lambda h: h["arrays"][0].update(shape=[5]))
    with pytest.raises(ev.MalformedEnvelopeError, match="do not fit shape"):
        inbox.open(lying)
    pickled = _resign(wire, members["party_0"][0], lambda h: h["arrays"][0].update(dtype="|O"))
    with pytest.raises(ev.MalformedEnvelopeError, match="not allowed"):
        inbox.open(pickled)
