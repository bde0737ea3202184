"""Issue 41: the parameters of sparse-graph secure aggregation (Bell et al. 2020) meet the bounds they state, the
complete graph is the fallback, and the vectorised Shamir sharing rebuilds a seed from exactly t shares."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import ReconstructionError, ValidationError
from privdist.privacy.secagg_graph import ETA, SIGMA, _bounds, choose_graph
from privdist.runtime.secure.shamir_field import LIMBS, PRIME, combine_many, split_many


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 3000), c=st.floats(0, 0.2), d=st.floats(0, 0.2))
def test_the_chosen_graph_meets_its_bounds_or_is_complete(n, c, d):
    colluding, dropouts = int(c * n), int(d * n)
    try:
        g = choose_graph(n, colluding, dropouts)
    except ValidationError:
        assert colluding + 1 > n - 1 - dropouts  # not even the complete graph
        return
    assert 1 <= g.threshold <= g.degree <= n - 1
    if g.complete:
        assert g.threshold == colluding + 1
    else:
        assert g.degree % 2 == 0
        sec, cor = _bounds(n, colluding, dropouts, g.degree, g.threshold)
        assert sec <= 2.0 ** -SIGMA and cor <= 2.0 ** -ETA
        assert g.log2_security_failure <= -SIGMA and g.log2_correctness_failure <= -ETA


def test_the_degree_grows_like_log_k():
    degrees = [choose_graph(n, n // 20, n // 20).degree for n in (1000, 10_000, 100_000)]
    assert degrees == sorted(degrees) and degrees[-1] < 2 * degrees[0]
    assert "2^" in choose_graph(1000, 50, 50).describe()
    assert math.isinf(choose_graph(1000).log2_security_failure)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 6), k=st.integers(1, 12), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_exactly_t_shares_rebuild_and_t_minus_one_do_not(n, k, data, seed):
    t = data.draw(st.integers(1, k))
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    points = np.stack([rng.permutation(np.arange(1, 50))[:k] for _ in range(n)])
    shares = split_many(seeds, points, t, rng.integers(0, PRIME, (n, t - 1, LIMBS)).astype(np.uint64))
    pick = rng.permutation(k)[:t]
    assert np.array_equal(combine_many(shares[:, pick], points[:, pick]), seeds)
    if t > 1:  # t - 1 shares give another value (a wrong limb, or a named error), never the seed
        try:
            assert not np.array_equal(combine_many(shares[:, pick[1:]], points[:, pick[1:]]), seeds)
        except ReconstructionError:
            pass


def test_one_share_is_uniform_whatever_the_seed():
    """Threshold 2: a single share of a limb is the seed plus a uniform multiple of x mod p, so two different seeds
    give the same distribution of shares (chi-square on 16 bins over 4,000 sharings, seeded)."""
    rng = np.random.default_rng(7)
    n = 4000
    bins = []
    for value in (0, 255):
        seeds = np.full((n, 16), value, dtype=np.uint8)
        shares = split_many(seeds, np.full((n, 1), 3), 2, rng.integers(0, PRIME, (n, 1, LIMBS)).astype(np.uint64))
        limb = shares.view("<u4")[:, 0, 0].astype(np.int64)
        bins.append(np.bincount(limb * 16 // PRIME, minlength=16))
    from scipy.stats import chisquare

    for b in bins:
        assert chisquare(b).pvalue > 1e-4


def test_named_errors():
    with pytest.raises(ValidationError):
        split_many(np.zeros((1, 8), np.uint8), [[1]], 1, np.zeros((1, 0, LIMBS), np.uint64))
    with pytest.raises(ReconstructionError, match="repeated"):
        combine_many(np.zeros((1, 2, 32), np.uint8), [[1, 1]])
