"""The estimators' DP range step (``scale="dp"``, issue 25): budget share, noise streams, bounds, ledger.

:func:`fit_ranges` fits a :class:`privdist.data.bounds.Preprocessor` with ``scale="dp"``: the columns without public
bounds (and, for a regressor without public ``target_bounds``, the target as one more column) go through ONE
Gaussian release per party (:func:`privdist.privacy.dp_ranges.dp_ranges`) that spends ``range_share`` of the
party's total budget. Its :class:`RangeStep` gives the training's remaining ``(epsilon, delta)`` and records the
range release in the run's ledger (:meth:`RangeStep.record`) before the privacy report is computed, so the printed
guarantee is the composition of both steps: exactly the requested total for Gaussian training algorithms
(:data:`privdist.privacy.dp_ranges.GAUSSIAN_ALGORITHMS`, shares of GDP ``mu^2``), at most the total otherwise
(basic composition, ``epsilon`` and ``delta`` split linearly; the record says which).

The noise of party ``k`` comes from :func:`privdist.runtime.rng.step_generator` ``(seed, "ranges", k, secure)``: a
fresh OS-entropy key in secure mode (never recorded), a seeded stream of its own in research mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ValidationError
from .secure_ranges import SecureRanges

__all__ = ["RangeStep", "fit_ranges", "fit_ranges_vertical", "MECHANISM", "SECURE_MECHANISM"]

MECHANISM = ("Gaussian noisy per-column histograms on a public signed log2 grid (bins of ratio sqrt(2), "
             "|x| in 2^-20..2^40), L2 sensitivity sqrt(2 d) under replace-one; summed over parties, thresholded, "
             "1%/99% quantiles of the occupied span snapped outward (privdist.privacy.dp_ranges)")
#: Larger budget shares a classifier's range step may take when its noise would swamp every count at the requested
#: share (a public decision, :func:`_plan`).
SHARE_LADDER = (0.2, 0.3, 0.4, 0.5)
SECURE_MECHANISM = ("the same histograms summed by secure aggregation, each party adding a Skellam share of one "
                    "central noise (L2 sensitivity sqrt(2 d), L1 2 d), thresholded and read as above "
                    "(privdist.learn.secure_ranges)")


@dataclass
class RangeStep:
    """What the range step spent and released.

    Attributes:
        epsilon, delta: the budget left for training (the request itself when no step ran).
        noise_multipliers: per party ``z_k`` of the range release (empty: no release recorded).
        skellam: per party the Skellam ``(variance, l2, l1)`` of a securely aggregated range release
            (:mod:`privdist.learn.secure_ranges`; empty under local trust).
        prior: the range release as the training's calibration composes it (dpmm's ``prior``).
        target: ``(lo, hi)`` the target was mapped from into [-1, 1], or None (target unscaled).
        record: the preprocessing step's record (None when no step ran).
    """

    epsilon: object
    delta: float
    noise_multipliers: dict = field(default_factory=dict)
    delta_range: float | None = None
    target: tuple | None = None
    record: dict | None = None
    skellam: dict = field(default_factory=dict)
    prior: tuple = ()

    def record_releases(self, ledger) -> None:
        """Record party ``k``'s range release in ``ledger`` (before the report): ``GaussianDpEvent(z_k)``, or the
        ``SkellamDpEvent`` of the secure sum."""
        from ..privacy import gaussian_release
        from ..privacy.distributed import prior_release

        for k, z in self.noise_multipliers.items():
            ledger.record(int(k), gaussian_release(float(z), delta=self.delta_range, composition="moments"), 1)
        for k, triple in self.skellam.items():
            ledger.record(int(k), prior_release(triple), 1)

    @property
    def released(self) -> bool:
        """Whether the step made a release (recorded in the ledger)."""
        return bool(self.noise_multipliers or self.skellam)

    def scale_target(self, y: np.ndarray) -> np.ndarray:
        """``y`` mapped from ``target`` into [-1, 1] (clipped); unchanged without a target map."""
        if self.target is None:
            return y
        lo, hi = self.target
        return np.clip(2.0 * (np.asarray(y, dtype=float) - lo) / (hi - lo) - 1.0, -1.0, 1.0)

    def unscale(self, coef: np.ndarray, intercept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coefficients and intercepts of the scaled target mapped back to the target's units:
        ``y = a s + c`` with ``a = (hi - lo) / 2``, ``c = (hi + lo) / 2`` (post-processing of the released model)."""
        if self.target is None:
            return coef, intercept
        lo, hi = self.target
        a, c = (hi - lo) / 2.0, (hi + lo) / 2.0
        return coef * a, intercept * a + c


