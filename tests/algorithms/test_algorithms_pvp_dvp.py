"""PVP and DVP (spec §6.3, §6.4): skeleton = consensus ADMM, noise calibration, budgets, accounting."""

import math

import numpy as np
import pytest

from conftest import make_dzoa_problem
from privdist.algorithms import make_algorithm
from privdist.algorithms.dvp import DVP
from privdist.algorithms.pvp import PVP
from privdist.errors import UnknownNameError, ValidationError
from privdist.network import complete
from privdist.privacy import GammaNormMechanism, GaussianMechanism, Identity, privacy_report
from privdist.privacy.objective_perturbation import (ObjectivePerturbationMechanism,
                                                     objective_perturbation_constants as objective_perturbation)
from privdist.privacy.paper_budget import paper_round_epsilon
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


def test_paper_total_budget_inversion():
    # gamma: eps / n_rel (basic); gaussian with 2.0: moments formula inverted; 2.1: S1(25) inverted
    assert paper_round_epsilon(1.0, 1e-5, 100, "basic") == pytest.approx(0.01)
    e = paper_round_epsilon(1.0, 1e-5, 100, "moments")
    c0 = math.sqrt(math.log(1e5) / math.log(1.25e5))
    assert e == pytest.approx(1.0 / (c0 * 10))
    e21 = paper_round_epsilon(1.0, 1e-3, 200, "dzoa")
    assert e21 * math.sqrt(200 * math.log(1e3) / (1.05 * math.log(1.25e3))) == pytest.approx(1.0)
    assert paper_round_epsilon((1.0, 2.0), 1e-5, 100, "basic") == pytest.approx((0.01, 0.02))
    # the factories: total_paper -> the per-release epsilon of the formula; round -> epsilon itself
    assert PVP(epsilon=1.0, budget="total_paper", iterations=100).mechanism.epsilon == pytest.approx(0.01)
    pvp = PVP(epsilon=1.0, delta=1e-5, noise="gaussian", gaussian_constant=2.0, budget="total_paper", iterations=100)
    assert pvp.mechanism.epsilon == pytest.approx(1.0 / (c0 * 10))
    assert PVP(epsilon=0.3, delta=1e-5, noise="gaussian", budget="round").mechanism.epsilon == 0.3


def test_paper_total_budget_run_reports_target(ridge_problem, net5):
    alg = PVP(rho=1.0, epsilon=1.0, delta=1e-5, noise="gaussian", gaussian_constant=2.0, budget="total_paper",
              iterations=40)
    rep = privacy_report(run(alg, ridge_problem, net5, 40).ledger, 1e-5)
    assert rep["per_agent"][0]["epsilon"]["paper"] == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("noise", ["gaussian", "gamma"])
def test_pld_total_budget_run_reports_target(ridge_problem, net5, noise):
    """budget="total": PLD-calibrated over the run's rounds (filled in by run), printed PLD within 1 % below."""
    alg = PVP(rho=1.0, epsilon=1.0, delta=1e-5, noise=noise, budget="total")
    res = run(alg, ridge_problem, net5, 40)
    assert res.config["params"]["iterations"] == 40
    for agent in privacy_report(res.ledger, 1e-5, accountants=("pld",))["per_agent"]:
        assert agent["guaranteed"] and 0.99 <= agent["epsilon"]["pld"] <= 1.0


def test_mechanism_of_each_variant():
    assert isinstance(PVP(noise="gamma").mechanism, GammaNormMechanism)
    assert isinstance(DVP(noise="gamma").mechanism, ObjectivePerturbationMechanism)
    for cls in (PVP, DVP):
        assert isinstance(cls(noise="gaussian").mechanism, GaussianMechanism)
        assert isinstance(cls(epsilon=None).mechanism, Identity)
    assert DVP(noise="gaussian").mechanism.reason is not None  # the heuristic is a claim (guarantee inf)
    assert PVP(noise="gaussian").mechanism.reason is None


def test_total_budget_horizon():
    with pytest.raises(ValidationError, match="rounds"):
        PVP(epsilon=1.0, budget="total").mechanism  # noqa: B018 - no horizon before run fills it in
    with pytest.raises(ValidationError, match="iterations=12"):
        PVP(epsilon=1.0, budget="total_paper", iterations=10).for_rounds(12)
    assert PVP(epsilon=1.0, budget="total_paper").for_rounds(12).iterations == 12
    assert PVP(epsilon=1.0, budget="round").for_rounds(12).iterations is None


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
    for bad in (dict(noise="laplace"), dict(rho=0.0), dict(gaussian_constant=3.0),
                dict(epsilon=-1.0), dict(iterations=0), dict(epsilon=-1.0, budget="total_paper", iterations=5)):
        with pytest.raises(ValidationError):
            PVP(**bad)
    for bad in ("all", "iteration"):  # "iteration" is now "round"
        with pytest.raises(UnknownNameError, match="budget"):
            PVP(budget=bad)
