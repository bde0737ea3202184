"""One total budget shared by several Gaussian steps of a fit (issue 25: preprocessing, classes, curvature).

A fit may spend its party's total ``(epsilon, delta)`` on more than one Gaussian step: a DP range step before
training, one binary model per class, a curvature release beside the gradients. Gaussian mechanisms compose
exactly in Gaussian differential privacy (Dong, Roth, Su 2022, Cor. 3.3): releases with noise multipliers ``z_i``
(sigma / l2 sensitivity) together are ``mu``-GDP with ``mu^2 = sum_i 1 / z_i^2``, and the PLD accountant reports
that composition at its exact Gaussian value. A *share* ``s_i`` of a budget is therefore a share of ``mu^2`` (of
zCDP's ``rho = mu^2 / 2``), and shares that sum to at most 1 compose to at most the total:

    mu = 1 / get_sigma_gaussian(epsilon, delta),  mu_i = sqrt(s_i) mu,  epsilon_i = get_epsilon_gaussian(1/mu_i, delta).

A step handed ``(epsilon_i, delta)`` calibrates its own noise for its own releases (PLD, as always), so the
composed ledger of the fit is the requested total. Only Gaussian steps may share a budget this way; the
accountant, not this arithmetic, reports what was spent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._checks import check_positive, check_probability
from .._lazy import lazy
from ..errors import ValidationError

__all__ = ["gaussian_mu", "share_epsilon", "split_budget"]

_gaussian = lazy("dp_accounting.gaussian_mechanism")


def gaussian_mu(epsilon: float, delta: float) -> float:
    """The Gaussian-DP ``mu`` that is exactly ``(epsilon, delta)``-DP (Balle-Wang analytic Gaussian, via
    dp-accounting): ``1 / get_sigma_gaussian(epsilon, delta)``."""
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    return 1.0 / float(_gaussian.get_sigma_gaussian(epsilon, delta))


def share_epsilon(epsilon: float, delta: float, share: float) -> float:
    """The epsilon (at the same ``delta``) of a Gaussian step that spends ``share`` of ``(epsilon, delta)``'s
    ``mu^2``; ``share = 1`` returns ``epsilon`` itself."""
    if not (isinstance(share, (int, float)) and 0 < share <= 1):
        raise ValidationError(f"a budget share must be in (0, 1], got {share!r}")
    if share == 1:
        return float(epsilon)
    mu = gaussian_mu(epsilon, delta) * math.sqrt(share)
    return float(_gaussian.get_epsilon_gaussian(1.0 / mu, delta))


def split_budget(epsilon: float, delta: float, shares: Sequence[float]) -> tuple[float, ...]:
    """Epsilons of Gaussian steps sharing ``(epsilon, delta)`` in the proportions ``shares`` (normalised to sum 1),
    each at the same ``delta``; their composition is ``(epsilon, delta)`` (see the module docstring).

    Raises:
        ValidationError: no shares, a share <= 0, or a bad ``epsilon``/``delta``.
    """
    shares = [float(s) for s in shares]
    if not shares or any(not s > 0 or not math.isfinite(s) for s in shares):
        raise ValidationError(f"budget shares must be positive numbers, got {shares}")
    total = sum(shares)
    return tuple(share_epsilon(epsilon, delta, s / total) for s in shares)
