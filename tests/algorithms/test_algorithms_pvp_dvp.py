"""PVP and DVP (spec §6.3, §6.4): skeleton = consensus ADMM, noise calibration, budgets, accounting."""

import math

import numpy as np
import pytest

from conftest import make_dzoa_problem
from privdist.algorithms import make_algorithm
from privdist.algorithms._perturbation import iteration_budget, objective_perturbation
from privdist.algorithms.dvp import DVP
from privdist.algorithms.pvp import PVP
from privdist.errors import ValidationError
from privdist.network import complete
from privdist.privacy import privacy_report
from privdist.problems import reference_solution
from privdist.runtime import run


@pytest.mark.parametrize("name", ["pvp", "dvp"])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_without_noise_equals_consensus_admm(name, loss, net5):
    prob = make_dzoa_problem(3, "l2", loss=loss)
    ref = run(make_algorithm("consensus_admm", rho=0.7), prob, net5, 30).final_state.beta
    # clip=False: the paper's loss itself (clip=True solves the clipped/Huber loss, tested elsewhere)
    out = run(make_algorithm(name, rho=0.7, epsilon=None, tol=1e-12, clip=False), prob, net5, 30).final_state.x
    np.testing.assert_allclose(out, ref, atol=1e-8)
    w_star = reference_solution(prob)
    far = run(make_algorithm(name, rho=0.7, epsilon=None, clip=False), prob, net5, 300).final_state.x
    assert np.abs(far - w_star).max() < 1e-7


def test_pvp_gaussian_noise_std_and_dzoa_accounting(ridge_problem, net5):
    alg = PVP(rho=1.0, epsilon=0.5, delta=1e-3, noise="gaussian", gaussian_constant=2.1)
    res = run(alg, ridge_problem, net5, 1, transcript="full")
    clean = run(PVP(rho=1.0, epsilon=None), ridge_problem, net5, 1).final_state.x
    noise = res.transcript.rounds[1][("agent", "x")] - clean
    mu = ridge_problem.local_reg * 2.0 + 2.0 * net5.degrees
    sigma = 2.0 / (ridge_problem.counts * mu) * math.sqrt(2.1 * math.log(1.25e3)) / 0.5
    z = noise / sigma[:, None]
    assert z.std() == pytest.approx(1.0, rel=0.3)
    rep = privacy_report(run(alg, ridge_problem, net5, 200).ledger, 1e-3)
    expected = 0.5 * math.sqrt(200 * math.log(1e3) / (1.05 * math.log(1.25e3)))  # S1(25), AMB-X2
    assert rep["per_agent"][0]["epsilon"]["paper"] == pytest.approx(expected, rel=1e-9)


def test_pvp_gamma_noise_norm(ridge_problem, net5):
    alg = PVP(rho=1.0, epsilon=2.0, noise="gamma")
    clean = run(PVP(rho=1.0, epsilon=None), ridge_problem, net5, 1).final_state.x
    mu = ridge_problem.local_reg * 2.0 + 2.0 * net5.degrees
    delta_p = 2.0 / (ridge_problem.counts * mu)
    norms = []
    for trial in range(60):
        x = run(alg, ridge_problem, net5, 1, trial=trial).final_state.x
        norms.append(np.linalg.norm(x - clean, axis=1) / delta_p)
    # E||e|| = dim / zeta = dim * Delta_p / alpha
    assert np.mean(norms) == pytest.approx(10 / 2.0, rel=0.1)


def test_gamma_release_is_pure_and_basic(ridge_problem, net5):
    rep = privacy_report(run(DVP(rho=1.0, epsilon=0.2), ridge_problem, net5, 10).ledger, 1e-3)
    eps = rep["per_agent"][0]["epsilon"]
    assert eps["paper"] == pytest.approx(2.0)  # basic composition of 10 x 0.2
    assert eps["rdp"] <= 2.0 + 1e-9 and eps["pld"] <= 2.0 + 1e-9


def test_total_budget_inversion():
    # gamma: eps / n_rel; gaussian with 2.0: moments formula inverted; 2.1: S1(25) inverted
    assert iteration_budget(1.0, 1e-5, "gamma", 2.0, "total", 100) == pytest.approx(0.01)
    e = iteration_budget(1.0, 1e-5, "gaussian", 2.0, "total", 100)
    c0 = math.sqrt(math.log(1e5) / math.log(1.25e5))
    assert e == pytest.approx(1.0 / (c0 * 10))
    e21 = iteration_budget(1.0, 1e-3, "gaussian", 2.1, "total", 200)
    assert e21 * math.sqrt(200 * math.log(1e3) / (1.05 * math.log(1.25e3))) == pytest.approx(1.0)
    assert iteration_budget(0.3, 1e-5, "gaussian", 2.1, "iteration", 100) == 0.3


def test_total_budget_run_reports_target(ridge_problem, net5):
    alg = PVP(rho=1.0, epsilon=1.0, delta=1e-5, noise="gaussian", gaussian_constant=2.0, budget="total",
              iterations=40)
    rep = privacy_report(run(alg, ridge_problem, net5, 40).ledger, 1e-5)
    assert rep["per_agent"][0]["epsilon"]["paper"] == pytest.approx(1.0, rel=1e-9)


def test_objective_perturbation_constants():
    counts, mu = np.array([452.0, 20.0]), np.array([0.198, 0.01])
    eps_p, phi = objective_perturbation(0.5, counts, mu, 0.25)
    # agent 0: eps' = 0.5 - 2 log(1 + 0.25 / (452 * 0.198)) > 0, no extra ridge
    assert eps_p[0] == pytest.approx(0.5 - 2 * math.log1p(0.25 / (452 * 0.198)))
    assert phi[0] == 0.0
    # agent 1: 2 log(1 + 1.25) > 0.5 -> Phi = c/(n(e^{eps/4} - 1)) - mu, eps' = eps/2
    assert eps_p[1] == pytest.approx(0.25)
    assert phi[1] == pytest.approx(0.25 / (20 * math.expm1(0.125)) - 0.01)


def test_dvp_duals_sum_to_zero_and_bad_input(ridge_problem):
    res = run(DVP(rho=0.5, epsilon=1.0), ridge_problem, complete(5), 15)
    assert np.abs(res.final_state.gamma.sum(axis=0)).max() < 1e-9
    assert np.abs(res.final_state.gamma).max() > 1e-3
    for bad in (dict(noise="laplace"), dict(budget="all"), dict(rho=0.0), dict(gaussian_constant=3.0),
                dict(epsilon=-1.0), dict(iterations=0)):
        with pytest.raises(ValidationError):
            PVP(**bad)
