"""Sparse-graph secure aggregation with threshold recovery among neighbours (issue 41, ``recovery="sparse"``).

Bell, Bonawitz, Gascón, Lepoint, Raykova, "Secure Single-Server Aggregation with (Poly)Logarithmic Overhead" (CCS
2020, SecAgg+): Bonawitz et al.'s double masking (CCS 2017, §4) over a ``k``-regular masking graph instead of the
complete one, ``k`` and the threshold ``t`` from :func:`privdist.privacy.secagg_graph.choose_graph`. Unlike Bell et
al., who agree fresh X25519 keys every round so that recovery may reveal a party's round key, a pair's secret here is
agreed once and every round's pair seed is derived from it, so a round costs no key agreement between parties that
already met (the simulator ran ``K k / 2`` X25519 agreements per round before). Round ``t`` of a sum:

0. **Setup, once per run**: each party's long-term X25519 key (:func:`~privdist.runtime.secure.secagg.party_secrets`);
   only the public-key table is broadcast. The first time the graph joins ``u`` and ``v`` both derive their **pair
   secret** ``P_uv = HKDF-SHA256(X25519(sk_u, pk_v), "privdist-secagg-pair" | session | lo | hi)`` (RFC 7748, RFC
   5869) and keep it (:meth:`SparseParty._pair_secret`; on Ray and in party processes each party its own copy).
1. **Commit** (:meth:`SparseParty.prepare`): ``u`` expands from its secret root (the second half of its
   :func:`~privdist.runtime.secure.secagg.party_secrets`: OS entropy in secure mode, its stream in research mode) by
   SHAKE-256 of ``"privdist-secagg-round" | root | t`` a FRESH 16-byte self-mask seed ``b_u``, a 32-byte retry
   self-mask key ``e_u`` (never shared) and the coefficients of its sharing polynomial; it sends the commitment
   ``c_u = SHA-256("privdist-secagg-commit" | session | t | u | b_u)``.
2. **Graph** (:func:`neighbours`): drawn from public randomness *after* the commitments are announced (the digest
   ``g_t`` = SHA-256 of the session, the round and the commitment table, :func:`graph_digest`, seeds a permutation of
   the parties): the Harary graph ``H(k, K)`` (position ``i`` joined to ``i +- 1 .. i +- k/2``) on the permuted
   parties, fresh every round.
3. **Share** (:meth:`SparseParty.share`): per pair of the graph, ``SHAKE-256("privdist-secagg-pair-round" | P_uv | t
   | g_t)`` gives 96 bytes: the **round seed** ``r_uv`` (32) and a one-time pad for each direction (32 + 32). ``u``
   splits ``b_u`` ``t``-out-of-``k`` among its neighbours (:mod:`~privdist.runtime.secure.shamir_field`, evaluation
   point ``v + 1``, vectorised over the block) and pads neighbour ``v``'s share; the aggregator forwards them.
4. **Receive and mask** (:meth:`SparseParty.receive`): ``u`` unpads the shares it holds;
   ``y_u = x_u + PRG(b_u) + sum_{v in N(u)} s_uv PRG(r_uv) mod q`` (``s_uv = +1`` if ``u < v``, PRG
   :class:`~privdist.runtime.secure.secagg._ShakePrg`: SHAKE-128 of the key and ``(t, attempt)``).
5. **Unmask in two reveals** (:meth:`SparseParty.reveal`, :func:`excluded`, :func:`recover`): the aggregator
   announces ``S`` (whose ``y`` arrived). First reveal: each party ``u`` of ``S`` sends its round seed ``r_uv`` with
   each absent neighbour ``v``; the aggregator learns who answers. A party of ``S`` that went silent with a neighbour
   outside the sum is left out of it (its ``y`` is dropped, repeatedly: :func:`excluded`), so that no pair mask is
   needed that only a silent party knows. Second reveal, over the final ``S``: each party ``u`` sends, per
   neighbour ``v``, its share of ``b_v`` if ``v`` is in ``S``, ``r_uv`` otherwise, and its own ``b_u``. The
   aggregator takes ``b_u`` as revealed for the parties that answered and rebuilds it from ``t`` shares for those
   that went silent (either checked against ``c_u``), removes the self-masks, and the pair masks of the parties
   outside ``S`` with the revealed round seeds. (A party of ``S`` revealing its own ``b_u`` tells the aggregator
   what the shares would: its self-mask is removed either way; interpolating every party's seed would cost the
   aggregator ``|S|`` combinations per round.)

**Security** (semi-honest aggregator and up to ``colluding`` parties, the ``C`` of the graph's choice, fixed before
the graph is drawn). What they learn of a round is the sum over ``S`` and nothing about how it splits among the
honest parties, except with the probability stated by :mod:`privdist.privacy.secagg_graph` (an honest party with
``t`` colluding neighbours, or honest members of ``S`` split into pieces by the colluding and absent parties). The
double-masking argument of Bonawitz et al.: an honest party ``u`` never reveals both kinds for the same neighbour
``v`` in a round (a share of ``b_v`` if ``v`` is in ``S``, ``r_uv`` if ``v`` is absent or left out; the party keeps
what it revealed and refuses the other kind by name, :meth:`SparseParty.reveal`; ``S`` only shrinks between the
two reveals, and the first reveals round seeds only). So for an honest ``v`` in ``S``, the aggregator may learn
``b_v`` but none of ``v``'s round seeds with its honest neighbours in ``S``, whose masks keep ``y_v`` hidden except
inside the sum; for a ``v`` outside ``S`` (absent, or left out with its ``y_v`` in hand) it learns round seeds but
fewer than ``t`` shares of ``b_v`` (only colluding neighbours' shares, below the threshold), so ``y_v`` stays padded
by ``PRG(b_v)``. Each round seed is a pseudorandom function (SHAKE-256 keyed by the secret ``P_uv``, FIPS 202)
of the round and its graph: revealing ``r_uv`` of round ``t`` says nothing about ``P_uv`` or any other round's seed
(PRF outputs on distinct inputs are independent to anyone without the key), so no re-keying is needed after a
recovery; the pads of the same derivation are disjoint output bytes, so revealing ``r_uv`` leaves the shares'
encryption intact. The commitments ``c_u`` are hashes of 128-bit random seeds and reveal nothing of them.

**Named failures, never a wrong sum** (:class:`~privdist.errors.SecureRoundError`): a party of ``S`` that went
silent with fewer than ``t`` answering neighbours (its ``b`` cannot be rebuilt), and a set ``S`` whose masking graph
splits into pieces (checked on the public graph before anything is revealed). Both end the round, and the run.

**Left out, or retried.** Only ``u`` and ``v`` know ``r_uv``, so a party that sent ``y_w`` and went silent cannot
stay in a sum that needs its seed with a party outside: it is left out (the sum is over fewer parties, and the
accounting counts the Skellam shares of those in it). Bell et al. share each round's X25519 key instead, so that a
silent party's pair keys can be rebuilt, at ``k`` agreements per party and round. A party that answers the first
reveal and goes silent before the second with a neighbour outside the sum makes :func:`recover` return ``None``: the
round goes on as issue 27's retried attempt (:mod:`privdist.runtime.secure.secagg`) among the parties that
answered, with the same inputs, fresh pair masks ``PRG(r_uv; t, a)`` and self-masks ``PRG(e_u; t, a)`` under the
never-shared ``e_u`` (the aggregator may have ``b_u``), each attempt's present set checked for connectivity first.
The simulator draws a party's failure after sending once per attempt, before the first reveal, so there it never
happens between the two.

**Cost per party and round**: one SHAKE-256 per neighbour (``k`` X25519 agreements only for pairs meeting the first
time), one vectorised Shamir split into ``k`` shares, ``k + 1`` keystreams of the vector; the aggregator: one
combination of ``t`` shares per silent party (vectorised), ``|S|`` self-mask keystreams and one keystream per absent
party's present neighbour.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

from ...errors import ReconstructionError, SecureRoundError, ValidationError
from ...privacy.secagg_graph import GraphParameters, choose_graph
from .secagg import KEY_BYTES, SecAggParties, center, hkdf32, self_masks
from .secagg_threshold import SEED_BYTES
from .shamir_field import LIMBS, PRIME, SHARE_BYTES, combine_many, split_many

__all__ = ["SparseParty", "graph_parameters", "graph_digest", "neighbours", "reverse", "route", "recover",
           "check_connected", "excluded", "BUNDLE", "OUT", "IN", "DROPPED", "PENDING"]

_PAIR_INFO, _GRAPH_INFO = b"privdist-secagg-pair", b"privdist-secagg-graph"
_ROUND_INFO, _PAIR_ROUND_INFO = b"privdist-secagg-round", b"privdist-secagg-pair-round"
_COMMIT_INFO, _SELF_INFO = b"privdist-secagg-commit", b"privdist-secagg-self"
BUNDLE = SHARE_BYTES  # what a party sends a neighbour per round: its share of b_u
#: A party's status in a reveal (:meth:`SparseParty.reveal`): absent, in the sum, sent then left out, undecided.
OUT, IN, DROPPED, PENDING = 0, 1, 2, 3
_PAIR_BYTES = 3 * KEY_BYTES  # round seed | pad lo -> hi | pad hi -> lo


def graph_parameters(algorithm, n_parties: int) -> GraphParameters:
    """The masking graph of the algorithm's secure sums over ``n_parties`` (its ``colluding``, the dropouts of its
    ``dropout_tolerance``, its ``threshold`` if set; :func:`~privdist.privacy.secagg_graph.choose_graph`)."""
    return choose_graph(n_parties, int(algorithm.colluding), algorithm.dropouts(n_parties),
                        getattr(algorithm, "threshold", None))


def graph_digest(session: bytes, t: int, table) -> bytes:
    """``g_t``: the public randomness of round ``t``'s graph (step 2), bound into its round seeds."""
    return hashlib.sha256(_GRAPH_INFO + bytes(session) + struct.pack(">Q", int(t))
                          + np.ascontiguousarray(table, dtype=np.uint8).tobytes()).digest()


