"""A round of secure aggregation inside :func:`privdist.run` (issue 27): the parties' side, the aggregator's side and
simulated dropouts.

An algorithm asks for a secure sum by declaring messages with :attr:`~privdist.contract.Aggregation.SECURE_SUM`
(integer vectors, one modulus ``2^bits`` for all of them). In round ``t`` its active secure messages (those it does not
declare silent with ``secure_silent(name, t)``, a public schedule) are concatenated in name order into one vector of
``D`` integers per party and go through the protocol of :mod:`privdist.runtime.secure.secagg`:

* :class:`PartySide` runs where the parties run (the simulator's process for all agents; each Ray actor for its
  block): it holds their :class:`~privdist.runtime.secure.secagg.SecAggParties`, masks the step's outbox before it leaves
  (so the driver never sees an unmasked secure message), keeps the round's integer vectors for a retried attempt and
  answers the aggregator's unmasking request;
* :func:`secure_sum` runs in the driver (the aggregator's seat): it decides which masked vectors arrived, asks the
  present parties for their answers, retries among the parties that answered when some did not, and returns the sums
  the coordinator receives, the set of parties in them and what crossed the network (for the transcript).

:class:`Dropout` injects failures (research and tests): in each round every party fails to send with probability
``rate`` and, per attempt, a party that sent fails to answer with probability ``after_send``; draws come from
``(seed, trial, DROPOUT_DOMAIN, attempt, round)``, so a run's failures repeat with its seed. A party that fails is
left out of that round's sum (its release is none: the ledger records nothing for it); the guarantee of the others is
recomputed from the parties in the sum (``algorithm.secure_events``).

**Recovery** (the algorithm's ``recovery``): ``"retry"`` (the default below 100 parties, ``"auto"``) is the protocol above: keys once per run, and a
party that fails after sending costs a retried attempt without it. ``"shamir"`` is threshold recovery
(:mod:`privdist.runtime.secure.secagg_threshold`): before round ``t`` (:func:`prepare_round`) the parties exchange fresh
round keys and Shamir shares of their seeds; a party that fails after sending stays in the sum (the aggregator rebuilds
its self-mask from the others' shares) and one that fails before sending has its pair masks rebuilt, without a retried
attempt; with fewer than ``threshold`` parties left the round falls back to the retried attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...contract import RECOVERIES, Aggregation
from ...errors import ValidationError
from ..rng import DROPOUT_DOMAIN, stream
from .secagg import SecAggParties, check_bits, party_secrets, unmask_sum

__all__ = ["Dropout", "PartySide", "secure_specs", "secure_bits", "active_names", "secure_sum", "check_dropout",
           "prepare_round", "protocol_of"]

def protocol_of(algorithm, n_parties: int) -> tuple[str, int | None]:
    """``(recovery, threshold)`` of the algorithm's secure sums over ``n_parties`` (:data:`~privdist.contract.RECOVERIES`):
    its ``recovery`` (default ``"auto"``, resolved by
    :func:`~privdist.privacy.secure_params.resolve_recovery`) and, for ``"shamir"``, its ``shamir_threshold``."""
    from ...privacy.secure_params import resolve_recovery

    recovery = getattr(algorithm, "recovery", "retry")
    if recovery not in RECOVERIES:
        raise ValidationError(f"recovery must be one of {RECOVERIES}, got {recovery!r}")
    recovery = resolve_recovery(recovery, n_parties)
    if recovery == "sparse":
        return recovery, getattr(algorithm, "threshold", None)
    return recovery, (int(algorithm.shamir_threshold) if recovery == "shamir" else None)


@dataclass(frozen=True)
class Dropout:
    """Simulated failures of a secure-aggregation run (see the module docstring).

    Args:
        rate: probability that a party fails before sending its masked vector, per round.
        after_send: probability that a party whose vector arrived fails before answering, per attempt.
    """

    rate: float = 0.0
    after_send: float = 0.0

    def __post_init__(self):
        for name in ("rate", "after_send"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValidationError(f"dropout {name} must be a probability in [0, 1), got {value!r}")

    def failures(self, seed: int, trial: int, t: int, attempt: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(fails to send, fails to answer)``: bool (n,) each, for round ``t`` and ``attempt``."""
        u = stream(seed, trial, DROPOUT_DOMAIN, attempt, t).random((2, n))
        return (u[0] < self.rate) & (attempt == 0), u[1] < self.after_send