def _exact(algorithm: str, algorithm_params) -> bool:
    from ..privacy.dp_ranges import GAUSSIAN_ALGORITHMS

    noise = dict(algorithm_params or {}).get("noise", "gaussian")
    return algorithm in GAUSSIAN_ALGORITHMS and noise == "gaussian"


def _check_target_bounds(target_bounds) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in target_bounds)
    except (TypeError, ValueError):
        raise ValidationError(f"target_bounds must be a pair (lo, hi) of public numbers, got {target_bounds!r}") \
            from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValidationError(f"target_bounds must be finite with lo < hi, got {target_bounds!r}")
    return lo, hi


def fit_ranges(pre, X, parties: list[np.ndarray], *, epsilon, delta: float, share: float, algorithm: str,
               algorithm_params=None, seed: int = 0, secure: bool = True, feature_names=None, y=None,
               target_bounds=None, scale_target: bool = False, secure_sum: dict | None = None) -> RangeStep:
    """Fit ``pre`` (any scale; ``"dp"`` runs the step) on ``X``; party ``k`` holds the rows ``parties[k]``.

    Args:
        pre: The :class:`~privdist.data.bounds.Preprocessor` to fit.
        X: All rows (each party's step reads only its own rows ``X[parties[k]]``).
        parties: Row indices of each party (a vertical fit: one entry per party, all rows, and ``X`` that party's
            columns: call once per party).
        epsilon, delta: The party's TOTAL budget (``epsilon`` None: no noise; a tuple: one per party).
        share: Share of the budget the range step spends (in (0, 1)).
        algorithm, algorithm_params: The training algorithm (decides exact or basic composition).
        seed, secure: The fit's seed and noise mode (see the module docstring).
        y, target_bounds, scale_target: A regressor's target: ``target_bounds`` (public) maps it; else with
            ``scale_target`` and ``scale="dp"`` it is one more column of the step.
        secure_sum: ``{"colluding": c, "dropout_tolerance": f}`` under secure aggregation: the parties' histograms
            are summed securely with distributed Skellam noise (:mod:`privdist.learn.secure_ranges`); None: local.

    Raises:
        ValidationError: a bad ``share``/``target_bounds``, or a per-party epsilon of the wrong length.
    """
    from ..privacy.dp_ranges import FALLBACK_BOUNDS, dp_ranges, range_budget
    from ..runtime.rng import step_generator

    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise ValidationError(f"range_share must be in (0, 1), got {share!r}")
    names = None if feature_names is None else [str(n) for n in feature_names]
    cols = pre.dp_columns(X.shape[1], names)
    target = None if target_bounds is None else _check_target_bounds(target_bounds)
    dp_target = scale_target and target is None and pre.scale == "dp" and y is not None
    m = cols.size + (1 if dp_target else 0)
    if m == 0:
        pre.fit(X, names)
        return _public_target(pre, RangeStep(epsilon, float(delta), target=target), target_bounds)
    if isinstance(epsilon, (list, tuple)) and len(epsilon) != len(parties):
        raise ValidationError(f"a per-party epsilon needs one value per party ({len(parties)}), got {len(epsilon)}")
    dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    D = dense[:, cols]
    if dp_target:
        D = np.column_stack([D, np.asarray(y, dtype=float)])
    blocks = [D[idx] for idx in parties]
    if epsilon is None:
        budget, zs = None, None
        rel = dp_ranges(blocks, None, None)
    else:
        K, colluding, shares = len(parties), 0, 1
        secure_step = secure_sum is not None and K > 1  # one central noise, Skellam shares of a secure sum
        if secure_step:
            from ..privacy.distributed import check_shares

            if isinstance(epsilon, (list, tuple)):
                raise ValidationError("secure aggregation adds one noise to the whole sum: per-party budgets (a "
                                      "list of epsilons) are not supported; give one epsilon")
            colluding = int(secure_sum.get("colluding", 0))
            shares = check_shares(K, colluding, int(math.floor(float(secure_sum.get("dropout_tolerance", 0.0)) * K)))
        requested = share
        width, share, budget = _plan(lambda s: range_budget(epsilon, delta, s, _exact(algorithm, algorithm_params)),
                                     share, m, sum(len(p) for p in parties), K, shares, secure_step, dp_target)
        if width == 0:
            return _skipped(pre, X, names, cols, epsilon, delta, share, target_bounds, target, dp_target)
        if width < m:  # the target alone: its scale is what a regression cannot do without
            blocks = [b[:, -1:] for b in blocks]
        if secure_step:
            from .secure_ranges import secure_ranges

            rel = secure_ranges(blocks, budget.z(0), shares=shares, colluding=colluding, seed=seed, secure=secure)
        else:
            zs = [budget.z(k) for k in range(K)]
            rel = dp_ranges(blocks, zs, [step_generator(seed, "ranges", k, secure) for k in range(K)])
    bounds, fallback = rel.bounds, rel.fallback
    if bounds.shape[1] < m:  # the features were left out of a target-only step: they keep the fallback
        bounds = np.column_stack([np.tile(np.array(FALLBACK_BOUNDS)[:, None], (1, m - 1)), bounds])
        fallback = np.r_[np.ones(m - 1, dtype=bool), fallback]
    col_names = [names[j] if names else f"x{j}" for j in cols]
    if dp_target and not fallback[-1]:  # a target without an estimated range stays unscaled
        target = (float(bounds[0, -1]), float(bounds[1, -1]))
    record = {
        "step": "scale_by_dp_ranges", "private": True, "share": float(share),
        "mechanism": SECURE_MECHANISM if isinstance(rel, SecureRanges) else MECHANISM,
        "columns": col_names + (["<target>"] if dp_target else []),
        "bounds": {n: [float(bounds[0, i]), float(bounds[1, i])] for i, n in enumerate(col_names)},
        "fallback": [n for i, n in enumerate(col_names + ["<target>"]) if i < m and fallback[i]],
        "sensitivity": math.sqrt(2.0 * rel.bounds.shape[1]),
    }
    if budget is not None and share != requested:
        record["requested_share"] = float(requested)
        record["share_note"] = (f"at the requested share {requested:g} the step's noise would swamp every count "
                                f"(public: {m} columns, row count, parties); the smallest share of {SHARE_LADDER} "
                                "that does not was spent instead")
    if rel.bounds.shape[1] < m:
        record["target_only"] = ("the step on every column would be swamped by its noise at this row count "
                                 "(public); it ran on the target alone, the features are kept in [-1, 1]")
    if dp_target:
        record["target_bounds"] = None if target is None else list(target)
    if budget is None:
        record.update(noise_multiplier=None, epsilon=None, composition=None,
                      note="no noise: epsilon=None, the whole fit is a non-private baseline; the same grid "
                           "quantiles, read exactly")
        step = RangeStep(None, float(delta), target=target, record=record)
    elif isinstance(rel, SecureRanges):
        from ..privacy.accountants import agent_epsilon
        from ..privacy.distributed import prior_release

        record.update(noise_multiplier=budget.z(0), noise_std=rel.noise_std, skellam_release=list(rel.event),
                      epsilon=agent_epsilon([(prior_release(rel.event), 1)], float(delta), "rdp"),
                      delta=float(delta),
                      composition="exact: the training's Skellam noise is calibrated on the whole budget composed "
                                  "with this release (RDP, privdist.privacy.distributed.calibrate_skellam)",
                      note=f"one secure sum of the parties' histograms with Skellam shares of the noise a "
                           f"{share:g} share of the budget buys centrally; the bounds are DP outputs "
                           "(post-processing); fallback columns get (-1, 1): state public bounds for them")
        step = RangeStep(budget.train_epsilon, budget.train_delta, target=target, record=record,
                         skellam={k: rel.event for k in range(len(parties))}, prior=(rel.prior,))
    else:
        record.update(noise_multiplier=budget.noise_multiplier, epsilon=budget.range_epsilon,
                      delta=budget.range_delta,
                      composition=("exact: Gaussian shares of the GDP mu^2 (privdist.privacy.split), PLD composition "
                                   "of the range release and training is the requested total" if budget.exact else
                                   "basic: epsilon and delta split linearly (training not Gaussian); the accountant "
                                   "reports at most the total"),
                      note=f"one Gaussian release per party spending {share:g} of its budget; the bounds are DP "
                           "outputs (post-processing); fallback columns get (-1, 1) (a fallback target stays "
                           "unscaled): state public bounds for them")
        step = RangeStep(budget.train_epsilon, budget.train_delta, {k: z for k, z in enumerate(zs)},
                         budget.range_delta, target, record)
    if cols.size:
        pre.fit(X, names, dp_bounds=bounds[:, :cols.size], dp_record=record)
    else:
        pre.fit(X, names)
        pre.record.insert(0, record)
    return _public_target(pre, step, target_bounds)


