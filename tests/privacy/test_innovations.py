"""The recursions behind the pairwise accountant (issue 29): lag covariance, the compiled closed-loop sums and
impulse responses equal the direct computation from the blocks of the view matrix; the row bounds bracket the worst
case."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import cholesky, lapack, solve_triangular

from privdist.algorithms.dpadmm import DPADMM
from privdist.algorithms.linear_models import dpadmm_protocol, gossip_protocol
from privdist.network import TimeVaryingNetwork, complete, random_regular, random_time_varying
from privdist.privacy.pairwise.ball_quadratic import ball_quadratic_max
from privdist.privacy.pairwise.innovations import (fisher_matrices, impulse_fisher, lag_covariance, row_bounds, separable_noise,
                                          whitened_sums)
from privdist.privacy.pairwise.linear_protocol import observed_rows, observer_view
from privdist.privacy.pairwise.network_dp import _view_covariance
from privdist.problems import HorizontalERM, make_loss, make_regularizer


def _sigma(rng, T, N, members, separable=True):
    sigma = (np.outer(1.0 / np.sqrt(np.arange(1, T + 1)), rng.uniform(0.5, 2.0, N)) if separable
             else rng.uniform(0.5, 2.0, (T, N)))
    sigma[:, members] = 0.0
    return sigma


def _protocol(kind, rng):
    if kind == "static":
        N, T = 9, 5
        return gossip_protocol("g", random_regular(N, 4, rng), T, np.ones((T, N)))
    if kind == "timevarying":
        N, T = 7, 4
        return gossip_protocol("g", TimeVaryingNetwork(random_time_varying(N, 3, rng)), T, np.ones((T, N)))
    N, T = 4, 3
    problem = HorizontalERM([(rng.standard_normal((5, 2)), rng.standard_normal(5)) for _ in range(N)],
                            make_loss("squared"), make_regularizer("l2"), 0.0)
    return dpadmm_protocol(DPADMM(rho=1.3, eta0=0.7), problem, complete(N), T)


def test_separable_noise_finds_rank_one_variances_only():
    d, w = np.array([1.0, 0.5, 0.25]), np.array([2.0, 0.0, 1.0, 3.0])
    got = separable_noise(np.sqrt(np.outer(d, w)))
    assert got is not None and np.allclose(np.outer(*got), np.outer(d, w))
    bad = np.sqrt(np.outer(d, w))
    bad[1, 2] *= 1.5
    assert separable_noise(bad) is None
    assert separable_noise(np.zeros((3, 4))) is None


@pytest.mark.parametrize("observer", [[0], [2, 5]])
def test_lag_covariance_equals_the_covariance_of_the_blocks(observer):
    rng = np.random.default_rng(3)
    protocol = _protocol("static", rng)
    assert protocol.time_invariant
    members = np.array(observer)
    sigma = _sigma(rng, protocol.rounds, protocol.n_agents, members)
    G = lag_covariance(protocol, observed_rows(protocol, members), sigma)
    ref = _view_covariance(observer_view(protocol, members), sigma)
    assert G.shape == ref.shape and np.allclose(G, ref, rtol=1e-12, atol=1e-12)


def test_lag_covariance_declines_what_it_cannot_do():
    rng = np.random.default_rng(4)
    static, varying = _protocol("static", rng), _protocol("timevarying", rng)
    members = np.array([0])
    assert lag_covariance(static, observed_rows(static, members),
                          _sigma(rng, static.rounds, static.n_agents, members, separable=False)) is None
    assert not varying.time_invariant
    assert lag_covariance(varying, observed_rows(varying, members),
                          _sigma(rng, varying.rounds, varying.n_agents, members)) is None


def _whitened_reference(view, L, sigma) -> np.ndarray:
    """``X`` (agents x rounds x rows): ``L^-1`` applied to each round's columns of ``B S``, zero above the round's
    first row."""
    N, T = view.blocks[0].shape[1], len(view.blocks)
    X = np.zeros((N, T, view.m))
    for s, block in enumerate(view.blocks):
        a = view.rows_from[s]
        X[:, s, a:] = solve_triangular(L[a:, a:], block * sigma[s], lower=True).T
    return X


@pytest.mark.parametrize("kind", ["static", "timevarying", "dpadmm"])
@pytest.mark.parametrize("group_rounds", [1, 2, 10])
def test_closed_loop_sums_equal_the_triangular_solve(kind, group_rounds):
    rng = np.random.default_rng(5)
    protocol = _protocol(kind, rng)
    T, N = protocol.rounds, protocol.n_agents
    members = np.array([N if protocol.has_coordinator else 1])  # an agent of DP-ADMM has a singular view
    sigma = _sigma(rng, T, N, members[members < N], separable=False)
    view = observer_view(protocol, members)
    L = cholesky(_view_covariance(view, sigma), lower=True)
    J, info = lapack.dtrtri(L, lower=1)
    assert info == 0
    X = _whitened_reference(view, L, sigma)
    keep = np.array([0, N - 1, 2])
    S1, S2, Mk = whitened_sums(protocol, observed_rows(protocol, members), J, sigma, keep, group_rounds)
    assert np.allclose(S1, X.sum(axis=1), atol=1e-12) and np.allclose(S2, np.abs(X).sum(axis=1), atol=1e-12)
    M = fisher_matrices(X)
    assert np.allclose(Mk, M[keep], atol=1e-12)
    assert np.allclose(M, np.swapaxes(M, 1, 2)) and np.all(np.linalg.eigvalsh(M)[:, 0] > -1e-12)
    lower, upper = row_bounds(S1, S2)  # an attained value and a bound on the worst case over the balls
    targets = np.setdiff1d(np.arange(N), members)
    res = ball_quadratic_max(M[targets])
    assert np.all(lower[targets] <= res["upper"] * (1 + 1e-9))
    assert np.all(res["lower"] <= upper[targets] * (1 + 1e-9))


def test_impulse_responses_give_the_same_matrices():
    rng = np.random.default_rng(6)
    protocol = _protocol("static", rng)
    members = np.array([0])
    sigma = _sigma(rng, protocol.rounds, protocol.n_agents, members)
    rows = observed_rows(protocol, members)
    J = lapack.dtrtri(cholesky(lag_covariance(protocol, rows, sigma), lower=True), lower=1)[0]
    targets = np.array([3, 1, 8])
    Mk = whitened_sums(protocol, rows, J, sigma, targets)[2]
    assert np.allclose(impulse_fisher(protocol, rows, J, sigma, targets), Mk, atol=1e-12)


def test_row_bounds_meet_when_no_row_mixes_signs():
    rng = np.random.default_rng(7)
    X = np.abs(rng.standard_normal((4, 6, 9)))  # targets x rounds x rows, all entries >= 0
    lower, upper = row_bounds(X.sum(axis=1), np.abs(X).sum(axis=1))
    res = ball_quadratic_max(fisher_matrices(X))
    assert np.allclose(lower, upper) and np.allclose(lower, res["upper"], rtol=1e-9)
    X[:, 0] *= -1  # one round against the others: the row bound is loose, still above the worst case
    lower, upper = row_bounds(X.sum(axis=1), np.abs(X).sum(axis=1))
    res = ball_quadratic_max(fisher_matrices(X))
    assert np.all(upper > lower) and np.all(upper >= res["upper"] * (1 - 1e-9))
    assert np.all(lower <= res["upper"] * (1 + 1e-9))
