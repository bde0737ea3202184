"""Regularizers ``R(beta)``: value, subgradient and proximal operator, vectorised over leading axes.

Parameter vectors live on the last axis: ``B`` of shape ``(..., P)``.

References:
    spec §2.1 (lasso ``R = ||beta||_1``, ridge ``R = ||beta||^2``), §1.6 (soft-threshold, sign(0) = 0).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from ..errors import UnknownNameError

__all__ = ["Regularizer", "L1", "L2", "NoRegularizer", "make_regularizer", "REGULARIZERS", "soft_threshold"]


def soft_threshold(v: np.ndarray, tau) -> np.ndarray:
    """``S_tau(v) = sign(v) max(|v| - tau, 0)`` (spec §1.6); ``tau`` broadcasts against ``v``."""
    return np.sign(v) * np.maximum(np.abs(v) - tau, 0.0)


class Regularizer(abc.ABC):
    """Base of regularizers. ``smooth`` regularizers also define ``hessian_scale`` (``R'' = scale * I``)."""

    name: str = ""
    smooth: bool = False
    hessian_scale: float = 0.0

    @abc.abstractmethod
    def value(self, B: np.ndarray) -> np.ndarray:
        """``R`` of every row of ``B``."""

    @abc.abstractmethod
    def subgradient(self, B: np.ndarray) -> np.ndarray:
        """A subgradient of ``R`` at every row of ``B``."""

    @abc.abstractmethod
    def prox(self, V: np.ndarray, tau) -> np.ndarray:
        """``argmin_b tau R(b) + 1/2 ||b - v||^2`` row-wise; ``tau`` broadcasts over leading axes."""


@dataclass(frozen=True)
class L1(Regularizer):
    """``R(b) = ||b||_1`` (lasso); subgradient uses sign(0) = 0 (spec §1.6)."""

    name: str = "l1"
    smooth: bool = False

    def value(self, B):
        return np.abs(B).sum(axis=-1)

    def subgradient(self, B):
        return np.sign(B)

    def prox(self, V, tau):
        return soft_threshold(V, np.asarray(tau)[..., None] if np.ndim(tau) else tau)


@dataclass(frozen=True)
class L2(Regularizer):
    """``R(b) = ||b||^2`` (ridge, S1(31); note: no 1/2 factor)."""

    name: str = "l2"
    smooth: bool = True
    hessian_scale: float = 2.0

    def value(self, B):
        return (B * B).sum(axis=-1)

    def subgradient(self, B):
        return 2.0 * B

    def prox(self, V, tau):
        tau = np.asarray(tau)[..., None] if np.ndim(tau) else tau
        return V / (1.0 + 2.0 * tau)


@dataclass(frozen=True)
class NoRegularizer(Regularizer):
    """``R = 0``."""

    name: str = "none"
    smooth: bool = True
    hessian_scale: float = 0.0

    def value(self, B):
        return np.zeros(np.shape(B)[:-1])

    def subgradient(self, B):
        return np.zeros_like(B)

    def prox(self, V, tau):
        return np.array(V, dtype=float, copy=True)


REGULARIZERS = {"l1": L1, "l2": L2, "none": NoRegularizer}


def make_regularizer(name: str) -> Regularizer:
    """Return the regularizer registered under ``name`` (``l1``, ``l2`` or ``none``)."""
    try:
        return REGULARIZERS[name]()
    except KeyError:
        raise UnknownNameError("regularizer", name, list(REGULARIZERS)) from None