def neighbours(session: bytes, t: int, table, n: int, k: int) -> np.ndarray:
    """The round's masking graph, (n, k) int64: row ``u`` its neighbours (step 2 of the module docstring); the
    complete graph (every other party, ascending) when ``k >= n - 1``."""
    if k >= n - 1:
        everyone = np.broadcast_to(np.arange(n), (n, n))
        return everyone[~np.eye(n, dtype=bool)].reshape(n, n - 1).astype(np.int64)
    digest = graph_digest(session, t, table)
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


def _round_material(root: bytes, t: int, n_coefficients: int) -> tuple[bytes, bytes, np.ndarray]:
    """A party's round self-mask seed ``b_u`` (16 bytes), retry self-mask key ``e_u`` (32 bytes) and
    ``n_coefficients`` uniform elements of GF(p) (31-bit words, the value ``p`` rejected), expanded from its secret
    ``root`` by SHAKE-256 (module docstring, step 1)."""
    head, lead = _ROUND_INFO + bytes(root) + struct.pack(">Q", int(t)), SEED_BYTES + KEY_BYTES
    extra, counter = n_coefficients // 64 + 8, 0
    while True:
        data = hashlib.shake_256(head + struct.pack(">I", counter)).digest(lead + 4 * (n_coefficients + extra))
        words = np.frombuffer(data[lead:], dtype="<u4") & 0x7FFFFFFF
        words = words[words != PRIME]
        if words.size >= n_coefficients:
            return data[:SEED_BYTES], data[SEED_BYTES:lead], words[:n_coefficients].astype(np.uint64)
        counter += 1


