"""Secure aggregation (issue 27): the protocol that sums the parties' ``SECURE_SUM`` messages, in its own room
under :mod:`privdist.runtime` (issue 37).

* :mod:`.secagg`: pairwise masks from X25519 key agreement (Bonawitz et al., CCS 2017) for an honest-but-curious
  aggregator, keys set up once per run;
* :mod:`.secure_round`: one round's sum with dropouts (retried attempts among the parties that answered);
* :mod:`.secagg_threshold`: threshold (Shamir) recovery of a failed party's masks with per-round keys;
* :mod:`.secagg_plus`: the sparse masking graph of SecAgg+ (Bell et al., CCS 2020) with threshold recovery among
  neighbours (issue 41), its Shamir sharing vectorised in :mod:`.shamir_field`;
* :mod:`.secure_once`: one secure sum outside a run (the estimators' DP range step).

The privacy side (Skellam shares of one central noise, their accounting) is :mod:`privdist.privacy.distributed`.
"""

from .secure_round import Dropout

__all__ = ["Dropout"]
