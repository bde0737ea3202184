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

__all__ = ["Loss", "SquaredLoss", "LogisticLoss", "make_loss", "LOSSES"]


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

    def check_labels(self, y, where):
        y = np.asarray(y, dtype=float)
        bad = ~np.isin(y, (-1.0, 1.0))
        if bad.any():
            raise ValidationError(
                f"logistic loss needs labels in {{-1, +1}}; {where} has {int(bad.sum())} other value(s), "
                f"e.g. {y[bad][0]!r} (map {{0, 1}} labels with 2*y-1)"
            )
        return y


LOSSES = {"squared": SquaredLoss, "logistic": LogisticLoss}


def make_loss(name: str) -> Loss:
    """Return the loss registered under ``name`` (``squared`` or ``logistic``)."""
    try:
        return LOSSES[name]()
    except KeyError:
        raise UnknownNameError("loss", name, list(LOSSES)) from None
