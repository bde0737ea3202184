"""Mirror maps (Bregman functions) and the exact mirror step of DPDO-NC (spec §5.4, S4 (7), Remark 2).

The mirror step is ``x+ = argmin_{x in Omega} D_phi(x, z) + alpha <g, x>``, vectorised over rows (agents):

==========================  =============  ===========================================================
``phi``                     ``omega``      step
==========================  =============  ===========================================================
``(c/2)||x||^2``            ``c``          ``Pi_Omega(z - alpha g / c)``  (c=1: ``euclidean``, c=2: ``squared``)
``x^T Q x``                 ``2 lmin(Q)``  ``argmin_Omega (x-u)^T Q (x-u)``, ``u = z - (alpha/2) Q^{-1} g``
``sum x_j log x_j``         ``1``          ``x+ ~ zt * exp(-alpha g)`` on the simplex (exponentiated gradient)
==========================  =============  ===========================================================

Negative entropy needs ``z`` in the simplex interior, but the mixed Laplace-noised messages ``z`` generally are
not (spec §5.4 says the form is "only valid when z in simplex interior"). [RES] ``z`` is first mapped to
``zt = (1 - floor) Pi_simplex(z) + floor / d`` — post-processing of released values, so privacy is unaffected —
and the step is taken from ``zt``. For fixed ``zt`` the map ``g -> x+`` is 1-Lipschitz from l_inf to l1
(softmax Jacobian), so the l1 sensitivity is ``<= 2 alpha theta <= 2 sqrt(d) alpha theta / omega`` and S4's
calibration stays valid.
"""

from __future__ import annotations

import abc

from dataclasses import dataclass, field

import numpy as np

from .._checks import check_finite, check_positive
from ..errors import UnknownNameError, ValidationError
from .constraints import L1Ball, Simplex, check_positive_definite

__all__ = ["MirrorMap", "EuclideanMirror", "MahalanobisMirror", "EntropyMirror", "MIRROR_MAPS", "make_mirror"]


class MirrorMap(abc.ABC):
    """Base class: ``omega`` (strong-convexity modulus w.r.t. ||.||_2 on Omega) and ``step``."""

    name: str = ""
    omega: float = 1.0

    def check_domain(self, domain) -> None:
        """Raise ValidationError if this map cannot be used with ``domain``."""

    @abc.abstractmethod
    def step(self, Z: np.ndarray, G: np.ndarray, alpha: float, domain) -> np.ndarray:
        """One mirror step from the mixed point ``Z`` along ``G`` with step ``alpha``, onto ``domain``."""

    @abc.abstractmethod
    def divergence(self, X, Y) -> np.ndarray:
        """``D_phi(x, y)`` per row."""


@dataclass(frozen=True)
class EuclideanMirror(MirrorMap):
    """``phi = (c/2)||x||^2``: ``c = 1`` is S4's ``1/2||x||^2`` (omega 1), ``c = 2`` its ``||x||^2`` (omega 2)."""

    c: float = 1.0
    name: str = "euclidean"

    def __post_init__(self):
        check_positive(self.c, "c")

    @property
    def omega(self) -> float:
        return self.c

    def check_domain(self, domain) -> None:
        if not isinstance(domain, (L1Ball, Simplex)):
            raise ValidationError(f"Euclidean mirror step needs an L1Ball or Simplex domain, got {domain!r}")

    def step(self, Z, G, alpha, domain):
        return domain.project(Z - (alpha / self.c) * G)

    def divergence(self, X, Y):
        return 0.5 * self.c * np.sum((np.asarray(X) - np.asarray(Y)) ** 2, axis=-1)


@dataclass(frozen=True)
class MahalanobisMirror(MirrorMap):
    """``phi = x^T Q x`` with ``Q`` symmetric positive definite (AMB-O6: S4 says only PSD, which is not enough)."""

    Q: np.ndarray = field(default_factory=lambda: np.diag([1.0, 2.0]))
    name: str = "mahalanobis"

    def __post_init__(self):
        Q = np.asarray(self.Q, dtype=float)
        object.__setattr__(self, "Q", check_positive_definite(Q, Q.shape[0] if Q.ndim == 2 else -1))
        object.__setattr__(self, "_Qinv", np.linalg.inv(self.Q))

    @property
    def omega(self) -> float:
        return 2.0 * float(np.linalg.eigvalsh(self.Q)[0])

    def check_domain(self, domain) -> None:
        if not isinstance(domain, L1Ball):
            raise ValidationError(f"the Mahalanobis mirror step is implemented on an L1Ball, got {domain!r}")
        if domain.dim != self.Q.shape[0]:
            raise ValidationError(f"Q is {self.Q.shape[0]}x{self.Q.shape[0]} but the domain has dim {domain.dim}")

    def step(self, Z, G, alpha, domain):
        return domain.project(Z - 0.5 * alpha * G @ self._Qinv.T, Q=self.Q)

    def divergence(self, X, Y):
        D = np.asarray(X) - np.asarray(Y)
        return np.einsum("...i,ij,...j->...", D, self.Q, D)


@dataclass(frozen=True)
class EntropyMirror(MirrorMap):
    """``phi = sum_j x_j log x_j`` on the simplex (S4 Remark 2), omega 1 (w.r.t. l1, hence l2).

    Args:
        floor: weight of the uniform distribution mixed into the simplex-projected ``z`` (in [0, 1)); keeps
            every coordinate positive so that the multiplicative step can move it.
    """

    floor: float = 1e-3
    name: str = "entropy"
    omega: float = 1.0

    def __post_init__(self):
        if not 0 <= self.floor < 1:
            raise ValidationError(f"floor must be in [0, 1), got {self.floor}")

    def check_domain(self, domain) -> None:
        if not isinstance(domain, Simplex):
            raise ValidationError(f"the negative-entropy mirror map needs the probability simplex as Omega "
                                  f"(S4 Remark 2), got {domain!r}")

    def step(self, Z, G, alpha, domain):
        zt = (1.0 - self.floor) * domain.project(Z) + self.floor / Z.shape[1]
        logits = np.log(np.maximum(zt, 1e-300)) - alpha * G
        logits -= logits.max(axis=1, keepdims=True)
        w = np.exp(logits)
        return w / w.sum(axis=1, keepdims=True)

    def divergence(self, X, Y):
        X, Y = np.asarray(X), np.asarray(Y)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(X > 0, X * np.log(X / Y), 0.0)
        return np.sum(terms - X + Y, axis=-1)


MIRROR_MAPS = ("euclidean", "squared", "mahalanobis", "entropy")


def make_mirror(name: str, Q=None, floor: float = 1e-3) -> MirrorMap:
    """A mirror map by name: ``euclidean`` (1/2||x||^2), ``squared`` (||x||^2), ``mahalanobis`` (x^T Q x,
    default ``Q = diag(1, 2)``, AMB-O6), ``entropy`` (negative entropy on the simplex).

    Raises:
        UnknownNameError: unknown name. ValidationError: ``Q`` given for a map that does not use it, or not PD.
    """
    if name not in MIRROR_MAPS:
        raise UnknownNameError("mirror map", str(name), MIRROR_MAPS)
    if Q is not None and name != "mahalanobis":
        raise ValidationError(f"Q is only used by the mahalanobis mirror map, not {name!r}")
    if name == "euclidean":
        return EuclideanMirror(1.0)
    if name == "squared":
        return EuclideanMirror(2.0, name="squared")
    if name == "mahalanobis":
        return MahalanobisMirror(np.diag([1.0, 2.0]) if Q is None else check_finite(Q, "Q"))
    return EntropyMirror(floor)
