"""D-ZOA synthetic regression data (spec §2.11)."""

from __future__ import annotations

import numpy as np
import pytest

from privdist.data import dzoa_regression, normalize_columns_rows
from privdist.errors import ValidationError


def test_shapes_and_extras():
    ds = dzoa_regression(np.random.default_rng(0))
    assert ds.X.shape == (100, 10) and ds.y.shape == (100,)
    assert ds.name == "dzoa_synthetic"
    assert ds.extras["omega"].shape == (10,)
    assert ds.extras["n_agents"] == 5 and ds.extras["samples_per_agent"] == 20
    assert np.all(np.linalg.norm(ds.X, axis=1) <= 1 + 1e-12)
    small = dzoa_regression(np.random.default_rng(0), n_agents=3, samples_per_agent=4, n_features=2)
    assert small.X.shape == (12, 2)


def test_documented_draw_order_and_y_before_normalisation():
    ds = dzoa_regression(np.random.default_rng(7), noise_var=0.1)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((100, 10))
    omega = rng.standard_normal(10)
    psi = np.sqrt(0.1) * rng.standard_normal(100)
    np.testing.assert_array_equal(ds.extras["omega"], omega)
    np.testing.assert_allclose(ds.y, X @ omega + psi, rtol=1e-14)  # responses not rescaled
    np.testing.assert_allclose(ds.X, normalize_columns_rows(X), rtol=1e-14)
    raw = dzoa_regression(np.random.default_rng(7), normalize=False)
    np.testing.assert_array_equal(raw.X, X)
    np.testing.assert_array_equal(raw.y, ds.y)


def test_noise_free_responses_are_linear():
    raw = dzoa_regression(np.random.default_rng(3), noise_var=0.0, normalize=False)
    np.testing.assert_allclose(raw.y, raw.X @ raw.extras["omega"], rtol=1e-14)


def test_seed_determinism_and_different_seeds_differ():
    a = dzoa_regression(np.random.default_rng(42))
    b = dzoa_regression(np.random.default_rng(42))
    c = dzoa_regression(np.random.default_rng(43))
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.allclose(a.X, c.X) and not np.allclose(a.y, c.y)


def test_bad_arguments():
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        dzoa_regression(0)
    with pytest.raises(ValidationError, match="n_agents must be >= 1, got 0"):
        dzoa_regression(np.random.default_rng(0), n_agents=0)
    with pytest.raises(ValidationError, match="noise_var must be >= 0"):
        dzoa_regression(np.random.default_rng(0), noise_var=-1.0)
    with pytest.raises(TypeError):
        dzoa_regression(np.random.default_rng(0), n_features=2.5)
