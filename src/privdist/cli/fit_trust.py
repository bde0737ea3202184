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
    trust = getattr(args, "trust", "local")
    colluding, tolerance = getattr(args, "colluding", 0), getattr(args, "dropout_tolerance", 0.0)
    if trust == "local":
        if colluding or tolerance:
            raise ValidationError("--colluding and --dropout-tolerance describe secure aggregation: add "
                                  "--trust secure_aggregation")
        return {}
    return {"trust": trust, "algorithm_params": {"colluding": colluding, "dropout_tolerance": tolerance}}
