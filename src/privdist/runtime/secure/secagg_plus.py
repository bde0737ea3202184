"""Sparse-graph secure aggregation with threshold recovery among neighbours (issue 41, ``recovery="sparse"``).

Bell, Bonawitz, Gascón, Lepoint, Raykova, "Secure Single-Server Aggregation with (Poly)Logarithmic Overhead" (CCS
2020, SecAgg+): Bonawitz et al.'s double masking (:mod:`privdist.runtime.secure.secagg_threshold`) over a ``k``-regular
masking graph instead of the complete one, ``k`` and the threshold ``t`` from
:func:`privdist.privacy.secagg_graph.choose_graph`. Round ``t`` of a sum:

0. **Setup, once per run**: each party's long-term X25519 channel key (:func:`~privdist.runtime.secure.secagg.party_secrets`);
   only the public-key table is broadcast; a pair derives its channel key (HKDF-SHA256 of the X25519 secret, info
   ``"privdist-secagg-channel" | session | lo | hi``) the first time the graph joins it, and keeps it.
1. **Advertise** (:meth:`SparseParty.prepare`): party ``u`` expands two 16-byte round seeds and the coefficients of
   its sharing polynomials from its 32-byte secret root (the second half of its
   :func:`~privdist.runtime.secure.secagg.party_secrets`: OS entropy in secure mode, its stream in research mode) by
   SHAKE-256 of ``"privdist-secagg-round" | root | t``: ``m_u`` roots its round X25519 key, ``b_u`` its round
   self-mask key (as in :mod:`~privdist.runtime.secure.secagg_threshold`); it sends the round public key. Masks are
   SHAKE-256 streams of the round keys (:class:`~privdist.runtime.secure.secagg._ShakePrg`).
2. **Graph** (:func:`neighbours`): drawn from public randomness *after* the keys are announced (SHA-256 of the session,
   the round and the key table seeds a permutation of the parties), so no party's keys can depend on its place: the
   Harary graph ``H(k, K)`` (position ``i`` joined to ``i +- 1 .. i +- k/2``) on the permuted parties.
3. **Share** (:meth:`SparseParty.share`): ``u`` splits ``m_u`` and ``b_u`` ``t``-out-of-``k`` among its neighbours
   (:mod:`~privdist.runtime.secure.shamir_field`, evaluation point ``v + 1``) and encrypts neighbour ``v``'s two shares
   under their channel key (a BLAKE2b keystream labelled by round, sender and receiver); the aggregator forwards them.
4. **Receive and mask** (:meth:`SparseParty.receive`): ``u`` keeps the shares it holds and derives the round pair keys
   with its neighbours only; ``y_u = x_u + PRG(b_u) + sum_{v in N(u)} s_uv PRG(k_uv) mod q``
   (:class:`~privdist.runtime.secure.secagg.SecAggParties` with ``neighbours``).
5. **Unmask** (:meth:`SparseParty.reveal`, :func:`recover`): the aggregator announces ``S`` (whose ``y`` arrived);
   each party still there reveals, for each neighbour ``u``, its share of ``b_u`` if ``u`` is in ``S``, of ``m_u``
   otherwise. The aggregator rebuilds each needed seed from ``t`` of the neighbours' shares, removes the self-masks of
   ``S`` and the pair masks of the absent parties with their neighbours in ``S``.

**Named failures, never a wrong sum** (:class:`~privdist.errors.SecureRoundError`): a party with fewer than ``t``
answering neighbours (its seed cannot be rebuilt), and a set ``S`` whose masking graph splits into pieces (the
aggregator would learn each piece's sum: the connectivity the parameter choice bounds, checked here on the public
graph and ``S`` before anything is revealed). Both end the round, and the run.

**Cost per party and round**: one X25519 key pair, ``k`` key agreements (``k`` channel agreements the first time a pair
meets), two vectorised Shamir splits into ``k`` shares, ``k + 1`` keystreams of the vector; the aggregator: ``K``
combinations of ``t`` shares (vectorised), ``|S|`` self-mask keystreams and, per absent party, ``k`` key agreements.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

from ...errors import ReconstructionError, SecureRoundError, ValidationError
from ...privacy.secagg_graph import GraphParameters, choose_graph
from .secagg import KEY_BYTES, SecAggParties, center, hkdf32, self_masks
from .secagg_threshold import SEED_BYTES, round_secrets, round_session
from .shamir_field import LIMBS, PRIME, SHARE_BYTES, combine_many, split_many

__all__ = ["SparseParty", "graph_parameters", "neighbours", "reverse", "route", "recover"]

_CHANNEL_INFO, _GRAPH_INFO = b"privdist-secagg-channel", b"privdist-secagg-graph"
_ROUND_INFO = b"privdist-secagg-round"
BUNDLE = 2 * SHARE_BYTES  # a neighbour's shares of (m_u, b_u)


def graph_parameters(algorithm, n_parties: int) -> GraphParameters:
    """The masking graph of the algorithm's secure sums over ``n_parties`` (its ``colluding``, the dropouts of its
    ``dropout_tolerance``, its ``threshold`` if set; :func:`~privdist.privacy.secagg_graph.choose_graph`)."""
    return choose_graph(n_parties, int(algorithm.colluding), algorithm.dropouts(n_parties),
                        getattr(algorithm, "threshold", None))


def neighbours(session: bytes, t: int, table, n: int, k: int) -> np.ndarray:
    """The round's masking graph, (n, k) int64: row ``u`` its neighbours (step 2 of the module docstring); the
    complete graph (every other party, ascending) when ``k >= n - 1``."""
    if k >= n - 1:
        everyone = np.broadcast_to(np.arange(n), (n, n))
        return everyone[~np.eye(n, dtype=bool)].reshape(n, n - 1).astype(np.int64)
    digest = hashlib.sha256(_GRAPH_INFO + bytes(session) + struct.pack(">Q", int(t))
                            + np.ascontiguousarray(table, dtype=np.uint8).tobytes()).digest()
    perm = np.random.Generator(np.random.PCG64(int.from_bytes(digest, "big"))).permutation(n)
    pos = np.argsort(perm)
    half = np.arange(1, k // 2 + 1)
    offsets = np.r_[half, -half]
    return perm[(pos[:, None] + offsets[None, :]) % n]


def reverse(nbrs) -> np.ndarray:
    """``rev[u, j]``: the column of ``u`` in the row of its neighbour ``nbrs[u, j]`` (the graph is symmetric)."""
    nbrs = np.asarray(nbrs, dtype=np.int64)
    n, k = nbrs.shape
    codes = (np.arange(n)[:, None] * n + nbrs).ravel()  # (owner, member)
    order = np.argsort(codes, kind="stable")
    at = np.searchsorted(codes[order], (nbrs * n + np.arange(n)[:, None]).ravel())
    return (order[at] % k).reshape(n, k)


def route(sealed, nbrs) -> np.ndarray:
    """The aggregator's forwarding: ``sealed`` (K senders, k, B) -> (k, K receivers, B): column ``j`` of receiver
    ``v`` is what its ``j``-th neighbour sent it (a backend hands each block its receivers' columns)."""
    nbrs = np.asarray(nbrs, dtype=np.int64)
    return np.swapaxes(np.asarray(sealed)[nbrs, reverse(nbrs)], 0, 1)


def _keystream(key: bytes, t: int, sender: int, receiver: int, nbytes: int) -> bytes:
    return hashlib.blake2b(struct.pack(">QII", int(t), int(sender), int(receiver)), key=key,
                           digest_size=nbytes).digest()


def _round_material(root: bytes, t: int, n_coefficients: int) -> tuple[bytes, np.ndarray]:
    """A party's two round seeds (32 bytes) and ``n_coefficients`` uniform elements of GF(p) (31-bit words, the value
    ``p`` rejected), expanded from its secret ``root`` by SHAKE-256 (module docstring, step 1)."""
    head = _ROUND_INFO + bytes(root) + struct.pack(">Q", int(t))
    extra, counter = n_coefficients // 64 + 8, 0
    while True:
        data = hashlib.shake_256(head + struct.pack(">I", counter)).digest(2 * SEED_BYTES + 4 * (n_coefficients + extra))
        words = np.frombuffer(data[2 * SEED_BYTES:], dtype="<u4") & 0x7FFFFFFF
        words = words[words != PRIME]
        if words.size >= n_coefficients:
            return data[:2 * SEED_BYTES], words[:n_coefficients].astype(np.uint64)
        counter += 1


class SparseParty:
    """The SecAgg+ side of a block of parties (module docstring), kept where they run.

    Args:
        channel: the block's long-term :class:`~privdist.runtime.secure.secagg.SecAggParties` (its keys encrypt
            the shares; it never agrees with every party).
        roots: each block agent's 32-byte secret root of its round material (the second half of its
            :func:`~privdist.runtime.secure.secagg.party_secrets`).
        params: the graph's parameters (:func:`graph_parameters`).
        seed, trial, secure: where the round seeds and the sharing polynomials come from.
        session: the run's session id.
    """

    def __init__(self, channel: SecAggParties, roots: list[bytes], params: GraphParameters, session: bytes):
        self.channel, self.params = channel, params
        self.agents, self.n_agents = channel.agents, channel.n_agents
        self._roots, self.session = [bytes(r) for r in roots], bytes(session)
        if len(self._roots) != len(self.agents):
            raise ValidationError(f"one secret root per agent of the block ({len(self.agents)}), got {len(roots)}")
        self._table: np.ndarray | None = None
        self._public: dict = {}
        self._keys: dict = {}  # (lo, hi) -> channel key
        self._round: dict | None = None

    def __getstate__(self):
        raise TypeError("secure-aggregation secrets never leave the process of their parties")

    def agree(self, table) -> None:
        """Setup: keep the long-term public-key table (K, 32); channel keys are derived when first needed."""
        table = np.asarray(table, dtype=np.uint8)
        if table.shape != (self.n_agents, KEY_BYTES):
            raise ValidationError(f"the public-key table must be ({self.n_agents}, {KEY_BYTES}), got {table.shape}")
        self._table = table

    def _channel_key(self, i: int, v: int) -> bytes:
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

        u = int(self.agents[i])
        pair = (min(u, v), max(u, v))
        if pair not in self._keys:
            if v not in self._public:
                self._public[v] = X25519PublicKey.from_public_bytes(self._table[v].tobytes())
            secret = self.channel._sk[i].exchange(self._public[v])
            self._keys[pair] = hkdf32(secret, _CHANNEL_INFO + self.session + struct.pack(">II", *pair))
        return self._keys[pair]

    def prepare(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Step 1: the block's round public keys (B, 32) (and an empty (B, 0, 64) for the backends' pairs)."""
        if self._table is None:
            raise ValidationError("secure aggregation: the setup's key table must be received before round keys")
        thr = self.params.threshold
        material = [_round_material(r, t, 2 * (thr - 1) * LIMBS) for r in self._roots]
        seeds = [m[0] for m in material]
        coef = np.stack([m[1] for m in material] or [np.zeros(0, np.uint64)]).reshape(len(material), 2, thr - 1,
                                                                                       LIMBS)
        parties = SecAggParties(self.agents, self.n_agents, self.channel.bits,
                                [round_secrets(s[:SEED_BYTES], s[SEED_BYTES:]) for s in seeds],
                                round_session(self.session, t), prg="shake")
        self._round = {"t": int(t), "seeds": seeds, "coef": coef, "parties": parties, "nbrs": None, "held": None}
        return parties.public_keys(), np.zeros((len(self.agents), 0, BUNDLE), dtype=np.uint8)

    def _state(self, t: int, step: str) -> dict:
        if self._round is None or self._round["t"] != int(t) or (step != "share" and self._round[step] is None):
            raise ValidationError(f"secure aggregation: round {t}'s sparse protocol is out of order (no {step})")
        return self._round

    def share(self, t: int, round_table) -> np.ndarray:
        """Step 3: the block's encrypted shares, (B, k, 64) uint8: row ``u`` column ``j`` for ``u``'s ``j``-th
        neighbour (the graph of step 2, drawn here from the announced keys)."""
        state = self._state(t, "share")
        k, thr = self.params.degree, self.params.threshold
        nbrs = neighbours(self.session, t, round_table, self.n_agents, k)
        mine = nbrs[self.agents]
        seeds = np.frombuffer(b"".join(state["seeds"]), dtype=np.uint8).reshape(len(self.agents), 2, SEED_BYTES)
        coef = state["coef"]
        bundles = np.concatenate([split_many(seeds[:, h], mine + 1, thr, coef[:, h]) for h in range(2)], axis=2)
        sealed = bundles.copy()
        for i, u in enumerate(self.agents.tolist()):
            for j, v in enumerate(mine[i].tolist()):
                pad = np.frombuffer(_keystream(self._channel_key(i, v), t, u, v, BUNDLE), dtype=np.uint8)
                sealed[i, j] ^= pad
        state["nbrs"] = nbrs
        return sealed

    def receive(self, t: int, round_table, inbound) -> None:
        """Step 4: the shares addressed to the block, (k, B, 64) (:func:`route`): decrypted and kept; the round pair
        keys derived with the neighbours."""
        state = self._state(t, "nbrs")
        mine = state["nbrs"][self.agents]
        held = np.swapaxes(np.asarray(inbound, dtype=np.uint8), 0, 1).copy()
        for i, u in enumerate(self.agents.tolist()):
            for j, v in enumerate(mine[i].tolist()):
                held[i, j] ^= np.frombuffer(_keystream(self._channel_key(i, v), t, v, u, BUNDLE), dtype=np.uint8)
        state["held"] = held
        state["parties"].agree(round_table, neighbours=mine)

    def masking(self, t: int) -> SecAggParties:
        """The round instance whose keys round ``t`` masks with (named error before :meth:`receive`)."""
        return self._state(t, "held")["parties"]

    def reveal(self, t: int, present) -> np.ndarray:
        """Step 5 for the block: per agent and neighbour ``u``, its share of ``b_u`` if ``u`` is in ``present``,
        of ``m_u`` otherwise: (B, k, 32) uint8."""
        state = self._state(t, "held")
        mine = state["nbrs"][self.agents]
        half = np.asarray(present, dtype=bool)[mine].astype(np.int64)  # b_u is the second half of a bundle
        cols = half[:, :, None] * SHARE_BYTES + np.arange(SHARE_BYTES)[None, None, :]
        return np.take_along_axis(state["held"], cols, axis=2)


def _pieces(nbrs, present) -> int:
    """Connected pieces of the masking graph among the present parties."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    idx = np.flatnonzero(present)
    if idx.size <= 1:
        return int(idx.size)
    rows = np.full(len(present), -1, dtype=np.int64)
    rows[idx] = np.arange(idx.size)
    sub = rows[np.asarray(nbrs)[idx]]
    src = np.repeat(np.arange(idx.size), sub.shape[1])
    keep = sub.ravel() >= 0
    graph = csr_matrix((np.ones(keep.sum()), (src[keep], sub.ravel()[keep])), shape=(idx.size, idx.size))
    return int(connected_components(graph, directed=False)[0])


def check_connected(nbrs, present, t: int) -> None:
    """Named error when the present parties' masking graph is in pieces (module docstring)."""
    pieces = _pieces(nbrs, present)
    if pieces > 1:
        raise SecureRoundError(f"secure aggregation, round {t}: the {int(np.sum(present))} parties whose vectors "
                               f"arrived split the masking graph into {pieces} pieces, whose partial sums the "
                               "aggregator would learn; the round stops (more dropouts than the graph was chosen for)")


def recover(masked_total, present, answered, revealed, round_keys: dict, session: bytes, t: int, bits: int):
    """Step 5 at the aggregator: ``(sum of the present parties' vectors as centred int64 (D,), info)``.

    Args:
        masked_total: (D,) uint64, the sum of the present parties' masked vectors mod ``2^bits``.
        present, answered: bool (K,): ``S`` and the parties whose shares arrived.
        revealed: (K, k, 32) uint8, the revealed shares (rows of parties that did not answer are ignored).
        round_keys: ``{"table": (K, 32) round keys, "neighbours": (K, k), "params": GraphParameters}``.

    Raises:
        SecureRoundError: a party with fewer than ``t`` answering neighbours, or ``S`` in pieces.
        ReconstructionError: a rebuilt mask-key seed does not give the public key its party advertised.
    """
    present, answered = np.asarray(present, dtype=bool), np.asarray(answered, dtype=bool)
    table, nbrs, thr = np.asarray(round_keys["table"], np.uint8), round_keys["neighbours"], \
        round_keys["params"].threshold
    K = len(present)
    check_connected(nbrs, present, t)
    need = table.any(axis=1)
    ok = answered[nbrs]
    short = np.flatnonzero(need & (ok.sum(axis=1) < thr))
    if short.size:
        u = int(short[0])
        raise SecureRoundError(f"secure aggregation, round {t}: party {u} has {int(ok[u].sum())} answering "
                               f"neighbours of {nbrs.shape[1]}, fewer than the threshold {thr}: its seed cannot be "
                               f"rebuilt ({short.size} such parties); the round stops rather than release a wrong sum")
    chosen = np.argsort(~ok, axis=1, kind="stable")[:, :thr]
    holders = np.take_along_axis(nbrs, chosen, axis=1)
    columns = np.take_along_axis(reverse(nbrs), chosen, axis=1)
    seeds = np.zeros((K, SEED_BYTES), dtype=np.uint8)
    rows = np.flatnonzero(need)
    if rows.size:
        seeds[rows] = combine_many(np.asarray(revealed, np.uint8)[holders[rows], columns[rows]], holders[rows] + 1)
    dim = np.asarray(masked_total).shape[0]
    total = np.asarray(masked_total, dtype=np.uint64).copy()
    own = np.flatnonzero(present & need)
    if own.size:
        total -= self_masks([round_secrets(None, seeds[u].tobytes())[KEY_BYTES:] for u in own], t, 0, dim,
                            bits, prg="shake").sum(axis=0, dtype=np.uint64)
    absent = np.flatnonzero(~present & need)
    for u in absent:  # its pair masks with its present neighbours: y_v carries s_vu PRG(k_uv) = -s_uv PRG(k_uv)
        party = SecAggParties([u], K, bits, [round_secrets(seeds[u].tobytes(), None)], round_session(session, t),
                              prg="shake")
        if not np.array_equal(party.public_keys()[0], table[u]):
            raise ReconstructionError(f"the mask-key seed rebuilt for party {u} in round {t} does not give the "
                                      "public key it advertised: the revealed shares are inconsistent")
        party.agree(table, peers=present, neighbours=[nbrs[u]])
        total += party.pair_masks(t, 0, dim, present)[0]
    return center(total, bits), {"rebuilt_self": own.tolist(), "rebuilt_pairwise": absent.tolist(), "seeds": seeds}
