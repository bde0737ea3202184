"""Shared pieces of the vertical (feature-partitioned) algorithms: the problem check and the coordinator's
logistic proximal step (spec §1.6, §3.4), used by ADMM sharing (:mod:`.sharing`) and FDML (:mod:`.fdml`)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..errors import ValidationError

__all__ = ["check_vertical", "logistic_prox"]


def check_vertical(problem, name: str) -> None:
    """Raise :class:`ValidationError` unless ``problem`` is a vertical problem (parties + coordinator roles)."""
    if not hasattr(problem, "coordinator_data"):
        raise ValidationError(f"{name} needs a VerticalProblem, got {type(problem).__name__}")


def logistic_prox(s: np.ndarray, y: np.ndarray, labels: np.ndarray, w: float, rho: float,
                  tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """Vectorised safeguarded Newton for ``argmin_z w log(1+e^{-Yz}) - y z + rho/2 (z - s)^2`` (spec §1.6).

    The root of ``h'(z) = -w Y sigma(-Y z) - y + rho (z - s)`` lies in ``[s + (y - w)/rho, s + (y + w)/rho]``;
    Newton steps leaving the (shrinking) bracket are replaced by bisection; an entry stops once
    ``|h'| < tol min(1, w + rho)`` (only unconverged entries are iterated on). ``h'`` scales with ``w + rho``: with
    the ``mean`` loss and a small ``rho`` an absolute ``tol`` would leave ``z`` inaccurate by up to ``tol / rho``.
    """
    lo, hi = s + (y - w) / rho, s + (y + w) / rho
    z = s.copy()
    stop = tol * min(1.0, w + rho)
    act = np.arange(z.shape[0])  # entries not yet converged: only these are iterated on
    for _ in range(max_iter):
        za, lab = z[act], labels[act]
        sig = expit(-lab * za)
        g = -w * lab * sig - y[act] + rho * (za - s[act])
        keep = np.abs(g) >= stop
        if not keep.any():
            break
        act, za, g, sig = act[keep], za[keep], g[keep], sig[keep]
        lo_a = np.where(g < 0, za, lo[act])
        hi_a = np.where(g > 0, za, hi[act])
        lo[act], hi[act] = lo_a, hi_a
        z_new = za - g / (w * sig * (1.0 - sig) + rho)
        z[act] = np.where((z_new > lo_a) & (z_new < hi_a), z_new, 0.5 * (lo_a + hi_a))
    return z
