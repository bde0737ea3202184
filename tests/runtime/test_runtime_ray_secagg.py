"""Issue 27 on Ray: each actor masks its agents' secure messages with secrets drawn in the actor, and the same seed
gives the same transcript as the simulator (masked vectors, answers and the sums), with dropouts too."""

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from conftest import make_logistic_problem, make_vertical_problem  # noqa: E402
from privdist.algorithms import make_algorithm  # noqa: E402
from privdist.network import make_network  # noqa: E402
from privdist.privacy import privacy_report  # noqa: E402
from privdist.runtime import SimulatorBackend, run  # noqa: E402
from privdist.runtime.ray_backend import RayBackend  # noqa: E402
from privdist.runtime.secure.secure_round import Dropout  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray(ray_session):  # one local Ray for all Ray test modules (tests/conftest.py)
    yield


def _same_on_ray(algo, problem, n, rounds, seed, dropout, actors):
    """The simulator's run, after checking that Ray (``actors`` actors) gives the same transcript, secure-sum
    records and estimates from the same seed."""
    net = make_network("complete", n=n)
    kw = dict(seed=seed, transcript="full", dropout=dropout)
    sim = run(algo, problem, net, rounds, backend=SimulatorBackend(), **kw)
    on_ray = run(algo, problem, net, rounds, backend=RayBackend(actors=actors), **kw)
    assert sim.transcript.digest == on_ray.transcript.digest
    assert sim.config["secure_aggregation"]["rounds"] == on_ray.config["secure_aggregation"]["rounds"]
    np.testing.assert_array_equal(sim.estimates, on_ray.estimates)
    return sim, on_ray


def test_the_same_seed_gives_the_same_transcript_on_ray_and_the_simulator():
    K = 6
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", dropout_tolerance=0.2)
    sim, on_ray = _same_on_ray(algo, make_logistic_problem(K), K, 5, 5, Dropout(0.15, after_send=0.1), 3)
    assert privacy_report(sim.ledger, 1e-5) == privacy_report(on_ray.ledger, 1e-5)
    assert any(r["attempts"] > 1 or r["present"] < K for r in sim.config["secure_aggregation"]["rounds"])


def test_threshold_recovery_gives_the_same_transcript_on_ray_and_the_simulator():
    """recovery='shamir': each actor draws its agents' round seeds and shares, the driver forwards the encrypted
    shares and rebuilds the seeds of the parties that failed; the same seed gives the same transcript."""
    K = 6
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", dropout_tolerance=0.2,
                          recovery="shamir", threshold=2)
    sim, _ = _same_on_ray(algo, make_logistic_problem(K), K, 4, 5, Dropout(0.15, after_send=0.15), 3)
    rounds = sim.config["secure_aggregation"]["rounds"][:-1]
    assert all(r["attempts"] == 1 for r in rounds) and any(r["recovered"]["unanswered"] for r in rounds)


def test_the_sparse_graph_gives_the_same_transcript_on_ray_and_the_simulator():
    """recovery='sparse' (issue 41): each actor draws its agents' round seeds and commitments, agrees its pair
    secrets and shares among the neighbours of the graph drawn from the announced commitments, the driver forwards the
    shares neighbour to neighbour and rebuilds the seeds of the parties that failed; the same seed gives the same
    transcript (commitments, shares, masked vectors, both reveals, rebuilt seeds) on Ray and on the simulator."""
    K = 12
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", dropout_tolerance=0.25,
                          recovery="sparse")
    sim, _ = _same_on_ray(algo, make_logistic_problem(K), K, 4, 5, Dropout(0.1, after_send=0.1), 3)
    rounds = sim.config["secure_aggregation"]["rounds"][:-1]
    assert all(r["attempts"] == 1 for r in rounds) and any(r["present"] < K for r in rounds)


@pytest.mark.parametrize("name", ["dpsgd", "admm_sharing"])
def test_the_star_and_sharing_give_the_same_transcript_on_ray_and_the_simulator(name):
    """DPSGD's federated averaging over a star and ADMM sharing's coordinator sum under secure aggregation."""
    K = 5
    if name == "dpsgd":
        problem = make_logistic_problem(K)
        algo = make_algorithm("dpsgd", alpha0=5.0, epsilon=1.0, delta=1e-5, budget="total",
                              trust="secure_aggregation", dropout_tolerance=0.2)
    else:
        problem = make_vertical_problem(0, n_parties=K, n_samples=40)
        algo = make_algorithm("admm_sharing", mode="output", epsilon=1.0, delta=1e-5, b1=3.0, budget="total",
                              trust="secure_aggregation", dropout_tolerance=0.2)
    sim, on_ray = _same_on_ray(algo, problem, K, 4, 3, Dropout(0.15, after_send=0.1), 2)
    assert privacy_report(sim.ledger, 1e-5) == privacy_report(on_ray.ledger, 1e-5)


def test_secure_mode_on_ray_draws_the_secrets_in_the_actors():
    K = 4
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation")
    problem, net = make_logistic_problem(K), make_network("complete", n=K)
    a, b = (run(algo, problem, net, 3, seed=1, secure=True, backend=RayBackend(actors=2)) for _ in range(2))
    assert a.transcript.digest != b.transcript.digest
    assert np.all(np.isfinite(a.estimates))


@pytest.mark.parametrize("recovery", ["retry", "shamir"])
def test_a_party_whose_actor_dies_mid_run_drops_out_and_the_run_completes(recovery):
    """Agent 3's actor is killed after round 2: from round 3 on it is in no sum (recorded), the others' guarantee is
    recomputed without its share, and its own ledger holds its rounds 1 and 2 only."""
    import os
    import signal

    K = 5
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", dropout_tolerance=0.2,
                          recovery=recovery)
    problem, net = make_logistic_problem(K), make_network("complete", n=K)
    be = RayBackend(actors=K)  # one actor per party

    def killer(est, calls=[]):  # metrics run in the driver after init (call 0) and after every round
        calls.append(1)
        if len(calls) == 3:  # after round 2
            os.kill(be.actor_pids()[3], signal.SIGKILL)
        return 0.0

    res = run(algo, problem, net, 5, seed=2, backend=be, metrics={"kill": killer})
    assert res.config["lost_agents"] == {3: 3}
    rounds = res.config["secure_aggregation"]["rounds"]
    assert [r["absent"] for r in rounds[:4]] == [[], [], [3], [3]]
    assert sum(c for _, c in res.ledger.entries(3)) == 2 and sum(c for _, c in res.ledger.entries(0)) == 4
    assert np.all(np.isfinite(res.estimates))
    report = privacy_report(res.ledger, 1e-5)
    assert report["per_agent"][0]["guaranteed"] and report["per_agent"][0]["epsilon"]["rdp"] <= 1.0 + 1e-9
