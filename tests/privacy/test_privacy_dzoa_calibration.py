"""D-ZOA privacy calibration (spec §2.7, §2.9, §10 vectors)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.algorithms.dzoa_calibration import (Calibration, EpsilonOutsideTheoremError, JTooSmallError,
                                                  NonPositiveCTError, c_t, check_theorem_range,
                                                  dzoa_alpha0_from_epsilon, dzoa_epsilon_from_j,
                                                  dzoa_j_from_epsilon, harmonic_sums)


def test_spec_vectors_sums_and_bracket():
    s1, s2 = harmonic_sums(100)
    assert s1 == pytest.approx(5.187378, abs=1e-6)
    assert s2 == pytest.approx(2.412874, abs=1e-6)
    assert 0.5 * 0.54**2 / math.log(20) * (s1 * (1 + math.log(10)) + s2) == pytest.approx(0.951222, abs=1e-6)


@pytest.mark.parametrize("eps,delta,ratio", [(0.15, 1e-3, 3.620), (0.15, 1e-6, 1.84), (0.95, 1e-3, 145.0)])
def test_j_per_beta_c_norm_matches_spec(eps, delta, ratio):
    bsq = 1000.0  # large, so rounding is negligible
    ct = c_t(100, 10, 0.54, 2 * math.sqrt(bsq), bsq)
    d = np.array([1.0, 2.0, 3.0])
    J = dzoa_j_from_epsilon(eps, d, np.full(3, 20.0), ct=ct, P=10, delta=delta, rho=4.0)
    np.testing.assert_allclose(J / bsq / d**2, ratio, rtol=3e-3)


@settings(max_examples=50, deadline=None)
@given(J=st.integers(1, 10**6), d=st.integers(1, 6), n=st.integers(5, 200),
       delta=st.sampled_from([1e-6, 1e-4, 1e-3, 1e-2]))
def test_j_epsilon_round_trip(J, d, n, delta):
    ct = c_t(100, 10, 0.54, 10.0, 20.0)
    eps = dzoa_epsilon_from_j(J, [d], [n], ct=ct, P=10, delta=delta, rho=4.0)
    assert dzoa_j_from_epsilon(float(eps[0]), [d], [n], ct=ct, P=10, delta=delta, rho=4.0)[0] == J


def test_s0_alpha0_closed_form_hits_target():
    d, n = np.array([1.0, 2.0, 3.0]), np.full(3, 20.0)
    a0 = dzoa_alpha0_from_epsilon(0.3, 30, d, n, T=100, P=10, R=8.0, beta_c_norm_sq=16.0, delta=1e-3, rho=4.0)
    for k in range(3):
        ct = c_t(100, 10, a0[k], 8.0, 16.0)
        eps = dzoa_epsilon_from_j(30, d[k], n[k], ct=ct, P=10, delta=1e-3, rho=4.0)
        assert eps == pytest.approx(0.3, rel=1e-12)


def test_ct_condition_and_named_errors():
    assert c_t(100, 10, 0.54, 2.0, 1.0) > 0  # S1(23) holds for T >= 3 with R = 2||beta^c|| (spec §2.8)
    assert c_t(1, 10, 0.05, 2.0, 1.0) < 0
    with pytest.raises(NonPositiveCTError):
        dzoa_j_from_epsilon(0.1, [1], [20], ct=-1.0, P=10, delta=1e-3, rho=4.0)
    with pytest.raises(NonPositiveCTError):
        Calibration.build("s1", epsilon=0.1, delta=1e-3, J=30, alpha0=0.05, degrees=[1], counts=[20], T=1, P=10,
                          rho=4.0, c1=1.0, c=0.5, R=2.0, beta_c_norm_sq=1.0)
    with pytest.raises(JTooSmallError):
        dzoa_j_from_epsilon(1e-4, [1], [20], ct=1.0, P=10, delta=1e-3, rho=4.0)
    with pytest.raises(EpsilonOutsideTheoremError):
        check_theorem_range(1.2, 1e-3)
    with pytest.raises(EpsilonOutsideTheoremError):
        check_theorem_range(0.5, 0.02)
    assert len(check_theorem_range(1.2, 0.02, allow_outside_theorem=True)) == 2


def test_calibration_reports_realised_epsilon_and_small_j_warning():
    cal = Calibration.build("s1", epsilon=0.15, delta=1e-3, J=30, alpha0=0.54, degrees=[1, 3], counts=[20, 20],
                            T=100, P=10, rho=4.0, c1=1.0, c=0.5, R=2.0, beta_c_norm_sq=1.0)
    assert list(cal.J) == [4, 33]  # 3.62 d^2 ||beta^c||^2, rounded
    assert cal.epsilon[0] == pytest.approx(0.15 * math.sqrt(4 / 3.6199), rel=1e-3)
    assert cal.warnings and "CLT" in cal.warnings[0]
