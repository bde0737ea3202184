"""A differentially private range step: per-column bounds from noisy histograms on a public grid (issue 25).

Features must be mapped into [-1, 1] before rows are clipped to a public norm, or a column in the hundreds flattens
every other one. Reading min/max off the data is a release no accountant sees (``scale="data"``); stating public
bounds needs knowledge a user may not have. This step spends a stated SHARE of each party's budget to estimate the
bounds instead, with the Gaussian mechanism and post-processing only:

1. **Public grid.** A signed log-scale grid: the points ``0`` and ``+-2^(j/2)`` for ``2^-20 <= 2^(j/2) <= 2^40``
   (:data:`GRID`, 243 points, 242 bins). Values beyond the ends are clipped into the end bins. Nothing about the
   grid depends on the data, and a factor ``sqrt(2)`` per bin resolves any scale from 1e-6 to 1e12.
2. **Per-party release (Gaussian mechanism).** Party ``k`` releases, for each of the ``d`` step columns, the count
   of its own rows in each bin, plus i.i.d. ``N(0, sigma_k^2)`` noise. Replacing one row moves one count by -1 and
   another by +1 in each column, so the L2 sensitivity of all ``d`` histograms together is ``sqrt(2 d)``, and
   ``sigma_k = z_k sqrt(2 d)`` with ``z_k`` the noise multiplier of ONE Gaussian release at the step's share of
   the budget (:func:`privdist.privacy.calibrate`, PLD). That is one ``GaussianDpEvent(z_k)`` in party ``k``'s
   ledger; it composes exactly with the training's Gaussian releases (:mod:`privdist.privacy.split`).
3. **Post-processing** (no further privacy cost). The parties' noisy histograms are summed (per-bin noise std
   ``s = sqrt(sum_k sigma_k^2)``, public). A dyadic block of ``w`` adjacent bins is *occupied* when its noisy sum
   exceeds the public threshold ``tau_w = s sqrt(w) Phi^-1(1 - beta / (2 B))`` (``B`` bins, ``beta`` =
   :data:`FALSE_BIN_RATE`: no empty block of any width passes, with probability ``>= 1 - beta``); single bins
   (``w = 1``) are tried first, wider blocks (:data:`WIDTHS`, up to 32) when none passes, so a column spread thin
   over many bins is still found, at a coarser resolution. This is as in the stability-based histograms of Bun, Nissim, Stemmer (2016) and the
   thresholded Gaussian histograms of Wilkins, Kifer, Zhang, Karrer (2024). Within the span of occupied blocks the
   noisy counts (negatives set to 0) form a monotone CDF, whose ``q`` and ``1 - q`` quantiles (default 1 % and
   99 %) are snapped outward to grid points: ``lo`` = the left edge of the ``q`` bin, ``hi`` = the right edge of
   the ``1 - q`` bin (so ``hi > lo`` always). Restricting the CDF to the occupied span keeps the noise of the
   ~240 empty bins out of it (a plain noisy CDF over the whole grid accumulates ``sqrt(B) s`` of noise; compare the
   quantile-from-histogram approach of Smith (2011) and the DP quantile survey of Gillenwater, Joseph, Kulesza
   (2021)). Wider blocks wholly outside that span add the thin tails, bin by bin of the blocks that pass (a column
   crossing zero spreads its small side over many log-scale bins). Then the span grows on either side by a run of
   ``k < TAIL_WIDTH`` bins just beside it whose own noisy mass passes ``tau_1 sqrt(k)``, repeated until none passes
   (:func:`_extend_core`, issue 39): a core found as one central bin of a column spread thin over its neighbours
   kept them before only when a dyadic block of them lay wholly outside it. Measured on the utility benchmark
   (5 draws, test split): Minnesota radon's DP target range, central fragments such as (1, 1.41) for a target
   whose 1 %/99 % quantiles are -0.92 and 3.12, grows, and its RMSE goes from 0.869 +- 0.059 to 0.822 +- 0.014
   (mean predictor 0.837); breast cancer, Bangladesh, Guatemala and Dutch unchanged, diabetes 72.3 +- 5.7 -> 74.2
   +- 7.8, London 0.832 +- 0.015 -> 0.838 +- 0.014 (within the draws' spread); on 90/10 validation splits of the
   training rows (3 splits x 4 draws) diabetes 73.0 -> 66.5, Dutch 7.26 -> 7.21, London 0.843 -> 0.851, radon
   unchanged at 577 rows (its target falls back there).
   A span only grows, so no column is found that was not; on pure noise beside one real bin (noise std 25,
   20,000 draws) the span grew past that bin in 13 draws with the extension and 13 without (false tail blocks).
4. **Fallback, from public quantities only.** When the total row count ``N`` (public under replace-one neighbours)
   is below ``2 tau_1`` the noise swamps every possible count: no column is estimated. A column with no occupied bin
   falls back too. Wider blocks are tried only while ``tau_w <= N``: beyond it no block of real rows can pass, only
   noise. What remains is the designed false rate ``beta`` per column, measured (issue 39) on pure-noise
   histograms through the step's own code, per column found: 21 of 20,000 (0.105 %; noise std 37.3, ``N`` = 353,
   widths 1, 2, 4 tried), 24 of 20,000 (0.120 %; ``N`` = 1e5, every width to 32), and with the plans' own mechanisms
   (11 columns, 5 parties, ``N`` = 353; their exact summed std, the target's divided by its weight) 0.116 % local at
   epsilon 3 (share 0.2, target weight 2), 0.121 % local at epsilon 8, 0.055 % secure at epsilon 1 (share 0.3,
   weight 2), 0.116 % secure at epsilon 3: all within binomial noise of the union bound's 0.099 %. The threshold
   uses the right std for every column, width and share: the share is chosen from public facts before the one
   release (:func:`privdist.privacy.range_plan.plan_range`), so trying shares makes no extra test, and the widths
   are in the union bound. Such a false column gets bounds off by orders of magnitude: a feature loses its column
   (its values all clipped to one end), but a regressor's target range is mapped back into every prediction
   (diabetes, 5 parties, local trust, epsilon 1, the target-only step at noise std 37.3: bounds (-2^37, -2^36) in
   the seed-1 draw, test RMSE 7.8e10). So a target's span passes a sanity rule too (:func:`holds_rows`,
   post-processing of the same counts): below ``N = 4 tau_1`` (no 4-bin block holding half the rows passes
   unaided) a found target span must show its noisy mass holds half of the ``N`` rows (at ``z = Phi^-1(1 -
   beta)``). On that diabetes step
   (``N = 2.06 tau_1``) over 4,000 seeded draws the target's bounds held under half the training rows in 219 draws
   (6 disjoint from the data), at least half in 74, none in 3,707; with the rule: 0, 5, 3,995 (a partial range at
   the right scale, e.g. (128, 256) with RMSE 81.5, now falls back: unscaled, RMSE 164.6). Above the margin real
   rows are found in most draws and a found span is kept (false at the rate ``beta``): the same rule without the
   margin took the default secure diabetes fit (target std 18.0, ``N = 4.25 tau_1``, most spans partial but at the
   right scale) from RMSE 74.8 +- 7.8 to 135.7 +- 44.0 over 20 draws; with it the fit is unchanged. Pure-noise
   target columns found: 0 of 20,000 at ``N = 353`` (21 before), 24 of 20,000 at ``N = 1e5`` (above the margin,
   unchanged); with each plan's mechanism 0 of 20,000 local at epsilon 1 (14 before), 0 of 1,818 secure at
   epsilon 3 (3 before), 1 of 1,818 secure at epsilon 1 (unchanged). Features are not checked (a partial feature
   range at the right scale beats ``(-1, 1)`` for a column in the hundreds): on the benchmark's three data sets
   (4 budgets, both trusts, 20 seeds: 7,340 column draws) the rule turns 7 target ranges holding at least half the
   rows and 27 holding under half into fallbacks and leaves the other 7,306 identical.
   A fallback column gets :data:`FALLBACK_BOUNDS` ``(-1, 1)``: it is assumed already in range
   (values outside are clipped), exactly what ``scale="bounds"`` assumes of an unnamed column; the record names
   the fallback columns so that the user can state public bounds for them.

Why not a library: dp-accounting (a dependency) accounts but has no quantile mechanism; OpenDP's and diffprivlib's
quantiles are single-machine and would add a runtime dependency (diffprivlib's also reads a public range, which is
what is missing here); Google's differential-privacy library's quantile trees are C++/Go/Java. The Gaussian
mechanism on a histogram is the vetted piece; everything after it is post-processing.

Layering: this module is in ``privacy`` (it calibrates noise and declares releases); the per-column maps it
produces are applied by :class:`privdist.data.bounds.Preprocessor` (``scale="dp"``), and the glue of the
estimators (budget split, noise streams, ledger) is :mod:`privdist.learn.ranges`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._checks import check_probability
from ..errors import ValidationError

__all__ = ["GRID", "FALLBACK_BOUNDS", "FALSE_BIN_RATE", "WIDTHS", "occupied_threshold", "GAUSSIAN_ALGORITHMS", "range_grid", "bin_counts",
           "noisy_counts", "party_release", "ranges_from_counts", "RangeBudget", "range_budget", "RangeRelease", "dp_ranges",
           "check_share", "holds_rows", "HOLD_SHARE", "CLEAR_MARGIN"]

#: Bounds of a column whose range could not be estimated (assumed already in [-1, 1]; values outside clipped).
FALLBACK_BOUNDS = (-1.0, 1.0)
#: Probability that an empty bin of one column is taken as occupied (the union bound over its bins).
FALSE_BIN_RATE = 1e-3
#: Training algorithms whose releases are Gaussian at a total budget: the range step's share then composes
#: exactly (GDP / PLD, :mod:`privdist.privacy.split`); any other algorithm gets a basic-composition split.
GAUSSIAN_ALGORITHMS = ("dpsgd", "dpadmm", "pvp", "dvp", "laadmm", "dpmm", "ssp", "admm_sharing")


def range_grid(low_exp: float = -20.0, high_exp: float = 40.0, per_octave: int = 2) -> np.ndarray:
    """The public grid points: ``0`` and ``+-2^(j / per_octave)`` for ``low_exp <= j / per_octave <= high_exp``,
    increasing. Bin ``i`` is ``[points[i], points[i + 1])``."""
    if not (per_octave >= 1 and high_exp > low_exp):
        raise ValidationError(f"a range grid needs per_octave >= 1 and high_exp > low_exp, got {per_octave}, "
                              f"{low_exp}, {high_exp}")
    mags = 2.0 ** (np.arange(round(low_exp * per_octave), round(high_exp * per_octave) + 1) / per_octave)
    return np.concatenate([-mags[::-1], [0.0], mags])


#: The default public grid (243 points, 242 bins, ratio sqrt(2) per bin, magnitudes 2^-20 .. 2^40).
GRID = range_grid()


def bin_counts(X, grid: np.ndarray = GRID) -> np.ndarray:
    """Per-column counts of the rows of ``X`` (n, d) in the bins of ``grid``: shape (d, len(grid) - 1). Values
    below the first point count in the first bin, values at or beyond the last in the last bin."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    if X.ndim != 2:
        raise ValidationError(f"bin_counts needs a 2-D array, got shape {X.shape}")
    n_bins = grid.size - 1
    idx = np.clip(np.searchsorted(grid, X, side="right") - 1, 0, n_bins - 1)  # (n, d)
    out = np.zeros((X.shape[1], n_bins))
    for j in range(X.shape[1]):
        out[j] = np.bincount(idx[:, j], minlength=n_bins)
    return out


