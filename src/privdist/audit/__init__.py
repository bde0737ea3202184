"""Audit layer: neighbouring datasets and canaries -> many releases through ``run()`` -> threshold tests ->
empirical lower bounds on epsilon, beside the guarantee and the paper's claim (DESIGN "audit").

Sits above :mod:`privdist.runtime` and below the experiments and the CLI; the statistics live in
:mod:`privdist.privacy.audit_stats`.
"""

from .core import CLAIMS, AuditResult, audit, problem_for, small_problem
from .neighbours import CANARIES, KINDS, LinearCost, neighbours, problem_kind
from .plot import plot_privacy_region
from .releases import DisjointCopies, collect_releases, copies_are_independent, release_of

__all__ = ["CANARIES", "CLAIMS", "KINDS", "AuditResult", "DisjointCopies", "LinearCost", "audit",
           "collect_releases", "copies_are_independent", "neighbours", "plot_privacy_region", "problem_for",
           "problem_kind", "release_of", "small_problem"]