def _threshold(noise_std: float) -> float:
    from ..privacy.dp_ranges import GRID, occupied_threshold

    return occupied_threshold(noise_std, GRID.size - 1)


def _swamped(zs, m: int, n_rows: int) -> bool:
    """Would the local step's noise (party ``k`` at ``zs[k]``, ``m`` columns) swamp every possible count?"""
    return n_rows < 2 * _threshold(math.sqrt(sum((float(z) * math.sqrt(2.0 * m)) ** 2 for z in zs)))


def _plan(make_budget, share: float, m: int, n_rows: int, n_parties: int, shares: int, secure_step: bool,
          dp_target: bool) -> tuple:
    """Public, before any release: ``(columns, share, budget)`` of the step. All ``m`` columns at the requested
    ``share`` unless the step's noise would swamp every possible count (``N < 2 tau_1``, as in
    :func:`privdist.privacy.dp_ranges.ranges_from_counts`); then, for a classifier, the smallest larger share of
    :data:`SHARE_LADDER` that does not (breast cancer, 455 rows and 30 columns at total epsilon 1: skipped at 0.1,
    accuracy 0.653; run at 0.35, 0.891); for a regressor the target alone at the requested share (less
    sensitivity; with every column at a larger share the target was the column left unestimated: diabetes RMSE 147
    against 79 for the target alone); else none (0 columns: nothing is released or spent)."""
    from .secure_ranges import secure_noise_std

    def swamped(budget, width: int) -> bool:
        if secure_step:
            return n_rows < 2 * _threshold(secure_noise_std(budget.z(0), width, n_parties, shares))
        return _swamped([budget.z(k) for k in range(n_parties)], width, n_rows)

    ladder = [share] + ([s for s in SHARE_LADDER if s > share] if not dp_target else [])
    for s in ladder:
        budget = make_budget(s)
        if not swamped(budget, m):
            return m, s, budget
    budget = make_budget(share)
    return (1 if dp_target and m > 1 and not swamped(budget, 1) else 0), share, budget