def check_dropout(dropout) -> Dropout | None:
    """``None``, a :class:`Dropout`, or a float ``rate`` (named error otherwise)."""
    if dropout is None or isinstance(dropout, Dropout):
        return dropout
    if isinstance(dropout, (int, float)) and not isinstance(dropout, bool):
        return Dropout(float(dropout))
    raise ValidationError(f"dropout must be None, a probability or a Dropout, got {dropout!r}")


def secure_specs(specs) -> list:
    """The algorithm's ``SECURE_SUM`` messages, in name order."""
    return sorted((s for s in specs if s.aggregation == Aggregation.SECURE_SUM), key=lambda s: s.name)


def secure_bits(specs) -> int:
    """The one modulus exponent of the secure messages (named error when they disagree or lack one)."""
    bits = {s.bits for s in specs}
    if len(bits) != 1 or None in bits:
        raise ValidationError(f"secure-sum messages must all declare the same bits, got {sorted(map(str, bits))}")
    return check_bits(bits.pop())


def active_names(algorithm, specs, t: int) -> list[str]:
    """The secure messages the algorithm sends in round ``t`` (``secure_silent(name, t)``: a public schedule)."""
    silent = getattr(algorithm, "secure_silent", None)
    return [s.name for s in specs if silent is None or not silent(s.name, t)]


def _concat(outbox, names) -> np.ndarray:
    rows = next(iter(outbox.values())).shape[0] if outbox else 0
    return np.concatenate([np.asarray(outbox[n]).reshape(rows, -1) for n in names], axis=1)


def _split(flat: np.ndarray, names, shapes: dict) -> dict:
    out, start = {}, 0
    lead = flat.shape[:-1]
    for n in names:
        size = int(np.prod(shapes[n]))
        out[n] = flat[..., start:start + size].reshape(*lead, *shapes[n])
        start += size
    return out


