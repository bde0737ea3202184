"""Ray backend = simulator, message by message (issue 7 "Equivalence"), for every registered algorithm.

The test is parametrised over the algorithm registry and over problem/network fixtures: an algorithm is run on
every fixture its default constructor accepts (the simulator decides), so algorithms registered later are
covered without editing this file. One local Ray (2 CPUs) serves all Ray test modules
(``ray_session`` in tests/conftest.py).
"""

import sys
from dataclasses import dataclass, replace

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import conftest  # noqa: E402
from conftest import make_dzoa_problem  # noqa: E402

from privdist.algorithms import ALGORITHMS, make_algorithm  # noqa: E402
from privdist.data import dzoa_regression, horizontal_partition  # noqa: E402
from privdist.errors import PrivdistError  # noqa: E402
from privdist.network import TimeVaryingNetwork, dzoa5, ring, s4_matrices  # noqa: E402
from privdist.privacy import privacy_report  # noqa: E402
from privdist.problems import HorizontalERM, make_loss, make_regularizer  # noqa: E402
from privdist.runtime import Aggregation, MessageSpec, SimulatorBackend, run  # noqa: E402
from privdist.runtime.ray_backend import RayBackend  # noqa: E402

ROUNDS = 6


def _six_agent_ridge():
    ds = dzoa_regression(np.random.default_rng(1))
    parts = horizontal_partition(ds.X, ds.y, n_agents=6)
    return HorizontalERM(parts, make_loss("squared"), make_regularizer("l2"), 1.0)


# name -> () -> (problem, network). Add a fixture here when an algorithm needs another problem kind.
SETUPS = {
    "ridge-dzoa5": lambda: (make_dzoa_problem(0, "l2"), dzoa5()),
    "lasso-dzoa5": lambda: (make_dzoa_problem(0, "l1"), dzoa5()),
    "logistic-dzoa5": lambda: (make_dzoa_problem(0, "l2", "logistic"), dzoa5()),
    "ridge-ring6-timevarying": lambda: (_six_agent_ridge(), TimeVaryingNetwork(s4_matrices(), schedule="cyclic")),
}
if hasattr(conftest, "make_vertical_problem"):  # vertical (S2) problems: parties hold columns
    SETUPS["vertical-logistic-dzoa5"] = lambda: (conftest.make_vertical_problem(0), dzoa5())


@pytest.fixture(scope="module", autouse=True)
def local_ray(ray_session):  # one local Ray for all Ray test modules (tests/conftest.py)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the toy algorithm below runs on actors
    yield


def _simulate(algo, problem, network, blocks=1, **kw):
    """The simulator's run, or None when the algorithm does not accept this fixture."""
    try:
        return run(algo, problem, network, ROUNDS, seed=7, trial=1, transcript="full",
                   backend=SimulatorBackend(blocks=blocks), **kw)
    except (PrivdistError, TypeError, ValueError, AttributeError, KeyError):
        return None


def _rel(a, b):
    """Relative difference of two messages (norm-wise, per sender row when there is a sender axis)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    a2, b2 = (a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)) if a.ndim > 1 else (a[None], b[None])
    num, den = np.linalg.norm(a2 - b2, axis=1), np.linalg.norm(b2, axis=1)
    return float(np.max(np.where(den > 0, num / np.where(den > 0, den, 1), num)))


def assert_same_run(ref, got, elementwise: bool = True):
    """Every message of every round equal to 1e-9 relative (elementwise, or per message vector when the two
    runs split the agents differently: local iterative solvers then stop per block, AMB-free rounding);
    same estimates, curves and releases."""
    assert sorted(ref.transcript.rounds) == sorted(got.transcript.rounds)
    for t, msgs in ref.transcript.rounds.items():
        assert set(msgs) == set(got.transcript.rounds[t]), f"round {t}"
        for key, arr in msgs.items():
            if elementwise:
                np.testing.assert_allclose(got.transcript.rounds[t][key], arr, rtol=1e-9, atol=0,
                                           err_msg=f"round {t} message {key}")
            else:
                assert _rel(got.transcript.rounds[t][key], arr) <= 1e-9, f"round {t} message {key}"
    if elementwise:
        np.testing.assert_allclose(got.estimates, ref.estimates, rtol=1e-9, atol=0)
        for name, curve in ref.curves.items():
            np.testing.assert_allclose(got.curves[name], curve, rtol=1e-9, atol=0)
    else:
        assert _rel(got.estimates, ref.estimates) <= 1e-9
    a, b = privacy_report(ref.ledger, 1e-3), privacy_report(got.ledger, 1e-3)
    assert a["per_agent"] == b["per_agent"]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_ray_transcript_equals_simulator(name):
    """On every fixture the algorithm accepts: Ray (2 actors) = simulator with the same 2 blocks, exactly,
    and = the simulator's default single block to 1e-9 per message."""
    algo = make_algorithm(name, **({"R": 9.0} if name == "dzoa" else {}))  # public R (issue 12)
    metrics = {"norm": lambda B: float(np.linalg.norm(B))}
    covered = []
    for setup, build in SETUPS.items():
        problem, network = build()
        ref = _simulate(algo, problem, network, metrics=metrics)
        if ref is None:
            continue
        got = run(algo, problem, network, ROUNDS, seed=7, trial=1, transcript="full", metrics=metrics,
                  backend=RayBackend(actors=2))
        assert got.config["backend"] == "ray"
        assert_same_run(_simulate(algo, problem, network, blocks=2, metrics=metrics), got)  # same split: exact
        assert_same_run(ref, got, elementwise=False)  # all agents in one block
        covered.append(setup)
    if not covered:
        pytest.skip(f"no fixture of SETUPS builds a problem {name} accepts: its Ray equivalence is NOT tested")