def commitment(session: bytes, t: int, u: int, seed: bytes) -> bytes:
    """``c_u`` of step 1: SHA-256 of the session, round, party and its self-mask seed ``b_u``."""
    return hashlib.sha256(_COMMIT_INFO + bytes(session) + struct.pack(">QI", int(t), int(u)) + bytes(seed)).digest()


def self_key(seed: bytes) -> bytes:
    """The 32-byte self-mask key of a seed ``b_u`` (what the party masks with and the aggregator rebuilds):
    SHAKE-256 of ``"privdist-secagg-self" | b_u``."""
    return hashlib.shake_256(_SELF_INFO + bytes(seed)).digest(KEY_BYTES)


class SparseParty:
    """The SecAgg+ side of a block of parties (module docstring), kept where they run.

    Args:
        channel: the block's long-term :class:`~privdist.runtime.secure.secagg.SecAggParties` (its X25519 keys agree
            the pair secrets; it never agrees with every party).
        roots: each block agent's 32-byte secret root of its round material (the second half of its
            :func:`~privdist.runtime.secure.secagg.party_secrets`).
        params: the graph's parameters (:func:`graph_parameters`).
        session: the run's session id.
    """

    def __init__(self, channel: SecAggParties, roots: list[bytes], params: GraphParameters, session: bytes):
        self.channel, self.params = channel, params
        self.agents, self.n_agents = channel.agents, channel.n_agents
        self._roots, self.session = [bytes(r) for r in roots], bytes(session)
        if len(self._roots) != len(self.agents):
            raise ValidationError(f"one secret root per agent of the block ({len(self.agents)}), got {len(roots)}")
        self._rows = np.full(self.n_agents, -1, dtype=np.int64)
        self._rows[self.agents] = np.arange(len(self.agents))
        self._table: np.ndarray | None = None
        self._public: dict = {}
        self._secrets: dict = {}  # lo * K + hi -> the pair secret P_uv, agreed once
        self._round: dict | None = None

    def __getstate__(self):
        raise TypeError("secure-aggregation secrets never leave the process of their parties")

    def agree(self, table) -> None:
        """Setup: keep the long-term public-key table (K, 32); pair secrets are agreed when a pair first meets."""
        table = np.asarray(table, dtype=np.uint8)
        if table.shape != (self.n_agents, KEY_BYTES):
            raise ValidationError(f"the public-key table must be ({self.n_agents}, {KEY_BYTES}), got {table.shape}")
        self._table = table

    def _pair_secret(self, code: int) -> bytes:
        """``P_uv`` of the pair ``(lo, hi) = divmod(code, K)``, one end in the block (step 0)."""
        found = self._secrets.get(code)
        if found is None:
            from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

            lo, hi = divmod(code, self.n_agents)
            mine, other = (lo, hi) if self._rows[lo] >= 0 else (hi, lo)
            public = self._public.get(other)
            if public is None:
                public = self._public[other] = X25519PublicKey.from_public_bytes(self._table[other].tobytes())
            shared = self.channel._sk[self._rows[mine]].exchange(public)
            found = self._secrets[code] = hkdf32(shared, _PAIR_INFO + self.session + struct.pack(">II", lo, hi))
        return found

    def prepare(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Step 1: the block's commitments (B, 32) (and an empty (B, 0, BUNDLE) for the backends' pairs)."""
        if self._table is None:
            raise ValidationError("secure aggregation: the setup's key table must be received before a round")
        thr = self.params.threshold
        material = [_round_material(r, t, (thr - 1) * LIMBS) for r in self._roots]
        seeds = [m[0] for m in material]
        commits = b"".join(commitment(self.session, t, u, s) for u, s in zip(self.agents.tolist(), seeds))
        coef = np.stack([m[2] for m in material] or [np.zeros(0, np.uint64)]).reshape(len(material), thr - 1, LIMBS)
        self._round = {"t": int(t), "seeds": seeds, "retry": [m[1] for m in material], "coef": coef, "nbrs": None,
                       "held": None}
        return (np.frombuffer(commits, dtype=np.uint8).reshape(len(self.agents), KEY_BYTES).copy(),
                np.zeros((len(self.agents), 0, BUNDLE), dtype=np.uint8))

    def _state(self, t: int, step: str) -> dict:
        if self._round is None or self._round["t"] != int(t) or (step != "share" and self._round[step] is None):
            raise ValidationError(f"secure aggregation: round {t}'s sparse protocol is out of order (no {step})")
        return self._round

    def share(self, t: int, round_table) -> np.ndarray:
        """Step 3: the block's padded shares, (B, k, BUNDLE) uint8: row ``u`` column ``j`` for ``u``'s ``j``-th
        neighbour (the graph of step 2, drawn here from the announced commitments)."""
        state = self._state(t, "share")
        K, k, thr = self.n_agents, self.params.degree, self.params.threshold
        round_table = np.asarray(round_table, dtype=np.uint8)
        digest = graph_digest(self.session, t, round_table)
        nbrs = neighbours(self.session, t, round_table, K, k)
        mine = nbrs[self.agents]
        me = np.broadcast_to(self.agents[:, None], mine.shape)
        codes, inverse = np.unique((np.minimum(me, mine) * K + np.maximum(me, mine)).ravel(), return_inverse=True)
        tail, known, codes_list = struct.pack(">Q", int(t)) + digest, self._secrets, codes.tolist()
        for c in codes_list:
            if c not in known:
                self._pair_secret(c)
        shake = hashlib.shake_256
        raw = b"".join([shake(_PAIR_ROUND_INFO + known[c] + tail).digest(_PAIR_BYTES) for c in codes_list])
        pair = np.frombuffer(raw, dtype=np.uint8).reshape(len(codes), 3, KEY_BYTES)
        per = pair[inverse.reshape(mine.shape)]  # (B, k, 3, 32)
        lower = (me < mine)[:, :, None]
        send, recv = np.where(lower, per[:, :, 1], per[:, :, 2]), np.where(lower, per[:, :, 2], per[:, :, 1])
        seeds = np.frombuffer(b"".join(state["seeds"]), dtype=np.uint8).reshape(len(self.agents), SEED_BYTES)
        shares = split_many(seeds, mine + 1, thr, state["coef"])
        state.update(nbrs=nbrs, codes=codes, raw=raw, round_seeds=per[:, :, 0], recv=recv)
        return shares ^ send

    def receive(self, t: int, round_table, inbound) -> None:
        """Step 4: the shares addressed to the block, (k, B, BUNDLE) (:func:`route`): unpadded and kept; the round
        instance that masks with the round seeds of the neighbours that committed."""
        state = self._state(t, "nbrs")
        held = np.swapaxes(np.asarray(inbound, dtype=np.uint8), 0, 1) ^ state["recv"]
        committed = np.asarray(round_table, dtype=np.uint8).any(axis=1)
        lo, hi = np.divmod(state["codes"], self.n_agents)
        keep = np.flatnonzero(committed[lo] & committed[hi])  # nobody masks with a party that did not commit
        raw, size = state["raw"], _PAIR_BYTES
        keys = [raw[i * size:i * size + KEY_BYTES] for i in keep.tolist()]
        state["parties"] = SecAggParties.keyed(self.agents, self.n_agents, self.channel.bits,
                                               [self_key(s) for s in state["seeds"]], (lo[keep], hi[keep]), keys,
                                               retry_self=state["retry"])
        state["held"] = held

    def masking(self, t: int) -> SecAggParties:
        """The round instance whose keys round ``t`` masks with (named error before :meth:`receive`)."""
        return self._state(t, "held")["parties"]

    def reveal(self, t: int, status) -> np.ndarray:
        """Step 5 for the block (module docstring), ``status`` (K,) per party: ``IN`` (in the sum), ``OUT`` (absent),
        ``DROPPED`` (sent, then excluded), ``PENDING`` (in ``S``, not decided yet; a bool array reads as ``IN`` /
        ``OUT``). Per agent that is ``IN`` or ``PENDING`` and neighbour ``v`` (columns ``0 .. k-1``): its share of
        ``b_v`` if ``v`` is ``IN``, their round seed ``r_uv`` if ``v`` is ``OUT`` or ``DROPPED``, nothing if
        ``PENDING``; in column ``k`` its own ``b_u`` if it is ``IN`` (zero-padded; its self-mask is removed whoever
        reveals it). Returns (B, k + 1, 32) uint8 (other rows zero: they answer nothing).

        Raises:
            SecureRoundError: a request for the other kind of a neighbour already revealed this round (a share of
                ``b_v`` after ``r_uv``, or the reverse): an honest party never reveals both.
        """
        state = self._state(t, "held")
        status = np.asarray(status)
        if status.dtype == bool:
            status = np.where(status, IN, OUT)
        mine, me = status[state["nbrs"][self.agents]], status[self.agents]
        asked = (me == IN) | (me == PENDING)
        kind = np.where(mine == IN, 1, np.where((mine == OUT) | (mine == DROPPED), 2, 0)) * asked[:, None]
        before = state.setdefault("shown", np.zeros(kind.shape, dtype=np.int8))
        if ((before != 0) & (kind != 0) & (before != kind)).any():
            i, j = np.argwhere((before != 0) & (kind != 0) & (before != kind))[0]
            raise SecureRoundError(f"secure aggregation, round {t}: party {int(self.agents[i])} was asked for the "
                                   f"other kind of neighbour {int(state['nbrs'][self.agents[i], j])}'s secret than it "
                                   "already revealed; an honest party never reveals both")
        state["shown"] = np.where(kind != 0, kind, before).astype(np.int8)
        out = np.zeros((len(self.agents), mine.shape[1] + 1, SHARE_BYTES), dtype=np.uint8)
        out[:, :-1] = np.where((kind == 1)[:, :, None], state["held"],
                               np.where((kind == 2)[:, :, None], state["round_seeds"], 0))
        own = np.frombuffer(b"".join(state["seeds"]), dtype=np.uint8).reshape(-1, SEED_BYTES)
        out[:, -1, :SEED_BYTES] = np.where((me == IN)[:, None], own, 0)
        return out


def excluded(nbrs, present, answered) -> np.ndarray:
    """The parties of ``present`` (``S``) left out of the sum: those that went silent (not in ``answered``) with a
    neighbour outside the sum, repeatedly (a party left out leaves its silent neighbours with one). What stays has,
    for every silent member, every neighbour in the sum, so its seed ``b`` is all the aggregator needs of it."""
    nbrs, keep = np.asarray(nbrs), np.asarray(present, dtype=bool).copy()
    silent = keep & ~np.asarray(answered, dtype=bool)
    while True:
        drop = silent & keep & ~keep[nbrs].all(axis=1)
        if not drop.any():
            return np.asarray(present, dtype=bool) & ~keep
        keep &= ~drop


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
    """Step 5 at the aggregator: ``(sum of the present parties' vectors as centred int64 (D,), info)``, or ``None``
    when an absent party has a neighbour in ``S`` that did not answer (its round seed is unknown: the round retries
    among the parties that answered, module docstring).

    Args:
        masked_total: (D,) uint64, the sum of the present parties' masked vectors mod ``2^bits``.
        present, answered: bool (K,): ``S`` and the parties whose reveals arrived.
        revealed: (K, k + 1, 32) uint8, the revealed shares and round seeds and each party's own seed (rows of
            parties that did not answer are ignored).
        round_keys: ``{"table": (K, 32) commitments, "neighbours": (K, k), "params": GraphParameters}``.

    Raises:
        SecureRoundError: a silent party of ``S`` with fewer than ``t`` answering neighbours, or ``S`` in pieces.
        ReconstructionError: a revealed or rebuilt self-mask seed does not match its party's commitment.
    """
    present, answered = np.asarray(present, dtype=bool), np.asarray(answered, dtype=bool) & present
    table, nbrs, thr = np.asarray(round_keys["table"], np.uint8), np.asarray(round_keys["neighbours"]), \
        round_keys["params"].threshold
    K, k = len(present), nbrs.shape[1]
    check_connected(nbrs, present, t)
    need = table.any(axis=1)
    ok = answered[nbrs]
    own = np.flatnonzero(present & need)
    silent = np.flatnonzero(present & need & ~answered)  # sent, then silent: b_u rebuilt from t shares
    short = silent[ok[silent].sum(axis=1) < thr]
    if short.size:
        u = int(short[0])
        raise SecureRoundError(f"secure aggregation, round {t}: party {u} has {int(ok[u].sum())} answering "
                               f"neighbours of {k}, fewer than the threshold {thr}: its seed cannot be "
                               f"rebuilt ({short.size} such parties); the round stops rather than release a wrong sum")
    absent = np.flatnonzero(~present & need)
    if (present[nbrs[absent]] & ~answered[nbrs[absent]]).any():
        return None
    revealed = np.asarray(revealed, np.uint8)
    seeds = np.zeros((K, SEED_BYTES), dtype=np.uint8)
    seeds[own] = revealed[own, k, :SEED_BYTES]  # an answering party's own b_u
    if silent.size:
        chosen = np.argsort(~ok[silent], axis=1, kind="stable")[:, :thr]
        holders = np.take_along_axis(nbrs[silent], chosen, axis=1)
        columns = np.take_along_axis(reverse(nbrs)[silent], chosen, axis=1)
        seeds[silent] = combine_many(revealed[holders, columns], holders + 1)
    wrong = [int(u) for u in own if commitment(session, t, int(u), seeds[u].tobytes()) != table[u].tobytes()]
    if wrong:
        raise ReconstructionError(f"the self-mask seeds revealed or rebuilt for parties {wrong[:5]} in round {t} do "
                                  "not match their commitments: the revealed shares are inconsistent")
    dim = np.asarray(masked_total).shape[0]
    total = np.asarray(masked_total, dtype=np.uint64).copy()
    if own.size:
        total -= self_masks([self_key(seeds[u].tobytes()) for u in own], t, 0, dim, bits,
                            prg="shake").sum(axis=0, dtype=np.uint64)
    if absent.size:  # y_w of each present neighbour w carries s_wv PRG(r_wv): w revealed r_wv
        holders = nbrs[absent]
        cols = reverse(nbrs)[absent]
        there = present[holders] & need[holders]
        w, c, v = holders[there], cols[there], np.broadcast_to(absent[:, None], holders.shape)[there]
        masks = self_masks([revealed[a, b].tobytes() for a, b in zip(w.tolist(), c.tolist())], t, 0, dim, bits,
                           prg="shake")
        plus, minus = masks[w < v].sum(axis=0, dtype=np.uint64), masks[w > v].sum(axis=0, dtype=np.uint64)
        total = total - plus + minus
    return center(total, bits), {"rebuilt_self": own.tolist(), "rebuilt_pairwise": absent.tolist(), "seeds": seeds,
                                 "rebuilt_from_shares": silent.tolist()}
