"""Privacy mechanisms as objects: the noise drawn and the release declared come from one object (DESIGN
"Mechanisms are objects"; issue 23).

A mechanism holds its noise level relative to the sensitivity (a *noise multiplier*) and nothing else about a run.
An algorithm calls :meth:`Mechanism.privatize` once per privacy-costing release, passing the values of a block of
agents, the sensitivity that its clipping enforces (one per agent or one for all), and the step's random streams;
its ``dp_events`` returns :meth:`Mechanism.releases` of the *same* object for the agents that released. So the
noise really drawn (``sigma = noise_multiplier * sensitivity``) and the event the accountants compose
(``GaussianDpEvent(noise_multiplier)``, ...) cannot drift apart: there is no second formula.

Mechanisms:

* :class:`GaussianMechanism`: ``v + N(0, (z Delta_2)^2 I)``; event ``GaussianDpEvent(z)`` (spec §1.2).
* :class:`LaplaceMechanism`: ``v + Lap(b Delta_1)`` per coordinate, pure ``1/b``-DP; declared as generic pure DP
  (:func:`~privdist.privacy.release.pure_release`, below).
* :class:`GammaNormMechanism`: ``v + w`` with density of ``w`` proportional to ``exp(-epsilon ||w|| / Delta_2)``
  (PVP/DVP/R-ADMM, spec §6.3-§6.5), pure ``epsilon``-DP; declared as generic pure DP.

**Pure DP is declared through its dominating pair** (issue 24). Neither the Gamma-norm mechanism nor a
d-dimensional Laplace mechanism with an l1 sensitivity is the 1-D Laplace mechanism they were declared as until
issue 24: the worst case of composing pure ``epsilon``-DP releases is binary randomized response with ratio
``e^epsilon`` (Kairouz, Oh & Viswanath 2015, optimal composition Thm 3.3; any ``epsilon``-DP mechanism is a
post-processing of it), e.g. 100 releases of 0.5 at delta 1e-5: 31.17 (the 1-D Laplace pair gave 28.50). For the
d-dimensional Laplace mechanism a numerical check (PLD hockey-stick curves of shifts split over 2-4 coordinates
against the 1-D shift, Delta in {0.1, 0.5, 1, 2}) found no split above the 1-D pair, but that is not a proof, so it
is declared as generic pure DP too. ``uses`` compositions are ``SelfComposedDpEvent(..., uses)``.
* :class:`Identity`: no noise; the release is in the clear (``NonPrivateDpEvent``, epsilon = inf, never 0). The
  non-private run of a DP algorithm is the same code with this mechanism.

A noise level may differ per agent (per-party budgets): ``noise_multiplier`` (or ``epsilon``) is then a tuple
indexed by the global agent id, and :meth:`privatize` reads the ids of the block from the streams (``rng.agents``).

Random streams: ``rng`` is the step's :class:`~privdist.runtime.rng.AgentStreams` (row ``i`` drawn from agent
``agents[i]``'s own stream, STYLE #3) or, for a single block drawn from one generator, a ``numpy.random.Generator``.
Draw order per agent is that of the samplers of :mod:`privdist.privacy.samplers`, so a mechanism called once per
release draws exactly what the algorithms drew before they used mechanisms (bit-identical transcripts).
"""

from __future__ import annotations

import abc
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._checks import check_nonnegative, check_positive
from ..errors import ShapeMismatchError, UnknownNameError, ValidationError
from .release import Release, gaussian_release, non_private_release, pure_release
from .samplers import gamma_norm

__all__ = ["Mechanism", "GaussianMechanism", "LaplaceMechanism", "GammaNormMechanism", "Identity",
           "mechanism_from_dict", "MECHANISM_KINDS"]


def _level(value, name: str, *, positive: bool) -> float | tuple[float, ...]:
    """A scalar or per-agent tuple of noise levels, validated (named errors)."""
    check = check_positive if positive else check_nonnegative
    if isinstance(value, (list, tuple, np.ndarray)):
        levels = tuple(float(check(v, f"{name}[{i}]")) for i, v in enumerate(np.asarray(value, dtype=object)))
        if not levels:
            raise ValidationError(f"{name} needs at least one value per agent, got an empty sequence")
        return levels
    return float(check(value, name))


def _per_agent(level, agents: np.ndarray) -> np.ndarray:
    """The levels of a block's agents, shape (B,)."""
    if isinstance(level, tuple):
        if agents.size and int(agents.max()) >= len(level):
            raise ShapeMismatchError(f"a per-agent noise level has {len(level)} entries but agent "
                                     f"{int(agents.max())} released")
        return np.asarray(level, dtype=float)[agents]
    return np.full(agents.shape, float(level))


def _agents(rng, n: int) -> np.ndarray:
    agents = getattr(rng, "agents", None)
    return np.arange(n) if agents is None else np.asarray(agents, dtype=np.int64)


