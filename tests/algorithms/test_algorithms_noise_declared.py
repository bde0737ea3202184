"""Issue 12: the noise each DP algorithm really draws is the noise it declares (within 5 %, thousands of draws).

Each test takes one ``step`` on a fixed state and public inbox with many independent noise streams and compares
the spread of the noise with the value the algorithm's declared release implies: Gaussian std, Laplace mean
absolute value, Gamma-norm mean norm ``d / zeta``. For DVP and R-ADMM (objective perturbation) the linear noise
``b`` is recovered from the released minimiser's optimality condition.
"""

import math

import numpy as np
import pytest

from privdist.algorithms.dpadmm import DPADMM
from privdist.algorithms.dpdonc import DPDONC
from privdist.algorithms.dpsgd import DPSGD
from privdist.algorithms.dvp import DVP
from privdist.algorithms.laadmm import LAADMM
from privdist.algorithms.pvp import PVP
from privdist.algorithms.radmm import RADMM
from privdist.network import TimeVaryingNetwork, s4_matrices
from privdist.problems.online import make_localization
from release_harness import complete_net, init_state, make_parts, problem_of, public_inbox, release

K, N, P = 20, 12, 10
SEEDS = range(30)  # 30 x 20 agents x 10 coordinates = 6,000 Gaussian coordinates per test


@pytest.fixture(scope="module")
def setup():
    problem = problem_of(make_parts(K, N, P, "logistic"), "logistic")
    return problem, complete_net(K)


def _noise(algo, clean, problem, net, t, key, seeds=SEEDS):
    state = init_state(algo, problem, net, K)
    inbox = public_inbox(algo, problem, net, K)
    base = release(clean, init_state(clean, problem, net, K), inbox, t, 0, key)[1]
    return np.stack([release(algo, state, inbox, t, s, key)[1] - base for s in seeds])


def test_dpsgd_gaussian_std(setup):
    problem, net = setup
    algo = DPSGD(alpha0=0.7, epsilon=0.5, delta=1e-3)
    noise = _noise(algo, DPSGD(alpha0=0.7, epsilon=None), problem, net, 4, "q")
    sigma = 2.0 * (0.7 / 2.0) * 1.0 / N * algo.mechanism.noise_multiplier
    assert noise.std() == pytest.approx(sigma, rel=0.05)
    assert algo.dp_events(init_state(algo, problem, net, K), 4)[0].event.noise_multiplier == algo.mechanism.noise_multiplier


def test_dpadmm_gaussian_std(setup):
    problem, net = setup
    algo = DPADMM(rho=0.5, eta0=0.8, epsilon=0.4, delta=1e-4, gaussian_constant=2.0)
    noise = _noise(algo, DPADMM(rho=0.5, eta0=0.8, epsilon=None, gaussian_constant=2.0), problem, net, 9, "w")
    sigma = 2.0 / (N * (0.5 + math.sqrt(9) / 0.8)) * math.sqrt(2.0 * math.log(1.25e4)) / 0.4
    assert noise.std() == pytest.approx(sigma, rel=0.05)


def test_laadmm_gaussian_std_per_step(setup):
    problem, net = setup
    kw = dict(rho=0.05, delta=1e-5, l=1, iterations=20, eta=3.0)
    algo = LAADMM(epsilon=2.0, **kw)
    noise = _noise(algo, LAADMM(epsilon=None, **kw), problem, net, 1, "wb")
    s = 2.0 / ((2.0 * 0.05 * (K - 1) + 3.0) * N)
    assert noise.std() == pytest.approx(s * algo.mechanism.noise_multiplier, rel=0.05)
    rel = algo.dp_events(init_state(algo, problem, net, K), 1)[0]
    assert rel.guarantee and rel.event.noise_multiplier == algo.mechanism.noise_multiplier  # l = 1: one step/round


