"""The parameters of sparse-graph secure aggregation (SecAgg+, issue 41): the degree ``k`` of the masking graph and
the Shamir threshold ``t``, chosen from the number of parties, the colluding parties and the dropout tolerance.

Bell, Bonawitz, Gascón, Lepoint, Raykova, "Secure Single-Server Aggregation with (Poly)Logarithmic Overhead" (CCS
2020) replace the complete masking graph of Bonawitz et al. (CCS 2017) with a ``k``-regular graph of ``K`` nodes
(a Harary graph whose nodes are randomly relabelled, drawn from public randomness after the keys are announced): each
party masks with its ``k`` neighbours only and Shamir-shares its two round seeds among them, ``t``-out-of-``k``. The
protocol is :mod:`privdist.runtime.secure.secagg_plus`; here, the public arithmetic that chooses ``k`` and ``t`` and
bounds what the choice can cost, with ``C`` colluding parties and ``D = floor(dropout_tolerance K)`` dropouts fixed
independently of the graph (the graph is drawn after both are set):

* **security** (at most ``2^-sigma``, ``sigma = 40``): (a) no honest party has ``t`` or more colluding neighbours
  (they alone would hold ``t`` shares of both its seeds): ``K * P[Hyp(K-1, C, k) >= t]``; (b) the graph stays
  connected once the colluding and dropped parties are removed (otherwise the aggregator learns the partial sum of
  each piece): in the Harary graph with offsets ``1..k/2`` a cut needs ``k/2`` consecutive removed nodes, so
  ``K * prod_{i<k/2} (C+D-i)/(K-i)`` bounds it (union over the starting node; a cycle needs two such runs to split,
  so this over-counts);
* **correctness** (at most ``2^-eta``, ``eta = 30``): every party keeps ``t`` surviving neighbours, so its seed can be
  rebuilt: ``K * P[Hyp(K-1, D, k) > k - t]``.

:func:`choose_graph` takes the smallest even ``k`` (and for it the smallest ``t``) that meets both; when none below
``K - 1`` does, the complete graph (``k = K - 1``, ``t = C + 1``), whose guarantees hold with probability 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._checks import check_int
from ..errors import ValidationError

__all__ = ["GraphParameters", "choose_graph", "SIGMA", "ETA"]

#: Statistical security parameter (the failure of privacy is at most 2^-SIGMA) and correctness parameter (a round
#: fails to rebuild a seed with probability at most 2^-ETA), Bell et al.'s choices.
SIGMA, ETA = 40, 30


def _log2(p: float) -> float:
    return -math.inf if p <= 0 else math.log2(p)


def _hyp_tail(population: int, marked: int, draws: int, at_least: int) -> float:
    """``P[Hyp(population, marked, draws) >= at_least]`` (scipy's hypergeometric survival function)."""
    if at_least <= 0:
        return 1.0
    if at_least > min(marked, draws):
        return 0.0
    from scipy.stats import hypergeom

    return float(hypergeom.sf(at_least - 1, population, marked, draws))


def _cut(n: int, removed: int, k: int) -> float:
    """Union bound on a run of ``k/2`` consecutive removed nodes in the relabelled Harary graph."""
    half = k // 2
    if removed < half:
        return 0.0
    p = 1.0
    for i in range(half):
        p *= (removed - i) / (n - i)
    return min(1.0, n * p)


@dataclass(frozen=True)
class GraphParameters:
    """The masking graph of a secure sum over ``parties`` parties and what it assumes (module docstring).

    Attributes:
        parties, degree, threshold: ``K``, ``k`` (``K - 1``: the complete graph) and ``t``.
        colluding, dropouts: the ``C`` and ``D`` the choice assumes.
        log2_security_failure, log2_correctness_failure: log2 of the bounds (``-inf``: zero).
    """

    parties: int
    degree: int
    threshold: int
    colluding: int
    dropouts: int
    log2_security_failure: float
    log2_correctness_failure: float

    @property
    def complete(self) -> bool:
        return self.degree >= self.parties - 1

    def describe(self) -> str:
        """One line for the privacy report: the graph and the assumptions its guarantee rests on."""
        def bound(x):
            return "0" if x == -math.inf else f"2^{x:.1f}"
        graph = "the complete graph" if self.complete else f"k={self.degree} neighbours of a random regular graph"
        return (f"masks with {graph}, seeds shared {self.threshold}-out-of-{self.degree}; assumes at most "
                f"{self.colluding} colluding and {self.dropouts} dropped parties fixed before the graph is drawn; "
                f"privacy fails with probability <= {bound(self.log2_security_failure)}, a round cannot be "
                f"recovered with probability <= {bound(self.log2_correctness_failure)}")

    def to_dict(self) -> dict:
        return {"parties": self.parties, "degree": self.degree, "threshold": self.threshold,
                "colluding": self.colluding, "dropouts": self.dropouts,
                "log2_security_failure": self.log2_security_failure,
                "log2_correctness_failure": self.log2_correctness_failure}


def _bounds(n: int, colluding: int, dropouts: int, k: int, t: int) -> tuple[float, float]:
    sec = n * _hyp_tail(n - 1, colluding, k, t) + _cut(n, colluding + dropouts, k)
    cor = n * _hyp_tail(n - 1, dropouts, k, k - t + 1)
    return min(1.0, sec), min(1.0, cor)


def choose_graph(parties: int, colluding: int = 0, dropouts: int = 0, threshold: int | None = None,
                 sigma: int = SIGMA, eta: int = ETA) -> GraphParameters:
    """The smallest even degree ``k < K - 1`` (and threshold ``t``, or the given one) meeting the security bound
    ``2^-sigma`` and the correctness bound ``2^-eta`` (module docstring); the complete graph when none does.

    Raises:
        ValidationError: fewer than 3 parties, or no graph (not even the complete one) meets the bounds, e.g.
            ``colluding + dropouts >= K - 1``.
    """
    n = check_int(parties, "parties", 3)
    c, d = check_int(colluding, "colluding", 0), check_int(dropouts, "dropouts", 0)
    sec_max, cor_max = 2.0 ** -check_int(sigma, "sigma", 1), 2.0 ** -check_int(eta, "eta", 1)
    if threshold is not None:
        threshold = check_int(threshold, "threshold", 1)
    for k in range(2, n - 1, 2):
        if _cut(n, c + d, k) > sec_max:
            continue  # the graph would split whatever the threshold
        candidates = [threshold] if threshold is not None else range(1, k + 1)
        for t in candidates:
            if t > k:
                break
            sec, cor = _bounds(n, c, d, k, t)
            if sec <= sec_max and cor <= cor_max:
                return GraphParameters(n, k, t, c, d, _log2(sec), _log2(cor))
            if cor > cor_max:
                break  # a larger t only needs more survivors
    t = c + 1 if threshold is None else threshold
    if t <= c or t > n - 1 - d:
        raise ValidationError(f"no masking graph of {n} parties meets the bounds with {c} colluding and {d} dropped "
                              f"parties (threshold {t}): the complete graph needs colluding < threshold <= parties - 1 "
                              "- dropouts")
    return GraphParameters(n, n - 1, t, c, d, -math.inf, -math.inf)
