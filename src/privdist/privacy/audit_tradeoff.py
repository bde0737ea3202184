"""Trade-off-curve (f-DP / Gaussian DP) lower bounds of a privacy audit.

A mechanism is ``f``-DP (Dong, Roth and Su 2019, "Gaussian differential privacy") when every test telling
``M(D)`` from ``M(D')`` with type-I error (false-positive rate) ``alpha`` has type-II error (false-negative rate)
``beta >= f(alpha)``. It is ``mu``-GDP when ``f = G_mu``, ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``: the curve
of telling ``N(0, 1)`` from ``N(mu, 1)``. A Gaussian release of noise multiplier ``z`` is exactly ``1/z``-GDP, and
``n`` of them compose to ``(sum 1/z_i^2)^(1/2)``-GDP (DRS 2019, Cor. 3.3), which is the PLD guarantee privdist
prints for a Gaussian ledger (:func:`privdist.privacy.accountants.composed_event`).

So a threshold test whose false rates have one-sided Clopper-Pearson upper bounds ``FPR_ub``, ``FNR_ub`` refutes,
at the joint confidence of those bounds, **every claim of ``mu``-GDP with**

    mu < mu_lb = Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub)

(the point ``(FPR_ub, FNR_ub)`` lies below ``G_mu``; the formula is symmetric in the two rates, so both
orientations of the test give the same ``mu_lb``). ``epsilon_lb_gdp(delta)`` is the epsilon of ``mu_lb``-GDP at
``delta`` (closed form ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, DRS 2019 Cor. 2.13, solved
by root finding). It is the auditing method of Nasr et al. 2023 ("Tight auditing of differentially private
machine learning", USENIX Security): it is a lower bound on the **epsilon of a Gaussian (GDP) claim** only. It
does not refute a general ``(epsilon, delta)`` claim (a mechanism can be ``(epsilon, delta)``-DP with a trade-off
curve below ``G_mu``). For a claim that is not Gaussian (Laplace, Gamma-norm, pure DP, a paper's single
``(epsilon, delta)``), :class:`ClaimCurve` checks the evaluated point against the **claimed** curve itself:
refuted when ``FPR + e^eps FNR < 1 - delta_claim(eps)`` (or with the rates swapped) for some ``eps >= 0``, with
``delta_claim(eps)`` the hockey-stick divergence of the claim's composed event from dp-accounting's PLD accountant
(pessimistic discretisation: ``delta_claim`` is over-estimated, the check is conservative), on a grid of ``eps``.

The threshold is chosen on a *selection* part of the releases (maximising ``mu_lb`` there) and evaluated once
on the other part, so the Clopper-Pearson bounds are valid (no data-dependent choice on the evaluated releases).
The releases come from :mod:`privdist.audit`; this module holds only the statistics.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy.stats import norm

from .._checks import check_probability
from .._lazy import lazy
from ..errors import ShapeMismatchError, ValidationError
from .audit_stats import (STATISTICS, _as_releases, _cp_upper, best_threshold, candidate_thresholds,
                          epsilon_from_rates, fit_statistic)

dp_event = lazy("dp_accounting.dp_event")
_pld = lazy("dp_accounting.pld")

__all__ = ["gdp_mu_from_rates", "gdp_delta", "gdp_epsilon", "ClaimCurve", "TradeoffTest", "tradeoff_audit"]


def gdp_mu_from_rates(fpr, fnr):
    """``Phi^-1(1 - fpr) - Phi^-1(fnr)``: the smallest ``mu`` whose GDP curve ``G_mu`` lies on or below the point
    ``(fpr, fnr)`` (vectorised; negative for a point above the coin-flip line, ``inf`` at a zero rate)."""
    fpr = np.clip(np.asarray(fpr, dtype=float), 0.0, 1.0)
    fnr = np.clip(np.asarray(fnr, dtype=float), 0.0, 1.0)
    out = norm.isf(fpr) - norm.ppf(fnr)
    out = np.nan_to_num(out, nan=-np.inf, posinf=np.inf, neginf=-np.inf)  # inf - inf: a rate of 0 and one of 1
    return float(out) if out.ndim == 0 else out


def gdp_delta(epsilon: float, mu: float) -> float:
    """``delta(eps)`` of ``mu``-GDP: ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (DRS 2019, Cor. 2.13)."""
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = norm.cdf(-epsilon / mu + mu / 2)
    b = math.exp(epsilon + norm.logcdf(-epsilon / mu - mu / 2))
    return float(max(a - b, 0.0))


def gdp_epsilon(mu: float, delta: float) -> float:
    """The epsilon of ``mu``-GDP at ``delta``: the root of :func:`gdp_delta` (0 when ``delta(0) <= delta``; inf for
    ``mu = inf``).

    Raises:
        ValidationError: ``delta`` outside (0, 1) or ``mu`` NaN.
    """
    delta = check_probability(delta, "delta")
    mu = float(mu)
    if math.isnan(mu):
        raise ValidationError("mu is NaN")
    if math.isinf(mu):
        return math.inf
    if mu <= 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
        if hi > 1e6:  # pragma: no cover - mu astronomically large
            return math.inf
    return float(optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))


#: eps grid of a PLD claim curve: fine where the audit bounds live, coarse towards the tail.
_EPS_GRID = np.unique(np.concatenate([np.linspace(0.0, 4.0, 401), np.linspace(4.0, 40.0, 361)]))


@functools.lru_cache(maxsize=256)
def _pld_deltas(event) -> tuple:
    from .pure import has_randomized_response, pure_pld

    if has_randomized_response(event):  # pure-DP releases: dp-accounting's PLDAccountant drops their counts
        total = pure_pld(event)
        return tuple(float(total.get_delta_for_epsilon(float(e))) for e in _EPS_GRID)
    acc = _pld.PLDAccountant()
    acc.compose(event)
    return tuple(float(acc.get_delta(float(e))) for e in _EPS_GRID)


def _in_the_clear(event) -> bool:
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return True
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _in_the_clear(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return any(_in_the_clear(e) for e in event.events)
    return False


@dataclass(frozen=True)
class ClaimCurve:
    """A claimed trade-off curve, to check an audited point ``(FPR_ub, FNR_ub)`` against.

    ``kind``: ``"gdp"`` (``mu``-GDP, exact for a composition of Gaussian releases), ``"pld"`` (the hockey-stick
    curve ``delta(eps)`` of a dp-accounting event on a grid) or ``"region"`` (one ``(epsilon, delta)`` pair, e.g.
    a paper's claim: the Kairouz-Oh-Viswanath region). Build with :meth:`from_event` or :meth:`from_epsilon`.
    """

    kind: str
    mu: float | None = None
    eps: tuple = field(default=(), repr=False)
    deltas: tuple = field(default=(), repr=False)
    label: str = ""

    @classmethod
    def from_event(cls, event) -> ClaimCurve:
        """The curve of a dp-accounting event (``None``: nothing released, i.e. ``0``-GDP). A Gaussian event of
        multiplier ``z`` is ``1/z``-GDP; anything else goes through dp-accounting's PLD accountant.

        Raises:
            UnsupportedEventError: an event the PLD accountant cannot compose.
        """
        if event is None:
            return cls("gdp", 0.0, label="nothing released")
        if _in_the_clear(event):
            return cls("gdp", math.inf, label="released in the clear")
        if isinstance(event, dp_event.GaussianDpEvent):
            z = float(event.noise_multiplier)
            return cls("gdp", math.inf if z <= 0 else 1.0 / z, label=f"Gaussian, noise multiplier {z:.6g}")
        from .pure import has_randomized_response

        if not has_randomized_response(event) and not _pld.PLDAccountant().supports(event):
            from ..errors import UnsupportedEventError

            raise UnsupportedEventError(f"the PLD accountant cannot compose event {event}")
        return cls("pld", None, tuple(float(e) for e in _EPS_GRID), _pld_deltas(event), label=type(event).__name__)

    @classmethod
    def from_epsilon(cls, epsilon: float, delta: float) -> ClaimCurve:
        """The ``(epsilon, delta)`` region of a single claim."""
        if not 0 <= delta < 1:
            raise ValidationError(f"delta must be in [0, 1), got {delta}")
        return cls("region", None, (float(epsilon),), (float(delta),), label=f"({epsilon:.4g}, {delta:.3g})-DP")

    def refuted_by(self, fpr_ub: float, fnr_ub: float) -> bool:
        """Whether the point ``(fpr_ub, fnr_ub)`` (or its mirror) lies strictly outside the claimed region."""
        if self.kind == "gdp":
            return bool(gdp_mu_from_rates(fpr_ub, fnr_ub) > self.mu)
        if self.kind == "region":
            return bool(epsilon_from_rates(fpr_ub, fnr_ub, self.deltas[0]) > self.eps[0])
        e = np.exp(np.asarray(self.eps))
        d = np.asarray(self.deltas)
        return bool(np.any(fpr_ub + e * fnr_ub < 1 - d) or np.any(fnr_ub + e * fpr_ub < 1 - d))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "mu": self.mu, "label": self.label}


def _best_mu_threshold(s0: np.ndarray, s1: np.ndarray, alpha: float, n_candidates: int):
    """The threshold and sign whose Clopper-Pearson ``mu_lb`` on these scores is largest: ``(mu, th, sign)``.

    The bounds here are at ``alpha / n_candidates`` (not ``alpha``): the maximum over many thresholds of noisy
    estimates favours the tails, where few releases fall and the estimate is most optimistic; the stricter bound
    penalises them by their real uncertainty, so the chosen threshold holds up on the evaluation part. (Only the
    choice uses it: the evaluation bound is at ``alpha``.)"""
    qs = candidate_thresholds(s0, s1, n_candidates)
    return best_threshold(s0, s1, qs, alpha / len(qs), gdp_mu_from_rates)


@dataclass
class TradeoffTest:
    """Outcome of :func:`tradeoff_audit`.

    Attributes:
        statistic, threshold, sign: the test says ``D'`` when ``sign * score > sign * threshold``;
        mu_lb: ``max(0, Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub))`` on the evaluation part: every ``mu``-GDP claim
            with ``mu < mu_lb`` is refuted at ``confidence``;
        fpr, fnr, fpr_ub, fnr_ub: the evaluated rates and their one-sided Clopper-Pearson upper bounds (each at
            ``1 - (1 - confidence)/2``, jointly at ``confidence``);
        n_select, n_eval: releases per dataset used to choose and to evaluate the test;
        selection: the selection-part ``mu_lb`` of every statistic.
    """

    statistic: str
    threshold: float
    sign: int
    mu_lb: float
    fpr: float
    fnr: float
    fpr_ub: float
    fnr_ub: float
    confidence: float
    n_select: tuple
    n_eval: tuple
    selection: dict = field(default_factory=dict)

    def epsilon_lb_gdp(self, delta: float) -> float:
        """The epsilon of ``mu_lb``-GDP at ``delta``: a lower bound on the epsilon of a **Gaussian (GDP)** claim
        only (Nasr et al. 2023); not a lower bound for an arbitrary ``(epsilon, delta)`` claim."""
        return gdp_epsilon(self.mu_lb, delta)

    def refutes(self, curve: ClaimCurve | None) -> bool:
        """Whether the evaluated point lies outside ``curve`` (``None``: no claim, never refuted)."""
        return False if curve is None else curve.refuted_by(self.fpr_ub, self.fnr_ub)

    def to_dict(self, delta: float, curve: ClaimCurve | None = None) -> dict:
        return {"statistic": self.statistic, "threshold": self.threshold, "sign": self.sign, "mu_lb": self.mu_lb,
                "mu_claim": None if curve is None or curve.kind != "gdp" else curve.mu,
                "epsilon_lb_gdp": self.epsilon_lb_gdp(delta), "fpr": self.fpr, "fnr": self.fnr,
                "fpr_ub": self.fpr_ub, "fnr_ub": self.fnr_ub, "confidence": self.confidence,
                "n_select": list(self.n_select), "n_eval": list(self.n_eval), "selection": self.selection,
                "claim_curve": None if curve is None else curve.to_dict(), "refutes_claim": self.refutes(curve)}


def tradeoff_audit(x0, x1, *, statistics=tuple(STATISTICS), confidence: float = 0.95, split: float = 0.5,
                   rng: np.random.Generator | None = None, n_candidates: int = 1024) -> TradeoffTest:
    """Choose a statistic and threshold maximising ``mu_lb`` on one part of the releases; evaluate on the other.

    Args:
        x0, x1: releases of ``D`` and ``D'`` (rows; anything reshaped to rows).
        statistics: names in :data:`privdist.privacy.audit_stats.STATISTICS` to choose from.
        confidence: joint confidence of the two Clopper-Pearson upper bounds.
        split: fraction of each dataset's releases used for the selection.
        rng: shuffles the releases before the split (default none: replicates are exchangeable).
        n_candidates: thresholds tried (quantiles of the selection scores).

    Returns:
        :class:`TradeoffTest`.

    Raises:
        ShapeMismatchError: releases of different widths. ValidationError: too few releases, bad values.
    """
    x0, x1 = _as_releases(x0, "x0"), _as_releases(x1, "x1")
    if x0.shape[1] != x1.shape[1]:
        raise ShapeMismatchError(f"releases of D have {x0.shape[1]} values, releases of D' {x1.shape[1]}")
    if not 0 < split < 1:
        raise ValidationError(f"split must be in (0, 1), got {split}")
    confidence = check_probability(confidence, "confidence")
    if rng is not None:
        x0, x1 = x0[rng.permutation(len(x0))], x1[rng.permutation(len(x1))]
    k0, k1 = max(2, int(len(x0) * split)), max(2, int(len(x1) * split))
    a0, b0, a1, b1 = x0[:k0], x0[k0:], x1[:k1], x1[k1:]
    if len(b0) < 2 or len(b1) < 2:
        raise ValidationError("too few releases to hold out an evaluation part")
    alpha = (1 - confidence) / 2
    chosen, selection = None, {}
    for name in statistics:
        f = fit_statistic(name, a0, a1)
        mu, th, sign = _best_mu_threshold(f(a0), f(a1), alpha, n_candidates)
        selection[name] = mu
        if chosen is None or mu > chosen[1]:
            chosen = (name, mu, th, sign, f)
    name, _, th, sign, f = chosen
    s0, s1, t = sign * f(b0), sign * f(b1), sign * th
    fp, fn = int(np.sum(s0 > t)), int(np.sum(s1 <= t))
    fpr_ub = float(_cp_upper(np.array([fp]), len(b0), alpha)[0])
    fnr_ub = float(_cp_upper(np.array([fn]), len(b1), alpha)[0])
    mu_lb = max(0.0, gdp_mu_from_rates(fpr_ub, fnr_ub))
    return TradeoffTest(name, th, sign, mu_lb, fp / len(b0), fn / len(b1), fpr_ub, fnr_ub, confidence,
                        (len(a0), len(a1)), (len(b0), len(b1)), selection)
