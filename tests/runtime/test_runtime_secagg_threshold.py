"""Issue 27: dropout recovery by threshold secret sharing (Bonawitz et al. 2017, ``recovery="shamir"``). Exactly
``t`` shares rebuild a seed and ``t - 1`` are a named error; the aggregator removes the masks of parties that failed
before sending and the self-masks of those that sent, and the sum is exact, without a retried attempt; a party
reveals one seed of each party, never both; a run with dropouts records what was rebuilt and recomputes every
party's guarantee from the parties in each sum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import assert_secure_ledger, make_logistic_problem
from privdist.algorithms import make_algorithm
from privdist.errors import ReconstructionError, UnknownNameError, ValidationError
from privdist.network import make_network
from privdist.privacy import privacy_report
from privdist.runtime import run
from privdist.runtime.secure.secagg import SecAggParties, center, party_secrets, session_id
from privdist.runtime.secure.secagg_threshold import SEED_BYTES, ThresholdParty, combine, recover, split
from privdist.runtime.secure.secure_round import Dropout


def test_exactly_t_shares_rebuild_a_seed_and_t_minus_one_fail():
    secret = bytes(range(16))
    shares = split(secret, 3, 5)
    assert len(shares) == 5 and all(len(s) == SEED_BYTES for s in shares)
    for chosen in ([0, 1, 2], [4, 2, 0], [1, 3, 4]):
        assert combine({v: shares[v] for v in chosen}, 3) == secret
    assert combine({v: shares[v] for v in range(5)}, 3) == secret  # the t smallest ids are used
    with pytest.raises(ReconstructionError, match="needs 3 shares, got 2"):
        combine({0: shares[0], 4: shares[4]}, 3)
    with pytest.raises(ValidationError, match="exceeds"):
        split(secret, 6, 5)
    with pytest.raises(ValidationError, match="16-byte"):
        split(b"short", 2, 3)


def _setup(K, bits, threshold, blocks=1, seed=0, t=4):
    """The parties of K agents in ``blocks`` blocks after setup and round ``t``'s key and share exchange, as the
    backends run them (the aggregator forwards the table and each block's column of the encrypted shares)."""
    session = session_id(seed, 0, False)
    secrets_ = party_secrets(range(K), seed, 0, False)
    groups = np.array_split(np.arange(K), blocks)
    channels = [SecAggParties(g, K, bits, [secrets_[a] for a in g], session) for g in groups]
    table = np.vstack([c.public_keys() for c in channels])
    for c in channels:
        c.agree(table)
    parties = [ThresholdParty(c, seed, 0, False, session, threshold) for c in channels]
    prepared = [p.prepare(t) for p in parties]
    round_table = np.vstack([pub for pub, _ in prepared])
    sealed = np.vstack([s for _, s in prepared])
    for p in parties:
        p.receive(t, round_table, sealed[:, p.channel.agents])
    return parties, round_table, session


@settings(max_examples=15, deadline=None)
@given(K=st.integers(2, 8), dim=st.integers(1, 6), blocks=st.integers(1, 3), seed=st.integers(0, 10**6),
       threshold=st.integers(1, 4), absent=st.sets(st.integers(0, 7), max_size=3),
       silent=st.sets(st.integers(0, 7), max_size=3))
def test_the_aggregator_removes_the_dropped_parties_masks_and_the_sum_is_exact(K, dim, blocks, seed, threshold,
                                                                                absent, silent):
    """Parties in ``absent`` fail before sending (their pair masks are rebuilt from their mask-key seeds), those in
    ``silent`` send and then fail (their self-masks are rebuilt): the sum over the parties whose vector arrived is
    exact when at least ``t`` parties answer, and nothing is rebuilt otherwise."""
    t, bits = 4, 32
    threshold = min(threshold, K)
    parties, table, session = _setup(K, bits, threshold, min(blocks, K), seed % 1000, t)
    x = np.random.default_rng(seed).integers(-1000, 1000, size=(K, dim))
    present = np.ones(K, dtype=bool)
    present[[a for a in absent if a < K]] = False
    answered = present.copy()
    answered[[s for s in silent if s < K]] = False
    y = np.vstack([p.masking(t).mask(t, 0, x[p.channel.agents]) for p in parties])
    revealed = np.vstack([p.reveal(t, present) for p in parties])
    total = y[present].sum(axis=0, dtype=np.uint64)
    out = recover(total, present, answered, revealed, table, threshold, session, t, bits)
    if answered.sum() < threshold:
        assert out is None
        return
    np.testing.assert_array_equal(out[0], x[present].sum(axis=0))
    assert out[1]["rebuilt_pairwise"] == np.flatnonzero(~present).tolist()


def test_a_party_reveals_one_seed_of_each_party_never_both():
    """Party 0's reveal: for parties in S the shares of their self-mask seeds, for the others of their mask-key seeds;
    the two halves of what it holds never leave together."""
    K = 5
    parties, _, _ = _setup(K, 32, 2)
    held = parties[0]._held[0]  # (K, 32): per party, the share of m_u then of b_u
    present = np.array([1, 0, 1, 1, 0], dtype=bool)
    revealed = parties[0].reveal(4, present)[0]
    for u in range(K):
        want = held[u, SEED_BYTES:] if present[u] else held[u, :SEED_BYTES]
        np.testing.assert_array_equal(revealed[u], want)


def test_a_late_vector_stays_masked_by_its_self_mask():
    """Party 2 is announced absent: the aggregator rebuilds its mask-key seed and with it every pair mask of party 2.
    Its vector, arriving late, is still padded by its self-mask, whose seed no honest party revealed (with that seed,
    known here from party 2's own stream, the vector would open)."""
    from privdist.runtime.secure.secagg import self_masks
    from privdist.runtime.secure.secagg_threshold import _round_seeds, round_secrets, round_session

    K, t, bits, dim = 5, 4, 32, 6
    parties, table, session = _setup(K, bits, 2)
    x = np.arange(K * dim).reshape(K, dim) - 7
    y = parties[0].masking(t).mask(t, 0, x)
    present = np.array([1, 1, 0, 1, 1], dtype=bool)
    revealed = parties[0].reveal(t, present)
    total, rebuilt = recover(y[present].sum(axis=0, dtype=np.uint64), present, present, revealed, table, 2, session,
                             t, bits)
    np.testing.assert_array_equal(total, x[present].sum(axis=0))
    two = SecAggParties([2], K, bits, [round_secrets(rebuilt["seeds"][2].tobytes(), None)], round_session(session, t))
    two.agree(table)
    without_pairs = y[2] - two.pair_masks(t, 0, dim, np.arange(K) != 2)[0]
    assert not np.array_equal(center(without_pairs, bits), x[2])  # still padded
    own_self = round_secrets(None, _round_seeds([2], 0, 0, t, False)[0][SEED_BYTES:])[32:]
    np.testing.assert_array_equal(center(without_pairs - self_masks([own_self], t, 0, dim, bits)[0], bits), x[2])


def test_inconsistent_shares_are_a_named_error():
    K, t, bits = 4, 4, 32
    parties, table, session = _setup(K, bits, 2)
    present = np.array([1, 1, 1, 0], dtype=bool)
    revealed = parties[0].reveal(t, present).copy()
    revealed[0, 3] ^= 1  # party 0's share of party 3's mask-key seed altered
    y = parties[0].masking(t).mask(t, 0, np.ones((K, 2), dtype=np.int64))
    with pytest.raises(ReconstructionError, match="party 3"):
        recover(y[present].sum(axis=0, dtype=np.uint64), present, present, revealed, table, 2, session, t, bits)


def test_a_run_recovers_every_dropout_without_a_retry_and_recomputes_the_guarantee(monkeypatch):
    """dpmm, 12 parties, 15 % failing before sending and 10 % after, each round: every round ends in one attempt,
    the coordinator's sums are exactly those of the parties whose vectors arrived (a party that failed after sending
    included), and each party's epsilon composes the rounds it was in, at the parties in each sum."""
    import importlib

    from privdist.runtime.secure.secure_round import PartySide

    run_module = importlib.import_module("privdist.runtime.run")  # the module (the package exports run())

    plain, sums = {}, {}
    original_mask, original_sum = PartySide.mask_outbox, run_module.secure_sum

    def record_plain(self, t, out):
        plain[t] = {k: np.asarray(v).copy() for k, v in out.items()}
        return original_mask(self, t, out)

    def record_sum(*args, **kw):
        out = original_sum(*args, **kw)
        sums[args[3]] = (out[1], out[2])
        return out

    monkeypatch.setattr(PartySide, "mask_outbox", record_plain)
    monkeypatch.setattr(run_module, "secure_sum", record_sum)
    K, T = 12, 6
    problem = make_logistic_problem(K)
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", dropout_tolerance=0.2,
                          colluding=1, recovery="shamir")
    res = run(algo, problem, make_network("complete", n=K), T, seed=4, dropout=Dropout(0.15, after_send=0.1))
    config = res.config["secure_aggregation"]
    assert config["recovery"] == "shamir" and config["threshold"] == 2
    rounds = config["rounds"][:-1]  # the last round releases nothing
    assert all(r["attempts"] == 1 for r in rounds)
    assert any(r["recovered"]["unanswered"] for r in rounds) and any(r["recovered"]["pair_masks_of"] for r in rounds)
    for t in range(1, T):
        got, present = sums[t]
        assert present.sum() == K - len(config["rounds"][t - 1]["absent"])
        np.testing.assert_array_equal(got["g"], plain[t]["g"][present].sum(axis=0))
    report = privacy_report(res.ledger, 1e-5)
    assert_secure_ledger(algo.for_rounds(T), problem, res, config["rounds"], range(K), K, report)
    assert any("Shamir" in a for a in report["assumptions"])


