"""Secure aggregation of integer vectors mod ``q = 2^bits`` (issue 27): pairwise masks from key agreement, dropouts
survived, the aggregator sees masked vectors and the sum only.

The protocol is Bonawitz et al.'s (CCS 2017, "Practical Secure Aggregation for Privacy-Preserving Machine Learning")
for an honest-but-curious aggregator, with keys set up once per run and masks expanded per round and attempt, so that
dropout recovery reveals this attempt's masks only (never a long-term secret) and needs no threshold sharing:

**Setup (once per run).** Party ``u`` holds two 32-byte secrets drawn where it runs (:func:`party_secrets`: from
its own stream in research mode, from OS entropy in secure mode): an X25519 private key (RFC 7748) and a self-mask
key ``b_u``. It sends its public key; the aggregator broadcasts the table. Each pair derives
``k_uv = HKDF-SHA256(X25519(sk_u, pk_v), info = "privdist-secagg" | session | min(u, v) | max(u, v))`` (RFC 5869):
both ends get the same 32 bytes, the aggregator cannot.

**Masks.** ``PRG(k; t, a)``: AES-256 of key ``k`` in counter mode over the counter blocks ``(t, a, i)``, ``i = 0, 1,
...`` (NIST SP 800-38A; the blocks are built here so that one key schedule per pair serves the whole run), read as
uint64 words mod ``q``: uniform, because ``q`` divides ``2^64``. Round ``t``, attempt ``a`` of one sum of ``D``
integers:

1. party ``u`` sends ``y_u = x_u + PRG(b_u; t, a) + sum_{v != u} s_uv PRG(k_uv; t, a) mod q`` with ``s_uv = +1`` if
   ``u < v`` else ``-1`` (:meth:`SecAggParties.mask`);
2. the aggregator announces the set ``S`` of parties whose ``y`` arrived;
3. each ``u`` in ``S`` answers ``z_u = PRG(b_u; t, a) + sum_{v not in S} s_uv PRG(k_uv; t, a) mod q``
   (:meth:`SecAggParties.unmask`): its own mask and its masks with the absent parties, summed;
4. when every ``u`` in ``S`` answered, ``sum_{u in S} x_u = sum_{u in S} (y_u - z_u) mod q`` (:func:`unmask_sum`; the
   masks of pairs inside ``S`` cancel). Otherwise attempt ``a + 1`` runs among the parties that answered, with the
   *same* ``x_u`` (no second noise draw) and fresh masks.

**What the aggregator learns** (semi-honest, with ``c`` colluding parties that hand it their keys): each ``y_u`` alone
is one-time padded by ``PRG(b_u; t, a)``: uniform mod ``q`` (tested). In an attempt it learns ``sum_{u in S} x_u``
and nothing about how it splits among honest parties: ``y_u - z_u`` of an honest ``u`` stays masked by its pair masks
with the other honest members of ``S``, which nobody reveals. A party that sent ``y_u`` but did not answer never
revealed its own mask, so its ``y_u`` (or one that arrives late) stays padded; a retried attempt's masks are unrelated
to the failed one's (other counter blocks). Every pair masks (the complete graph: ``K - 1`` key agreements per party
at setup, ``K - 1`` keystreams per party and round); with ``neighbours`` (:meth:`SecAggParties.agree`) a party masks
with its neighbours in a sparse graph only (Bell et al., CCS 2020: :mod:`privdist.runtime.secure.secagg_plus`). The
consistency round a malicious aggregator needs (Bonawitz et al. §4) is not implemented: the aggregator is assumed to
announce one ``S`` to everyone.

**Threshold recovery** (``recovery="shamir"``, :mod:`privdist.runtime.secure.secagg_threshold`): the same masking with
per-round keys, whose seeds every party shares t-out-of-n, so that the aggregator removes the masks of a party that
failed without a retried attempt. Its shares travel between parties through the aggregator encrypted under the pair
keys set up here (:meth:`SecAggParties.seal`, :meth:`SecAggParties.open`: AES-256 counter mode over counter blocks
of attempt :data:`CHANNEL_ATTEMPT`, which no mask uses).

The simulator keeps one :class:`SecAggParties` for all agents (each pair's mask expanded once and added to both ends,
vectorised); the Ray backend keeps one per actor for the agents it serves, so keys, masks and noise stay in the
party's process and the driver handles masked vectors and answers only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct

import numpy as np

from ..._checks import check_int
from ...contract import MAX_BITS, check_bits
from ...errors import ValidationError
from ..rng import SECAGG_DOMAIN, stream

__all__ = ["SecAggParties", "party_secrets", "session_id", "unmask_sum", "check_bits", "encode", "center",
           "MAX_BITS", "KEY_BYTES", "CHANNEL_ATTEMPT", "self_masks", "hkdf32"]

KEY_BYTES = 32
_INFO = b"privdist-secagg"
_CHUNK_WORDS = 1 << 22  # pair-mask words expanded at once (32 MB)
#: The attempt number of the counter blocks that encrypt the shares of threshold recovery (masks use 0, 1, ...).
CHANNEL_ATTEMPT = 0xFFFFFFFF


def hkdf32(ikm: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) of ``ikm`` without salt, 32 bytes of output: ``PRK = HMAC(0^32, ikm)``,
    ``OKM = HMAC(PRK, info | 0x01)`` (the same bytes as ``cryptography``'s ``HKDF``, at a tenth of its cost)."""
    prk = hmac.digest(bytes(KEY_BYTES), bytes(ikm), "sha256")
    return hmac.digest(prk, bytes(info) + b"\x01", "sha256")


