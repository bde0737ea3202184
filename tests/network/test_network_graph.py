"""Tests of privdist.network.graph.Network (spec §0.3, §2.2, §6.6)."""

from __future__ import annotations

import copy
import json
import pickle

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import (
    DisconnectedNetworkError,
    NetworkError,
    NetworkShapeError,
    NonFiniteDataError,
    ValidationError,
)
from privdist.network import Network, check_doubly_stochastic, dzoa5


def test_dzoa5_degrees_and_edges():
    net = dzoa5()
    assert net.n_agents == 5
    np.testing.assert_array_equal(net.degrees, [2, 2, 2, 3, 1])
    assert net.edges == [(0, 1), (0, 3), (1, 2), (2, 3), (3, 4)]
    np.testing.assert_array_equal(net.neighbors(3), [0, 2, 4])
    assert net.n_edges == 5


def test_metropolis_values_dzoa5():
    W = dzoa5().metropolis_weights().toarray()
    # a_kl = 1 / (1 + max(d_k, d_l)); d = (2, 2, 2, 3, 1)
    assert W[0, 1] == pytest.approx(1 / 3)
    assert W[0, 3] == pytest.approx(1 / 4)
    assert W[3, 4] == pytest.approx(1 / 4)
    assert W[4, 4] == pytest.approx(3 / 4)
    assert W[0, 0] == pytest.approx(1 - 1 / 3 - 1 / 4)
    assert W[0, 2] == 0.0


@st.composite
def connected_graphs(draw):
    """Random connected graphs: a random spanning tree plus random extra edges."""
    n = draw(st.integers(min_value=1, max_value=25))
    edges = [(draw(st.integers(0, k - 1)), k) for k in range(1, n)]
    if n > 1:
        extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
        edges += [(i, j) for i, j in extra if i != j]
    return n, edges


@settings(max_examples=60, deadline=None, derandomize=True)
@given(connected_graphs())
def test_metropolis_doubly_stochastic_symmetric(graph):
    n, edges = graph
    net = Network.from_edges(n, edges)
    W = net.metropolis_weights()
    assert isinstance(W, sp.csr_array)
    check_doubly_stochastic(W, tol=1e-12)
    dense = W.toarray()
    np.testing.assert_allclose(dense, dense.T, atol=0)
    assert np.all(np.diag(dense) > 0)
    # support of W = adjacency + diagonal
    off = dense.copy()
    np.fill_diagonal(off, 0)
    np.testing.assert_array_equal(off > 0, net.adjacency.toarray() > 0)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(connected_graphs())
def test_roundtrips_and_laplacian(graph):
    n, edges = graph
    net = Network.from_edges(n, edges)
    assert Network.from_dict(json.loads(json.dumps(net.to_dict()))) == net
    assert Network.from_networkx(net.to_networkx()) == net
    assert Network(net.adjacency.toarray()) == net
    L = net.laplacian()
    np.testing.assert_allclose(L.sum(axis=1), 0)
    np.testing.assert_allclose(L.diagonal(), net.degrees)
    assert all(i < j for i, j in net.edges)
    assert len(net.edges) == net.n_edges == int(net.degrees.sum()) // 2


def test_input_forms_agree():
    A = nx.to_numpy_array(nx.cycle_graph(6))
    dense = Network(A)
    assert Network(sp.csr_matrix(A)) == dense
    assert Network(sp.coo_array(A)) == dense
    assert Network(A.astype(bool).tolist()) == dense
    assert Network.from_edges(6, [(i, (i + 1) % 6) for i in range(6)] + [(1, 0)]) == dense
    assert dense != Network(nx.to_numpy_array(nx.path_graph(6)))


def test_single_node():
    net = Network([[0]])
    assert net.n_agents == 1 and net.edges == [] and net.degrees.tolist() == [0]
    np.testing.assert_array_equal(net.metropolis_weights().toarray(), [[1.0]])


def test_from_networkx_relabels_and_rejects_directed():
    G = nx.Graph([("a", "b"), ("b", "c")])
    net = Network.from_networkx(G)
    np.testing.assert_array_equal(net.degrees, [1, 2, 1])
    with pytest.raises(NetworkError, match="undirected"):
        Network.from_networkx(nx.DiGraph([(0, 1), (1, 0)]))


def test_disconnected_names_component_sizes():
    A = sp.block_diag([nx.to_scipy_sparse_array(nx.complete_graph(3)), nx.to_scipy_sparse_array(nx.path_graph(2))])
    A = sp.block_diag([A, sp.csr_array((1, 1))])
    with pytest.raises(DisconnectedNetworkError, match=r"3 components of sizes 3, 2, 1"):
        Network(A)


@pytest.mark.parametrize(
    ("adjacency", "error", "match"),
    [
        (np.ones((2, 3)), NetworkShapeError, "square"),
        (np.zeros(3), NetworkShapeError, "2-D"),
        (np.zeros((0, 0)), NetworkShapeError, "at least 1 node"),
        ([[0, 1], [0, 0]], NetworkError, "symmetric"),
        ([[1, 1], [1, 0]], NetworkError, "self loops"),
        ([[0, 0.5], [0.5, 0]], NetworkError, "0 or 1"),
        ([[0, 2], [2, 0]], NetworkError, "0 or 1"),
        ([[0, np.nan], [np.nan, 0]], NonFiniteDataError, "non-finite"),
    ],
)
def test_invalid_adjacency(adjacency, error, match):
    with pytest.raises(error, match=match):
        Network(adjacency)


def test_from_edges_errors():
    with pytest.raises(NetworkError, match="outside 0..2"):
        Network.from_edges(3, [(0, 1), (1, 3)])
    with pytest.raises(NetworkError, match="self loops"):
        Network.from_edges(2, [(0, 1), (1, 1)])
    with pytest.raises(ValidationError, match="n must be >= 1"):
        Network.from_edges(0, [])
    with pytest.raises(ValidationError, match="missing keys"):
        Network.from_dict({"edges": []})


def test_immutable_and_copies():
    net = dzoa5()
    with pytest.raises(AttributeError):
        net.n = 3
    with pytest.raises(ValueError):
        net.degrees[0] = 7
    A = net.adjacency
    A[0, 1] = 0.0
    assert net.adjacency[0, 1] == 1.0
    W = net.metropolis_weights()
    W.data[:] = 0
    assert net.metropolis_weights().sum() == pytest.approx(5.0)
    with pytest.raises(ValidationError, match="k must be < n_agents=5"):
        net.neighbors(5)


def test_pickle_copy_hash():
    net = dzoa5()
    assert pickle.loads(pickle.dumps(net)) == net
    assert copy.deepcopy(net) == net
    assert hash(Network.from_dict(net.to_dict())) == hash(net)
    assert "5 agents, 5 edges" in net.describe()
