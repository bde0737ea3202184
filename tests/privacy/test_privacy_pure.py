"""Issue 24 item 6: pure-DP releases are composed through the dominating pair of pure DP (binary randomized response,
Kairouz, Oh & Viswanath 2015), checked against the optimal composition theorem computed here independently, and the
Gamma-norm mechanism's empirical privacy loss stays within its pure epsilon."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event as de

from privdist.privacy import (GammaNormMechanism, LaplaceMechanism, agent_epsilon, laplace_release,
                              objective_perturbation, pure_release)
from privdist.privacy.audit_stats import threshold_audit
from privdist.privacy.pure import pure_composition_epsilon, pure_pld_epsilon

mpmath.mp.dps = 60


def _kairouz_delta(eps, k, i):
    """Kairouz et al. (2015) Thm 3.3: the k-fold composition of eps-DP is ((k - 2i) eps, delta_i)-DP, optimally, with
    delta_i = sum_{l < i} C(k, l) (e^{(k-l) eps} - e^{(k-2i+l) eps}) / (1 + e^eps)^k (60-digit arithmetic)."""
    e = mpmath.mpf(eps)
    return sum(mpmath.binomial(k, l) * (mpmath.exp((k - l) * e) - mpmath.exp((k - 2 * i + l) * e))
               for l in range(i)) / (1 + mpmath.exp(e)) ** k


def _optimal_epsilon(eps, k, delta):
    """The optimal composition's epsilon at ``delta``: between two points of Thm 3.3 the hockey-stick
    ``delta(e') = sum_{l <= i-1} C(k,l) (e^{(k-l) eps} - e^{e' + l eps}) / (1 + e^eps)^k`` is decreasing in e'
    (the same sum with (k - 2i + l) eps replaced by e' + l eps); solve it on the bracketing segment."""
    e = mpmath.mpf(eps)
    i = 0  # delta_0 = 0; find the last point i of Thm 3.3 with delta_i <= delta
    while k - 2 * (i + 1) >= 0 and _kairouz_delta(eps, k, i + 1) <= delta:
        i += 1
    # delta_i <= delta < delta_{i+1}: e' in [(k - 2i - 2) eps, (k - 2i) eps]; terms l <= i are active there
    norm = (1 + mpmath.exp(e)) ** k
    a = sum(mpmath.binomial(k, l) * mpmath.exp((k - l) * e) for l in range(i + 1)) / norm
    b = sum(mpmath.binomial(k, l) * mpmath.exp(l * e) for l in range(i + 1)) / norm
    return float(mpmath.log((a - delta) / b))


CASES = [(0.5, 100), (1.0, 10), (0.1, 1000), (0.15, 300)]


@pytest.mark.parametrize("eps, k", CASES)
def test_accountant_equals_optimal_composition(eps, k):
    """The pld column of k Gamma-norm releases is the optimal composition of k pure eps-DP mechanisms (the worst
    case), to 1e-9 relative; rdp is a valid (larger) bound."""
    delta = 1e-5
    want = _optimal_epsilon(eps, k, delta)
    entries = ((GammaNormMechanism(eps).releases([0])[0], k),)
    assert agent_epsilon(entries, delta, "pld") == pytest.approx(want, rel=1e-9)
    assert agent_epsilon(entries, delta, "rdp") >= want
    assert agent_epsilon(entries, delta, "paper") == pytest.approx(k * eps)  # basic composition, as declared
    # the discretized PLD (several epsilons, mixed events) agrees within its pessimistic discretization
    rr = pure_release(eps).event
    split = de.ComposedDpEvent((de.SelfComposedDpEvent(rr, k // 2), de.SelfComposedDpEvent(rr, k - k // 2)))
    assert want * (1 - 1e-9) <= pure_pld_epsilon(split, delta) <= want + k * 1e-4  # rounding up <= 1e-4 each


def test_issue_example_and_the_old_laplace_stand_in():
    """100 releases of 0.5 at delta 1e-5: 31.17 as generic pure DP; the 1-D Laplace pair gave 28.50 (issue 24)."""
    assert _optimal_epsilon(0.5, 100, 1e-5) == pytest.approx(31.1729, abs=1e-4)
    assert agent_epsilon(((laplace_release(2.0), 100),), 1e-5, "pld") == pytest.approx(28.50, abs=0.01)
    assert agent_epsilon(((GammaNormMechanism(0.5).releases([0])[0], 100),), 1e-5, "pld") == pytest.approx(
        31.1729, abs=1e-4)


@pytest.mark.parametrize("i", [1, 2, 5])
def test_exact_composition_at_the_theorems_points(i):
    eps, k = 0.5, 100
    assert pure_composition_epsilon(eps, k, float(_kairouz_delta(eps, k, i))) == pytest.approx((k - 2 * i) * eps,
                                                                                                 rel=1e-9)


def test_uses_are_self_composed_not_one_bigger_release():
    """uses = 4 releases of pure 0.5 in one message are 4 compositions (SelfComposedDpEvent), for every pure-DP
    mechanism; 25 such messages are the optimal composition of 100."""
    want = _optimal_epsilon(0.5, 100, 1e-5)
    for mech in (GammaNormMechanism(0.5), LaplaceMechanism(2.0),
                 objective_perturbation.ObjectivePerturbationMechanism(0.5)):
        rel = mech.releases([0], uses=4)[0]
        assert isinstance(rel.event, de.SelfComposedDpEvent) and rel.event.count == 4 and rel.epsilon == 2.0
        assert agent_epsilon(((rel, 25),), 1e-5, "pld") == pytest.approx(want, rel=1e-9)
    # declaring the message as ONE pure release of 2.0 (the old Laplace "scale b/uses") is a different, unproven pair
    assert agent_epsilon(((pure_release(2.0), 25),), 1e-5, "pld") != pytest.approx(want, rel=1e-3)


def test_mixed_with_gaussian_and_laplace_is_composed():
    """A pure release composed with Gaussian and 1-D Laplace releases: at least each part alone."""
    entries = ((pure_release(0.5), 50), (laplace_release(2.0), 50))
    both = agent_epsilon(entries, 1e-5, "pld")
    assert both >= agent_epsilon(((pure_release(0.5), 50),), 1e-5, "pld")
    assert both <= agent_epsilon(((pure_release(0.5), 100),), 1e-5, "pld") * (1 + 1e-3)  # Laplace is dominated


def test_gamma_norm_empirical_privacy_loss_stays_within_pure_epsilon():
    """Neighbouring inputs at l2 distance = sensitivity (a shift along one axis of a 3-D vector): the Clopper-Pearson
    lower bound on epsilon at delta = 0 from a threshold chosen on half the releases stays below the declared pure
    epsilon, and is not vacuous (measured 0.617 of 1.0); the same audit refutes noise drawn at twice the rate
    (half the noise) of the declared epsilon (measured 1.448 > 1.0)."""
    eps, sens, n, dim = 1.0, 1.0, 100_000, 3
    mech = GammaNormMechanism(eps)
    x0 = mech.privatize(np.zeros((n, dim)), sens, np.random.default_rng(11))
    shift = np.zeros((n, dim))
    shift[:, 0] = sens
    x1 = mech.privatize(shift, sens, np.random.default_rng(12))
    lower = threshold_audit(x0, x1, 0.0).bounds[0.0]["epsilon_lb"]
    assert lower <= eps
    assert lower >= 0.4 * eps
    bug = GammaNormMechanism(2 * eps)  # a planted bug: half the noise of the declared epsilon
    y0 = bug.privatize(np.zeros((n, dim)), sens, np.random.default_rng(11))
    y1 = bug.privatize(shift, sens, np.random.default_rng(12))
    assert threshold_audit(y0, y1, 0.0).bounds[0.0]["epsilon_lb"] > eps
