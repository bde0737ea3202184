"""One secure sum outside a run (issue 25): the parties' integer vectors summed through the protocol of
:mod:`privdist.runtime.secure.secagg`, for a release made before training (the estimators' DP range step).

Each call is a session of its own: fresh secrets and session id in secure mode; in research mode secrets from the
step's own streams (:func:`~privdist.runtime.rng.step_generator` with the step's name), so no pair key or self-mask
of a run with the same seed is ever reused (a reused one-time pad would reveal a difference of two messages). All
parties take part (a step before training has no dropout simulation); the aggregator's view is the masked vectors
and the sum.

With ``colluding`` given (issue 41), each party masks only with its neighbours in a random regular graph drawn from
the announced keys (:mod:`privdist.runtime.secure.secagg_plus`), its degree chosen so that removing ``colluding``
parties leaves the honest ones connected except with probability at most ``2^-40``
(:func:`privdist.privacy.secagg_graph.choose_graph`; no dropout, so no seed is shared): the same sum at ``O(K log K)``
key agreements instead of ``K^2 / 2``.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ...contract import MAX_BITS
from ...errors import ValidationError
from ..rng import step_generator
from .secagg import KEY_BYTES, SecAggParties, party_secrets, unmask_sum

__all__ = ["secure_sum_once"]


def secure_sum_once(vectors, *, step: str, seed: int, secure: bool, bits: int = MAX_BITS,
                    colluding: int | None = None) -> np.ndarray:
    """``sum_k vectors[k]`` (int64, shape (D,)) computed through secure aggregation mod ``2^bits``.

    Args:
        vectors: (K, D) integers, party ``k``'s vector in row ``k`` (masked before it leaves the party).
        step: the release's name (separates its keys from every other session of the same seed).
        seed, secure: the fit's seed and noise mode.
        bits: the modulus exponent; the caller guarantees the sum lies in ``[-2^(bits-1), 2^(bits-1))``.
        colluding: parties assumed to collude with the aggregator (None: the complete masking graph).

    Raises:
        ValidationError: not a (K, D) integer array with K >= 2.
    """
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or vectors.shape[0] < 2 or not np.issubdtype(vectors.dtype, np.integer):
        raise ValidationError(f"a secure sum needs a (parties >= 2, D) integer array, got {vectors.dtype} "
                              f"{vectors.shape}")
    K, D = vectors.shape
    if secure:
        secrets_, session = party_secrets(range(K), seed, 0, True), party_secrets([0], seed, 0, True)[0][:16]
    else:
        secrets_ = [step_generator(seed, f"{step}/secagg", k, False).bytes(2 * KEY_BYTES) for k in range(K)]
        session = hashlib.sha256(f"privdist-secagg|{step}|{int(seed)}".encode()).digest()[:16]
    parties = SecAggParties(np.arange(K), K, bits, secrets_, session)
    table = parties.public_keys()
    graph = None
    if colluding is not None and K >= 3:
        from ...privacy.secagg_graph import choose_graph
        from .secagg_plus import neighbours

        params = choose_graph(K, min(int(colluding), K - 2), 0)
        graph = None if params.complete else neighbours(session, 0, table, K, params.degree)
    parties.agree(table, neighbours=graph)
    present = np.ones(K, dtype=bool)
    masked = parties.mask(0, 0, vectors.astype(np.int64))
    return unmask_sum(masked, parties.unmask(0, 0, present, D), present, bits)
