"""Online problems and the regret estimator of S4 (spec §5.1, §5.8)."""

import numpy as np
import pytest

from privdist.errors import ShapeMismatchError, UnknownNameError, ValidationError
from privdist.problems.constraints import L1Ball
from privdist.problems.online import (OnlineLocalization, StaticOnline, expected_regret, make_localization,
                                      make_simplex_quadratic, regret_terms)


def test_literal_theta_and_target_recursion():
    p = make_localization(np.random.default_rng(0), 200)
    assert p.grad_bound == pytest.approx(4.030199, abs=1e-6)  # spec §10
    np.testing.assert_allclose(p.sensors, np.tile([0.8, 0.95], (6, 1)))
    np.testing.assert_allclose(p.targets[0], [0.8, 0.95])
    steps = np.diff(p.targets, axis=0)
    t = np.arange(1, 200)
    # each step is one of the two Bernoulli branches of spec §5.8
    q0 = np.column_stack([np.sin(t / 50) / (10 * t), np.zeros_like(t, dtype=float)])
    q1 = np.column_stack([-np.sin(t / 50) / (10 * t), -np.cos(t / 70) / (40 * t)])
    is0 = np.all(np.isclose(steps, q0), axis=1)
    is1 = np.all(np.isclose(steps, q1), axis=1)
    assert np.all(is0 | is1) and 0.3 < is1.mean() < 0.7
    err = p.distances - np.linalg.norm(p.sensors[None] - p.targets[:, None], axis=2)
    assert err.min() >= 0 and err.max() <= 1e-3


def test_gradient_matches_finite_differences_and_zero_at_sensor():
    p = make_localization(np.random.default_rng(1), 5, layout="distinct")
    X = np.random.default_rng(2).uniform(-1, 1, (6, 2))
    G = p.grads(3, X)
    h = 1e-6
    for k in range(2):
        E = np.zeros((6, 2))
        E[:, k] = h
        np.testing.assert_allclose((p.values(3, X + E) - p.values(3, X - E)) / (2 * h), G[:, k], atol=1e-6)
    assert np.all(p.grads(1, p.sensors) == 0.0)  # AMB-O4: grad f(s_i) := 0
    np.testing.assert_allclose(p.total_grads(3, X), [p.grads(3, np.tile(x, (6, 1))).sum(axis=0) for x in X])


def test_subset_keeps_own_costs():
    p = make_localization(np.random.default_rng(1), 5, layout="distinct")
    X = np.random.default_rng(2).uniform(-1, 1, (6, 2))
    sub = p.subset([1, 4])
    np.testing.assert_allclose(sub.grads(2, X[[1, 4]]), p.grads(2, X)[[1, 4]])


def test_regret_terms_equal_spec_support_form():
    p = make_localization(np.random.default_rng(0), 10)
    X = np.random.default_rng(3).uniform(-1, 1, (6, 2))
    R = regret_terms(p, 4, X)
    g = p.total_grads(4, X)
    np.testing.assert_allclose(R.max(axis=1), np.sum(g * X, axis=1) + 3 * np.abs(g).max(axis=1))


def test_expected_regret_takes_expectation_before_max():
    # two runs whose G terms cancel: E first gives A only; max first would add |G|
    R = np.zeros((2, 1, 1, 2))
    R[0, 0, 0] = [1.0, -1.0]
    R[1, 0, 0] = [-1.0, 1.0]
    assert expected_regret(R)[0, 0] == pytest.approx(0.0)
    R3 = np.random.default_rng(0).normal(size=(4, 7, 3, 2))
    np.testing.assert_allclose(expected_regret(R3), np.cumsum(R3.mean(0), axis=0).max(axis=2))
    with pytest.raises(ShapeMismatchError):
        expected_regret(np.zeros((2, 3)))


def test_simplex_quadratic_and_static_wrapper(ridge_problem):
    q = make_simplex_quadratic(np.random.default_rng(0), 20, n_agents=4, dim=3)
    assert q.grad_bound <= np.sqrt(2) + 1e-12
    X = np.full((4, 3), 1 / 3)
    np.testing.assert_allclose(q.total_grads(5, X[:1])[0], q.grads(5, X).sum(axis=0))
    s = StaticOnline(ridge_problem, L1Ball(ridge_problem.n_features, 3.0))
    B = np.zeros((5, ridge_problem.n_features))
    np.testing.assert_allclose(s.grads(7, B), ridge_problem.local_grads(B))


def test_online_problem_errors():
    p = make_localization(np.random.default_rng(0), 5)
    with pytest.raises(ValidationError, match="horizon"):
        p.grads(6, np.zeros((6, 2)))
    with pytest.raises(ShapeMismatchError):
        p.grads(1, np.zeros((6, 3)))
    with pytest.raises(UnknownNameError):
        make_localization(np.random.default_rng(0), 5, layout="grid")
    with pytest.raises(ShapeMismatchError):
        OnlineLocalization(np.zeros((6, 2)), np.zeros((5, 4)), np.zeros((5, 2)))
