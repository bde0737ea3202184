"""Budgets turned into mechanisms, in one place (issue 23, "budgets at the edge"; DESIGN "Mechanisms are objects").

A privacy budget is stated in one of two named ways:

* ``budget="round"``: the papers' parameterisation: ``(epsilon, delta)`` of *one* release. The Gaussian noise
  multiplier is the classical ``z = sqrt(C log(1.25/delta)) / epsilon`` (C = 2.1 in S1's comparison mode, S1(20),
  AMB-X2; 2 otherwise), Laplace and Gamma-norm noise are pure ``epsilon``-DP per release (declared as generic pure
  DP, :func:`~privdist.privacy.release.pure_release`). The total over a run is
  whatever the accountants make of the ledger (printed beside it).
* ``budget="total"``: ``(epsilon, delta)`` of each agent for the *whole run* of ``releases`` releases. The noise
  multiplier is the smallest one whose ``releases``-fold composition the PLD accountant certifies (dp-accounting,
  :func:`~privdist.privacy.calibration.calibrate`, never rounded down), so the guarantee printed for the run equals
  the request to the accountant's tolerance (RDP is shown as a cross-check).

``epsilon`` may be one value per agent (a tuple indexed by agent id): a party with a stricter budget gets more noise.
A secure sum (issue 27) takes :func:`skellam_mechanism`: one total budget calibrated with the RDP bound of the
distributed Skellam mechanism (:mod:`privdist.privacy.distributed`; no PLD is published for it).
``epsilon=None`` means no noise: the :class:`~privdist.privacy.mechanisms.Identity` mechanism, whose releases are in
the clear (epsilon = inf). These functions are the only place where a budget becomes a noise level.
"""

from __future__ import annotations

import functools

import numpy as np

from .._checks import check_int, check_positive, check_probability
from ..errors import UnknownNameError, ValidationError
from .mechanisms import GammaNormMechanism, GaussianMechanism, Identity, LaplaceMechanism, Mechanism

__all__ = ["BUDGETS", "check_budget", "gaussian_mechanism", "laplace_mechanism", "gamma_norm_mechanism",
           "skellam_mechanism"]

#: How an ``epsilon`` is meant: per release (the papers') or per agent over the whole run (PLD-calibrated).
BUDGETS: tuple[str, ...] = ("round", "total")


def check_budget(budget: str) -> str:
    """Validate a budget kind (raises UnknownNameError for a name not in :data:`BUDGETS`)."""
    if budget not in BUDGETS:
        raise UnknownNameError("budget", str(budget), BUDGETS)
    return budget


def _check_releases(budget: str, releases: int | None) -> None:
    check_budget(budget)
    if budget == "total":
        if releases is None:
            raise ValidationError("a total budget needs the number of rounds it covers (rounds=...; privdist run "
                                  "and the estimators fill it in from the run)")
        check_int(releases, "releases", 1)


def _values(epsilon) -> tuple[float, ...] | float:
    if isinstance(epsilon, (list, tuple)):
        if not epsilon:
            raise ValidationError("a per-agent epsilon needs one value per agent, got an empty list")
        return tuple(float(check_positive(e, f"epsilon[{i}]")) for i, e in enumerate(epsilon))
    return float(check_positive(epsilon, "epsilon"))


def _map(fn, eps):
    return tuple(fn(e) for e in eps) if isinstance(eps, tuple) else fn(eps)


@functools.lru_cache(maxsize=1024)
def _pld_multiplier(kind: str, epsilon: float, delta: float, releases: int) -> float:
    from .calibration import calibrate

    return calibrate(epsilon, delta, releases, kind, "pld")


