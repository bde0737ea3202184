"""Dropout recovery of secure aggregation by threshold secret sharing (issue 27, ``recovery="shamir"``).

Bonawitz et al.'s double masking ("Practical Secure Aggregation for Privacy-Preserving Machine Learning", CCS 2017,
§4, Fig. 4) on top of the masking of :mod:`privdist.runtime.secure.secagg`. Round ``t`` of a sum is one instance of their
protocol:

0. **Setup, once per run** (:mod:`privdist.runtime.secure.secagg`): long-term X25519 keys and pair keys; here they only
   encrypt the shares that travel through the aggregator (:meth:`SecAggParties.seal`).
1. **Round keys** (:meth:`ThresholdParty.prepare`): party ``u`` draws two 16-byte seeds where it runs (its stream
   ``(seed, trial, SECAGG_DOMAIN, u, t)`` in research mode, OS entropy in secure mode): ``m_u`` roots its round
   X25519 key (``HKDF-SHA256``), ``b_u`` its round self-mask key. It sends the round public key and, to every party
   ``v``, encrypted, the ``v``-th t-out-of-K Shamir share of each seed (pycryptodome's
   ``Crypto.Protocol.SecretSharing.Shamir``, over GF(2^128); share index ``v + 1``).
2. **Receive** (:meth:`ThresholdParty.receive`): the aggregator broadcasts the round's public keys and forwards the
   encrypted shares; each party decrypts the shares it holds and derives the round's pair keys (session bound to
   ``t``).
3. **Masked input**: ``y_u = x_u + PRG(b_u) + sum_v s_uv PRG(k_uv)`` as in :mod:`privdist.runtime.secure.secagg`, with the
   round's keys; the aggregator announces the set ``S`` of parties whose ``y`` arrived.
4. **Unmasking** (:meth:`ThresholdParty.reveal`, :func:`recover`): every party that is still there reveals, for each
   party ``u``, its share of ``b_u`` if ``u`` is in ``S`` and its share of ``m_u`` otherwise, never both. With shares
   from at least ``t`` parties the aggregator rebuilds every ``b_u`` of ``S`` (a party that sent and then failed
   included) and every ``m_u`` outside ``S`` (checked against the round public key), removes those self-masks and
   the pair masks of the absent parties with ``S``, and holds ``sum_{u in S} x_u``: no second attempt. With fewer
   than ``t`` parties left no seed can be rebuilt (each party reveals a share of every seed, so every seed gets the
   same number of shares) and the round falls back to the retried attempt of :mod:`privdist.runtime.secure.secure_round`
   among the parties that answered.

**Threat model.** An honest-but-curious aggregator that announces one ``S`` to everyone, and fewer than ``t``
parties colluding with it: the colluders hold fewer than ``t`` shares of any seed. For every party the aggregator
learns ``b_u`` or ``m_u`` of the round, never both, so ``y_u`` stays padded by the other (a ``y_u`` arriving after
``S`` was announced keeps its self-mask). Keys are fresh every round because a rebuilt ``m_u`` unmasks every pair mask
it ever made: with long-term pair keys, rebuilding the key of a party that drops in one round would expose its
inputs of the rounds in which its self-mask was removed. The shares are drawn by pycryptodome from OS entropy (its
``split`` takes no generator), so they are not in the transcript; what they reveal, the rebuilt seeds, is.

**Cost** (per round, each party): an X25519 key pair, ``K - 1`` key agreements, two Shamir splits into ``K``
shares (O(tK) multiplications in GF(2^128) in pure Python), ``2 (K - 1)`` share encryptions and decryptions; the
aggregator: ``K`` combinations of ``t`` shares (O(t^2) each) and, per absent party, ``|S|`` key agreements.
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np

from ..._checks import check_int
from ...errors import ReconstructionError, ValidationError
from ..rng import SECAGG_DOMAIN, stream
from .secagg import KEY_BYTES, SecAggParties, center, hkdf32, self_masks

__all__ = ["SEED_BYTES", "ThresholdParty", "split", "combine", "round_secrets", "round_session", "recover",
           "check_threshold"]

#: Bytes of each round seed: pycryptodome's Shamir shares 16-byte secrets.
SEED_BYTES = 16
_X25519_INFO, _SELF_INFO = b"privdist-secagg-round-x25519", b"privdist-secagg-round-self"


def check_threshold(threshold: int, n_parties: int) -> int:
    """A threshold ``1 <= t <= n_parties`` (named error otherwise)."""
    threshold = check_int(threshold, "threshold", 1)
    if threshold > n_parties:
        raise ValidationError(f"the threshold of secret sharing ({threshold}) exceeds the parties ({n_parties}): "
                              "no set of parties could rebuild a seed")
    return threshold


def split(secret: bytes, threshold: int, n_parties: int) -> list[bytes]:
    """Shamir shares of a 16-byte ``secret``, any ``threshold`` of which rebuild it: share ``v`` (index ``v + 1``)
    for party ``v``, 16 bytes each (pycryptodome, GF(2^128))."""
    from Crypto.Protocol.SecretSharing import Shamir

    if len(secret) != SEED_BYTES:
        raise ValidationError(f"Shamir shares 16-byte secrets, got {len(secret)} bytes")
    return [share for _, share in Shamir.split(check_threshold(threshold, n_parties), n_parties, bytes(secret))]


def combine(shares: dict, threshold: int) -> bytes:
    """The secret of ``threshold`` Shamir shares ``{party: share}`` (the parties with the smallest ids are used).

    Raises:
        ReconstructionError: fewer than ``threshold`` shares (pycryptodome would return a wrong value, not fail).
    """
    from Crypto.Protocol.SecretSharing import Shamir

    threshold = check_int(threshold, "threshold", 1)
    if len(shares) < threshold:
        raise ReconstructionError(f"a seed shared {threshold}-out-of-n needs {threshold} shares, got {len(shares)}: "
                                  "fewer parties revealed their shares than the threshold")
    chosen = sorted(shares.items())[:threshold]
    return Shamir.combine([(int(v) + 1, bytes(share)) for v, share in chosen])


def _hkdf(seed: bytes, info: bytes) -> bytes:
    return hkdf32(seed, info)


def round_secrets(mask_seed: bytes | None, self_seed: bytes | None) -> bytes:
    """The 64 secret bytes of a party's round instance (X25519 key, self-mask key), from its round seeds (a missing
    seed gives zeros: the aggregator rebuilds one seed of each party, never both)."""
    zero = bytes(KEY_BYTES)
    return (zero if mask_seed is None else _hkdf(mask_seed, _X25519_INFO)) + \
        (zero if self_seed is None else _hkdf(self_seed, _SELF_INFO))


def round_session(session: bytes, t: int) -> bytes:
    """The session id of round ``t``'s instance (bound into its pair keys)."""
    return hashlib.sha256(bytes(session) + b"|round|" + str(int(t)).encode()).digest()[:16]


