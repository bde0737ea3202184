"""Audit statistics: Clopper-Pearson bounds, the epsilon bound of a test, threshold tests, hockey stick."""

import math

import numpy as np
import pytest
from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

from privdist.errors import ShapeMismatchError, ValidationError
from privdist.privacy.audit_stats import (clopper_pearson, epsilon_from_rates, epsilon_lower_bound,
                                          hockey_stick_epsilon, region_fnr, threshold_audit)


def test_clopper_pearson_known_values():
    assert clopper_pearson(0, 50) == pytest.approx((0.0, 1 - 0.025 ** (1 / 50)))
    lo, hi = clopper_pearson(5, 100)
    assert lo == pytest.approx(0.016432, abs=1e-5) and hi == pytest.approx(0.112835, abs=1e-5)
    assert clopper_pearson(10, 10)[1] == 1.0
    with pytest.raises(ValidationError):
        clopper_pearson(11, 10)


def test_epsilon_from_rates_is_the_region_boundary():
    eps, delta = 1.3, 1e-3
    fpr = np.linspace(0.01, 0.3, 7)
    fnr = region_fnr(fpr, eps, delta)
    inside = fnr > 0
    np.testing.assert_allclose(epsilon_from_rates(fpr[inside], fnr[inside], delta), eps, rtol=1e-9)
    assert epsilon_from_rates(0.5, 0.5, 0.0) == 0.0  # the coin flip certifies nothing


def test_epsilon_lower_bound_uses_upper_confidence_bounds():
    b = epsilon_lower_bound(0, 100, 0, 100, 1e-5)
    ub = 1 - 0.025 ** (1 / 100)  # one-sided 97.5% bounds (Bonferroni for a joint 95%)
    assert b["fpr_ub"] == pytest.approx(ub) and b["epsilon_lb"] == pytest.approx(math.log((1 - 1e-5 - ub) / ub))


@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_gaussian_mechanism_bound_is_valid_and_informative(mu):
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(20000, 6))
    x1 = rng.normal(size=(20000, 6)) + mu * np.eye(6)[2]
    t = threshold_audit(x0, x1, [1e-5, 1e-3])
    true = get_epsilon_gaussian(1 / mu, 1e-5)
    assert 0.25 * true < t.epsilon_lb(1e-5) <= true
    assert set(t.selection) == {"projection", "gaussian_lr"}


def test_identical_distributions_give_no_bound():
    rng = np.random.default_rng(2)
    t = threshold_audit(rng.normal(size=(4000, 3)), rng.normal(size=(4000, 3)), 1e-5)
    assert t.epsilon_lb() < 0.3


def test_threshold_audit_rejects_bad_input():
    with pytest.raises(ShapeMismatchError):
        threshold_audit(np.zeros((10, 2)), np.zeros((10, 3)), 1e-5)
    with pytest.raises(ValidationError):
        threshold_audit(np.zeros((2, 2)), np.zeros((10, 2)), 1e-5)


def test_hockey_stick_estimate_of_a_gaussian():
    rng = np.random.default_rng(3)
    s0, s1 = rng.normal(size=200000), rng.normal(size=200000) + 1.0
    est = hockey_stick_epsilon(s0, s1, 1e-2, bins=40)
    assert est == pytest.approx(get_epsilon_gaussian(1.0, 1e-2), rel=0.35)
