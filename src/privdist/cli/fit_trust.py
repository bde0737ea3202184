"""``privdist fit --trust`` (issue 27): the estimator options of the trust model (the privacy report prints its
``trust`` section, :func:`privdist.learn.trust.trust_report`). The CLI decides nothing: the trust model and its
parameters are resolved and validated by the privacy plan (:func:`privdist.privacy.plan.resolve_trust`,
:func:`privdist.privacy.plan.secure_section`, issue 37)."""

from __future__ import annotations

__all__ = ["trust_options", "add_vertical_protocol"]


def add_vertical_protocol(p) -> None:
    """``--vertical-protocol``, as ``privdist fit --vertical`` and ``privdist coordinate --vertical`` take it
    (:func:`privdist.learn.vertical.resolve_protocol`)."""
    p.add_argument("--vertical-protocol", choices=("auto", "admm_sharing", "pool"), default="auto",
                   help="vertical: auto (default: pool, or admm_sharing with --trust secure_aggregation), pool (each "
                   "party fits its own block on its columns and the labels, the coordinator pools their log-odds "
                   "with the public weight 1/sqrt(N): nothing computed from a party's columns leaves it while "
                   "training; not with secure aggregation) or admm_sharing (S2, noisy shares every round)")


def trust_options(args) -> dict:
    """The estimators' ``trust`` as asked (``--trust``) and, when given, the secure-aggregation parameters
    ``colluding`` and ``dropout_tolerance`` (``--colluding``, ``--dropout-tolerance``) as ``secure_aggregation``."""
    out = {"trust": getattr(args, "trust", "auto")}
    secure = {k: v for k, v in (("colluding", getattr(args, "colluding", 0)),
                                ("dropout_tolerance", getattr(args, "dropout_tolerance", 0.0))) if v}
    if secure:
        out["secure_aggregation"] = secure
    return out


def resolved_trust(args) -> str:
    """The trust model the plan will run with (for the checks made before the data are read)."""
    from ..privacy.plan import resolve_trust

    vertical = getattr(args, "vertical", None) or getattr(args, "feature_groups", None)
    return resolve_trust("admm_sharing" if vertical else getattr(args, "algorithm", "dpmm"),
                         getattr(args, "trust", "auto"), getattr(args, "epsilon", None))
