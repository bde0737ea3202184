"""The estimators' DP range step (``scale="dp"``, issues 25, 27, 37): it executes the plan's range step.

What the step spends and releases is decided by the privacy plan before any row is read
(:class:`~privdist.privacy.range_plan.RangePlan`, :func:`privdist.learn.plan.horizontal_plan`). :func:`fit_ranges`
carries it out: each party bins its own rows on the public grid, the plan's mechanism
(:class:`~privdist.privacy.range_plan.HistogramNoise`) draws its noise and declares its release, and the release is
recorded in the job's ledger as it is made (round 0 of the job, before training; the training runs continue the same
ledger, :func:`privdist.runtime.run`'s ``ledger``). Under local trust the noisy histograms are summed in the clear;
under secure aggregation each party's integer counts plus its Skellam share go through one secure sum
(:func:`privdist.runtime.secure.secure_once.secure_sum_once`). The summed counts are post-processed
(:func:`privdist.privacy.dp_ranges.ranges_from_counts`) into per-column bounds the
:class:`~privdist.data.bounds.Preprocessor` applies.

The noise of party ``k`` comes from :func:`privdist.runtime.rng.step_generator` ``(seed, "ranges", k, secure)``: a
fresh OS-entropy key in secure mode (never recorded), a seeded stream of its own in research mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError

__all__ = ["RangeStep", "fit_ranges", "fit_ranges_vertical", "check_target_bounds", "release_histograms",
           "apply_range_release", "fallback_message", "MECHANISM", "SECURE_MECHANISM"]

MECHANISM = ("Gaussian noisy per-column histograms on a public signed log2 grid (bins of ratio sqrt(2), "
             "|x| in 2^-20..2^40), L2 sensitivity sqrt(2 d) under replace-one; summed over parties, thresholded, "
             "1%/99% quantiles of the occupied span snapped outward (privdist.privacy.dp_ranges)")
SECURE_MECHANISM = ("the same histograms summed by secure aggregation, each party adding a Skellam share of one "
                    "central noise (L2 sensitivity sqrt(2 d), L1 2 d), thresholded and read as above "
                    "(privdist.privacy.range_plan.HistogramNoise)")


@dataclass
class RangeStep:
    """What the range step produced for training: ``target`` (``(lo, hi)`` the target was mapped from into
    [-1, 1], or None: unscaled) and the preprocessing ``record`` (None when no step ran). Its budget is the plan's."""

    target: tuple | None = None
    record: dict | None = None

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


def check_target_bounds(target_bounds) -> tuple[float, float] | None:
    """Public ``(lo, hi)`` of a regressor's target (finite, ``lo < hi``), or None."""
    if target_bounds is None:
        return None
    try:
        lo, hi = (float(v) for v in target_bounds)
    except (TypeError, ValueError):
        raise ValidationError(f"target_bounds must be a pair (lo, hi) of public numbers, got {target_bounds!r}") \
            from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValidationError(f"target_bounds must be finite with lo < hi, got {target_bounds!r}")
    return lo, hi


def release_histograms(plan, blocks, seed: int, secure: bool, ledger):
    """Carry out ``plan`` on one block per releasing party (``blocks[k]``: its rows of the step's columns, or None);
    each release is recorded in ``ledger`` as it is made. Returns ``(total, bounds, fallback, noise_std)``:
    ``total`` the summed noisy counts (m, bins), what the aggregator (or, under local trust, anyone) learns."""
    from ..privacy.dp_ranges import GRID, bin_counts
    from ..runtime.rng import step_generator

    parties = [k for k, b in enumerate(blocks) if b is not None]
    n_rows = sum(blocks[k].shape[0] for k in parties)
    noisy = []
    for k in parties:
        mech = plan.mechanism(k)
        counts = bin_counts(blocks[k], GRID)
        noisy.append(mech.privatize(counts if mech.kind == "gaussian" else counts.astype(np.int64).ravel(),
                                    step_generator(seed, "ranges", k, secure)))
        ledger.record(k, mech.release())
    mech = plan.mechanism(parties[0])
    if mech.kind == "skellam":
        from ..runtime.secure.secure_once import secure_sum_once

        m = blocks[parties[0]].shape[1]
        total = secure_sum_once(np.stack(noisy), step="ranges", seed=seed, secure=secure,  # sparse graph, issue 41
                                colluding=len(blocks) - plan.shares).reshape(m, -1)
        total = total.astype(float)
    else:
        total = sum(noisy)
    noise_std = plan.sum_noise_std(parties, len(blocks))
    bounds, fallback = plan.bounds_from(total, n_rows, noise_std)
    return total, bounds, fallback, noise_std


