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

import numpy as np

from .._checks import check_positive, check_probability
from .._lazy import lazy
from ..errors import CalibrationError, ValidationError

__all__ = ["gaussian_mu", "share_epsilon", "split_budget", "min_total_epsilon"]

_gaussian = lazy("dp_accounting.gaussian_mechanism")


def gaussian_mu(epsilon: float, delta: float) -> float:
    """The Gaussian-DP ``mu`` that is exactly ``(epsilon, delta)``-DP (Balle-Wang analytic Gaussian, via
    dp-accounting): ``1 / get_sigma_gaussian(epsilon, delta)``."""
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    return 1.0 / float(_gaussian.get_sigma_gaussian(epsilon, delta))


def share_epsilon(epsilon: float, delta: float, share: float) -> float:
    """The epsilon (at the same ``delta``) of a Gaussian step that spends ``share`` of ``(epsilon, delta)``'s
    ``mu^2``; ``share = 1`` returns ``epsilon`` itself.

    Raises:
        CalibrationError: the share is so small that its noise is ``(0, delta)``-DP (an epsilon far below delta):
            there is no epsilon to calibrate to (issue 26: was "target_epsilon must be > 0, got 0.0").
    """
    if not (isinstance(share, (int, float)) and 0 < share <= 1):
        raise ValidationError(f"a budget share must be in (0, 1], got {share!r}")
    if share == 1:
        return float(epsilon)
    mu = gaussian_mu(epsilon, delta) * math.sqrt(share)
    with np.errstate(divide="ignore"):  # dp-accounting's log1p(-1) at a vanishing epsilon
        out = float(_gaussian.get_epsilon_gaussian(1.0 / mu, delta))
    if not out > 0:  # the share's noise is (0, delta)-DP: no epsilon of its own to calibrate to
        raise CalibrationError(f"a share {share:.3g} of epsilon {epsilon:g} at delta {delta:g} is too small to "
                               f"calibrate (its Gaussian noise would be (0, delta)-DP); raise epsilon (to about "
                               f"{min_total_epsilon(delta, share):.2g} or more) or the share, or spend the budget on "
                               "fewer steps")
    return out


def min_total_epsilon(delta: float, share: float) -> float:
    """The smallest total epsilon (at ``delta``, to a factor of 2) whose ``share`` still calibrates."""
    eps = 1e-6
    while eps < 1e3:
        mu = gaussian_mu(eps, delta) * math.sqrt(share)
        with np.errstate(divide="ignore"):
            if float(_gaussian.get_epsilon_gaussian(1.0 / mu, delta)) > 0:
                return eps
        eps *= 2
    return eps


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
