"""The estimators' trust model (issue 27): ``trust="local"`` or ``"secure_aggregation"`` (dpmm's sums through secure
aggregation with distributed Skellam noise, :mod:`privdist.algorithms.dpmm`), or ``"auto"`` (the default): secure
aggregation where it applies (``algorithm="dpmm"`` or ``"ssp"`` with noise), local otherwise.

Why secure aggregation by default (issue 25/27): under local trust every party adds the noise its own sensitivity
needs, so the model carries ``sqrt(K)`` times a central curator's noise and loses to one party alone (Adult, 10
parties, total epsilon 1: 0.831 local against 0.835 for the typical party alone; 1,000 x 30: 0.784 against 0.835
with secure aggregation, ``benchmarks/bench_secagg.py``). Secure aggregation with distributed noise is the trust
model of production federated learning (Bonawitz et al. 2017; Kairouz, Liu & Steinke 2021): it assumes an
honest-but-curious aggregator and at most ``colluding`` parties colluding with it, and the privacy report prints
that assumption. ``trust="local"`` assumes nothing of anyone."""

from __future__ import annotations

from ..privacy.plan import TRUST_CHOICES

__all__ = ["TRUST_CHOICES", "trust_report", "LOCAL_TRUST"]

#: The privacy report's ``trust`` section under local trust (horizontal and vertical estimators).
LOCAL_TRUST = {"model": "local", "assumes": "each party's releases carry all the noise its own sensitivity needs; "
                                            "the coordinator may see every message"}


def trust_report(plan, algo) -> dict:
    """The privacy report's ``trust`` section of a fit with ``plan`` trained by ``algo``: the model, what it assumes
    and, for secure aggregation, the calibration's tolerance (the per-party guarantees are recomputed from the
    parties in each sum). The trust model itself is the plan's (:func:`~privdist.privacy.plan.resolve_trust`)."""
    if plan.trust == "local" or not getattr(algo, "secure", False):
        return dict(LOCAL_TRUST)
    K = plan.parties
    common = {"model": "secure_aggregation", "parties": K, "colluding": algo.colluding,
              "dropout_tolerance": algo.dropout_tolerance, "calibrated_honest_shares": algo.shares(K)}
    if plan.kind == "vertical":  # the sums of the parties' shares Q_m (issue 39: the same fields as dpmm's)
        return {**common, "assumes": algo._trust_assumption()}
    from ..privacy.secure_params import resolve_recovery

    if resolve_recovery(getattr(algo, "recovery", "retry"), K) == "sparse":  # SecAgg+: its failure bound by epsilon
        from ..privacy.secagg_graph import choose_graph

        common["graph"] = choose_graph(K, algo.colluding, algo.dropouts(K), algo.threshold).describe()
    return {**common,
            "assumes": "an honest-but-curious aggregator that sees masked vectors and the sums only and announces one "
                       f"set of present parties per round; at most {algo.colluding} part"
                       f"{'y' if algo.colluding == 1 else 'ies'} colluding with it; the requested budget holds while "
                       f"at least {algo.shares(K)} honest parties' noise shares are in every sum",
            "accountant": "rdp: the Skellam RDP bound (Agarwal, Kairouz & Liu 2021) at integer orders, converted by "
                          "dp-accounting; the pld column repeats it (no PLD is published for this mechanism)"}
