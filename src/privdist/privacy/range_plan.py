"""The DP range step's part of the privacy plan (issues 25, 27, 37): what it will release, decided from public facts
before any release, and the mechanism that draws its noise and declares its release.

:func:`plan_range` decides, from the budget, the step's columns, the row count and the parties (all public), how
much of the budget the step spends (``share``, or a larger one of :data:`SHARE_LADDER` for a classifier whose step
would be swamped by its noise), on which columns (all, the target alone, or none: nothing spent) and with which
noise: under local trust each party adds Gaussian noise of multiplier ``z_k`` to its histograms
(:mod:`privdist.privacy.dp_ranges`); under secure aggregation the parties' histograms are summed securely, each
adding a Skellam share of one central noise (``mu = (z D2)^2``, ``D2 = sqrt(2 m)``, ``D1 = 2 m``; each party's
release is the aggregate protected by the ``K - colluding`` honest shares, ``SkellamDpEvent(mu (K - colluding) /
shares, D2, D1)``). :class:`HistogramNoise` is that mechanism: it draws the noise (:meth:`HistogramNoise.privatize`)
and declares the release (:meth:`HistogramNoise.release`) from one object, so the two cannot drift apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .dp_ranges import GRID, noisy_counts, occupied_threshold, range_budget

__all__ = ["RangePlan", "HistogramNoise", "plan_range", "plan_range_vertical", "training_budget", "SHARE_LADDER",
           "secure_noise_std", "swamped"]

#: Larger budget shares a classifier's range step may take when its noise would swamp every count at the requested
#: share (a public decision, :func:`plan_range`).
SHARE_LADDER = (0.2, 0.3, 0.4, 0.5)


@dataclass(frozen=True)
class HistogramNoise:
    """The range step's mechanism for one party: noise on its bin counts ``(m, bins)`` and the release it declares.

    ``kind="gaussian"``: ``counts + N(0, (z sqrt(2 m))^2)`` per bin, declared ``GaussianDpEvent(z)`` (at
    ``delta``); ``kind="skellam"``: integer counts plus the party's share ``Sk(mu / shares)``, ``mu = (z sqrt(2
    m))^2``, declared ``SkellamDpEvent(mu honest / shares, sqrt(2 m), 2 m)``.
    """

    kind: str
    noise_multiplier: float
    width: int
    delta: float | None = None
    shares: int = 1
    honest: int = 1

    @property
    def sigma(self) -> float:
        """``z sqrt(2 m)``: the per-bin noise std of one Gaussian release, or of the secure sum's noise."""
        return float(self.noise_multiplier) * math.sqrt(2.0 * self.width)

    @property
    def variance(self) -> float:
        return self.sigma ** 2

    def privatize(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The party's noisy counts: floats (Gaussian) or the int64 vector it puts into the secure sum."""
        if self.kind == "gaussian":
            return noisy_counts(counts, self.sigma, rng)
        counts = np.asarray(counts).astype(np.int64)
        lam = self.variance / self.shares / 2.0
        return counts + rng.poisson(lam, counts.shape) - rng.poisson(lam, counts.shape)

    def sensitivities(self) -> tuple[float, float]:
        """``(D2, D1)`` of one party's histograms under replace-one neighbours."""
        return math.sqrt(2.0 * self.width), 2.0 * self.width

    def release(self):
        """The :class:`~privdist.privacy.release.Release` each party's ledger records for the step."""
        from .release import Release, gaussian_release
        from .skellam import SkellamDpEvent

        if self.kind == "gaussian":
            return gaussian_release(float(self.noise_multiplier), delta=self.delta, composition="moments")
        d2, d1 = self.sensitivities()
        return Release(SkellamDpEvent(self.variance * self.honest / self.shares, d2, d1))

    def prior(self):
        """The release as a training calibration composes it (dpmm's ``prior``): ``z`` or ``(mu, D2, D1)``."""
        if self.kind == "gaussian":
            return float(self.noise_multiplier)
        return (self.variance, *self.sensitivities())


@dataclass(frozen=True)
class RangePlan:
    """The range step of a plan (module docstring).

    Attributes:
        columns: the names of the columns without public bounds (and ``"<target>"`` for a regressor's target).
        width: columns the step runs on: all, 1 (the target alone) or 0 (not run: nothing released or spent).
        share, requested_share: the budget share spent and the one asked for.
        kind: ``"gaussian"`` (local trust), ``"skellam"`` (secure sum) or None (no noise: a non-private plan).
        noise_multipliers: ``z_k`` per party (one entry under secure aggregation: the central noise).
        delta: the Gaussian releases' delta (None for Skellam and non-private steps).
        epsilon: what the share spends per party (a float, one per party, or None).
        exact: the split composes exactly with training (Gaussian shares of GDP ``mu^2``) or by basic composition.
        shares, honest: secure aggregation: calibrated and honest parties in the sum.
        party_columns: a vertical step: each party's own columns among ``columns`` (an empty list: it spends
            nothing); None for a horizontal step (every party holds every column).
    """

    columns: tuple
    width: int
    share: float
    requested_share: float
    kind: str | None
    noise_multipliers: tuple = ()
    delta: float | None = None
    epsilon: object = None
    exact: bool = True
    shares: int = 1
    honest: int = 1
    party_columns: tuple | None = None

    @property
    def released(self) -> bool:
        """Whether the step makes a noisy release (recorded in the ledger)."""
        return self.kind is not None and self.width > 0 and any(z is not None for z in self.noise_multipliers)

    def mechanism(self, party: int) -> HistogramNoise | None:
        """Party ``party``'s :class:`HistogramNoise` (None: it releases nothing)."""
        if not self.released:
            return None
        if self.kind == "skellam":
            return HistogramNoise("skellam", self.noise_multipliers[0], self.width, None, self.shares, self.honest)
        z = self.noise_multipliers[party]
        if z is None:
            return None
        width = self.width if self.party_columns is None else len(self.party_columns[party])
        return HistogramNoise("gaussian", z, width, self.delta)

    def sum_noise_std(self, parties, n_parties: int) -> float:
        """Public: the per-bin noise std of the summed counts of ``parties`` (the releasing ones) out of
        ``n_parties``: the secure sum's central noise, or the Gaussian releases' added variances."""
        if self.kind == "skellam":
            return secure_noise_std(self.noise_multipliers[0], self.width, n_parties, self.shares)
        return math.sqrt(sum(self.mechanism(k).sigma ** 2 for k in parties))

    def releasing_parties(self, n_parties: int) -> list[int]:
        return [k for k in range(n_parties) if self.mechanism(k) is not None]

    def describe(self) -> dict:
        out = self.to_dict()
        out["released"] = self.released
        return out

    def to_dict(self) -> dict:
        def listed(v):
            return list(v) if isinstance(v, tuple) else v

        return {"columns": list(self.columns), "width": self.width, "share": self.share,
                "requested_share": self.requested_share, "kind": self.kind,
                "noise_multipliers": list(self.noise_multipliers), "delta": self.delta,
                "epsilon": listed(self.epsilon), "exact": self.exact, "shares": self.shares, "honest": self.honest,
                "party_columns": None if self.party_columns is None else [list(c) for c in self.party_columns]}

    @classmethod
    def from_dict(cls, d: dict) -> RangePlan:
        eps = d["epsilon"]
        return cls(tuple(d["columns"]), int(d["width"]), float(d["share"]), float(d["requested_share"]), d["kind"],
                   tuple(d["noise_multipliers"]), d["delta"], tuple(eps) if isinstance(eps, list) else eps,
                   bool(d["exact"]), int(d["shares"]), int(d["honest"]),
                   None if d["party_columns"] is None else tuple(tuple(c) for c in d["party_columns"]))


def secure_noise_std(z: float, m: int, n_parties: int, shares: int) -> float:
    """Public: the noise std per bin of the secure sum when all ``n_parties`` add their shares."""
    return math.sqrt((float(z) * math.sqrt(2.0 * m)) ** 2 * n_parties / shares)


def _threshold(noise_std: float) -> float:
    return occupied_threshold(noise_std, GRID.size - 1)


def swamped(zs, m: int, n_rows: int) -> bool:
    """Would the local step's noise (party ``k`` at ``zs[k]``, ``m`` columns) swamp every possible count?"""
    return n_rows < 2 * _threshold(math.sqrt(sum((float(z) * math.sqrt(2.0 * m)) ** 2 for z in zs)))


def plan_range(columns: tuple, *, epsilon, delta: float, share: float, exact: bool, n_rows: int, n_parties: int,
               secure_shares: int | None, colluding: int, dp_target: bool) -> RangePlan:
    """Public, before any release: the range step of a horizontal fit over ``columns`` (``"<target>"`` last when
    ``dp_target``).

    All columns at the requested ``share`` unless the step's noise would swamp every possible count (``N < 2
    tau_1``, as in :func:`privdist.privacy.dp_ranges.ranges_from_counts`); then, for a classifier, the smallest larger
    share of :data:`SHARE_LADDER` that does not (breast cancer, 455 rows and 30 columns at total epsilon 1: skipped
    at 0.1, accuracy 0.653; run at 0.35, 0.891); for a regressor the target alone at the requested share (less
    sensitivity; with every column at a larger share the target was the column left unestimated: diabetes RMSE 147
    against 79 for the target alone); else none (width 0: nothing is released or spent).

    Args:
        secure_shares: the honest parties each secure sum is calibrated for (secure aggregation with more than one
            party), or None (local Gaussian releases).
    """
    m = len(columns)
    if epsilon is None:
        return RangePlan(tuple(columns), m, float(share), float(share), None)
    secure = secure_shares is not None

    def too_noisy(budget, width: int) -> bool:
        if secure:
            return n_rows < 2 * _threshold(secure_noise_std(budget.z(0), width, n_parties, secure_shares))
        return swamped([budget.z(k) for k in range(n_parties)], width, n_rows)

    ladder = [share] + ([s for s in SHARE_LADDER if s > share] if not dp_target else [])
    chosen = None
    for s in ladder:
        budget = range_budget(epsilon, delta, s, exact)
        if not too_noisy(budget, m):
            chosen, width = budget, m
            break
    if chosen is None:
        chosen = range_budget(epsilon, delta, share, exact)
        width = 1 if dp_target and m > 1 and not too_noisy(chosen, 1) else 0
    if width == 0:
        return RangePlan(tuple(columns), 0, 0.0, float(share), None)
    zs = (chosen.z(0),) if secure else tuple(chosen.z(k) for k in range(n_parties))
    return RangePlan(tuple(columns), width, chosen.share, float(share), "skellam" if secure else "gaussian", zs,
                     None if secure else chosen.range_delta,
                     None if secure else chosen.range_epsilon, chosen.exact,
                     secure_shares if secure else 1, max(1, n_parties - colluding) if secure else 1)


def training_budget(epsilon, delta: float, plan: RangePlan):
    """The training's ``(epsilon, delta)`` after ``plan`` under local trust: the request when nothing is released,
    else the complement of the step's share (:func:`~privdist.privacy.dp_ranges.range_budget`)."""
    if epsilon is None or not plan.released or plan.kind == "skellam":
        return epsilon, float(delta)
    budget = range_budget(epsilon, delta, plan.share, plan.exact)
    return budget.train_epsilon, budget.train_delta


def plan_range_vertical(columns: tuple, party_columns: tuple, *, epsilon, delta: float, share: float,
                        n_rows: int) -> tuple[RangePlan, object]:
    """Public, before any release: the range step of a vertical fit and the training budget per party.

    Party ``m`` runs the step on its own columns without public bounds (``party_columns[m]``, all rows): one Gaussian
    release of sensitivity ``sqrt(2 d_m)`` at ``share`` of its budget (exact split: ADMM sharing is Gaussian), unless
    it has no such column or the noise would swamp every count (then it releases nothing and trains on its whole
    budget). Returns ``(plan, training epsilon)``: a float when every party trains on the same, else one per party.
    """
    if epsilon is None:
        return RangePlan(tuple(columns), len(columns), float(share), float(share), None,
                         party_columns=tuple(tuple(c) for c in party_columns)), None
    budget = range_budget(epsilon, delta, share, True)
    zs, train = [], []
    for m, own in enumerate(party_columns):
        eps_m = epsilon[m] if isinstance(epsilon, (list, tuple)) else epsilon
        if not own or swamped([budget.z(m)], len(own), n_rows):
            zs.append(None)
            train.append(eps_m)
        else:
            zs.append(budget.z(m))
            train.append(budget.train_epsilon[m] if isinstance(budget.train_epsilon, tuple)
                         else budget.train_epsilon)
    uniform = len(set(train)) == 1 and not isinstance(epsilon, (list, tuple))
    plan = RangePlan(tuple(columns), len(columns), float(share), float(share), "gaussian", tuple(zs),
                     budget.range_delta, budget.range_epsilon, True,
                     party_columns=tuple(tuple(c) for c in party_columns))
    return plan, (train[0] if uniform else tuple(float(e) for e in train))
