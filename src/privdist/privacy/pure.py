"""Composition of pure-DP releases through their dominating pair (issue 24; Kairouz, Oh & Viswanath 2015).

A pure ``epsilon``-DP release of any mechanism (Gamma-norm noise, objective perturbation, a d-dimensional Laplace
mechanism) is declared as binary randomized response with ratio exactly ``e^epsilon``
(:func:`~privdist.privacy.release.pure_release`: ``RandomizedResponseDpEvent(2/(1+e^epsilon), 2)``). Every
``epsilon``-DP mechanism is a post-processing of that pair (Kairouz et al., "The composition theorem for
differential privacy", ICML 2015, Thm 2.4), so composing the pairs bounds the composition of the releases, and the
bound is attained (their Thm 3.3, optimal composition): it is the worst case, not an approximation.

This module computes the ``pld`` column for such releases:

* :func:`pure_composition_epsilon`: ``k`` releases of one epsilon, exactly. Under the first distribution the
  number ``j`` of flipped bits is ``Binomial(k, 1/(1+e^epsilon))`` and the privacy loss is ``(k - 2j) epsilon``,
  so ``delta(eps') = sum_{j: (k-2j) epsilon > eps'} P(j) - e^{eps'} Q(j)`` with ``Q(j) = P(k - j)`` (the
  hockey-stick of Kairouz et al.'s Thm 3.3 at every ``eps'``, not only at its points ``(k - 2i) epsilon``); the
  epsilon at a target delta is the root of this continuous decreasing function (no discretization error, as
  dp-accounting's exact Gaussian conversion is for Gaussian releases).
* :func:`pure_pld_epsilon`: any composition holding randomized-response events (several epsilons, or mixed with
  Gaussian / Laplace releases), by dp-accounting's PLD constructors at the accountant's default discretization
  (1e-4, pessimistic: an upper bound). dp-accounting 0.6.0's ``PLDAccountant`` cannot be used for it: it composes
  a ``RandomizedResponseDpEvent`` *once* whatever the count of an enclosing ``SelfComposedDpEvent`` (100 releases
  of pure 0.5 at delta 1e-5 come out as 0.50 instead of 31.17), and accepts randomized response only under
  ``REPLACE_ONE``, where it rejects ``LaplaceDpEvent``. Its ``RdpAccountant`` composes counts correctly (under
  ``REPLACE_ONE``) and is used as is for the ``rdp`` column.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import check_int, check_positive, check_probability
from .._lazy import lazy
from ..errors import UnsupportedEventError
from .events import walk_events

dp_event = lazy("dp_accounting.dp_event")
_pa = lazy("dp_accounting.privacy_accountant")
_pld = lazy("dp_accounting.pld")
_optimize = lazy("scipy.optimize")
_special = lazy("scipy.special")

__all__ = ["has_randomized_response", "pure_composition_epsilon", "pure_pld_epsilon", "pure_pld"]


def has_randomized_response(event) -> bool:
    """Whether ``event`` (or an event nested in it) is a ``RandomizedResponseDpEvent``."""
    return any(isinstance(e, dp_event.RandomizedResponseDpEvent) for e in walk_events(event))


def pure_composition_epsilon(epsilon: float, count: int, delta: float) -> float:
    """Exact epsilon at ``delta`` of ``count`` pure ``epsilon``-DP releases composed in the worst case.

    Args:
        epsilon: the pure epsilon of one release (> 0).
        count: the number of releases (>= 1).
        delta: the target delta, in (0, 1).

    Returns:
        The smallest ``eps' >= 0`` with ``delta(eps') <= delta`` (module docstring), e.g. 31.1729 for 100 releases
        of 0.5 at delta 1e-5 (28.50 for 100 one-dimensional Laplace releases of the same epsilon).

    References:
        Kairouz, Oh & Viswanath (2015), Thm 3.3 (optimal composition of ``epsilon``-DP mechanisms).
    """
    eps = check_positive(epsilon, "epsilon")
    k = check_int(count, "count", 1)
    delta = check_probability(delta, "delta")
    j = np.arange(k + 1, dtype=float)
    log_binom = _special.gammaln(k + 1) - _special.gammaln(j + 1) - _special.gammaln(k - j + 1)
    log_norm = k * np.logaddexp(0.0, eps)  # log (1 + e^eps)^k
    log_p = log_binom + (k - j) * eps - log_norm  # P(j flips) under the first input
    log_q = log_binom + j * eps - log_norm  # the same outcome under the neighbouring input
    loss = (k - 2 * j) * eps

    def excess(e: float) -> float:
        m = loss > e
        if not np.any(m):
            return -delta
        return float(np.sum(np.exp(log_p[m]) * -np.expm1(e + log_q[m] - log_p[m]))) - delta

    if excess(0.0) <= 0:
        return 0.0
    return float(_optimize.brentq(excess, 0.0, k * eps, xtol=1e-13, rtol=4 * np.finfo(float).eps))


def _single_pure(event) -> tuple[float, int] | None:
    """``(epsilon, count)`` when ``event`` is ``count`` releases of one binary randomized response, else None."""
    count = 1
    while isinstance(event, dp_event.SelfComposedDpEvent):
        count *= event.count
        event = event.event
    if (isinstance(event, dp_event.RandomizedResponseDpEvent) and event.num_buckets == 2
            and 0 < event.noise_parameter < 1):
        p = event.noise_parameter
        return math.log((2.0 - p) / p), count
    return None


def pure_pld_epsilon(event, delta: float) -> float:
    """The ``pld`` epsilon at ``delta`` of a composition holding randomized-response events (module docstring).

    Raises:
        UnsupportedEventError: an event other than randomized response, Gaussian, Laplace, no-op or their
            compositions.
    """
    single = _single_pure(event)
    if single is not None:
        return pure_composition_epsilon(single[0], single[1], delta)
    total = pure_pld(event)
    if total is None:
        return math.inf
    return 0.0 if total == 0 else max(0.0, float(total.get_epsilon_for_delta(delta)))


def pure_pld(event):
    """The dp-accounting privacy loss distribution of a composition holding randomized-response events, built from
    dp-accounting's PLD constructors with the counts applied (module docstring); ``None`` when a part is released
    without noise, ``0`` when nothing is released.

    Raises:
        UnsupportedEventError: an event other than randomized response, Gaussian, Laplace, no-op or their
            compositions.
    """
    pld = _pld.privacy_loss_distribution
    replace_one = _pa.NeighboringRelation.REPLACE_ONE
    parts = []

    def walk(ev, count: int) -> None:
        if isinstance(ev, dp_event.NoOpDpEvent):
            return
        if isinstance(ev, dp_event.SelfComposedDpEvent):
            walk(ev.event, ev.count * count)
        elif isinstance(ev, dp_event.ComposedDpEvent):
            for sub in ev.events:
                walk(sub, count)
        elif isinstance(ev, dp_event.RandomizedResponseDpEvent) and ev.noise_parameter > 0:
            parts.append(pld.from_randomized_response(ev.noise_parameter, ev.num_buckets,
                                                      neighboring_relation=replace_one).self_compose(count))
        elif isinstance(ev, dp_event.GaussianDpEvent) and ev.noise_multiplier > 0:
            parts.append(pld.from_gaussian_mechanism(ev.noise_multiplier / math.sqrt(count),
                                                     neighboring_relation=replace_one))
        elif isinstance(ev, dp_event.LaplaceDpEvent) and ev.noise_multiplier > 0:
            parts.append(pld.from_laplace_mechanism(ev.noise_multiplier).self_compose(count))
        elif isinstance(ev, (dp_event.RandomizedResponseDpEvent, dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent)):
            parts.append(None)  # no noise: not private
        else:
            raise UnsupportedEventError(f"the pld accountant cannot compose event {ev} with a pure-DP release")

    walk(event, 1)
    if any(p is None for p in parts):
        return None
    if not parts:
        return 0
    total = parts[0]
    for part in parts[1:]:
        total = total.compose(part)
    return total
