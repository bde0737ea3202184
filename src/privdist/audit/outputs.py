"""``audit_outputs``: audit any output on neighbouring inputs (an estimator's model, a file's numbers, ...).

Where :func:`privdist.audit.audit` generates releases through an algorithm's own rounds, this takes the releases
from the caller: two arrays of outputs (rows) or two samplers that produce one output per call, on neighbouring
inputs ``D`` and ``D'``. It runs both tests of the audit on them (the threshold test at one delta,
:mod:`privdist.privacy.audit_stats`; the trade-off test, :mod:`privdist.privacy.audit_tradeoff`, Dong, Roth and
Su 2019; Nasr et al. 2023) against the claim the outputs are printed with, and returns both bounds and the
verdict.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np

from .._checks import check_int, check_nonnegative, check_probability
from ..errors import ValidationError
from ..privacy.audit_stats import ThresholdTest, threshold_audit
from ..privacy.audit_tradeoff import ClaimCurve, TradeoffTest, tradeoff_audit

__all__ = ["OutputAudit", "audit_outputs"]


@dataclass
class OutputAudit:
    """What :func:`audit_outputs` found (``to_dict`` is JSON-ready).

    ``epsilon_lb``: the threshold test's bound at ``delta`` (any ``(epsilon, delta)`` claim); ``tradeoff``: the
    trade-off test (``mu_lb``; ``epsilon_lb_gdp`` bounds a Gaussian claim's epsilon only); ``curve``: the claimed
    trade-off curve the evaluated point was checked against; ``verdict``: ``"refuted"`` when either test refutes
    the claim (each at ``confidence``; together at ``1 - 2 (1 - confidence)``), else ``"consistent"``.
    """

    epsilon: float
    delta: float
    n: tuple
    test: ThresholdTest = field(repr=False)
    tradeoff: TradeoffTest = field(repr=False)
    curve: ClaimCurve
    epsilon_lb: float
    verdict: str
    refuted_by: list

    @property
    def epsilon_lb_gdp(self) -> float:
        return self.tradeoff.epsilon_lb_gdp(self.delta)

    def to_dict(self) -> dict:
        t = self.tradeoff.to_dict(self.delta, self.curve)
        t["ratio_to_claim"] = t["epsilon_lb_gdp"] / self.epsilon if self.epsilon > 0 else None
        b = self.test.bounds[self.test.deltas[0]]
        return {"claim": {"epsilon": self.epsilon, "delta": self.delta, "curve": self.curve.to_dict()},
                "releases_per_dataset": list(self.n), "epsilon_lb": self.epsilon_lb,
                "threshold_test": {"statistic": self.test.statistic, "threshold": self.test.threshold,
                                   "sign": self.test.sign, **b},
                "tradeoff": t, "verdict": self.verdict, "refuted_by": list(self.refuted_by)}


def _draw(source, n: int | None, name: str) -> np.ndarray:
    if not callable(source):
        x = np.asarray(source, dtype=float)
        return x.reshape(len(x), -1) if x.ndim != 2 else x
    if n is None:
        raise ValidationError(f"{name} is a sampler: give n, the outputs to draw from it")
    try:
        takes_index = len(inspect.signature(source).parameters) >= 1
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        takes_index = False
    rows = [np.asarray(source(i) if takes_index else source(), dtype=float).ravel() for i in range(n)]
    if len({r.shape for r in rows}) != 1:
        raise ValidationError(f"{name} returned outputs of different sizes")
    return np.vstack(rows)


def audit_outputs(f0, f1, n: int | None = None, *, epsilon: float, delta: float, event=None, mu: float | None = None,
                  confidence: float = 0.95, rng: np.random.Generator | None = None) -> OutputAudit:
    """Audit outputs on neighbouring inputs against the ``(epsilon, delta)`` they are printed with.

    Args:
        f0, f1: outputs on ``D`` and on ``D'``: arrays (one output per row, anything reshaped to rows), or
            samplers: callables of no argument or of the replicate index ``i`` (e.g. to seed fit ``i``), each
            returning one output (flattened).
        n: outputs to draw per sampler (ignored for arrays).
        epsilon, delta: the printed claim (``delta`` in [0, 1)).
        event: the claim as a dp-accounting event (e.g. the composed event of the run's ledger), checked through
            its trade-off curve (``mu``-GDP for a Gaussian event, PLD otherwise); takes precedence over ``mu``.
        mu: the claim as ``mu``-GDP (a Gaussian claim); without ``event`` and ``mu`` the trade-off test is checked
            against the ``(epsilon, delta)`` region.
        confidence: confidence of each test.
        rng: shuffles the outputs before the selection/evaluation split (default none: replicates are
            exchangeable).

    Returns:
        :class:`OutputAudit`.

    Raises:
        ValidationError: bad claim, samplers without ``n``, too few outputs, outputs of different sizes.
        ShapeMismatchError: outputs of ``D`` and ``D'`` of different widths.
    """
    epsilon = check_nonnegative(epsilon, "epsilon")
    if not 0 <= delta < 1:
        raise ValidationError(f"delta must be in [0, 1), got {delta}")
    confidence = check_probability(confidence, "confidence")
    if n is not None:
        n = check_int(n, "n", 8)
    x0, x1 = _draw(f0, n, "f0"), _draw(f1, n, "f1")
    if event is not None:
        curve = ClaimCurve.from_event(event)
    elif mu is not None:
        curve = ClaimCurve("gdp", check_nonnegative(mu, "mu"), label=f"{mu:.6g}-GDP")
    else:
        curve = ClaimCurve.from_epsilon(epsilon, delta)
    seed = None if rng is None else int(rng.integers(2**63))
    test = threshold_audit(x0, x1, delta, confidence=confidence,
                           rng=None if seed is None else np.random.default_rng(seed))
    trade = tradeoff_audit(x0, x1, confidence=confidence, rng=None if seed is None else np.random.default_rng(seed))
    lb = test.epsilon_lb(delta)
    refuted_by = (["threshold"] if lb > epsilon else []) + (["tradeoff"] if trade.refutes(curve) else [])
    verdict = "refuted" if refuted_by else "consistent"
    if not math.isfinite(epsilon):  # pragma: no cover - check_nonnegative rejects inf
        verdict = "not guaranteed"
    return OutputAudit(epsilon, float(delta), (len(x0), len(x1)), test, trade, curve, lb, verdict, refuted_by)
