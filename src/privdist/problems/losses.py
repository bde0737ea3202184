"""Per-sample losses as functions of the linear prediction ``z = x^T beta`` and the label ``y``.

A loss is written once as scalar functions of ``z`` (value, first and second derivative), which makes every
derived quantity (per-sample gradient ``l'(z) x``, values of many parameter vectors at once, Newton steps)
a matter of array products in :mod:`privdist.problems.erm`.

References:
    spec §2.1 (squared loss of S1(30)-(32), no 1/2 factor), §1.5 and §6.2 (logistic loss log(1 + e^{-y z})).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

from ..errors import UnknownNameError, ValidationError

__all__ = ["Loss", "SquaredLoss", "LogisticLoss", "RowClippedLoss", "make_loss", "LOSSES"]


class Loss(abc.ABC):
    """Base of per-sample losses ``l(z, y)``; subclasses define ``value``, ``dz`` and ``d2z``.

    Attributes:
        name: registry name.
        quadratic: True when ``l`` is quadratic in ``z`` (Newton converges in one step).
        curvature_bound: an upper bound of ``d2z`` over all ``z`` (used for step sizes).
    """

    name: str = ""
    quadratic: bool = False
    curvature_bound: float = np.inf

    @abc.abstractmethod
    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``l(z, y)`` elementwise."""

    @abc.abstractmethod
    def dz(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``dl/dz`` elementwise."""

    @abc.abstractmethod
    def d2z(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``d2l/dz2`` elementwise."""

    def check_labels(self, y: np.ndarray, where: str) -> np.ndarray:
        """Validate labels for this loss; return them as float."""
        return np.asarray(y, dtype=float)

    @abc.abstractmethod
    def clipped_value(self, z: np.ndarray, y: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Value of the convex loss whose derivative is ``clip(l'(z), -t, t)`` (equal to ``l`` where
        ``|l'| <= t``, its tangent line beyond). ``t`` > 0, possibly inf (no clipping)."""


@dataclass(frozen=True)
class SquaredLoss(Loss):
    """``l(z, y) = (z - y)^2`` (S1(30)-(31): ``sum_j l = ||X beta - y||^2``)."""

    name: str = "squared"
    quadratic: bool = True
    curvature_bound: float = 2.0

    def value(self, z, y):
        return (z - y) ** 2

    def dz(self, z, y):
        return 2.0 * (z - y)

    def d2z(self, z, y):
        return np.full(np.broadcast(z, y).shape, 2.0)

    def clipped_value(self, z, y, t):
        """Huber: ``r^2`` for ``|2 r| <= t``, ``t |r| - t^2/4`` beyond (``r = z - y``)."""
        r = np.abs(z - y)
        t = np.broadcast_to(t, r.shape)
        out = r * r
        big = 2.0 * r > t  # never true where t = inf
        tb = np.where(big, t, 0.0)
        return np.where(big, tb * r - tb * tb / 4.0, out)


@dataclass(frozen=True)
class LogisticLoss(Loss):
    """``l(z, y) = log(1 + exp(-y z))`` with ``y in {-1, +1}`` (spec §1.5, §6.2), computed stably."""

    name: str = "logistic"
    quadratic: bool = False
    curvature_bound: float = 0.25

    def value(self, z, y):
        return -log_expit(y * z)

    def dz(self, z, y):
        return -y * expit(-y * z)

    def d2z(self, z, y):
        s = expit(z)
        return s * (1.0 - s)

    def clipped_value(self, z, y, t):
        """``|l'| = expit(-y z) <= t`` holds for ``y z >= u0 = log(1/t - 1)`` (always when ``t >= 1``);
        below ``u0`` the tangent ``l(u0) + t (u0 - y z)``."""
        u = np.asarray(y * z, dtype=float)
        t = np.broadcast_to(t, u.shape)
        active = t < 1.0
        ts = np.where(active, t, 0.5)
        u0 = np.log1p(-ts) - np.log(ts)
        clipped = active & (u < u0)
        return np.where(clipped, -log_expit(u0) + ts * (u0 - u), -log_expit(u))

    def check_labels(self, y, where):
        y = np.asarray(y, dtype=float)
        bad = ~np.isin(y, (-1.0, 1.0))
        if bad.any():
            raise ValidationError(
                f"logistic loss needs labels in {{-1, +1}}; {where} has {int(bad.sum())} other value(s), "
                f"e.g. {y[bad][0]!r} (map {{0, 1}} labels with 2*y-1)"
            )
        return y


class RowClippedLoss(Loss):
    """``base`` with ``l'`` clipped per sample to ``[-t_j, t_j]``, ``t_j = c1 / ||x_j||``: every per-sample
    gradient ``l'(x_j^T b) x_j`` then has norm ``<= c1`` for every ``b`` (the Huber loss for the squared loss).

    The thresholds are an array laid out like the owning problem's padded labels (K, n); arguments of shape
    (K, n), (K, n, m) and (K n,) are accepted. Made by :meth:`HorizontalERM.with_clipped_gradients`, not directly.
    """

    quadratic = False

    def __init__(self, base: Loss, thresholds: np.ndarray, c1: float):
        self.base, self.thresholds, self.c1 = base, np.asarray(thresholds, dtype=float), float(c1)
        self.name = f"clipped_{base.name}"
        self.curvature_bound = base.curvature_bound

    def _t(self, z):
        z = np.asarray(z)
        t = self.thresholds
        if z.ndim == t.ndim:
            return t
        if z.ndim == t.ndim + 1:
            return t[..., None]
        if z.ndim == 1 and z.size == t.size:
            return t.ravel()
        raise ValueError(f"clipped loss: argument of shape {z.shape} does not match thresholds {t.shape}")

    def value(self, z, y):
        return self.base.clipped_value(z, y, self._t(z))

    def dz(self, z, y):
        t = self._t(z)
        return np.clip(self.base.dz(z, y), -t, t)

    def d2z(self, z, y):
        return np.where(np.abs(self.base.dz(z, y)) < self._t(z), self.base.d2z(z, y), 0.0)

    def clipped_value(self, z, y, t):
        """Clipping a clipped loss again clips ``l'`` to the smaller threshold."""
        return self.base.clipped_value(z, y, np.minimum(t, self._t(z)))

    def check_labels(self, y, where):
        return self.base.check_labels(y, where)


LOSSES = {"squared": SquaredLoss, "logistic": LogisticLoss}


def make_loss(name: str) -> Loss:
    """Return the loss registered under ``name`` (``squared`` or ``logistic``)."""
    try:
        return LOSSES[name]()
    except KeyError:
        raise UnknownNameError("loss", name, list(LOSSES)) from None
