import numpy as np
import pytest

from privdist.algorithms import DPSGD, ConsensusADMM, make_algorithm
from privdist.errors import UnknownNameError, ValidationError
from privdist.privacy import privacy_report
from privdist.problems import normalized_error, reference_solution
from privdist.runtime import run
from release_harness import accepts_standard_normal, assert_standard_normal


def test_consensus_admm_reaches_ridge_solution(ridge_problem, net5):
    beta_c = reference_solution(ridge_problem)
    res = run(ConsensusADMM(rho=1.0), ridge_problem, net5, 200, metrics={"ne": lambda B: normalized_error(B, beta_c)})
    assert res.curves["ne"][-1] < 1e-8
    assert res.curves["ne"][0] == pytest.approx(5.0)  # all agents start at 0: NE = K


def test_consensus_admm_reaches_lasso_solution(lasso_problem, net5):
    beta_c = reference_solution(lasso_problem)
    res = run(ConsensusADMM(rho=0.3), lasso_problem, net5, 200, metrics={"ne": lambda B: normalized_error(B, beta_c)})
    assert res.curves["ne"][-1] < 1e-5


def test_consensus_admm_duals_sum_to_zero(ridge_problem, net5):
    res = run(ConsensusADMM(rho=2.0), ridge_problem, net5, 25)
    assert np.abs(res.final_state.gamma.sum(axis=0)).max() < 1e-10
    assert np.abs(res.final_state.gamma).max() > 1e-3


def test_consensus_admm_logistic_newton_solves(net5):
    from conftest import make_dzoa_problem

    prob = make_dzoa_problem(1, "l2", loss="logistic")
    beta_c = reference_solution(prob)
    res = run(ConsensusADMM(rho=1.0), prob, net5, 150, metrics={"ne": lambda B: normalized_error(B, beta_c)})
    assert res.curves["ne"][-1] < 1e-8


def test_dpsgd_noise_scale_and_events(ridge_problem, net5):
    algo = DPSGD(alpha0=0.5, epsilon=0.5, delta=1e-3)
    # round-1 release = mix(0) - alpha_1 * clipped gradient at 0 + noise of std 2*alpha_1*c1/N_k * multiplier
    grad = ridge_problem.local_grads(np.zeros((5, 10)), clip=1.0)
    sigma = 2 * 0.5 * 1.0 / ridge_problem.counts[:, None] * np.sqrt(2.1 * np.log(1.25 / 1e-3)) / 0.5
    # 200 runs x 5 agents x 10 coordinates = 10,000 independent draws (own stream per seed and agent, i.i.d.
    # coordinates), each divided by its declared std: i.i.d. N(0, 1) if the algorithm draws what it declares
    z = np.stack([(run(algo, ridge_problem, net5, 1, seed=s, transcript="full").transcript.rounds[1][("agent", "q")]
                   + 0.5 * grad) / sigma for s in range(200)])
    # false-failure probability 1e-6 (union of two exact checks): sum z^2 in the chi2(10,000) interval (drawn/declared
    # std in [0.965, 1.036]) and the 50 coordinates' means 0 (chi2(50) statistic in [14.7, 117.3]). A sigma 10 % off
    # either way is accepted with probability < 1e-16 (asserted by the helper) and is rejected on these draws
    assert_standard_normal(z, false_failure=1e-6, power_at=0.10)
    assert not accepts_standard_normal(z * 1.1) and not accepts_standard_normal(z / 1.1)
    res = run(algo, ridge_problem, net5, 3, transcript="full")
    report = privacy_report(res.ledger, 1e-3)
    assert report["per_agent"][0]["releases"] == 3
    # paper accountant: S1(25) with M = 3
    expected = 0.5 * np.sqrt(3 * np.log(1e3) / (1.05 * np.log(1.25e3)))
    assert report["per_agent"][0]["epsilon"]["paper"] == pytest.approx(expected, rel=1e-9)


def test_dpsgd_without_noise_converges_towards_solution(ridge_problem, net5):
    beta_c = reference_solution(ridge_problem)
    res = run(DPSGD(alpha0=1.0, epsilon=None, clip=False), ridge_problem, net5, 400,
              metrics={"ne": lambda B: normalized_error(B, beta_c)})
    assert res.curves["ne"][-1] < 0.2 * res.curves["ne"][0]
    assert res.curves["ne"][-1] < res.curves["ne"][50]


def test_bad_hyperparameters_are_named():
    with pytest.raises(ValidationError, match="rho must be > 0"):
        ConsensusADMM(rho=-1.0)
    with pytest.raises(ValidationError, match="epsilon must be > 0"):
        DPSGD(epsilon=0.0)
    with pytest.raises(ValidationError, match="delta must be in"):
        DPSGD(delta=1.5)
    with pytest.raises(ValidationError, match="unknown parameter"):
        make_algorithm("dpsgd", learning_rate=1.0)
    with pytest.raises(UnknownNameError, match="known: .*consensus_admm, .*dpsgd"):
        make_algorithm("sgd")
