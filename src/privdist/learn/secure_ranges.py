"""The DP range step under secure aggregation (issues 25 and 27): central-level noise on the summed histograms.

Under ``trust="local"`` each party adds to its own histograms all the Gaussian noise its sensitivity needs
(:func:`privdist.privacy.dp_ranges.dp_ranges`), so the summed counts carry ``sqrt(K)`` times the noise a curator
would add, and a column's thin tails fall under the occupancy threshold: on the synthetic benchmark (20,000 x 20,
10 parties, total epsilon 1) the local step cut one side off the span of about half the columns and the model scored 0.867
against 0.886 with central noise simulated (measured with ``benchmarks/bench_utility.py``'s case). Under
``trust="secure_aggregation"`` the same histograms go through one secure sum
(:func:`privdist.runtime.secure.secure_once.secure_sum_once`) with distributed Skellam noise, as dpmm's training sums do
(:mod:`privdist.privacy.distributed`):

* the bin counts are integers already: party ``k`` puts ``counts_k + Sk(mu / shares)`` into the sum, its share
  drawn from its own stream ``(seed, "ranges", k)`` (OS entropy in secure mode); no scaling or rounding;
* replacing one row moves one count by -1 and another by +1 in each of the ``m`` columns: ``D2 = sqrt(2 m)``,
  ``D1 = 2 m``;
* ``mu = (z D2)^2`` with ``z`` the Gaussian noise multiplier of the step's share of the budget
  (:func:`privdist.privacy.dp_ranges.range_budget`), so the sum's noise has the scale the share buys centrally;
* each party's release is the aggregate, protected by the shares of the ``K - colluding`` honest parties:
  ``SkellamDpEvent(mu (K - colluding) / shares, D2, D1)`` in its ledger (``shares = K - colluding -
  floor(dropout_tolerance K)``, as dpmm's sums); the training's Skellam noise is calibrated on the whole budget
  composed with ``SkellamDpEvent(mu, D2, D1)`` (dpmm's ``prior``), so the printed total is the requested one;
* the summed counts are post-processed as in the local step (:func:`~privdist.privacy.dp_ranges.ranges_from_counts`)
  with the sum's public noise std ``sqrt(mu K / shares)``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SecureRanges", "secure_ranges", "secure_noise_std"]


class SecureRanges:
    """Outcome of :func:`secure_ranges`: ``total`` (the noisy summed counts (m, bins), what the aggregator
    learns), ``bounds``, ``fallback`` (as :class:`~privdist.privacy.dp_ranges.RangeRelease`), ``noise_std`` of the
    sum, and the Skellam ``(variance, l2, l1)`` triples ``event`` (each party's recorded release) and ``prior`` (the
    calibrated worst case, for the training's calibration)."""

    def __init__(self, total, bounds, fallback, noise_std: float, event: tuple, prior: tuple):
        self.total, self.bounds, self.fallback, self.noise_std = total, bounds, fallback, noise_std
        self.event, self.prior = event, prior


def _variance(z: float, m: int) -> tuple[float, float, float]:
    d2 = math.sqrt(2.0 * m)
    return (float(z) * d2) ** 2, d2, 2.0 * m


def secure_noise_std(z: float, m: int, n_parties: int, shares: int) -> float:
    """Public: the noise std per bin of the secure sum when all ``n_parties`` add their shares."""
    return math.sqrt(_variance(z, m)[0] * n_parties / shares)


def secure_ranges(blocks, z: float, *, shares: int, colluding: int, seed: int, secure: bool) -> SecureRanges:
    """Run the secure range step: party ``k`` holds the rows ``blocks[k]`` (n_k, m) of the step's columns.

    Args:
        blocks: one block per party (at least 2).
        z: the Gaussian noise multiplier of the step's budget share.
        shares: honest parties the noise is calibrated for.
        colluding: parties assumed to collude with the aggregator (their shares do not count).
        seed, secure: the fit's seed and noise mode.
    """
    from ..privacy.dp_ranges import GRID, bin_counts, ranges_from_counts
    from ..runtime.rng import step_generator
    from ..runtime.secure.secure_once import secure_sum_once

    m = blocks[0].shape[1]
    mu, d2, d1 = _variance(z, m)
    lam = mu / shares / 2.0
    vectors = []
    for k, block in enumerate(blocks):
        counts = bin_counts(block, GRID).astype(np.int64).ravel()
        g = step_generator(seed, "ranges", k, secure)
        vectors.append(counts + g.poisson(lam, counts.size) - g.poisson(lam, counts.size))
    total = secure_sum_once(np.stack(vectors), step="ranges", seed=seed, secure=secure).reshape(m, -1)
    K = len(blocks)
    noise_std = secure_noise_std(z, m, K, shares)
    bounds, fallback = ranges_from_counts(total.astype(float), sum(b.shape[0] for b in blocks), noise_std)
    honest = max(1, K - colluding)
    return SecureRanges(total, bounds, fallback, noise_std, (mu * honest / shares, d2, d1), (mu, d2, d1))