@pytest.mark.parametrize("noise", ["gaussian", "gamma"])
def test_pvp_output_noise(setup, noise):
    problem, net = setup
    algo = PVP(rho=0.3, epsilon=0.8, delta=1e-3, noise=noise, gaussian_constant=2.0)
    seeds = SEEDS if noise == "gaussian" else range(40)
    draws = _noise(algo, PVP(rho=0.3, epsilon=None), problem, net, 1, "x", seeds)
    mu = problem.local_reg * 2.0 + 2.0 * 0.3 * (K - 1)
    delta_p = 2.0 / (N * mu)
    if noise == "gaussian":
        assert draws.std() == pytest.approx(delta_p * math.sqrt(2.0 * math.log(1.25e3)) / 0.8, rel=0.05)
    else:  # density exp(-zeta ||e||), zeta = eps / Delta_p: E||e|| = d / zeta (800 draws of a 10-d norm)
        assert np.linalg.norm(draws, axis=2).mean() == pytest.approx(P * delta_p / 0.8, rel=0.05)


def _recovered_b(algo, state, inbox, t, seed):
    """``b_p`` from the optimality condition of the perturbed solve: ``b/B = v - grad f(f) - (2 rho d + Phi) f``."""
    gamma = algo._dual(state, inbox["x"])
    d = state.degrees[:, None]
    v = algo.rho * (d * state.x + inbox["x"]) - gamma
    _, f = release(algo, state, inbox, t, seed, "x")
    lin = v - state.problem.local_grads(f) - (2.0 * algo.rho * d + state.phi[:, None]) * f
    return lin * state.counts[:, None]


@pytest.mark.parametrize("cls", [DVP, RADMM])
@pytest.mark.parametrize("noise", ["gaussian", "gamma"])
def test_objective_perturbation_noise(setup, cls, noise):
    problem, net = setup
    algo = cls(rho=0.3, epsilon=0.8, delta=1e-3, noise=noise, gaussian_constant=2.0, tol=1e-13)
    state = init_state(algo, problem, net, K)
    inbox = public_inbox(algo, problem, net, K)
    b = np.stack([_recovered_b(algo, state, inbox, 1, s) for s in (SEEDS if noise == "gaussian" else range(40))])
    if noise == "gaussian":
        assert b.std() == pytest.approx(2.0 * math.sqrt(2.0 * math.log(1.25e3)) / 0.8, rel=0.05)
    else:  # density exp(-eps'/(2 c1) ||b||): E||b|| = 2 c1 d / eps'
        assert np.linalg.norm(b, axis=2).mean() == pytest.approx(2.0 * P / state.eps_prime[0], rel=0.05)
    if cls is RADMM:  # the recycled gradient carries the same b
        new, _ = release(algo, state, inbox, 1, 7, "x")
        b7 = _recovered_b(algo, state, inbox, 1, 7)
        np.testing.assert_allclose(new.g_hat - state.problem.local_grads(new.x) - new.phi[:, None] * new.x,
                                   b7 / state.counts[:, None], atol=1e-9)


def test_dpdonc_laplace_mean_abs_and_std():
    problem = make_localization(np.random.default_rng(0), 50)
    net = TimeVaryingNetwork(s4_matrices())
    algo = DPDONC(epsilon=1.0, theta=4.0)
    state = init_state(algo, problem, net, 6)
    inbox = {"q": np.tile([0.5, -0.2], (6, 1))}
    draws = []
    for s in range(600):  # 600 x 6 nodes x 2 coordinates = 7,200 Laplace draws
        new, q = release(algo, state, inbox, 3, s, "q")
        draws.append(q - new.x)
    draws = np.stack(draws)
    sigma = algo.sigma(4, 2, 1.0, 4.0, 1.0 / 6)  # round 3 releases q_4
    assert sigma == pytest.approx(2 * math.sqrt(2) * (1 / 6) / 2.0 * 4.0 / 1.0)
    assert np.abs(draws).mean() == pytest.approx(sigma, rel=0.05)
    assert draws.std() == pytest.approx(math.sqrt(2.0) * sigma, rel=0.05)
