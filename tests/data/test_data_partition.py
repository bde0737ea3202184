"""Horizontal (rows per agent) and vertical (columns per party) partitions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.data import horizontal_partition, vertical_partition
from privdist.errors import NonFiniteDataError, ShapeMismatchError, ValidationError


def _data(n=10, d=4):
    X = np.arange(n * d, dtype=float).reshape(n, d)
    return X, np.arange(n, dtype=float)


def test_even_split_contiguous_blocks():
    X, y = _data(10)
    parts = horizontal_partition(X, y, n_agents=3)
    assert [len(yk) for _, yk in parts] == [4, 3, 3]  # earlier agents get the extra sample
    np.testing.assert_array_equal(np.concatenate([yk for _, yk in parts]), y)  # order kept
    np.testing.assert_array_equal(np.vstack([Xk for Xk, _ in parts]), X)


def test_given_sizes():
    X, y = _data(10)
    parts = horizontal_partition(X, y, sizes=[2, 5, 3])
    assert [Xk.shape for Xk, _ in parts] == [(2, 4), (5, 4), (3, 4)]
    np.testing.assert_array_equal(parts[1][1], [2, 3, 4, 5, 6])


def test_seeded_shuffle_is_deterministic_and_covers_all_rows():
    X, y = _data(50)
    a = horizontal_partition(X, y, n_agents=4, rng=np.random.default_rng(5))
    b = horizontal_partition(X, y, n_agents=4, rng=np.random.default_rng(5))
    c = horizontal_partition(X, y, n_agents=4, rng=np.random.default_rng(6))
    for (Xa, ya), (Xb, yb) in zip(a, b):
        np.testing.assert_array_equal(Xa, Xb)
        np.testing.assert_array_equal(ya, yb)
    ys = np.concatenate([yk for _, yk in a])
    assert sorted(ys) == list(y) and not np.array_equal(ys, y)
    assert not np.array_equal(ys, np.concatenate([yk for _, yk in c]))
    for Xk, yk in a:  # rows stay with their labels
        np.testing.assert_array_equal(Xk, X[yk.astype(int)])
    np.testing.assert_array_equal(ys, np.random.default_rng(5).permutation(50))  # documented: rng.permutation(n)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 60), st.data())
def test_even_split_sizes_property(n, data):
    k = data.draw(st.integers(1, n))
    X, y = _data(n, 2)
    sizes = [len(yk) for _, yk in horizontal_partition(X, y, n_agents=k)]
    assert sum(sizes) == n and len(sizes) == k
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


def test_sparse_rows():
    X, y = _data(7)
    parts = horizontal_partition(sp.csr_matrix(X), y, n_agents=2, rng=np.random.default_rng(0))
    assert all(sp.issparse(Xk) for Xk, _ in parts)
    for Xk, yk in parts:
        np.testing.assert_array_equal(Xk.toarray(), X[yk.astype(int)])


def test_horizontal_errors():
    X, y = _data(10)
    with pytest.raises(ValidationError, match="agent 10 would get no samples"):
        horizontal_partition(X, y, n_agents=12)
    with pytest.raises(ValidationError, match=r"agent 3 would get no samples \(sizes\[3\] = 0\)"):
        horizontal_partition(X, y, sizes=[4, 3, 3, 0])
    with pytest.raises(ShapeMismatchError, match="sizes sum to 9 but there are 10 samples"):
        horizontal_partition(X, y, sizes=[4, 5])
    with pytest.raises(ValidationError, match="exactly one of n_agents and sizes"):
        horizontal_partition(X, y)
    with pytest.raises(ValidationError, match="exactly one of n_agents and sizes"):
        horizontal_partition(X, y, n_agents=2, sizes=[5, 5])
    with pytest.raises(ValidationError, match="n_agents must be >= 1"):
        horizontal_partition(X, y, n_agents=0)
    with pytest.raises(TypeError, match="Generator"):
        horizontal_partition(X, y, n_agents=2, rng=3)
    with pytest.raises(ShapeMismatchError):
        horizontal_partition(X, y[:5], n_agents=2)
    X[1, 1] = np.nan
    with pytest.raises(NonFiniteDataError, match="row 1, column 1"):
        horizontal_partition(X, y, n_agents=2)


def test_vertical_int_sizes_and_indices():
    X = np.arange(2 * 7, dtype=float).reshape(2, 7)
    parts = vertical_partition(X, 3)
    assert [p.shape[1] for p in parts] == [3, 2, 2]
    np.testing.assert_array_equal(np.hstack(parts), X)
    parts = vertical_partition(X, [2, 5])
    np.testing.assert_array_equal(parts[1], X[:, 2:])
    idx = [np.array([6, 0]), np.array([1, 2, 3]), [4, 5]]
    parts = vertical_partition(X, idx)
    np.testing.assert_array_equal(parts[0], X[:, [6, 0]])  # the given order is kept
    np.testing.assert_array_equal(parts[2], X[:, [4, 5]])


def test_vertical_sparse_a9a_like_split():
    rng = np.random.default_rng(0)
    X = sp.random(20, 123, density=0.1, format="csr", random_state=rng)
    p1, p2 = vertical_partition(X, [66, 57])  # spec §3.9: features 1-66 / 67-123
    assert sp.issparse(p1) and p1.format == "csr" and p1.shape == (20, 66) and p2.shape == (20, 57)
    np.testing.assert_array_equal(sp.hstack([p1, p2]).toarray(), X.toarray())
    q = vertical_partition(X, [np.arange(60, 123), np.arange(60)])
    np.testing.assert_array_equal(q[1].toarray(), X.toarray()[:, :60])


def test_vertical_errors():
    X = np.ones((3, 5))
    with pytest.raises(ValidationError, match="party 1 would get no columns"):
        vertical_partition(X, [np.array([0, 1, 2, 3, 4]), np.array([], dtype=int)])
    with pytest.raises(ValidationError, match="party 1 would get no columns"):
        vertical_partition(X, [5, 0])
    with pytest.raises(ValidationError, match="party 5 would get no columns"):
        vertical_partition(X, 6)
    with pytest.raises(ShapeMismatchError, match="sizes sum to 4 but there are 5 columns"):
        vertical_partition(X, [2, 2])
    with pytest.raises(ValidationError, match="column 2 is in block 0 and in block 1"):
        vertical_partition(X, [[0, 1, 2], [2, 3, 4]])
    with pytest.raises(ValidationError, match="1 column.* in no block .first: 4"):
        vertical_partition(X, [[0, 1], [2, 3]])
    with pytest.raises(ValidationError, match="column index 7 outside 0..4"):
        vertical_partition(X, [[0, 1, 2, 3, 7]])
    with pytest.raises(ValidationError, match="block 0 repeats column 1"):
        vertical_partition(X, [[0, 1, 1], [2, 3, 4]])
    with pytest.raises(TypeError):
        vertical_partition(X, "two")
