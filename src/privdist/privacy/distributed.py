"""Distributed discrete noise for a secure sum (issue 27): each party adds a Skellam share, the sum carries the total.

:class:`SkellamMechanism` turns one party's real vector into the integer vector it puts into a secure sum
(:mod:`privdist.runtime.secure.secagg`):

1. scale by ``gamma = resolution sqrt(d) / Delta`` (``Delta`` the l2 sensitivity the caller's clipping enforces), so
   the scaled sensitivity is ``resolution sqrt(d)`` and randomized rounding adds ``sqrt(d)`` to it, i.e. a fraction
   ``1 / resolution`` (:func:`~privdist.privacy.skellam.rounded_sensitivities`);
2. randomized rounding ``floor(gamma v + U)``, ``U`` uniform from the party's own stream;
3. plus a share ``Sk(mu / shares)`` of the total noise ``Sk(mu)``, ``mu = (z D2)^2 / uses`` (``z`` the noise
   multiplier, ``D2`` the integer l2 sensitivity, ``uses`` the budget units the release spends), drawn from the
   party's own stream (rooted at its own secret key in secure mode). ``shares`` honest parties' shares sum to
   exactly ``Sk(mu)`` (Agarwal, Kairouz & Liu 2021: Skellam is closed under sums).

The coordinator receives only the sum, divides it by ``gamma`` (:meth:`SkellamMechanism.decode`) and so holds the sum
of the real vectors plus noise of std ``z Delta (1 + 1/resolution) / sqrt(uses)`` per coordinate: central-DP noise,
where local DP leaves ``sqrt(K)`` times as much.

**Declared release** (:meth:`SkellamMechanism.releases`). Party ``k``'s release is the aggregate. Its privacy rests on
the shares nobody can strip from it: its own and those of the other honest parties in the sum. With ``n`` parties in
the sum of which at most ``c`` collude with the aggregator (they know their own shares and subtract them), at least
``n - c`` shares remain and the release is ``SkellamDpEvent(mu (n - c) / shares, D2, D1)``: the guarantee is
recomputed each round from the parties that took part (a dropout lowers it; fewer dropouts than tolerated raise it).

**Calibration** (:func:`calibrate_skellam`): the smallest ``z`` whose releases over the run, composed by the
accountant the report uses (:func:`~privdist.privacy.accountants.agent_epsilon`, RDP) with any Gaussian release made
before the run (the DP range step), meet ``(epsilon, delta)`` when ``shares`` honest parties take part. At fixed ``z`` the bound only grows as the dimension shrinks
(``D1 / D2^2 = 1 / (resolution + 1)`` and ``D2 = (resolution + 1) sqrt(d)``), so ``z`` is calibrated at ``d = 1`` and
holds for every dimension; the declared releases use the real ``d``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._checks import check_int, check_positive, check_probability
from ..errors import CalibrationError, ShapeMismatchError, ValidationError
from .mechanisms import Mechanism, _agents, _draw
from .release import Release

__all__ = ["SkellamMechanism", "RESOLUTION", "calibrate_skellam", "check_shares", "check_prior", "prior_release"]

#: Default scaled sensitivity per ``sqrt(d)``: randomized rounding then adds 1 % to the l2 sensitivity.
RESOLUTION = 100.0


@dataclass(frozen=True)
class SkellamMechanism(Mechanism):
    """Randomized rounding plus a Skellam share, for a secure sum (see the module docstring).

    Args:
        noise_multiplier: ``z``: std of the aggregate's noise over the integer l2 sensitivity, when the calibrated
            number of honest parties take part.
        resolution: scaled l2 sensitivity per ``sqrt(d)`` (>= 1; rounding adds ``1 / resolution`` to it).
    """

    noise_multiplier: float
    resolution: float = RESOLUTION
    kind: ClassVar[str] = "skellam"

    def __post_init__(self):
        if isinstance(self.noise_multiplier, (list, tuple, np.ndarray)):
            raise ValidationError("distributed Skellam noise has one level for the whole sum: per-party noise "
                                  "multipliers (per-party budgets) are not supported with secure aggregation")
        object.__setattr__(self, "noise_multiplier", float(check_positive(self.noise_multiplier,
                                                                          "noise_multiplier")))
        if not (isinstance(self.resolution, (int, float)) and math.isfinite(self.resolution)
                and self.resolution >= 1):
            raise ValidationError(f"resolution must be a number >= 1, got {self.resolution!r}")
        object.__setattr__(self, "resolution", float(self.resolution))

    # ------------------------------------------------------------------ encoding
    def scale(self, sensitivity: float, dim: int) -> float:
        """``gamma = resolution sqrt(dim) / sensitivity``: the scaled l2 sensitivity is ``resolution sqrt(dim)``."""
        return self.resolution * math.sqrt(check_int(dim, "dim", 1)) / check_positive(sensitivity, "sensitivity")

    def sensitivities(self, dim: int) -> tuple[float, float]:
        """``(D2, D1)`` of the rounded integer vector (:func:`~privdist.privacy.skellam.rounded_sensitivities`)."""
        root = math.sqrt(check_int(dim, "dim", 1))
        d2 = (self.resolution + 1.0) * root
        return d2, min(root * d2, d2 * d2)

    def variance(self, dim: int, uses: int = 1) -> float:
        """``mu = (z D2)^2 / uses``: the aggregate noise's variance per coordinate (calibrated honest parties)."""
        return (self.noise_multiplier * self.sensitivities(dim)[0]) ** 2 / check_int(uses, "uses", 1)

    def privatize(self, values, sensitivity, rng, *, shares: int = 1, uses: int = 1) -> np.ndarray:
        """Each row of ``values`` (B, d) as the integer vector its party puts into the secure sum: scaled by
        :meth:`scale`, randomly rounded, plus the party's share ``Sk(variance / shares)``. Returns int64 (B, d).

        Args:
            values: real vectors, one per agent of the block (rows clipped by the caller to ``sensitivity``).
            sensitivity: the l2 sensitivity the caller's clipping enforces (one scalar for the block).
            rng: the step's :class:`~privdist.runtime.rng.AgentStreams` (row ``i`` from agent ``i``'s stream).
            shares: honest parties the calibration counts on (each adds ``1 / shares`` of the variance).
            uses: budget units of this release (its variance is divided by ``uses``).
        """
        values = np.asarray(values, dtype=float)
        if values.ndim != 2:
            raise ShapeMismatchError(f"Skellam shares privatize one vector per agent, got shape {values.shape}")
        n, dim = values.shape
        if np.ndim(sensitivity) != 0:
            raise ShapeMismatchError("Skellam shares take one sensitivity for the block (the scale is public)")
        scaled = values * self.scale(float(sensitivity), dim)
        lam = self.variance(dim, uses) / check_int(shares, "shares", 1) / 2.0
        _agents(rng, n)  # validates the streams' block
        return _draw(rng, (dim,), n, lambda g, i: np.floor(scaled[i] + g.random(dim)).astype(np.int64)
                     + g.poisson(lam, dim) - g.poisson(lam, dim)).astype(np.int64)

    def decode(self, total, sensitivity: float) -> np.ndarray:
        """The summed integer vector (last axis ``d``) back in the values' units: ``total / gamma``."""
        total = np.asarray(total)
        return total.astype(float) / self.scale(float(sensitivity), total.shape[-1])

    def noise_std(self, sensitivity: float, dim: int, uses: int = 1) -> float:
        """Std per coordinate of the decoded aggregate's noise (calibrated honest parties), in the values' units."""
        return math.sqrt(self.variance(dim, uses)) / self.scale(sensitivity, dim)

    # ------------------------------------------------------------------ declaration
    def releases(self, agents, uses: int = 1, *, dim: int = 1, honest: int = 1, shares: int = 1) -> list[Release]:
        """The release of each agent of ``agents`` in a secure sum of ``dim`` coordinates that ``honest`` parties'
        shares (of ``shares`` calibrated) reach at least: ``SkellamDpEvent(variance * honest / shares, D2, D1)``."""
        from .skellam import SkellamDpEvent

        honest, shares = check_int(honest, "honest", 1), check_int(shares, "shares", 1)
        d2, d1 = self.sensitivities(dim)
        release = Release(SkellamDpEvent(self.variance(dim, uses) * honest / shares, d2, d1))
        return [release] * len(np.asarray(agents).reshape(-1))


