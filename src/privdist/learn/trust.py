"""The estimators' trust model (issue 27): ``trust="local"`` or ``"secure_aggregation"`` (dpmm's sums through secure
aggregation with distributed Skellam noise, :mod:`privdist.algorithms.dpmm`), or ``"auto"`` (the default): secure
aggregation where it applies (``algorithm="dpmm"`` with noise), local otherwise.

Why secure aggregation by default (issue 25/27): under local trust every party adds the noise its own sensitivity
needs, so the model carries ``sqrt(K)`` times a central curator's noise and loses to one party alone (Adult, 10
parties, total epsilon 1: 0.831 local against 0.835 for the typical party alone; 1,000 x 30: 0.784 against 0.835
with secure aggregation, ``benchmarks/bench_secagg.py``). Secure aggregation with distributed noise is the trust
model of production federated learning (Bonawitz et al. 2017; Kairouz, Liu & Steinke 2021): it assumes an
honest-but-curious aggregator and at most ``colluding`` parties colluding with it, and the privacy report prints
that assumption. ``trust="local"`` assumes nothing of anyone."""

from __future__ import annotations

from ..algorithms._secure import TRUST
from ..errors import UnknownNameError, ValidationError

__all__ = ["TRUST", "TRUST_CHOICES", "resolve_trust", "check_trust", "trust_params", "trust_report",
           "secure_sum_params", "LOCAL_TRUST"]

#: The privacy report's ``trust`` section under local trust (horizontal and vertical estimators).
LOCAL_TRUST = {"model": "local", "assumes": "each party's releases carry all the noise its own sensitivity needs; "
                                            "the coordinator may see every message"}

#: What a user may ask for: ``"auto"`` resolves by :func:`resolve_trust`.
TRUST_CHOICES = ("auto",) + TRUST


def resolve_trust(algorithm: str, trust, epsilon) -> str:
    """``trust`` with ``"auto"`` resolved: secure aggregation for dpmm with noise, local otherwise (also for the
    vertical estimator's admm_sharing: on Adult with 3 parties, total epsilon 1, 3 draws, secure 0.826 against
    local 0.830, since hiding a party's own share doubles the sensitivity)."""
    if trust != "auto":
        return trust
    return "secure_aggregation" if algorithm == "dpmm" and epsilon is not None else "local"


def check_trust(algorithm: str, trust) -> str:
    """A trust model the algorithm supports (named errors otherwise): secure aggregation is dpmm's (the horizontal
    estimators) and admm_sharing's (the vertical one)."""
    if not isinstance(trust, str) or trust not in TRUST_CHOICES:
        raise UnknownNameError("trust", str(trust), TRUST_CHOICES)
    if trust == "secure_aggregation" and algorithm not in ("dpmm", "admm_sharing"):
        raise ValidationError(f"trust='secure_aggregation' is available with algorithm='dpmm' (its sums are what "
                              f"secure aggregation adds up), got algorithm={algorithm!r}")
    return trust


def trust_params(est, ranges=None) -> dict:
    """The algorithm parameters of the estimator's trust model (none for ``"local"``). Under secure aggregation
    with a DP range step (``ranges``, a :class:`~privdist.learn.ranges.RangeStep` that released), the training is
    calibrated on the whole budget composed with the range release (dpmm's ``prior``: the step's secure Skellam
    sum, or its Gaussian release when the step ran locally), not on a split of it: the Skellam releases are not
    Gaussian, so a split would not compose exactly."""
    trust = _trust(est)
    if trust == "local":
        return {}
    if ranges is None or not ranges.released or est.epsilon is None:
        return {"trust": trust}
    prior = ranges.prior or (max(float(z) for z in ranges.noise_multipliers.values()),)
    return {"trust": trust, "epsilon": float(est.epsilon), "delta": float(est.delta), "prior": prior}


def secure_sum_params(est) -> dict | None:
    """The DP range step's secure-sum settings (:func:`privdist.learn.ranges.fit_ranges`): ``colluding`` and
    ``dropout_tolerance`` of dpmm's ``algorithm_params`` under secure aggregation, None under local trust."""
    if _trust(est) == "local" or est.epsilon is None:
        return None
    params = dict(est.algorithm_params or {})
    return {"colluding": int(params.get("colluding", 0)),
            "dropout_tolerance": float(params.get("dropout_tolerance", 0.0))}


def trust_report(est, algo) -> dict:
    """The privacy report's ``trust`` section: the model, what it assumes and, for secure aggregation, the
    calibration's tolerance (the per-party guarantees above are recomputed from the parties in each sum)."""
    if _trust(est) == "local" or not getattr(algo, "secure", False):
        return dict(LOCAL_TRUST)
    K = int(est.n_agents_)
    return {"model": "secure_aggregation", "parties": K, "colluding": algo.colluding,
            "dropout_tolerance": algo.dropout_tolerance, "calibrated_honest_shares": algo.shares(K),
            "assumes": "an honest-but-curious aggregator that sees masked vectors and the sums only and announces one "
                       f"set of present parties per round; at most {algo.colluding} part"
                       f"{'y' if algo.colluding == 1 else 'ies'} colluding with it; the requested budget holds while "
                       f"at least {algo.shares(K)} honest parties' noise shares are in every sum",
            "accountant": "rdp: the Skellam RDP bound (Agarwal, Kairouz & Liu 2021) at integer orders, converted by "
                          "dp-accounting; the pld column repeats it (no PLD is published for this mechanism)"}


def _trust(est) -> str:
    return resolve_trust(est.algorithm, getattr(est, "trust", "local"), est.epsilon)