def fit_ranges(pre, X, parties: list[np.ndarray], plan, *, seed: int, secure: bool, ledger, delta: float,
               feature_names=None, y=None, target_bounds=None, dp_target: bool = False) -> RangeStep:
    """Fit ``pre`` (any scale; ``"dp"`` runs the step of ``plan``) on ``X``; party ``k`` holds the rows
    ``parties[k]`` and reads only them.

    Args:
        pre: The :class:`~privdist.data.bounds.Preprocessor` to fit.
        X: All rows (each party's step reads only its own rows ``X[parties[k]]``).
        parties: Row indices of each party.
        plan: The plan's :class:`~privdist.privacy.range_plan.RangePlan` (None: no step).
        seed, secure: The fit's seed and noise mode (module docstring).
        ledger: The job's :class:`~privdist.privacy.PrivacyLedger`: each party's release is recorded in it.
        delta: The job's delta (the record's epsilon of a Skellam release is stated at it).
        y, target_bounds, dp_target: A regressor's target: public ``target_bounds`` map it; else with
            ``dp_target`` it is the step's last column.
    """
    from ..privacy.dp_ranges import dp_ranges

    names = None if feature_names is None else [str(n) for n in feature_names]
    cols = pre.dp_columns(X.shape[1], names)
    target = check_target_bounds(target_bounds)
    if plan is None:
        pre.fit(X, names)
        return _public_target(pre, RangeStep(target), target_bounds)
    m = len(plan.columns)
    if plan.width == 0:
        return _skipped(pre, X, names, cols, plan, target_bounds, target)
    dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    D = dense[:, cols]
    if dp_target:
        D = np.column_stack([D, np.asarray(y, dtype=float)])
    if plan.width < m:  # the target alone: its scale is what a regression cannot do without
        D = D[:, -1:]
    blocks = [D[idx] for idx in parties]
    noise_std = None
    if plan.kind is None:
        rel = dp_ranges(blocks, None, None)
        bounds, fallback = rel.bounds, rel.fallback
    else:
        _, bounds, fallback, noise_std = release_histograms(plan, blocks, seed, secure, ledger)
    return apply_range_release(pre, X, names, cols, plan, bounds, fallback, noise_std, delta=delta,
                               target=target, target_bounds=target_bounds, dp_target=dp_target)


