"""Issue 38: the gRPC mutual-TLS transport (runtime/remote/transport) on 127.0.0.1, with certificates made here.

A coordinator and three parties as separate OS processes exchange arrays both ways, checked bit for bit; in one
process: a party whose certificate the CA did not sign is refused, a party that does not trust the coordinator's CA
(or finds another name on its certificate) refuses it, the roster and the job are enforced, a silent party is a
named timeout, a party that leaves is a named disconnection, and a tampered envelope on a live link is named.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from privdist.runtime.remote import pki
from privdist.runtime.remote.envelope import TamperedMessageError, WrongJobError
from privdist.runtime.remote.transport import (CoordinatorServer, HandshakeError, PartyClient, PeerDisconnectedError,
                                               PeerRefusedError, PeerTimeoutError, UnexpectedMessageError)

pytest.importorskip("grpc")

HERE = Path(__file__).resolve().parent
SRC = Path(pki.__file__).resolve().parents[3]
PARTIES = ["party_0", "party_1", "party_2"]
BOUND = 120  # seconds: a guard against a hung process, not a measurement


def _provision(root: Path, ca: str = "ca", names=PARTIES, coordinator: str = "coord") -> Path:
    if not (root / ca / "ca.crt").exists():
        pki.init_ca(root / ca, f"consortium-{ca}")
    if coordinator and not (root / coordinator).exists():
        pki.make_request(coordinator, root / coordinator, server_hosts=["127.0.0.1", "localhost"])
        pki.sign_request(root / coordinator / f"{coordinator}.csr", root / ca, role="coordinator")
    for name in names:
        pki.make_request(name, root / name)
        pki.sign_request(root / name / f"{name}.csr", root / ca)
    return root


def _ident(root: Path, name: str, role: str = "party", ca: str = "ca") -> pki.Identity:
    return pki.Identity.load(root / name / f"{name}.key", root / name / f"{name}.crt", root / ca / "ca.crt", role)


@pytest.fixture(scope="module")
def consortium(tmp_path_factory):
    return _provision(tmp_path_factory.mktemp("consortium"))


@pytest.fixture
def server(consortium):
    with CoordinatorServer(_ident(consortium, "coord", "coordinator"), "job-1", PARTIES, timeout=30) as srv:
        yield srv


def _link(consortium, server, name="party_0", **kw) -> PartyClient:
    kw.setdefault("timeout", 30)
    return PartyClient(_ident(consortium, name), server.address, kw.pop("coordinator", "coord"), **kw)


def _lines(proc: subprocess.Popen) -> "queue.Queue[str]":
    q: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stdout:
            q.put(line)
        q.put("")

    threading.Thread(target=pump, daemon=True).start()
    return q


def test_coordinator_and_three_parties_as_processes_exchange_arrays_bit_exactly(consortium):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    worker = [sys.executable, str(HERE / "remote_worker.py")]
    procs = []
    try:
        coord = subprocess.Popen(worker + ["coordinator", str(consortium), "job-7", "3", *PARTIES], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(coord)
        out = _lines(coord)
        first = out.get(timeout=BOUND)
        assert first.startswith("PORT "), (first, coord.stderr.read() if coord.poll() is not None else "")
        port = first.split()[1]
        procs += [subprocess.Popen(worker + ["party", str(consortium), name, port, "3"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in PARTIES]
        results = []
        for proc in procs[1:]:
            stdout, stderr = proc.communicate(timeout=BOUND)
            assert proc.returncode == 0, (stdout[-3000:], stderr[-3000:])
            results.append(json.loads(stdout.strip().splitlines()[-1]))
        coord.wait(timeout=BOUND)
        assert coord.returncode == 0, coord.stderr.read()[-3000:]
        summary = json.loads(out.get(timeout=BOUND))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert summary == {"role": "coordinator", "checked": 9, "bad": []}
    assert sorted(r["name"] for r in results) == PARTIES
    assert all(r["bad"] == [] and r["checked"] == 3 and r["job"] == "job-7" for r in results)


def test_a_party_whose_certificate_the_ca_did_not_sign_is_refused(consortium, server):
    rogue_root = _provision(consortium / "rogue", ca="rogue-ca", names=["party_0"], coordinator="")
    rogue = dataclasses.replace(_ident(rogue_root, "party_0", ca="rogue-ca"),
                                ca_cert=pki.load_certificate(consortium / "ca" / "ca.crt"))  # trusts the real CA
    with pytest.raises(HandshakeError, match="no mutually authenticated connection"):
        PartyClient(rogue, server.address, "coord", timeout=30).connect()
    assert server.joined() == []


def test_a_party_that_does_not_trust_the_coordinators_ca_refuses_it(consortium, server):
    other = consortium / "other"
    pki.init_ca(other / "ca", "another-consortium")
    wary = dataclasses.replace(_ident(consortium, "party_1"), ca_cert=pki.load_certificate(other / "ca" / "ca.crt"))
    with pytest.raises(HandshakeError, match="CERTIFICATE_VERIFY_FAILED"):
        PartyClient(wary, server.address, "coord", timeout=30).connect()
    with pytest.raises(HandshakeError, match="(?i)hostname|name"):  # the right CA, but not the expected name
        _link(consortium, server, coordinator="another_coord").connect()
    assert server.joined() == []


def test_the_roster_the_job_and_a_second_join_are_enforced(consortium, server):
    _provision(consortium, names=["party_9"], coordinator="")
    with pytest.raises(PeerRefusedError, match="'party_9' is not a party of job 'job-1'"):
        _link(consortium, server, "party_9").connect()
    with pytest.raises(WrongJobError, match="this is job 'job-2'"):
        _link(consortium, server, job="job-2").connect()
    with _link(consortium, server, "party_0") as link:  # a refused attempt did not use up the party's place
        assert link.job == "job-1"
        assert server.wait_for_parties(["party_0"]) == ["party_0"]
        with pytest.raises(PeerRefusedError, match="already joined"):
            _link(consortium, server, "party_0").connect()


def test_a_silent_party_is_a_named_timeout_and_a_party_that_leaves_a_named_disconnection(consortium, server):
    link = _link(consortium, server, "party_1").connect()
    server.wait_for_parties(["party_1"])
    with pytest.raises(PeerTimeoutError, match="party 'party_1' sent nothing \\(update, round 0\\)"):
        server.recv("party_1", "update", 0, timeout=0.2)
    with pytest.raises(PeerTimeoutError, match="'party_2'"):  # never joined
        server.wait_for_parties(["party_2"], timeout=0.2)
    link.send("update", 0, {"x": np.arange(3)})
    received, dropped = server.gather("update", 0, ["party_1", "party_2"], timeout=3)  # one deadline for both
    assert list(received) == ["party_1"] and list(dropped) == ["party_2"]
    assert isinstance(dropped["party_2"], PeerTimeoutError)
    link.close()
    with pytest.raises(PeerDisconnectedError, match="'party_1'"):
        server.recv("party_1", timeout=30)
    with pytest.raises(PeerDisconnectedError):
        server.send("party_1", "model", 1, {})


def test_messages_of_another_kind_and_a_closed_coordinator_are_named(consortium, server):
    link = _link(consortium, server, "party_2").connect()
    server.wait_for_parties(["party_2"])
    server.send("party_2", "model", 0, {"w": np.ones(2)})
    with pytest.raises(UnexpectedMessageError, match="sent 'model' for round 0, expected 'plan'"):
        link.recv("plan", 0)
    server.close()
    with pytest.raises(PeerDisconnectedError):
        link.recv(timeout=30)
    link.close()


def test_a_tampered_envelope_on_a_live_link_is_named_and_the_link_survives(consortium, server):
    link = _link(consortium, server, "party_0").connect()
    server.wait_for_parties(["party_0"])
    wire = bytearray(link._outbox.seal("coord", "update", 0, {"x": np.arange(4.0)}))
    wire[-80] ^= 0x01
    link._outgoing.put(bytes(wire))  # what a meddler between the processes would deliver, were TLS broken
    with pytest.raises(TamperedMessageError):
        server.recv("party_0", timeout=30)
    link._outbox._next["coord"] -= 1  # the genuine envelope takes the same number
    link.send("update", 0, {"x": np.arange(4.0)})
    env = server.recv("party_0", "update", 0, timeout=30)
    assert env.payload["x"].tobytes() == np.arange(4.0).tobytes()
    link.close()


def test_a_second_coordinator_on_a_port_in_use_is_refused_by_name(consortium, server):
    """gRPC shares a port between servers by default (SO_REUSEPORT): a second coordinator on the first one's port
    listened too, and the parties dialling it were spread over both jobs. It is now a named error, as are a port out
    of range and a host that is not this machine's."""
    from privdist.errors import ValidationError
    from privdist.runtime.remote.transport import TransportError

    coord = _ident(consortium, "coord", "coordinator")
    with pytest.raises(TransportError, match="cannot listen on 127.0.0.1:.*in use"):
        CoordinatorServer(coord, "job-2", PARTIES, port=server.port, timeout=5).start()
    with pytest.raises(ValidationError, match=r"port must be in \[0, 65535\].*99999"):
        CoordinatorServer(coord, "job-2", PARTIES, port=99999, timeout=5).start()
    with pytest.raises(TransportError, match="cannot listen on 192.0.2.1"):
        CoordinatorServer(coord, "job-2", PARTIES, host="192.0.2.1", timeout=5).start()
