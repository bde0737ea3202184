"""A coordinator or a party as its own OS process, for tests/runtime/test_remote_transport.py (not a test module).

    python remote_worker.py coordinator DIR JOB ROUNDS PARTY...   # prints "PORT <n>", then one JSON line
    python remote_worker.py party DIR NAME PORT ROUNDS            # prints one JSON line

DIR holds ``ca/ca.crt`` and ``NAME/NAME.key``, ``NAME/NAME.crt`` for every member (made by the test). In each
round the coordinator sends every party the arrays ``payload("down", round, party)`` and the party answers with
``payload("up", round, party)``; each side checks what it received bit for bit (dtype, shape and bytes).
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path

import numpy as np

from privdist.runtime.remote.pki import Identity
from privdist.runtime.remote.transport import CoordinatorServer, PartyClient

TIMEOUT = 60.0


def payload(direction: str, round: int, party: str) -> dict:
    rng = np.random.default_rng(zlib.crc32(f"{direction}/{round}/{party}".encode()))
    nan = np.array([0x7FF8_0000_0000_0000 + round + 1], dtype=np.uint64).view(np.float64)  # NaN with payload bits
    return {
        "w": np.concatenate([nan, [-0.0, np.inf, 5e-324], rng.normal(size=1000)]),
        "g": rng.normal(size=(7, 3)).astype(np.float32),
        "mask": rng.integers(0, 2**63, size=(2, 5), dtype=np.uint64),
        "counts": rng.integers(-5, 5, size=4),
        "alive": rng.random(3) < 0.5,
        "t": np.array(round),
        "round": round,
        "party": party,
    }


def mismatches(got: dict, want: dict) -> list[str]:
    bad = [k for k in want if k not in got]
    for k, w in want.items():
        g = got.get(k)
        if isinstance(w, np.ndarray):
            if not (isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape
                    and g.tobytes() == w.tobytes()):
                bad.append(k)
        elif g != w:
            bad.append(k)
    return bad


def _identity(folder: Path, name: str, role: str) -> Identity:
    return Identity.load(folder / name / f"{name}.key", folder / name / f"{name}.crt", folder / "ca" / "ca.crt", role)


def coordinator(folder: Path, job: str, rounds: int, parties: list[str]) -> dict:
    with CoordinatorServer(_identity(folder, "coord", "coordinator"), job, parties, timeout=TIMEOUT) as server:
        print(f"PORT {server.port}", flush=True)
        server.wait_for_parties()
        bad, checked = [], 0
        for r in range(rounds):
            for p in parties:
                server.send(p, "model", r, payload("down", r, p))
            received, dropped = server.gather("update", r)
            bad += [f"{p} dropped: {e}" for p, e in dropped.items()]
            for p, env in received.items():
                bad += [f"round {r} from {p}: {k}" for k in mismatches(env.payload, payload("up", r, p))]
                checked += 1
        for p in parties:
            server.send(p, "done", rounds)
        for p in parties:  # each party says goodbye before the server closes (nothing is cut off)
            server.recv(p, "bye", rounds)
    return {"role": "coordinator", "checked": checked, "bad": bad}


def party(folder: Path, name: str, port: int, rounds: int) -> dict:
    bad = []
    with PartyClient(_identity(folder, name, "party"), f"127.0.0.1:{port}", "coord", timeout=TIMEOUT) as link:
        for r in range(rounds):
            env = link.recv("model", r)
            bad += [f"round {r}: {k}" for k in mismatches(env.payload, payload("down", r, name))]
            link.send("update", r, payload("up", r, name))
        link.recv("done", rounds)
        link.send("bye", rounds)
        job = link.job
    return {"role": "party", "name": name, "job": job, "checked": rounds, "bad": bad}


if __name__ == "__main__":
    role, folder = sys.argv[1], Path(sys.argv[2])
    if role == "coordinator":
        result = coordinator(folder, sys.argv[3], int(sys.argv[4]), sys.argv[5:])
    else:
        result = party(folder, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    print(json.dumps(result), flush=True)
    sys.exit(1 if result["bad"] else 0)