def _skipped(pre, X, names, cols, epsilon, delta, share, target_bounds, target, dp_target) -> RangeStep:
    from ..privacy.dp_ranges import FALLBACK_BOUNDS

    col_names = [names[j] if names else f"x{j}" for j in cols]
    skipped = col_names + (["<target>"] if dp_target else [])
    record = {"step": "scale_by_dp_ranges", "private": True, "share": 0.0, "requested_share": float(share),
              "epsilon": None, "columns": skipped, "fallback": skipped,
              "bounds": {n: list(FALLBACK_BOUNDS) for n in col_names},
              "note": "NOT RUN, nothing spent: at this budget, row count and number of parties the step's noise "
                      "would swamp every count (decided from public quantities before any release); the columns "
                      "are kept in [-1, 1] (values outside clipped) and training gets the whole budget: state "
                      "public bounds for them"}
    if cols.size:
        pre.fit(X, names, dp_bounds=np.tile(np.array(FALLBACK_BOUNDS)[:, None], (1, cols.size)), dp_record=record)
    else:
        pre.fit(X, names)
        pre.record.insert(0, record)
    return _public_target(pre, RangeStep(epsilon, float(delta), target=target), target_bounds)


def _public_target(pre, step: RangeStep, target_bounds) -> RangeStep:
    if target_bounds is not None:
        pre.record.insert(0, {"step": "scale_target_by_public_bounds", "private": True,
                              "target_bounds": list(step.target),
                              "note": "the target mapped into [-1, 1] by bounds stated as public (clipped); the "
                                      "model is mapped back to the target's units"})
    return step


