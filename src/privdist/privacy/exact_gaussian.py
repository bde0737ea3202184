"""The exact Gaussian calibration of one release as a mechanism (issue 23; Balle & Wang 2018).

:func:`~privdist.privacy.budget.gaussian_mechanism` turns a per-release ``(epsilon, delta)`` into the classical noise
multiplier ``sqrt(C log(1.25/delta)) / epsilon`` (proved for ``epsilon < 1``). The *exact* per-release calibration
is the smallest noise multiplier ``z`` whose single Gaussian release is ``(epsilon, delta)``-DP: dp-accounting's
exact Gaussian conversion (the analytic Gaussian mechanism of Balle & Wang 2018), reached through
:func:`~privdist.privacy.calibration.calibrate` with one release and the PLD accountant (re-accounted on the
reporting code path and never rounded down). It holds for every ``epsilon > 0``.

``budget="total"`` is the same as for :func:`~privdist.privacy.budget.gaussian_mechanism`: each agent's budget for
the whole run of ``releases`` releases, PLD-calibrated (already exact), so this module defers to it.
"""

from __future__ import annotations

import functools

from .._checks import check_positive, check_probability
from ..errors import ValidationError
from .budget import check_budget, gaussian_mechanism
from .mechanisms import GaussianMechanism, Identity, Mechanism

__all__ = ["exact_noise_multiplier", "exact_gaussian_mechanism"]


@functools.lru_cache(maxsize=256)
def exact_noise_multiplier(epsilon: float, delta: float) -> float:
    """Smallest noise multiplier of ONE Gaussian release that is ``(epsilon, delta)``-DP (exact PLD, verified).

    Raises:
        ValidationError: ``epsilon <= 0`` or ``delta`` outside (0, 1); CalibrationError: infeasible.
    """
    from .calibration import calibrate

    return calibrate(epsilon, delta, 1, "gaussian", "pld")


def exact_gaussian_mechanism(epsilon, delta: float, *, budget: str = "round", releases: int | None = None,
                             reason: str | None = None, clear: str = "values sent without noise") -> Mechanism:
    """The Gaussian mechanism of a budget with the exact per-release calibration (see the module docstring).

    Args:
        epsilon: per release (``budget="round"``) or per agent over the run (``"total"``); a tuple gives one value
            per agent (indexed by agent id); ``None`` gives :class:`~privdist.privacy.mechanisms.Identity`.
        delta: per release (``"round"``) or total (``"total"``), in (0, 1).
        budget: ``"round"`` (exact noise multiplier of one release; the release states ``(epsilon, delta)`` and no
            paper composition formula) or ``"total"`` (:func:`~privdist.privacy.budget.gaussian_mechanism`).
        releases: releases of each agent over the run (``"total"`` only).
        reason: makes the releases the paper's claim only.
        clear: what :class:`Identity` says is sent in the clear (``epsilon`` None).

    Raises:
        ValidationError, UnknownNameError: a value outside its domain; CalibrationError: an infeasible budget.
    """
    check_budget(budget)
    if epsilon is None:
        return Identity(clear)
    if budget == "total":
        return gaussian_mechanism(epsilon, delta, budget="total", releases=releases, reason=reason, clear=clear)
    delta = check_probability(delta, "delta")
    if isinstance(epsilon, (list, tuple)):
        if not epsilon:
            raise ValidationError("a per-agent epsilon needs one value per agent, got an empty list")
        eps = tuple(float(check_positive(e, f"epsilon[{i}]")) for i, e in enumerate(epsilon))
        z = tuple(exact_noise_multiplier(e, delta) for e in eps)
    else:
        eps = float(check_positive(epsilon, "epsilon"))
        z = exact_noise_multiplier(eps, delta)
    return GaussianMechanism(z, eps, delta, None, reason)
