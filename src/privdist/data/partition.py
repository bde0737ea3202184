"""Split a data set among agents: by rows (horizontal, one sample set per agent) or by columns (vertical, one
feature block per party)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .._checks import check_int
from ..errors import ShapeMismatchError, ValidationError
from .preprocess import _as_matrix, _check_finite_matrix, check_data

__all__ = ["horizontal_partition", "vertical_partition"]


def horizontal_partition(
    X,
    y,
    n_agents: int | None = None,
    sizes: Sequence[int] | None = None,
    rng: np.random.Generator | None = None,
) -> list[tuple]:
    """Split the rows of ``(X, y)`` among agents.

    Give exactly one of ``n_agents`` (even split: block sizes differ by at most one, the first
    ``n % n_agents`` agents get the extra row) or ``sizes`` (one positive size per agent, summing to ``n``).
    With ``rng=None`` agent ``k`` gets a contiguous block of rows in the original order; with a generator the
    rows are shuffled first by ``rng.permutation(n)`` (spec §4.10: "random shuffle, seed per trial").

    Args:
        X: Features, dense array or ``scipy.sparse`` matrix with ``n`` rows.
        y: Labels, length ``n``.
        n_agents: Number of agents for an even split.
        sizes: Number of rows of each agent.
        rng: Generator used to shuffle the rows, or ``None`` to keep their order.

    Returns:
        A list with one ``(X_k, y_k)`` pair per agent (``X_k`` is CSR when ``X`` is sparse). Every row appears
        in exactly one block.

    Raises:
        ValidationError: If neither or both of ``n_agents`` and ``sizes`` are given, or an agent would get no
            samples (``n_agents > n`` or a size < 1).
        ShapeMismatchError: If ``sizes`` does not sum to ``n`` or ``X`` and ``y`` disagree.
        TypeError: If ``rng`` is neither ``None`` nor a ``numpy.random.Generator``.
    """
    X, y = check_data(X, y, name="partitioned data")
    n = X.shape[0]
    counts = _block_sizes(n, n_agents, sizes, unit="samples", who="agent")
    order = _order(n, rng)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    parts = []
    for k in range(len(counts)):
        idx = order[bounds[k] : bounds[k + 1]]
        parts.append((X[idx], y[idx]))
    return parts


def vertical_partition(X, blocks) -> list:
    """Split the columns of ``X`` among parties (the feature blocks of ADMM sharing, spec §3.9).

    Args:
        X: Features, dense array or ``scipy.sparse`` matrix with ``d`` columns.
        blocks: One of: an int ``M`` (even split into ``M`` contiguous blocks, sizes differing by at most one,
            earlier parties larger); a sequence of ints (contiguous block sizes, summing to ``d``); or a sequence
            of column-index arrays (disjoint and together covering ``0..d-1``; each block keeps its given order).

    Returns:
        One matrix per party, ``X[:, block]`` (CSR when ``X`` is sparse).

    Raises:
        ValidationError: If a party would get no columns (the message names the party), an index is out of
            range or repeated, or some column is in no block.
        ShapeMismatchError: If sizes do not sum to ``d`` or ``X`` is not 2-D.
        TypeError: If ``blocks`` has the wrong type.
    """
    X = _as_matrix(X, "X")
    _check_finite_matrix(X, "X")
    d = X.shape[1]
    if isinstance(blocks, numbers.Integral) and not isinstance(blocks, bool):
        counts = _block_sizes(d, int(blocks), None, unit="columns", who="party")
        return _contiguous_columns(X, counts)
    if not isinstance(blocks, Sequence) or isinstance(blocks, str):
        raise TypeError(f"blocks must be an int or a sequence of sizes or index arrays, got {type(blocks).__name__}")
    if len(blocks) == 0:
        raise ValidationError("blocks must name at least one party, got an empty sequence")
    if all(isinstance(b, numbers.Integral) and not isinstance(b, bool) for b in blocks):
        counts = _block_sizes(d, None, blocks, unit="columns", who="party")
        return _contiguous_columns(X, counts)

    index_blocks = []
    seen = np.full(d, -1)
    for m, block in enumerate(blocks):
        idx = np.asarray(block)
        if idx.size == 0:
            raise ValidationError(f"party {m} would get no columns (empty block {m})")
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"block {m} must be a 1-D array of column indices, got {idx.dtype} of shape {idx.shape}")
        out = idx[(idx < 0) | (idx >= d)]
        if out.size:
            raise ValidationError(f"block {m} has column index {int(out[0])} outside 0..{d - 1}")
        uniq, counts = np.unique(idx, return_counts=True)
        if (counts > 1).any():
            raise ValidationError(f"block {m} repeats column {int(uniq[counts > 1][0])}")
        clash = idx[seen[idx] >= 0]
        if clash.size:
            col = int(clash[0])
            raise ValidationError(
                f"column {col} is in block {int(seen[col])} and in block {m}; blocks must be disjoint"
            )
        seen[idx] = m
        index_blocks.append(idx)
    missing = np.flatnonzero(seen < 0)
    if missing.size:
        raise ValidationError(
            f"{missing.size} column(s) are in no block (first: {int(missing[0])}); blocks must cover all {d} columns"
        )
    return [X[:, idx] for idx in index_blocks]


def _block_sizes(n: int, n_blocks: int | None, sizes, unit: str, who: str) -> np.ndarray:
    """Sizes of contiguous blocks: an even split into ``n_blocks`` or the given ``sizes`` (validated)."""
    if (n_blocks is None) == (sizes is None):
        raise ValidationError(f"give exactly one of n_agents and sizes, got n_agents={n_blocks!r}, sizes={sizes!r}")
    if n_blocks is not None:
        n_blocks = check_int(n_blocks, "blocks" if who == "party" else "n_agents")
        if n_blocks > n:
            raise ValidationError(f"{who} {n} would get no {unit}: {n_blocks} {who}s but only {n} {unit}")
        return np.array([len(b) for b in np.array_split(np.arange(n), n_blocks)])
    counts = []
    for k, s in enumerate(sizes):
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"sizes[{k}] must be an integer, got {type(s).__name__}")
        if s < 1:
            raise ValidationError(f"{who} {k} would get no {unit} (sizes[{k}] = {int(s)})")
        counts.append(int(s))
    if not counts:
        raise ValidationError("sizes must list at least one block, got an empty sequence")
    if sum(counts) != n:
        raise ShapeMismatchError(f"sizes sum to {sum(counts)} but there are {n} {unit}")
    return np.array(counts)


def _order(n: int, rng: np.random.Generator | None) -> np.ndarray:
    if rng is None:
        return np.arange(n)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")
    return rng.permutation(n)


def _contiguous_columns(X, counts: np.ndarray) -> list:
    bounds = np.concatenate([[0], np.cumsum(counts)])
    if sp.issparse(X):
        X = X.tocsc()  # column slicing is cheap in CSC
        return [sp.csr_matrix(X[:, bounds[m] : bounds[m + 1]]) for m in range(len(counts))]
    return [X[:, bounds[m] : bounds[m + 1]].copy() for m in range(len(counts))]