def gaussian_mechanism(epsilon, delta: float, *, budget: str = "round", releases: int | None = None,
                       constant: float = 2.0, reason: str | None = None,
                       clear: str = "values sent without noise") -> Mechanism:
    """The Gaussian mechanism of a budget (see the module docstring).

    Args:
        epsilon: per release (``budget="round"``) or per agent over the run (``"total"``); a tuple gives one value
            per agent; ``None`` gives :class:`Identity` (no noise).
        delta: per release (``"round"``) or total (``"total"``), in (0, 1).
        budget: ``"round"`` or ``"total"``.
        releases: the releases of each agent over the run (needed by ``"total"``).
        constant: ``C`` of the classical bound for ``"round"``: 2.1 (S1(20), composed by S1(25)) or 2.
        reason: makes the releases the paper's claim only (an assumption privdist does not enforce).
        clear: what :class:`Identity` says is sent in the clear (when ``epsilon`` is None).

    Raises:
        ValidationError, UnknownNameError: a value outside its domain; CalibrationError: an infeasible total.
    """
    if epsilon is None:
        return Identity(clear)
    delta = check_probability(delta, "delta")
    _check_releases(budget, releases)
    eps = _values(epsilon)
    if budget == "total":  # S1/moments per-release epsilon is filled in from z (constant 2) for the paper column
        z = _map(lambda e: _pld_multiplier("gaussian", e, delta, int(releases)), eps)
        return GaussianMechanism(z, None, delta, "moments", reason)
    if constant not in (2.0, 2.1):
        raise ValidationError(f"gaussian_constant must be 2 or 2.1, got {constant}")
    root = np.sqrt(constant * np.log(1.25 / delta))  # the expression the algorithms used (bit-identical noise)
    return GaussianMechanism(_map(lambda e: float(root / e), eps), eps, delta, "dzoa" if constant == 2.1 else "moments",
                             reason)


def _pure_epsilon(epsilon, budget: str, releases: int | None, delta: float | None, what: str):
    """The pure epsilon of one release: ``epsilon`` itself (``"round"``), or for ``"total"`` the per-release epsilon
    whose ``releases``-fold composition as generic pure DP (randomized response, the declared event) PLD certifies
    at ``(epsilon, delta)``."""
    _check_releases(budget, releases)
    eps = _values(epsilon)
    if budget != "total":
        return eps
    if delta is None:
        raise ValidationError(f"a total budget of a {what} mechanism needs delta (the PLD accountant's target)")
    delta = check_probability(delta, "delta")
    return _map(lambda e: 1.0 / _pld_multiplier("pure", e, delta, int(releases)), eps)


def laplace_mechanism(epsilon, *, budget: str = "round", releases: int | None = None, delta: float | None = None,
                      reason: str | None = None, clear: str = "values sent without noise") -> Mechanism:
    """The Laplace mechanism of a budget: pure ``epsilon``-DP per release (``"round"``), or the smallest per-release
    noise whose ``releases``-fold composition PLD certifies at ``(epsilon, delta)`` (``"total"``, needs ``delta``)."""
    if epsilon is None:
        return Identity(clear)
    eps = _pure_epsilon(epsilon, budget, releases, delta, "Laplace")
    return LaplaceMechanism(_map(lambda e: 1.0 / e, eps), "basic", reason)


def gamma_norm_mechanism(epsilon, *, budget: str = "round", releases: int | None = None, delta: float | None = None,
                         reason: str | None = None, clear: str = "values sent without noise") -> Mechanism:
    """The Gamma-norm mechanism of a budget: pure ``epsilon`` per release, or (``"total"``) the per-release epsilon
    whose ``releases``-fold composition as generic pure DP (the declared event) PLD certifies at ``(epsilon, delta)``."""
    if epsilon is None:
        return Identity(clear)
    return GammaNormMechanism(_pure_epsilon(epsilon, budget, releases, delta, "Gamma-norm"), "basic", reason)


def skellam_mechanism(epsilon, delta: float, *, releases, resolution: float | None = None, prior=(),
                      clear: str = "values sent without noise") -> Mechanism:
    """The distributed Skellam mechanism of a total budget (issue 27): the smallest noise multiplier whose releases
    over the run, ``releases`` = ``(count, uses)`` pairs, composed with the releases ``prior`` made before the run
    (:func:`~privdist.privacy.distributed.check_prior`), the RDP accountant certifies at ``(epsilon, delta)`` when the calibrated number of
    honest parties take part (:func:`~privdist.privacy.distributed.calibrate_skellam`).

    Raises:
        ValidationError: a per-party epsilon (one noise protects the whole sum), a bad ``epsilon``/``delta``;
        CalibrationError: an infeasible target.
    """
    from .distributed import RESOLUTION, SkellamMechanism, calibrate_skellam, check_prior

    if epsilon is None:
        return Identity(clear)
    if isinstance(epsilon, (list, tuple)):
        raise ValidationError("secure aggregation adds one noise to the whole sum: per-party budgets (a list of "
                              "epsilons) are not supported; give one epsilon")
    resolution = RESOLUTION if resolution is None else resolution
    pairs = tuple((check_int(c, "release count", 1), check_int(u, "release uses", 1)) for c, u in releases)
    before = check_prior(prior)
    z = calibrate_skellam(float(check_positive(epsilon, "epsilon")), check_probability(delta, "delta"), pairs,
                          float(resolution), before)
    return SkellamMechanism(z, resolution)
