"""The papers' own total budgets, named ``budget="total_paper"`` (issue 23; spec §1.3, §4.10, AMB-X3, S3(16)).

:mod:`privdist.privacy.budget` knows two budgets: ``"round"`` (the papers' per-release parameters) and ``"total"``
(each agent's budget for the run, PLD-calibrated). Some experiments compare methods at the same total *as the
papers compute it*: a closed-form composition formula inverted for the per-release parameter. That third reading
is kept under its own name, ``"total_paper"``, so that a reader never confuses it with the PLD-calibrated total
(whose printed guarantee equals the request; the paper formulas' need not, spec §1.3):

* :func:`paper_round_epsilon`: the per-release epsilon whose ``releases``-fold composition by a paper formula is
  the total: basic composition (pure epsilon, S4 Thm 1: ``epsilon / n``), S1(25) (2.1-calibrated Gaussian) or the
  moments bound of spec §1.3-2 (``eps_tot = eps sqrt(n log(1/delta) / (c log(1.25/delta)))``, ``c = 1.05`` or 1).
  The per-release epsilon then goes through :mod:`privdist.privacy.budget` with ``budget="round"`` (PVP, DVP,
  R-ADMM: AMB-X3, spec §4.10).
* :func:`paper_sigma` / :func:`s3_gaussian_mechanism`: l-AADMM's S3(16), ``sigma = c0 sqrt(t l 2 log(1.25/delta))
  / epsilon`` per noisy step, with S3's composition constant ``c0`` (AMB-H1, user-settable). It is built here as
  a :class:`~privdist.privacy.mechanisms.GaussianMechanism` directly (not through the per-release epsilon of the
  moments bound, which equals it mathematically but not in floating point) so that the S3 figures keep their
  exact noise.
"""

from __future__ import annotations

import math

from .._checks import check_int, check_positive, check_probability
from ..errors import CalibrationError, UnknownNameError, ValidationError
from .mechanisms import GaussianMechanism, Identity, Mechanism
from .paper import c0 as paper_c0

__all__ = ["PAPER_TOTAL", "paper_round_epsilon", "paper_sigma", "s3_gaussian_mechanism"]

#: The budget name of a total computed by the papers' own composition formula.
PAPER_TOTAL = "total_paper"

#: The divisor ``c`` of each moments-style formula (S1(25): 1.05; spec §1.3-2: 1).
_DIVISOR = {"dzoa": 1.05, "moments": 1.0}


def _each(epsilon, fn):
    if isinstance(epsilon, (list, tuple)):
        if not epsilon:
            raise ValidationError("a per-agent epsilon needs one value per agent, got an empty list")
        return tuple(fn(check_positive(e, f"epsilon[{i}]")) for i, e in enumerate(epsilon))
    return fn(check_positive(epsilon, "epsilon"))


def paper_round_epsilon(epsilon, delta: float, releases: int, composition: str):
    """The per-release epsilon whose composition over ``releases`` by the paper formula ``composition`` is
    ``epsilon`` (AMB-X3, spec §4.10).

    Args:
        epsilon: the total (> 0), or one per agent (tuple).
        delta: the delta of the moments formulas, in (0, 1) (unused by ``"basic"``).
        releases: privacy-costing releases of each agent over the run (>= 1).
        composition: ``"basic"`` (``epsilon / n``), ``"dzoa"`` (S1(25)) or ``"moments"`` (spec §1.3-2).

    Returns:
        The per-release epsilon (a tuple for a per-agent total).

    Raises:
        ValidationError: a value outside its domain; UnknownNameError: another composition.
    """
    releases = check_int(releases, "releases", 1)
    if composition == "basic":
        return _each(epsilon, lambda e: float(e) / releases)
    if composition not in _DIVISOR:
        raise UnknownNameError("paper composition of a total budget", str(composition), ["basic", *_DIVISOR])
    delta = check_probability(delta, "delta")
    divisor = _DIVISOR[composition]
    root = math.sqrt(releases * math.log(1.0 / delta) / (divisor * math.log(1.25 / delta)))
    return _each(epsilon, lambda e: float(e) / root)


def paper_sigma(epsilon: float, delta: float, t: int, l: int, c0: float | None = None) -> float:  # noqa: E741
    """S3(16): ``sigma = c0 sqrt(t l 2 log(1.25/delta)) / epsilon``, the noise multiplier of each noisy step.

    Args:
        epsilon: Total target epsilon (> 0).
        delta: Target delta in (0, 1).
        t, l: ADMM iterations and inner steps (>= 1).
        c0: Composition constant (default ``sqrt(log(1/delta)/log(1.25/delta))``, AMB-H1).

    Returns:
        The noise multiplier sigma.

    Raises:
        ValidationError: a value outside its domain.
        CalibrationError: sigma would not be finite (e.g. epsilon so small that it overflows).
    """
    epsilon, delta = check_positive(epsilon, "epsilon"), check_probability(delta, "delta")
    t, l = check_int(t, "t"), check_int(l, "l")  # noqa: E741
    c = paper_c0(delta) if c0 is None else check_positive(c0, "c0")
    sigma = c * math.sqrt(t * l * 2.0 * math.log(1.25 / delta)) / epsilon
    if not math.isfinite(sigma):
        raise CalibrationError(f"epsilon={epsilon} gives a non-finite noise multiplier sigma={sigma}")
    return sigma


def s3_gaussian_mechanism(epsilon, delta: float, t: int, l: int, c0: float | None = None, *,  # noqa: E741
                          reason: str | None = None, clear: str = "values sent without noise") -> Mechanism:
    """l-AADMM's mechanism for the S3(16) total ``(epsilon, delta)`` over ``t`` iterations of ``l`` noisy steps:
    a Gaussian of noise multiplier :func:`paper_sigma` per step, composed by the moments bound (spec §1.3-2; the
    per-release epsilon is filled in from the multiplier); ``epsilon=None`` gives Identity (no noise)."""
    if epsilon is None:
        return Identity(clear)
    return GaussianMechanism(_each(epsilon, lambda e: paper_sigma(e, delta, t, l, c0)), None, delta, "moments",
                             reason)
