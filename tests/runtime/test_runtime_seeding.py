"""The vectorised SeedSequence hashing (issue 14) gives exactly numpy's streams."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.runtime import AgentStreams, stream
from privdist.runtime._seeding import _ROWS_VECTORISED, _fast, _numpy, pcg64_generators, verified

entropy = st.lists(st.integers(0, 2**130), min_size=1, max_size=6)


def _same(a, b):
    return all(x.bit_generator.state == y.bit_generator.state for x, y in zip(a, b)) and len(a) == len(b)


def test_verified_on_this_numpy():
    assert verified()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**40), min_size=3, max_size=3), st.integers(0, 2**31),
       st.integers(_ROWS_VECTORISED, 3 * _ROWS_VECTORISED))
def test_vectorised_equals_numpy(prefix, suffix, n):
    rows = [[*prefix, a, suffix] for a in range(n)]
    got, want = _fast(rows), _numpy(rows)
    assert _same(got, want)
    assert got[-1].standard_normal(3).tolist() == want[-1].standard_normal(3).tolist()


@settings(max_examples=30, deadline=None)
@given(st.lists(entropy, min_size=1, max_size=2 * _ROWS_VECTORISED))
def test_any_entropies_equal_numpy(rows):  # unequal word lengths fall back to numpy's own path
    assert _same(pcg64_generators(rows), _numpy(rows))


def test_prefetched_streams_are_the_streams():
    blocks = [AgentStreams(7, trial, np.arange(5), 3) for trial in range(10)]
    AgentStreams.prefetch(blocks)
    for trial, block in enumerate(blocks):
        want = [stream(7, trial, 1, a, 3) for a in range(5)]
        assert _same(block.generators(), want)
