"""Noise multipliers of pairwise-cancelling correlated Gaussian noise on a graph (issue 27; DECOR, Allouah et al.,
ICML 2024, "The Privacy Power of Correlated Noise in Decentralized Learning").

Round ``t``: agent ``i`` sends ``q_i = x_i + e_i + sum_{j in N_i} s_ij n_ij`` with ``e_i ~ N(0, s_i^2 I)``
independent, ``n_ij = n_ji ~ N(0, c^2 I)`` one draw per edge shared by its two ends, ``s_ij = +1`` for ``i < j``
and ``-1`` otherwise. Stacked over agents (one coordinate) the noise is ``N(0, Sigma)`` with

    Sigma = diag(s_i^2) + c^2 L,        L = B B^T the graph Laplacian (B the signed incidence matrix).

**Threat model certified** (the guarantee privdist prints): an observer that sees *every* message of *every* round
and colludes with at most ``colluding`` agents other than ``i`` (it knows their data, their independent noise and
the pair draws of all their edges). Replacing one sample of agent ``i`` moves only ``x_i(t)`` (the other agents'
``x_j(t)`` depend on released values and their own data), by at most ``Delta_i``. The colluders' messages are then
known up to nothing the observer cannot subtract, and the honest agents ``H = V \\ C`` send
``x_H + N(0, Sigma_H)``, ``Sigma_H = diag(s_H^2) + c^2 L(G[H])`` (the Laplacian of the subgraph induced by ``H``:
the pair draws of edges to colluders are known and removed). This is a Gaussian mechanism with correlated noise
whose mean moves by ``Delta_i e_i``: its privacy loss is exactly that of a scalar Gaussian of standard deviation

    sigma_eff,i = (Sigma_H^{-1})_{ii}^{-1/2}

(the conditional standard deviation of ``i``'s noise given every other honest message), i.e. one
``GaussianDpEvent(sigma_eff,i / Delta_i)`` per round (dp-accounting composes them; the rounds' draws are fresh, so
adaptive composition applies). privdist takes the worst colluding set of size ``colluding`` (every set is tried:
knowing more edges only helps the observer). ``sigma_eff,i >= s_i`` always (the pair terms are data-independent
post-processing of ``x + e``), and on a connected graph with ``colluding = 0`` and equal ``s_i = s`` it is at most
``s sqrt(K)``, reached as ``c -> inf`` (the central-DP scale of the network sum). An observer of agent ``i``'s
messages only, knowing ``d`` of its pair draws, would see variance ``s_i^2 + (deg_i - d) c^2``; privdist does not
print that weaker-threat number.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from .mechanisms import GaussianMechanism

__all__ = ["effective_std", "CorrelatedGaussian", "calibrate_correlated", "MAX_COALITIONS"]

#: Colluding sets tried at most (``comb(K, colluding)``); beyond it, a named error.
MAX_COALITIONS = 20000


def _conditional_std(adjacency: np.ndarray, s_ind: np.ndarray, c: float, honest: np.ndarray) -> np.ndarray:
    """``(Sigma_H^{-1})_{ii}^{-1/2}`` for every honest ``i`` (the module docstring's formula)."""
    A = adjacency[np.ix_(honest, honest)]
    L = np.diag(A.sum(axis=1)) - A
    sigma = np.diag(s_ind[honest] ** 2) + c * c * L
    return 1.0 / np.sqrt(np.diag(np.linalg.inv(sigma)))


def effective_std(adjacency, s_ind, c: float, colluding: int = 0) -> np.ndarray:
    """Per agent, the worst-case (over colluding sets) ``sigma_eff,i`` of the module docstring.

    Args:
        adjacency: (K, K) symmetric 0/1 adjacency (dense or scipy sparse).
        s_ind: the independent noise std of each agent, (K,) (> 0).
        c: the std of each pair draw (>= 0).
        colluding: agents other than ``i`` that collude with the observer.

    Raises:
        ValidationError: a non-positive ``s_ind``, a negative ``c``, ``colluding`` not below ``K - 1`` or more than
            :data:`MAX_COALITIONS` colluding sets to try.
    """
    A = np.asarray(adjacency.toarray() if hasattr(adjacency, "toarray") else adjacency, dtype=float)
    K = A.shape[0]
    s_ind = np.broadcast_to(np.asarray(s_ind, dtype=float), (K,))
    if not np.all(np.isfinite(s_ind)) or np.any(s_ind <= 0):
        raise ValidationError("correlated noise: every independent noise std must be > 0 (the pair terms alone "
                              "cancel in the sum and protect nobody against an observer of every message)")
    if not math.isfinite(c) or c < 0:
        raise ValidationError(f"correlated noise: the pair noise std must be finite and >= 0, got {c}")
    colluding = int(colluding)
    if not 0 <= colluding < max(K - 1, 1):
        raise ValidationError(f"correlated noise: colluding={colluding} must be in [0, K - 1 = {K - 1})")
    if math.comb(K, colluding) > MAX_COALITIONS:
        raise ValidationError(f"correlated noise: comb({K}, {colluding}) colluding sets is more than "
                              f"the {MAX_COALITIONS} privdist tries exactly; lower colluding")
    out = np.full(K, np.inf)
    for coalition in itertools.combinations(range(K), colluding):
        honest = np.setdiff1d(np.arange(K), np.asarray(coalition, dtype=np.int64))
        out[honest] = np.minimum(out[honest], _conditional_std(A, s_ind, float(c), honest))
    return out


@dataclass(frozen=True)
class CorrelatedGaussian:
    """The noise of one run: draws it and declares its releases (one object, as :class:`GaussianMechanism`).

    Sensitivities are ``unit * w_i`` (``unit`` the round's public scale, e.g. ``2 alpha_t c1``; ``w_i`` the agent's
    weight, ``w_max`` their public maximum). Agent ``i``'s independent std is ``z_ind unit w_i``, every pair draw's
    std ``z_cor unit w_max``; its declared release is ``GaussianDpEvent(declared[i])`` with ``declared[i] =
    sigma_eff,i / (unit w_i)`` (:func:`effective_std`, scale-free: the same each round).
    """

    z_ind: float
    z_cor: float
    w_max: float
    neighbours: tuple
    declared: GaussianMechanism

    def privatize(self, values, unit: float, weights, rng) -> np.ndarray:
        """``values`` (B, P) of the block's agents (``rng.agents``) plus their independent and pair noise."""
        values = np.asarray(values, dtype=float)
        shape = values.shape[1:]
        s_ind = unit * self.z_ind * np.asarray(weights, dtype=float).reshape(-1, *([1] * len(shape)))
        pairs = rng.pair_normal([self.neighbours[a] for a in np.asarray(rng.agents).tolist()], len(self.neighbours),
                                shape)
        return values + rng.normal(shape) * s_ind + pairs * (unit * self.z_cor * self.w_max)

    def releases(self, agents) -> list:
        return self.declared.releases(agents)


def calibrate_correlated(base: GaussianMechanism, adjacency, weights, ratio: float,
                         colluding: int) -> CorrelatedGaussian:
    """The smallest ``z_ind`` (with ``z_cor = ratio z_ind``) whose declared multiplier of every agent reaches its
    target ``target[i]``, the multiplier of the budget's mechanism ``base`` (e.g. PLD-calibrated for a total
    budget; its delta, composition and reason carry over): the effective std is linear in the noise scale, so one
    evaluation of :func:`effective_std` at ``z_ind = 1`` gives every agent's factor ``m_i``, and
    ``z_ind = max_i target_i / m_i``.

    Raises:
        ValidationError: ``ratio`` not finite and > 0, or :func:`effective_std`'s errors.
    """
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio) or ratio <= 0:
        raise ValidationError(f"correlation (pair noise std / independent noise std) must be finite and > 0, got "
                              f"{ratio!r}")
    A = np.asarray(adjacency.toarray() if hasattr(adjacency, "toarray") else adjacency, dtype=float)
    w = np.asarray(weights, dtype=float)
    w_max = float(w.max())
    m = effective_std(A, w, ratio * w_max, colluding) / w
    target = np.broadcast_to(np.asarray(base.noise_multiplier, dtype=float), m.shape)
    z_ind = float(np.max(target / m))
    declared = GaussianMechanism(tuple(float(v) for v in z_ind * m), None, base.delta, base.composition, base.reason)
    neighbours = tuple(tuple(np.flatnonzero(row).tolist()) for row in A)
    return CorrelatedGaussian(z_ind, ratio * z_ind, w_max, neighbours, declared)
