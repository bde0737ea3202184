from dataclasses import dataclass, replace

import numpy as np
import pytest

from privdist.algorithms import DPSGD, ConsensusADMM
from privdist.errors import CheckpointError, ShapeMismatchError, UnknownNameError
from privdist.network import ring
from privdist.runtime import Aggregation, AgentStreams, MessageSpec, Router, SimulatorBackend, Transcript, run, stream


@dataclass(frozen=True)
class _State:
    x: np.ndarray
    seen_mean: np.ndarray
    seen_row: np.ndarray


class CoordinatorAverage:
    """Toy algorithm with a coordinator: agents gather x, the coordinator broadcasts the mean and scatters
    each agent's deviation; agents move halfway to the mean."""

    name = "toy_coordinator"
    has_coordinator = True

    def params(self):
        return {}

    def assumptions(self):
        return []

    def messages(self, problem, network):
        return (MessageSpec("x", (2,), Aggregation.GATHER), MessageSpec("mean", (2,), Aggregation.BROADCAST),
                MessageSpec("dev", (2,), Aggregation.SCATTER))

    def init(self, problem, network, block, rng):
        x = np.stack([np.array([a, -a], dtype=float) for a in block.agents])
        return _State(x, np.zeros((block.size, 2)), np.zeros((block.size, 2))), {"x": x}

    def init_coordinator(self, problem, network, rng):
        K = network.n_agents
        return None, {"mean": np.zeros(2), "dev": np.zeros((K, 2))}

    def step(self, state, inbox, t, rng):
        x = state.x + 0.5 * (inbox["mean"] - state.x) if t > 1 else state.x
        return replace(state, x=x, seen_mean=np.array(inbox["mean"]), seen_row=np.array(inbox["dev"])), {"x": x}

    def step_coordinator(self, cstate, inbox, t, rng):
        xs = inbox["x"]
        return cstate, {"mean": xs.mean(axis=0), "dev": xs - xs.mean(axis=0)}

    def dp_events(self, state, t):
        return [None] * state.x.shape[0]

    def estimate(self, state):
        return state.x


class _P:
    n_agents = 4


def test_coordinator_gather_broadcast_scatter():
    net = ring(4)
    res = run(CoordinatorAverage(), _P(), net, 3, transcript="full")
    x0 = np.array([[a, -a] for a in range(4)], dtype=float)
    np.testing.assert_allclose(res.transcript.rounds[1][("coordinator", "mean")], x0.mean(0))
    np.testing.assert_allclose(res.final_state.seen_row, res.transcript.rounds[2][("coordinator", "dev")])
    split = run(CoordinatorAverage(), _P(), net, 3, transcript="full", backend=SimulatorBackend(blocks=2))
    assert split.transcript.digest == res.transcript.digest


def test_router_neighbor_sum_and_mix(net5):
    router = Router([MessageSpec("a", (1,), Aggregation.NEIGHBOR_SUM), MessageSpec("b", (1,), Aggregation.MIX)], net5)
    out = np.arange(5, dtype=float)[:, None]
    inbox = router.agent_inbox({"a": out, "b": out}, None, 1)
    expected = [sum(out[j, 0] for j in net5.neighbors(k)) for k in range(5)]
    np.testing.assert_allclose(inbox["a"][:, 0], expected)
    W = net5.metropolis_weights().toarray()
    np.testing.assert_allclose(inbox["b"][:, 0], W @ out[:, 0])
    np.testing.assert_allclose(inbox["b"].sum(), out.sum())  # doubly stochastic mixing preserves the sum


def test_wrong_outbox_shape_is_named(ridge_problem, net5):
    class Broken(ConsensusADMM):
        def step(self, state, inbox, t, rng):
            state, out = super().step(state, inbox, t, rng)
            return state, {"beta": out["beta"][:, :3]}

    with pytest.raises(ShapeMismatchError, match="round 1: message 'beta' has shape"):
        run(Broken(), ridge_problem, net5, 2)


def test_network_problem_size_mismatch(ridge_problem):
    with pytest.raises(ShapeMismatchError, match="network has 6 agents but the problem has 5"):
        run(ConsensusADMM(), ridge_problem, ring(6), 2)


