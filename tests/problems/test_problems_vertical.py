"""VerticalProblem: parties' blocks, coordinator labels, bad input (spec §3.1, issue 4)."""

import numpy as np
import pytest
import scipy.sparse as sp

from privdist.errors import NonFiniteDataError, ShapeMismatchError, ValidationError
from privdist.problems.vertical import VerticalProblem, log_loss, to_pm1

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 5))
Y = rng.choice([-1.0, 1.0], 30)


def test_blocks_bias_offsets_and_role_views():
    p = VerticalProblem([X[:, :2], sp.csr_matrix(X[:, 2:])], Y, reg_weight=0.5)
    assert p.dims == (3, 3) and p.offsets == (0, 3) and p.n_features == 6 and p.n_agents == 2
    np.testing.assert_array_equal(p.blocks[0][:, 0], 1.0)
    party = p.subset([1])
    assert not hasattr(party, "labels") and party.offsets == (3,) and party.dims == (3,)
    np.testing.assert_allclose(party.gram(0), X[:, 2:].T @ X[:, 2:])
    cd = p.coordinator_data()
    assert not hasattr(cd, "blocks") and cd.loss_weight == 1.0
    beta = rng.normal(size=6)
    full = np.hstack([np.ones((30, 1)), X])
    np.testing.assert_allclose(p.logits(beta), full @ beta)
    expect = np.logaddexp(0, -Y * (full @ beta)).sum() + 0.5 * beta @ beta
    assert p.objective(beta) == pytest.approx(expect)
    assert log_loss(full @ beta, Y) == pytest.approx(np.mean(np.log1p(np.exp(-Y * (full @ beta)))))
    mean = VerticalProblem([X[:, :2], X[:, 2:]], Y, 0.5, loss_scale="mean")
    assert mean.loss_weight == pytest.approx(1 / 30)


def test_centralized_solution_is_stationary():
    p = VerticalProblem([X[:, :2], X[:, 2:]], (Y + 1) / 2, reg_weight=0.1)
    b = p.centralized_solution()
    full = p.full_matrix()
    grad = full.T @ (-p.labels / (1 + np.exp(p.labels * (full @ b)))) + 0.2 * b
    assert np.abs(grad).max() < 1e-7


def test_labels():
    np.testing.assert_array_equal(to_pm1([0, 1, 1]), [-1, 1, 1])
    with pytest.raises(ValidationError, match="labels must be in"):
        VerticalProblem([X], np.arange(30.0))
    with pytest.raises(NonFiniteDataError):
        VerticalProblem([X], np.r_[np.nan, Y[1:]])
    with pytest.raises(ShapeMismatchError, match="labels have 29"):
        VerticalProblem([X], Y[:-1])


def test_bad_blocks():
    with pytest.raises(ShapeMismatchError, match="party 0 has 30 samples but party 1 has 29"):
        VerticalProblem([X[:, :2], X[:-1, 2:]], Y)
    with pytest.raises(ValidationError, match="party 1 has a block with no columns"):
        VerticalProblem([X, np.zeros((30, 0))], Y)
    bad = X.copy()
    bad[3, 1] = np.inf
    with pytest.raises(NonFiniteDataError, match="party 1"):
        VerticalProblem([X[:, :2], bad], Y)
    with pytest.raises(ValidationError, match="at least one party"):
        VerticalProblem([], Y)
    with pytest.raises(ValidationError, match="loss_scale"):
        VerticalProblem([X], Y, loss_scale="avg")


def test_sample_ids_must_agree_in_content_and_order():
    ids = np.arange(30)
    VerticalProblem([X[:, :2], X[:, 2:]], Y, sample_ids=[ids, ids.copy()])
    with pytest.raises(ValidationError, match="parties 0 and 1 hold different order"):
        VerticalProblem([X[:, :2], X[:, 2:]], Y, sample_ids=[ids, ids[::-1]])
    with pytest.raises(ValidationError, match="parties 0 and 2 hold different samples"):
        VerticalProblem([X[:, :1], X[:, 1:2], X[:, 2:]], Y, sample_ids=[ids, ids, ids + 1])
