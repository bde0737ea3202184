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
           "secure_noise_std", "swamped", "TARGET_WEIGHT", "squared_sensitivity"]

#: Larger budget shares a range step may take when its noise would swamp every count at the requested share (a
#: public decision, :func:`plan_range`).
SHARE_LADDER = (0.2, 0.3, 0.4, 0.5)
#: Weight of a regressor's target histogram in a step escalated up :data:`SHARE_LADDER` (issue 39): its counts are
#: multiplied by it before the noise, so the target's noise relative to its counts is ``1 / TARGET_WEIGHT`` of a
#: feature's, for a sensitivity ``sqrt(2 (m - 1 + TARGET_WEIGHT^2))`` instead of ``sqrt(2 m)``. A log-scale target
#: spreads over more grid bins than a feature (diabetes: about 9 bins against 3 to 5). Chosen on the detection rate
#: alone, on the diabetes benchmark's training rows (no model fitted, no test row read), 40 noise draws of the secure
#: step at share 0.4: the target found in 0.30 of the draws unweighted and 1.00 at weight 2, the features in 0.99
#: and 0.96 (at weight 3 the features drop to 0.86, at weight 4 to 0).
TARGET_WEIGHT = 2


def squared_sensitivity(width: int, weight: int = 1) -> tuple[float, float]:
    """``(D2^2, D1)`` of one party's ``width`` histograms under replace-one neighbours when the last one's counts are
    multiplied by ``weight``: one row moves one count by -1 and another by +1 in each histogram."""
    if weight == 1 or width == 0:
        return 2.0 * width, 2.0 * width
    return 2.0 * (width - 1 + weight * weight), 2.0 * (width - 1 + weight)


@dataclass(frozen=True)
class HistogramNoise:
    """The range step's mechanism for one party: noise on its bin counts ``(m, bins)`` and the release it declares.

    ``kind="gaussian"``: ``counts + N(0, (z sqrt(2 m))^2)`` per bin, declared ``GaussianDpEvent(z)`` (at
    ``delta``); ``kind="skellam"``: integer counts plus the party's share ``Sk(mu / shares)``, ``mu = (z sqrt(2
    m))^2``, declared ``SkellamDpEvent(mu honest / shares, sqrt(2 m), 2 m)``. With ``target_weight = a > 1`` the
    last histogram's counts are multiplied by ``a`` first and ``sqrt(2 m)``, ``2 m`` become the weighted
    sensitivities of :func:`squared_sensitivity`.
    """

    kind: str
    noise_multiplier: float
    width: int
    delta: float | None = None
    shares: int = 1
    honest: int = 1
    target_weight: int = 1

    @property
    def sigma(self) -> float:
        """``z D2`` (``D2 = sqrt(2 m)`` unweighted): the per-bin noise std of one Gaussian release, or of the
        secure sum's noise."""
        return float(self.noise_multiplier) * math.sqrt(squared_sensitivity(self.width, self.target_weight)[0])

    @property
    def variance(self) -> float:
        return self.sigma ** 2

    def privatize(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The party's noisy counts: floats (Gaussian) or the int64 vector it puts into the secure sum (``counts``:
        (width, bins), or flattened for the secure sum; the last histogram weighted by ``target_weight``)."""
        if self.target_weight != 1:
            shape = np.shape(counts)
            counts = np.array(counts).reshape(self.width, -1)
            counts[-1] = counts[-1] * self.target_weight
            counts = counts.reshape(shape)
        if self.kind == "gaussian":
            return noisy_counts(counts, self.sigma, rng)
        counts = np.asarray(counts).astype(np.int64)
        lam = self.variance / self.shares / 2.0
        return counts + rng.poisson(lam, counts.shape) - rng.poisson(lam, counts.shape)

    def sensitivities(self) -> tuple[float, float]:
        """``(D2, D1)`` of one party's histograms under replace-one neighbours (:func:`squared_sensitivity`)."""
        d2sq, d1 = squared_sensitivity(self.width, self.target_weight)
        return math.sqrt(d2sq), d1

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
        target_weight: the weight of the last histogram (a regressor's target, :data:`TARGET_WEIGHT`); 1: none.
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
    target_weight: int = 1

    @property
    def released(self) -> bool:
        """Whether the step makes a noisy release (recorded in the ledger)."""
        return self.kind is not None and self.width > 0 and any(z is not None for z in self.noise_multipliers)

    def mechanism(self, party: int) -> HistogramNoise | None:
        """Party ``party``'s :class:`HistogramNoise` (None: it releases nothing)."""
        if not self.released:
            return None
        if self.kind == "skellam":
            return HistogramNoise("skellam", self.noise_multipliers[0], self.width, None, self.shares, self.honest,
                                  self.target_weight)
        z = self.noise_multipliers[party]
        if z is None:
            return None
        width = self.width if self.party_columns is None else len(self.party_columns[party])
        return HistogramNoise("gaussian", z, width, self.delta, target_weight=self.target_weight)

    def sum_noise_std(self, parties, n_parties: int) -> float:
        """Public: the per-bin noise std of the summed counts of ``parties`` (the releasing ones) out of
        ``n_parties``: the secure sum's central noise, or the Gaussian releases' added variances."""
        if self.kind == "skellam":
            return secure_noise_std(self.noise_multipliers[0], self.width, n_parties, self.shares,
                                    self.target_weight)
        return math.sqrt(sum(self.mechanism(k).sigma ** 2 for k in parties))

    def bounds_from(self, total: np.ndarray, n_rows: int, noise_std: float) -> tuple[np.ndarray, np.ndarray]:
        """Post-processing of the summed noisy counts ``total`` (width, bins) into ``(bounds, fallback)``
        (:func:`~privdist.privacy.dp_ranges.ranges_from_counts`), the weighted last histogram divided back by
        its weight (its per-bin noise std then ``noise_std / target_weight``). A regressor's target (``"<target>"``,
        the last column) must pass the sanity rule :func:`~privdist.privacy.dp_ranges.holds_rows`: a false target
        range is mapped back into every prediction (issue 39: bounds (-2^37, -2^36), RMSE 7.8e10)."""
        from .dp_ranges import ranges_from_counts

        total = np.atleast_2d(np.asarray(total, dtype=float))
        a = self.target_weight
        target = np.zeros(total.shape[0], dtype=bool)
        if self.columns and self.columns[-1] == "<target>" and self.party_columns is None:
            target[-1] = True  # a regressor's target: its span must hold half the rows (holds_rows)
        if a == 1:
            return ranges_from_counts(total, n_rows, noise_std, check_rows=target)
        b1, f1 = ranges_from_counts(total[:-1], n_rows, noise_std)
        b2, f2 = ranges_from_counts(total[-1:] / a, n_rows, noise_std / a, check_rows=True)
        return np.column_stack([b1, b2]), np.r_[f1, f2]

    @property
    def sensitivity(self) -> float:
        """``D2`` of one party's release (the record's ``sensitivity``)."""
        return math.sqrt(squared_sensitivity(self.width, self.target_weight)[0])

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
                "party_columns": None if self.party_columns is None else [list(c) for c in self.party_columns],
                "target_weight": self.target_weight}

    @classmethod
    def from_dict(cls, d: dict) -> RangePlan:
        eps = d["epsilon"]
        return cls(tuple(d["columns"]), int(d["width"]), float(d["share"]), float(d["requested_share"]), d["kind"],
                   tuple(d["noise_multipliers"]), d["delta"], tuple(eps) if isinstance(eps, list) else eps,
                   bool(d["exact"]), int(d["shares"]), int(d["honest"]),
                   None if d["party_columns"] is None else tuple(tuple(c) for c in d["party_columns"]),
                   int(d.get("target_weight", 1)))


