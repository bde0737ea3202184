"""ZOO-ADMM: zeroth-order online ADMM of Liu, Chen, Chen, Hero (AISTATS 2018), ported from the authors' MATLAB
(``ZOADMM_overlapGroupLasso.m``; spec §6.8, C-ZOO), in the centralised lasso setting of S1 Fig. 1.

Problem ``min f(x) + g(y)`` s.t. ``x - y = 0`` (``A = I``, ``B = -I``, ``c = 0``) with ``f = sum_k f_k``'s data
part (full batch) and ``g = eta ||y||_1``. Iteration ``t = 1..T`` (``d`` = dimension):

    eta_t = eta_c / sqrt(t d),  beta_t = beta_c / (t d^1.5)
    g_hat = 1/q sum_j [f(x + beta_t z_j) - f(x)] / beta_t z_j,   z_j = sqrt(d) g_j/||g_j||, g_j ~ N(0, I)
    x <- x + eta_t / a (-g_hat + lambda - rho (x - y))
    y <- prox_{(eta/rho) R}(x - lambda/rho) (= S_{eta/rho} for l1);   lambda <- lambda - rho (x - y)

scoring the running average ``x_bar``. Code defaults: ``x_0 = 0.01 U[0,1]^d``, ``y_0 = x_0``, ``lambda_0 = 0``,
``rho = 1``, ``a = 10`` (grown by 1.1 until ``a - eta_c rho >= 1``), ``eta_c = beta_c = 1``; ``q = 30`` [RES].
Runs on the coordinator (central hub); agents relay the broadcast ``x_bar`` (see :mod:`.orzo`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .._checks import check_int, check_nonnegative, check_positive
from .base import AlgorithmBase
from .orzo import CentralRelay, global_value_diff

__all__ = ["ZOOADMM"]


@dataclass(frozen=True)
class ZOOADMMCoordinatorState:
    """Central solver state: ``x, y, lam`` (P,), running average ``avg``, Bregman scale ``a``, ``problem``."""

    x: np.ndarray
    y: np.ndarray
    lam: np.ndarray
    avg: np.ndarray
    a: float
    problem: Any


@dataclass(frozen=True)
class ZOOADMM(CentralRelay, AlgorithmBase):
    """Factory: ``ZOOADMM(q=30)``.

    Args:
        q: random directions per iteration; rho: ADMM penalty; a: initial Bregman scale;
        eta_c, beta_c: learning-rate and smoothing constants; init_scale: ``x_0 = init_scale * U[0,1]^d``.
    """

    q: int = 30
    rho: float = 1.0
    a: float = 10.0
    eta_c: float = 1.0
    beta_c: float = 1.0
    init_scale: float = 0.01
    name: ClassVar[str] = "zooadmm"

    def __post_init__(self):
        check_int(self.q, "q", 1)
        for nm in ("rho", "a", "eta_c", "beta_c"):
            check_positive(getattr(self, nm), nm)
        check_nonnegative(self.init_scale, "init_scale")

    def init_coordinator(self, problem, network, rng):
        a = self.a
        while a - self.eta_c * self.rho < 1:  # lambda_min(a I - eta_c rho A^T A) >= 1 with A = I
            a *= 1.1
        x = self.init_scale * rng.generators()[0].uniform(size=problem.n_features)
        cs = ZOOADMMCoordinatorState(x, x.copy(), np.zeros_like(x), np.zeros_like(x), a, problem)
        return cs, {"beta": x.copy()}

    def step_coordinator(self, cs, inbox, t, rng):
        d = cs.x.shape[0]
        eta_t, beta_t = self.eta_c / math.sqrt(t * d), self.beta_c / (t * d**1.5)
        G = rng.generators()[0].standard_normal((d, self.q))
        Z = math.sqrt(d) * G / np.linalg.norm(G, axis=0)
        diff = global_value_diff(cs.problem, data_only=True)(np.repeat(cs.x[:, None], self.q, axis=1), Z, beta_t)
        g_hat = Z @ diff / self.q
        x = cs.x + eta_t / cs.a * (-g_hat + cs.lam - self.rho * (cs.x - cs.y))
        y = cs.problem.regularizer.prox((x - cs.lam / self.rho)[None], cs.problem.reg_weight / self.rho)[0]
        lam = cs.lam - self.rho * (x - y)
        avg = cs.avg + (x - cs.avg) / t
        return replace(cs, x=x, y=y, lam=lam, avg=avg), {"beta": avg.copy()}

    def assumptions(self):
        return ["zooadmm: centralised, non-private port of the authors' MATLAB (spec §6.8); coordinator = hub"]
