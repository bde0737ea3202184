"""DVP — dual variable perturbation (Zhang & Zhu 2017), reconstruction of spec §6.4 [RECON].

Same skeleton as PVP (spec §6.2) but the dual used in the primal step is perturbed, i.e. Chaudhuri et al.'s
*objective perturbation* of the primal subproblem (``gamma = 2 lambda``; the released value is ``f_p`` itself):

    gamma_p  <- gamma_p + rho (d_p f_p - sum_{j in N_p} f_j)            (unperturbed dual is kept)
    f_p      = argmin_f O_p(f) + Phi_p/2 ||f||^2 + (gamma_p + b_p / B_p)^T f + rho sum_j ||f - (f_p + f_j)/2||^2

(``2 lambda^r = 2 lambda + (C/B_p) b`` with ``C = 1``). Native calibration (Chaudhuri Alg. 2 with
``n -> B_p``, modulus ``mu_p``, ``c_H`` = bound on ``l''``): ``eps' = alpha - 2 log(1 + c_H/(B_p mu_p))``; if
``eps' > 0``, ``Phi_p = 0``; else ``Phi_p = c_H/(B_p (e^{alpha/4} - 1)) - mu_p`` and ``eps' = alpha/2``;
``b_p`` has density ``∝ exp(-eps'/(2 c1) ||b||)``. Gaussian variant [RES, heuristic — no formal guarantee]:
``b ~ N(0, sigma^2 I)``, ``sigma = 2 c1 z``, ``z = sqrt(C log(1.25/delta)) / alpha``, ``Phi_p = 0``; its releases
are the paper's claim only (guaranteed epsilon inf, issue 12). ``alpha`` comes from the budget as for PVP
(``"round"``, ``"total"`` PLD-calibrated, ``"total_paper"`` AMB-X3). One mechanism object draws ``b`` and declares
the release: :class:`~privdist.privacy.objective_perturbation.ObjectivePerturbationMechanism` (Alg. 2: declared
pure ``alpha`` per release, ``b`` drawn at the rate ``eps'_p`` its :meth:`constants` derive from ``alpha``), a
claim-only Gaussian mechanism (the heuristic) or Identity (``epsilon=None``).

Enforcement (issue 12): with ``clip=True`` (default) the loss is replaced by its gradient-clipped version (norm
``c1`` per sample; Huber for the squared loss), and the native Gamma-norm variant checks at init that every row
has norm ``<= 1`` (``DataBoundError``), which the Hessian bound of Chaudhuri et al.'s proof needs and clipping
cannot provide. ``clip=False`` is the paper-faithful variant (a claim).

References:
    Spec §6.2, §6.4, §4.10, AMB-B1, AMB-B6, AMB-X2, AMB-X3; Zhang & Zhu, IEEE TIFS 12(1) 2017;
    Chaudhuri, Monteleoni & Sarwate, JMLR 12 (2011), Alg. 2.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ._perturbation import PerturbedADMM

__all__ = ["DVP"]


@dataclass(frozen=True)
class DVP(PerturbedADMM):
    """Factory: ``DVP(rho=1.0, epsilon=0.15, noise="gamma")``; parameters of :class:`PerturbedADMM`.

    Scored estimate: the released ``f_p`` (spec §1.5).
    """

    name: ClassVar[str] = "dvp"

    def step(self, state, inbox, t, rng):
        gamma = self._dual(state, inbox["x"])
        f, _, _ = self._perturbed_solve(state, gamma, inbox["x"], rng)
        return replace(state, x=f, f=f, gamma=gamma), {"x": f}