def _modulus_mask(bits: int) -> np.uint64:
    return np.uint64((1 << bits) - 1)


def encode(values, bits: int) -> np.ndarray:
    """Integers (int64, any sign) as their residues mod ``2^bits`` (uint64)."""
    return np.asarray(values, dtype=np.int64).astype(np.uint64) & _modulus_mask(bits)


def center(residues, bits: int) -> np.ndarray:
    """Residues mod ``2^bits`` as the integers in ``[-2^(bits-1), 2^(bits-1))`` they represent (int64)."""
    r = np.asarray(residues, dtype=np.uint64) & _modulus_mask(bits)
    half = np.uint64(1 << (bits - 1))
    return np.where(r >= half, r.astype(np.int64) - (1 << bits), r.astype(np.int64))


def party_secrets(agents, seed: int, trial: int, secure: bool) -> list[bytes]:
    """Each agent's 64 secret bytes (X25519 key seed, self-mask seed), drawn where the agent runs: from OS entropy
    (:func:`secrets.token_bytes`) in secure mode, from its stream ``(seed, trial, SECAGG_DOMAIN, agent)`` in
    research mode (transcripts repeat with the seed)."""
    if secure:
        return [secrets.token_bytes(2 * KEY_BYTES) for _ in np.asarray(agents).reshape(-1)]
    return [stream(seed, trial, SECAGG_DOMAIN, int(a), 0).bytes(2 * KEY_BYTES) for a in np.asarray(agents).reshape(-1)]


def session_id(seed: int, trial: int, secure: bool) -> bytes:
    """The run's public session id (bound into every pair key): fresh in secure mode, from the seed otherwise."""
    if secure:
        return secrets.token_bytes(16)
    return hashlib.sha256(f"privdist-secagg|{int(seed)}|{int(trial)}".encode()).digest()[:16]


def _counters(t: int, attempt: int, dim: int) -> bytes:
    """The counter blocks ``(t, a, i)`` for ``dim`` words (two uint64 words per AES block)."""
    blocks = (dim + 1) // 2
    head = struct.pack(">QI", int(t), int(attempt))
    return b"".join(head + struct.pack(">I", i) for i in range(blocks))


