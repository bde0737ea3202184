"""Issue 41: sparse-graph secure aggregation (SecAgg+, Bell et al. CCS 2020, ``recovery="sparse"``). The masks cancel
exactly over the sparse graph with dropouts up to the tolerance; fewer answering neighbours than the threshold, or
present parties that split the graph, end the round by name (never a wrong sum); the graph, the keys and the shares
are fresh each round; a seeded run repeats its transcript and gives the coefficients of the complete-graph protocol;
each party's epsilon is recomputed from the parties in each sum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import assert_secure_ledger, make_logistic_problem
from privdist.algorithms import make_algorithm
from privdist.errors import SecureRoundError, ValidationError
from privdist.network import make_network
from privdist.privacy import privacy_report
from privdist.privacy.secagg_graph import choose_graph
from privdist.runtime import run
from privdist.runtime.secure.secagg import SecAggParties, center, party_secrets, session_id, unmask_sum
from privdist.runtime.secure.secagg_plus import (DROPPED, IN, OUT, PENDING, SparseParty, check_connected,
                                                excluded, neighbours, recover, reverse, route)
from privdist.runtime.secure.secure_round import Dropout


def _setup(K, params, blocks=1, seed=0, t=3, bits=32):
    """K parties in ``blocks`` blocks after setup and round ``t``'s keys, graph and shares, as the backends run them."""
    session = session_id(seed, 0, False)
    secrets_ = party_secrets(range(K), seed, 0, False)
    groups = np.array_split(np.arange(K), blocks)
    parties = [SparseParty(SecAggParties(g, K, bits, [secrets_[a] for a in g], session),
                           [secrets_[a][32:] for a in g], params, session) for g in groups]
    table = np.vstack([p.channel.public_keys() for p in parties])
    for p in parties:
        p.agree(table)
    round_table = np.vstack([p.prepare(t)[0] for p in parties])
    nbrs = neighbours(session, t, round_table, K, params.degree)
    sealed = np.vstack([p.share(t, round_table) for p in parties])
    inbound = route(sealed, nbrs)
    for p in parties:
        p.receive(t, round_table, inbound[:, p.agents])
    return parties, {"table": round_table, "neighbours": nbrs, "params": params}, session, sealed


def _sum(parties, keys, session, x, present, answered, t=3, bits=32):
    """The sum over ``present`` recovered from the reveals, or (``None`` from :func:`recover`: an absent party's
    neighbour went silent) the retried attempt's sum among the parties that answered; ``(total, info, in the sum)``."""
    y = np.vstack([p.masking(t).mask(t, 0, x[p.agents]) for p in parties])
    for p in parties:  # the first reveal: round seeds with the absent parties
        p.reveal(t, np.where(present, PENDING, OUT))
    left_out = excluded(keys["neighbours"], present, answered)
    present = present & ~left_out
    revealed = np.vstack([p.reveal(t, np.where(present, IN, np.where(left_out, DROPPED, OUT))) for p in parties])
    total = y[present].sum(axis=0, dtype=np.uint64)
    out = recover(total, present, answered, revealed, keys, session, t, bits)
    if out is not None:
        return (*out, present)
    retry = present & answered
    check_connected(keys["neighbours"], retry, t)
    y = np.vstack([p.masking(t).mask(t, 1, x[p.agents]) for p in parties])
    z = np.vstack([p.masking(t).unmask(t, 1, retry, x.shape[1]) for p in parties])
    return unmask_sum(y, z, retry, bits), {"retried": True}, retry


