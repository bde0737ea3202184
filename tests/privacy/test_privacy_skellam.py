"""Issue 27: the Skellam event's RDP bound (against the exact Rényi divergence of shifted Skellam noise), its
composition with other events in the ledger through dp-accounting's RDP conversion, its serialisation, the rounding
sensitivity, and the calibration to a total budget."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import logsumexp

from privdist.errors import ValidationError
from privdist.privacy import PrivacyLedger, Release, agent_epsilon, gaussian_release, privacy_report
from privdist.privacy.budget import skellam_mechanism
from privdist.privacy.distributed import SkellamMechanism, calibrate_skellam, check_shares
from privdist.privacy.events import event_from_dict, event_to_dict
from privdist.privacy.skellam import (INTEGER_ORDERS, SkellamDpEvent, SkellamRdpAccountant, rounded_sensitivities,
                                      skellam_rdp)


def _exact_renyi(mu: float, shift: int, alpha: int) -> float:
    """``D_alpha(Sk(mu) + shift || Sk(mu))`` from the pmf (Sk(mu) = Poisson(mu/2) - Poisson(mu/2))."""
    width = int(40 * math.sqrt(mu)) + 40 + abs(shift)
    k = np.arange(-width, width + 1)
    logq = stats.skellam.logpmf(k, mu / 2, mu / 2)
    logp = stats.skellam.logpmf(k - shift, mu / 2, mu / 2)
    ok = np.isfinite(logq) & np.isfinite(logp)
    return float(logsumexp(alpha * logp[ok] + (1 - alpha) * logq[ok]) / (alpha - 1))


@pytest.mark.parametrize("mu", [2.0, 10.0, 100.0])
@pytest.mark.parametrize("shift", [1, 2, 3])
def test_the_bound_dominates_the_exact_divergence_in_one_dimension(mu, shift):
    event = SkellamDpEvent(mu, float(shift), float(shift))
    orders = [2, 3, 5, 8, 16]
    bound = skellam_rdp(event, orders)
    exact = [_exact_renyi(mu, shift, a) for a in orders]
    assert np.all(bound >= np.asarray(exact) - 1e-9)
    gaussian = np.asarray(orders) * shift**2 / (2 * mu)
    assert np.all(bound >= gaussian)  # the discrete term is the price of a lattice


def test_the_bound_dominates_a_two_dimensional_shift():
    """Product noise: the exact divergence of a shift (1, 1) is the sum of the coordinates' (D2 = sqrt 2, D1 = 2)."""
    mu = 5.0
    event = SkellamDpEvent(mu, math.sqrt(2.0), 2.0)
    for a in (2, 4, 10):
        assert skellam_rdp(event, [a])[0] >= 2 * _exact_renyi(mu, 1, a) - 1e-9


def test_large_variance_approaches_the_gaussian_curve():
    event = SkellamDpEvent(1e8, 1000.0, 1e4)
    orders = np.asarray([2, 10, 50])
    np.testing.assert_allclose(skellam_rdp(event, orders), orders * 1e6 / 2e8, rtol=1e-3)


def test_fractional_orders_are_refused():
    with pytest.raises(ValueError, match="integer orders"):
        skellam_rdp(SkellamDpEvent(1.0, 1.0, 1.0), [1.5, 2])


def test_event_fields_are_validated():
    with pytest.raises(ValueError, match="variance"):
        SkellamDpEvent(0.0, 1.0, 1.0)


def test_composition_with_a_gaussian_is_the_sum_of_the_rdp_curves():
    sk = SkellamDpEvent(4e6, 1010.0, 1010.0 * math.sqrt(10))
    ledger = PrivacyLedger(1)
    ledger.record(0, gaussian_release(3.0), 1)
    ledger.record(0, Release(sk), 7)
    report = privacy_report(ledger, 1e-5)["per_agent"][0]
    orders = np.asarray(INTEGER_ORDERS, dtype=float)
    curve = 7 * skellam_rdp(sk, orders) + orders / (2 * 3.0**2)
    expected = rdp.compute_epsilon(orders, curve, 1e-5)[0]
    assert report["epsilon"]["rdp"] == pytest.approx(expected, rel=1e-9)
    assert report["epsilon"]["pld"] == report["epsilon"]["rdp"]  # no PLD is published: the RDP bound is reported
    assert report["guaranteed"] and report["epsilon"]["paper"] is None
    assert report["guarantee_accountant"] == "skellam_rdp"  # the report names the bound it computed (issue 37)


