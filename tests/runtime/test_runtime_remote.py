"""Issue 38: parties in their own processes. A seeded run whose parties are separate OS processes (pipes, the wire
format: data only) gives the simulator's transcript, secure aggregation included; a party that dies is survived as a
dropout of the secure sums; the wire format admits data only and names what it refuses."""

import numpy as np
import pytest

from privdist import run
from privdist.algorithms.dpmm import DPMM
from privdist.network import complete
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.runtime import HorizontalParties
from privdist.runtime.remote import (LinkLostError, LocalLink, RemoteBackend, RemoteCallError, RemoteParty,
                                     WireFormatError, decode, encode, spawn_party)

K, P, ROUNDS = 3, 4, 6


def _rows(k: int):
    rng = np.random.default_rng(100 + k)
    X = rng.normal(size=(40 + 5 * k, P)) / 3
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.1 * rng.normal(size=X.shape[0]) > 0, 1.0, -1.0)
    return X, y


def _algorithm(trust="secure_aggregation"):
    return DPMM(epsilon=1.0, delta=1e-5, trust=trust, row_bound=2.0, rounds=ROUNDS)


def _handle(paths):
    # public facts: the feature count and the largest party's row count (the secure sums' modulus rests on it)
    return HorizontalParties(paths, make_loss("logistic"), make_regularizer("l2"), 1e-3, n_features=P,
                             public={"max_party_rows": 40 + 5 * (K - 1)})


def _party(k: int, path: str, trust: str = "secure_aggregation", die_at: int | None = None):
    """What a party process builds for itself: its algorithm from installed code, its problem from its own file
    (the other parties' sources are names it never resolves)."""
    paths = [path if j == k else f"held-by-party-{j}.npz" for j in range(K)]
    on_release = None
    if die_at is not None:
        def on_release(t, releases):
            if t == die_at:
                import os

                os._exit(1)  # the process dies before round die_at's outbox leaves
    return RemoteParty(_algorithm(trust), _handle(paths), complete(K), k, on_release=on_release)


@pytest.fixture()
def files(tmp_path):
    paths = []
    for k in range(K):
        X, y = _rows(k)
        np.savez(tmp_path / f"party{k}.npz", X=X, y=y)
        paths.append(str(tmp_path / f"party{k}.npz"))
    return paths


def _simulated(files, trust):
    problem = HorizontalERM([_rows(k) for k in range(K)], make_loss("logistic"), make_regularizer("l2"), 1e-3)
    return run(_algorithm(trust), problem, complete(K), ROUNDS, seed=7)


def _coordinator_problem():
    return _handle([f"held-by-party-{j}.npz" for j in range(K)])  # public facts only: the coordinator holds no rows


@pytest.mark.parametrize("trust", ["secure_aggregation", "local"])
def test_local_links_give_the_simulators_transcript(files, trust):
    """... and a party sends only what the algorithm's public schedule sends (dpmm's Gram in round 1 only, nothing
    in the last round): the messages it declares silent hold zeros and never cross the wire (issue 41)."""
    sent = []

    class Watched(LocalLink):
        def call(self, method, args):
            answer = super().call(method, args)
            if method == "step":
                sent.append((int(args["t"]), sorted(answer["out"])))
            return answer

    links = [Watched(_party(k, files[k], trust)) for k in range(K)]
    remote = run(_algorithm(trust), _coordinator_problem(), complete(K), ROUNDS, seed=7,
                 backend=RemoteBackend(links))
    sim = _simulated(files, trust)
    assert remote.transcript.digest == sim.transcript.digest
    np.testing.assert_array_equal(remote.estimates, sim.estimates)
    assert all(remote.ledger.entries(k) == sim.ledger.entries(k) for k in range(K))
    assert remote.final_state is None  # the parties' states never leave them
    algo = _algorithm(trust)
    names = {n for _, out in sent for n in out}
    assert "h" in names
    for t, out in sent:
        assert out == sorted(n for n in names if not algo.silent(n, t)), (t, out)
    assert all(out == [] for t, out in sent if t == ROUNDS) and all("h" not in out for t, out in sent if t > 1)


