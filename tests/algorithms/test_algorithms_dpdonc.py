"""DPDO-NC (spec §5.4-§5.8, §10): noise calibration, feasibility, Laplace noise, accounting, bad input."""

import math
import numpy as np
import pytest
from dp_accounting import dp_event

from privdist.algorithms import make_algorithm
from privdist.errors import NotBStronglyConnectedError, NotDoublyStochasticError, ValidationError
from privdist.network import TimeVaryingNetwork, s4_matrices
from privdist.privacy import privacy_report
from privdist.problems.online import expected_regret, make_localization, make_simplex_quadratic, regret_terms
from privdist.runtime import AgentBlock, AgentStreams, run

THETA = 4.030198506277327  # S4's public theta for the literal layout (AMB-O3), as in the catalog


@pytest.fixture
def s4():
    return make_localization(np.random.default_rng(0), 301), TimeVaryingNetwork(s4_matrices())


@pytest.mark.parametrize("eps, sigma1", [(5.0, 0.379971), (1.0, 1.899854), (0.5, 3.799708)])
def test_sigma_1_vectors(eps, sigma1, s4):
    problem, net = s4
    algo = make_algorithm("dpdonc", theta=THETA, epsilon=eps)
    assert algo.sigma(1, 2, 1.0, problem.grad_bound, 1 / 6) == pytest.approx(sigma1, abs=1e-6)
    # the noise actually added in the first release (init) has that scale: q_1 - x_1 per node
    state, out = algo.init(problem, net, AgentBlock(np.arange(6), 6), AgentStreams(0, 0, np.arange(6), 0))
    assert state.theta == pytest.approx(4.030199, abs=1e-6) and state.step_scale == pytest.approx(1 / 6)


def test_laplace_noise_mean_absolute_value_is_sigma_t(s4):
    problem, net = s4
    algo = make_algorithm("dpdonc", theta=THETA, epsilon=1.0)
    res = run(algo, problem, net, 40, transcript="full", keep_iterates=True)
    t = np.arange(1, 41)
    noise = res.transcript.messages("agent", "q")[:40] - res.iterates[:40]  # round k releases q_{k+1}
    sigma = 2 * np.sqrt(2) / 6 / np.sqrt(t) * problem.grad_bound
    scaled = noise / sigma[:, None, None]  # unit Laplace
    assert np.mean(np.abs(scaled)) == pytest.approx(1.0, abs=0.08)
    assert np.mean(scaled) == pytest.approx(0.0, abs=0.08)


@pytest.mark.parametrize("mirror", ["euclidean", "squared", "mahalanobis"])
def test_iterates_stay_in_omega(mirror, s4):
    problem, net = s4
    res = run(make_algorithm("dpdonc", theta=THETA, epsilon=0.5, mirror=mirror), problem, net, 100, keep_iterates=True)
    assert np.all(np.abs(res.iterates).sum(axis=2) <= 3.0 + 1e-9)


def test_entropy_on_simplex_problem_stays_feasible_and_learns():
    problem = make_simplex_quadratic(np.random.default_rng(0), 301, n_agents=6, dim=3)
    net = TimeVaryingNetwork(s4_matrices())
    for eps in (5.0, 1.0):
        X = run(make_algorithm("dpdonc", theta=THETA, mirror="entropy", epsilon=eps), problem, net, 100, keep_iterates=True).iterates
        assert np.all(X > 0) and np.allclose(X.sum(axis=2), 1.0)
    # without noise the nodes agree on the minimiser of sum_i f_t^i (the mean point, near the fixed centre)
    X = run(make_algorithm("dpdonc", theta=THETA, mirror="entropy", epsilon=float("inf"), step_scale=1.0), problem, net, 300,
            keep_iterates=True).iterates
    centre = problem.points.mean(axis=(0, 1))
    assert np.abs(X[-50:].mean(axis=(0, 1)) - centre).max() < 0.03
    assert np.ptp(X[-1], axis=0).max() < 0.01
    with pytest.raises(ValidationError, match="simplex"):
        run(make_algorithm("dpdonc", theta=THETA, mirror="entropy"), make_localization(np.random.default_rng(0), 5), net, 2)


