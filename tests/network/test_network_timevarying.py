"""Tests of privdist.network.timevarying (S4 setting, spec §5)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import (
    NetworkShapeError,
    NotBStronglyConnectedError,
    NotDoublyStochasticError,
    UnknownNameError,
    ValidationError,
)
from privdist.network import (
    TimeVaryingNetwork,
    check_b_strongly_connected,
    check_doubly_stochastic,
    dzoa5,
    is_strongly_connected,
    random_time_varying,
    s4_matrices,
)


def test_s4_matrices_values():
    a1, a2, a3 = s4_matrices()
    for A in (a1, a2, a3):
        assert A.shape == (6, 6)
        check_doubly_stochastic(A, tol=1e-14)
    assert a1[0, 0] == a1[0, 5] == 0.5 and a1[3, 2] == a1[3, 3] == 0.5 and a1[0, 1] == 0
    assert np.all(np.diag(a2) == 0) and a2[2, 4] == pytest.approx(0.2)
    assert a3[0, 2] == a3[1, 5] == pytest.approx(1 / 3) and a3[0, 1] == 0
    # a1 alone is a directed ring; a3 alone is two cliques
    assert is_strongly_connected(a1) and is_strongly_connected(a2) and not is_strongly_connected(a3)


def test_s4_cyclic_schedule():
    tv = TimeVaryingNetwork(s4_matrices())
    assert tv.B == 3 and tv.n_agents == 6 and tv.n_matrices == 3 and tv.schedule == "cyclic"
    a1, a2, a3 = s4_matrices()
    for t, expected in [(1, a1), (2, a2), (3, a3), (4, a1), (302, a2)]:
        np.testing.assert_array_equal(tv.weights(t).toarray(), expected)
    check_b_strongly_connected(s4_matrices(), 3)
    tv.check_b_strongly_connected_until(500)
    np.testing.assert_array_equal(tv.in_neighbors(1, 0), [0, 5])
    np.testing.assert_array_equal(tv.in_neighbors(2, 0), [1, 2, 3, 4, 5])  # zero diagonal (AMB-O7)
    with pytest.raises(ValidationError, match="t must be >= 1"):
        tv.weights(0)


def test_not_b_strongly_connected_raises():
    _, _, a3 = s4_matrices()
    with pytest.raises(NotBStronglyConnectedError, match="B=1"):
        TimeVaryingNetwork([a3])
    eye = np.eye(6)
    a1 = s4_matrices()[0]
    # [a1, I, I] is fine with B = 3 but not with B = 2 (window {I, I})
    TimeVaryingNetwork([a1, eye, eye], B=3)
    with pytest.raises(NotBStronglyConnectedError, match="B=2"):
        TimeVaryingNetwork([a1, eye, eye], B=2)
    with pytest.raises(NotBStronglyConnectedError, match="union of all"):
        TimeVaryingNetwork([a3, eye], schedule="random", seed=0)


def test_constructor_validation():
    a1, a2, _ = s4_matrices()
    with pytest.raises(NotDoublyStochasticError, match=r"matrices\[1\]"):
        TimeVaryingNetwork([a1, a2 * 0.9])
    with pytest.raises(NetworkShapeError):
        TimeVaryingNetwork([a1, np.ones((3, 3)) / 3])
    with pytest.raises(ValidationError, match="at least one"):
        TimeVaryingNetwork([])
    with pytest.raises(ValidationError, match="static"):
        TimeVaryingNetwork(a1)
    with pytest.raises(UnknownNameError, match="schedule"):
        TimeVaryingNetwork([a1], schedule="markov")
    with pytest.raises(ValidationError, match="seed"):
        TimeVaryingNetwork([a1], schedule="random")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(0, 2**31), st.lists(st.integers(1, 400), min_size=1, max_size=20))
def test_random_schedule_reproducible_and_order_independent(seed, times):
    tv = TimeVaryingNetwork(s4_matrices(), schedule="random", seed=seed)
    forward = [tv.index(t) for t in times]
    backward = [tv.index(t) for t in reversed(times)][::-1]
    assert forward == backward
    again = TimeVaryingNetwork(s4_matrices(), schedule="random", seed=seed)
    assert forward == [again.index(t) for t in times]
    for t in times[:3]:
        np.testing.assert_array_equal(tv.weights(t).toarray(), s4_matrices()[tv.index(t)])


def test_random_schedule_uses_all_matrices_and_seed_matters():
    a = TimeVaryingNetwork(s4_matrices(), schedule="random", seed=1)
    b = TimeVaryingNetwork(s4_matrices(), schedule="random", seed=2)
    seq_a = [a.index(t) for t in range(1, 201)]
    assert set(seq_a) == {0, 1, 2}
    assert seq_a != [b.index(t) for t in range(1, 201)]
    assert a.B is None
    with pytest.raises(ValidationError, match="B is needed"):
        a.check_b_strongly_connected_until(50)
    a.check_b_strongly_connected_until(200, B=20)


def test_random_schedule_window_failure_is_reported():
    eye = np.eye(6)
    a1 = s4_matrices()[0]
    tv = TimeVaryingNetwork([a1, eye], schedule="random", seed=0)
    seq = [tv.index(t) for t in range(1, 101)]
    run = max(len(r) for r in "".join(map(str, seq)).split("0"))  # longest stretch of identity matrices
    tv.check_b_strongly_connected_until(100, B=run + 1)
    with pytest.raises(NotBStronglyConnectedError):
        tv.check_b_strongly_connected_until(100, B=run)


def test_static_and_from_network():
    net = dzoa5()
    tv = TimeVaryingNetwork.from_network(net)
    assert tv.B == 1 and tv.n_matrices == 1
    np.testing.assert_array_equal(tv.weights(17).toarray(), net.metropolis_weights().toarray())
    np.testing.assert_array_equal(tv.in_neighbors(5, 4), [3, 4])
    with pytest.raises(NotBStronglyConnectedError):
        TimeVaryingNetwork.static(np.eye(3))


def test_immutable_copies_and_pickle():
    tv = TimeVaryingNetwork(s4_matrices(), schedule="random", seed=9)
    W = tv.weights(1)
    W.data[:] = 0
    assert tv.weights(1).sum() == pytest.approx(6.0)
    with pytest.raises(AttributeError):
        tv.B = 4
    clone = pickle.loads(pickle.dumps(tv))
    assert [clone.index(t) for t in range(1, 30)] == [tv.index(t) for t in range(1, 30)]
    assert "random schedule (seed 9)" in tv.describe()


def test_random_time_varying_large():
    rng = np.random.default_rng(0)
    mats = random_time_varying(1000, 4, rng, density=3)
    assert len(mats) == 4
    for W in mats:
        assert isinstance(W, sp.csr_array) and W.shape == (1000, 1000)
        assert W.nnz <= 4 * 1000
        check_doubly_stochastic(W, tol=1e-12)
        assert np.all(W.diagonal() > 0)
        assert (W != W.T).nnz > 0  # directed
    tv = TimeVaryingNetwork(mats)
    assert tv.B == 4
    again = random_time_varying(1000, 4, np.random.default_rng(0), density=3)
    assert all((a != b).nnz == 0 for a, b in zip(mats, again))


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 3), (7, 1), (50, 5)])
def test_random_time_varying_small(n, m):
    mats = random_time_varying(n, m, np.random.default_rng(n + m))
    TimeVaryingNetwork(mats)  # B = m checked
    with pytest.raises(ValidationError, match="density must be >= 1"):
        random_time_varying(n, m, np.random.default_rng(0), density=0)
