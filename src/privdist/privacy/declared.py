"""Declarations that are not DP mechanisms, each from one object like a mechanism (issue 23).

A :class:`~privdist.privacy.mechanisms.Mechanism` draws noise calibrated to a sensitivity and declares the release
that noise earns. Two things in the package look like it and are not, and are made explicit here:

* :class:`GaussianClaim`: a message to which **no noise is added**, declared as the Gaussian release its source
  paper models (D-ZOA: S1 Thm 1 treats the zeroth-order inner loop's error as Gaussian noise of variance S1(17)).
  It has no ``privatize``: it draws nothing. Its releases are the paper's *claim* (a reason is required; guaranteed
  epsilon = inf), with the paper's per-release epsilon and composition formula kept visible.
* :class:`Perturbation`: Gaussian noise of a fixed standard deviation **without a sensitivity analysis** (FDML's
  ``noise_std``, ADMM sharing's noise-level sweeps). It has ``perturb`` (not ``privatize``): no epsilon follows
  from it, so its releases are in the clear (``NonPrivateDpEvent``, epsilon = inf) with a reason that names the
  noise.

:func:`noise_std` is the standard deviation (Gaussian) or scale (Laplace) per agent that a mechanism, an
:class:`~privdist.privacy.mechanisms.Identity` or a :class:`Perturbation` adds for a given sensitivity, for the
records algorithms keep beside their results.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._checks import check_nonnegative, check_positive, check_probability
from ..errors import ShapeMismatchError, ValidationError
from .budget import gaussian_mechanism
from .mechanisms import GaussianMechanism, Identity, LaplaceMechanism
from .release import Release, non_private_release

__all__ = ["GaussianClaim", "Perturbation", "noise_std"]


@dataclass(frozen=True)
class GaussianClaim:
    """The Gaussian release a paper claims for messages sent WITHOUT noise (never a guarantee).

    Each agent ``agents[i]`` declares ``GaussianDpEvent(sqrt(C log(1.25/delta)) / epsilon[i])`` with the paper's
    per-release ``(epsilon[i], delta)``, composed by S1(25) (``C = 2.1``, ``"dzoa"``) or the moments bound
    (``C = 2``), as a claim with ``reason`` (S1 Thm 1, (20)-(22); spec §2.7). The noise multiplier comes from
    :func:`~privdist.privacy.budget.gaussian_mechanism`, the one place a per-release epsilon becomes one.

    Args:
        agents: global agent ids of the block the claim covers.
        epsilon: the paper's per-release epsilon of each of ``agents`` (e.g. S1(22) after rounding ``J_k``).
        delta: the paper's per-release delta, in (0, 1).
        reason: why the releases are only the paper's claim (required, non-empty).
        constant: ``C`` of the paper's Gaussian bound: 2.1 (S1(20)) or 2.

    Raises:
        ValidationError: empty or mismatched ``agents``/``epsilon``, a bad value, an empty reason.
    """

    agents: tuple[int, ...]
    epsilon: tuple[float, ...]
    delta: float
    reason: str
    constant: float = 2.1
    kind: ClassVar[str] = "gaussian_claim"

    def __post_init__(self):
        agents = tuple(int(a) for a in np.asarray(self.agents).reshape(-1))
        eps = tuple(float(check_positive(e, f"epsilon[{i}]")) for i, e in enumerate(np.asarray(self.epsilon,
                                                                                               dtype=object)))
        if not agents or len(agents) != len(eps):
            raise ValidationError(f"a claim needs one epsilon per agent, got {len(agents)} agents and {len(eps)} "
                                  "epsilons")
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValidationError(f"a claim needs a reason (why it is not a guarantee), got {self.reason!r}")
        object.__setattr__(self, "agents", agents)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", float(check_probability(self.delta, "delta")))
        self._paper  # noqa: B018 - validates constant and delta now

    @property
    def private(self) -> bool:
        """``False``: nothing is drawn (the claim is not a guarantee)."""
        return False

    @functools.cached_property
    def _paper(self) -> GaussianMechanism:
        """The modelled mechanism, indexed by the row of ``agents`` (used for its releases only, never to draw)."""
        return gaussian_mechanism(self.epsilon, self.delta, constant=self.constant, reason=self.reason)

    @functools.cached_property
    def _rows(self) -> dict[int, int]:
        return {a: i for i, a in enumerate(self.agents)}

    def releases(self, agents, uses: int = 1) -> list[Release]:
        """The claimed release of each of ``agents`` (global ids covered by this claim).

        Raises:
            ShapeMismatchError: an agent the claim does not cover.
        """
        try:
            rows = [self._rows[int(a)] for a in np.asarray(agents).reshape(-1)]
        except KeyError as exc:
            raise ShapeMismatchError(f"agent {exc.args[0]} is not covered by this claim (agents "
                                     f"{list(self.agents)})") from None
        return self._paper.releases(rows, uses)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "agents": list(self.agents), "epsilon": list(self.epsilon), "delta": self.delta,
                "constant": self.constant, "reason": self.reason}


@dataclass(frozen=True)
class Perturbation:
    """``v + N(0, std^2 I)`` per agent without a sensitivity analysis: NOT a DP mechanism.

    Row ``i`` of the noise is drawn from agent ``agents[i]``'s own stream (``rng.draw``), one
    ``standard_normal`` of the row's shape, then scaled by ``std``. Releases are in the clear (epsilon = inf).

    Args:
        std: the noise standard deviation (> 0).
        reason: what is released and why no epsilon follows (e.g. ``"fdml_sgd: shared predictions with noise of
            std 0.1 but without a sensitivity analysis: no DP claim"``).
    """

    std: float
    reason: str
    kind: ClassVar[str] = "perturbation"

    def __post_init__(self):
        object.__setattr__(self, "std", float(check_positive(self.std, "std")))
        non_private_release(self.reason)  # validates the reason

    @property
    def private(self) -> bool:
        """``False``: the noise carries no privacy guarantee."""
        return False

    def perturb(self, values: np.ndarray, rng) -> np.ndarray:
        """``values`` (B, ...) plus Gaussian noise of std :attr:`std` (row ``i`` from the ``i``-th stream)."""
        values = np.asarray(values, dtype=float)
        shape = values.shape[1:]
        return values + rng.draw(lambda g, i: g.standard_normal(shape)) * self.std

    def releases(self, agents, uses: int = 1) -> list[Release]:
        return [non_private_release(self.reason)] * len(np.asarray(agents).reshape(-1))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "std": self.std, "reason": self.reason}


def _level(level, agents: np.ndarray) -> np.ndarray:
    if isinstance(level, tuple):
        return np.asarray(level, dtype=float)[agents]
    return np.full(agents.shape, float(level))


def noise_std(mechanism, sensitivity, agents) -> np.ndarray:
    """Per agent of ``agents`` (global ids): the Gaussian std (``z Delta``), the Laplace scale (``b Delta``), the
    :class:`Perturbation`'s std, or 0 (:class:`~privdist.privacy.mechanisms.Identity`, :class:`GaussianClaim`).

    Raises:
        TypeError: a mechanism whose noise has no single scale (e.g. Gamma-norm).
    """
    agents = np.asarray(agents, dtype=np.int64).reshape(-1)
    sens = np.broadcast_to(np.asarray(check_nonnegative(sensitivity, "sensitivity") if np.ndim(sensitivity) == 0
                                      else sensitivity, dtype=float), agents.shape)
    if isinstance(mechanism, (GaussianMechanism, LaplaceMechanism)):
        return sens * _level(mechanism.noise_multiplier, agents)
    if isinstance(mechanism, Perturbation):
        return np.full(agents.shape, mechanism.std)
    if isinstance(mechanism, (Identity, GaussianClaim)):
        return np.zeros(agents.shape)
    raise TypeError(f"noise_std: no single noise scale for {type(mechanism).__name__}")
