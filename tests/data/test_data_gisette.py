"""Synthetic gisette-shaped data (S2 stand-in; issue 4)."""

import numpy as np
import pytest

from privdist.data import load_dataset
from privdist.data.gisette import gisette_synthetic
from privdist.errors import ValidationError

SMALL = dict(n_train=120, n_test=40, n_features=50, n_informative=20)


def test_shapes_labels_and_seeding():
    tr = load_dataset("gisette_synthetic", rng=np.random.default_rng(1), split="train", **SMALL)
    te = load_dataset("gisette_synthetic", rng=np.random.default_rng(1), split="test", **SMALL)
    assert tr.X.shape == (120, 50) and te.X.shape == (40, 50)
    assert set(np.unique(tr.y)) == {-1.0, 1.0} and np.abs(tr.X).max() <= 1.0
    assert tr.extras["synthetic"] and "SYNTHETIC" in tr.credit
    again = gisette_synthetic(np.random.default_rng(1), "train", **SMALL)
    np.testing.assert_array_equal(again.X, tr.X)
    other = gisette_synthetic(np.random.default_rng(2), "train", **SMALL)
    assert not np.allclose(other.X, tr.X)
    # train and test rows come from one draw: disjoint rows of the same matrix
    assert not np.isin(te.X[:, 0], tr.X[:, 0]).any()


def test_default_shape_matches_gisette():
    # only the sizes (drawing the full 7,000 x 5,000 matrix is covered by the catalog runs)
    import inspect

    sig = inspect.signature(gisette_synthetic).parameters
    assert (sig["n_train"].default, sig["n_test"].default, sig["n_features"].default) == (6000, 1000, 5000)


def test_bad_arguments():
    with pytest.raises(ValidationError, match="split"):
        gisette_synthetic(np.random.default_rng(0), "dev", **SMALL)
    with pytest.raises(ValidationError, match="n_informative"):
        gisette_synthetic(np.random.default_rng(0), n_features=10, n_informative=20)
    with pytest.raises(TypeError, match="rng"):
        load_dataset("gisette_synthetic")