class _Prg:
    """``PRG(k; t, a)`` of many keys at once (module docstring): one AES-256 context per key, reused all run."""

    def __init__(self, bits: int):
        self.mask = _modulus_mask(bits)

    @staticmethod
    def context(key: bytes):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        return Cipher(algorithms.AES(key), modes.ECB()).encryptor()  # ECB of counter blocks = counter mode

    def words(self, contexts: list, counters: bytes, dim: int) -> np.ndarray:
        """``PRG`` of every context over ``counters``, shape (len(contexts), dim), uint64 mod q."""
        return self.raw(contexts, counters, dim) & self.mask

    @staticmethod
    def raw(contexts: list, counters: bytes, dim: int) -> np.ndarray:
        """The keystream words of every context over ``counters``, shape (len(contexts), dim), uint64."""
        if not contexts:
            return np.zeros((0, dim), dtype=np.uint64)
        raw = b"".join(c.update(counters) for c in contexts)
        return np.frombuffer(raw, dtype="<u8").reshape(len(contexts), -1)[:, :dim]


#: Words up to which :class:`_ShakePrg` expands by SHAKE-128; longer vectors use AES-256 counter mode.
SHAKE_WORDS = 512


class _ShakePrg(_Prg):
    """``PRG(k; t, a)`` of the sparse protocol's round keys (:mod:`privdist.runtime.secure.secagg_plus`): for
    vectors of at most :data:`SHAKE_WORDS` words, SHAKE-128 (FIPS 202) of ``k | t | a`` (one C call per key, no cipher
    context to build: AES's key schedule would cost more than such a short stream), read as uint32 words when ``q``
    divides ``2^32`` (half the bytes of uint64 words; uniform mod ``q`` either way), uint64 words otherwise; longer
    vectors AES-256 counter mode as :class:`_Prg` (faster per byte)."""

    def __init__(self, bits: int):
        super().__init__(bits)
        self.word = "<u4" if bits <= 32 else "<u8"

    @staticmethod
    def context(key: bytes):
        return bytes(key)

    @staticmethod
    def raw(contexts: list, counters: bytes, dim: int) -> np.ndarray:
        """AES-256 counter-mode keystream words of the keys (the channel of :meth:`SecAggParties.seal`)."""
        return _Prg.raw([_Prg.context(k) for k in contexts], counters, dim)

    def words(self, contexts: list, counters: bytes, dim: int) -> np.ndarray:
        if not contexts:
            return np.zeros((0, dim), dtype=np.uint64)
        if dim > SHAKE_WORDS:
            return _Prg.raw([_Prg.context(k) for k in contexts], counters, dim) & self.mask
        head, size = counters[:12], int(self.word[-1]) * dim  # (t, a) of the first counter block
        raw = b"".join(hashlib.shake_128(k + head).digest(size) for k in contexts)
        return np.frombuffer(raw, dtype=self.word).reshape(len(contexts), dim).astype(np.uint64) & self.mask


_PRGS = {"aes": _Prg, "shake": _ShakePrg}


def _incidence(row_lo, row_hi, n_rows: int):
    """Sparse (n_rows, pairs) uint64 matrix adding each pair's mask to its smaller id's row and subtracting it
    (``2^64 - 1 = -1`` mod ``2^64``) from its larger id's row, for the ends inside the block (exact: uint64 wraps)."""
    from scipy import sparse

    cols = np.arange(len(row_lo))
    plus, minus = row_lo >= 0, row_hi >= 0
    data = np.r_[np.ones(plus.sum(), dtype=np.uint64), np.full(minus.sum(), np.iinfo(np.uint64).max, np.uint64)]
    return sparse.csc_matrix((data, (np.r_[row_lo[plus], row_hi[minus]], np.r_[cols[plus], cols[minus]])),
                             shape=(n_rows, len(row_lo)), dtype=np.uint64)