@functools.lru_cache(maxsize=256)
def calibrate_skellam(epsilon: float, delta: float, releases: tuple[tuple[int, int], ...],
                      resolution: float = RESOLUTION, prior: tuple[float, ...] = ()) -> float:
    """The smallest noise multiplier (to relative 1e-6, never rounded down) whose releases, composed with the
    ``prior`` ones, meet ``(epsilon, delta)``.

    Args:
        epsilon, delta: each party's total budget.
        releases: ``(count, uses)`` pairs: ``count`` releases of ``uses`` budget units each over the run.
        resolution: the mechanism's resolution.
        prior: releases each party made before (e.g. the DP range step), which the budget also covers: the
            composition of all of them is calibrated, exactly as the report composes it (:func:`check_prior`).

    Raises:
        CalibrationError: no noise meets the target (e.g. the prior releases alone spend it).
    """
    from .accountants import agent_epsilon

    before = [(prior_release(p), 1) for p in check_prior(prior)]

    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    if not releases:
        raise ValidationError("calibrate_skellam needs at least one (count, uses) release")

    def eps(z: float) -> float:
        mech = SkellamMechanism(z, resolution)
        return agent_epsilon(before + [(mech.releases([0], uses=u)[0], c) for c, u in releases], delta, "rdp")

    hi = 1.0
    while eps(hi) > epsilon:
        hi *= 2.0
        if hi > 1e12:
            raise CalibrationError(f"no Skellam noise meets epsilon={epsilon} at delta={delta}")
    lo = hi / 2.0
    while eps(lo) <= epsilon and lo > 1e-9:
        hi, lo = lo, lo / 2.0
    while hi / lo > 1.0 + 1e-6:
        mid = math.sqrt(hi * lo)
        hi, lo = (mid, lo) if eps(mid) <= epsilon else (hi, mid)
    return hi


