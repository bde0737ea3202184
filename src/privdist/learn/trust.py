"""The estimators' trust model (issue 27): ``trust="local"`` or ``"secure_aggregation"`` (dpmm's sums through secure
aggregation with distributed Skellam noise, :mod:`privdist.algorithms.dpmm`)."""

from __future__ import annotations

from ..errors import UnknownNameError, ValidationError

__all__ = ["TRUST", "check_trust", "trust_params", "training_mechanism"]

#: The estimators' trust models (dpmm's :data:`~privdist.algorithms.dpmm.TRUST`).
TRUST = ("local", "secure_aggregation")


def check_trust(algorithm: str, trust) -> str:
    """A trust model the algorithm supports (named errors otherwise): secure aggregation is dpmm's."""
    if trust not in TRUST:
        raise UnknownNameError("trust", str(trust), TRUST)
    if trust == "secure_aggregation" and algorithm != "dpmm":
        raise ValidationError(f"trust='secure_aggregation' is available with algorithm='dpmm' (its sums are what "
                              f"secure aggregation adds up), got algorithm={algorithm!r}")
    return trust


def trust_params(est) -> dict:
    """The algorithm parameters of the estimator's trust model (none for ``"local"``)."""
    trust = getattr(est, "trust", "local")
    return {} if trust == "local" else {"trust": trust}


def training_mechanism(est) -> str:
    """The training's mechanism as the DP range step's budget split needs it: the algorithm's name, whose Gaussian
    releases share a budget exactly (GDP shares), or ``"dpmm+skellam"`` under secure aggregation (not Gaussian: the
    split is the basic one, epsilon and delta divided linearly)."""
    return est.algorithm if getattr(est, "trust", "local") == "local" else f"{est.algorithm}+skellam"
