"""SSP (issue 39): one-shot sufficient statistics. Without noise it is the pooled ridge (scikit-learn's) and PASS's
closed form; the noise it draws is the noise it declares (local Gaussian and the secure sum's central noise); it
spends exactly the total budget through the estimators; bad parameters are named errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from release_harness import accepts_standard_normal, assert_standard_normal
from privdist.algorithms import make_algorithm
from privdist.algorithms.ssp import adassp_lambda, pass_coefficient
from privdist.errors import UnknownNameError, ValidationError
from privdist.learn import DistributedLasso, DistributedLogisticRegression, DistributedRidge
from privdist.network import make_network
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.runtime import AgentBlock, AgentStreams, run
from privdist.runtime.secure.secagg import unmask_sum


def _data(n=400, d=4, seed=0, loss="squared"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    z = X @ np.array([1.0, -0.5, 0.2, 0.0][:d]) + 0.1 * rng.normal(size=n)
    y = np.clip(z, -1, 1) if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    return X, y


def _problem(X, y, K, loss="squared", reg=0.0, regularizer="l2"):
    parts = np.array_split(np.arange(len(y)), K)
    return HorizontalERM([(X[i], y[i]) for i in parts], make_loss(loss), make_regularizer(regularizer), reg)


def test_without_noise_ridge_equals_scikit_learn_on_the_pooled_rows():
    X, y = _data()
    K, lam = 4, 1e-2  # the network objective's weight: lam_user = reg / K per row, Ridge's alpha = n reg / K
    res = run(make_algorithm("ssp", epsilon=None), _problem(X, y, K, reg=lam), make_network("complete", n=K), 2)
    sk = Ridge(alpha=len(y) * lam / K, fit_intercept=False, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(np.asarray(res.estimates)[0], sk.coef_, rtol=1e-8, atol=1e-10)


def test_without_noise_pass_is_its_closed_form_and_classifies():
    X, y = _data(loss="logistic")
    K, lam, R = 3, 1e-3, 4.0
    res = run(make_algorithm("ssp", epsilon=None, pass_radius=R), _problem(X, y, K, "logistic", lam),
              make_network("complete", n=K), 2)
    w = np.asarray(res.estimates)[0]
    b2, n = pass_coefficient(R), len(y)
    expected = np.linalg.solve(b2 * X.T @ X + n * lam / K * np.eye(X.shape[1]), X.T @ y / 4.0)
    np.testing.assert_allclose(w, expected, rtol=1e-8)
    assert np.mean(np.sign(X @ w) == y) > 0.9


def test_pass_coefficient_is_the_chebyshev_coefficient():
    """``b2`` against numpy's Chebyshev least-squares fit of ``log(1 + exp(-s)) + s/2`` (degree 30 on 400 nodes,
    truncated at degree 2), and the Taylor limit ``1/8`` at a small radius."""
    for R in (1.0, 4.0, 8.0):
        t = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
        coef = np.polynomial.chebyshev.chebfit(t, np.logaddexp(0.0, -R * t) + R * t / 2.0, 30)
        assert pass_coefficient(R) == pytest.approx(2.0 * coef[2] / R**2, rel=1e-6)
    assert pass_coefficient(1e-3) == pytest.approx(1.0 / 8.0, rel=1e-6)


def test_adassp_lambda_guards_the_noisy_gram():
    rng = np.random.default_rng(0)
    S = np.diag([5.0, 1e-6, 0.0])
    lam = adassp_lambda(S, 0.5)
    assert lam == pytest.approx(0.5 * math.sqrt(3 * math.log(2 * 9 / 0.05)))  # lambda_min = 0
    E = rng.normal(size=(3, 3))
    noisy = S + (E + E.T) / 2
    assert np.linalg.eigvalsh(noisy + adassp_lambda(noisy, 0.5) * np.eye(3))[0] > 0
    assert adassp_lambda(S, 0.0) == 0.0


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_local_trust_draws_the_declared_gaussian(loss):
    """2,000 releases of round 1 on fixed data, standardised by the declared std of each statistic: i.i.d. N(0, 1)
    (chi-squared interval on the spread and on the per-coordinate means, false failure 1e-6; a std 10 % off is
    rejected)."""
    X, y = _data(40, 3, loss=loss)
    problem = _problem(X, y, 2, loss)
    net = make_network("complete", n=2)
    algo = make_algorithm("ssp", epsilon=1.0, delta=1e-5, gram_uses=2, rounds=2)
    z = float(algo.mechanism.noise_multiplier)
    block = AgentBlock(np.arange(2), 2, net.degrees)
    state, _ = algo.init(problem, net, block, AgentStreams(0, 0, block.agents, 0))
    inbox = {"w": np.zeros((2, 3)), "w_bar": np.zeros((2, 3))}
    u_true, h_true = algo._clipped_sums(state, None), algo._gram(state)
    sd_u = z * 2.0 * algo._clip(problem.loss)
    sd_h = z / math.sqrt(algo.gram_uses) * math.sqrt(2.0) * algo.row_bound**2
    draws = []
    for seed in range(2000):
        _, out = algo.step(state, inbox, 1, AgentStreams(seed, 0, block.agents, 1))
        np.testing.assert_array_equal(out["g"][:, 3], [20, 20])  # the row counts, in the clear
        draws.append(np.hstack([(out["g"][:, :3] - u_true) / sd_u, (out["h"] - h_true) / sd_h]))
    draws = np.array(draws)
    assert_standard_normal(draws, false_failure=1e-6, power_at=0.10)
    assert not accepts_standard_normal(draws * 1.1) and not accepts_standard_normal(draws / 1.1)
    _, out = algo.step(state, inbox, 2, AgentStreams(0, 0, block.agents, 2))
    assert not out["g"].any() and not out["h"].any()  # round 2 releases nothing


def _round_one_sums(res, algo, P):
    """The decoded sums the coordinator received in round 1, rebuilt from the transcript (masked vectors and
    answers: what the aggregator saw)."""
    msgs = res.transcript.rounds[1]
    g = msgs[("agent", "g")].astype(np.uint64)
    h = msgs[("agent", "h")].astype(np.uint64)
    answers = msgs[("agent", "secagg.answer@attempt0")].astype(np.uint64)
    present = np.ones(g.shape[0], dtype=bool)
    total = unmask_sum(np.hstack([g, h]), answers, present, algo._bits(res.final_state.problem))
    loss = res.final_state.problem.loss
    return (algo.mechanism.decode(total[:P], 2.0 * algo._clip(loss)),
            algo.mechanism.decode(total[P + 1:], math.sqrt(2.0) * algo.row_bound**2))


def test_secure_aggregation_carries_the_declared_central_noise():
    K, P = 4, 4
    X, y = _data(80, P)
    problem, net = _problem(X, y, K), make_network("complete", n=K)
    algo = make_algorithm("ssp", epsilon=1.0, delta=1e-5, trust="secure_aggregation").for_rounds(2)
    u_true, S = X.T @ y, X.T @ X
    h_true = S[np.triu_indices(P)]
    us, hs = zip(*(_round_one_sums(run(algo, problem, net, 2, seed=s, transcript="full"), algo, P)
                   for s in range(300)))
    sd_u = algo.mechanism.noise_std(2.0 * algo._clip(problem.loss), P)
    sd_h = algo.gram_noise_std(P, K)
    z = np.hstack([(np.array(us) - u_true) / sd_u, (np.array(hs) - h_true) / sd_h])
    # 300 x 14 standardised draws (Skellam plus randomized rounding at 1 % of the sensitivity: nearly Gaussian),
    # chi-squared intervals at false failure 1e-6; a std 20 % off is rejected
    assert_standard_normal(z, false_failure=1e-6, power_at=0.2)
    local_sd = make_algorithm("ssp", epsilon=1.0, delta=1e-5, rounds=2).gram_noise_std(P, K)
    assert sd_h < 0.6 * local_sd  # central noise, not sqrt(K) times it


def test_the_estimators_spend_exactly_the_total_and_report_it():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 3)) * np.array([1.0, 10.0, 100.0])
    y = X @ [1.0, 0.1, 0.01] + rng.normal(size=2000)
    groups = np.repeat(np.arange(4), 500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DistributedRidge(algorithm="ssp", epsilon=1.0, random_state=0).fit(X, y, groups=groups)
        c = DistributedLogisticRegression(algorithm="ssp", epsilon=1.0, trust="local", random_state=0).fit(
            X, (y > 0).astype(int), groups=groups)
    for est in (m, c):
        assert est.privacy_report_["guaranteed"]
        assert est.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
        assert est.privacy_plan_.rounds == 2 and est.algorithm_params_["lambda_rule"] == "adassp"
    assert m.privacy_plan_.trust == "secure_aggregation" and c.privacy_plan_.trust == "local"
    # better than the mean predictor (R^2 0) and the majority class (about 0.5); seeded draws: 0.566 and 0.777
    assert m.score(X, y) > 0.4 and c.score(X, (y > 0).astype(int)) > 0.7


def test_one_round_releases_nothing_and_more_rounds_nothing_more():
    X, y = _data()
    problem, net = _problem(X, y, 2), make_network("complete", n=2)
    one = run(make_algorithm("ssp", epsilon=1.0), problem, net, 1)
    assert not any(one.ledger.entries(k) for k in range(2)) and not np.asarray(one.estimates).any()
    two, five = (run(make_algorithm("ssp", epsilon=1.0), problem, net, T, seed=3) for T in (2, 5))
    assert two.ledger.entries(0) == five.ledger.entries(0) and len(two.ledger.entries(0)) == 1
    np.testing.assert_array_equal(np.asarray(two.estimates), np.asarray(five.estimates))


def test_bad_parameters_are_named_errors():
    with pytest.raises(ValidationError, match="y_bound"):
        make_algorithm("ssp", y_bound=-1.0)
    with pytest.raises(ValidationError, match="pass_radius"):
        make_algorithm("ssp", pass_radius=0.0)
    with pytest.raises(UnknownNameError):
        make_algorithm("ssp", lambda_rule="magic")
    with pytest.raises(ValidationError, match="c1 is not a parameter"):
        make_algorithm("ssp", c1=1.0)
    with pytest.raises(ValidationError, match="runs > 1"):
        make_algorithm("ssp", epsilon=1.0, runs=2, rounds=2)
    X, y = _data()
    with warnings.catch_warnings(), pytest.raises(ValidationError, match="l2-regularised"):
        warnings.simplefilter("ignore")
        DistributedLasso(algorithm="ssp", target_bounds=(-1, 1), n_agents=2, random_state=0).fit(X, y)
