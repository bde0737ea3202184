"""Tests of privdist.network.checks (double stochasticity, strong and B-strong connectivity)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import (
    NetworkShapeError,
    NonFiniteDataError,
    NotBStronglyConnectedError,
    NotDoublyStochasticError,
    ValidationError,
)
from privdist.network import check_b_strongly_connected, check_doubly_stochastic, is_strongly_connected


def _perm(p):
    n = len(p)
    P = np.zeros((n, n))
    P[np.arange(n), p] = 1.0
    return P


def test_doubly_stochastic_accepts_dense_and_sparse():
    W = np.array([[0.5, 0.5, 0], [0.25, 0.25, 0.5], [0.25, 0.25, 0.5]])
    out = check_doubly_stochastic(W)
    assert isinstance(out, sp.csr_array)
    np.testing.assert_array_equal(out.toarray(), W)
    check_doubly_stochastic(sp.csr_matrix(W))
    check_doubly_stochastic(sp.coo_array(W))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(2, 12), st.integers(1, 4), st.integers(0, 2**31))
def test_birkhoff_mixtures_are_doubly_stochastic(n, k, seed):
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(k))
    W = sum(w * _perm(rng.permutation(n)) for w in weights)
    check_doubly_stochastic(W, tol=1e-12)


def test_row_error_names_row_and_sum():
    W = np.array([[0.5, 0.5], [0.5, 0.4]])
    with pytest.raises(NotDoublyStochasticError, match=r"row 1 of A sums to 0\.9"):
        check_doubly_stochastic(W, name="A")


def test_column_error_names_column():
    W = np.array([[0.5, 0.5], [0.2, 0.8]])  # rows fine, columns 0.7 and 1.3
    with pytest.raises(NotDoublyStochasticError, match=r"column 0 of W sums to 0\.7.*2 column\(s\) are off"):
        check_doubly_stochastic(W)


def test_negative_entry_and_shape_and_nan():
    with pytest.raises(NotDoublyStochasticError, match=r"nonnegative entries, got -0\.5 at \(0, 1\)"):
        check_doubly_stochastic([[1.5, -0.5], [-0.5, 1.5]])
    with pytest.raises(NetworkShapeError, match="square"):
        check_doubly_stochastic(np.ones((2, 3)) / 3)
    with pytest.raises(NonFiniteDataError):
        check_doubly_stochastic([[np.nan, 1], [1, 0]])
    with pytest.raises(ValidationError, match="tol"):
        check_doubly_stochastic(np.eye(2), tol=-1.0)


def test_tolerance():
    W = np.eye(2) * (1 + 1e-12)
    check_doubly_stochastic(W)
    with pytest.raises(NotDoublyStochasticError):
        check_doubly_stochastic(W, tol=1e-14)


def test_strong_connectivity_direction():
    ring = _perm([(i - 1) % 4 for i in range(4)])  # i receives from i-1: a directed cycle
    assert is_strongly_connected(ring)
    path = np.zeros((3, 3))
    path[1, 0] = path[2, 1] = 1.0  # 0 -> 1 -> 2 only
    assert not is_strongly_connected(path)
    assert is_strongly_connected(np.ones((1, 1)))
    assert not is_strongly_connected(np.eye(3))
    assert is_strongly_connected(sp.csr_array(ring))


def test_b_strong_connectivity_windows():
    n = 4
    eye = np.eye(n)
    ring = _perm([(i - 1) % n for i in range(n)])
    # the ring appears once in a period of 3: every cyclic window of 3 contains it, windows of 2 do not all
    seq = [ring, eye, eye]
    check_b_strongly_connected(seq, 3)
    with pytest.raises(NotBStronglyConnectedError, match=r"B=2.*starting at index 1"):
        check_b_strongly_connected(seq, 2)
    # non-cyclic: only windows fully inside the sequence
    check_b_strongly_connected([eye, ring, eye], 2, cyclic=False)
    with pytest.raises(NotBStronglyConnectedError, match="starting at index 2"):
        check_b_strongly_connected([eye, ring, eye, eye], 2, cyclic=False)
    with pytest.raises(ValidationError, match="longer than the schedule"):
        check_b_strongly_connected([ring], 2, cyclic=False)


def test_b_check_input_errors():
    with pytest.raises(ValidationError, match="at least one"):
        check_b_strongly_connected([], 1)
    with pytest.raises(NetworkShapeError, match="one shape"):
        check_b_strongly_connected([np.eye(2), np.eye(3)], 2)
    with pytest.raises(ValidationError, match="B must be >= 1"):
        check_b_strongly_connected([np.eye(2)], 0)
