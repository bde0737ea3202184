"""Trade-off (f-DP / Gaussian DP) audit statistics: mu from rates, the GDP epsilon, claimed curves, the test."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.gaussian_mechanism import get_epsilon_gaussian
from scipy.stats import norm

from privdist.errors import ShapeMismatchError, UnsupportedEventError, ValidationError
from privdist.privacy.audit_tradeoff import (ClaimCurve, gdp_delta, gdp_epsilon, gdp_mu_from_rates,
                                             tradeoff_audit)


def test_mu_from_rates_inverts_the_gdp_curve_and_is_symmetric():
    mu, alpha = 0.7, np.array([0.01, 0.1, 0.4])
    beta = norm.cdf(norm.isf(alpha) - mu)  # G_mu(alpha)
    np.testing.assert_allclose(gdp_mu_from_rates(alpha, beta), mu, rtol=1e-10)
    np.testing.assert_allclose(gdp_mu_from_rates(beta, alpha), mu, rtol=1e-10)
    assert gdp_mu_from_rates(0.5, 0.5) == pytest.approx(0.0, abs=1e-12)
    assert gdp_mu_from_rates(0.0, 0.3) == math.inf


@pytest.mark.parametrize("mu", [0.05, 0.268, 1.0, 4.0])
def test_gdp_epsilon_is_the_gaussian_mechanism_epsilon(mu):
    for delta in (1e-5, 1e-3):
        eps = gdp_epsilon(mu, delta)
        assert eps == pytest.approx(get_epsilon_gaussian(1 / mu, delta), rel=1e-8, abs=1e-10)
        if eps > 0:
            assert gdp_delta(eps, mu) == pytest.approx(delta, rel=1e-6)
    assert gdp_epsilon(0.0, 1e-5) == 0.0 and gdp_epsilon(math.inf, 1e-5) == math.inf
    with pytest.raises(ValidationError):
        gdp_epsilon(1.0, 0.0)


def test_claim_curves():
    g = ClaimCurve.from_event(dp_event.GaussianDpEvent(2.0))
    assert g.kind == "gdp" and g.mu == 0.5
    a = 0.2
    on = float(norm.cdf(norm.isf(a) - 0.5))
    assert not g.refuted_by(a, on + 1e-3) and g.refuted_by(a, on - 1e-3)
    lap = ClaimCurve.from_event(dp_event.LaplaceDpEvent(1.0))  # 1-DP, total variation 1 - e^-1/2
    assert lap.kind == "pld"
    assert lap.refuted_by(0.3, 0.3)  # FPR + FNR < 1 - TV: outside the Laplace curve (inside the (1, 0) region)
    assert not lap.refuted_by(0.35, 0.35)
    region = ClaimCurve.from_epsilon(1.0, 0.0)
    assert not region.refuted_by(0.3, 0.3) and region.refuted_by(0.05, 0.1)
    assert ClaimCurve.from_event(None).refuted_by(0.45, 0.5)  # nothing released: only coin flips
    clear = ClaimCurve.from_event(dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(1.0), dp_event.NonPrivateDpEvent()]))
    assert clear.mu == math.inf and not clear.refuted_by(0.0, 0.0)  # a release in the clear claims nothing
    with pytest.raises(UnsupportedEventError):
        ClaimCurve.from_event(dp_event.UnsupportedDpEvent())
    with pytest.raises(ValidationError):
        ClaimCurve.from_epsilon(1.0, 1.0)


def test_tradeoff_audit_on_gaussians_is_below_and_near_the_truth():
    rng = np.random.default_rng(0)
    mu, n = 1.0, 20_000
    x0 = rng.standard_normal((n, 3))
    x1 = rng.standard_normal((n, 3)) + [mu, 0, 0]
    t = tradeoff_audit(x0, x1)
    assert 0.85 * mu < t.mu_lb < mu
    assert t.n_eval == (10_000, 10_000) and t.fpr <= t.fpr_ub and t.fnr <= t.fnr_ub
    assert t.epsilon_lb_gdp(1e-5) < gdp_epsilon(mu, 1e-5)
    same = tradeoff_audit(rng.standard_normal((400, 2)), rng.standard_normal((400, 2)))
    assert same.mu_lb < 0.3
    with pytest.raises(ShapeMismatchError):
        tradeoff_audit(x0[:10], x1[:10, :2])
    with pytest.raises(ValidationError):
        tradeoff_audit(x0[:100], x1[:100], split=1.0)


def test_pure_dp_claim_curve_composes_the_counts():
    """A claim of 100 pure 0.5-DP releases (Gamma-norm noise, declared as randomized response) is the optimal
    composition's curve: delta(31.17) ~ 1e-5 (dp-accounting's PLDAccountant would compose the event once)."""
    from dp_accounting import dp_event as de

    from privdist.privacy import pure_release
    from privdist.privacy.audit_tradeoff import ClaimCurve

    curve = ClaimCurve.from_event(de.SelfComposedDpEvent(pure_release(0.5).event, 100))
    eps, deltas = np.asarray(curve.eps), np.asarray(curve.deltas)
    assert curve.kind == "pld"
    assert np.interp(31.17, eps, deltas) == pytest.approx(1e-5, rel=0.05)
    assert np.interp(10.0, eps, deltas) > 0.1