def _regret_per_tau(problem, net, algo, trials, rounds):
    R = []
    for trial in range(trials):
        res = run(algo, problem, net, rounds, trial=trial, keep_iterates=True)
        R.append([regret_terms(problem, t, res.iterates[t - 1]) for t in range(1, rounds + 1)])
    return expected_regret(np.array(R)).max(axis=1) / np.arange(1, rounds + 1)


def test_sigma_zero_gives_sublinear_regret(s4):
    problem, net = s4
    curve = _regret_per_tau(problem, net, make_algorithm("dpdonc", theta=THETA, epsilon=float("inf")), 1, 300)
    assert curve[299] < curve[149] < curve[29]
    assert curve[299] < 0.25 * curve[29]


def test_dp_events_and_accounting(s4):
    problem, net = s4
    res = run(make_algorithm("dpdonc", theta=THETA, epsilon=2.0), problem, net, 50)
    events = make_algorithm("dpdonc", theta=THETA, epsilon=2.0).dp_events(res.final_state, 3)
    # the d-dim Laplace mechanism is declared as generic pure DP: randomized response with ratio e^2 (issue 24)
    assert len(events) == 6 and isinstance(events[0].event, dp_event.RandomizedResponseDpEvent)
    p = events[0].event.noise_parameter
    assert (2 - p) / p == pytest.approx(math.exp(2.0)) and events[0].epsilon == pytest.approx(2.0)
    report = privacy_report(res.ledger, 1e-5)
    for entry in report["per_agent"]:
        assert entry["epsilon"]["paper"] == pytest.approx(100.0)  # basic composition: T epsilon (S4 Thm 1)
        # worst-case pure composition of 50 x 2 at delta 1e-5: 99.9946 (issue 24; 1-D Laplace stand-in: lower)
        assert 0 < entry["epsilon"]["pld"] <= entry["epsilon"]["rdp"] and entry["epsilon"]["pld"] < 100.0
    free = run(make_algorithm("dpdonc", theta=THETA, epsilon=float("inf")), problem, net, 5)
    free_eps = privacy_report(free.ledger, 1e-5)["per_agent"][0]["epsilon"]
    assert free_eps["paper"] == free_eps["pld"] == float("inf")  # non-private: inf, never 0


def test_random_schedule_runs_and_is_checked(s4):
    problem, _ = s4
    net = TimeVaryingNetwork(s4_matrices(), schedule="random", seed=3, B=12)
    res = run(make_algorithm("dpdonc", theta=THETA), problem, net, 20, keep_iterates=True)
    assert np.all(np.abs(res.iterates).sum(axis=2) <= 3 + 1e-9)
    A = s4_matrices()
    short = TimeVaryingNetwork([A[0], A[2]], schedule="random", seed=0, B=1)  # A_3 alone is disconnected
    with pytest.raises(NotBStronglyConnectedError):
        run(make_algorithm("dpdonc", theta=THETA), problem, short, 5)


def test_bad_inputs(s4):
    problem, net = s4
    A = s4_matrices()
    with pytest.raises(NotDoublyStochasticError):
        TimeVaryingNetwork([A[0], A[1] * 1.1, A[2]])
    with pytest.raises(NotBStronglyConnectedError):
        TimeVaryingNetwork([A[2], np.eye(6)])  # two cliques never joined
    with pytest.raises(ValidationError, match="theta"):
        make_algorithm("dpdonc", theta=0.0)
    with pytest.raises(ValidationError, match="theta"):
        make_algorithm("dpdonc", theta=-1.0)
    with pytest.raises(ValidationError, match="positive definite"):
        make_algorithm("dpdonc", theta=THETA, mirror="mahalanobis", Q=[[1.0, 0.0], [0.0, -1.0]])
    with pytest.raises(ValidationError, match="outside Omega"):
        run(make_algorithm("dpdonc", theta=THETA, x0=[2.0, 2.0]), problem, net, 2)
    with pytest.raises(ValidationError, match="epsilon"):
        make_algorithm("dpdonc", theta=THETA, epsilon=0.0)