def test_a_ledger_without_skellam_releases_is_accounted_by_pld():
    ledger = PrivacyLedger(2)
    ledger.record(0, gaussian_release(3.0), 4)
    ledger.record(1, Release(SkellamDpEvent(4e6, 1010.0, 1010.0 * math.sqrt(10))), 1)
    agents = privacy_report(ledger, 1e-5)["per_agent"]
    assert [a["guarantee_accountant"] for a in agents] == ["pld", "skellam_rdp"]


def test_the_accountant_composes_nested_events():
    sk = SkellamDpEvent(100.0, 3.0, 5.0)
    acc = SkellamRdpAccountant()
    acc.compose(dp_event.ComposedDpEvent([dp_event.SelfComposedDpEvent(sk, 3), dp_event.GaussianDpEvent(2.0)]))
    orders = np.asarray(INTEGER_ORDERS, dtype=float)
    expected = rdp.compute_epsilon(orders, 3 * skellam_rdp(sk, orders) + orders / 8, 1e-6)[0]
    assert acc.get_epsilon(1e-6) == pytest.approx(expected, rel=1e-12)


def test_serialisation_round_trip_and_ledger():
    event = SkellamDpEvent(123.5, 7.0, 20.0)
    data = event_to_dict(event)
    assert data == {"type": "SkellamDpEvent", "variance": 123.5, "l2_sensitivity": 7.0, "l1_sensitivity": 20.0}
    assert event_from_dict(data) == event
    ledger = PrivacyLedger(2)
    ledger.record(1, Release(dp_event.ComposedDpEvent((event, dp_event.GaussianDpEvent(1.0)))), 2)
    assert PrivacyLedger.from_dict(ledger.to_dict()) == ledger


@settings(max_examples=60, deadline=None)
@given(dim=st.integers(1, 40), scaled=st.floats(0.5, 500.0), seed=st.integers(0, 2**31))
def test_randomized_rounding_of_neighbours_moves_at_most_the_declared_sensitivities(dim, scaled, seed):
    """The same uniforms round ``v`` and a neighbour ``v'`` (``||v - v'|| <= scaled``) to integer vectors within
    ``D2 = scaled + sqrt(d)`` in l2 and ``D1`` in l1 (the coupling the RDP argument rests on)."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=dim) * 50
    direction = rng.normal(size=dim)
    w = v + direction / np.linalg.norm(direction) * scaled * rng.uniform()
    u = rng.random((200, dim))
    diff = np.floor(v + u) - np.floor(w + u)
    d2, d1 = rounded_sensitivities(scaled, dim)
    assert np.linalg.norm(diff, axis=1).max() <= d2 + 1e-9
    assert np.abs(diff).sum(axis=1).max() <= d1 + 1e-9


def test_calibration_meets_the_budget_and_is_not_rounded_down():
    releases = ((19, 1), (1, 4))
    z = calibrate_skellam(1.0, 1e-5, releases)
    mech = SkellamMechanism(z)

    def eps(m):
        return agent_epsilon([(m.releases([0], uses=u)[0], c) for c, u in releases], 1e-5, "rdp")

    assert eps(mech) <= 1.0
    assert eps(SkellamMechanism(z * (1 - 1e-5))) > 1.0 - 1e-4
    assert skellam_mechanism(1.0, 1e-5, releases=releases) == mech


@settings(max_examples=20, deadline=None)
@given(dim=st.integers(1, 10_000))
def test_a_multiplier_calibrated_at_one_coordinate_holds_in_every_dimension(dim):
    mech = SkellamMechanism(calibrate_skellam(0.5, 1e-6, ((10, 1),)))
    entries = [(mech.releases([0], dim=dim)[0], 10)]
    assert agent_epsilon(entries, 1e-6, "rdp") <= 0.5 + 1e-12


def test_honest_parties_scale_the_declared_variance():
    mech = SkellamMechanism(2.0)
    full = mech.releases([0], dim=9, honest=10, shares=10)[0].event
    fewer = mech.releases([0], dim=9, honest=5, shares=10)[0].event
    assert fewer.variance == pytest.approx(full.variance / 2)
    assert full.variance == pytest.approx((2.0 * 101 * 3) ** 2)
    assert (full.l2_sensitivity, full.l1_sensitivity) == pytest.approx((303.0, 909.0))


def test_named_errors():
    with pytest.raises(ValidationError, match="per-party"):
        skellam_mechanism((1.0, 2.0), 1e-5, releases=[(3, 1)])
    with pytest.raises(ValidationError, match="per-party"):
        SkellamMechanism((1.0, 2.0))
    with pytest.raises(ValidationError, match="resolution"):
        SkellamMechanism(1.0, 0.5)
    with pytest.raises(ValidationError, match="no honest party"):
        check_shares(5, 3, 2)
    assert check_shares(10, 1, 2) == 7
