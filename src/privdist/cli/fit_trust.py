"""``privdist fit --trust`` (issue 27): the estimator options of the trust model (the privacy report prints its
``trust`` section, :func:`privdist.learn.trust.trust_report`)."""

from __future__ import annotations

from ..errors import ValidationError

__all__ = ["trust_options"]


def trust_options(args) -> dict:
    """The estimators' ``trust`` (and, for secure aggregation, dpmm's ``colluding`` and ``dropout_tolerance``) from
    ``--trust``, ``--colluding`` and ``--dropout-tolerance``.

    Raises:
        ValidationError: ``--colluding``/``--dropout-tolerance`` without ``--trust secure_aggregation``.
    """
    from ..learn.trust import resolve_trust

    trust = getattr(args, "trust", "auto")
    if getattr(args, "vertical", None) or getattr(args, "feature_groups", None):
        trust = "local" if trust == "auto" else trust
    trust = resolve_trust(getattr(args, "algorithm", "dpmm"), trust, getattr(args, "epsilon", None))
    colluding, tolerance = getattr(args, "colluding", 0), getattr(args, "dropout_tolerance", 0.0)
    if trust == "local":
        if colluding or tolerance:
            raise ValidationError("--colluding and --dropout-tolerance describe secure aggregation (the default "
                                  "for --algorithm dpmm; --trust secure_aggregation)")
        return {"trust": "local"}
    return {"trust": trust, "algorithm_params": {"colluding": colluding, "dropout_tolerance": tolerance}}