def _round_seeds(agents, seed: int, trial: int, t: int, secure: bool) -> list[bytes]:
    """Each agent's 32 seed bytes of round ``t`` (mask-key seed, self-mask seed), drawn where it runs."""
    if secure:
        return [secrets.token_bytes(2 * SEED_BYTES) for _ in agents]
    return [stream(seed, trial, SECAGG_DOMAIN, int(a), int(t)).bytes(2 * SEED_BYTES) for a in agents]


class ThresholdParty:
    """The threshold-recovery side of a block of parties (module docstring), kept where they run.

    Args:
        channel: the block's long-term :class:`~privdist.runtime.secure.secagg.SecAggParties` (agreed): it encrypts the
            shares.
        seed, trial, secure: where the round seeds come from.
        session: the run's session id.
        threshold: ``t``, the shares that rebuild a seed.
    """

    def __init__(self, channel: SecAggParties, seed: int, trial: int, secure: bool, session: bytes, threshold: int):
        self.channel, self.seed, self.trial, self.secure = channel, seed, trial, secure
        self.session, self.threshold = bytes(session), check_threshold(threshold, channel.n_agents)
        self.round: tuple[int, SecAggParties] | None = None
        self._held: np.ndarray | None = None  # (B, K, 2 SEED_BYTES): the shares the block's agents hold
        self._own: np.ndarray | None = None

    def __getstate__(self):
        raise TypeError("secure-aggregation secrets never leave the process of their parties")

    def prepare(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Step 1 for round ``t``: ``(public keys (B, 32), encrypted shares (B, K, 32))`` uint8, row ``u`` column
        ``v`` = party ``v``'s shares of ``u``'s two seeds (a row's own column stays with it, zero)."""
        agents, K = self.channel.agents, self.channel.n_agents
        seeds = _round_seeds(agents, self.seed, self.trial, t, self.secure)
        parties = SecAggParties(agents, K, self.channel.bits, [round_secrets(s[:SEED_BYTES], s[SEED_BYTES:])
                                                               for s in seeds], round_session(self.session, t))
        bundles = np.empty((len(agents), K, 2 * SEED_BYTES), dtype=np.uint8)
        for i, s in enumerate(seeds):
            for half in range(2):
                part = s[half * SEED_BYTES:(half + 1) * SEED_BYTES]
                bundles[i, :, half * SEED_BYTES:(half + 1) * SEED_BYTES] = np.frombuffer(
                    b"".join(split(part, self.threshold, K)), dtype=np.uint8).reshape(K, SEED_BYTES)
        self.round, self._held = (int(t), parties), None
        self._own = bundles[np.arange(len(agents)), agents].copy()
        sealed = self.channel.seal(t, bundles)
        sealed[np.arange(len(agents)), agents] = 0
        return parties.public_keys(), sealed

    def receive(self, t: int, table, inbound) -> None:
        """Step 2: the round's public-key table (K, 32) and the encrypted shares addressed to the block (K senders,
        B, 32): keep the shares, derive the round's pair keys."""
        parties = self.masking(t)
        held = self.channel.open(t, inbound)
        held[np.arange(len(self.channel.agents)), self.channel.agents] = self._own
        self._held = held
        parties.agree(table)

    def masking(self, t: int) -> SecAggParties:
        """The round instance whose keys round ``t`` masks with (named error before :meth:`prepare`)."""
        if self.round is None or self.round[0] != int(t):
            raise ValidationError(f"secure aggregation: round {t}'s keys were not prepared (threshold recovery)")
        return self.round[1]

    def reveal(self, t: int, present) -> np.ndarray:
        """Step 4 for the block's agents: per agent and party ``u``, its share of ``b_u`` if ``u`` is in ``present``
        (bool (K,)) and of ``m_u`` otherwise: (B, K, 16) uint8."""
        self.masking(t)
        present = np.asarray(present, dtype=bool)
        half = np.where(present, 1, 0)  # b_u is the second half of a bundle, m_u the first
        cols = half[None, :, None] * SEED_BYTES + np.arange(SEED_BYTES)[None, None, :]
        return np.take_along_axis(self._held, np.broadcast_to(cols, self._held.shape[:2] + (SEED_BYTES,)), axis=2)


def recover(masked_total, present, answered, revealed, table, threshold: int, session: bytes, t: int, bits: int):
    """Step 4 at the aggregator: the sum of the present parties' vectors, or ``None`` when fewer than ``threshold``
    parties answered (the round then falls back to a retried attempt).

    Args:
        masked_total: (D,) uint64, the sum of the present parties' masked vectors (mod ``2^bits``).
        present: bool (K,), ``S``: the parties whose masked vector arrived.
        answered: bool (K,), the parties whose shares arrived.
        revealed: (K revealers, K owners, 16) uint8 (rows of parties that did not answer are ignored).
        table: (K, 32) uint8, the round's public keys (a zero row: a party that advertised none).
        threshold, session, t, bits: the protocol's threshold, the run's session id, the round and modulus.

    Returns:
        ``(sum as centred int64 (D,), {"rebuilt_self": [...], "rebuilt_pairwise": [...]})`` or ``None``.

    Raises:
        ReconstructionError: a rebuilt mask-key seed does not give the public key its party advertised.
    """
    present, answered = np.asarray(present, dtype=bool), np.asarray(answered, dtype=bool)
    table = np.asarray(table, dtype=np.uint8)
    if int(answered.sum()) < threshold:
        return None
    revealers = np.flatnonzero(answered)[:threshold]
    rebuilt = [combine({int(v): revealed[v, u].tobytes() for v in revealers}, threshold)
               for u in range(len(present))]
    dim, K = np.asarray(masked_total).shape[0], len(present)
    total = np.asarray(masked_total, dtype=np.uint64).copy()
    own = np.flatnonzero(present)
    if own.size:
        total -= self_masks([round_secrets(None, rebuilt[u])[KEY_BYTES:] for u in own], t, 0, dim,
                            bits).sum(axis=0, dtype=np.uint64)
    absent = np.flatnonzero(~present & table.any(axis=1))
    for u in absent:  # its pair masks with S: y_v carries s_vu PRG(k_uv) = -s_uv PRG(k_uv)
        party = SecAggParties([u], K, bits, [round_secrets(rebuilt[u], None)], round_session(session, t))
        if not np.array_equal(party.public_keys()[0], table[u]):
            raise ReconstructionError(f"the mask-key seed rebuilt for party {u} in round {t} does not give the "
                                      "public key it advertised: the revealed shares are inconsistent")
        party.agree(table, peers=present)
        total += party.pair_masks(t, 0, dim, present)[0]
    return center(total, bits), {"rebuilt_self": own.tolist(), "rebuilt_pairwise": absent.tolist(),
                                 "seeds": np.frombuffer(b"".join(rebuilt), dtype=np.uint8).reshape(K, SEED_BYTES)}
