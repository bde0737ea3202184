"""Noise calibration of DP ADMM sharing (S2 Lemma 1, Thm 3; spec §3.6, §3.7, AMB-V4).

The sensitivity bound of the shared product ``D_m x~_m`` under column-level neighbours (spec §1.1) is

    C = 3 / (d_m rho) * [lambda c_1 + (1 + M rho) b_1],

and the per-iteration Gaussian scale is ``sigma = sqrt(2 log(1.25/delta)) C / epsilon`` (``epsilon in (0, 1]``
in the paper). ``b_1`` bounds ``||x||, ||y||, ||z||`` and is an *assumption* (unknown in practice), so every
guarantee built on ``C`` inherits it. The data-dependent ``computed`` variant of the authors' code replaces
``b_1`` by the current ``||y^t||`` and ``||v_m^t||`` (not DP-sound, spec §3.6).

``C`` is not a valid bound even when ``b_1`` holds: its factor ``1/d_m`` comes from ``||(D_m^T D_m)^{-1}|| = 1/d_m``
(S2 §7.3, AMB-V4), which no assumption of the paper implies and no clipping of the iterates can enforce. The
bound privdist guarantees in the clipped ``output`` mode is :func:`clipped_sensitivity`.
"""

from __future__ import annotations

import math

from .._checks import check_int, check_nonnegative, check_positive, check_probability

__all__ = ["sharing_sensitivity", "sharing_sigma", "sharing_noise_multiplier", "computed_sensitivity",
           "clipped_sensitivity"]


def sharing_sensitivity(d_m: int, rho: float, reg_weight: float, c1: float, b1: float, n_parties: int) -> float:
    """``C = 3 / (d_m rho) [lambda c_1 + (1 + M rho) b_1]`` (S2 Lemma 1).

    Args:
        d_m: party ``m``'s number of features (>= 1).
        rho: ADMM penalty (> 0).
        reg_weight: ``lambda`` (>= 0).
        c1: bound on ``|R_m''|`` (2 for ``R = ||x||^2``).
        b1: assumed bound on ``||x||, ||y||, ||z||`` (>= 0).
        n_parties: ``M`` (>= 1).

    Returns:
        ``C``; e.g. 1.363727 for ``d_m=66, rho=1, lambda=1e-3, c1=2, b1=10, M=2`` (spec §10).

    References:
        Spec §3.6, §10, AMB-V4.
    """
    d_m = check_int(d_m, "d_m")
    rho = check_positive(rho, "rho")
    lam = check_nonnegative(reg_weight, "reg_weight")
    c1 = check_nonnegative(c1, "c1")
    b1 = check_nonnegative(b1, "b1")
    M = check_int(n_parties, "n_parties")
    return 3.0 / (d_m * rho) * (lam * c1 + (1.0 + M * rho) * b1)


def sharing_noise_multiplier(epsilon: float, delta: float) -> float:
    """``sigma / C = sqrt(2 log(1.25/delta)) / epsilon`` (S2 Thm 3).

    Raises:
        ValidationError: ``epsilon <= 0`` or ``delta`` outside (0, 1).
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def sharing_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """``sigma = sqrt(2 log(1.25/delta)) C / epsilon``; 4.237798 for ``C=1.363727, eps=1, delta=0.01`` (spec §10)."""
    return sharing_noise_multiplier(epsilon, delta) * check_nonnegative(sensitivity, "sensitivity")


def computed_sensitivity(d_m: int, rho: float, reg_weight: float, y_norm: float, v_norm: float) -> float:
    """The authors' data-dependent ``C = 3/(d_m rho) (2 lambda + ||y^t|| + rho ||v_m^t||)``, from their code.

    Not a sensitivity bound: it depends on private iterates, so noise calibrated with it is **not** DP-sound
    (``computed_heuristic`` mode, spec §3.6).
    """
    d_m = check_int(d_m, "d_m")
    rho = check_positive(rho, "rho")
    return 3.0 / (d_m * rho) * (2.0 * reg_weight + y_norm + rho * v_norm)


def clipped_sensitivity(rho: float, b1: float, n_parties: int) -> float:
    """``C = (1 + M rho) b_1 / rho``: the l2 sensitivity of ``Q_m = D_m x_m`` once the party step's inputs are clipped.

    The party step (S2(17) first line, closed form of spec §3.4) is ``Q_m = -H(D_m) u`` with
    ``u = y^t + rho v_m^t`` and ``H(D) = D (2 lambda I + rho D^T D)^{-1} D^T``. For every ``D`` and ``lambda >= 0``,
    ``0 <= H(D) <= I / rho`` (its eigenvalues are ``s^2 / (2 lambda + rho s^2)`` over the singular values ``s`` of
    ``D``), so ``||H(D) u - H(D') u|| <= ||u|| / rho`` for ANY two blocks ``D, D'`` (in particular S2 Def. 2's
    neighbours, a column change of norm <= 1), with no assumption on ``D`` (no unit-norm rows, no full rank). The
    clipped mode enforces the two bounds the proof of S2 Lemma 1 (§7.3, last display) takes from Assumption 2.1:
    ``||y^t|| <= b_1`` and ``||v_m^t|| = ||sum_{k != m} D_k x~_k - z^t|| <= ||z|| + sum_{k != m} ||x~_k|| <= M b_1``;
    hence ``||u|| <= (1 + M rho) b_1``. The bound is attained up to ``2 lambda / rho`` terms (a column of norm
    ``1/sqrt(2)`` turned by 90 degrees with ``u`` along it), so it cannot be lowered for all data.

    Compared with S2 Lemma 1 (:func:`sharing_sensitivity`) it is about ``d_m / 3`` times larger: the paper's
    ``1/d_m`` rests on ``||(D_m^T D_m)^{-1}|| = 1/d_m``, which does not hold in general.

    Args:
        rho: ADMM penalty (> 0).
        b1: public clip bound (>= 0).
        n_parties: ``M`` (>= 1).

    Returns:
        ``C``; e.g. 30 for ``rho=1, b1=10, M=2``.

    References:
        S2(17), Lemma 1 and its proof (§7.3), Assumption 2.1; spec §3.4, §3.6, AMB-V4.
    """
    rho = check_positive(rho, "rho")
    b1 = check_nonnegative(b1, "b1")
    M = check_int(n_parties, "n_parties")
    return (1.0 + M * rho) * b1 / rho