def test_the_graph_is_regular_symmetric_and_fresh_each_round():
    K, k = 30, 6
    tables = [np.random.default_rng(r).integers(0, 256, (K, 32), dtype=np.uint8) for r in range(2)]
    graphs = [neighbours(b"s" * 16, t, tables[t - 1], K, k) for t in (1, 2)]
    for g in graphs:
        assert g.shape == (K, k) and all(len(set(row)) == k and u not in row for u, row in enumerate(g.tolist()))
        rev = reverse(g)
        assert np.array_equal(g[g, rev], np.broadcast_to(np.arange(K)[:, None], (K, k)))  # symmetric
    assert not np.array_equal(graphs[0], graphs[1])
    # drawn after the keys: another key table, another graph
    assert not np.array_equal(neighbours(b"s" * 16, 1, tables[1], K, k), graphs[0])


@settings(max_examples=20, deadline=None)
@given(K=st.integers(8, 40), dim=st.integers(1, 5), blocks=st.integers(1, 3), seed=st.integers(0, 10**6),
       colluding=st.integers(0, 2), tol=st.sampled_from([0.0, 0.1, 0.2]), data=st.data())
def test_the_masks_cancel_exactly_with_dropouts_up_to_the_tolerance(K, dim, blocks, seed, colluding, tol, data):
    """Up to ``floor(tol K)`` parties fail, some before sending (their pair masks are rebuilt), some after sending
    (their self-masks are rebuilt): the sum over the parties whose vector arrived is exact, or the round stops by
    name; a named stop is rare at the tolerance the graph was chosen for (bounded by 2^-30 and 2^-40)."""
    dropouts = int(np.floor(tol * K))
    params = choose_graph(K, colluding, dropouts)
    parties, keys, session, _ = _setup(K, params, blocks, seed % 997)
    failed = data.draw(st.lists(st.integers(0, K - 1), max_size=dropouts, unique=True))
    split = data.draw(st.integers(0, len(failed)))
    present, answered = np.ones(K, bool), np.ones(K, bool)
    present[failed[:split]] = False
    answered[failed] = False
    x = np.random.default_rng(seed).integers(-10**6, 10**6, size=(K, dim))
    total, info, summed = _sum(parties, keys, session, x, present, answered)
    np.testing.assert_array_equal(total, x[summed].sum(axis=0))  # exact over the parties in the sum
    assert "retried" not in info  # nobody fails between the two reveals here
    left_out = present & ~summed  # only silent parties that had a neighbour outside the sum
    assert not (left_out & answered).any()
    assert all((~summed[keys["neighbours"][u]]).any() for u in np.flatnonzero(left_out))
    assert sorted(info["rebuilt_pairwise"]) == sorted(np.flatnonzero(~summed).tolist())


def test_a_party_with_fewer_answering_neighbours_than_the_threshold_stops_the_round_by_name():
    K = 20
    params = choose_graph(K, 0, 0, threshold=2)  # k = 2, t = 2: every neighbour must answer
    assert (params.degree, params.threshold) == (2, 2)
    parties, keys, session, _ = _setup(K, params)
    x = np.arange(K * 3).reshape(K, 3)
    present, answered = np.ones(K, bool), np.ones(K, bool)
    w = keys["neighbours"][5][0]
    answered[[5, w]] = False  # both sent, then went silent: party 5 keeps one answering neighbour of 2
    with pytest.raises(SecureRoundError, match="fewer than the threshold 2"):
        _sum(parties, keys, session, x, present, answered)


