"""Static undirected communication networks (spec §0.3, §2.2, §6.6).

A :class:`Network` is plain, immutable data (STYLE #12): a symmetric 0/1 adjacency with no self loops, connected,
validated once at construction. Everything is kept sparse (``scipy.sparse.csr_array``) so that networks of thousands
of agents cost O(number of edges), never O(n^2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._checks import check_int
from ..errors import (
    DisconnectedNetworkError,
    NetworkError,
    NetworkShapeError,
    NonFiniteDataError,
    ValidationError,
)

__all__ = ["Network"]


def _to_csr(adjacency: Any) -> sp.csr_array:
    """Convert a dense array-like or any scipy.sparse matrix to a canonical float64 ``csr_array``."""
    if sp.issparse(adjacency):
        if adjacency.ndim != 2:
            raise NetworkShapeError(f"adjacency must be 2-D, got shape {adjacency.shape}")
        mat = sp.csr_array(adjacency, dtype=np.float64)
    else:
        try:
            arr = np.asarray(adjacency, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise NetworkShapeError(f"adjacency must be a 2-D numeric array: {exc}") from None
        if arr.ndim != 2:
            raise NetworkShapeError(f"adjacency must be 2-D, got shape {arr.shape}")
        mat = sp.csr_array(arr)
    mat.sum_duplicates()
    mat.sort_indices()
    return mat


def _diag(values: np.ndarray) -> sp.csr_array:
    """Sparse diagonal matrix (``scipy.sparse.diags_array`` needs scipy >= 1.11; we support 1.10)."""
    idx = np.arange(values.size)
    return sp.csr_array((np.asarray(values, dtype=np.float64), (idx, idx)), shape=(values.size, values.size))


def _validate_adjacency(mat: sp.csr_array) -> None:
    """Raise a named error unless ``mat`` is a square, symmetric, loop-free, connected 0/1 adjacency."""
    rows, cols = mat.shape
    if rows != cols:
        raise NetworkShapeError(f"adjacency must be square, got shape {mat.shape}")
    if rows < 1:
        raise NetworkShapeError("a network needs at least 1 node, got an empty adjacency")
    if not np.all(np.isfinite(mat.data)):
        coo = mat.tocoo()
        k = int(np.flatnonzero(~np.isfinite(coo.data))[0])
        raise NonFiniteDataError(
            f"adjacency contains a non-finite value {coo.data[k]} at ({coo.row[k]}, {coo.col[k]})"
        )
    mat.eliminate_zeros()
    if mat.nnz:
        bad = np.flatnonzero(mat.data != 1.0)
        if bad.size:
            coo = mat.tocoo()
            i, j = int(coo.row[bad[0]]), int(coo.col[bad[0]])
            raise NetworkError(f"adjacency entries must be 0 or 1, got {coo.data[bad[0]]} at ({i}, {j})")
        loops = np.flatnonzero(mat.diagonal())
        if loops.size:
            raise NetworkError(
                f"adjacency must have no self loops, found {loops.size} (first at node {int(loops[0])})"
            )
        diff = (mat - mat.T).tocoo()
        diff.eliminate_zeros()
        if diff.nnz:
            i, j = int(diff.row[0]), int(diff.col[0])
            raise NetworkError(
                f"adjacency must be symmetric: entry ({i}, {j}) is {mat[i, j]} but ({j}, {i}) is {mat[j, i]}"
            )
    n_comp, labels = connected_components(mat, directed=False)
    if n_comp > 1:
        sizes = sorted(np.bincount(labels).tolist(), reverse=True)
        shown = ", ".join(str(s) for s in sizes[:20]) + (", ..." if len(sizes) > 20 else "")
        raise DisconnectedNetworkError(
            f"network is disconnected: {n_comp} components of sizes {shown} ({rows} nodes in all)"
        )


class Network:
    """An undirected, static, connected communication network of ``n_agents`` agents.

    Agents are numbered ``0 .. n_agents - 1``; the neighbourhood :meth:`neighbors` excludes the agent itself and
    ``degrees[k]`` is its size (spec §0.3, AMB-D1). The object is immutable; accessors return fresh copies or
    read-only arrays.

    Args:
        adjacency: symmetric 0/1 adjacency matrix, dense (array-like) or any ``scipy.sparse`` matrix/array.

    Raises:
        NetworkShapeError: the adjacency is not 2-D and square, or has no node.
        NonFiniteDataError: it contains NaN or infinity.
        NetworkError: an entry is not 0/1, there is a self loop, or it is not symmetric.
        DisconnectedNetworkError: the graph is not connected (the message gives the components' sizes).

    References:
        spec §0.3 (notation), §2.2 (5-agent graph of S1), §6.6 (Metropolis weights), AMB-D1.
    """

    __slots__ = ("_adj", "_degrees", "_cache")

    def __init__(self, adjacency: Any) -> None:
        mat = _to_csr(adjacency)
        _validate_adjacency(mat)
        for arr in (mat.data, mat.indices, mat.indptr):
            arr.flags.writeable = False
        degrees = np.diff(mat.indptr).astype(np.int64)
        degrees.flags.writeable = False
        object.__setattr__(self, "_adj", mat)
        object.__setattr__(self, "_degrees", degrees)
        object.__setattr__(self, "_cache", {})

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_edges(cls, n: int, edges: Iterable[tuple[int, int]]) -> Network:
        """Build a network on ``n`` nodes from undirected edges ``(i, j)`` (0-indexed; duplicates are merged).

        Args:
            n: number of nodes (>= 1).
            edges: pairs of node indices in ``0 .. n-1``; ``(i, j)`` and ``(j, i)`` are the same edge.

        Returns:
            The validated network.

        Raises:
            NetworkError: an edge is malformed, names a node outside ``0 .. n-1`` or is a self loop.
            DisconnectedNetworkError: the edges do not connect all ``n`` nodes.
        """
        n = check_int(n, "n", minimum=1)
        try:
            pairs = np.asarray(list(edges), dtype=np.int64).reshape(-1, 2)
        except (TypeError, ValueError) as exc:
            raise NetworkError(f"edges must be pairs of integer node indices: {exc}") from None
        if pairs.size:
            out = (pairs < 0) | (pairs >= n)
            if out.any():
                k = int(np.argwhere(out.any(axis=1))[0, 0])
                raise NetworkError(f"edge {tuple(pairs[k].tolist())} names a node outside 0..{n - 1}")
        rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
        cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
        mat = sp.coo_array((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
        mat.sum_duplicates()
        mat.data[:] = 1.0  # merge duplicate edges; a self loop stays visible to the validation
        return cls(mat)

    @classmethod
    def from_networkx(cls, graph: Any) -> Network:
        """Build a network from an undirected ``networkx`` graph (edge weights are ignored).

        Nodes labelled exactly ``0 .. n-1`` keep their labels; other labels are numbered in ``graph.nodes`` order.

        Raises:
            NetworkError: the graph is directed (or any adjacency check of :class:`Network` fails).
        """
        import networkx as nx

        if graph.is_directed():
            raise NetworkError("a Network must be undirected, got a directed networkx graph")
        if graph.is_multigraph():
            graph = nx.Graph(graph)
        nodes = list(graph.nodes)
        if set(nodes) == set(range(len(nodes))):
            nodes = list(range(len(nodes)))
        if not nodes:
            raise NetworkShapeError("a network needs at least 1 node, got an empty networkx graph")
        mat = nx.to_scipy_sparse_array(graph, nodelist=nodes, weight=None, dtype=np.float64, format="csr")
        return cls(mat)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Network:
        """Inverse of :meth:`to_dict`: ``{"n_agents": n, "edges": [[i, j], ...]}``.

        Raises:
            ValidationError: keys are missing or unknown.
        """
        if not isinstance(data, Mapping):
            raise ValidationError(f"network dict must be a mapping, got {type(data).__name__}")
        unknown = set(data) - {"n_agents", "edges", "kind"}
        missing = {"n_agents", "edges"} - set(data)
        if unknown or missing:
            raise ValidationError(
                f"network dict: missing keys {sorted(missing)}, unknown keys {sorted(unknown)}"
            )
        return cls.from_edges(data["n_agents"], [tuple(e) for e in data["edges"]])

    # ------------------------------------------------------------------ immutability and protocol
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Network is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Network is immutable")

    def __reduce__(self):
        return (self.__class__, (self._adj.copy(),))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Network):
            return NotImplemented
        if self.n_agents != other.n_agents or self._adj.nnz != other._adj.nnz:
            return False
        return bool(
            np.array_equal(self._adj.indptr, other._adj.indptr)
            and np.array_equal(self._adj.indices, other._adj.indices)
        )

    def __hash__(self) -> int:
        return hash((self.n_agents, self._adj.indptr.tobytes(), self._adj.indices.tobytes()))

    def __repr__(self) -> str:
        return f"Network(n_agents={self.n_agents}, n_edges={self.n_edges})"

    # ------------------------------------------------------------------ accessors
    @property
    def n_agents(self) -> int:
        """Number of agents (nodes)."""
        return int(self._adj.shape[0])

    @property
    def n_edges(self) -> int:
        """Number of undirected edges."""
        return int(self._adj.nnz // 2)

    @property
    def adjacency(self) -> sp.csr_array:
        """The 0/1 adjacency as a float64 ``csr_array`` (a fresh copy; cache it on hot paths)."""
        return self._adj.copy()

    @property
    def degrees(self) -> np.ndarray:
        """Degrees ``d_k = |N_k|`` (neighbours excluding ``k``, AMB-D1), a read-only int64 array."""
        return self._degrees

    def neighbors(self, k: int) -> np.ndarray:
        """Sorted indices of the neighbours of agent ``k`` (excluding ``k``), a new int64 array.

        Raises:
            ValidationError: ``k`` is not in ``0 .. n_agents - 1``.
        """
        k = check_int(k, "k", minimum=0)
        if k >= self.n_agents:
            raise ValidationError(f"agent index k must be < n_agents={self.n_agents}, got {k}")
        return self._adj.indices[self._adj.indptr[k] : self._adj.indptr[k + 1]].astype(np.int64)

    @property
    def edges(self) -> list[tuple[int, int]]:
        """Undirected edges as a sorted list of ``(i, j)`` with ``i < j``."""
        upper = sp.triu(self._adj, k=1, format="coo")
        order = np.lexsort((upper.col, upper.row))
        return list(zip(upper.row[order].tolist(), upper.col[order].tolist()))

    def metropolis_weights(self) -> sp.csr_array:
        """Metropolis-Hastings mixing matrix (spec §6.6).

        ``a_kl = 1 / (1 + max(d_k, d_l))`` for neighbours ``l`` of ``k``, ``a_kk = 1 - sum_l a_kl``, 0 otherwise.
        The result is symmetric and doubly stochastic with a positive diagonal.

        Returns:
            A new float64 ``csr_array`` of shape ``(n_agents, n_agents)``.

        References:
            spec §6.6 (DPSGD baseline weights); Xiao, Boyd & Lall (2005), "A scheme for robust distributed
            sensor fusion based on average consensus".
        """
        if "metropolis" not in self._cache:
            coo = self._adj.tocoo()
            d = self._degrees
            off = 1.0 / (1.0 + np.maximum(d[coo.row], d[coo.col]))
            off_mat = sp.csr_array((off, (coo.row, coo.col)), shape=self._adj.shape)
            diag = 1.0 - np.asarray(off_mat.sum(axis=1)).ravel()
            weights = sp.csr_array(off_mat + _diag(diag))
            weights.sum_duplicates()
            weights.sort_indices()
            self._cache["metropolis"] = weights
        return self._cache["metropolis"].copy()

    def laplacian(self) -> sp.csr_array:
        """Graph Laplacian ``L = D - A`` as a new float64 ``csr_array``."""
        lap = sp.csr_array(_diag(self._degrees.astype(np.float64)) - self._adj)
        lap.sort_indices()
        return lap

    def to_networkx(self) -> Any:
        """The network as a ``networkx.Graph`` on nodes ``0 .. n_agents - 1``."""
        import networkx as nx

        graph = nx.Graph()
        graph.add_nodes_from(range(self.n_agents))
        graph.add_edges_from(self.edges)
        return graph

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description ``{"n_agents": n, "edges": [[i, j], ...]}`` (``i < j``)."""
        return {"n_agents": self.n_agents, "edges": [[i, j] for i, j in self.edges]}

    def describe(self) -> str:
        """One line: number of agents and edges, and the degree range."""
        d = self._degrees
        if self.n_agents == 1:
            return "1 agent, 0 edges"
        return (
            f"{self.n_agents} agents, {self.n_edges} edges, degree min {int(d.min())} / "
            f"mean {float(d.mean()):.2f} / max {int(d.max())}"
        )
