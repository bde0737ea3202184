"""Issue 27: the distributed Skellam mechanism draws the noise it declares: each party's share has the declared
variance and Skellam law, the sum of the parties' shares is the declared total, randomized rounding is unbiased, and
the decoded aggregate's spread is the declared noise std."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privdist.errors import ShapeMismatchError
from privdist.privacy.distributed import SkellamMechanism
from privdist.runtime import AgentStreams

N = 20_000


def _chi2_pvalue(samples: np.ndarray, mu: float) -> float:
    """Chi-square goodness of fit of integer samples to Sk(mu): one category per value whose expected count is at
    least 20, the two tails lumped."""
    law = stats.skellam(mu / 2, mu / 2)
    ks = np.arange(int(law.ppf(1e-6)), int(law.ppf(1 - 1e-6)) + 1)
    ks = ks[law.pmf(ks) * len(samples) >= 20]
    lo, hi = ks.min(), ks.max()
    observed = np.r_[np.sum(samples < lo), [np.sum(samples == k) for k in ks], np.sum(samples > hi)]
    expected = np.r_[law.cdf(lo - 1), law.pmf(ks), law.sf(hi)] * len(samples)
    return float(stats.chisquare(observed, expected).pvalue)


def test_one_share_has_the_declared_variance_and_law():
    mech = SkellamMechanism(0.05, resolution=10.0)  # small noise: the discrete law is visible
    dim, shares = 4, 3
    values = np.zeros((N, dim))  # exact integers after scaling: rounding adds nothing
    out = mech.privatize(values, 1.0, np.random.default_rng(1), shares=shares)
    declared = mech.variance(dim) / shares
    assert out.dtype == np.int64
    assert out.mean() == pytest.approx(0.0, abs=4 * np.sqrt(declared / out.size))
    assert out.var() == pytest.approx(declared, rel=0.03)
    assert _chi2_pvalue(out[:, 0], declared) > 1e-3


def test_the_sum_of_shares_is_the_declared_total():
    mech = SkellamMechanism(0.08, resolution=10.0)
    K, dim = 7, 3
    total = sum(mech.privatize(np.zeros((N, dim)), 1.0, np.random.default_rng(10 + k), shares=K) for k in range(K))
    mu = mech.variance(dim)
    assert total.var() == pytest.approx(mu, rel=0.03)
    assert _chi2_pvalue(total[:, 1], mu) > 1e-3


def test_rounding_is_unbiased_and_the_decoded_sum_has_the_declared_std():
    mech = SkellamMechanism(1.5)
    dim, sens, K = 5, 0.7, 4
    v = np.random.default_rng(3).normal(size=dim)
    rows = np.repeat(v[None, :], N, axis=0)
    shares = [mech.privatize(rows, sens, np.random.default_rng(20 + k), shares=K) for k in range(K)]
    decoded = mech.decode(sum(shares), sens)
    np.testing.assert_allclose(decoded.mean(axis=0), K * v, atol=5 * mech.noise_std(sens, dim) / np.sqrt(N))
    # rounding adds at most 1/4 per coordinate and share (in integer units): below 0.1 % of this noise's variance
    assert decoded.std(axis=0).mean() == pytest.approx(mech.noise_std(sens, dim), rel=0.02)
    assert mech.noise_std(sens, dim) == pytest.approx(1.5 * sens * 1.01)


def test_uses_divide_the_variance_and_streams_are_per_agent():
    mech = SkellamMechanism(2.0)
    one = mech.privatize(np.zeros((2, 3)), 1.0, AgentStreams(5, 0, [0, 1], 1), uses=4)
    again = mech.privatize(np.zeros((1, 3)), 1.0, AgentStreams(5, 0, [1], 1), uses=4)
    np.testing.assert_array_equal(one[1], again[0])  # agent 1's draws come from agent 1's stream
    assert mech.variance(3, uses=4) == pytest.approx(mech.variance(3) / 4)


def test_shapes_are_checked():
    mech = SkellamMechanism(1.0)
    with pytest.raises(ShapeMismatchError):
        mech.privatize(np.zeros(3), 1.0, np.random.default_rng(0))
    with pytest.raises(ShapeMismatchError):
        mech.privatize(np.zeros((2, 3)), np.ones(2), np.random.default_rng(0))
