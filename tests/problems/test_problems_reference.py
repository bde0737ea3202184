import numpy as np
import pytest

from privdist.errors import ValidationError
from privdist.problems import (HorizontalERM, L1, L2, LogisticLoss, SquaredLoss, literal_reference,
                               normalized_error, reference_solution)


def _problem(rng, loss, reg, w=1.0):
    parts = []
    for _ in range(5):
        X = rng.standard_normal((20, 10)) / 3
        y = np.sign(rng.standard_normal(20)) if loss.name == "logistic" else X @ rng.standard_normal(10) + 0.3 * rng.standard_normal(20)
        parts.append((X, y))
    return HorizontalERM(parts, loss, reg, w)


def test_ridge_closed_form_agrees_with_cvxpy_to_1e8():
    prob = _problem(np.random.default_rng(0), SquaredLoss(), L2())
    a, b = reference_solution(prob), reference_solution(prob, "cvxpy")
    assert np.max(np.abs(a - b)) < 1e-8
    # gradient of sum_k f_k vanishes
    assert np.linalg.norm(prob.local_grads(np.tile(a, (5, 1))).sum(0)) < 1e-12


def test_lasso_fista_agrees_with_cvxpy():
    prob = _problem(np.random.default_rng(1), SquaredLoss(), L1(), 0.5)
    a, b = reference_solution(prob), reference_solution(prob, "cvxpy")
    assert np.max(np.abs(a - b)) < 1e-8
    assert np.any(a == 0.0)  # lasso produces exact zeros


def test_logistic_newton_agrees_with_cvxpy():
    prob = _problem(np.random.default_rng(2), LogisticLoss(), L2(), 0.1)
    assert np.max(np.abs(reference_solution(prob) - reference_solution(prob, "cvxpy"))) < 1e-7


def test_literal_reference_differs_from_distributed_one():
    rng = np.random.default_rng(3)
    prob = _problem(rng, SquaredLoss(), L2())
    X = np.concatenate([p[0] for p in prob.parts()])
    y = np.concatenate([p[1] for p in prob.parts()])
    lit = literal_reference(X, y, SquaredLoss(), L2(), 1.0)
    np.testing.assert_allclose(lit, np.linalg.solve(X.T @ X + np.eye(10), X.T @ y), rtol=1e-10)
    assert normalized_error(lit, reference_solution(prob)) > 1e-4


def test_method_errors():
    prob = _problem(np.random.default_rng(4), SquaredLoss(), L1())
    with pytest.raises(ValidationError):
        reference_solution(prob, "closed_form")
    with pytest.raises(LookupError):
        reference_solution(prob, "magic")


def test_normalized_error_is_a_sum_over_agents():
    beta = np.array([1.0, 0.0])
    assert normalized_error(np.array([[2.0, 0.0], [1.0, 1.0]]), beta) == pytest.approx(2.0)
