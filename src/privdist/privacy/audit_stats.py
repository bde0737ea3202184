"""Statistics of a privacy audit: Clopper-Pearson bounds and epsilon lower bounds from hypothesis tests.

A mechanism ``M`` is ``(epsilon, delta)``-DP for neighbours ``D, D'`` only if every test that tells ``M(D)`` from
``M(D')`` has false-positive rate ``FPR`` and false-negative rate ``FNR`` in the privacy region (Kairouz, Oh and
Viswanath 2015)

    FPR + e^epsilon FNR >= 1 - delta   and   FNR + e^epsilon FPR >= 1 - delta,

so a test with upper confidence bounds ``FPR_ub``, ``FNR_ub`` certifies, at that confidence,

    epsilon >= max(log((1 - delta - FNR_ub) / FPR_ub), log((1 - delta - FPR_ub) / FNR_ub))

(Jagielski, Ullman and Oprea 2020; Nasr et al. 2021). This module holds only the statistics (no runs): the
Clopper-Pearson interval, that bound, a threshold test whose statistic and threshold are chosen on one half of
the releases and evaluated on the other, two statistics (the best projection, i.e. the difference of the means,
and a Gaussian likelihood ratio with a shared covariance), and a plug-in hockey-stick estimate. The releases come
from :mod:`privdist.audit`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from .._checks import check_probability
from ..errors import ShapeMismatchError, ValidationError

__all__ = ["clopper_pearson", "epsilon_from_rates", "epsilon_lower_bound", "region_fnr", "ThresholdTest",
           "STATISTICS", "fit_statistic", "threshold_audit", "hockey_stick_epsilon"]


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact two-sided ``1 - alpha`` Clopper-Pearson interval of a binomial proportion ``k / n``.

    Args:
        k: successes, ``0 <= k <= n``.
        n: trials (>= 1).
        alpha: total error probability (``alpha / 2`` in each tail).

    Returns:
        ``(lower, upper)``; ``lower = 0`` when ``k = 0`` and ``upper = 1`` when ``k = n``.

    Raises:
        ValidationError: ``n < 1``, ``k`` outside ``[0, n]`` or ``alpha`` outside (0, 1).
    """
    alpha = check_probability(alpha, "alpha")
    if int(n) != n or n < 1:
        raise ValidationError(f"n must be an integer >= 1, got {n}")
    if int(k) != k or not 0 <= k <= n:
        raise ValidationError(f"k must be an integer in [0, n={n}], got {k}")
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def _cp_upper(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided ``1 - alpha`` Clopper-Pearson upper bounds of ``k / n`` (vectorised)."""
    k = np.asarray(k, dtype=float)
    out = np.ones_like(k)
    inner = k < n
    out[inner] = stats.beta.ppf(1 - alpha, k[inner] + 1, n - k[inner])
    return out


def epsilon_from_rates(fpr, fnr, delta: float):
    """``max(log((1 - delta - fnr)/fpr), log((1 - delta - fpr)/fnr))``, the smallest epsilon whose region at
    ``delta`` contains ``(fpr, fnr)``; 0 when the point is inside every region (vectorised, never negative)."""
    fpr = np.asarray(fpr, dtype=float)
    fnr = np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1 - delta - fnr, 0.0) / fpr)
        b = np.log(np.maximum(1 - delta - fpr, 0.0) / fnr)
    out = np.fmax(np.nan_to_num(a, nan=-np.inf), np.nan_to_num(b, nan=-np.inf))
    out = np.maximum(out, 0.0)
    return float(out) if out.ndim == 0 else out


def epsilon_lower_bound(fp: int, n_neg: int, fn: int, n_pos: int, delta: float,
                        confidence: float = 0.95) -> dict:
    """The epsilon a threshold test certifies at ``delta`` with ``confidence``.

    ``FPR`` and ``FNR`` get one-sided Clopper-Pearson upper bounds at ``1 - (1 - confidence)/2`` each, so the
    pair holds jointly with probability ``>= confidence`` (Bonferroni).

    Args:
        fp: false positives among ``n_neg`` releases of ``D`` (the test said ``D'``).
        n_neg: releases of ``D`` evaluated.
        fn: false negatives among ``n_pos`` releases of ``D'``.
        n_pos: releases of ``D'`` evaluated.
        delta: the delta of the audited claim, in [0, 1).
        confidence: joint confidence of the two upper bounds.

    Returns:
        ``{"epsilon_lb", "fpr", "fnr", "fpr_ub", "fnr_ub", "confidence"}``.
    """
    if not 0 <= delta < 1:
        raise ValidationError(f"delta must be in [0, 1), got {delta}")
    confidence = check_probability(confidence, "confidence")
    a = (1 - confidence) / 2
    fpr_ub = float(_cp_upper(np.array([fp]), n_neg, a)[0])
    fnr_ub = float(_cp_upper(np.array([fn]), n_pos, a)[0])
    return {"epsilon_lb": epsilon_from_rates(fpr_ub, fnr_ub, delta), "fpr": fp / n_neg, "fnr": fn / n_pos,
            "fpr_ub": fpr_ub, "fnr_ub": fnr_ub, "confidence": confidence}


def region_fnr(fpr, epsilon: float, delta: float):
    """Lower boundary of the ``(epsilon, delta)`` privacy region: the smallest ``FNR`` allowed at ``fpr``."""
    fpr = np.asarray(fpr, dtype=float)
    e = math.exp(min(epsilon, 700.0))
    return np.maximum.reduce([np.zeros_like(fpr), 1 - delta - e * fpr, (1 - delta - fpr) / e])


# ---------------------------------------------------------------------------------------------- statistics
def _as_releases(x, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    x = x.reshape(len(x), -1) if x.ndim != 2 else x
    if x.shape[0] < 4:
        raise ValidationError(f"{name} needs at least 4 releases, got {x.shape[0]}")
    if not np.isfinite(x).all():
        raise ValidationError(f"{name} contains NaN or infinity")
    return x


def _projection(x0: np.ndarray, x1: np.ndarray):
    """Best projection of the release: onto the difference of the means (optimal for an isotropic Gaussian)."""
    w = x1.mean(0) - x0.mean(0)
    norm = np.linalg.norm(w)
    w = w / norm if norm > 0 else np.eye(x0.shape[1])[0]
    return lambda x: x @ w


def _gaussian_lr(x0: np.ndarray, x1: np.ndarray):
    """Log likelihood ratio of two Gaussians with the pooled covariance (shrunk towards its diagonal mean so
    that it is invertible with few releases): ``(mu1 - mu0)^T S^-1 x``, up to a constant."""
    d = x1.mean(0) - x0.mean(0)
    c = np.vstack([x0 - x0.mean(0), x1 - x1.mean(0)])
    n, p = c.shape
    S = c.T @ c / max(n - 2, 1)
    scale = np.trace(S) / p if np.trace(S) > 0 else 1.0
    shrink = min(1.0, p / max(n, 1))
    S = (1 - shrink) * S + shrink * scale * np.eye(p) + 1e-12 * scale * np.eye(p)
    w = np.linalg.solve(S, d)
    if not np.any(w):
        w = np.eye(p)[0]
    return lambda x: x @ w


#: Statistics a threshold test can use: name -> fit(x0, x1) -> (releases -> scores).
STATISTICS = {"projection": _projection, "gaussian_lr": _gaussian_lr}


def fit_statistic(name: str, x0, x1):
    """The statistic ``name`` of :data:`STATISTICS` fitted on releases ``x0`` (of D) and ``x1`` (of D')."""
    if name not in STATISTICS:
        from ..errors import UnknownNameError

        raise UnknownNameError("audit statistic", name, list(STATISTICS))
    return STATISTICS[name](_as_releases(x0, "x0"), _as_releases(x1, "x1"))


def candidate_thresholds(s0: np.ndarray, s1: np.ndarray, n_candidates: int) -> np.ndarray:
    """``n_candidates`` quantiles of the pooled scores (unique): the thresholds a test chooses from."""
    return np.unique(np.quantile(np.concatenate([s0, s1]), np.linspace(0.0, 1.0, n_candidates)))


def threshold_rate_bounds(s0: np.ndarray, s1: np.ndarray, qs: np.ndarray, alpha: float):
    """For both orientations (``sign = 1``: say ``D'`` when the score is > the threshold, ``-1``: when it is <):
    yields ``(sign, thresholds, FPR_ub, FNR_ub)``, the one-sided Clopper-Pearson upper bounds at ``alpha`` of the
    rates of every threshold ``qs`` (``thresholds`` in the oriented scale: ``threshold = thresholds[j] * sign``)."""
    for sign in (1, -1):
        a, b = np.sort(sign * s0), np.sort(sign * s1)
        th = np.sort(sign * qs)
        fp = len(a) - np.searchsorted(a, th, side="right")  # D releases the test calls D'
        fn = np.searchsorted(b, th, side="right")  # D' releases it calls D
        yield sign, th, _cp_upper(fp, len(a), alpha), _cp_upper(fn, len(b), alpha)


def best_threshold(s0: np.ndarray, s1: np.ndarray, qs: np.ndarray, alpha: float, bound) -> tuple:
    """The threshold of ``qs`` and orientation whose ``bound(FPR_ub, FNR_ub)`` (vectorised, e.g. an epsilon or a
    ``mu`` lower bound) is largest on these scores: ``(value, threshold, sign)``."""
    best = (-math.inf, float(qs[0]), 1)
    for sign, th, fpr_ub, fnr_ub in threshold_rate_bounds(s0, s1, qs, alpha):
        value = bound(fpr_ub, fnr_ub)
        j = int(np.argmax(value))
        if value[j] > best[0]:
            best = (float(value[j]), float(th[j] * sign), sign)
    return best


def _best_threshold(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float, n_candidates: int = 256):
    """The threshold (test: say ``D'`` when the score is > it, or < it with ``sign = -1``) whose
    Clopper-Pearson epsilon bound on these scores is largest. Returns ``(eps, threshold, sign)``."""
    return best_threshold(s0, s1, candidate_thresholds(s0, s1, n_candidates), alpha,
                          lambda fpr, fnr: epsilon_from_rates(fpr, fnr, delta))


@dataclass
class ThresholdTest:
    """Outcome of :func:`threshold_audit`.

    Attributes:
        statistic: name of the chosen statistic; threshold, sign: the test says ``D'`` when
            ``sign * score > sign * threshold``; deltas: the deltas bounds were computed at;
        bounds: per delta, the dict of :func:`epsilon_lower_bound` (on the evaluation half);
        n_select, n_eval: releases per dataset used to choose the test and to evaluate it;
        curve: (FPR, FNR) of the chosen statistic at every threshold on the evaluation half (for the plot);
        selection: the selection-half epsilon estimate of every statistic;
        hockey_stick: :func:`hockey_stick_epsilon` of the chosen statistic's evaluation scores at the first
            delta (a point estimate for orientation, certifies nothing).
    """

    statistic: str
    threshold: float
    sign: int
    deltas: tuple
    bounds: dict
    n_select: tuple
    n_eval: tuple
    curve: np.ndarray = field(repr=False)
    selection: dict = field(default_factory=dict)
    hockey_stick: float | None = None

    def epsilon_lb(self, delta: float | None = None) -> float:
        """The certified lower bound at ``delta`` (default: the first delta)."""
        return self.bounds[self.deltas[0] if delta is None else delta]["epsilon_lb"]


def threshold_audit(x0, x1, delta, *, statistics=tuple(STATISTICS), confidence: float = 0.95,
                    split: float = 0.5, rng: np.random.Generator | None = None) -> ThresholdTest:
    """Choose a statistic and a threshold on one part of the releases; bound epsilon on the other.

    Args:
        x0: releases of ``D``, shape (n0, p) (anything reshaped to rows).
        x1: releases of ``D'``, shape (n1, p).
        delta: one delta or a sequence of deltas in [0, 1) to bound epsilon at (the test is chosen at the first).
        statistics: names in :data:`STATISTICS` to choose from (on the selection part only).
        confidence: joint Clopper-Pearson confidence of the evaluation bounds.
        split: fraction of each dataset's releases used for the selection.
        rng: shuffles the releases before the split (default: no shuffle; replicates are exchangeable).

    Returns:
        :class:`ThresholdTest`.

    Raises:
        ShapeMismatchError: releases of different widths. ValidationError: too few releases, bad values.
    """
    x0, x1 = _as_releases(x0, "x0"), _as_releases(x1, "x1")
    if x0.shape[1] != x1.shape[1]:
        raise ShapeMismatchError(f"releases of D have {x0.shape[1]} values, releases of D' {x1.shape[1]}")
    deltas = tuple(float(d) for d in (delta if np.ndim(delta) else [delta]))
    if not 0 < split < 1:
        raise ValidationError(f"split must be in (0, 1), got {split}")
    if rng is not None:
        x0, x1 = x0[rng.permutation(len(x0))], x1[rng.permutation(len(x1))]
    k0, k1 = max(2, int(len(x0) * split)), max(2, int(len(x1) * split))
    a0, b0, a1, b1 = x0[:k0], x0[k0:], x1[:k1], x1[k1:]
    if len(b0) < 2 or len(b1) < 2:
        raise ValidationError("too few releases to hold out an evaluation half")
    alpha = (1 - check_probability(confidence, "confidence")) / 2
    chosen, selection = None, {}
    for name in statistics:
        f = fit_statistic(name, a0, a1)
        # choose the threshold on the selection half too (scored with a second fit would need a third split)
        eps, th, sign = _best_threshold(f(a0), f(a1), deltas[0], alpha)
        selection[name] = eps
        if chosen is None or eps > chosen[1]:
            chosen = (name, eps, th, sign, f)
    name, _, th, sign, f = chosen
    s0, s1 = sign * f(b0), sign * f(b1)
    t = sign * th
    fp, fn = int(np.sum(s0 > t)), int(np.sum(s1 <= t))
    bounds = {d: epsilon_lower_bound(fp, len(b0), fn, len(b1), d, confidence) for d in deltas}
    grid = np.unique(np.concatenate([s0, s1]))
    curve = np.column_stack([(len(s0) - np.searchsorted(np.sort(s0), grid, side="right")) / len(s0),
                             np.searchsorted(np.sort(s1), grid, side="right") / len(s1)])
    hs = hockey_stick_epsilon(s0, s1, deltas[0], bins=max(5, min(50, len(s0) // 20))) if deltas[0] > 0 else None
    return ThresholdTest(name, th, sign, deltas, bounds, (len(a0), len(a1)), (len(b0), len(b1)), curve, selection,
                         hs)


def hockey_stick_epsilon(s0, s1, delta: float, bins: int = 50) -> float:
    """Plug-in estimate (no confidence) of the smallest epsilon with hockey-stick divergence
    ``sum max(0, p1 - e^eps p0) <= delta`` in both directions, from histograms of one-dimensional scores.

    A point estimate for orientation only (histogram bins at quantiles, half a pseudo-count per bin): it is
    biased, depends on the binning, and certifies nothing.
    """
    s0, s1 = np.asarray(s0, float).ravel(), np.asarray(s1, float).ravel()
    edges = np.quantile(np.concatenate([s0, s1]), np.linspace(0, 1, bins + 1))
    edges = np.unique(edges)
    # half a count per bin (Jeffreys smoothing): an empty bin would otherwise make the estimate infinite
    c0, c1 = np.histogram(s0, edges)[0] + 0.5, np.histogram(s1, edges)[0] + 0.5
    p0, p1 = c0 / c0.sum(), c1 / c1.sum()

    def hs(eps):
        e = math.exp(eps)
        return max(np.maximum(p1 - e * p0, 0).sum(), np.maximum(p0 - e * p1, 0).sum())

    if hs(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while hs(hi) > delta and hi < 50:
        lo, hi = hi, hi * 2
    if hs(hi) > delta:
        return math.inf
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if hs(mid) > delta else (lo, mid)
    return hi