def secure_noise_std(z: float, m: int, n_parties: int, shares: int, weight: int = 1) -> float:
    """Public: the noise std per bin of the secure sum when all ``n_parties`` add their shares."""
    return math.sqrt(float(z) ** 2 * squared_sensitivity(m, weight)[0] * n_parties / shares)


def _threshold(noise_std: float) -> float:
    return occupied_threshold(noise_std, GRID.size - 1)


def swamped(zs, m: int, n_rows: int, weight: int = 1) -> bool:
    """Would the local step's noise (party ``k`` at ``zs[k]``, ``m`` columns) swamp every possible count?"""
    d2sq = squared_sensitivity(m, weight)[0]
    return n_rows < 2 * _threshold(math.sqrt(sum(float(z) ** 2 * d2sq for z in zs)))


def plan_range(columns: tuple, *, epsilon, delta: float, share: float, exact: bool, n_rows: int, n_parties: int,
               secure_shares: int | None, colluding: int, dp_target: bool) -> RangePlan:
    """Public, before any release: the range step of a horizontal fit over ``columns`` (``"<target>"`` last when
    ``dp_target``).

    All columns at the requested ``share`` unless the step's noise would swamp every possible count (``N < 2
    tau_1``, as in :func:`privdist.privacy.dp_ranges.ranges_from_counts`); then the smallest larger share of
    :data:`SHARE_LADDER` that does not (breast cancer, 455 rows and 30 columns at total epsilon 1: skipped at 0.1,
    accuracy 0.653; run at 0.35, 0.891). A regressor's target is then weighted by :data:`TARGET_WEIGHT` (issue 39:
    unweighted, the target was the column left unestimated at a larger share, diabetes RMSE 147); when no share of
    the ladder is free of swamping, a regressor runs the step on the target alone at the requested share (the
    features kept in [-1, 1]); else none (width 0: nothing is released or spent).

    Args:
        secure_shares: the honest parties each secure sum is calibrated for (secure aggregation with more than one
            party), or None (local Gaussian releases).
    """
    m = len(columns)
    if epsilon is None:
        return RangePlan(tuple(columns), m, float(share), float(share), None)
    secure = secure_shares is not None

    def too_noisy(budget, width: int, weight: int = 1) -> bool:
        if secure:
            return n_rows < 2 * _threshold(secure_noise_std(budget.z(0), width, n_parties, secure_shares, weight))
        return swamped([budget.z(k) for k in range(n_parties)], width, n_rows, weight)

    chosen, weight = None, 1
    budget = range_budget(epsilon, delta, share, exact)
    if not too_noisy(budget, m):  # the requested share: unchanged, unweighted
        chosen, width = budget, m
    else:
        weight = TARGET_WEIGHT if dp_target and m > 1 else 1
        for s in [s for s in SHARE_LADDER if s > share]:
            budget = range_budget(epsilon, delta, s, exact)
            if not too_noisy(budget, m, weight):
                chosen, width = budget, m
                break
    if chosen is None:
        weight = 1
        chosen = range_budget(epsilon, delta, share, exact)
        width = 1 if dp_target and m > 1 and not too_noisy(chosen, 1) else 0
    if width == 0:
        return RangePlan(tuple(columns), 0, 0.0, float(share), None)
    zs = (chosen.z(0),) if secure else tuple(chosen.z(k) for k in range(n_parties))
    return RangePlan(tuple(columns), width, chosen.share, float(share), "skellam" if secure else "gaussian", zs,
                     None if secure else chosen.range_delta,
                     None if secure else chosen.range_epsilon, chosen.exact,
                     secure_shares if secure else 1, max(1, n_parties - colluding) if secure else 1,
                     target_weight=weight if width == m else 1)


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
