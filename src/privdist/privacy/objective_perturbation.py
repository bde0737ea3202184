"""Objective perturbation as one mechanism object (Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Alg. 2; spec §6.4).

DVP and R-ADMM's odd iterations (spec §6.4, §6.5) release the minimiser of a perturbed local objective

    f_p = argmin_f  O_p(f) + Phi_p/2 ||f||^2 + (b_p / B_p)^T f + (data-free ADMM terms, strongly convex mu_p)

with ``B_p`` the agent's effective sample count and ``O_p`` a sum-over-samples loss whose per-sample gradients
have norm ``<= c1`` (so the sum's l2 sensitivity under replacing one sample is ``Delta = 2 c1``) and whose
curvature ``l'' x x^T`` is bounded by ``c_H`` (rows of norm <= 1). Chaudhuri et al.'s Alg. 2 (``n -> B_p``,
modulus ``mu_p``, loss weight ``C = 1``) splits the release's pure budget ``epsilon``:

    eps'_p = epsilon - 2 log(1 + c_H / (B_p mu_p));   Phi_p = 0                           if eps'_p > 0,
    eps'_p = epsilon / 2;   Phi_p = c_H / (B_p (e^{epsilon/4} - 1)) - mu_p  (clipped at 0)   otherwise,

and draws ``b_p`` with density proportional to ``exp(-eps'_p ||b|| / Delta)`` (``||b|| ~ Gamma(dim, Delta /
eps'_p)``, uniform direction). The log-determinant term pays ``epsilon - eps'_p``, so the release is pure
``epsilon``-DP although ``b`` is drawn at the smaller rate ``eps'_p`` (which depends on the agent's ``B_p`` and
``mu_p``: public counts, degree and regulariser).

:class:`ObjectivePerturbationMechanism` holds ``epsilon`` and nothing else: :meth:`~ObjectivePerturbationMechanism.
constants` turns it into ``(eps'_p, Phi_p)`` for a block of agents, :meth:`~ObjectivePerturbationMechanism.privatize`
draws ``b`` at a rate it checks is at most its own ``epsilon``, and :meth:`~ObjectivePerturbationMechanism.releases`
declares pure ``epsilon`` per release (dp-accounting has no objective-perturbation event: generic pure DP, binary
randomized response, as :class:`~privdist.privacy.mechanisms.GammaNormMechanism`, Kairouz et al. 2015). So the budget
declared and the rate drawn come from one object. :func:`objective_perturbation_mechanism` builds it from a budget
through :func:`~privdist.privacy.budget.gamma_norm_mechanism` (the per-release epsilon of a total budget is that of
the Gamma-norm mechanism: same declared event).

The Gaussian variant of objective perturbation (spec §6.4 [RES]) has no formal guarantee: the algorithms use a
:class:`~privdist.privacy.mechanisms.GaussianMechanism` with a claim-only ``reason`` for it, not this class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ShapeMismatchError, ValidationError
from .budget import gamma_norm_mechanism
from .mechanisms import GammaNormMechanism, Mechanism, _agents, _per_agent

__all__ = ["ObjectivePerturbationMechanism", "objective_perturbation_constants", "objective_perturbation_mechanism"]


def objective_perturbation_constants(alpha, counts, mu, c_hess: float) -> tuple[np.ndarray, np.ndarray]:
    """Chaudhuri et al. (2011) Alg. 2 constants with ``n -> B_p``, modulus ``mu_p`` and ``C = 1`` (spec §6.4).

    Args:
        alpha: the pure epsilon of the release (scalar, or one per agent of the block).
        counts: (K,) effective sample counts ``B_p``.
        mu: (K,) strong-convexity moduli ``mu_p`` of the data-free part.
        c_hess: the bound ``c_H`` on ``l''`` (rows of norm <= 1).

    Returns:
        ``(eps_prime, phi)``, each (K,): the rate budget of ``b`` and the extra ridge ``Phi_p``.
    """
    counts = np.asarray(counts, dtype=float)
    eps_prime = alpha - 2.0 * np.log1p(c_hess / (counts * mu))
    phi = np.zeros_like(mu)
    bad = eps_prime <= 0
    if np.any(bad):
        alphas = np.broadcast_to(np.asarray(alpha, dtype=float), np.shape(mu))  # math.expm1: as before issue 23
        growth = np.array([math.expm1(float(a) / 4.0) for a in alphas.reshape(-1)]).reshape(alphas.shape)
        phi = np.where(bad, np.maximum(c_hess / (counts * growth) - mu, 0.0), 0.0)
        eps_prime = np.where(bad, alpha / 2.0, eps_prime)
    return eps_prime, phi


@dataclass(frozen=True)
class ObjectivePerturbationMechanism(GammaNormMechanism):
    """Objective perturbation (Chaudhuri et al. 2011, Alg. 2): pure ``epsilon``-DP per release, declared as the
    Gamma-norm mechanism of the same epsilon; the linear noise ``b`` is drawn at the smaller rate ``eps'`` that
    :meth:`constants` derives from ``epsilon`` (the log-determinant term pays the rest).

    Args:
        epsilon: the pure epsilon per release (> 0), or one per agent (tuple indexed by agent id).
        composition: paper formula (default ``"basic"``, spec §1.3-4).
        reason: claim-only reason (see :class:`~privdist.privacy.mechanisms.GaussianMechanism`).
    """

    kind: ClassVar[str] = "objective_perturbation"

    def constants(self, agents, counts, mu, c_hess: float) -> tuple[np.ndarray, np.ndarray]:
        """``(eps'_p, Phi_p)`` of the block's agents (global ids ``agents``), each (K,) (module docstring)."""
        agents = np.asarray(agents, dtype=np.int64)
        alpha = self.epsilon if not isinstance(self.epsilon, tuple) else _per_agent(self.epsilon, agents)
        return objective_perturbation_constants(alpha, counts, mu, c_hess)

    def privatize(self, values, sensitivity, rng, *, eps_prime=None):
        """``values + b``, ``b`` with density ``∝ exp(-eps'_p ||b|| / sensitivity_p)`` per agent row.

        Args:
            values: (B, dim) one vector per agent of the block (DVP adds ``b`` to zeros, then scales by ``1/B_p``).
            sensitivity: ``Delta = 2 c1`` (scalar or (B,)), the replace-one l2 sensitivity of the summed gradients.
            rng: the step's streams (see :mod:`privdist.privacy.mechanisms`).
            eps_prime: (B,) the rate budgets from :meth:`constants` (required; each in (0, epsilon of the agent]).

        Raises:
            ValidationError: a missing rate, a rate outside (0, epsilon], a sensitivity <= 0.
        """
        if eps_prime is None:
            raise ValidationError("objective perturbation needs each agent's rate budget eps' (from constants())")

        def rate_of(n: int) -> np.ndarray:
            rate = np.asarray(eps_prime, dtype=float).reshape(-1)
            if rate.shape != (n,):
                raise ShapeMismatchError(f"eps_prime must have one value per agent ({n}), got shape "
                                         f"{np.shape(eps_prime)}")
            limit = _per_agent(self.epsilon, _agents(rng, n))
            if not np.all((rate > 0) & (rate <= limit)):
                raise ValidationError(f"the rate budget eps' must lie in (0, epsilon] (epsilon {limit.tolist()}), "
                                      f"got {rate.tolist()}")
            return rate

        return self._add_gamma_norm(np.asarray(values, dtype=float), rate_of, sensitivity, rng)


def objective_perturbation_mechanism(epsilon, *, budget: str = "round", releases: int | None = None,
                                     delta: float | None = None, reason: str | None = None,
                                     clear: str = "values sent without noise") -> Mechanism:
    """The objective-perturbation mechanism of a budget: pure ``epsilon`` per release (``"round"``), or the
    per-release epsilon whose ``releases``-fold composition PLD certifies at ``(epsilon, delta)`` (``"total"``; the
    calibration of :func:`~privdist.privacy.budget.gamma_norm_mechanism`, whose declared event is the same);
    ``epsilon=None`` gives :class:`~privdist.privacy.mechanisms.Identity`."""
    base = gamma_norm_mechanism(epsilon, budget=budget, releases=releases, delta=delta, reason=reason, clear=clear)
    if not base.private:
        return base
    return ObjectivePerturbationMechanism(base.epsilon, base.composition, base.reason)
