"""Issue 27: the secure-aggregation protocol. Masks cancel exactly (any parties present, any block split, any
modulus), each masked message is indistinguishable from uniform mod q, dropouts before and after sending are survived
with the same sum, and secrets stay where their parties run."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privdist.errors import ValidationError
from privdist.runtime.secure.secagg import SecAggParties, center, encode, party_secrets, session_id, unmask_sum


def _parties(K, bits=32, seed=0, blocks=1, secure=False):
    secrets_ = party_secrets(range(K), seed, 0, secure)
    session = session_id(seed, 0, secure)
    groups = np.array_split(np.arange(K), blocks)
    out = [SecAggParties(g, K, bits, [secrets_[a] for a in g], session) for g in groups]
    table = np.vstack([p.public_keys() for p in out])
    for p in out:
        p.agree(table)
    return out


def _mask(parties, t, attempt, x):
    return np.vstack([p.mask(t, attempt, x[p.agents]) for p in parties])


def _answers(parties, t, attempt, present, dim):
    return np.vstack([p.unmask(t, attempt, present, dim) for p in parties])


@settings(max_examples=25, deadline=None)
@given(K=st.integers(1, 9), dim=st.integers(1, 12), bits=st.integers(8, 53), blocks=st.integers(1, 3),
       seed=st.integers(0, 2**31), absent=st.sets(st.integers(0, 8), max_size=4))
def test_masks_cancel_exactly_over_the_present_parties(K, dim, bits, blocks, seed, absent):
    rng = np.random.default_rng(seed)
    half = 1 << (bits - 1)
    x = rng.integers(-half // (2 * K), half // (2 * K), size=(K, dim))
    parties = _parties(K, bits, seed % 1000, blocks=min(blocks, K))
    present = np.ones(K, dtype=bool)
    present[[a for a in absent if a < K]] = False
    y = _mask(parties, 3, 0, x)
    assert y.dtype == np.uint64 and int(y.max(initial=0)) < 2**bits
    total = unmask_sum(y, _answers(parties, 3, 0, present, dim), present, bits)
    np.testing.assert_array_equal(total, x[present].sum(axis=0))


def test_a_block_split_masks_exactly_as_one_block():
    x = np.random.default_rng(1).integers(-100, 100, size=(7, 5))
    one, three = _parties(7), _parties(7, blocks=3)
    np.testing.assert_array_equal(_mask(one, 2, 0, x), _mask(three, 2, 0, x))
    present = np.array([1, 0, 1, 1, 0, 1, 1], dtype=bool)
    np.testing.assert_array_equal(_answers(one, 2, 0, present, 5), _answers(three, 2, 0, present, 5))


def test_each_masked_message_is_indistinguishable_from_uniform():
    """One party's masked vector of a constant input over 400 rounds x 64 coordinates: its residues fall uniformly
    in 32 bins of [0, q) (chi-square), and its top bit does not follow the input's sign."""
    K, bits, dim = 5, 16, 64
    parties = _parties(K, bits)
    x = np.zeros((K, dim), dtype=np.int64)
    x[0] = 1000
    masked = np.stack([_mask(parties, t, 0, x)[0] for t in range(1, 401)]).ravel()
    counts = np.bincount((masked >> np.uint64(bits - 5)).astype(int), minlength=32)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert len(np.unique(masked)) > 0.9 * min(masked.size, 2**bits) * (1 - np.exp(-masked.size / 2**bits))


def test_a_party_failing_after_sending_is_excluded_and_keeps_its_input_masked():
    """Attempt 0: party 2 sent but did not answer; attempt 1 among the others (same inputs, fresh masks) gives their
    sum. Attempt 0's messages, with every answer the aggregator got, stay padded by party 2's never-revealed mask."""
    K, dim, bits = 6, 4, 32
    parties = _parties(K, bits)
    x = np.random.default_rng(2).integers(-50, 50, size=(K, dim))
    y0 = _mask(parties, 5, 0, x)
    sent = np.ones(K, dtype=bool)
    z0 = _answers(parties, 5, 0, sent, dim)
    z0[2] = 0  # party 2 failed to answer
    present = sent.copy()
    present[2] = False
    y1 = _mask(parties, 5, 1, x)
    total = unmask_sum(y1, _answers(parties, 5, 1, present, dim), present, bits)
    np.testing.assert_array_equal(total, x[present].sum(axis=0))
    # without party 2's answer, attempt 0 unmasks to nothing useful: party 2's own mask still pads the sum
    assert not np.array_equal(center(y0.sum(axis=0) - z0.sum(axis=0), bits), x.sum(axis=0))
    assert not np.array_equal(y1, y0)  # a retried attempt never reuses masks


def test_secrets_and_sessions():
    assert party_secrets([0, 1], 3, 0, False) == party_secrets([0, 1], 3, 0, False)
    assert party_secrets([0], 3, 0, True) != party_secrets([0], 3, 0, True)
    assert session_id(1, 0, False) == session_id(1, 0, False) != session_id(2, 0, False)
    with pytest.raises(TypeError, match="never leave"):
        pickle.dumps(_parties(2)[0])


def test_encode_and_center_round_trip():
    v = np.array([-5, 0, 7, -(2**30)], dtype=np.int64)
    np.testing.assert_array_equal(center(encode(v, 32), 32), v)


def test_named_errors():
    with pytest.raises(ValidationError, match="bits"):
        SecAggParties([0], 1, 60, party_secrets([0], 0, 0, False), b"s")
    p = SecAggParties([0, 1], 2, 32, party_secrets([0, 1], 0, 0, False), b"s")
    with pytest.raises(ValidationError, match="agree"):
        p.mask(1, 0, np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValidationError, match="table"):
        p.agree(np.zeros((3, 32), dtype=np.uint8))