def apply_range_release(pre, X, names, cols, plan, bounds, fallback, noise_std, *, delta: float, target=None,
                        target_bounds=None, dp_target: bool = False) -> RangeStep:
    """Fit ``pre`` with the bounds a range step released (``bounds`` (2, width), ``fallback``) and record the step
    (its mechanism, share, bounds, what it spent); shared by :func:`fit_ranges` and a job whose parties released
    the histograms in their own processes (:mod:`privdist.learn.job_ranges`)."""
    from ..privacy.dp_ranges import FALLBACK_BOUNDS

    m = len(plan.columns)
    col_names = list(plan.columns[:cols.size])
    if bounds.shape[1] < m:  # the features were left out of a target-only step: they keep the fallback
        bounds = np.column_stack([np.tile(np.array(FALLBACK_BOUNDS)[:, None], (1, m - 1)), bounds])
        fallback = np.r_[np.ones(m - 1, dtype=bool), fallback]
    if dp_target and not fallback[-1]:  # a target without an estimated range stays unscaled
        target = (float(bounds[0, -1]), float(bounds[1, -1]))
    record = {
        "step": "scale_by_dp_ranges", "private": True, "share": float(plan.share),
        "mechanism": SECURE_MECHANISM if plan.kind == "skellam" else MECHANISM,
        "columns": list(plan.columns),
        "bounds": {n: [float(bounds[0, i]), float(bounds[1, i])] for i, n in enumerate(col_names)},
        "fallback": [n for i, n in enumerate(plan.columns) if fallback[i]],
        "sensitivity": plan.sensitivity,
    }
    if plan.target_weight != 1:
        record["target_weight"] = plan.target_weight
        record["target_weight_note"] = (f"the target's counts weighted by {plan.target_weight} before the noise (a "
                                        "log-scale target spreads over more bins than a feature; sensitivity "
                                        f"sqrt(2 (m - 1 + {plan.target_weight}^2)))")
    if plan.kind is not None and plan.share != plan.requested_share:
        from ..privacy.range_plan import SHARE_LADDER

        record["requested_share"] = float(plan.requested_share)
        record["share_note"] = (f"at the requested share {plan.requested_share:g} the step's noise would swamp every "
                                f"count (public: {m} columns, row count, parties); the smallest share of "
                                f"{SHARE_LADDER} that does not was spent instead")
    if plan.width < m:
        record["target_only"] = ("the step on every column would be swamped by its noise at this row count "
                                 "(public); it ran on the target alone, the features are kept in [-1, 1]")
    if dp_target:
        record["target_bounds"] = None if target is None else list(target)
    if plan.kind is None:
        record.update(noise_multiplier=None, epsilon=None, composition=None,
                      note="no noise: epsilon=None, the whole fit is a non-private baseline; the same grid "
                           "quantiles, read exactly")
    elif plan.kind == "skellam":
        from ..privacy.accountants import agent_epsilon

        rel = plan.mechanism(0).release()
        record.update(noise_multiplier=plan.noise_multipliers[0], noise_std=noise_std,
                      skellam_release=[rel.event.variance, rel.event.l2_sensitivity, rel.event.l1_sensitivity],
                      epsilon=agent_epsilon([(rel, 1)], float(delta), "rdp"), delta=float(delta),
                      composition="exact: the training's Skellam noise is calibrated on the whole budget composed "
                                  "with this release (RDP, privdist.privacy.distributed.calibrate_skellam)",
                      note=f"one secure sum of the parties' histograms with Skellam shares of the noise a "
                           f"{plan.share:g} share of the budget buys centrally; the bounds are DP outputs "
                           "(post-processing); fallback columns get (-1, 1): state public bounds for them")
    else:
        z = plan.noise_multipliers
        record.update(noise_multiplier=z[0] if len(set(z)) == 1 else list(z),
                      epsilon=list(plan.epsilon) if isinstance(plan.epsilon, tuple) else plan.epsilon,
                      delta=plan.delta,
                      composition=("exact: Gaussian shares of the GDP mu^2 (privdist.privacy.split), PLD composition "
                                   "of the range release and training is the requested total" if plan.exact else
                                   "basic: epsilon and delta split linearly (training not Gaussian); the accountant "
                                   "reports at most the total"),
                      note=f"one Gaussian release per party spending {plan.share:g} of its budget; the bounds are DP "
                           "outputs (post-processing); fallback columns get (-1, 1) (a fallback target stays "
                           "unscaled): state public bounds for them")
    if cols.size:
        pre.fit(X, names, dp_bounds=bounds[:, :cols.size], dp_record=record)
    else:
        pre.fit(X, names)
        pre.record.insert(0, record)
    return _public_target(pre, RangeStep(target, record), target_bounds)


def _skipped(pre, X, names, cols, plan, target_bounds, target) -> RangeStep:
    from ..privacy.dp_ranges import FALLBACK_BOUNDS

    col_names = list(plan.columns[:cols.size])
    record = {"step": "scale_by_dp_ranges", "private": True, "share": 0.0,
              "requested_share": float(plan.requested_share), "epsilon": None, "columns": list(plan.columns),
              "fallback": list(plan.columns), "bounds": {n: list(FALLBACK_BOUNDS) for n in col_names},
              "note": "NOT RUN, nothing spent: at this budget, row count and number of parties the step's noise "
                      "would swamp every count (decided from public quantities before any release); the columns "
                      "are kept in [-1, 1] (values outside clipped) and training gets the whole budget: state "
                      "public bounds for them"}
    if cols.size:
        pre.fit(X, names, dp_bounds=np.tile(np.array(FALLBACK_BOUNDS)[:, None], (1, cols.size)), dp_record=record)
    else:
        pre.fit(X, names)
        pre.record.insert(0, record)
    return _public_target(pre, RangeStep(target), target_bounds)


def _public_target(pre, step: RangeStep, target_bounds) -> RangeStep:
    if target_bounds is not None:
        pre.record.insert(0, {"step": "scale_target_by_public_bounds", "private": True,
                              "target_bounds": list(step.target),
                              "note": "the target mapped into [-1, 1] by bounds stated as public (clipped); the "
                                      "model is mapped back to the target's units"})
    return step