def test_too_few_parties_left_fall_back_to_a_retry():
    """Threshold 5 of 6 with 2 parties failing after sending: nothing can be rebuilt, the round is retried among the
    parties that answered (the retry protocol), and the run completes."""
    K = 6
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", recovery="shamir",
                          threshold=5)
    res = run(algo, make_logistic_problem(K), make_network("complete", n=K), 3, seed=1, dropout=Dropout(0.0, after_send=0.35))
    rounds = res.config["secure_aggregation"]["rounds"][:-1]
    assert any(r["recovered"] is None and r["attempts"] > 1 for r in rounds)
    assert np.all(np.isfinite(res.estimates))


def test_the_same_seed_gives_the_same_transcript():
    K = 5
    algo = make_algorithm("dpsgd", alpha0=5.0, epsilon=1.0, delta=1e-5, budget="total", trust="secure_aggregation",
                          recovery="shamir")
    problem, net = make_logistic_problem(K), make_network("complete", n=K)
    a, b = (run(algo, problem, net, 4, seed=9, dropout=Dropout(0.2, after_send=0.2)) for _ in range(2))
    assert a.transcript.digest == b.transcript.digest
    np.testing.assert_array_equal(a.estimates, b.estimates)


def test_named_errors():
    with pytest.raises(UnknownNameError):
        make_algorithm("dpmm", trust="secure_aggregation", recovery="vote")
    with pytest.raises(ValidationError, match="exceed colluding"):
        make_algorithm("dpmm", trust="secure_aggregation", recovery="shamir", colluding=2, threshold=2)
    with pytest.raises(ValidationError, match="recovery='shamir'"):
        make_algorithm("dpmm", trust="secure_aggregation", threshold=3)
    algo = make_algorithm("dpmm", epsilon=1.0, trust="secure_aggregation", recovery="shamir", threshold=9)
    with pytest.raises(ValidationError, match="exceeds the parties"):
        run(algo, make_logistic_problem(4), make_network("complete", n=4), 2, seed=0)
