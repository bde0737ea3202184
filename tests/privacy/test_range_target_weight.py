"""Issue 39: a regressor's range step escalated up the share ladder weights the target's counts. The declared
sensitivities bound every replace-one change of the weighted histograms (and are attained), the noise drawn is the
noise declared (Gaussian and Skellam), the post-processing divides the weight back out, the plan round-trips, and the
decision is public (row count, columns, parties)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "algorithms"))  # the shared noise harness
from release_harness import accepts_standard_normal, assert_standard_normal  # noqa: E402
from privdist.privacy.dp_ranges import bin_counts, ranges_from_counts
from privdist.privacy.range_plan import (TARGET_WEIGHT, HistogramNoise, RangePlan, plan_range, squared_sensitivity)


def _weighted(counts: np.ndarray, a: int) -> np.ndarray:
    out = counts.astype(float).copy()
    out[-1] *= a
    return out


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 6), a=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_declared_sensitivities_bound_a_replaced_row(m, a, seed):
    rng = np.random.default_rng(seed)
    D = rng.normal(size=(20, m)) * 10.0 ** rng.uniform(-3, 3, size=m)
    other = D.copy()
    other[0] = rng.normal(size=m) * 10.0 ** rng.uniform(-3, 3, size=m)  # replace one row
    diff = _weighted(bin_counts(D), a) - _weighted(bin_counts(other), a)
    d2sq, d1 = squared_sensitivity(m, a)
    assert float(np.sum(diff**2)) <= d2sq + 1e-9 and float(np.abs(diff).sum()) <= d1 + 1e-9
    if np.all(np.argmax(bin_counts(D[:1]), axis=1) != np.argmax(bin_counts(other[:1]), axis=1)):
        assert float(np.sum(diff**2)) == pytest.approx(d2sq)  # every column moved: attained


@pytest.mark.parametrize("kind", ["gaussian", "skellam"])
def test_weighted_noise_drawn_is_noise_declared(kind):
    """2,000 releases of 3 histograms of 40 bins (the last weighted by 2) standardised by the declared per-bin std:
    i.i.d. N(0, 1) (chi-squared intervals, false failure 1e-6; a std 10 % off is rejected), the target's counts
    doubled on average."""
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 30, size=(3, 40))
    shares = 4 if kind == "skellam" else 1
    mech = HistogramNoise(kind, 2.0, 3, 1e-5 if kind == "gaussian" else None, shares, 4, TARGET_WEIGHT)
    assert mech.sigma == pytest.approx(2.0 * math.sqrt(2 * (2 + TARGET_WEIGHT**2)))
    expected = _weighted(counts, TARGET_WEIGHT)
    # under secure aggregation each party adds a share sigma^2 / shares: the sum of `shares` parties' noise
    per_release = mech.sigma / math.sqrt(shares)
    draws = []
    for seed in range(2000):
        out = mech.privatize(counts if kind == "gaussian" else counts.ravel(), np.random.default_rng(seed))
        draws.append((np.asarray(out, dtype=float).reshape(3, 40) - expected) / per_release)
    draws = np.array(draws).reshape(2000, -1)
    assert_standard_normal(draws, false_failure=1e-6, power_at=0.10)
    assert not accepts_standard_normal(draws * 1.1) and not accepts_standard_normal(draws / 1.1)
    d2, d1 = mech.sensitivities()
    assert (d2, d1) == (pytest.approx(math.sqrt(2 * (2 + 4))), 2 * (2 + 2))


def test_bounds_from_divides_the_weight_back_out():
    rng = np.random.default_rng(1)
    D = np.column_stack([rng.normal(size=500) * 100, rng.exponential(size=500) * 30 + 20])
    counts = bin_counts(D)
    plan = RangePlan(("x", "<target>"), 2, 0.3, 0.1, "gaussian", (1.0,), 1e-5, 0.5, True,
                     target_weight=TARGET_WEIGHT)
    got = plan.bounds_from(_weighted(counts, TARGET_WEIGHT), 500, 0.0)
    want = ranges_from_counts(counts, 500, 0.0)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert RangePlan.from_dict(plan.to_dict()) == plan
    old = {k: v for k, v in plan.to_dict().items() if k != "target_weight"}  # a plan written before issue 39
    assert RangePlan.from_dict(old).target_weight == 1


def test_the_weight_is_a_public_decision_of_a_swamped_regressor_only():
    cols = tuple(f"x{j}" for j in range(10))
    kw = dict(epsilon=1.0, delta=1e-5, share=0.1, exact=True, n_parties=5, secure_shares=5, colluding=0)
    small = plan_range(cols + ("<target>",), n_rows=353, dp_target=True, **kw)  # diabetes' training rows
    assert small.width == 11 and small.share > 0.1 and small.target_weight == TARGET_WEIGHT
    assert small.mechanism(0).sensitivities()[0] == pytest.approx(math.sqrt(2 * (10 + 4)))
    large = plan_range(cols + ("<target>",), n_rows=20_000, dp_target=True, **kw)  # not swamped: unchanged
    assert (large.width, large.share, large.target_weight) == (11, 0.1, 1)
    classifier = plan_range(cols, n_rows=353, dp_target=False, **kw)
    assert classifier.target_weight == 1
    tiny = plan_range(cols + ("<target>",), n_rows=250, dp_target=True, **kw)  # the target alone, unweighted
    assert (tiny.width, tiny.target_weight) == (1, 1)
