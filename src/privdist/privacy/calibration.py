"""Conservative calibration: the smallest noise multiplier that meets a privacy budget (STYLE #8).

``calibrate(target_epsilon, delta, count, ...)`` returns the smallest noise multiplier ``z`` (sigma / l2
sensitivity for Gaussian, scale / l1 sensitivity for Laplace) such that ``count`` releases of the mechanism are
``(target_epsilon, delta)``-DP under the chosen accountant. The answer is never rounded down: RDP and PLD use
:func:`dp_accounting.mechanism_calibration.calibrate_dp_mechanism` (Brent's method with a fallback bisection that
returns the end of the bracket meeting the target), the paper formulas are inverted in closed form, and in every
case the result is re-accounted with :func:`~privdist.privacy.accountants.agent_epsilon` (the exact code path a
run is reported with) and nudged up until it meets the target.
"""

from __future__ import annotations

import math

from .._checks import check_int, check_positive, check_probability
from .._lazy import lazy
from ..errors import CalibrationError, UnknownNameError
from .accountants import ACCOUNTANTS, agent_epsilon, composed_event
from .paper import paper_bound
from .release import COMPOSITIONS, Release, gaussian_release, laplace_release, pure_release

__all__ = ["MECHANISMS", "calibrate", "mechanism_release", "default_composition"]

#: Mechanisms that can be calibrated: ``"laplace"`` is the 1-D Laplace mechanism (``LaplaceDpEvent``), ``"pure"`` any
#: pure-DP mechanism (noise multiplier ``1/epsilon``, declared as randomized response, :func:`pure_release`).
MECHANISMS: tuple[str, ...] = ("gaussian", "laplace", "pure")

# imported on first use (start-up time)
mc = lazy("dp_accounting.mechanism_calibration")
optimize = lazy("scipy.optimize")
_pld = lazy("dp_accounting.pld")
_rdp = lazy("dp_accounting.rdp")
_gaussian = lazy("dp_accounting.gaussian_mechanism")  # dp-accounting >= 0.4.4 (pinned in pyproject)


def default_composition(mechanism: str) -> str:
    """The paper formula used for ``composition="auto"``: ``"moments"`` for Gaussian, ``"basic"`` for pure DP."""
    _check_mechanism(mechanism)
    return "moments" if mechanism == "gaussian" else "basic"


def _check_mechanism(mechanism: str) -> str:
    if mechanism not in MECHANISMS:
        raise UnknownNameError("mechanism", str(mechanism), MECHANISMS)
    return mechanism


def mechanism_release(mechanism: str, noise_multiplier: float, delta: float, composition: str = "auto") -> Release:
    """The release of one use of ``mechanism`` as the CLI and :func:`calibrate` account it.

    Gaussian: ``gaussian_release(z, delta=delta, composition=...)``, whose per-release epsilon is
    ``gaussian_epsilon(z, delta, constant)`` with constant 2.1 for ``"dzoa"`` (S1(20)) and 2 otherwise. Laplace:
    ``laplace_release(z, composition=...)`` (pure ``1/z``-DP, the 1-D Laplace pair). Pure:
    ``pure_release(1/z, composition=...)`` (any pure ``1/z``-DP mechanism, e.g. Gamma-norm or d-dim Laplace).

    Raises:
        UnknownNameError: unknown mechanism or composition.
        ValidationError: a bad noise multiplier or delta.
    """
    _check_mechanism(mechanism)
    if composition == "auto":
        composition = default_composition(mechanism)
    if composition not in COMPOSITIONS:
        raise UnknownNameError("composition", str(composition), (*COMPOSITIONS, "auto"))
    if mechanism == "gaussian":
        return gaussian_release(noise_multiplier, delta=delta, composition=composition)
    if mechanism == "pure":
        return pure_release(1.0 / check_positive(noise_multiplier, "noise_multiplier"), composition=composition)
    return laplace_release(noise_multiplier, composition=composition)


def _epsilon(mechanism, z, delta, count, accountant, composition, delta_prime) -> float:
    entries = ((mechanism_release(mechanism, z, delta, composition), count),)
    if accountant == "paper":
        bound = paper_bound(entries, delta_prime)
        if bound.epsilon is None:
            raise CalibrationError(f"the paper formula {composition!r} does not apply: {bound.reason}")
    value = agent_epsilon(entries, delta, accountant, delta_prime=delta_prime)
    return math.inf if value is None else value


def _paper_guess(mechanism, target, delta, count, composition, delta_prime) -> float:
    """Closed-form inversion of the paper formula (spec §1.3) for the noise multiplier."""
    if composition in ("dzoa", "moments"):
        if mechanism != "gaussian":
            raise CalibrationError(f"the paper formula {composition!r} applies to Gaussian releases only")
        divisor = 1.05 if composition == "dzoa" else 1.0
        eps1 = target / math.sqrt(count * math.log(1 / delta) / (divisor * math.log(1.25 / delta)))
    elif composition == "basic":
        eps1 = target / count
    else:  # advanced: eps' = sqrt(2T log(1/d')) e + T e (e^e - 1) is increasing in e; solve it numerically
        a = math.sqrt(2 * count * math.log(1 / delta_prime))

        def gap(e: float) -> float:
            return a * e + count * e * math.expm1(e) - target

        hi = target / a if a > 0 else 1.0
        while gap(hi) < 0:
            hi *= 2
        eps1 = optimize.brentq(gap, 0.0, hi, xtol=1e-15, rtol=1e-14)
    if mechanism != "gaussian":
        return 1.0 / eps1
    constant = 2.1 if composition == "dzoa" else 2.0
    return math.sqrt(constant * math.log(1.25 / delta)) / eps1


