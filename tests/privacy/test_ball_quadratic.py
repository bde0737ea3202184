"""Worst case of a PSD quadratic form over per-round unit balls (issue 29): sound, and tight where claimed."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import ShapeMismatchError
from privdist.privacy.pairwise.ball_quadratic import WarmStarts, ball_quadratic_max


def _psd(rng, T, rank=None):
    F = rng.standard_normal((T, rank or T))
    return F @ F.T


def _sdp(M):
    T = M.shape[0]
    X = cp.Variable((T, T), PSD=True)
    prob = cp.Problem(cp.Maximize(cp.trace(M @ X)), [cp.diag(X) <= 1])
    prob.solve(solver=cp.SCS, eps=1e-9, max_iters=100000)
    return prob.value


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(1, 9), dim=st.integers(1, 4))
def test_upper_bound_dominates_every_feasible_sequence(seed, T, dim):
    rng = np.random.default_rng(seed)
    M = _psd(rng, T, rank=int(rng.integers(1, T + 1)))
    res = ball_quadratic_max(M)
    assert res["lower"][0] <= res["upper"][0] * (1 + 1e-12)
    assert res["upper"][0] <= np.abs(M).sum() * (1 + 1e-12)
    for _ in range(20):  # any contributions of norm <= 1 in any dimension stay below the bound
        V = rng.standard_normal((T, dim))
        V /= np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1.0) * rng.uniform(1.0, 3.0, (T, 1))
        assert np.sum(M * (V @ V.T)) <= res["upper"][0] * (1 + 1e-9) + 1e-12


def test_sign_consistent_matrices_are_exact():
    rng = np.random.default_rng(0)
    F = np.abs(rng.standard_normal((6, 6)))
    M = F @ F.T
    s = np.array([1, -1, 1, 1, -1, -1.0])
    res = ball_quadratic_max(np.stack([M, M * np.outer(s, s)]))
    assert np.allclose(res["upper"], M.sum()) and np.allclose(res["lower"], M.sum())
    assert list(res["method"]) == ["sign", "sign"]


@pytest.mark.parametrize("seed", range(4))
def test_certified_bound_matches_the_semidefinite_relaxation(seed):
    rng = np.random.default_rng(seed)
    T = 10
    M = _psd(rng, T)
    res = ball_quadratic_max(M)
    ref = _sdp(M)
    assert res["method"][0] == "sdp"
    assert res["upper"][0] >= ref * (1 - 1e-6)
    assert res["upper"][0] == pytest.approx(ref, rel=2e-3)
    assert res["lower"][0] == pytest.approx(ref, rel=2e-3)


def test_shapes_are_checked():
    with pytest.raises(ShapeMismatchError):
        ball_quadratic_max(np.ones((2, 3)))


@pytest.mark.parametrize("scale", [1e-40, 1e40])
def test_bounds_scale_with_the_matrix(scale):
    """The power method iterates in single precision: matrices far outside its range give the same bounds."""
    M = _psd(np.random.default_rng(0), 10)
    ref, got = ball_quadratic_max(M), ball_quadratic_max(M * scale)
    assert got["method"][0] == "sdp"
    assert got["upper"][0] / scale == pytest.approx(ref["upper"][0], rel=1e-9)
    assert got["lower"][0] / scale == pytest.approx(ref["lower"][0], rel=1e-9)


def test_warm_starts_change_the_work_not_the_bounds():
    """A start from a similar solved matrix closes sooner; a start from an unrelated one (or garbage) still gives
    valid bounds: only the iterate changes, every bound is the matrix's own."""
    rng = np.random.default_rng(8)
    T = 12
    base = _psd(rng, T) - 0.3 * T * np.eye(T)
    base = base @ base  # PSD, not sign-consistent
    similar = np.stack([base + 1e-4 * _psd(rng, T) for _ in range(5)])
    cold = ball_quadratic_max(similar)
    warm = WarmStarts()
    ball_quadratic_max(base, warm=warm)
    hot = ball_quadratic_max(similar, warm=warm)
    for res in (cold, hot):
        assert np.all(res["lower"] <= res["upper"])
        assert np.all(res["upper"] - res["lower"] <= 1e-3 * res["upper"])
    assert np.all(hot["upper"] >= cold["lower"] * (1 - 1e-9)) and np.all(cold["upper"] >= hot["lower"] * (1 - 1e-9))
    junk = WarmStarts(similarity=-1.0)  # every start taken, however unlike
    junk.store(rng.standard_normal((3, T, T)), rng.standard_normal((3, T, hot["rank"])))
    again = ball_quadratic_max(similar, warm=junk)
    assert np.all(again["upper"] >= cold["lower"] * (1 - 1e-9)) and np.all(again["lower"] <= cold["upper"] * (1 + 1e-9))
