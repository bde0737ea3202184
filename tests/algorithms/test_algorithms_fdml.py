"""FDML synchronous mini-batch SGD over vertical features (spec §6.9)."""

import numpy as np
import pytest
from scipy.special import expit

from conftest import make_vertical_problem
from privdist.algorithms import make_algorithm
from privdist.errors import ValidationError
from privdist.network import complete
from privdist.runtime import run


def _mean_objective(p, beta, lam):
    h = p.logits(beta)
    return np.mean(np.logaddexp(0, -p.labels * h)) + lam * beta @ beta


def test_matches_centralized_minibatch_sgd():
    """The protocol computes exactly centralized mini-batch SGD on the concatenated features."""
    p = make_vertical_problem(0, n_parties=3, n_samples=90, reg_weight=0.01)
    algo = make_algorithm("fdml_sgd", lr=0.5, batch_size=30)
    res = run(algo, p, complete(3), 10, transcript="none")
    X, Y, beta = p.full_matrix(), p.labels, np.zeros(p.n_features)
    for t in range(9):  # round t+1 applies the residuals of batch t
        idx = np.arange(90)[(t % 3) * 30:(t % 3 + 1) * 30]
        r = -Y[idx] * expit(-Y[idx] * (X[idx] @ beta))
        beta = beta - 0.5 * (X[idx].T @ r / 30 + 2 * 0.01 * beta)
    np.testing.assert_allclose(res.estimates.sum(axis=0), beta, atol=1e-12)


def test_decreases_objective_with_shuffling_and_random_init():
    p = make_vertical_problem(2, n_parties=2, n_samples=120, reg_weight=0.001)
    algo = make_algorithm("fdml_sgd", lr=0.5, batch_size=20, shuffle=True, init_std=0.01)
    res = run(algo, p, complete(2), 60, metrics={"obj": lambda e: _mean_objective(p, e.sum(0), 0.001)})
    assert res.curves["obj"][-1] < 0.8 * res.curves["obj"][0]
    other = run(algo, p, complete(2), 60, seed=1, metrics={"obj": lambda e: _mean_objective(p, e.sum(0), 0.001)})
    assert not np.allclose(other.estimates, res.estimates)
    assert algo.steps_per_epoch(120) == 6


def test_messages_are_batch_sized_and_carry_no_features():
    p = make_vertical_problem(3, n_parties=2, n_samples=120)
    res = run(make_algorithm("fdml_sgd", batch_size=10, noise_std=0.1), p, complete(2), 5, transcript="full")
    for msgs in res.transcript.rounds.values():
        for (role, name), arr in msgs.items():
            assert arr.shape[-1] == 10
    assert all(not r.guarantee and "without a sensitivity analysis" in r.reason for r, _ in res.ledger.entries(0))
    assert any("no differential-privacy guarantee" in a for a in res.ledger.assumptions)


def test_bad_input(ridge_problem, net5):
    with pytest.raises(ValidationError, match="batch_size"):
        run(make_algorithm("fdml_sgd", batch_size=500), make_vertical_problem(0), complete(5), 1)
    with pytest.raises(ValidationError, match="VerticalProblem"):
        run(make_algorithm("fdml_sgd"), ridge_problem, net5, 1)
    with pytest.raises(ValidationError, match="lr"):
        make_algorithm("fdml_sgd", lr=0.0)
