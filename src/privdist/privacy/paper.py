"""The source papers' own composition formulas, as pure functions (spec §1.3).

These are the ``paper`` accountant: each reproduces the closed-form total epsilon a source paper reports, beside
the tight RDP and PLD values (DESIGN idea 3). :func:`paper_bound` composes a per-agent run-length list of
releases with the formula the releases name; it returns ``epsilon=None`` and a ``reason`` when the formula
does not apply (a release states no epsilon or no formula, releases name different formulas, or the formula's
conditions fail).

The formulas are reproduced as published, not endorsed: the moments-style bounds (§1.3-1, §1.3-2) come from a
heuristic tail bound and can be *smaller* than the exact epsilon of the same Gaussian releases (e.g. 100 releases
with noise multiplier 5 at delta 1e-5: 9.60 by §1.3-2, 10.00 exact by PLD), i.e. they are not always valid upper
bounds. That is why the tight ``rdp`` and ``pld`` values are always reported beside them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .._checks import check_int, check_positive, check_probability
from .._lazy import lazy
from .release import Release

dp_event = lazy("dp_accounting.dp_event")  # imported on first use (start-up time)

__all__ = ["PaperBound", "c0", "dzoa_epsilon", "moments_epsilon", "advanced_composition", "paper_bound"]

#: The divisor of each moments-style formula: S1(25) has 1.05 (2.1-calibrated Gaussian), §1.3-2 has 1.
_MOMENTS_DIVISOR = {"dzoa": 1.05, "moments": 1.0}


def c0(delta: float) -> float:
    """The constant ``c0 = sqrt(log(1/delta) / log(1.25/delta))`` of S3(16) (spec §1.3-2, AMB-H1).

    Args:
        delta: The delta, in (0, 1).

    Returns:
        c0 (0.990448 for delta = 1e-5).

    Raises:
        ValidationError: ``delta`` outside (0, 1).
    """
    delta = check_probability(delta, "delta")
    return math.sqrt(math.log(1.0 / delta) / math.log(1.25 / delta))


def _moments(sum_sq_eps: float, delta: float, divisor: float) -> float:
    return math.sqrt(sum_sq_eps * math.log(1.0 / delta) / (divisor * math.log(1.25 / delta)))


def dzoa_epsilon(epsilon: float, delta: float, rounds: int) -> float:
    """D-ZOA's total epsilon after ``rounds`` releases, S1(25): ``eps*sqrt(M log(1/d) / (1.05 log(1.25/d)))``.

    Args:
        epsilon: Per-release epsilon (> 0) of the 2.1-calibrated Gaussian mechanism.
        delta: Per-release delta, in (0, 1); it is also the total delta.
        rounds: Number of releases M (>= 1).

    Returns:
        The total epsilon.

    References:
        Spec §1.3-1, §2.7; S1 Thm 2 / S1(25) (= S0(29)).
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    rounds = check_int(rounds, "rounds")
    return _moments(rounds * epsilon**2, delta, 1.05)