class PartySide:
    """Secure aggregation where a block of parties runs (see the module docstring).

    Args:
        algorithm: the algorithm (for its ``secure_silent`` schedule).
        specs: its ``SECURE_SUM`` message specs (:func:`secure_specs`).
        agents, n_agents: the block's agent ids and the number of parties.
        seed, trial, secure: where the parties' secrets come from (:func:`~privdist.runtime.secure.secagg.party_secrets`).
        session: the run's session id.
    """

    def __init__(self, algorithm, specs, agents, n_agents: int, seed: int, trial: int, secure: bool, session: bytes):
        self.algorithm, self.specs = algorithm, specs
        self.shapes = {s.name: tuple(s.shape) for s in specs}
        secrets_ = party_secrets(agents, seed, trial, secure)
        self.parties = SecAggParties(agents, n_agents, secure_bits(specs), secrets_, session)
        self._plain: tuple[int, np.ndarray] | None = None
        recovery, threshold = protocol_of(algorithm, n_agents)
        self._sparse = recovery == "sparse"
        self._threshold = None
        if recovery == "shamir":
            from .secagg_threshold import ThresholdParty

            self._threshold = ThresholdParty(self.parties, seed, trial, secure, session, threshold)
        elif recovery == "sparse":
            from .secagg_plus import SparseParty, graph_parameters

            self._threshold = SparseParty(self.parties, [s[32:] for s in secrets_], graph_parameters(algorithm, n_agents),
                                          session)

    def public_keys(self) -> np.ndarray:
        return self.parties.public_keys()

    def agree(self, table) -> None:
        if self._sparse:  # channel keys with the round's neighbours only, when needed
            self._threshold.agree(table)
        else:
            self.parties.agree(table)

    def _masking(self, t: int) -> SecAggParties:
        """The keys round ``t`` masks with: the run's (retry) or the round's (threshold recovery)."""
        return self.parties if self._threshold is None else self._threshold.masking(t)

    def prepare(self, t: int):
        """Threshold recovery, before round ``t``: the round's public keys and encrypted shares of the block."""
        return self._threshold.prepare(t)

    def share(self, t: int, table):
        """Sparse graph, before round ``t``: the block's encrypted shares for its neighbours (the graph drawn from
        the announced round keys ``table``)."""
        return self._threshold.share(t, table)

    def receive(self, t: int, table, inbound) -> None:
        """Threshold recovery: the round's public-key table and the encrypted shares addressed to the block."""
        self._threshold.receive(t, table, inbound)

    def reveal(self, t: int, present) -> np.ndarray:
        """Threshold recovery: the block's shares of the seeds the aggregator needs (``present``: the set ``S``)."""
        return self._threshold.reveal(t, present)

    def mask_outbox(self, t: int, out: dict) -> dict:
        """The step's outbox with its active secure messages masked (attempt 0); silent ones zero (uint64 too)."""
        names = active_names(self.algorithm, self.specs, t)
        out = dict(out)
        for s in self.specs:
            arr = np.asarray(out[s.name])
            if arr.dtype.kind not in "iu":
                raise ValidationError(f"secure-sum message {s.name!r} must hold integers, got dtype {arr.dtype}")
            if s.name not in names:
                out[s.name] = np.zeros(arr.shape, dtype=np.uint64)
        if not names:
            self._plain = None
            return out
        plain = _concat(out, names).astype(np.int64)
        self._plain = (t, plain)
        out.update(_split(self._masking(t).mask(t, 0, plain), names, self.shapes))
        return out

    def _round_plain(self, t: int) -> np.ndarray:
        if self._plain is None or self._plain[0] != t:
            raise ValidationError(f"secure aggregation: no secure message of round {t} to unmask")
        return self._plain[1]

    def remask(self, t: int, attempt: int, present) -> dict:
        """Attempt ``attempt`` of round ``t``: the same integer vectors under fresh masks, rows outside ``present``
        (bool (K,)) zero."""
        plain = self._round_plain(t)
        masked = self._masking(t).mask(t, attempt, plain)
        masked[~np.asarray(present, dtype=bool)[self.parties.agents]] = 0
        return _split(masked, active_names(self.algorithm, self.specs, t), self.shapes)

    def answer(self, t: int, attempt: int, present) -> np.ndarray:
        """Step 3 of the protocol for the block's agents in ``present``: (B, D) uint64, other rows zero."""
        return self._masking(t).unmask(t, attempt, present, self._round_plain(t).shape[1])


def _lost(be, K: int) -> np.ndarray:
    """Parties whose process the backend found dead (the Ray backend's ``secure_lost``; none elsewhere)."""
    lost = getattr(be, "secure_lost", None)
    return np.zeros(K, dtype=bool) if lost is None else np.asarray(lost(), dtype=bool)


def _words(raw) -> np.ndarray:
    """Protocol bytes (..., 4 n) uint8 as (..., n) little-endian uint32 words for the transcript: the same bytes, a
    quarter of the elements (the transcript stores and hashes float64, exact for 32-bit words)."""
    return np.ascontiguousarray(raw, dtype=np.uint8).view("<u4")


