"""Generators of static undirected networks, and the ``make_network`` registry (spec §2.2, §4.10, §6.6).

Random generators take an explicit ``numpy.random.Generator`` (STYLE #3): each draw seeds networkx with an integer
taken from it, so the network is a pure function of the Generator's state. They redraw, a bounded number of times,
until the graph is connected.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from .._checks import check_int, check_positive
from ..errors import DisconnectedNetworkError, UnknownNameError, ValidationError
from .graph import Network

__all__ = [
    "dzoa5",
    "ring",
    "complete",
    "star",
    "erdos_renyi",
    "random_geometric",
    "random_regular",
    "default_rgg_radius",
    "make_network",
    "NETWORK_KINDS",
]

_DZOA5_EDGES_1_INDEXED = ((1, 2), (1, 4), (2, 3), (3, 4), (4, 5))


def dzoa5() -> Network:
    """The 5-agent graph of the D-ZOA experiments (spec §2.2).

    Edges (1-indexed as in S1) ``(1,2), (1,4), (2,3), (3,4), (4,5)``, stored 0-indexed; degrees ``(2, 2, 2, 3, 1)``.

    References:
        spec §2.2; Gratton et al., "Privacy-Preserved Distributed Learning with Zeroth-Order Optimization", §V.
    """
    return Network.from_edges(5, [(i - 1, j - 1) for i, j in _DZOA5_EDGES_1_INDEXED])


def ring(n: int) -> Network:
    """Cycle ``0 - 1 - ... - (n-1) - 0`` (for ``n <= 2``: a single node or a single edge)."""
    n = check_int(n, "n", minimum=1)
    graph = nx.cycle_graph(n) if n >= 3 else nx.path_graph(n)
    return Network.from_networkx(graph)


def complete(n: int) -> Network:
    """Complete graph on ``n`` nodes, its sparse adjacency built directly (row ``i`` holds every ``j != i``): a
    thousand nodes in about 0.1 s where going through networkx took 2 s, and 5,000 nodes in seconds, not minutes
    (issue 26)."""
    n = check_int(n, "n", minimum=1)
    cols = np.tile(np.arange(n - 1, dtype=np.int64), n)
    cols += cols >= np.repeat(np.arange(n, dtype=np.int64), n - 1)  # skip the diagonal
    indptr = np.arange(0, n * (n - 1) + 1, n - 1, dtype=np.int64) if n > 1 else np.zeros(2, dtype=np.int64)
    return Network(sp.csr_array((np.ones(n * (n - 1)), cols, indptr), shape=(n, n)))


def star(n: int) -> Network:
    """Star on ``n`` nodes; node 0 is the hub (the server of centralised baselines)."""
    n = check_int(n, "n", minimum=1)
    return Network.from_networkx(nx.star_graph(n - 1))


def _check_rng(rng: Any, where: str) -> np.random.Generator:
    if rng is None:
        raise ValidationError(f"{where} is random and needs rng (a numpy.random.Generator), got None")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _draw_connected(
    build: Callable[[int], nx.Graph], rng: np.random.Generator, max_attempts: int, what: str, hint: str
) -> Network:
    """Call ``build(seed)`` with seeds drawn from ``rng`` until the graph is connected."""
    max_attempts = check_int(max_attempts, "max_attempts", minimum=1)
    for _ in range(max_attempts):
        graph = build(int(rng.integers(0, 2**32)))
        if nx.is_connected(graph):
            return Network.from_networkx(graph)
    sizes = sorted((len(c) for c in nx.connected_components(graph)), reverse=True)
    raise DisconnectedNetworkError(
        f"{what} was disconnected in all {max_attempts} draws (last draw: {len(sizes)} components, largest "
        f"{sizes[0]} nodes); {hint}"
    )


def erdos_renyi(n: int, p: float, rng: np.random.Generator, *, max_attempts: int = 100) -> Network:
    """Connected Erdos-Renyi graph G(n, p), redrawn until connected.

    Args:
        n: number of nodes (>= 1).
        p: edge probability, in (0, 1].
        rng: source of randomness; the result is a pure function of its state.
        max_attempts: number of draws before giving up.

    Returns:
        A connected :class:`Network`.

    Raises:
        ValidationError: ``p`` outside (0, 1] or ``rng`` missing.
        DisconnectedNetworkError: no draw was connected (``p`` is below the threshold ``log(n)/n``).
    """
    n = check_int(n, "n", minimum=1)
    p = check_positive(p, "p")
    if p > 1:
        raise ValidationError(f"p must be in (0, 1], got {p}")
    rng = _check_rng(rng, "erdos_renyi")
    threshold = math.log(n) / n if n > 1 else 0.0
    return _draw_connected(
        lambda seed: nx.fast_gnp_random_graph(n, p, seed=seed),
        rng,
        max_attempts,
        f"erdos_renyi(n={n}, p={p})",
        f"increase p above the connectivity threshold log(n)/n = {threshold:.4g}",
    )


def default_rgg_radius(n: int) -> float:
    """Default radius of :func:`random_geometric`: ``1.1 * sqrt(2 log n / n)``, capped at ``sqrt(2)``."""
    n = check_int(n, "n", minimum=1)
    if n == 1:
        return math.sqrt(2.0)
    return min(1.1 * math.sqrt(2.0 * math.log(n) / n), math.sqrt(2.0))


def random_geometric(
    n: int, radius: float | None = None, rng: np.random.Generator | None = None, *, max_attempts: int = 100
) -> Network:
    """Connected random geometric graph: ``n`` uniform points in the unit square, edges between points closer than
    ``radius``; redrawn until connected.

    Args:
        n: number of nodes (>= 1).
        radius: connection radius; default ``1.1 * sqrt(2 log n / n)``, a little above the usual connectivity
            threshold ``sqrt(2 log n / n)`` (Boyd et al., gossip algorithms).
        rng: source of randomness (required); the result is a pure function of its state.
        max_attempts: number of draws before giving up.

    Returns:
        A connected :class:`Network` (sparse; ``n`` in the thousands is fine).

    Raises:
        ValidationError: ``radius <= 0`` or ``rng`` missing.
        DisconnectedNetworkError: no draw was connected.
    """
    n = check_int(n, "n", minimum=1)
    radius = default_rgg_radius(n) if radius is None else check_positive(radius, "radius")
    rng = _check_rng(rng, "random_geometric")
    return _draw_connected(
        lambda seed: nx.random_geometric_graph(n, radius, seed=seed),
        rng,
        max_attempts,
        f"random_geometric(n={n}, radius={radius:.4g})",
        f"increase radius (default for this n: {default_rgg_radius(n):.4g})",
    )


def random_regular(n: int, d: int, rng: np.random.Generator, *, max_attempts: int = 100) -> Network:
    """Connected random ``d``-regular graph on ``n`` nodes (uniform, networkx's pairing model), redrawn until
    connected (the setting of the pairwise-DP analyses of Cyffers et al. 2022, issue 29).

    Args:
        n: number of nodes (>= 2).
        d: degree, ``1 <= d < n`` with ``n d`` even.
        rng: source of randomness; the result is a pure function of its state.
        max_attempts: number of draws before giving up.

    Raises:
        ValidationError: ``d`` out of range, ``n d`` odd, or ``rng`` missing.
        DisconnectedNetworkError: no draw was connected (``d = 1``, or ``d = 2`` on many nodes).
    """
    n = check_int(n, "n", minimum=2)
    d = check_int(d, "d", minimum=1)
    if d >= n or (n * d) % 2:
        raise ValidationError(f"a {d}-regular graph on {n} nodes needs d < n and n*d even")
    rng = _check_rng(rng, "random_regular")
    return _draw_connected(lambda seed: nx.random_regular_graph(d, n, seed=seed), rng, max_attempts,
                           f"random_regular(n={n}, d={d})", "increase d (3 or more is connected almost surely)")


_REGISTRY: dict[str, tuple[Callable[..., Network], bool]] = {
    "dzoa5": (dzoa5, False),
    "ring": (ring, False),
    "complete": (complete, False),
    "star": (star, False),
    "erdos_renyi": (erdos_renyi, True),
    "random_geometric": (random_geometric, True),
    "random_regular": (random_regular, True),
}

NETWORK_KINDS: tuple[str, ...] = tuple(_REGISTRY)
"""Names accepted by :func:`make_network`."""


def make_network(kind: str, rng: np.random.Generator | None = None, **params: Any) -> Network:
    """Build a network by name (used by experiment specs).

    Args:
        kind: one of :data:`NETWORK_KINDS`.
        rng: required for the random kinds (``erdos_renyi``, ``random_geometric``); ignored by the others.
        **params: the generator's parameters, e.g. ``n=10`` or ``n=50, p=0.2``.

    Returns:
        The network.

    Raises:
        UnknownNameError: ``kind`` is not registered.
        ValidationError: a random kind got no ``rng``, or a parameter is missing, unknown or of the wrong type
            (type errors are reported as ValidationError here, since parameters come from spec files).
    """
    if kind not in _REGISTRY:
        raise UnknownNameError("network kind", str(kind), NETWORK_KINDS)
    func, is_random = _REGISTRY[kind]
    if "rng" in params:
        raise ValidationError(f"network kind {kind!r}: pass rng as the rng argument, not among the parameters")
    if is_random:
        _check_rng(rng, f"network kind {kind!r}")
        params = {**params, "rng": rng}
    signature = inspect.signature(func)
    try:
        signature.bind(**params)
    except TypeError as exc:
        accepted = [name for name in signature.parameters if name != "rng"]
        raise ValidationError(f"network kind {kind!r}: {exc}; accepted parameters: {accepted}") from None
    try:
        return func(**params)
    except TypeError as exc:
        raise ValidationError(f"network kind {kind!r}: {exc}") from None