def _rows(sensitivity, n: int) -> np.ndarray:
    """Sensitivity per row of the block, shape (n,), validated (finite, >= 0)."""
    s = np.asarray(sensitivity, dtype=float)
    if s.ndim == 0:
        s = np.full(n, float(s))
    elif s.shape != (n,):
        s = s.reshape(-1)
        if s.shape != (n,):
            raise ShapeMismatchError(f"sensitivity must be a scalar or one value per agent ({n}), got shape "
                                     f"{np.shape(sensitivity)}")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValidationError(f"sensitivity must be finite and >= 0, got {s.tolist()}")
    return s


def _draw(rng, shape: tuple[int, ...], n: int, fn) -> np.ndarray:
    """``fn(generator, i)`` per agent row (AgentStreams) or ``n`` rows from one Generator."""
    if isinstance(rng, np.random.Generator):
        return np.stack([fn(rng, i) for i in range(n)]) if n else np.zeros((0, *shape))
    return rng.draw(fn)


def _expand(level: np.ndarray, ndim: int) -> np.ndarray:
    return level.reshape(-1, *([1] * (ndim - 1)))


#: Mechanism kinds by the name :meth:`Mechanism.to_dict` records (every subclass with a ``kind`` registers itself).
MECHANISM_KINDS: dict[str, type] = {}


class Mechanism(abc.ABC):
    """A noise mechanism: :meth:`privatize` draws, :meth:`releases` declares, from the same parameters."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.kind:
            MECHANISM_KINDS[cls.kind] = cls

    @property
    def private(self) -> bool:
        """Whether the mechanism adds noise (``False`` only for :class:`Identity`)."""
        return True

    @abc.abstractmethod
    def privatize(self, values: np.ndarray, sensitivity, rng) -> np.ndarray:
        """``values`` (B, ...) of a block of agents plus noise calibrated to ``sensitivity`` (scalar or (B,))."""

    @abc.abstractmethod
    def releases(self, agents, uses: int = 1) -> list[Release]:
        """The release each agent of ``agents`` (global ids) declares for ``uses`` calls of :meth:`privatize`
        composed into one message (e.g. l-AADMM's ``l`` noisy inner steps per round)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (recorded with results)."""
        out = {"kind": self.kind}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


def _check_uses(uses) -> int:
    if type(uses) is not int or uses < 1:
        raise ValidationError(f"uses must be an int >= 1, got {uses!r}")
    return uses


@dataclass(frozen=True)
class GaussianMechanism(Mechanism):
    """``v + N(0, (z Delta_2)^2 I)`` per agent (spec §1.2).

    Args:
        noise_multiplier: ``z = sigma / Delta_2`` (> 0), or one per agent (tuple indexed by agent id).
        epsilon: the per-release epsilon the source paper states (optional; filled in from ``delta`` with the
            classical bound ``sqrt(C log(1.25/delta)) / z`` when omitted).
        delta: the per-release delta the paper states (optional).
        composition: the paper formula that composes the releases (``"dzoa"``: S1(25), C = 2.1; ``"moments"``:
            spec §1.3-2, C = 2; ``None``: none).
        reason: set when privdist does not enforce what the sensitivity assumes: the releases are then the
            paper's claim only (guaranteed epsilon = inf).
    """

    noise_multiplier: float | tuple[float, ...]
    epsilon: float | tuple[float, ...] | None = None
    delta: float | None = None
    composition: str | None = "moments"
    reason: str | None = None
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier", _level(self.noise_multiplier, "noise_multiplier", positive=True))
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", _level(self.epsilon, "epsilon", positive=True))
        gaussian_release(1.0, None, self.delta, self.composition, reason=self.reason)  # validates delta, names

    def privatize(self, values, sensitivity, rng):
        values = np.asarray(values, dtype=float)
        n, shape = values.shape[0], values.shape[1:]
        sigma = _rows(sensitivity, n) * _per_agent(self.noise_multiplier, _agents(rng, n))
        noise = _draw(rng, shape, n, lambda g, i: g.standard_normal(shape))
        return values + noise * _expand(sigma, noise.ndim)

    def releases(self, agents, uses: int = 1):
        uses = _check_uses(uses)
        agents = np.asarray(agents, dtype=np.int64)
        z = _per_agent(self.noise_multiplier, agents)
        eps = None if self.epsilon is None or uses > 1 else _per_agent(self.epsilon, agents)
        root = math.sqrt(uses)  # ``uses`` Gaussians of multiplier z compose exactly to one of z / sqrt(uses)
        return [gaussian_release(float(z[i]) / root if uses > 1 else float(z[i]),
                                 None if eps is None else float(eps[i]), self.delta, self.composition,
                                 reason=self.reason) for i in range(len(agents))]


@dataclass(frozen=True)
class LaplaceMechanism(Mechanism):
    """``v + Lap(b Delta_1)`` i.i.d. per coordinate (spec §1.2): pure ``1/b``-DP per release, declared as generic
    pure DP (:func:`~privdist.privacy.release.pure_release`; the module docstring says why not as a 1-D Laplace).

    Args:
        noise_multiplier: ``b = scale / Delta_1`` (> 0), or one per agent (tuple indexed by agent id).
        composition: paper formula (default ``"basic"``, S4 Thm 1, spec §1.3-4).
        reason: claim-only reason (see :class:`GaussianMechanism`).
    """

    noise_multiplier: float | tuple[float, ...]
    composition: str | None = "basic"
    reason: str | None = None
    kind: ClassVar[str] = "laplace"

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier", _level(self.noise_multiplier, "noise_multiplier", positive=True))
        pure_release(1.0, self.composition, reason=self.reason)  # validates the composition and reason

    def privatize(self, values, sensitivity, rng):
        values = np.asarray(values, dtype=float)
        n, shape = values.shape[0], values.shape[1:]
        scale = _rows(sensitivity, n) * _per_agent(self.noise_multiplier, _agents(rng, n))
        noise = _draw(rng, shape, n, lambda g, i: g.laplace(0.0, 1.0, shape))
        return values + noise * _expand(scale, noise.ndim)

    def releases(self, agents, uses: int = 1):
        uses = _check_uses(uses)
        agents = np.asarray(agents, dtype=np.int64)
        b = _per_agent(self.noise_multiplier, agents)
        return [pure_release(1.0 / float(v), self.composition, uses=uses, reason=self.reason) for v in b]


@dataclass(frozen=True)
class GammaNormMechanism(Mechanism):
    """``v + w``, ``p(w) ~ exp(-epsilon ||w||_2 / Delta_2)`` (spec §1.2, "gamma-norm" noise of §6.3-§6.5).

    The direction of ``w`` is uniform on the sphere and ``||w|| ~ Gamma(dim, Delta_2 / epsilon)``; one use is pure
    ``epsilon``-DP for an l2 sensitivity ``Delta_2``. Declared as generic pure ``epsilon``-DP, binary randomized
    response (:func:`~privdist.privacy.release.pure_release`; dp-accounting has no Gamma-norm event, and the pair
    of pure DP dominates it, Kairouz, Oh & Viswanath 2015).

    Args:
        epsilon: the pure epsilon per use (> 0), or one per agent (tuple indexed by agent id).
        composition: paper formula (default ``"basic"``).
        reason: claim-only reason (see :class:`GaussianMechanism`).
    """

    epsilon: float | tuple[float, ...]
    composition: str | None = "basic"
    reason: str | None = None
    kind: ClassVar[str] = "gamma_norm"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _level(self.epsilon, "epsilon", positive=True))
        pure_release(1.0, self.composition, reason=self.reason)  # validates the composition and reason

    def privatize(self, values, sensitivity, rng):
        values = np.asarray(values, dtype=float)
        return self._add_gamma_norm(values, lambda n: _per_agent(self.epsilon, _agents(rng, n)), sensitivity, rng)

    @staticmethod
    def _add_gamma_norm(values: np.ndarray, rate_of, sensitivity, rng) -> np.ndarray:
        """``values`` (B, dim) plus one vector per row with density ``exp(-rate_k ||w|| / sensitivity_k)``;
        ``rate_of(B)`` gives the rates of the rows."""
        if values.ndim != 2:
            raise ShapeMismatchError(f"gamma-norm noise privatizes one vector per agent, got shape {values.shape}")
        n, dim = values.shape
        sens = _rows(sensitivity, n)
        if np.any(sens <= 0):
            raise ValidationError("gamma-norm noise needs a sensitivity > 0 for every agent")
        zeta = rate_of(n) / sens
        return values + _draw(rng, (dim,), n, lambda g, i: gamma_norm(g, float(zeta[i]), dim))

    def releases(self, agents, uses: int = 1):
        uses = _check_uses(uses)
        eps = _per_agent(self.epsilon, np.asarray(agents, dtype=np.int64))
        return [pure_release(float(e), self.composition, uses=uses, reason=self.reason) for e in eps]


