"""Noise samplers (spec §1.2, §10 sampler vectors): statistics with fixed seeds, determinism, bad inputs."""

import numpy as np
import pytest
from scipy import stats

from privdist.errors import NonFiniteDataError, ShapeMismatchError, ValidationError
from privdist.privacy import gamma_norm, gaussian, laplace


def test_gaussian_std_and_distribution():
    x = gaussian(np.random.default_rng(0), 2.5, 200_000)
    assert x.shape == (200_000,)
    # SE of the sample std is sigma / sqrt(2n) ~ 0.004; 1% is > 5 SE
    assert x.std() == pytest.approx(2.5, rel=0.01)
    assert abs(x.mean()) < 5 * 2.5 / np.sqrt(x.size)
    assert stats.kstest(x / 2.5, "norm").pvalue > 1e-3


def test_gaussian_per_agent_sigma_broadcasts():
    sigma = np.array([[0.5], [1.0], [4.0]])
    x = gaussian(np.random.default_rng(1), sigma, (3, 100_000))
    np.testing.assert_allclose(x.std(axis=1), sigma.ravel(), rtol=0.015)


def test_laplace_mean_abs_equals_scale():
    x = laplace(np.random.default_rng(2), 0.379971, 200_000)
    # |x| ~ Exp(b): SE of its mean is b / sqrt(n) ~ 0.22% of b
    assert np.abs(x).mean() == pytest.approx(0.379971, rel=0.015)
    assert stats.kstest(x, "laplace", args=(0, 0.379971)).pvalue > 1e-3


def test_laplace_array_scale():
    scale = np.array([1.0, 3.0])
    x = laplace(np.random.default_rng(3), scale, (100_000, 2))
    np.testing.assert_allclose(np.abs(x).mean(axis=0), scale, rtol=0.02)


def test_gamma_norm_radius_and_direction():
    dim, zeta = 5, 2.0
    v = gamma_norm(np.random.default_rng(4), zeta, dim, size=50_000)
    assert v.shape == (50_000, dim)
    r = np.linalg.norm(v, axis=1)
    # ||v|| ~ Gamma(dim, 1/zeta): mean dim/zeta = 2.5, std sqrt(dim)/zeta ~ 1.12, SE ~ 0.005
    assert r.mean() == pytest.approx(dim / zeta, abs=0.03)
    assert stats.kstest(r, "gamma", args=(dim, 0, 1 / zeta)).pvalue > 1e-3
    u = v / r[:, None]
    # each direction coordinate has variance 1/dim; SE of its mean ~ 0.002
    np.testing.assert_allclose(u.mean(axis=0), 0.0, atol=0.012)


def test_gamma_norm_single_vector_and_per_vector_zeta():
    rng = np.random.default_rng(5)
    assert gamma_norm(rng, 1.0, 3).shape == (3,)
    zeta = np.array([1.0, 10.0])
    v = gamma_norm(rng, zeta, 4, size=(20_000, 2))
    assert v.shape == (20_000, 2, 4)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-1).mean(axis=0), 4 / zeta, rtol=0.03)


@pytest.mark.parametrize("sampler", [gaussian, laplace])
def test_zero_noise_gives_exact_zeros(sampler):
    x = sampler(np.random.default_rng(6), 0.0, (4, 3))
    assert x.shape == (4, 3)
    assert np.all(x == 0) and not np.any(np.signbit(x))
    y = sampler(np.random.default_rng(6), np.array([0.0, 1.0]), (1000, 2))
    assert np.all(y[:, 0] == 0) and np.all(y[:, 1] != 0)


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: gaussian(rng, 1.3, (7, 2)),
        lambda rng: laplace(rng, np.array([1.0, 2.0]), (3, 2)),
        lambda rng: gamma_norm(rng, 0.7, 3, size=5),
    ],
)
def test_same_seed_same_draws_different_seed_differs(draw):
    a = draw(np.random.default_rng(42))
    b = draw(np.random.default_rng(42))
    c = draw(np.random.default_rng(43))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_bad_inputs_raise_named_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValidationError, match="sigma must be >= 0, got -1.0"):
        gaussian(rng, -1.0, 3)
    with pytest.raises(ValidationError, match="scale must be >= 0"):
        laplace(rng, np.array([1.0, -0.5]), (2, 2))
    with pytest.raises(ValidationError, match="zeta must be > 0"):
        gamma_norm(rng, 0.0, 3)
    with pytest.raises(NonFiniteDataError):
        gaussian(rng, np.nan, 3)
    with pytest.raises(ShapeMismatchError):
        gaussian(rng, np.ones(3), (4,))
    with pytest.raises(ValidationError):
        gamma_norm(rng, 1.0, 0)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        gaussian(np.random.RandomState(0), 1.0, 3)
    with pytest.raises(TypeError):
        laplace(0, 1.0, 3)
    with pytest.raises(TypeError):
        gaussian(rng, 1.0, 2.5)