def moments_epsilon(epsilon: float, delta: float, rounds: int) -> float:
    """Moments-accountant total with constant 2: ``eps*sqrt(n log(1/d)/log(1.25/d)) = c0(d) sqrt(n) eps``.

    Args:
        epsilon: Per-release epsilon (> 0) of the classical (constant 2) Gaussian mechanism.
        delta: Per-release delta, in (0, 1); it is also the total delta.
        rounds: Number of releases n (>= 1).

    Returns:
        The total epsilon.

    References:
        Spec §1.3-2, §4.7; S3 proof sketch of Thm 2.
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    rounds = check_int(rounds, "rounds")
    return _moments(rounds * epsilon**2, delta, 1.0)


def advanced_composition(epsilon: float, rounds: int, delta_prime: float) -> float:
    """Advanced composition, S2 Cor. 1: ``sqrt(2T log(1/d')) eps + T eps (e^eps - 1)``.

    Args:
        epsilon: Per-release epsilon (> 0).
        rounds: Number of releases T (>= 1).
        delta_prime: The slack delta' in (0, 1) (S2 leaves it free; spec default delta' = delta, AMB-V6).

    Returns:
        The total epsilon; the total delta is ``T * delta + delta_prime`` for releases that are each
        ``(eps, delta)``-DP.

    References:
        Spec §1.3-3, §3.7, AMB-V6; S2 Cor. 1; Dwork & Roth Thm 3.20.
    """
    epsilon = check_positive(epsilon, "epsilon")
    rounds = check_int(rounds, "rounds")
    delta_prime = check_probability(delta_prime, "delta_prime")
    return math.sqrt(2 * rounds * math.log(1 / delta_prime)) * epsilon + rounds * epsilon * math.expm1(epsilon)


@dataclass(frozen=True)
class PaperBound:
    """Result of a paper formula for one agent.

    Attributes:
        epsilon: The total epsilon, ``None`` if the formula does not apply (``inf`` for a non-private release).
        delta: The total delta the formula certifies, ``None`` when ``epsilon`` is None or infinite.
        formula: The composition used (one of ``COMPOSITIONS``), ``None`` if none or nothing was released.
        reason: Why ``epsilon`` is None (or infinite), else None.
    """

    epsilon: float | None
    delta: float | None
    formula: str | None = None
    reason: str | None = None


def paper_bound(entries: Sequence[tuple[Release, int]], delta_prime: float | None = None) -> PaperBound:
    """Compose one agent's releases with the paper formula they name.

    Formulas (``n_i`` = count of release ``i`` with per-release ``(eps_i, delta_i)``):

    * ``"dzoa"``: ``sqrt(sum n_i eps_i^2 * log(1/d) / (1.05 log(1.25/d)))`` (S1(25) for equal eps; all releases must
      share ``d = delta_i`` in (0, 1); total delta ``d``), §1.3-1.
    * ``"moments"``: the same with 1.05 -> 1 (§1.3-2).
    * ``"advanced"``: ``sqrt(2 log(1/d') sum n_i eps_i^2) + sum n_i eps_i (e^eps_i - 1)``, total delta
      ``sum n_i delta_i + d'`` (S2 Cor. 1 for equal eps; the heterogeneous form is Kairouz et al. 2015 /
      Dwork-Rothblum-Vadhan). ``d'`` defaults to the releases' delta (AMB-V6; the largest one if they differ).
    * ``"basic"``: ``sum n_i eps_i``, total delta ``sum n_i delta_i`` (S4 Thm 1, §1.3-4).

    Releases whose event is ``NoOpDpEvent`` cost nothing and are skipped; a ``NonPrivateDpEvent`` gives
    ``epsilon = inf``. No release at all gives ``epsilon = 0``.

    Args:
        entries: ``(release, count)`` pairs, as returned by ``PrivacyLedger.entries``.
        delta_prime: The slack ``d'`` of advanced composition (in (0, 1)); default as above.

    Returns:
        A :class:`PaperBound`.

    Raises:
        ValidationError: ``delta_prime`` outside (0, 1).
    """
    if delta_prime is not None:
        delta_prime = check_probability(delta_prime, "delta_prime")
    live = [(r, c) for r, c in entries if not isinstance(r.event, dp_event.NoOpDpEvent)]
    if not live:
        return PaperBound(0.0, 0.0)
    if any(isinstance(r.event, dp_event.NonPrivateDpEvent) for r, _ in live):
        return PaperBound(math.inf, None, reason="a release is not private (NonPrivateDpEvent)")
    if any(r.epsilon is None for r, _ in live):
        return PaperBound(None, None, reason="a release declares no per-release epsilon")
    formulas = sorted({r.composition for r, _ in live}, key=str)
    if formulas == [None]:
        return PaperBound(None, None, reason="the releases name no paper composition formula")
    if len(formulas) > 1:
        names = ", ".join(str(f) for f in formulas)
        return PaperBound(None, None, reason=f"releases name different composition formulas ({names})")
    formula = formulas[0]
    sum_sq = math.fsum(c * r.epsilon**2 for r, c in live)
    deltas = {r.delta for r, _ in live}
    if formula in _MOMENTS_DIVISOR:
        if len(deltas) != 1 or None in deltas or not 0 < next(iter(deltas)) < 1:
            return PaperBound(
                None, None, formula, f"{formula!r} needs every release to state the same delta in (0, 1), got {deltas}"
            )
        d = next(iter(deltas))
        return PaperBound(_moments(sum_sq, d, _MOMENTS_DIVISOR[formula]), d, formula)
    sum_delta = math.fsum(c * (r.delta or 0.0) for r, c in live)
    if formula == "basic":
        return PaperBound(math.fsum(c * r.epsilon for r, c in live), sum_delta, formula)
    # advanced
    if delta_prime is None:
        delta_prime = max(r.delta or 0.0 for r, _ in live)
        if delta_prime <= 0:
            return PaperBound(None, None, formula, "advanced composition of pure-DP releases needs delta_prime > 0")
    eps = math.sqrt(2 * math.log(1 / delta_prime) * sum_sq) + math.fsum(
        c * r.epsilon * math.expm1(r.epsilon) for r, c in live
    )
    return PaperBound(eps, sum_delta + delta_prime, formula)