@dataclass(frozen=True)
class Identity(Mechanism):
    """No noise: the values are released in the clear (epsilon = inf, never 0).

    Args:
        reason: what is released without noise, e.g. ``"dpsgd: iterates sent without noise (not private)"``.
    """

    reason: str = "a data-dependent message released without noise"
    kind: ClassVar[str] = "identity"

    def __post_init__(self):
        non_private_release(self.reason)  # validates the reason

    @property
    def private(self) -> bool:
        return False

    def privatize(self, values, sensitivity, rng):
        return np.asarray(values, dtype=float)

    def releases(self, agents, uses: int = 1):
        _check_uses(uses)
        return [non_private_release(self.reason)] * len(np.asarray(agents).reshape(-1))



def mechanism_from_dict(data: dict) -> Mechanism:
    """Rebuild a mechanism written by :meth:`Mechanism.to_dict`.

    Raises:
        ValidationError: not a dict with a ``kind``; UnknownNameError: an unknown kind.
    """
    if not isinstance(data, dict) or "kind" not in data:
        raise ValidationError(f"a serialised mechanism must be a dict with a 'kind', got {data!r}")
    kind = data["kind"]
    if kind not in MECHANISM_KINDS:
        raise UnknownNameError("mechanism kind", str(kind), list(MECHANISM_KINDS))
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "kind"}
    return MECHANISM_KINDS[kind](**fields)