def test_one_actor_per_agent_and_backend_by_name():
    problem, network = SETUPS["ridge-dzoa5"]()
    algo = make_algorithm("dpsgd")
    ref = _simulate(algo, problem, network)
    assert_same_run(ref, run(algo, problem, network, ROUNDS, seed=7, trial=1, transcript="full",
                             backend=RayBackend(actors=5)))
    assert_same_run(ref, run(algo, problem, network, ROUNDS, seed=7, trial=1, transcript="full", backend="ray"))


# ----------------------------------------------------------------------------- coordinator roles
@dataclass(frozen=True)
class _State:
    x: np.ndarray


class ToyCoordinator:
    """Agents gather x (with noise from their streams); the coordinator broadcasts a noisy mean and scatters
    deviations; agents mix their neighbours' x and move towards the mean."""

    name = "toy_coordinator_ray"
    has_coordinator = True

    def params(self):
        return {}

    def assumptions(self):
        return []

    def messages(self, problem, network):
        return (MessageSpec("x", (2,), Aggregation.GATHER), MessageSpec("y", (2,), Aggregation.MIX),
                MessageSpec("mean", (2,), Aggregation.BROADCAST), MessageSpec("dev", (2,), Aggregation.SCATTER))

    def init(self, problem, network, block, rng):
        x = np.stack([np.array([a, -a], dtype=float) for a in block.agents])
        return _State(x), {"x": x, "y": x}

    def init_coordinator(self, problem, network, rng):
        return 0, {"mean": np.zeros(2), "dev": np.zeros((network.n_agents, 2))}

    def step(self, state, inbox, t, rng):
        x = 0.5 * inbox["y"] + 0.3 * inbox["mean"] - 0.1 * inbox["dev"] + rng.normal((2,), scale=0.01)
        return replace(state, x=x), {"x": x, "y": x}

    def step_coordinator(self, cstate, inbox, t, rng):
        xs = inbox["x"]
        mean = xs.mean(axis=0) + rng.normal((2,), scale=0.01)[0]
        return cstate + 1, {"mean": mean, "dev": xs - mean}

    def dp_events(self, state, t):
        return [None] * state.x.shape[0]

    def estimate(self, state):
        return state.x


class _P:
    n_agents = 5


@pytest.mark.parametrize("actors", [1, 2, 5])
def test_coordinator_actor_gather_broadcast_scatter_mix(actors):
    ref = run(ToyCoordinator(), _P(), ring(5), ROUNDS, seed=2, transcript="full")
    got = run(ToyCoordinator(), _P(), ring(5), ROUNDS, seed=2, transcript="full", backend=RayBackend(actors=actors))
    assert_same_run(ref, got)
    assert got.final_coordinator_state == ROUNDS
    split = run(ToyCoordinator(), _P(), ring(5), ROUNDS, seed=2, transcript="full", backend=SimulatorBackend(blocks=2))
    assert_same_run(split, got)


def test_checkpoint_resume_on_ray_continues_the_same_run(tmp_path):
    from privdist.errors import CheckpointError

    problem, network = SETUPS["ridge-dzoa5"]()
    algo = make_algorithm("dpsgd")
    ckpt = tmp_path / "run.ckpt"
    run(algo, problem, network, 3, seed=7, trial=1, backend=RayBackend(actors=2), checkpoint=ckpt)
    resumed = run(algo, problem, network, ROUNDS, seed=7, trial=1, backend=RayBackend(actors=2),
                  checkpoint=ckpt, resume=True)
    whole = run(algo, problem, network, ROUNDS, seed=7, trial=1, backend=SimulatorBackend(blocks=2))
    np.testing.assert_allclose(resumed.estimates, whole.estimates, rtol=1e-9, atol=0)
    assert resumed.transcript.digest == run(algo, problem, network, ROUNDS, seed=7, trial=1,
                                            backend=SimulatorBackend(blocks=2)).transcript.digest
    assert privacy_report(resumed.ledger, 1e-3)["per_agent"] == privacy_report(whole.ledger, 1e-3)["per_agent"]
    with pytest.raises(CheckpointError, match="actors=2"):
        run(algo, problem, network, ROUNDS, seed=7, trial=1, backend=RayBackend(actors=3), checkpoint=ckpt,
            resume=True)