def fit_ranges_vertical(pre, X, groups: list[np.ndarray], *, epsilon, delta: float, share: float, seed: int = 0,
                        secure: bool = True, feature_names=None) -> RangeStep:
    """The range step of a vertical fit: party ``m`` holds the columns ``groups[m]`` of ALL rows and runs the step
    on its own columns without public bounds (one Gaussian release, sensitivity ``sqrt(2 d_m)``, its own stream
    ``(seed, "ranges", m)``). A party with no such column spends nothing and trains on its whole budget (the
    training budget is then one epsilon per party). ADMM sharing is Gaussian: the split is exact.

    Neighbours: the range release is DP for one row's values changing in the party's columns (row-level); the
    training messages also hold for any two column blocks of the party, the composition for row-level neighbours.
    """
    from ..privacy.dp_ranges import FALLBACK_BOUNDS, dp_ranges, range_budget
    from ..runtime.rng import step_generator

    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise ValidationError(f"range_share must be in (0, 1), got {share!r}")
    names = None if feature_names is None else [str(n) for n in feature_names]
    cols = pre.dp_columns(X.shape[1], names)
    if cols.size == 0:
        pre.fit(X, names)
        return RangeStep(epsilon, float(delta))
    if isinstance(epsilon, (list, tuple)) and len(epsilon) != len(groups):
        raise ValidationError(f"a per-party epsilon needs one value per party ({len(groups)}), got {len(epsilon)}")
    dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    budget = None if epsilon is None else range_budget(epsilon, delta, share, True)
    bounds = np.zeros((2, cols.size))
    fallback = np.zeros(cols.size, dtype=bool)
    parties, zs, train = [], {}, []
    where = {int(j): i for i, j in enumerate(cols)}
    for m, g in enumerate(groups):
        own = [int(j) for j in g if int(j) in where]
        eps_m = epsilon[m] if isinstance(epsilon, (list, tuple)) else epsilon
        if not own:
            train.append(eps_m)
            continue
        if budget is None:
            rel = dp_ranges([dense[:, own]], None, None)
        elif _swamped([budget.z(m)], len(own), dense.shape[0]):  # public: nothing spent, kept in [-1, 1]
            train.append(eps_m)
            idx = [where[j] for j in own]
            bounds[:, idx], fallback[idx] = np.array(FALLBACK_BOUNDS)[:, None], True
            parties.append({"party": m, "columns": [names[j] if names else f"x{j}" for j in own],
                            "noise_multiplier": None, "note": "not run: the noise would swamp every count"})
            continue
        else:
            zs[m] = budget.z(m)
            rel = dp_ranges([dense[:, own]], [zs[m]], [step_generator(seed, "ranges", m, secure)])
            train.append(budget.train_epsilon[m] if isinstance(budget.train_epsilon, tuple)
                         else budget.train_epsilon)
        idx = [where[j] for j in own]
        bounds[:, idx], fallback[idx] = rel.bounds, rel.fallback
        parties.append({"party": m, "columns": [names[j] if names else f"x{j}" for j in own],
                        "noise_multiplier": zs.get(m), "sensitivity": math.sqrt(2.0 * len(own))})
    col_names = [names[j] if names else f"x{j}" for j in cols]
    record = {"step": "scale_by_dp_ranges", "private": True, "share": float(share), "mechanism": MECHANISM,
              "columns": col_names, "parties": parties,
              "bounds": {n: [float(bounds[0, i]), float(bounds[1, i])] for i, n in enumerate(col_names)},
              "fallback": [n for i, n in enumerate(col_names) if fallback[i]],
              "neighbours": "row-level: one row's values in the party's columns (the training messages alone also "
                            "cover any two column blocks of the party)"}
    if budget is None:
        record.update(epsilon=None, note="no noise: epsilon=None, the whole fit is a non-private baseline")
        step = RangeStep(None, float(delta), record=record)
    else:
        record.update(epsilon=budget.range_epsilon, delta=budget.range_delta,
                      composition="exact: Gaussian shares of the GDP mu^2 (privdist.privacy.split)",
                      note=f"each party with columns lacking public bounds makes one Gaussian release spending "
                           f"{share:g} of its budget on its own columns; fallback columns get (-1, 1)")
        uniform = len(set(train)) == 1 and not isinstance(epsilon, (list, tuple))
        step = RangeStep(train[0] if uniform else tuple(float(e) for e in train), budget.range_delta, zs,
                         budget.range_delta, None, record)
    pre.fit(X, names, dp_bounds=bounds, dp_record=record)
    return step