def test_present_parties_that_split_the_graph_stop_the_round_by_name():
    K = 20
    params = choose_graph(K, 0, 0)  # a ring: two absent parties cut it in two
    assert params.degree == 2
    parties, keys, session, _ = _setup(K, params)
    ring, order = keys["neighbours"], [0, int(keys["neighbours"][0][0])]
    while len(order) < K:  # walk the ring
        order.append(int(next(v for v in ring[order[-1]] if v != order[-2])))
    present = np.ones(K, bool)
    present[[order[0], order[K // 2]]] = False  # opposite points of the ring
    x = np.ones((K, 2), dtype=np.int64)
    with pytest.raises(SecureRoundError, match="pieces"):
        _sum(parties, keys, session, x, present, present.copy())


def test_a_party_reveals_one_seed_of_each_neighbour_never_both():
    K = 12
    params = choose_graph(K, 1, 2)
    parties, keys, session, _ = _setup(K, params)
    present = np.ones(K, bool)
    present[[3, 7]] = False
    held, seeds = parties[0]._round["held"], parties[0]._round["round_seeds"]
    shown = parties[0].reveal(3, present)
    nbrs = keys["neighbours"]
    for v in range(K):
        if not present[v]:  # a party outside S answers nothing
            assert not shown[v].any()
            continue
        for j, u in enumerate(nbrs[v]):  # the share of b_u if u is in S, their round seed otherwise; never both
            assert np.array_equal(shown[v, j], (held if present[u] else seeds)[v, j])
        assert shown[v, -1, :16].tobytes() == parties[0]._round["seeds"][v]  # its own b_v: v is in S


def test_shares_and_keys_are_fresh_each_round():
    K = 16
    params = choose_graph(K, 1, 2)
    a = _setup(K, params, t=3)
    b = _setup(K, params, t=4)
    assert not np.array_equal(a[1]["table"], b[1]["table"])
    assert not np.array_equal(a[1]["neighbours"], b[1]["neighbours"])
    assert not np.array_equal(a[3], b[3])


def test_a_run_gives_the_complete_graph_coefficients_and_repeats_its_transcript():
    """Without dropouts the sums are exact, so the coefficients are those of the retry protocol (bit-identical);
    the same seed gives the same transcript."""
    K = 15
    problem, net = make_logistic_problem(K), make_network("complete", n=K)
    kw = dict(epsilon=1.0, delta=1e-5, trust="secure_aggregation")
    plain = run(make_algorithm("dpmm", **kw), problem, net, 4, seed=2)
    algo = make_algorithm("dpmm", recovery="sparse", **kw)
    a, b = (run(algo, problem, net, 4, seed=2) for _ in range(2))
    np.testing.assert_array_equal(a.estimates, plain.estimates)
    assert a.transcript.digest == b.transcript.digest
    assert a.config["secure_aggregation"]["graph"]["degree"] == 2


def test_a_run_with_dropouts_recovers_them_and_recomputes_the_guarantee(monkeypatch):
    import importlib

    run_module = importlib.import_module("privdist.runtime.run")
    sums = {}
    original = run_module.secure_sum

    def record_sum(*args, **kw):
        out = original(*args, **kw)
        sums[args[3]] = out[2]
        return out

    monkeypatch.setattr(run_module, "secure_sum", record_sum)
    K, T = 24, 5
    problem = make_logistic_problem(K)
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", dropout_tolerance=0.25,
                          colluding=1, recovery="sparse")
    res = run(algo, problem, make_network("complete", n=K), T, seed=4, dropout=Dropout(0.1, after_send=0.05))
    config = res.config["secure_aggregation"]
    rounds = config["rounds"][:-1]
    assert all(r["attempts"] == 1 for r in rounds) and any(r["recovered"]["pair_masks_of"] for r in rounds)
    # a party that went silent after sending stays in the sum (its seed rebuilt) unless it had a neighbour outside
    assert any(r["recovered"]["unanswered"] for r in rounds) and any(r["left_out"] for r in rounds)
    report = privacy_report(res.ledger, 1e-5)
    assert_secure_ledger(algo.for_rounds(T), problem, res, config["rounds"], range(K), K, report)
    assert any("random regular graph" in a for a in report["assumptions"])


def test_more_dropouts_than_the_graph_tolerates_end_the_run_by_name():
    K = 30
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust="secure_aggregation", recovery="sparse")
    with pytest.raises(SecureRoundError):
        run(algo, make_logistic_problem(K), make_network("complete", n=K), 4, seed=0, dropout=Dropout(0.3))


def test_named_errors():
    with pytest.raises(ValidationError, match="recovery='shamir' or 'sparse'"):
        make_algorithm("dpmm", trust="secure_aggregation", threshold=3)
    with pytest.raises(ValidationError, match="no masking graph"):
        choose_graph(10, 5, 5)
    algo = make_algorithm("dpmm", epsilon=1.0, trust="secure_aggregation", recovery="sparse", threshold=9)
    with pytest.raises(ValidationError):
        run(algo, make_logistic_problem(6), make_network("complete", n=6), 2, seed=0)
    assert center(np.array([2**32 - 1], dtype=np.uint64), 32)[0] == -1


def test_a_party_refuses_to_reveal_both_kinds_of_a_neighbours_secret():
    """The double-masking rule is enforced where the secrets are: after a neighbour's round seed, never a share of
    its self-mask seed in the same round (and the reverse)."""
    K = 12
    parties, keys, session, _ = _setup(K, choose_graph(K, 1, 2))
    v = int(keys["neighbours"][0][0])
    absent = np.ones(K, bool)
    absent[v] = False
    parties[0].reveal(3, np.where(absent, PENDING, OUT))  # party 0 reveals r_0v
    parties[0].reveal(3, np.where(absent, PENDING, OUT))  # the same again is fine
    with pytest.raises(SecureRoundError, match="never reveals both"):
        parties[0].reveal(3, np.ones(K, bool))  # now asked for its share of b_v


def test_a_silence_between_the_two_reveals_retries_the_round_with_an_exact_sum():
    """A neighbour of an absent party answers the first reveal, then goes silent: only it and the absent party knew
    their round seed, so :func:`recover` gives ``None`` and the retried attempt among those who answered is exact."""
    K, t = 20, 3
    params = choose_graph(K, 1, 4)
    parties, keys, session, _ = _setup(K, params, t=t)
    nbrs = keys["neighbours"]
    present = np.ones(K, bool)
    present[0] = False
    w = int(nbrs[0][0])
    x = np.random.default_rng(1).integers(-1000, 1000, size=(K, 4))
    y = np.vstack([p.masking(t).mask(t, 0, x[p.agents]) for p in parties])
    for p in parties:
        p.reveal(t, np.where(present, PENDING, OUT))
    revealed = np.vstack([p.reveal(t, present) for p in parties])
    answered = present.copy()
    answered[w] = False  # silent in the second reveal only
    assert recover(y[present].sum(axis=0, dtype=np.uint64), present, answered, revealed, keys, session, t, 32) is None
    retry = present & answered
    y1 = np.vstack([p.masking(t).mask(t, 1, x[p.agents]) for p in parties])
    z1 = np.vstack([p.masking(t).unmask(t, 1, retry, 4) for p in parties])
    np.testing.assert_array_equal(unmask_sum(y1, z1, retry, 32), x[retry].sum(axis=0))


def test_pair_secrets_are_agreed_once_and_round_seeds_are_fresh(monkeypatch):
    """A pair's X25519 agreement happens the first round the graph joins it; later rounds derive new round seeds
    from the kept secret (no agreement), different every round."""
    from privdist.privacy.secagg_graph import GraphParameters

    K = 8
    params = GraphParameters(K, K - 1, 3, 0, 0, float("-inf"), float("-inf"))  # the complete graph: every pair
    parties, keys, session, _ = _setup(K, params, t=3)
    party = parties[0]
    assert len(party._secrets) == K * (K - 1) // 2
    seeds3 = party._round["round_seeds"].copy()
    calls = []
    original = SparseParty._pair_secret
    monkeypatch.setattr(SparseParty, "_pair_secret", lambda self, c: calls.append(c) or original(self, c))
    table = party.prepare(4)[0]
    party.share(4, table)
    assert calls == [] and len(party._secrets) == K * (K - 1) // 2
    assert not (party._round["round_seeds"] == seeds3).all(axis=-1).any()  # no pair's seed repeats