def test_unknown_backend_and_transcript_mode(ridge_problem, net5):
    with pytest.raises(UnknownNameError, match="backend"):
        run(ConsensusADMM(), ridge_problem, net5, 2, backend="mpi")
    with pytest.raises(UnknownNameError, match="transcript mode"):
        Transcript("partial")


def test_streams_are_pure_functions_of_coordinates():
    a = AgentStreams(7, 2, [0, 3, 4], 5).normal((3,))
    b = AgentStreams(7, 2, [3], 5).normal((3,))
    np.testing.assert_array_equal(a[1], b[0])
    np.testing.assert_array_equal(a[2], stream(7, 2, 1, 4, 5).standard_normal(3))
    assert not np.allclose(a[0], AgentStreams(7, 2, [0], 6).normal((3,))[0])
    scaled = AgentStreams(7, 2, [0, 3, 4], 5).normal((3,), scale=np.array([0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(scaled[0], 0.0)
    np.testing.assert_allclose(scaled[2], 2 * a[2])


def test_checkpoint_resume_equals_uninterrupted_run(ridge_problem, net5, tmp_path):
    algo = DPSGD(alpha0=0.5, epsilon=0.5, delta=1e-3)
    full = run(algo, ridge_problem, net5, 20, seed=1, metrics={"m": lambda B: float(B.sum())})
    ck = tmp_path / "ck.pkl"
    run(algo, ridge_problem, net5, 12, seed=1, checkpoint=ck, checkpoint_every=4, metrics={"m": lambda B: float(B.sum())})
    resumed = run(algo, ridge_problem, net5, 20, seed=1, checkpoint=ck, resume=True,
                  metrics={"m": lambda B: float(B.sum())})
    assert resumed.transcript.digest == full.transcript.digest
    np.testing.assert_allclose(resumed.curves["m"], full.curves["m"])
    np.testing.assert_array_equal(resumed.estimates, full.estimates)
    assert resumed.ledger.n_releases(0) == 20
    with pytest.raises(CheckpointError, match="another run configuration"):
        run(DPSGD(alpha0=0.7), ridge_problem, net5, 20, seed=1, checkpoint=ck, resume=True)
    ck.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="cannot be read"):
        run(algo, ridge_problem, net5, 20, seed=1, checkpoint=ck, resume=True)


def test_keep_iterates_and_timings(ridge_problem, net5):
    res = run(ConsensusADMM(), ridge_problem, net5, 4, keep_iterates=True)
    assert res.iterates.shape == (5, 5, 10)
    np.testing.assert_array_equal(res.iterates[-1], res.estimates)
    assert res.timings["rounds"] > 0 and res.config["versions"]["privdist"]


def test_secure_mode_draws_unrecorded_fresh_noise():
    import numpy as np

    from privdist.algorithms import DPSGD
    from privdist.data import dzoa_regression, horizontal_partition
    from privdist.network import dzoa5
    from privdist.problems import L2, HorizontalERM, SquaredLoss
    from privdist.runtime import run

    ds = dzoa_regression(np.random.default_rng(0))
    problem = HorizontalERM(horizontal_partition(ds.X, ds.y, n_agents=5), SquaredLoss(), L2(), reg_weight=1.0)
    seeded = [run(DPSGD(), problem, dzoa5(), rounds=3, seed=4) for _ in range(2)]
    secure = [run(DPSGD(), problem, dzoa5(), rounds=3, seed=4, secure=True) for _ in range(2)]
    assert np.array_equal(seeded[0].estimates, seeded[1].estimates)
    assert seeded[0].config["noise"]["mode"] == "seeded" and "not for release" in seeded[0].config["noise"]["note"]
    assert secure[0].config["noise"]["mode"] == "secure"
    # fresh entropy: the two secure runs and the seeded run share no noise
    assert not np.allclose(secure[0].estimates, secure[1].estimates)
    assert not np.allclose(secure[0].estimates, seeded[0].estimates)
    # nothing recorded can regenerate the noise: the config holds no key (no 128-bit number) beyond the user's seed
    import re

    assert secure[0].config["seed"] == 4 and not re.search(r"\d{20,}", str(secure[0].config))
    assert secure[0].config["noise"]["keys"] == "one per party"
    with pytest.raises(TypeError):
        run(DPSGD(), problem, dzoa5(), rounds=1, secure="yes")
