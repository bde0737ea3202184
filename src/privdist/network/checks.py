"""Checks on weight matrices: double stochasticity and (B-)strong connectivity (spec §5.1, §5.2, §5.8).

A weight matrix ``W`` of a directed network has an edge ``j -> i`` when ``W[i, j] > 0`` (rows are receivers, spec
§5.2). Dense arrays and any ``scipy.sparse`` matrix are accepted; the work is done on sparse matrices throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._checks import check_int
from ..errors import (
    NetworkShapeError,
    NonFiniteDataError,
    NotBStronglyConnectedError,
    NotDoublyStochasticError,
    ValidationError,
)

__all__ = [
    "as_weight_matrix",
    "check_doubly_stochastic",
    "is_strongly_connected",
    "check_b_strongly_connected",
]


def as_weight_matrix(W: Any, name: str = "W") -> sp.csr_array:
    """Return ``W`` as a new canonical float64 ``csr_array``; raise unless it is square and finite.

    Args:
        W: dense array-like or ``scipy.sparse`` matrix.
        name: how to call the matrix in error messages.

    Raises:
        NetworkShapeError: ``W`` is not a non-empty 2-D square matrix.
        NonFiniteDataError: ``W`` has NaN or infinite entries.
    """
    if sp.issparse(W):
        mat = sp.csr_array(W, dtype=np.float64, copy=True)
    else:
        try:
            arr = np.asarray(W, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise NetworkShapeError(f"{name} must be a 2-D numeric matrix: {exc}") from None
        if arr.ndim != 2:
            raise NetworkShapeError(f"{name} must be 2-D, got shape {arr.shape}")
        mat = sp.csr_array(arr)
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1] or mat.shape[0] < 1:
        raise NetworkShapeError(f"{name} must be a non-empty square matrix, got shape {mat.shape}")
    mat.sum_duplicates()
    if not np.all(np.isfinite(mat.data)):
        coo = mat.tocoo()
        k = int(np.flatnonzero(~np.isfinite(coo.data))[0])
        raise NonFiniteDataError(f"{name} has a non-finite entry {coo.data[k]} at ({coo.row[k]}, {coo.col[k]})")
    mat.eliminate_zeros()
    mat.sort_indices()
    return mat


def check_doubly_stochastic(W: Any, tol: float = 1e-10, name: str = "W") -> sp.csr_array:
    """Check that ``W`` is doubly stochastic: square, entries >= 0, every row and column summing to 1.

    Args:
        W: dense array-like or ``scipy.sparse`` matrix.
        tol: absolute tolerance on each row and column sum (entries must be >= 0 exactly).
        name: how to call the matrix in error messages.

    Returns:
        ``W`` as a new float64 ``csr_array``.

    Raises:
        NetworkShapeError: ``W`` is not square.
        NonFiniteDataError: ``W`` has NaN or infinite entries.
        NotDoublyStochasticError: an entry is negative, or a row or column sum differs from 1 by more than ``tol``
            (the message names the worst row/column and its sum).

    References:
        spec §5.1 (``A(t)`` doubly stochastic), §6.6.
    """
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise ValidationError(f"tol must be a finite number >= 0, got {tol!r}")
    mat = as_weight_matrix(W, name)
    if mat.nnz and mat.data.min() < 0:
        coo = mat.tocoo()
        k = int(np.argmin(coo.data))
        raise NotDoublyStochasticError(
            f"{name} must have nonnegative entries, got {coo.data[k]} at ({coo.row[k]}, {coo.col[k]})"
        )
    for axis, label in ((1, "row"), (0, "column")):
        sums = np.asarray(mat.sum(axis=axis)).ravel()
        err = np.abs(sums - 1.0)
        k = int(np.argmax(err))
        if err[k] > tol:
            raise NotDoublyStochasticError(
                f"{label} {k} of {name} sums to {float(sums[k])!r}, not 1 (tolerance {tol}); "
                f"{int((err > tol).sum())} {label}(s) are off"
            )
    return mat


def _pattern(W: Any) -> sp.csr_array:
    """0/1 sparsity pattern of the positive entries of ``W`` (as a csr_array)."""
    mat = as_weight_matrix(W)
    mat.data = (mat.data > 0).astype(np.float64)
    mat.eliminate_zeros()
    return mat


def _n_strong_components(pattern: sp.csr_array) -> int:
    n_comp, _ = connected_components(pattern, directed=True, connection="strong")
    return int(n_comp)


def is_strongly_connected(W: Any) -> bool:
    """Whether the directed graph of ``W`` (edge ``j -> i`` iff ``W[i, j] > 0``) is strongly connected.

    Args:
        W: square weight matrix, dense or sparse.

    Returns:
        ``True`` when every node reaches every other along directed edges.

    Raises:
        NetworkShapeError: ``W`` is not square.
    """
    return _n_strong_components(_pattern(W)) == 1


def check_b_strongly_connected(matrices: Sequence[Any], B: int, *, cyclic: bool = True) -> None:
    """Check B-strong connectivity: the union of every window of ``B`` consecutive matrices is strongly connected.

    With ``cyclic=True`` (a periodic schedule) the windows wrap around: window ``s`` is matrices
    ``s, s+1, ..., s+B-1`` taken modulo ``len(matrices)``, for every ``s``. With ``cyclic=False`` the sequence is a
    finite realised schedule and the windows are ``s = 0 .. len(matrices) - B``. Windows holding the same set of
    matrices (compared by identity, after conversion) are checked once, so long schedules built from a few
    matrices are cheap.

    Args:
        matrices: the weight matrices, in schedule order (dense or sparse, all of one square shape).
        B: window length (>= 1).
        cyclic: whether the sequence repeats periodically.

    Raises:
        ValidationError: ``matrices`` is empty, or ``B > len(matrices)`` with ``cyclic=False``.
        NetworkShapeError: the matrices are not square or differ in shape.
        NotBStronglyConnectedError: some window's union is not strongly connected (the message names the window
            start, 0-based, and B).

    References:
        spec §5.1 (``G(t)`` B-strongly connected), §5.8 and AMB-O2 (cyclic ``A_1 -> A_2 -> A_3``, B = 3).
    """
    B = check_int(B, "B", minimum=1)
    if len(matrices) == 0:
        raise ValidationError("matrices must hold at least one weight matrix")
    # convert each distinct object once
    keys: list[int] = []
    patterns: dict[int, sp.csr_array] = {}
    shape = None
    for pos, W in enumerate(matrices):
        key = id(W)
        if key not in patterns:
            patterns[key] = _pattern(W)
            if shape is None:
                shape = patterns[key].shape
            elif patterns[key].shape != shape:
                raise NetworkShapeError(
                    f"all weight matrices must have one shape; matrix {pos} has {patterns[key].shape}, "
                    f"matrix 0 has {shape}"
                )
        keys.append(key)
    m = len(keys)
    if cyclic:
        starts = range(m)
    else:
        if B > m:
            raise ValidationError(f"B={B} is longer than the schedule of {m} matrices")
        starts = range(m - B + 1)
    verdict: dict[frozenset[int], int] = {}
    for s in starts:
        window = frozenset(keys[(s + j) % m] for j in range(B))
        if window not in verdict:
            union = patterns[next(iter(window))]
            for key in window:
                union = union + patterns[key]
            verdict[window] = _n_strong_components(sp.csr_array(union))
        if verdict[window] != 1:
            kind = "cyclic schedule" if cyclic else "schedule"
            raise NotBStronglyConnectedError(
                f"{kind} is not B-strongly connected with B={B}: the union of the {B} matrices starting at "
                f"index {s} (0-based, t={s + 1}) has {verdict[window]} strongly connected components"
            )