def fit_ranges_vertical(pre, X, groups: list[np.ndarray], plan, *, seed: int, secure: bool, ledger,
                        feature_names=None) -> RangeStep:
    """The range step of a vertical fit: party ``m`` holds the columns ``groups[m]`` of ALL rows and carries out its
    part of ``plan`` on its own columns without public bounds (one Gaussian release, sensitivity ``sqrt(2 d_m)``,
    its own stream ``(seed, "ranges", m)``, recorded in ``ledger``). A party with no such column, or whose noise
    would swamp every count (decided in the plan), releases nothing.

    Neighbours: the range release is DP for one row's values changing in the party's columns (row-level); the
    training messages also hold for any two column blocks of the party, the composition for row-level neighbours.
    """
    from ..privacy.dp_ranges import FALLBACK_BOUNDS, dp_ranges

    names = None if feature_names is None else [str(n) for n in feature_names]
    cols = pre.dp_columns(X.shape[1], names)
    if plan is None:
        pre.fit(X, names)
        return RangeStep()
    dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    bounds = np.zeros((2, cols.size))
    fallback = np.zeros(cols.size, dtype=bool)
    where = {int(j): i for i, j in enumerate(cols)}
    parties = []
    for m, g in enumerate(groups):
        own = [int(j) for j in g if int(j) in where]
        if not own:
            continue
        idx = [where[j] for j in own]
        own_names = [plan.columns[i] for i in idx]
        mech = plan.mechanism(m)
        if plan.kind is None:
            rel = dp_ranges([dense[:, own]], None, None)
            bounds[:, idx], fallback[idx] = rel.bounds, rel.fallback
        elif mech is None:  # public: nothing spent, kept in [-1, 1]
            bounds[:, idx], fallback[idx] = np.array(FALLBACK_BOUNDS)[:, None], True
            parties.append({"party": m, "columns": own_names, "noise_multiplier": None,
                            "note": "not run: the noise would swamp every count"})
            continue
        else:
            blocks = [None] * len(groups)
            blocks[m] = dense[:, own]
            _, bounds[:, idx], fallback[idx], _ = release_histograms(plan, blocks, seed, secure, ledger)
        parties.append({"party": m, "columns": own_names,
                        "noise_multiplier": None if mech is None else mech.noise_multiplier,
                        "sensitivity": math.sqrt(2.0 * len(own))})
    record = {"step": "scale_by_dp_ranges", "private": True, "share": float(plan.share), "mechanism": MECHANISM,
              "columns": list(plan.columns), "parties": parties,
              "bounds": {n: [float(bounds[0, i]), float(bounds[1, i])] for i, n in enumerate(plan.columns)},
              "fallback": [n for i, n in enumerate(plan.columns) if fallback[i]],
              "neighbours": "row-level: one row's values in the party's columns (the training messages alone also "
                            "cover any two column blocks of the party)"}
    if plan.kind is None:
        record.update(epsilon=None, note="no noise: epsilon=None, the whole fit is a non-private baseline")
    else:
        record.update(epsilon=list(plan.epsilon) if isinstance(plan.epsilon, tuple) else plan.epsilon,
                      delta=plan.delta, composition="exact: Gaussian shares of the GDP mu^2 (privdist.privacy.split)",
                      note=f"each party with columns lacking public bounds makes one Gaussian release spending "
                           f"{plan.share:g} of its budget on its own columns; fallback columns get (-1, 1)")
    pre.fit(X, names, dp_bounds=bounds, dp_record=record)
    return RangeStep(None, record)


def fallback_message(record, n_rows: int, epsilon, feature_names=None) -> str | None:
    """What to warn when the DP range step left columns (or the target) without an estimated range, or None: they
    are assumed already in [-1, 1] (features clipped there, the target's gradients clipped as if it were), which
    wrecks a column in the hundreds. The cause and the cure are named; the columns by their names
    (``feature_names`` None: the data had none, so ``column 10``), a few of them and how many more
    (:mod:`privdist.data.names`)."""
    from ..data.names import name_list, unnamed_label

    step = next((r for r in record if r.get("step") == "scale_by_dp_ranges" and r.get("fallback")), None)
    if step is None:
        return None
    names = step["fallback"]
    shown = name_list([unnamed_label(n, feature_names) for n in names])
    if step.get("share") == 0.0:
        why = f"the step was not run: {n_rows} rows are too few for its noise at epsilon={epsilon}"
    elif step.get("target_only"):
        why = (f"{n_rows} rows are too few for the step's noise on every column at epsilon={epsilon}, so it ran on "
               "the target alone" + ("" if "<target>" not in names else
                                     " and found no range of the target above its noise holding half the rows"))
    else:
        why = "no bin rose above the step's noise for them" + ("" if "<target>" not in names else
                                                                " (the target: no span shown to hold half the rows)")
    return (f"no private range for {len(names)} column(s) ({shown}): {why}; they are assumed in [-1, 1] (values "
            "outside clipped). State public bounds for them (bounds=, target_bounds=; --bounds/--target-bounds), "
            "raise range_share, or give more rows")