def _tight_guess(mechanism, target, delta, count) -> float:
    if mechanism != "gaussian":
        return count / target  # basic composition; RDP and PLD are never worse
    return math.sqrt(2 * count * math.log(1 / delta)) / target


def _bracket(eps_of, target, guess) -> tuple[float, float]:
    lo = hi = guess
    for _ in range(200):
        if eps_of(lo) > target:
            break
        lo /= 2
    else:
        raise CalibrationError(f"no noise multiplier is small enough to reach epsilon {target}")
    for _ in range(200):
        if eps_of(hi) <= target:
            break
        hi *= 2
    else:
        raise CalibrationError(f"no finite noise multiplier reaches epsilon {target}")
    return lo, hi


def calibrate(
    target_epsilon: float,
    delta: float,
    count: int,
    mechanism: str = "gaussian",
    accountant: str = "rdp",
    composition: str = "moments",
    *,
    delta_prime: float | None = None,
) -> float:
    """Smallest noise multiplier whose ``count``-fold composition is ``(target_epsilon, delta)``-DP.

    Args:
        target_epsilon: The total epsilon budget (> 0).
        delta: Target delta of ``rdp``/``pld``; for ``paper`` the per-release delta of the Gaussian mechanism
            (which is also the total delta of ``"dzoa"``/``"moments"``), in (0, 1).
        count: Number of releases (>= 1).
        mechanism: ``"gaussian"`` (returns sigma / l2 sensitivity), ``"laplace"`` (scale / l1 sensitivity of the
            1-D Laplace mechanism) or ``"pure"`` (``1/epsilon`` of one pure-DP release, :func:`pure_release`).
        accountant: ``"paper"``, ``"rdp"`` or ``"pld"``.
        composition: Paper formula for ``accountant="paper"`` (one of ``COMPOSITIONS`` or ``"auto"``); ignored
            by ``rdp`` and ``pld``.
        delta_prime: Slack of advanced composition (default ``delta``, AMB-V6).

    Returns:
        The noise multiplier ``z``; ``agent_epsilon([(release(z), count)], delta, accountant) <= target_epsilon``.

    Raises:
        ValidationError: ``target_epsilon <= 0``, ``delta`` outside (0, 1), ``count < 1``.
        UnknownNameError: unknown mechanism, accountant or composition.
        CalibrationError: the target is infeasible, or the paper formula does not apply to the mechanism.

    References:
        Spec §1.3, §4.6-§4.7; STYLE #8; dp-accounting ``calibrate_dp_mechanism``.
    """
    target = check_positive(target_epsilon, "target_epsilon")
    delta = check_probability(delta, "delta")
    count = check_int(count, "count")
    _check_mechanism(mechanism)
    if accountant not in ACCOUNTANTS:
        raise UnknownNameError("accountant", str(accountant), ACCOUNTANTS)
    delta_prime = delta if delta_prime is None else check_probability(delta_prime, "delta_prime")
    if composition == "auto":
        composition = default_composition(mechanism)
    if composition not in COMPOSITIONS:
        raise UnknownNameError("composition", str(composition), (*COMPOSITIONS, "auto"))

    def eps_of(z: float) -> float:
        return _epsilon(mechanism, z, delta, count, accountant, composition, delta_prime)

    if accountant == "paper":
        z = _paper_guess(mechanism, target, delta, count, composition, delta_prime)
    elif accountant == "pld" and mechanism == "gaussian":
        # The pld value of a pure Gaussian composition is dp-accounting's exact Gaussian conversion.
        try:
            z = float(_gaussian.get_sigma_gaussian(target, delta)) * math.sqrt(count)
        except (ValueError, OverflowError) as exc:  # e.g. exp(target) overflows: no noise scale to solve for
            raise CalibrationError(f"target_epsilon={target!r} is too large to calibrate a Gaussian at delta="
                                   f"{delta!r} ({exc})") from exc
    elif mechanism == "pure":  # dp-accounting's accountants mis-compose randomized response (accountants.py):
        lo, hi = _bracket(eps_of, target, _tight_guess(mechanism, target, delta, count))  # solve on our path
        z = optimize.brentq(lambda x: eps_of(x) - target, lo, hi, xtol=hi * 1e-9, rtol=1e-12)
    else:
        lo, hi = _bracket(eps_of, target, _tight_guess(mechanism, target, delta, count))

        def make_event(x: float):
            return composed_event(((mechanism_release(mechanism, max(x, lo), delta, composition), count),))

        make_accountant = _rdp.RdpAccountant if accountant == "rdp" else _pld.PLDAccountant
        try:
            z = mc.calibrate_dp_mechanism(
                make_accountant,
                make_event,
                target,
                delta,
                bracket_interval=mc.ExplicitBracketInterval(lo, hi),
                tol=hi * 1e-9,
            )
        except (ValueError, mc.NoBracketIntervalFoundError) as exc:
            raise CalibrationError(f"calibration failed for epsilon {target}, delta {delta}: {exc}") from exc
    if not math.isfinite(z) or z <= 0:
        raise CalibrationError(f"no finite noise multiplier meets epsilon {target}, delta {delta}, got {z}")
    step = 1e-12
    for _ in range(80):  # verify on the reporting code path; never round down
        if eps_of(z) <= target:
            return float(z)
        z, step = z * (1 + step), step * 2
    raise CalibrationError(f"calibrated noise multiplier {z} does not meet epsilon {target}")  # pragma: no cover