def test_local_links_give_the_simulators_transcript_with_the_sparse_graph(files):
    """recovery='sparse' (issue 41): each party draws its round keys, splits its seeds among its neighbours and
    derives its own pair keys; the coordinator forwards the shares; the transcript is the simulator's."""
    algo = DPMM(epsilon=1.0, delta=1e-5, trust="secure_aggregation", row_bound=2.0, rounds=ROUNDS, recovery="sparse")
    links = [LocalLink(RemoteParty(algo, _handle([files[k] if j == k else f"held-by-party-{j}.npz" for j in range(K)]),
                                   complete(K), k)) for k in range(K)]
    remote = run(algo, _coordinator_problem(), complete(K), ROUNDS, seed=7, backend=RemoteBackend(links))
    problem = HorizontalERM([_rows(k) for k in range(K)], make_loss("logistic"), make_regularizer("l2"), 1e-3)
    sim = run(algo, problem, complete(K), ROUNDS, seed=7)
    assert remote.transcript.digest == sim.transcript.digest
    np.testing.assert_array_equal(remote.estimates, sim.estimates)
    assert remote.config["secure_aggregation"]["recovery"] == "sparse"


def test_party_processes_give_the_simulators_transcript(files):
    started = [spawn_party(_party, k, files[k]) for k in range(K)]
    try:
        remote = run(_algorithm(), _coordinator_problem(), complete(K), ROUNDS, seed=7,
                     backend=RemoteBackend([link for _, link in started]))
    finally:
        for proc, _ in started:
            proc.join(timeout=60)
    sim = _simulated(files, "secure_aggregation")
    assert remote.transcript.digest == sim.transcript.digest
    np.testing.assert_array_equal(remote.estimates, sim.estimates)
    assert all(proc.exitcode == 0 for proc, _ in started)  # each party ended on the coordinator's close


def test_a_party_process_that_dies_is_a_dropout_of_the_secure_sums(files):
    started = [spawn_party(_party, k, files[k], "secure_aggregation", 3 if k == 2 else None) for k in range(K)]
    try:
        res = run(_algorithm(), _coordinator_problem(), complete(K), ROUNDS, seed=7,
                  backend=RemoteBackend([link for _, link in started]))
    finally:
        for proc, _ in started:
            proc.join(timeout=60)
    assert started[2][0].exitcode == 1
    rounds = res.config["secure_aggregation"]["rounds"]
    assert [r["present"] for r in rounds[:2]] == [3, 3] and all(r["present"] == 2 for r in rounds[2:ROUNDS - 1])
    assert res.config["remote"]["lost_parties"] == {2: 3}
    # party 2's ledger holds exactly the rounds it released (1 and 2); the others every round
    assert res.ledger.n_releases(2) == 2 and res.ledger.n_releases(0) == ROUNDS - 1
    assert np.all(np.isfinite(res.estimates))


def test_without_secure_sums_a_lost_party_ends_the_run(files):
    from privdist.runtime.ray_common import AgentFailedError

    class Dead:
        def call(self, method, args):
            raise LinkLostError("gone")

    links = [LocalLink(_party(k, files[k], "local")) for k in range(K - 1)] + [Dead()]
    with pytest.raises(AgentFailedError):
        run(_algorithm("local"), _coordinator_problem(), complete(K), ROUNDS, seed=7, backend=RemoteBackend(links))


def test_a_party_answers_only_its_calls(files):
    party = _party(0, files[0])
    with pytest.raises(RemoteCallError, match="unknown call"):
        party.handle("__import__", {})
    with pytest.raises(RemoteCallError, match="before init"):
        party.handle("step", {"t": 1, "inbox": {}})


def test_the_wire_carries_data_only():
    value = {"a": np.arange(6, dtype=np.int64).reshape(2, 3), "b": (1, 2.5, float("inf")), "c": [True, None, "x"],
             "d": np.array([1.5, -2.0], dtype=np.float32), "u": np.array([2**64 - 1], dtype=np.uint64)}
    back = decode(encode(value))
    assert back["b"] == (1, 2.5, float("inf")) and back["c"] == [True, None, "x"]
    for key in ("a", "d", "u"):
        np.testing.assert_array_equal(back[key], value[key])
        assert back[key].dtype == value[key].dtype and back[key].flags.writeable
    for bad in (np.array([object()]), {1: 2}, {"__nd__": 0}, lambda: 0, object()):
        with pytest.raises(WireFormatError):
            encode(bad)
    data = encode({"a": np.arange(10)})
    for broken in (data[:-3], b"XXXX" + data[4:], data[:6], b"PDW1\x05\x00\x00\x00{bad}"):
        with pytest.raises(WireFormatError):
            decode(broken)
