"""The Skellam mechanism's accounting (issue 27): its DP event, its RDP curve and an RDP accountant that composes it.

**Noise.** ``Sk(mu) = Poisson(mu/2) - Poisson(mu/2)`` per coordinate: integer valued, variance ``mu``, and closed
under sums (``Sk(mu_1) + Sk(mu_2) = Sk(mu_1 + mu_2)``), so parties that each add a share ``Sk(mu / n)`` to their
integer vectors make a secure sum that carries exactly ``Sk(mu)`` (Agarwal, Kairouz & Liu, "The Skellam Mechanism
for Differentially Private Federated Learning", NeurIPS 2021, §3).

**RDP** (AKL21, the multi-dimensional Skellam mechanism, §3). For integer-valued queries whose neighbours differ by
at most ``D1`` in l1 and ``D2`` in l2 norm, adding ``Sk(mu)`` to every coordinate is ``(alpha, eps(alpha))``-RDP for
every *integer* ``alpha > 1`` with

    eps(alpha) = alpha D2^2 / (2 mu) + min( ((2 alpha - 1) D2^2 + 6 D1) / (4 mu^2),  3 D1 / (2 mu) ).

The first term is the Gaussian mechanism's at the same variance; the second is the price of being discrete. The bound
is proved for integer orders only, so :class:`SkellamRdpAccountant` is dp-accounting's ``RdpAccountant`` restricted
to :data:`INTEGER_ORDERS` that also composes :class:`SkellamDpEvent`; every other event of a ledger (a Gaussian range
step, ...) is composed by dp-accounting itself at the same orders, and ``(epsilon, delta)`` is dp-accounting's RDP
conversion (``compute_epsilon``). No PLD of the multi-dimensional Skellam mechanism is published: the ``pld`` value of
a ledger with Skellam releases is this RDP bound (valid, slightly looser than a PLD would be).

**Randomized rounding** (:func:`rounded_sensitivities`). Real values ``v`` are scaled by ``gamma`` and rounded to
``floor(gamma v + U)`` with ``U ~ Uniform[0, 1)^d`` drawn independently of the data. For neighbours with
``||v - v'||_2 <= Delta`` the same ``U`` gives integer vectors that differ by at most ``ceil(gamma |v_i - v'_i|)``
in coordinate ``i``, hence by ``D2 <= gamma Delta + sqrt(d)`` in l2 and ``D1 <= min(sqrt(d) D2, D2^2)`` in l1 (an
integer vector has ``||x||_1 <= ||x||_2^2``). The release is a finite mixture over the values of ``U`` with the same
weights for both neighbours, and Rényi divergence is jointly quasi-convex (van Erven & Harremoës 2014, Thm 13), so the
bound above with these ``D1, D2`` holds for the rounded release. No conditional resampling is used: it would make the
mixture weights depend on the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attr
import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as _rdp

from .._checks import check_positive

__all__ = ["SkellamDpEvent", "SkellamRdpAccountant", "INTEGER_ORDERS", "skellam_rdp", "rounded_sensitivities"]

#: RDP orders of ledgers with Skellam releases: integers only (the bound is proved for integer orders).
INTEGER_ORDERS: tuple[int, ...] = tuple(range(2, 65)) + (72, 80, 96, 112, 128, 160, 192, 256, 384, 512, 768, 1024)


def _positive(instance, attribute, value) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"SkellamDpEvent.{attribute.name} must be finite and > 0, got {value!r}")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class SkellamDpEvent(dp_event.DpEvent):
    """One release of an integer vector plus ``Sk(variance)`` noise in every coordinate (AKL21).

    Attributes:
        variance: ``mu``, the variance per coordinate of the noise the release carries (integer units): for a
            secure sum, the sum of the shares of the honest parties that took part.
        l2_sensitivity: ``D2``, the l2 norm by which neighbouring integer vectors may differ.
        l1_sensitivity: ``D1``, the l1 norm by which they may differ.
    """

    variance: float = attr.ib(validator=_positive)
    l2_sensitivity: float = attr.ib(validator=_positive)
    l1_sensitivity: float = attr.ib(validator=_positive)

    #: marks privdist's own events (the accountants and the serialisation find them by it)
    privdist_event = True


def skellam_rdp(event: SkellamDpEvent, orders: Sequence[float]) -> np.ndarray:
    """The RDP bound of one Skellam release at integer ``orders`` (module docstring; AKL21 §3).

    Raises:
        ValueError: an order that is not an integer > 1.
    """
    a = np.asarray(orders, dtype=float)
    if np.any(a < 2) or np.any(a != np.round(a)):
        raise ValueError(f"the Skellam RDP bound holds for integer orders > 1 only, got {list(orders)}")
    mu, d2, d1 = float(event.variance), float(event.l2_sensitivity), float(event.l1_sensitivity)
    discrete = np.minimum(((2.0 * a - 1.0) * d2**2 + 6.0 * d1) / (4.0 * mu**2), 3.0 * d1 / (2.0 * mu))
    return a * d2**2 / (2.0 * mu) + discrete


def rounded_sensitivities(scaled_l2: float, dim: int) -> tuple[float, float]:
    """``(D2, D1)`` of randomized rounding of a query of scaled l2 sensitivity ``gamma Delta`` in ``dim``
    coordinates: ``D2 = gamma Delta + sqrt(dim)``, ``D1 = min(sqrt(dim) D2, D2^2)`` (module docstring)."""
    scaled_l2 = check_positive(scaled_l2, "scaled_l2")
    root = math.sqrt(int(dim))
    d2 = scaled_l2 + root
    return d2, min(root * d2, d2 * d2)


class SkellamRdpAccountant(_rdp.RdpAccountant):
    """dp-accounting's RDP accountant on :data:`INTEGER_ORDERS` that also composes :class:`SkellamDpEvent`
    (through ``_maybe_compose``, the hook dp-accounting's accountants implement); every other event is dp-accounting's
    own RDP at the same orders."""

    def __init__(self, orders: Sequence[int] = INTEGER_ORDERS, neighboring_relation=None):
        kwargs = {} if neighboring_relation is None else {"neighboring_relation": neighboring_relation}
        super().__init__(orders=list(orders), **kwargs)

    def _maybe_compose(self, event, count, do_compose):
        if isinstance(event, SkellamDpEvent):
            if do_compose:
                self._rdp += count * skellam_rdp(event, self._orders)
            return None
        return super()._maybe_compose(event, count, do_compose)

