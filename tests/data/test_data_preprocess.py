"""Spec §1.4 normalisation and input validation of the data layer."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privdist.data import Dataset, check_data, normalize_columns_rows
from privdist.errors import NonFiniteDataError, ShapeMismatchError, ValidationError

_matrices = arrays(
    np.float64,
    st.tuples(st.integers(1, 12), st.integers(1, 8)),
    elements=st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=True),
)


def _reference(X: np.ndarray) -> np.ndarray:
    """Literal spec §1.4: divide columns by max-abs (skip zero columns), then rows by max(1, norm)."""
    C = X.astype(float).copy()
    for j in range(C.shape[1]):
        m = np.max(np.abs(C[:, j]))
        if m > 0:
            C[:, j] /= m
    for i in range(C.shape[0]):
        C[i] /= max(1.0, np.linalg.norm(C[i]))
    return C


@settings(max_examples=60, deadline=None)
@given(_matrices)
def test_normalization_matches_spec_and_bounds(X):
    before = X.copy()
    out = normalize_columns_rows(X)
    np.testing.assert_array_equal(X, before)  # input untouched
    np.testing.assert_allclose(out, _reference(X), rtol=1e-12, atol=1e-300)
    assert np.all(np.linalg.norm(out, axis=1) <= 1 + 1e-12)
    assert np.all(np.abs(out) <= 1 + 1e-12)
    # zero columns stay zero
    zero_cols = np.all(X == 0, axis=0)
    assert np.all(out[:, zero_cols] == 0)


@settings(max_examples=60, deadline=None)
@given(_matrices)
def test_column_step_bounded_before_row_step(X):
    """Undoing the row step gives columns with max |entry| exactly 1 (non-zero columns) or 0."""
    out = normalize_columns_rows(X)
    col = X / np.where(np.abs(X).max(axis=0) > 0, np.abs(X).max(axis=0), 1.0)
    assert np.all(np.abs(col).max(axis=0) <= 1.0)
    scale = np.maximum(1.0, np.linalg.norm(col, axis=1))
    np.testing.assert_allclose(out * scale[:, None], col, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(_matrices)
def test_sparse_gives_same_result_as_dense(X):
    X = np.where(np.abs(X) < 1e5, 0.0, X)  # make it actually sparse
    out_sparse = normalize_columns_rows(sp.csr_matrix(X))
    assert sp.issparse(out_sparse) and out_sparse.format == "csr"
    np.testing.assert_allclose(out_sparse.toarray(), normalize_columns_rows(X), rtol=1e-12, atol=0)


def test_normalization_known_values():
    X = np.array([[2.0, 0.0, -4.0], [1.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])
    out = normalize_columns_rows(X)
    # columns become [1, .5, -.5], [0, 0, 0], [-1, .25, 0]; row 0 has norm sqrt(2) > 1
    np.testing.assert_allclose(out[0], np.array([1.0, 0.0, -1.0]) / np.sqrt(2))
    np.testing.assert_allclose(out[1], [0.5, 0.0, 0.25])  # norm < 1: unchanged
    np.testing.assert_allclose(out[2], [-0.5, 0.0, 0.0])
    assert normalize_columns_rows([[3, 4]]).dtype == np.float64  # integer input accepted


def test_normalization_rejects_nan_and_1d():
    with pytest.raises(NonFiniteDataError, match="row 1, column 0"):
        normalize_columns_rows(np.array([[1.0, 2.0], [np.nan, 1.0]]))
    with pytest.raises(ShapeMismatchError, match="2-D"):
        normalize_columns_rows(np.ones(3))


def test_check_data_names_dataset_row_and_column():
    X = np.ones((4, 3))
    X[2, 1] = np.inf
    with pytest.raises(NonFiniteDataError, match=r"X of toy .*row 2, column 1"):
        check_data(X, np.ones(4), name="toy")
    Xs = sp.csr_matrix(np.eye(3))
    Xs.data[2] = np.nan  # the (2, 2) entry
    with pytest.raises(NonFiniteDataError, match=r"X of sp .*row 2, column 2"):
        check_data(Xs, np.ones(3), name="sp")
    with pytest.raises(NonFiniteDataError, match="labels y of toy.*row 3"):
        check_data(np.ones((4, 3)), [1, 1, 1, np.nan], name="toy")


def test_check_data_shapes_and_types():
    with pytest.raises(ShapeMismatchError, match="3 rows but y has 2 labels"):
        check_data(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ShapeMismatchError, match="2-D"):
        check_data(np.ones(3), np.ones(3))
    with pytest.raises(ShapeMismatchError, match="1-D"):
        check_data(np.ones((3, 2)), np.ones((3, 1)))
    with pytest.raises(ValidationError, match="numeric"):
        check_data([["a", "b"]], [1.0])
    X, y = check_data([[1, 2], [3, 4]], [1, -1])
    assert X.dtype == np.float64 and y.dtype == np.float64
    Xs, _ = check_data(sp.coo_matrix(np.eye(2)), [1, 2])
    assert sp.issparse(Xs) and Xs.format == "csr"


def test_dataset_validates_and_is_frozen():
    ds = Dataset(X=[[1, 2], [3, 4], [5, 6]], y=[1, -1, 1], name="toy", feature_names=["a", "b"])
    assert (ds.n_samples, ds.n_features) == (3, 2)
    assert ds.feature_names == ("a", "b") and ds.X.dtype == np.float64 and not ds.is_sparse
    with pytest.raises(AttributeError):
        ds.name = "other"
    with pytest.raises(NonFiniteDataError, match="X of bad"):
        Dataset(X=[[np.nan]], y=[1.0], name="bad")
    with pytest.raises(ShapeMismatchError, match="1 feature names given for 2 columns"):
        Dataset(X=np.ones((1, 2)), y=[1.0], name="toy", feature_names=("a",))
    with pytest.raises(ShapeMismatchError):
        Dataset(X=np.ones((2, 2)), y=[1.0], name="toy")
