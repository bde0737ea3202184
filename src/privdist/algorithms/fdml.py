"""FDML SGD baseline: synchronous mini-batch SGD over vertically partitioned features (spec §6.9) [RECON].

Hu, Niu, Yang, Zhou (KDD 2019): party ``m`` maps its features to a local prediction ``D_m^i x_m``; the
coordinator (which holds the labels) sums them into the logit ``h_i`` and returns the loss derivative. One
runtime round is one mini-batch step (an epoch is ``N // batch_size`` rounds):

1. round ``t``: the parties receive the batch ``B_t`` (public indices drawn by the coordinator) and the residuals
   ``r_i = -Y_i sigma(-Y_i h_i)`` of the previous batch ``B_{t-1}``; party ``m`` updates
   ``x_m <- x_m - lr ( (1/|B|) sum_{i in B_{t-1}} r_i D_m^{i T} + 2 lambda x_m )``, then sends
   ``a_{m,i} = D_m^i x_m (+ N(0, noise_std^2))`` for ``i in B_t`` (``GATHER``);
2. the coordinator forms ``h_i = sum_m a_{m,i}``, ``r_i``, draws ``B_{t+1}`` and broadcasts both.

The objective is ``(1/N) sum_i log(1 + exp(-Y_i h_i)) + lambda sum_m ||x_m||^2`` (mean scaling, spec §6.9),
``lambda`` = the problem's ``reg_weight``. Batches: a fresh random permutation per epoch (``shuffle=True``) or
cyclic in sample order; initialisation ``x_m ~ N(0, init_std^2 I)`` (RES: 0.01 for the reproduction). The
optional noise has no sensitivity analysis (S2 §1.1: "without formal guarantee"): it is NOT a DP mechanism but a
:class:`~privdist.privacy.declared.Perturbation` (issue 23), which draws the noise and declares the shares in the
clear (epsilon = inf) from one object. Note that the returned ``r_i`` reveal the labels of the batch by their sign
(inherent to the protocol).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from scipy.special import expit

from .._checks import check_int, check_nonnegative, check_positive
from ..errors import ValidationError
from ..contract import Aggregation, MessageSpec
from .base import AlgorithmBase, in_the_clear
from .vertical_common import check_vertical

__all__ = ["FDMLSGD", "FDMLPartyState", "FDMLCoordinatorState"]


@dataclass(frozen=True)
class FDMLPartyState:
    """``x`` (b, d) embedded ``x_m``; ``prev`` (B,) indices of the batch last sent (-1 before the first)."""

    x: np.ndarray
    prev: np.ndarray
    data: object


@dataclass(frozen=True)
class FDMLCoordinatorState:
    """Labels (private), the epoch permutation, the position in it and the batch the parties work on."""

    labels: np.ndarray
    perm: np.ndarray
    pos: int
    batch: np.ndarray


@dataclass(frozen=True)
class FDMLSGD(AlgorithmBase):
    """Factory: ``FDMLSGD(lr=0.1, batch_size=100)``.

    Args:
        lr: learning rate (> 0); unknown in the paper, grid-searched (AMB-B4).
        batch_size: mini-batch size (>= 1, at most N).
        noise_std: std of Gaussian noise added to the shared local predictions (0: none); no sensitivity
            analysis, so no DP claim (:attr:`perturbation`).
        init_std: std of the random initialisation (0: zeros).
        shuffle: new random permutation every epoch (else cyclic batches in sample order).
    """

    lr: float = 0.1
    batch_size: int = 100
    noise_std: float = 0.0
    init_std: float = 0.0
    shuffle: bool = False
    name: ClassVar[str] = "fdml_sgd"
    has_coordinator: ClassVar[bool] = True

    def __post_init__(self):
        check_positive(self.lr, "lr")
        check_int(self.batch_size, "batch_size")
        check_nonnegative(self.noise_std, "noise_std")
        check_nonnegative(self.init_std, "init_std")

    @functools.cached_property
    def perturbation(self):
        """The :class:`~privdist.privacy.declared.Perturbation` of ``noise_std`` (not a DP mechanism), or None."""
        if not self.noise_std > 0:
            return None
        from ..privacy.declared import Perturbation

        return Perturbation(self.noise_std, f"{self.name}: shared predictions with Gaussian noise of std "
                            f"{self.noise_std} but without a sensitivity analysis: no DP claim")

    def _batch(self, problem) -> int:
        check_vertical(problem, self.name)
        if self.batch_size > problem.n_samples:
            raise ValidationError(f"batch_size {self.batch_size} exceeds the {problem.n_samples} samples")
        return self.batch_size

    def steps_per_epoch(self, n_samples: int) -> int:
        """Rounds per pass over the training set: ``N // batch_size``."""
        return max(n_samples // self.batch_size, 1)

    def messages(self, problem, network):
        B = (self._batch(problem),)
        return (MessageSpec("a", B, Aggregation.GATHER), MessageSpec("batch", B, Aggregation.BROADCAST),
                MessageSpec("r", B, Aggregation.BROADCAST))

    def init(self, problem, network, block, rng):
        check_vertical(problem, self.name)
        data = problem.subset(block.agents)
        B = self._batch(problem)
        x = np.zeros((block.size, data.n_features))
        if self.init_std > 0:
            gens = rng.generators()
            for i, d in enumerate(data.dims):
                o = data.offsets[i]
                x[i, o:o + d] = self.init_std * gens[i].standard_normal(d)
        return FDMLPartyState(x, np.full(B, -1), data), {"a": np.zeros((block.size, B))}

    def _order(self, n: int, rng) -> np.ndarray:
        return rng.generators()[0].permutation(n) if self.shuffle else np.arange(n)

    def init_coordinator(self, problem, network, rng):
        cd = problem.coordinator_data()
        B = self._batch(problem)
        perm = self._order(cd.labels.shape[0], rng)
        cstate = FDMLCoordinatorState(cd.labels, perm, B, perm[:B])
        return cstate, {"batch": perm[:B].astype(float), "r": np.zeros(B)}

    def step(self, state, inbox, t, rng):
        data = state.data
        batch = inbox["batch"][0].astype(np.int64)
        x = state.x.copy()
        a = np.empty((x.shape[0], batch.shape[0]))
        for i, D in enumerate(data.blocks):
            o, d = data.offsets[i], data.dims[i]
            x_m = x[i, o:o + d]
            if state.prev[0] >= 0:
                r = inbox["r"][i]
                grad = np.asarray(D[state.prev].T @ r).ravel() / r.shape[0] + 2.0 * data.reg_weight * x_m
                x_m = x_m - self.lr * grad
                x[i, o:o + d] = x_m
            a[i] = np.asarray(D[batch] @ x_m).ravel()
        if self.perturbation is not None:  # a_{m,i} + N(0, noise_std^2), party m's own stream
            a = self.perturbation.perturb(a, rng)
        return replace(state, x=x, prev=batch), {"a": a}

    def step_coordinator(self, cstate, inbox, t, rng):
        B = cstate.batch.shape[0]
        Y = cstate.labels[cstate.batch]
        h = inbox["a"].sum(axis=0)
        r = -Y * expit(-Y * h)
        perm, pos = cstate.perm, cstate.pos
        if pos + B > perm.shape[0]:
            perm, pos = self._order(perm.shape[0], rng), 0
        batch = perm[pos:pos + B]
        return replace(cstate, perm=perm, pos=pos + B, batch=batch), {"batch": batch.astype(float), "r": r}

    def dp_events(self, state, t):
        if self.perturbation is not None:
            return self.perturbation.releases(np.arange(state.x.shape[0]))
        return [in_the_clear(self.name, "shared predictions")] * state.x.shape[0]

    def estimate(self, state):
        return state.x

    def assumptions(self):
        if self.noise_std > 0:
            return [f"fdml_sgd: Gaussian noise (std {self.noise_std}) on shared predictions without a "
                    "sensitivity analysis; no differential-privacy guarantee is claimed"]
        return []