def prepare_round(be, algorithm, specs, t: int):
    """Threshold recovery, before round ``t`` with active secure messages: the parties' round public keys and
    encrypted shares, gathered and forwarded (:mod:`privdist.runtime.secure.secagg_threshold`). Returns the round's key
    table (K, 32) (the aggregator keeps it to check what it rebuilds) and the records for the transcript, or
    ``(None, [])`` (retry recovery, or a round without a secure message)."""
    recovery = protocol_of(algorithm, len(be.secure_keys))[0]
    if recovery == "retry" or not active_names(algorithm, specs, t):
        return None, []
    if recovery == "sparse":  # keys announced, then the graph drawn from them, then the shares among neighbours
        from .secagg_plus import graph_parameters, neighbours, route

        K = len(be.secure_keys)
        params = getattr(be, "secure_graph", None)
        if params is None or params.parties != K:  # set before the calls: a backend shapes a lost block's rows by it
            params = be.secure_graph = graph_parameters(algorithm, K)
        table, _ = be.secure_prepare(t)
        nbrs = neighbours(be.secure_session, t, table, K, params.degree)
        sealed = be.secure_share(t, table)
        be.secure_receive(t, table, route(sealed, nbrs))
        return {"table": table, "neighbours": nbrs, "params": params}, [{"secagg.round_keys": _words(table),
                                                                        "secagg.shares": _words(sealed)}]
    table, sealed = be.secure_prepare(t)
    be.secure_receive(t, table, sealed)
    return table, [{"secagg.round_keys": table}]  # the shares (drawn from OS entropy by pycryptodome) are not kept


