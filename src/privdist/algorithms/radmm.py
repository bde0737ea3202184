"""R-ADMM — Recycled ADMM (Zhang, Khalili & Liu 2018), reconstruction of spec §6.5 [RECON].

Odd iterations ``t = 2k - 1``: DVP's objective-perturbed exact step (spec §6.4, budget ``alpha``), and the
gradient of the perturbed local objective is recycled from the step's optimality condition, which involves
public quantities only (``gamma = 2 lambda``; ``f^-`` and ``f_j^-`` the values released in round ``t - 1``):

    g_hat_p = grad O_p(f_p) + Phi_p f_p + b_p / B_p = -gamma_p - 2 rho d_p f_p + rho (d_p f_p^- + sum_j f_j^-).

Even iterations ``t = 2k``: a linearised step around ``f_p^{t-1}`` with prox weight ``tau`` (default
``mu_p``, AMB-B2), using no data and no privacy budget:

    f_p^t = (tau f_p^{t-1} - g_hat_p - gamma_p + rho (d_p f_p^{t-1} + sum_j f_j^{t-1})) / (tau + 2 rho d_p).

Every iteration the agent broadcasts ``f_p^t``; the dual ``gamma_p += rho (d_p f_p - sum_j f_j)`` is formed at
the start of the next round. Only odd rounds draw noise and declare releases (the mechanism's, as DVP's):
``n_rel = ceil(iterations / 2)`` (spec §4.10, :meth:`RADMM.release_count`), the count a total budget spreads over.
The even step is post-processing: ``tau = mu_p`` (public: regulariser weight and degree), ``g_hat``, ``gamma`` and
the anchor are functions of released values only, and the step reads no data (tested on neighbouring datasets).
Clipping, the row-norm check and the Gaussian variant's claim are those of DVP (see :mod:`.dvp`).

References:
    Spec §6.4, §6.5, §4.10, AMB-B2, AMB-X3; Zhang, Khalili & Liu, Allerton 2018 (arXiv 1810.03197).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from .._checks import check_positive
from ._perturbation import PerturbedADMM

__all__ = ["RADMM"]


@dataclass(frozen=True)
class RADMM(PerturbedADMM):
    """Factory: ``RADMM(rho=1.0, epsilon=0.15, noise="gamma", tau=None)``.

    Args:
        tau: prox weight of the even (linearised) steps, > 0; ``None`` uses ``mu_p`` per agent (AMB-B2).
        (others): see :class:`PerturbedADMM`.
    """

    tau: float | None = None
    name: ClassVar[str] = "radmm"

    def __post_init__(self):
        super().__post_init__()
        if self.tau is not None:
            check_positive(self.tau, "tau")

    def release_count(self, rounds: int) -> int:
        """Odd iterations only: ``ceil(rounds / 2)`` releases per agent (spec §4.10)."""
        return (int(rounds) + 1) // 2

    def _releases_at(self, t: int) -> bool:
        return t % 2 == 1

    def step(self, state, inbox, t, rng):
        nbr = inbox["x"]
        gamma = self._dual(state, nbr)
        d = state.degrees[:, None]
        anchor = self.rho * (d * state.x + nbr)
        if t % 2 == 1:
            f, _, _ = self._perturbed_solve(state, gamma, nbr, rng)
            g_hat = -gamma - 2.0 * self.rho * d * f + anchor
            return replace(state, x=f, f=f, gamma=gamma, g_hat=g_hat), {"x": f}
        tau = (state.mu if self.tau is None else self.tau + 0.0 * state.mu)[:, None]
        f = (tau * state.x - state.g_hat - gamma + anchor) / (tau + 2.0 * self.rho * d)
        return replace(state, x=f, f=f, gamma=gamma), {"x": f}

    def assumptions(self):
        out = super().assumptions()
        if self.mechanism.private:
            count = "ceil(rounds/2)" if self.iterations is None else f"{self.release_count(self.iterations)}"
            out.append("radmm: even iterations are post-processing of released values (no privacy cost); "
                       f"releases counted over ceil(iterations/2) = {count} odd iterations")
        return out
