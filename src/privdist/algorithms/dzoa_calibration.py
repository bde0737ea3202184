"""Privacy calibration of D-ZOA: ``J`` from a target epsilon, S1(22)-(23), and S0's ``alpha_0`` alternative.

D-ZOA adds no noise; the papers model the released iterate as Gaussian with per-entry variance (S1(17),
spec §2.7, AMB-D9, AMB-D10)

    sigma_k^2 = C_T / (J P),   C_T = c R^2 alpha_0^2 / log(2P) * (s1 (1 + log P) + s2) - 4 ||beta^c||^2 / T,

with ``s1 = sum_{t<=T} 1/t`` and ``s2 = sum_{t<=T} t^{-3/2}``, and the replace-one sensitivity
``Delta_k = c1 / (rho d_k N_k)`` (S1(19)). Matching ``sigma_k`` to the 2.1-constant Gaussian mechanism gives

    epsilon_k = c1 / (rho d_k N_k) * sqrt(2.1 J P log(1.25/delta) / C_T)          (S1(22))
    J_k = round[(epsilon rho d_k N_k / c1)^2 C_T / (2.1 P log(1.25/delta))]        (inverted; AMB-D11)

which requires ``C_T > 0`` (S1(23)). S0 instead fixes ``J`` (30) and solves S0(27) for ``alpha_0`` per agent.
All functions here are pure and vectorised over agents (``degrees``, ``counts`` arrays).

References:
    S1 Lemma 2, Thm 1, (17), (19), (22), (23); S0 (22), (27); spec §2.7, §2.8, AMB-D9..D12.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import check_int, check_positive, check_probability
from ..errors import CalibrationError, ValidationError

__all__ = [
    "NonPositiveCTError",
    "EpsilonOutsideTheoremError",
    "JTooSmallError",
    "harmonic_sums",
    "c_t",
    "dzoa_epsilon_from_j",
    "dzoa_j_from_epsilon",
    "dzoa_alpha0_from_epsilon",
    "check_theorem_range",
    "Calibration",
]

#: The constant of S1(20)/(22): sigma = Delta sqrt(2.1 log(1.25/delta)) / epsilon.
GAUSS_CONSTANT = 2.1


class NonPositiveCTError(CalibrationError):
    """``C_T <= 0``: the inner loop is too short for the variance bound S1(17) to be positive (S1(23))."""


class EpsilonOutsideTheoremError(ValidationError):
    """``epsilon`` outside (0, 1] or ``delta > 0.01``, where S1 Thm 1 does not apply."""


class JTooSmallError(CalibrationError):
    """The calibrated number of direction pairs rounds to ``J_k < 1``: the target epsilon is unreachable."""


def harmonic_sums(T: int) -> tuple[float, float]:
    """``(s1, s2) = (sum_{t=1}^T 1/t, sum_{t=1}^T t^{-3/2})`` (spec §2.7, AMB-D10: sums to ``T``)."""
    T = check_int(T, "T", 1)
    t = np.arange(1, T + 1, dtype=float)
    return float(np.sum(1.0 / t)), float(np.sum(t ** -1.5))


def c_t(T: int, P: int, alpha0: float, R: float, beta_c_norm_sq: float, c: float = 0.5) -> float:
    """The constant ``C_T`` of S1(22) (may be <= 0; see :func:`dzoa_j_from_epsilon`)."""
    s1, s2 = harmonic_sums(T)
    P = check_int(P, "P", 1)
    return float(c * R**2 * alpha0**2 / math.log(2 * P) * (s1 * (1 + math.log(P)) + s2) - 4.0 * beta_c_norm_sq / T)


def _require_ct(ct: float, T: int) -> None:
    if not ct > 0:
        raise NonPositiveCTError(
            f"C_T = {ct:.6g} <= 0 for T = {T}: the inner loop is too short for S1(23) "
            "(increase T, alpha0 or R)")


def check_theorem_range(epsilon: float, delta: float, allow_outside_theorem: bool = False) -> list[str]:
    """Check S1 Thm 1's conditions ``epsilon in (0, 1]``, ``delta <= 0.01``.

    Returns:
        Assumption strings to record when ``allow_outside_theorem`` lets a violation through (else ``[]``).

    Raises:
        EpsilonOutsideTheoremError: a condition fails and ``allow_outside_theorem`` is False.
        ValidationError: ``epsilon <= 0`` or ``delta`` outside (0, 1) (never allowed).
    """
    check_positive(epsilon, "epsilon")
    check_probability(delta, "delta")
    problems = []
    if epsilon > 1:
        problems.append(f"epsilon = {epsilon} > 1")
    if delta > 0.01:
        problems.append(f"delta = {delta} > 0.01")
    if problems and not allow_outside_theorem:
        raise EpsilonOutsideTheoremError(
            f"{' and '.join(problems)}: S1 Thm 1 needs epsilon in (0, 1] and delta <= 0.01 "
            "(pass allow_outside_theorem=True to run anyway, recorded in the assumptions)")
    return [f"dzoa: {p} is outside S1 Thm 1's range; the per-iteration guarantee is extrapolated"
            for p in problems]


def dzoa_epsilon_from_j(J, degrees, counts, *, ct: float, P: int, delta: float, rho: float,
                        c1: float = 1.0) -> np.ndarray:
    """Per-agent epsilon of S1(22) for ``J`` direction pairs (scalar or per agent)."""
    d, n = np.asarray(degrees, dtype=float), np.asarray(counts, dtype=float)
    J = np.asarray(J, dtype=float)
    if not ct > 0:
        raise NonPositiveCTError(f"C_T = {ct:.6g} <= 0: S1(22) is undefined (S1(23))")
    return c1 / (rho * d * n) * np.sqrt(GAUSS_CONSTANT * J * P * math.log(1.25 / delta) / ct)


def dzoa_j_from_epsilon(epsilon: float, degrees, counts, *, ct: float, P: int, delta: float, rho: float,
                        c1: float = 1.0) -> np.ndarray:
    """Per-agent ``J_k`` (rounded to the nearest integer) from a target per-iteration epsilon (S1(22) inverted).

    Raises:
        NonPositiveCTError: ``ct <= 0``.
        JTooSmallError: some ``J_k`` rounds to 0.
    """
    if not ct > 0:
        raise NonPositiveCTError(f"C_T = {ct:.6g} <= 0: S1(22) cannot be solved for J (S1(23))")
    d, n = np.asarray(degrees, dtype=float), np.asarray(counts, dtype=float)
    raw = (epsilon * rho * d * n / c1) ** 2 * ct / (GAUSS_CONSTANT * P * math.log(1.25 / delta))
    J = np.rint(raw).astype(np.int64)
    if np.any(J < 1):
        bad = int(np.argmin(J))
        raise JTooSmallError(f"epsilon = {epsilon} gives J = {raw[bad]:.3g} < 1 at agent row {bad} "
                             f"(degree {d[bad]:g}, N_k = {n[bad]:g}); raise epsilon or use the S0 mode")
    return J


def dzoa_alpha0_from_epsilon(epsilon: float, J: int, degrees, counts, *, T: int, P: int, R: float,
                             beta_c_norm_sq: float, delta: float, rho: float, c1: float = 1.0,
                             c: float = 0.5) -> np.ndarray:
    """Per-agent ``alpha_0`` of S0(27) for a fixed ``J`` (S0's calibration; spec §2.7 closed form)."""
    s1, s2 = harmonic_sums(T)
    d, n = np.asarray(degrees, dtype=float), np.asarray(counts, dtype=float)
    inner = GAUSS_CONSTANT * J * P * c1**2 * math.log(1.25 / delta) / (epsilon**2 * rho**2 * d**2 * n**2)
    return np.sqrt(math.log(2 * P) / (c * R**2 * (s1 * (1 + math.log(P)) + s2)) * (inner + 4.0 * beta_c_norm_sq / T))


@dataclass(frozen=True)
class Calibration:
    """Per-agent calibration of one D-ZOA run.

    Attributes:
        J: direction pairs per agent (K,), ints.
        alpha0: step scale per agent (K,).
        epsilon: realised per-iteration epsilon per agent (K,) from S1(22) (``None`` entries: not private).
        ct: ``C_T`` per agent (K,).
        R: the radius constant; beta_c_norm_sq: ``||beta^c||^2`` used.
        warnings: texts to record (e.g. ``J_k < 30``, the CLT threshold of S0).
    """

    J: np.ndarray
    alpha0: np.ndarray
    epsilon: np.ndarray | None
    ct: np.ndarray
    R: float
    beta_c_norm_sq: float
    warnings: tuple[str, ...] = ()

    @classmethod
    def build(cls, mode: str, *, epsilon, delta, J, alpha0, degrees, counts, T, P, rho, c1, c, R,
              beta_c_norm_sq) -> "Calibration":
        """Calibrate per ``mode``: ``"s1"`` (J from epsilon), ``"s0"`` (alpha0 from epsilon, fixed J), or
        ``"fixed"`` (given J and alpha0; the implied epsilon of S1(22) if ``epsilon`` is not None).

        Raises:
            NonPositiveCTError, JTooSmallError: see the functions above.
        """
        d = np.asarray(degrees, dtype=float)
        K = d.shape[0]
        warnings = []
        if mode == "s1":
            ct = c_t(T, P, alpha0, R, beta_c_norm_sq, c)
            _require_ct(ct, T)
            Js = dzoa_j_from_epsilon(epsilon, d, counts, ct=ct, P=P, delta=delta, rho=rho, c1=c1)
            a0 = np.full(K, float(alpha0))
        elif mode == "s0":
            Js = np.full(K, int(J), dtype=np.int64)
            a0 = dzoa_alpha0_from_epsilon(epsilon, int(J), d, counts, T=T, P=P, R=R, beta_c_norm_sq=beta_c_norm_sq,
                                          delta=delta, rho=rho, c1=c1, c=c)
        elif mode == "fixed":
            Js = np.full(K, int(J), dtype=np.int64)
            a0 = np.full(K, float(alpha0))
        else:
            raise ValidationError(f"calibration mode must be 's1', 's0' or 'fixed', got {mode!r}")
        cts = np.array([c_t(T, P, a, R, beta_c_norm_sq, c) for a in a0])
        eps = None
        if epsilon is not None:
            for ct_k in cts:
                _require_ct(ct_k, T)
            eps = np.array([dzoa_epsilon_from_j(Js[k], d[k], counts[k], ct=cts[k], P=P, delta=delta, rho=rho,
                                                c1=c1) for k in range(K)], dtype=float)
        small = [k for k in range(K) if Js[k] < 30]
        if small and epsilon is not None:
            warnings.append(f"dzoa: J_k < 30 (the CLT threshold stated in S0) at agent rows {small}: "
                            f"J = {[int(Js[k]) for k in small]}")
        return cls(Js, a0, eps, cts, float(R), float(beta_c_norm_sq), tuple(warnings))