def secure_sum(be, algorithm, specs, t: int, agent_out: dict, dropout: Dropout | None, seed: int, trial: int,
               round_keys=None):
    """The aggregator's side of round ``t`` (module docstring); ``round_keys``: the round's public keys under
    threshold recovery (:func:`prepare_round`).

    Returns:
        ``(arrived, sums, present, records, info)``: the agent outbox as it arrived (absent parties' secure rows
        zero), the sums of the secure messages (centred integers, the message shapes), the parties in them (bool
        (K,)), further ``{name: array}`` outboxes that crossed the network (retried masks, answers, rebuilt seeds)
        for the transcript, and ``{"present": n, "attempts": a, "absent": [ids left out]}`` (public: the aggregator
        announces who is in the sum; under threshold recovery also what it rebuilt).
    """
    K = next(iter(agent_out.values())).shape[0]
    shapes = {s.name: tuple(s.shape) for s in specs}
    names = active_names(algorithm, specs, t)
    if not names:
        zeros = {s.name: np.zeros(s.shape, dtype=np.int64) for s in specs}
        return agent_out, zeros, np.ones(K, dtype=bool), [], {"present": K, "attempts": 0, "absent": [],
                                                              "silent": True}
    bits = secure_bits(specs)
    sent, _ = dropout.failures(seed, trial, t, 0, K) if dropout is not None else (np.zeros(K, bool), None)
    present = ~sent & ~_lost(be, K)  # a party whose process died sent nothing
    arrived = dict(agent_out)
    masked = {n: np.where(present.reshape(-1, *[1] * len(shapes[n])), agent_out[n], 0).astype(np.uint64)
              for n in names}
    arrived.update(masked)
    records, attempt, info, flat = [], 0, {}, None
    if isinstance(round_keys, dict):  # the sparse graph: recovered among neighbours, or a named error
        fails = dropout.failures(seed, trial, t, 0, K)[1] if dropout is not None else np.zeros(K, bool)
        from .secagg_plus import DROPPED, IN, OUT, PENDING, check_connected, excluded, recover as recover_sparse

        nbrs = round_keys["neighbours"]
        check_connected(nbrs, present, t)  # before anything is revealed
        first = be.secure_reveal(t, np.where(present, PENDING, OUT))  # round seeds with the absent: who answers
        responded = present & ~fails & ~_lost(be, K)  # a party that fails after sending answers neither reveal
        left_out = excluded(nbrs, present, responded)  # went silent with a neighbour outside the sum
        present = present & ~left_out
        check_connected(nbrs, present, t)  # before any share is revealed
        revealed = be.secure_reveal(t, np.where(present, IN, np.where(left_out, DROPPED, OUT)))
        answered = responded & present & ~_lost(be, K)
        total = _concat(masked, names)[present].sum(axis=0, dtype=np.uint64)
        out = recover_sparse(total, present, answered, revealed, round_keys, be.secure_session, t, bits)
        shown = {"secagg.revealed@phase1": _words(np.where(responded[:, None, None], first, 0)),
                 "secagg.revealed@attempt0": _words(np.where(answered[:, None, None], revealed, 0))}
        info["left_out"] = np.flatnonzero(left_out).tolist()
        if out is not None:
            flat, rebuilt = out
            records.append({**shown, "secagg.rebuilt_seeds@attempt0": _words(rebuilt["seeds"])})
            info["recovered"] = {"self_masks": len(rebuilt["rebuilt_self"]),
                                 "pair_masks_of": rebuilt["rebuilt_pairwise"],
                                 "unanswered": np.flatnonzero(present & ~answered).tolist()}
        else:  # an absent party's neighbour sent and then went silent: retried among those who answered
            records.append(shown)
            info["recovered"] = None
            present, attempt = answered, 1
    elif round_keys is not None:  # threshold recovery: attempt 0 ends with the revealed shares
        fails = dropout.failures(seed, trial, t, 0, K)[1] if dropout is not None else np.zeros(K, bool)
        revealed = be.secure_reveal(t, present)
        answered = present & ~fails & ~_lost(be, K)
        from .secagg_threshold import recover

        total = _concat(masked, names)[present].sum(axis=0, dtype=np.uint64)
        out = recover(total, present, answered, revealed, round_keys, protocol_of(algorithm, K)[1],
                      be.secure_session, t, bits)
        if out is not None:
            flat, rebuilt = out
            records.append({"secagg.rebuilt_seeds@attempt0": rebuilt["seeds"]})
            info["recovered"] = {"self_masks": len(rebuilt["rebuilt_self"]),
                                 "pair_masks_of": rebuilt["rebuilt_pairwise"],
                                 "unanswered": np.flatnonzero(present & ~answered).tolist()}
        else:  # fewer than the threshold left: nothing can be rebuilt; retry among those who answered
            info["recovered"] = None
            present, attempt = answered, 1
    while flat is None:
        if attempt:
            masked = be.secure_remask(t, attempt, present)
            if _lost(be, K)[present].any():  # died before resending: this attempt is dropped like a failed answer
                present = present & ~_lost(be, K)
                attempt += 1
                continue
            records.append({f"{n}@attempt{attempt}": masked[n] for n in names})
        if isinstance(round_keys, dict) and present.any():  # the sparse graph's retried attempt: connected first
            from .secagg_plus import check_connected

            check_connected(round_keys["neighbours"], present, t)
        fails = dropout.failures(seed, trial, t, attempt, K)[1] if dropout is not None else np.zeros(K, bool)
        answers = be.secure_answer(t, attempt, present)
        answered = present & ~fails & ~_lost(be, K)
        answers[~answered] = 0  # a party that failed sends nothing
        records.append({f"secagg.answer@attempt{attempt}": answers})
        if np.array_equal(answered, present) or not answered.any():
            present = answered
            flat = unmask_sum(_concat(masked, names), answers, present, bits) if present.any() else \
                np.zeros(sum(int(np.prod(shapes[n])) for n in names), dtype=np.int64)
            break
        present, attempt = answered, attempt + 1
    sums = {s.name: np.zeros(s.shape, dtype=np.int64) for s in specs}
    sums.update(_split(flat, names, shapes))
    return arrived, sums, present, records, {"present": int(present.sum()), "attempts": attempt + 1,
                                             "absent": np.flatnonzero(~present).tolist(), **info}
