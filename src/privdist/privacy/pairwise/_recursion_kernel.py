"""The compiled inner loop of :func:`privdist.privacy.pairwise.innovations.whitened_sums` (issue 29).

One group of message rows through all its rounds of the closed-loop recursion, fused: the sparse transition, the
round's gains, the sums of the whitened columns and of their absolute values, and the kept targets' columns, in
one pass over the group per round. In numpy the same loop is a dozen calls per round and group, each a pass over
memory, and their overhead was half its time; compiled (numba), the recursion of the 1,000-agent benchmark's
observer takes a quarter of it.

Sparse matrices enter as a :class:`Packed` stack: the distinct CSR matrices of the protocol's rounds, concatenated,
with the index of each round's matrix (a time-invariant protocol has one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = ["Packed", "pack", "group_pass", "compile_kernel"]


@dataclass(frozen=True)
class Packed:
    """CSR matrices of equal shape, stacked: matrix ``k`` is ``(indptr[k], indices[off[k]:], data[off[k]:])``;
    ``of[s]`` is the matrix of round ``s`` (``-1``: none, or the identity where the caller says so)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    off: np.ndarray
    of: np.ndarray


def pack(mats: list, of: np.ndarray, n_rows: int) -> Packed:
    """Stack the distinct CSR matrices ``mats`` (``of[s]`` indexes them per round)."""
    mats = [sp.csr_array(m) for m in mats]
    for m in mats:
        m.sort_indices()
    indptr = np.zeros((max(1, len(mats)), n_rows + 1), dtype=np.int64)
    off = np.zeros(max(1, len(mats)) + 1, dtype=np.int64)
    for k, m in enumerate(mats):
        indptr[k] = m.indptr
        off[k + 1] = off[k] + m.nnz
    indices = np.concatenate([m.indices for m in mats]).astype(np.int64) if mats else np.zeros(0, np.int64)
    data = np.concatenate([m.data for m in mats]).astype(float) if mats else np.zeros(0)
    return Packed(indptr, indices, data, off, np.asarray(of, dtype=np.int64))


@njit(cache=True)
def _spmm(indptr, indices, data, off, X, out):  # pragma: no cover - compiled
    """``out = A X`` for CSR ``A`` (one matrix of a stack) and a dense ``X``."""
    w = X.shape[1]
    for i in range(out.shape[0]):
        for q in range(w):
            out[i, q] = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            j = indices[off + jj]
            v = data[off + jj]
            for q in range(w):
                out[i, q] += v * X[j, q]


@njit(cache=True)
def _group(last, g0, g1, starts, counts, ft_indptr, ft_indices, ft_data, ft_off, ft_of, et_indptr, et_indices,
           et_data, et_off, et_of, nz_all, nz_off, ot_all, ot_off, o_of, J, scale, keep, n, N, s1, s2,
           Xg):  # pragma: no cover - compiled
    w = g1 - g0
    G = np.zeros((n, w))
    Gn = np.empty((n, w))
    Y = np.empty((N, w))
    for s in range(last, 0, -1):
        a = starts[s - 1]
        c = counts[s - 1]
        if s < last:
            k = ft_of[s]
            _spmm(ft_indptr[k], ft_indices, ft_data, ft_off[k], G, Gn)
            G, Gn = Gn, G
        if c > 0 and g1 > a:
            lo = max(g0, a)
            o = o_of[s - 1]
            for t in range(nz_off[o + 1] - nz_off[o]):
                i = nz_all[nz_off[o] + t]
                base = ot_off[o] + t * c
                for r in range(lo, g1):
                    acc = 0.0
                    for q in range(c):
                        acc += ot_all[base + q] * J[r, a + q]
                    G[i, r - g0] += acc
        e = et_of[s - 1]
        if e < 0:
            Z = G
        else:
            _spmm(et_indptr[e], et_indices, et_data, et_off[e], G, Y)
            Z = Y
        for j in range(N):
            wj = scale[s - 1, j]
            for q in range(w):
                y = Z[j, q] * wj
                s1[j, q] += y
                s2[j, q] += abs(y)
        for kk in range(keep.shape[0]):
            j = keep[kk]
            wj = scale[s - 1, j]
            for q in range(w):
                Xg[kk, s - 1, q] = Z[j, q] * wj


def group_pass(last: int, g0: int, g1: int, starts, counts, FT: Packed, ET: Packed, gains, J, scale, keep,
               n: int, N: int, s1, s2, Xg) -> None:
    """Rows ``g0:g1`` (rounds up to ``last``) through rounds ``last..1``: adds to ``s1``, ``s2`` (``(N, g1 - g0)``)
    and fills ``Xg`` (``(len(keep), last, g1 - g0)``). ``gains``: ``(nz_all, nz_off, ot_all, ot_off, o_of)``, the
    state entries each round's messages read and their rows (row-major ``|nz| x c``), stacked like
    :class:`Packed`; ``ET.of[s - 1] = -1`` where ``E(s)`` is the identity."""
    _group(last, g0, g1, starts, counts, FT.indptr, FT.indices, FT.data, FT.off, FT.of, ET.indptr, ET.indices,
           ET.data, ET.off, ET.of, *gains, J, scale, keep, n, N, s1, s2, Xg)


def compile_kernel() -> None:
    """Compile the loop (or load it from numba's cache) on a one-agent case: done before forking workers, so
    that each does not compile it again."""
    one = pack([sp.identity(1, format="csr")], np.zeros(2, dtype=np.int64), 1)
    none = pack([], -np.ones(1, dtype=np.int64), 1)
    gains = (np.zeros(1, np.int64), np.array([0, 1], np.int64), np.ones(1), np.array([0, 1], np.int64),
             np.zeros(1, np.int64))
    group_pass(1, 0, 1, np.array([0, 1], np.int64), np.ones(1, np.int64), one, none, gains, np.ones((1, 1)),
               np.ones((1, 1)), np.zeros(1, np.int64), 1, 1, np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1, 1)))
