"""PVP — primal variable perturbation (Zhang & Zhu 2017), reconstruction of spec §6.3 [RECON].

Exact consensus-ADMM primal step of spec §6.2 followed by Chaudhuri et al.'s *output perturbation*: agent ``p``
computes (``gamma = 2 lambda``, ``V`` = released values, ``d_p`` its degree)

    gamma_p  <- gamma_p + rho (d_p V_p - sum_{j in N_p} V_j)
    f_p      = argmin_f O_p(f) + gamma_p^T f + rho sum_{j in N_p} ||f - (V_p + V_j)/2||^2
    V_p      = f_p + e_p,   broadcast V_p

The data-independent part of the primal objective is ``mu_p``-strongly convex, ``mu_p = (reg_weight/K) mu_R +
2 rho d_p``, so replacing one of the ``B_p`` samples (per-sample gradient norm ``<= c1``) moves ``f_p`` by at
most ``Delta_p = 2 c1 / (B_p mu_p)``. Native noise (``noise="gamma"``): density ``∝ exp(-zeta ||e||)`` with
``zeta = alpha / Delta_p`` — pure ``alpha``-DP per iteration. Gaussian variant (``noise="gaussian"``):
``e ~ N(0, sigma^2 I)``, ``sigma = Delta_p z`` with ``z = sqrt(C log(1.25/delta)) / alpha`` (C = 2.1 in S1's
comparison mode, AMB-X2). ``alpha`` is ``epsilon`` (``budget="round"``), derived from the paper formula's total
(``budget="total_paper"``, AMB-X3, spec §4.10), or the noise is PLD-calibrated to a total (``budget="total"``).
The noise is drawn and the release declared by one mechanism object (``self.mechanism``: Gamma-norm, Gaussian or
Identity when ``epsilon=None``, :mod:`privdist.algorithms._perturbation`), called once per iteration with the
sensitivity ``Delta_p``.

Clipping (issue 12): the bound ``Delta_p`` needs ``||grad_f l|| <= c1`` for every sample at every ``f``, which the
squared loss breaks (one replaced row moved the release up to 5.25x ``Delta_p``). With ``clip=True`` (default)
the local objective uses the clipped loss (``l'`` clipped to ``+-c1/||x||``: the Huber loss for the squared
loss), so ``Delta_p`` holds for any data and the exact minimiser is that of the clipped objective; ``clip=False``
is the paper-faithful variant, whose releases are the paper's claim only.

References:
    Spec §6.2, §6.3, §4.10, AMB-B1, AMB-B6, AMB-X2, AMB-X3; Zhang & Zhu, IEEE TIFS 12(1) 2017;
    Chaudhuri, Monteleoni & Sarwate, JMLR 12 (2011), Alg. 1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ._perturbation import PerturbedADMM, PerturbedADMMState

__all__ = ["PVP"]


@dataclass(frozen=True)
class PVP(PerturbedADMM):
    """Factory: ``PVP(rho=1.0, epsilon=0.15, noise="gamma")``; parameters of :class:`PerturbedADMM`.

    Scored estimate: the released ``V_p`` (spec §1.5).
    """

    name: ClassVar[str] = "pvp"
    _objective_perturbation: ClassVar[bool] = False

    def sensitivity(self, state: PerturbedADMMState) -> np.ndarray:
        """``Delta_p = 2 c1 / (B_p mu_p)``, shape (K,)."""
        return 2.0 * self.c1 / (state.counts * state.mu)

    def step(self, state, inbox, t, rng):
        nbr = inbox["x"]
        gamma = self._dual(state, nbr)
        v = self.rho * (state.degrees[:, None] * state.x + nbr) - gamma
        f = state.oracle.prox_solve(self.rho * state.degrees, v, init=state.f, tol=self.tol)
        x = self.mechanism.privatize(f, self.sensitivity(state), rng)  # V_p = f_p + e_p, Delta_p = 2 c1/(B_p mu_p)
        return replace(state, x=x, f=f, gamma=gamma), {"x": x}
