"""Tests of privdist.network.generators (deterministic and random graphs, make_network)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from privdist.errors import DisconnectedNetworkError, UnknownNameError, ValidationError
from privdist.network import (
    NETWORK_KINDS,
    Network,
    complete,
    default_rgg_radius,
    dzoa5,
    erdos_renyi,
    make_network,
    random_regular,
    random_geometric,
    ring,
    star,
)


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_deterministic_shapes(n):
    r, c, s = ring(n), complete(n), star(n)
    assert r.n_agents == c.n_agents == s.n_agents == n
    assert r.n_edges == (n if n >= 3 else n - 1)
    assert c.n_edges == n * (n - 1) // 2
    assert s.n_edges == n - 1
    if n > 1:
        assert s.degrees[0] == n - 1 and set(s.degrees[1:].tolist()) == {1}
    if n >= 3:
        assert set(r.degrees.tolist()) == {2}


def test_erdos_renyi_deterministic_and_connected():
    a = erdos_renyi(40, 0.15, np.random.default_rng(7))
    b = erdos_renyi(40, 0.15, np.random.default_rng(7))
    c = erdos_renyi(40, 0.15, np.random.default_rng(8))
    assert a == b
    assert a != c
    assert a.n_agents == 40  # construction succeeded, so connected


def test_random_geometric_deterministic_and_connected():
    a = random_geometric(60, rng=np.random.default_rng(3))
    b = random_geometric(60, None, np.random.default_rng(3))
    assert a == b
    assert a != random_geometric(60, rng=np.random.default_rng(4))


def test_random_generators_consume_given_generator():
    rng = np.random.default_rng(11)
    first = erdos_renyi(30, 0.3, rng)
    second = erdos_renyi(30, 0.3, rng)
    assert first != second  # the Generator's state advances


def test_random_redraw_limit():
    with pytest.raises(DisconnectedNetworkError, match="disconnected in all 5 draws"):
        erdos_renyi(200, 0.001, np.random.default_rng(0), max_attempts=5)
    with pytest.raises(DisconnectedNetworkError, match="increase radius"):
        random_geometric(200, radius=0.01, rng=np.random.default_rng(0), max_attempts=2)


def test_random_parameter_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValidationError, match=r"p must be in \(0, 1\]"):
        erdos_renyi(10, 1.5, rng)
    with pytest.raises(ValidationError, match="p must be > 0"):
        erdos_renyi(10, 0.0, rng)
    with pytest.raises(ValidationError, match="needs rng"):
        random_geometric(10)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        erdos_renyi(10, 0.5, 42)


def test_default_radius():
    assert default_rgg_radius(1000) == pytest.approx(1.1 * math.sqrt(2 * math.log(1000) / 1000))
    assert default_rgg_radius(2) <= math.sqrt(2)


def test_large_rgg_sparse():  # its build time is the rgg_2000 benchmark (benchmarks/bench_rgg.py)
    net = random_geometric(2000, rng=np.random.default_rng(0))
    W = net.metropolis_weights()
    assert isinstance(net.adjacency, sp.csr_array) and isinstance(W, sp.csr_array)
    assert net.adjacency.nnz < 0.05 * 2000**2
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)


def test_make_network_registry():
    assert set(NETWORK_KINDS) == {"dzoa5", "ring", "complete", "star", "erdos_renyi", "random_geometric",
                                  "random_regular"}
    assert make_network("dzoa5") == dzoa5()
    assert make_network("ring", n=5) == ring(5)
    assert make_network("star", rng=np.random.default_rng(0), n=4) == star(4)  # rng ignored
    er = make_network("erdos_renyi", rng=np.random.default_rng(5), n=20, p=0.4)
    assert er == erdos_renyi(20, 0.4, np.random.default_rng(5))
    assert isinstance(make_network("random_geometric", rng=np.random.default_rng(1), n=30), Network)
    rr = make_network("random_regular", rng=np.random.default_rng(2), n=20, d=3)
    assert rr == random_regular(20, 3, np.random.default_rng(2))


def test_random_regular_is_regular_connected_and_checked():
    net = random_regular(100, 4, np.random.default_rng(0))
    assert np.all(net.degrees == 4) and net.n_edges == 200
    with pytest.raises(ValidationError, match="n\\*d even"):
        random_regular(9, 3, np.random.default_rng(0))
    with pytest.raises(ValidationError):
        random_regular(5, 5, np.random.default_rng(0))
    with pytest.raises(DisconnectedNetworkError):
        random_regular(10, 1, np.random.default_rng(0), max_attempts=3)


def test_make_network_errors():
    with pytest.raises(UnknownNameError, match="unknown network kind 'torus'; known: complete"):
        make_network("torus", n=4)
    with pytest.raises(ValidationError, match="is random and needs rng"):
        make_network("erdos_renyi", n=10, p=0.5)
    with pytest.raises(ValidationError, match=r"unexpected keyword argument 'm'.*accepted parameters: \['n'\]"):
        make_network("ring", n=5, m=5)
    with pytest.raises(ValidationError, match="missing a required argument"):
        make_network("complete")
    with pytest.raises(ValidationError, match="n must be an integer"):
        make_network("ring", n="5")
    with pytest.raises(ValidationError, match="n must be >= 1"):
        make_network("ring", n=0)