def check_shares(n_parties: int, colluding: int, dropout: int) -> int:
    """Honest parties a secure sum counts on: ``n_parties - colluding - dropout`` (at least 1).

    Raises:
        ValidationError: the tolerances leave no honest party.
    """
    n_parties = check_int(n_parties, "n_parties", 1)
    colluding, dropout = check_int(colluding, "colluding", 0), check_int(dropout, "dropout", 0)
    shares = n_parties - colluding - dropout
    if shares < 1:
        raise ValidationError(f"{n_parties} parties with {colluding} colluding and {dropout} dropping out leave no "
                              "honest party whose noise share protects the sum")
    return shares


def check_prior(prior) -> tuple:
    """Releases made before a run, as the hashable tuple a calibration takes: a number is the noise multiplier
    ``z`` of a Gaussian release; a triple ``(variance, l2, l1)`` a Skellam release (a securely aggregated DP range
    step, :mod:`privdist.privacy.range_plan`).

    Raises:
        ValidationError: anything else (a non-positive or non-finite entry).
    """
    out = []
    for p in tuple(prior):
        if isinstance(p, (tuple, list)) and len(p) == 3:
            out.append(tuple(float(check_positive(v, "prior Skellam release")) for v in p))
        elif isinstance(p, (int, float)) and not isinstance(p, bool):
            out.append(float(check_positive(p, "prior noise multiplier")))
        else:
            raise ValidationError(f"a prior release is a Gaussian noise multiplier or a Skellam (variance, l2, l1) "
                                  f"triple, got {p!r}")
    return tuple(out)


def prior_release(p) -> Release:
    """The :class:`~privdist.privacy.release.Release` of one :func:`check_prior` entry."""
    from .release import gaussian_release
    from .skellam import SkellamDpEvent

    if isinstance(p, tuple):
        return Release(SkellamDpEvent(*p))
    return gaussian_release(float(p))