class SecAggParties:
    """The secure-aggregation secrets of a block of parties (kept where they run) and their side of the protocol.

    Args:
        agents: the block's global agent ids.
        n_agents: all parties ``K``.
        bits: the modulus exponent (``q = 2^bits``).
        secrets_: :func:`party_secrets` of the block's agents.
        session: :func:`session_id` of the run.
        prg: ``"aes"`` (AES-256 counter mode, the default) or ``"shake"`` (SHAKE-128, :class:`_ShakePrg`).
    """

    def __init__(self, agents, n_agents: int, bits: int, secrets_: list[bytes], session: bytes, prg: str = "aes"):
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        self.agents = np.asarray(agents, dtype=np.int64).reshape(-1)
        self.n_agents, self.bits = check_int(n_agents, "n_agents", 1), check_bits(bits)
        if len(secrets_) != len(self.agents):
            raise ValidationError(f"one secret per agent of the block ({len(self.agents)}), got {len(secrets_)}")
        self._sk = [X25519PrivateKey.from_private_bytes(s[:KEY_BYTES]) for s in secrets_]
        self._prg = _PRGS[prg](self.bits)
        self._self = [self._prg.context(s[KEY_BYTES:2 * KEY_BYTES]) for s in secrets_]
        self._session = bytes(session)
        self._pairs: tuple | None = None
        self._retry_self: list | None = None

    @classmethod
    def keyed(cls, agents, n_agents: int, bits: int, self_keys: list[bytes], pairs, pair_keys: list[bytes],
              retry_self: list[bytes] | None = None, prg: str = "shake") -> "SecAggParties":
        """A block whose mask keys are given, without key agreement (the sparse protocol's round instance,
        :mod:`privdist.runtime.secure.secagg_plus`): ``self_keys`` one per agent; ``pairs`` ``(lo, hi)`` id arrays
        with one end in the block and ``pair_keys`` their keys; ``retry_self`` the self-mask keys of attempts
        ``>= 1`` (default: ``self_keys``)."""
        inst = cls.__new__(cls)
        inst.agents = np.asarray(agents, dtype=np.int64).reshape(-1)
        inst.n_agents, inst.bits = check_int(n_agents, "n_agents", 1), check_bits(bits)
        if len(self_keys) != len(inst.agents) or (retry_self is not None and len(retry_self) != len(inst.agents)):
            raise ValidationError(f"one self-mask key per agent of the block ({len(inst.agents)})")
        inst._sk, inst._prg, inst._session = [], _PRGS[prg](inst.bits), b""
        inst._self = [inst._prg.context(k) for k in self_keys]
        inst._retry_self = None if retry_self is None else [inst._prg.context(k) for k in retry_self]
        lo, hi = (np.asarray(a, dtype=np.int64).reshape(-1) for a in pairs)
        rows = np.full(inst.n_agents, -1, dtype=np.int64)
        rows[inst.agents] = np.arange(len(inst.agents))
        inst._pairs = (lo, hi, [inst._prg.context(k) for k in pair_keys], _incidence(rows[lo], rows[hi],
                                                                                      len(inst.agents)))
        inst._rows = rows
        return inst

    def __getstate__(self):
        raise TypeError("secure-aggregation secrets never leave the process of their parties")

    def public_keys(self) -> np.ndarray:
        """The block's X25519 public keys, shape (B, 32) uint8 (what it sends at setup)."""
        from cryptography.hazmat.primitives import serialization

        raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
        return np.frombuffer(b"".join(k.public_key().public_bytes(*raw) for k in self._sk),
                             dtype=np.uint8).reshape(len(self._sk), KEY_BYTES).copy()

    def agree(self, table, peers=None, neighbours=None) -> None:
        """Derive the pair keys of the block's agents with every other party from the broadcast public-key table
        (K, 32); a pair inside the block is derived once (both ends would compute the same key). ``peers`` (bool
        (K,), default all): the parties to derive keys with (a party that advertised no key, an all-zero row, never
        is: nobody masks with it). ``neighbours`` (one id array per block agent, default every other party): the
        parties each agent masks with (a symmetric sparse graph, :mod:`privdist.runtime.secure.secagg_plus`)."""
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

        table = np.asarray(table, dtype=np.uint8)
        if table.shape != (self.n_agents, KEY_BYTES):
            raise ValidationError(f"the public-key table must be ({self.n_agents}, {KEY_BYTES}), got {table.shape}")
        keyed = table.any(axis=1)
        peers = keyed & (True if peers is None else np.asarray(peers, dtype=bool))
        public: dict = {}
        inside = set(self.agents.tolist())
        first, second, contexts = [], [], []
        for i, u in enumerate(self.agents.tolist()):
            if not keyed[u]:
                continue
            for v in (range(self.n_agents) if neighbours is None else np.asarray(neighbours[i]).tolist()):
                if v == u or not peers[v] or (v in inside and v < u and keyed[v] and peers[u]):
                    continue  # self, no key, or a block pair already derived from v's side
                lo, hi = min(u, v), max(u, v)
                if v not in public:
                    public[v] = X25519PublicKey.from_public_bytes(table[v].tobytes())
                key = hkdf32(self._sk[i].exchange(public[v]), _INFO + self._session + struct.pack(">II", lo, hi))
                contexts.append(self._prg.context(key))
                first.append(lo)
                second.append(hi)
        lo, hi = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
        rows = np.full(self.n_agents, -1, dtype=np.int64)  # block row of an agent, -1 outside the block
        rows[self.agents] = np.arange(len(self.agents))
        self._pairs = (lo, hi, contexts, _incidence(rows[lo], rows[hi], len(self.agents)))
        self._rows = rows

    def _masks(self, t: int, attempt: int, dim: int, own, pairs) -> np.ndarray:
        """Sum per block agent of its own mask (rows ``own``) and of its signed masks of the pairs ``pairs``."""
        contexts, incidence = self._pairs[2], self._pairs[3]
        counters = _counters(t, attempt, dim)
        out = np.zeros((len(self.agents), dim), dtype=np.uint64)
        selves = self._self if attempt == 0 or self._retry_self is None else self._retry_self
        out[own] = self._prg.words([selves[i] for i in own], counters, dim)
        step = max(1, _CHUNK_WORDS // dim)  # pairs per chunk: bounded memory at any K and D
        for start in range(0, len(pairs), step):
            part = pairs[start:start + step]
            out += incidence[:, part] @ self._prg.words([contexts[p] for p in part], counters, dim)
        return out

    def mask(self, t: int, attempt: int, values) -> np.ndarray:
        """Step 1 for every agent of the block: ``values`` (B, D) int64 -> ``y`` (B, D) uint64 mod q."""
        if self._pairs is None:
            raise ValidationError("secure aggregation: agree() on the public-key table must run before masking")
        values = np.asarray(values, dtype=np.int64)
        masks = self._masks(t, attempt, values.shape[1], np.arange(len(self.agents)),
                            np.arange(len(self._pairs[0])))
        return (encode(values, self.bits) + masks) & self._prg.mask

    def pair_masks(self, t: int, attempt: int, dim: int, others) -> np.ndarray:
        """Per block agent, its signed masks with the parties ``others`` (bool (K,)) summed: what the aggregator
        removes for a party whose round key it rebuilt (:mod:`privdist.runtime.secure.secagg_threshold`)."""
        lo, hi = self._pairs[0], self._pairs[1]
        others = np.asarray(others, dtype=bool)
        return self._masks(t, attempt, dim, [], np.flatnonzero(others[lo] | others[hi]))

    def _directed(self) -> tuple[np.ndarray, np.ndarray]:
        """For each (block agent, party): the index of their pair (-1 for none) and whether the block agent is the
        pair's smaller id, both (B, K)."""
        lo, hi = self._pairs[0], self._pairs[1]
        index = np.full((len(self.agents), self.n_agents), -1, dtype=np.int64)
        pairs = np.arange(len(lo))
        for a, b in ((lo, hi), (hi, lo)):
            inside = self._rows[a] >= 0
            index[self._rows[a][inside], b[inside]] = pairs[inside]
        return index, self.agents[:, None] < np.arange(self.n_agents)[None, :]

    def _channel(self, t: int, nbytes: int, sending: bool) -> np.ndarray:
        """The keystream of round ``t`` for each (block agent, party) message of ``nbytes`` bytes (a multiple of
        8): (B, K, nbytes) uint8; the direction is the block agent's to the party (``sending``) or back."""
        words = nbytes // 8
        counters = _counters(t, CHANNEL_ATTEMPT, 2 * words)
        stream = self._prg.raw(self._pairs[2], counters, 2 * words).reshape(-1, 2, words)  # lo->hi, hi->lo
        index, smaller = self._directed()
        direction = np.where(smaller == sending, 0, 1)  # the sender is the pair's smaller id: lo->hi
        out = stream[np.maximum(index, 0), direction]
        out[index < 0] = 0
        return out.view(np.uint8).reshape(len(self.agents), self.n_agents, nbytes)

    def seal(self, t: int, plain) -> np.ndarray:
        """Round ``t``'s messages of the block's agents to every party, (B, K, nbytes) uint8, encrypted under the
        pair keys (the row's own column is left as it is: it never leaves the party)."""
        plain = np.asarray(plain, dtype=np.uint8)
        return plain ^ self._channel(t, plain.shape[2], True)

    def open(self, t: int, sealed) -> np.ndarray:
        """The messages of round ``t`` addressed to the block's agents, (K senders, B, nbytes) uint8, decrypted:
        (B, K, nbytes)."""
        sealed = np.swapaxes(np.asarray(sealed, dtype=np.uint8), 0, 1)
        return sealed ^ self._channel(t, sealed.shape[2], False)

    def unmask(self, t: int, attempt: int, present, dim: int) -> np.ndarray:
        """Step 3 for the block's agents in ``present`` (bool (K,), the set ``S``): ``z_u`` (B, dim) uint64, rows of
        block agents outside ``S`` zero."""
        if self._pairs is None:
            raise ValidationError("secure aggregation: agree() on the public-key table must run before unmasking")
        lo, hi = self._pairs[0], self._pairs[1]
        present = np.asarray(present, dtype=bool)
        own = np.flatnonzero(present[self.agents])
        crossing = np.flatnonzero(present[lo] != present[hi])  # pairs with one end absent: that end adds nothing
        z = self._masks(t, attempt, dim, own, crossing)
        z[~present[self.agents]] = 0
        return z & self._prg.mask


def unmask_sum(masked, answers, present, bits: int) -> np.ndarray:
    """Step 4: the sum of the present parties' vectors, as centred integers (int64, shape (D,)).

    Args:
        masked: (K, D) uint64, the masked vectors ``y`` (rows of absent parties are ignored).
        answers: (K, D) uint64, the answers ``z`` of step 3 (rows of absent parties are ignored).
        present: bool (K,), the set ``S``.
        bits: the modulus exponent.
    """
    present = np.asarray(present, dtype=bool)
    y = np.asarray(masked, dtype=np.uint64)[present]
    z = np.asarray(answers, dtype=np.uint64)[present]
    return center(y.sum(axis=0, dtype=np.uint64) - z.sum(axis=0, dtype=np.uint64), bits)


def self_masks(keys, t: int, attempt: int, dim: int, bits: int, prg: str = "aes") -> np.ndarray:
    """``PRG(b; t, a)`` of each self-mask key of ``keys`` (32 bytes each): (len(keys), dim) uint64 mod ``2^bits``
    (what the aggregator removes for the parties whose self-mask seed it rebuilt)."""
    prg = _PRGS[prg](check_bits(bits))
    return prg.words([prg.context(bytes(k)) for k in keys], _counters(t, attempt, dim), dim)
