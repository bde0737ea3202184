"""Audit layer: neighbouring datasets and canaries -> many releases through ``run()`` -> threshold tests ->
empirical lower bounds on epsilon (threshold test at one delta; trade-off curve / Gaussian DP), beside the
guarantee and the paper's claim (DESIGN "audit"); :func:`audit_outputs` audits any output on neighbouring inputs.

Sits above :mod:`privdist.runtime` and below the experiments and the CLI; the statistics live in
:mod:`privdist.privacy.audit_stats`.
"""

from .core import CLAIMS, AuditResult, audit, first_releasing_rounds, problem_for, small_problem
from .neighbours import CANARIES, KINDS, LinearCost, neighbours, problem_kind
from .network import PairAudit, audit_pair
from .outputs import OutputAudit, audit_outputs
from .plot import plot_privacy_region
from .releases import (VIEWS, DisjointCopies, ObserverView, collect_releases, copies_are_independent, release_of,
                       view_of)

__all__ = ["CANARIES", "CLAIMS", "KINDS", "VIEWS", "AuditResult", "DisjointCopies", "LinearCost", "ObserverView",
           "OutputAudit", "PairAudit", "audit", "audit_outputs", "audit_pair", "collect_releases",
           "copies_are_independent", "first_releasing_rounds", "neighbours", "plot_privacy_region", "problem_for",
           "problem_kind", "release_of", "small_problem", "view_of"]
