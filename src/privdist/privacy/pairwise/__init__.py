"""Per-pair (network) DP on graphs (issue 29): what an observer set learns about one target agent.

A room of its own under :mod:`privdist.privacy` (issue 37): the protocol's linear model
(:mod:`.linear_protocol`), the closed-loop recursion and its compiled kernel (:mod:`.innovations`,
:mod:`._recursion_kernel`), the worst case over per-round contribution balls (:mod:`.ball_quadratic`), the
accountant itself (:mod:`.network_dp`) and the report section a run prints (:mod:`.network_report`). The
guarantee of a run stays the local one of :mod:`privdist.privacy.accountants`; what this package computes is a
*model* beside it (docs/network_dp.md). Nothing here runs an algorithm.
"""