def noisy_counts(counts: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """``counts`` plus i.i.d. ``N(0, sigma^2)`` per entry (the Gaussian mechanism; ``sigma = 0``: exact, no draw)."""
    counts = np.asarray(counts, dtype=float)
    if sigma == 0:
        return counts.copy()
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValidationError(f"noise std must be >= 0 and finite, got {sigma}")
    return counts + sigma * rng.standard_normal(counts.shape)


#: Block widths (in bins) of the occupancy tests, finest first: a column spread thin is found by a wider block.
WIDTHS = (1, 2, 4, 8, 16, 32)
#: Widest block that may add a tail beside the core span (a factor 2^(TAIL_WIDTH / 2) in magnitude): a wider one
#: would add its empty bins' noise to the quantiles (a 32-bin block took ``lo`` to -46,341 for a column whose 1 %
#: quantile is -1,300).
TAIL_WIDTH = 4


def occupied_threshold(noise_std: float, n_bins: int, false_rate: float = FALSE_BIN_RATE, width: int = 1) -> float:
    """``tau_w = noise_std sqrt(w) Phi^-1(1 - false_rate / (2 n_bins))``: a block of ``w`` empty bins of a column
    exceeds it with probability ``<= false_rate / (2 n_bins)``; the dyadic blocks of all widths number fewer than
    ``2 n_bins``, so no empty block passes with probability ``>= 1 - false_rate`` (union bound). 0 without noise."""
    from scipy.stats import norm

    if noise_std == 0:
        return 0.0
    return float(noise_std * math.sqrt(width) * norm.isf(false_rate / (2 * n_bins)))


def _occupied_bins(row: np.ndarray, noise_std: float, n_rows: float = math.inf) -> np.ndarray | None:
    """The bins the quantiles are read from (bool mask), or None when no block is occupied.

    The core is the span from the first to the last occupied block at the finest width of :data:`WIDTHS` (dyadic
    blocks ``[i w, (i + 1) w)``) that has one. Wider blocks (up to :data:`TAIL_WIDTH`) then add the tails: a
    passing block of a wider width that lies wholly outside the core (a column crossing zero spreads its small side over many log-scale bins, each
    under the threshold) adds its own bins, not the gap before it. The union bound of :func:`occupied_threshold`
    covers the blocks of all widths at once. Only widths whose threshold is at most ``n_rows`` (public) are tried:
    above it no block of real rows can pass, only noise."""
    n_bins = row.size
    mask = np.zeros(n_bins, dtype=bool)
    if noise_std == 0:
        busy = np.flatnonzero(row > 0)
        if not busy.size:
            return None
        mask[busy[0]:busy[-1] + 1] = True
        return mask
    csum = np.concatenate([[0.0], np.cumsum(row)])
    tau_1 = occupied_threshold(noise_std, n_bins)  # tau_w = tau_1 sqrt(w)
    core = None
    for w in WIDTHS:
        if tau_1 * math.sqrt(w) > n_rows:
            break
        starts = np.arange(0, n_bins, w)
        ends = np.minimum(starts + w, n_bins)
        hit = np.flatnonzero(csum[ends] - csum[starts] > tau_1 * np.sqrt(ends - starts))
        if core is None:
            if hit.size:
                core = int(starts[hit[0]]), int(ends[hit[-1]])
                mask[core[0]:core[1]] = True
            continue
        if w > TAIL_WIDTH:
            break
        for b, e in zip(starts[hit], ends[hit]):
            if e <= core[0] or b >= core[1]:
                mask[b:e] = True
    if core is not None and EXTEND:
        _extend_core(csum, mask, tau_1, n_rows)
    return mask if core is not None else None


#: Extend the span by neighbouring runs of bins whose own noisy mass passes (:func:`_extend_core`).
EXTEND = True


def _extend_core(csum: np.ndarray, mask: np.ndarray, tau_1: float, n_rows: float) -> None:
    """Grow the span (``mask``, in place) on either side by the run of ``k < TAIL_WIDTH`` bins just beside it whose
    noisy mass passes ``tau_1 sqrt(k)`` (of the passing runs, the one of largest ``mass / sqrt(k)``); repeated until
    no run passes. A column spread thin beside its core (a target crossing zero on the log grid: each bin under the
    threshold, a run of them over it) keeps its shoulders, which a fragment of its central bins would clip (issue
    39). Each test is of ``k`` bins outside the span: a run of empty bins passes with probability ``<= beta / (2 B)``
    like a block; a span only grows, so no column is found that was not."""
    n_bins = mask.size
    widths = [k for k in range(1, TAIL_WIDTH) if tau_1 * math.sqrt(k) <= n_rows]

    def best(mass_of) -> int:
        z = [(mass_of(k) / math.sqrt(k), k) for k in widths if mass_of(k) > tau_1 * math.sqrt(k)]
        return max(z)[1] if z else 0

    while True:
        busy = np.flatnonzero(mask)
        lo, hi = int(busy[0]), int(busy[-1]) + 1
        left = best(lambda k: csum[lo] - csum[lo - k] if lo - k >= 0 else -math.inf)
        right = best(lambda k: csum[hi + k] - csum[hi] if hi + k <= n_bins else -math.inf)
        mask[lo - left:lo] = True
        mask[hi:hi + right] = True
        if not (left or right):
            return


#: Share of the public row count ``N`` a regressor's target span must be shown to hold (:func:`holds_rows`).
HOLD_SHARE = 0.5
#: ``N >= CLEAR_MARGIN tau_1``: a block of 4 bins holding half the rows passes unaided (``N / 2 >= tau_4 = 2
#: tau_1``); below it a target's found span must prove it holds half the rows (:func:`holds_rows`).
CLEAR_MARGIN = 4.0


def holds_rows(row: np.ndarray, mask: np.ndarray, noise_std: float, n_rows: float,
               false_rate: float = FALSE_BIN_RATE) -> bool:
    """Sanity rule for a regressor's target (post-processing of the noisy counts and the public ``N``, ``s``).

    When ``N >= CLEAR_MARGIN tau_1`` real rows pass the thresholds unaided and a found span is kept (it is false
    with the designed rate ``beta``). Below that margin a span is found mostly by its noise (a fragment of the
    column, or a false block: module docstring, step 4), so it must show it holds :data:`HOLD_SHARE` of the rows:
    its noisy mass ``M`` over the ``W`` bins of ``mask`` (noise std ``s sqrt(W)``) must satisfy ``M - z s sqrt(W)
    >= N / 2``, ``z = Phi^-1(1 - false_rate)`` (a one-sided test at the design rate). Exact counts: kept."""
    from scipy.stats import norm

    if noise_std == 0 or n_rows >= CLEAR_MARGIN * occupied_threshold(noise_std, row.size, false_rate):
        return True
    width = int(np.count_nonzero(mask))
    mass = float(np.sum(row[mask]))
    return mass - float(norm.isf(false_rate)) * noise_std * math.sqrt(width) >= HOLD_SHARE * n_rows


def ranges_from_counts(total: np.ndarray, n_rows: int, noise_std: float, quantile: float = 0.01,
                       grid: np.ndarray = GRID, check_rows=False) -> tuple[np.ndarray, np.ndarray]:
    """Post-processing of the summed noisy counts ``total`` (d, bins) into bounds (see the module docstring).

    Args:
        total: Noisy (or exact) per-bin counts summed over the parties.
        n_rows: Total number of rows (public).
        noise_std: Per-bin noise std of ``total`` (public; 0 = exact counts).
        quantile: ``q``: ``lo`` covers the ``q`` quantile, ``hi`` the ``1 - q`` quantile (snapped outward).
        grid: The public grid the counts were taken on.
        check_rows: The columns (a bool, or one per column) whose span must pass :func:`holds_rows` (a
            regressor's target, :meth:`privdist.privacy.range_plan.RangePlan.bounds_from`); else they fall back.

    Returns:
        ``(bounds, fallback)``: bounds of shape (2, d) with ``lo < hi`` per column, and a boolean mask of the
        columns that got :data:`FALLBACK_BOUNDS`.
    """
    if not 0 <= quantile < 0.5:
        raise ValidationError(f"quantile must be in [0, 0.5), got {quantile}")
    total = np.atleast_2d(np.asarray(total, dtype=float))
    d, n_bins = total.shape
    bounds = np.tile(np.array(FALLBACK_BOUNDS, dtype=float)[:, None], (1, d))
    fallback = np.ones(d, dtype=bool)
    check = np.broadcast_to(np.asarray(check_rows, dtype=bool), (d,))
    if noise_std > 0 and n_rows < 2 * occupied_threshold(noise_std, n_bins):  # public: the noise swamps any count
        return bounds, fallback
    for j in range(d):
        mask = _occupied_bins(total[j], noise_std, n_rows)
        if mask is None:
            continue
        if check[j] and not holds_rows(total[j], mask, noise_std, n_rows):
            continue
        busy = np.flatnonzero(mask)
        first, last = int(busy[0]), int(busy[-1])
        w = np.where(mask, np.maximum(total[j], 0.0), 0.0)[first:last + 1]
        if not w.sum() > 0:
            continue
        cdf = np.cumsum(w) / w.sum()
        # the q quantile lies in the first bin whose CDF reaches q (snapped outward: the bin's left/right edge)
        i_lo = first + int(np.searchsorted(cdf, quantile - 1e-9, side="left")) if quantile > 0 else first
        i_hi = first + int(np.searchsorted(cdf, 1.0 - quantile - 1e-9, side="left"))
        i_lo, i_hi = min(i_lo, last), min(max(i_hi, i_lo), last)
        lo, hi = grid[i_lo], grid[i_hi + 1]
        if hi > lo:
            bounds[:, j] = (lo, hi)
            fallback[j] = False
    return bounds, fallback


@dataclass(frozen=True)
class RangeBudget:
    """How a party's total ``(epsilon, delta)`` is shared between the range step and training.

    ``exact`` (Gaussian training): :func:`privdist.privacy.split.split_budget` shares of ``mu^2``, same ``delta``;
    the PLD composition is exactly the total. Otherwise basic composition: ``epsilon`` and ``delta`` split linearly
    (the accountant then reports at most the total). ``range_epsilon``/``train_epsilon`` are floats or, for a
    per-party budget, tuples; ``noise_multiplier`` the range release's ``z`` (tuple per party likewise)."""

    share: float
    exact: bool
    range_epsilon: object
    range_delta: float
    train_epsilon: object
    train_delta: float
    noise_multiplier: object

    def z(self, party: int) -> float:
        z = self.noise_multiplier
        return float(z[party]) if isinstance(z, tuple) else float(z)


def check_share(share) -> float:
    """The range step's budget share: a number in (0, 1) (NaN and booleans refused), else a named error."""
    from .._checks import shown

    if isinstance(share, bool) or not isinstance(share, (int, float, np.floating)) or not 0 < share < 1:
        raise ValidationError(f"range_share must be in (0, 1), got {shown(share)}")
    return float(share)


def range_budget(epsilon, delta: float, share: float, exact: bool) -> RangeBudget:
    """Split ``(epsilon, delta)`` (a float, or one per party) between the range step (``share``) and training.

    Raises:
        ValidationError: ``share`` outside (0, 1), a bad ``epsilon``/``delta``.
    """
    from .calibration import calibrate
    from .split import split_budget

    check_share(share)
    delta = check_probability(delta, "delta")
    eps = tuple(float(e) for e in epsilon) if isinstance(epsilon, (list, tuple)) else (float(epsilon),)
    if any(not (e > 0 and math.isfinite(e)) for e in eps):
        raise ValidationError(f"epsilon must be > 0 and finite for a DP range step, got {epsilon!r}")
    if exact:
        pairs = [split_budget(e, delta, [share, 1.0 - share]) for e in eps]
        d_range = d_train = delta
    else:
        pairs = [(share * e, (1.0 - share) * e) for e in eps]
        d_range, d_train = share * delta, (1.0 - share) * delta
    zs = tuple(calibrate(p[0], d_range, 1, "gaussian", "pld") for p in pairs)

    def shape(values):
        return tuple(values) if isinstance(epsilon, (list, tuple)) else values[0]

    return RangeBudget(float(share), bool(exact), shape([p[0] for p in pairs]), d_range,
                       shape([p[1] for p in pairs]), d_train, shape(zs))


def party_release(block, noise_multiplier: float, rng: np.random.Generator, grid: np.ndarray = GRID) -> np.ndarray:
    """What one party releases: the per-column bin counts of its rows ``block`` (n_k, d) plus Gaussian noise of
    std ``noise_multiplier sqrt(2 d)`` (L2 sensitivity ``sqrt(2 d)`` under replace-one), shape (d, bins)."""
    counts = bin_counts(block, grid)
    return noisy_counts(counts, float(noise_multiplier) * math.sqrt(2.0 * counts.shape[0]), rng)


@dataclass(frozen=True)
class RangeRelease:
    """Outcome of :func:`dp_ranges`: ``bounds`` (2, d), the ``fallback`` mask, each party's noise ``sigmas``
    (std per bin; 0 without noise), the summed noise std ``noise_std`` and the occupancy threshold ``threshold``."""

    bounds: np.ndarray
    fallback: np.ndarray
    sigmas: tuple
    noise_std: float
    threshold: float


def dp_ranges(blocks: Sequence, noise_multipliers: Sequence[float] | None, rngs: Sequence | None,
              quantile: float = 0.01, grid: np.ndarray = GRID) -> RangeRelease:
    """Run the range step: party ``k`` holds the rows ``blocks[k]`` (n_k, d) of the step's columns and draws its
    noise from ``rngs[k]`` with ``sigma_k = noise_multipliers[k] sqrt(2 d)``; the noisy counts are summed and
    post-processed (:func:`ranges_from_counts`). ``noise_multipliers=None``: no noise (a non-private fit).

    Raises:
        ValidationError: blocks of different widths, or one noise multiplier/generator per block missing.
    """
    blocks = [np.asarray(b.toarray() if hasattr(b, "toarray") else b, dtype=float) for b in blocks]
    if not blocks or len({b.shape[1] for b in blocks}) != 1:
        raise ValidationError("dp_ranges needs one (n_k, d) block per party, all with the same d")
    d = blocks[0].shape[1]
    if noise_multipliers is not None and (len(noise_multipliers) != len(blocks) or rngs is None
                                          or len(rngs) != len(blocks)):
        raise ValidationError("dp_ranges needs one noise multiplier and one generator per party")
    sigmas = tuple(0.0 for _ in blocks) if noise_multipliers is None else tuple(float(z) * math.sqrt(2.0 * d)
                                                                              for z in noise_multipliers)
    total = sum(party_release(b, z, rngs[k], grid) if noise_multipliers is not None else bin_counts(b, grid)
                for k, (b, z) in enumerate(zip(blocks, noise_multipliers or [0.0] * len(blocks))))
    noise_std = math.sqrt(sum(s * s for s in sigmas))
    n_rows = sum(b.shape[0] for b in blocks)
    bounds, fallback = ranges_from_counts(total, n_rows, noise_std, quantile, grid)
    return RangeRelease(bounds, fallback, sigmas, noise_std, occupied_threshold(noise_std, grid.size - 1))
