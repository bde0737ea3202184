"""Constraint sets, exact projections and mirror steps of DPDO-NC (spec §1.6, §5.4; S4 Remark 2)."""

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privdist.errors import ShapeMismatchError, UnknownNameError, ValidationError
from privdist.problems.constraints import (L1Ball, Simplex, project_l1_ball, project_l1_ball_q,
                                           project_simplex)
from privdist.problems.mirror import EntropyMirror, EuclideanMirror, MahalanobisMirror, make_mirror


def _cvx_projection(u, radius, Q):
    x = cp.Variable(len(u))
    cp.Problem(cp.Minimize(cp.quad_form(x - u, Q)), [cp.norm1(x) <= radius]).solve()
    return x.value


def test_l1_projection_known_values():
    # (3, 1) onto the unit... radius 2 ball: soft threshold by 1 -> (2, 0); (1, 1) radius 1 -> (0.5, 0.5)
    np.testing.assert_allclose(project_l1_ball([[3.0, 1.0], [1.0, 1.0], [0.2, -0.3]], 2.0),
                               [[2.0, 0.0], [1.0, 1.0], [0.2, -0.3]])
    np.testing.assert_allclose(project_l1_ball([[1.0, -1.0]], 1.0), [[0.5, -0.5]])


@pytest.mark.parametrize("Q", [np.eye(3), np.diag([1.0, 2.0, 5.0]), np.array([[2.0, 0.6, 0.1], [0.6, 1.0, -0.2],
                                                                          [0.1, -0.2, 1.5]])])
def test_q_projection_matches_cvxpy(Q):
    rng = np.random.default_rng(0)
    U = rng.normal(scale=3.0, size=(12, 3))
    X = project_l1_ball_q(U, 2.0, Q)
    for u, x in zip(U, X):
        ref = _cvx_projection(u, 2.0, Q)
        val = lambda z: (z - u) @ Q @ (z - u)  # noqa: E731
        assert np.abs(x).sum() <= 2.0 + 1e-9
        assert val(x) <= val(ref) + 1e-6
        np.testing.assert_allclose(x, ref, atol=2e-4)


@settings(max_examples=60, deadline=None)
@given(arrays(float, (4, 3), elements=st.floats(-20, 20)), st.floats(0.1, 5.0))
def test_l1_projection_invariants(U, radius):
    X = project_l1_ball(U, radius)
    assert np.all(np.abs(X).sum(axis=1) <= radius * (1 + 1e-12) + 1e-12)
    np.testing.assert_allclose(project_l1_ball(X, radius), X, atol=1e-9)  # idempotent
    inside = np.abs(U).sum(axis=1) <= radius
    np.testing.assert_array_equal(X[inside], U[inside])
    # optimality: no point of the ball sampled at random is closer
    rng = np.random.default_rng(0)
    cand = project_l1_ball(rng.normal(size=(200, 3)) * radius, radius)
    for u, x in zip(U, X):
        assert np.linalg.norm(u - x) <= np.linalg.norm(cand - u, axis=1).min() + 1e-9


@settings(max_examples=60, deadline=None)
@given(arrays(float, (3, 4), elements=st.floats(-10, 10)))
def test_simplex_projection_invariants(U):
    X = project_simplex(U)
    assert np.all(X >= 0)
    np.testing.assert_allclose(X.sum(axis=1), 1.0)
    np.testing.assert_allclose(project_simplex(X), X, atol=1e-12)


def test_simplex_projection_known_value():
    np.testing.assert_allclose(project_simplex([[2.0, 0.0, 0.0], [0.5, 0.5, 0.5]]),
                               [[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])


def test_mirror_steps_closed_forms():
    ball = L1Ball(2, 3.0)
    Z, G = np.array([[0.5, -0.2]]), np.array([[1.0, 2.0]])
    np.testing.assert_allclose(EuclideanMirror(1.0).step(Z, G, 0.1, ball), Z - 0.1 * G)
    np.testing.assert_allclose(make_mirror("squared").step(Z, G, 0.1, ball), Z - 0.05 * G)
    m = make_mirror("mahalanobis")  # Q = diag(1, 2)
    np.testing.assert_allclose(m.step(Z, G, 0.1, ball), Z - 0.05 * G / np.array([1.0, 2.0]))
    assert m.omega == pytest.approx(2.0) and make_mirror("squared").omega == 2.0
    assert make_mirror("euclidean").omega == 1.0


def test_mahalanobis_step_is_the_bregman_argmin():
    Q = np.array([[2.0, 0.5], [0.5, 1.0]])
    m, ball = MahalanobisMirror(Q), L1Ball(2, 1.0)
    z, g, alpha = np.array([1.5, 1.0]), np.array([0.3, -2.0]), 0.4
    x = cp.Variable(2)
    obj = cp.quad_form(x - z, Q) + alpha * g @ x  # D_phi(x, z) = (x - z)^T Q (x - z) for phi = x^T Q x
    cp.Problem(cp.Minimize(obj), [cp.norm1(x) <= 1.0]).solve()
    np.testing.assert_allclose(m.step(z[None], g[None], alpha, ball)[0], x.value, atol=2e-4)


def test_entropy_step_stays_in_simplex_and_is_exponentiated_gradient():
    sim = Simplex(3)
    m = EntropyMirror(floor=0.0)
    z = np.array([[0.2, 0.3, 0.5]])
    g = np.array([[1.0, 0.0, -1.0]])
    x = m.step(z, g, 0.5, sim)
    w = z * np.exp(-0.5 * g)
    np.testing.assert_allclose(x, w / w.sum())
    noisy = np.array([[-2.0, 0.7, 3.1], [0.1, 0.1, -0.4]])  # outside the simplex after Laplace noise
    x2 = EntropyMirror().step(noisy, np.ones((2, 3)), 0.3, sim)
    assert np.all(x2 > 0) and np.allclose(x2.sum(axis=1), 1.0)


def test_mirror_and_domain_errors():
    with pytest.raises(ValidationError, match="positive definite"):
        MahalanobisMirror(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValidationError, match="symmetric"):
        make_mirror("mahalanobis", Q=[[1.0, 0.3], [0.0, 1.0]])
    with pytest.raises(ValidationError, match="simplex"):
        EntropyMirror().check_domain(L1Ball(2, 3.0))
    with pytest.raises(ValidationError, match="L1Ball"):
        make_mirror("mahalanobis").check_domain(Simplex(2))
    with pytest.raises(UnknownNameError):
        make_mirror("kl")
    with pytest.raises(ValidationError, match="only used"):
        make_mirror("euclidean", Q=np.eye(2))
    with pytest.raises(ValidationError, match="radius"):
        project_l1_ball([[1.0]], 0.0)
    with pytest.raises(ShapeMismatchError):
        project_l1_ball([1.0, 2.0], 1.0)
    with pytest.raises(ValidationError, match="MAX_FACE_DIM"):
        Q = np.eye(9) + 0.1
        project_l1_ball_q(np.ones((1, 9)), 1.0, Q)


def test_domain_support_and_vertices():
    ball = L1Ball(2, 3.0)
    G = np.array([[1.0, -2.0]])
    assert ball.support(G)[0] == pytest.approx(6.0)
    assert ball.support(G)[0] == pytest.approx(max(ball.vertices() @ G[0]))
    assert ball.max_distance([0.8, 0.95]) == pytest.approx(4.030199, abs=1e-6)
    assert Simplex(3).support([[0.1, 0.5, -1.0]])[0] == pytest.approx(0.5)
