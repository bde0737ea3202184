"""An observer's whitened view of a linear-Gaussian protocol by recursions over rounds (issue 29).

The accountant of :mod:`privdist.privacy.pairwise.network_dp` needs, per observer set, the Cholesky factor ``L`` (round
order) of the view's covariance ``G = B S^2 B^T`` (``m x m``, ``m`` observed messages), and per target the matrix
``M = X^T X`` of its whitened columns ``X = L^{-1} A`` (``A``: the target's columns of ``B S``). Built from the
blocks of ``B`` (:func:`~privdist.privacy.pairwise.linear_protocol.observer_view`), ``G`` costs ``sum_s m_s^2 N`` and ``X``
a triangular solve of ``m_s^2`` per target and round (``m_s``: messages of rounds ``>= s``). Two recursions
replace them:

* **Lag Gram** (time-invariant protocols: the same ``F``, ``E`` and observed rows ``O`` every round, e.g. gossip on
  a static graph; and *separable* noise ``sigma_k(s)^2 = d_s w_k``: one noise multiplier per agent and a
  per-round step size, as DPSGD declares). The rows of round ``t`` about inputs of round ``s`` are ``R_{t-s} E``
  with ``R_k = O F^k``, so

      G[t, t'] = sum_{s <= min(t, t')} d_s Q[t - s, t' - s],   Q = R E diag(w) E^T R^T   (one m x m product).

* **Closed-loop adjoint** (any protocol with a non-singular ``G``). With ``J = L^{-1}`` and ``a_s`` the first row
  of round ``s``, the whitened map from the state of round ``s`` to the messages of rounds ``>= s``,
  ``X_s = J[a_s:, a_s:] Psi_s`` (``Psi_s = [O_s; Psi_{s+1} F(s+1)]``, the adjoint recursion of ``B``), obeys

      X_s = J[a_s:, round s] O_s + [0; X_{s+1} F(s+1)]

  because the trailing block of a triangular inverse is the inverse of the trailing block; ``J``'s columns of
  round ``s`` are the innovations form's (Kalman) gains. One sparse product per round for all targets at once;
  a target's whitened columns are ``X_s E(s)`` scaled by its noise. The rows (columns of ``X_s``) never mix, so
  :func:`whitened_sums` runs them in groups, by a compiled loop, and keeps only what the accountant needs: per
  target the sums of its whitened columns and of their absolute values (:func:`row_bounds`, which settle most
  pairs), and ``M`` for the targets near the observer.

* **Impulse responses** (time-invariant protocols): a target's unwhitened columns are shifts of one response
  ``O F^k E e_j``, so ``X^T = J A`` is one triangular product (:func:`impulse_fisher`): for the few targets whose
  ``M`` the recursion did not keep.

``M`` keeps only the products that can be non-zero (the later rounds' inputs do not reach the earlier rounds'
messages).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk, dtrmm

from ._recursion_kernel import group_pass, pack
from .linear_protocol import LinearProtocol

__all__ = ["separable_noise", "lag_covariance", "whitened_sums", "recursion_maps", "row_bounds", "impulse_fisher",
           "fisher_matrices"]

#: relative tolerance of the rank-one test of the noise variances (rounding of ``z * Delta`` products)
_SEPARABLE_RTOL = 1e-12


def separable_noise(sigma: np.ndarray):
    """``(d, w)`` with ``sigma^2 = outer(d, w)`` (``sigma``: ``(T, N)`` noise stds), or None when the variances
    are not a rank-one table (a rank-one matrix equals ``outer(row sums, column sums) / total``)."""
    v = np.asarray(sigma, dtype=float) ** 2
    total = v.sum()
    if total <= 0:
        return None
    d, w = v.sum(axis=1) / total, v.sum(axis=0)
    if not np.allclose(np.outer(d, w), v, rtol=0.0, atol=_SEPARABLE_RTOL * v.max()):
        return None
    return d, w


def lag_covariance(protocol: LinearProtocol, rows: list, sigma: np.ndarray, sep=None):
    """``G`` by the lag Gram (module docstring), or None when the protocol is not time-invariant or the noise not
    separable (then build it from the blocks of ``B``).

    Args:
        protocol: the model.
        rows: the observed rows ``O_t`` of each round (``observed_rows``).
        sigma: ``(T, N)`` noise stds, 0 for the inputs the observer knows.
        sep: :func:`separable_noise` of ``sigma`` if already known.
    """
    if not protocol.time_invariant:
        return None
    sep = separable_noise(sigma) if sep is None else sep
    if sep is None:
        return None
    d, w = sep
    T, c = protocol.rounds, rows[0].shape[0]
    m = c * T
    if c == 0:
        return np.zeros((0, 0))
    FT = sp.csr_array(sp.csr_array(protocol.transition(1)).T)
    E = sp.csr_array(protocol.inputs(1))
    R = np.empty((T, c, protocol.n_state))
    cur = rows[0].toarray()
    for k in range(T):
        R[k] = cur
        if k + 1 < T:
            cur = np.asarray(FT @ cur.T).T
    RE = R.reshape(m, -1) if _is_identity(E) else np.asarray((E.T @ R.reshape(m, -1).T).T)
    RE = RE * np.sqrt(w)  # m x N
    Q = dsyrk(1.0, RE, lower=1)  # RE RE^T, its lower triangle
    Q = Q + np.tril(Q, -1).T
    # block (i, i + l) of G is the causal convolution sum_{u <= i} d[i - u] Q[u, u + l]: one product for all lags
    Qb = Q.reshape(T, c, T, c).transpose(0, 2, 1, 3)  # blocks (u, v)
    u, lag = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    inside = u + lag < T
    v = np.where(inside, u + lag, 0)
    qq = np.where(inside[:, :, None, None], Qb[u, v], 0.0)  # (u, lag, c, c)
    D = np.tril(d[np.subtract.outer(np.arange(T), np.arange(T)).clip(0)])  # D[i, u] = d[i - u], u <= i
    GG = (D @ qq.reshape(T, -1)).reshape(T, T, c, c)  # (i, lag, c, c)
    Gb = np.zeros((T, T, c, c))
    i, j = u[inside], v[inside]
    Gb[i, j] = GG[inside]
    Gb[j, i] = GG[inside].transpose(0, 2, 1)
    return Gb.transpose(0, 2, 1, 3).reshape(m, m)


def fisher_matrices(X: np.ndarray) -> np.ndarray:
    """``M = X X^T`` per target (``(n, T, T)`` from whitened columns ``(n, T, m)``, target x input round x row)."""
    return X @ X.transpose(0, 2, 1)


def whitened_sums(protocol: LinearProtocol, rows: list, J: np.ndarray, scale: np.ndarray, keep: np.ndarray,
                  group_rounds: int = 10, maps=None):
    """The closed-loop recursion (module docstring) without storing ``X``: per target, the sums over its
    input rounds of its whitened columns and of their absolute values, and ``M = X X^T`` of the targets ``keep``
    only.

    ``S1[k] = sum_s X[k, s]`` and ``S2[k] = sum_s |X[k, s]|`` (``(N, m)`` each) give the bounds of
    :func:`row_bounds` for every target in ``O(N m)`` memory instead of ``O(N T m)``. The message rows (the
    columns of the recursion) never mix, so they are processed in groups of ``group_rounds`` rounds, one group
    at a time through all its rounds, by a compiled loop (:mod:`._recursion_kernel`): the group and its sums stay
    in cache. ``M`` is accumulated group by group, each group's product restricted to the rounds that reach it
    (0.39 of the dense product for 10 groups).

    Args:
        maps: :func:`recursion_maps` of the protocol (computed here when None).

    Returns:
        ``(S1, S2, M_keep)`` with ``M_keep``: ``(len(keep), T, T)``, :func:`fisher_matrices` of the kept targets.
    """
    T, n, N = protocol.rounds, protocol.n_state, protocol.n_agents
    counts = np.array([o.shape[0] for o in rows], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    m = int(starts[-1])
    keep = np.asarray(keep, dtype=np.int64)
    S1, S2 = np.zeros((N, m)), np.zeros((N, m))
    Mk = np.zeros((keep.size, T, T))
    FT, ET = recursion_maps(protocol) if maps is None else maps
    gains = _gains(rows)
    J = np.ascontiguousarray(J)
    scale = np.ascontiguousarray(scale, dtype=float)
    for t0 in range(0, T, group_rounds):
        last = min(T, t0 + group_rounds)
        g0, g1 = int(starts[t0]), int(starts[last])
        if g1 == g0:
            continue
        s1, s2 = np.zeros((N, g1 - g0)), np.zeros((N, g1 - g0))
        Xg = np.empty((keep.size, last, g1 - g0))  # the kept targets' whitened columns on this group's rows
        group_pass(last, g0, g1, starts, counts, FT, ET, gains, J, scale, keep, n, N, s1, s2, Xg)
        S1[:, g0:g1], S2[:, g0:g1] = s1, s2
        if keep.size:  # the inputs of later rounds do not reach these rows: M's leading block only
            Mk[:, :last, :last] += Xg @ Xg.transpose(0, 2, 1)
    return S1, S2, Mk


def recursion_maps(protocol: LinearProtocol):
    """``(FT, ET)``: the transposed transitions ``F(s+1)^T`` (round ``s = 1..T-1``) and inputs ``E(s)^T`` (``-1``
    where ``E(s)`` is the identity) of the protocol, packed for the compiled recursion (one matrix each when the
    protocol is time-invariant)."""
    T, n = protocol.rounds, protocol.n_state
    steps = [2] if protocol.time_invariant else list(range(2, T + 1))
    FT = [sp.csr_array(sp.csr_array(protocol.transition(t)).T) for t in (steps if T > 1 else [])]
    ft_of = np.zeros(T + 1, dtype=np.int64) if protocol.time_invariant else np.concatenate([[0, *range(T - 1)], [0]])
    Es = [sp.csr_array(protocol.inputs(s)) for s in ([1] if protocol.time_invariant else range(1, T + 1))]
    ident = [_is_identity(E) for E in Es]
    ET, et_of, idx = [], [], {}
    for k, E in enumerate(Es):
        if ident[k]:
            idx[k] = -1
        else:
            idx[k] = len(ET)
            ET.append(sp.csr_array(E.T))
    et_of = np.array([idx[0 if protocol.time_invariant else s] for s in range(T)], dtype=np.int64)
    return pack(FT, ft_of, n), pack(ET, et_of, protocol.n_agents)


def _gains(rows: list):
    """Per round, the state entries its observed messages read and those rows (``|nz| x c``, row-major), stacked
    for the compiled recursion (a time-invariant protocol repeats one object: packed once)."""
    nz_all, ot_all, nz_off, ot_off, o_of, seen = [], [], [0], [0], [], {}
    for rows_t in rows:
        if id(rows_t) not in seen:
            O = sp.csc_array(rows_t)
            nz = np.flatnonzero(np.diff(O.indptr))
            seen[id(rows_t)] = len(nz_off) - 1
            nz_all.append(nz)
            ot_all.append(np.ascontiguousarray(O[:, nz].toarray().T).ravel())
            nz_off.append(nz_off[-1] + nz.size)
            ot_off.append(ot_off[-1] + ot_all[-1].size)
        o_of.append(seen[id(rows_t)])
    cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)  # noqa: E731
    return (cat(nz_all, np.int64), np.array(nz_off, dtype=np.int64), cat(ot_all, float),
            np.array(ot_off, dtype=np.int64), np.array(o_of, dtype=np.int64))


def _is_identity(E: sp.csr_array) -> bool:
    n = E.shape[0]
    return E.shape == (n, n) and E.nnz == n and (E != sp.identity(n)).nnz == 0


def row_bounds(S1: np.ndarray, S2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` on ``max sum_st M_st <v_s, v_t>`` over ``||v_s|| <= 1`` (``M = X X^T``) from
    :func:`whitened_sums`: ``v_s = e`` for every round attains ``||sum_s x_s||^2``, and
    ``||sum_s X_s v_s||^2 = sum_rows ||sum_s X_{s,row} v_s||^2 <= sum_rows (sum_s |X_{s,row}|)^2`` in any
    dimension. They meet when no row of the whitened view sees the target's rounds with opposite signs, which
    is nearly so for targets far from the observer (the benchmark's pairs at distance >= 5 close to 1 %)."""
    return np.einsum("km,km->k", S1, S1), np.einsum("km,km->k", S2, S2)


def impulse_fisher(protocol: LinearProtocol, rows: list, J: np.ndarray, scale: np.ndarray,
                   targets: np.ndarray) -> np.ndarray:
    """``M = X X^T`` (as :func:`whitened_sums` keeps it) of a few targets of a time-invariant protocol, from their
    impulse responses: the rows of round ``t`` see the target's input of round ``s`` through ``O F^(t-s) E``, so
    its unwhitened columns are shifts of one response, and ``X^T = J A`` is one product for all of them. About
    ``m^2 T`` per target (1 ms on the 1,000-agent benchmark): for the few open pairs outside the recursion's kept
    targets."""
    T = protocol.rounds
    targets = np.asarray(targets, dtype=np.int64)
    O = sp.csr_array(rows[0])
    c, K = O.shape[0], targets.size
    F = sp.csr_array(protocol.transition(1))
    x = sp.csr_array(protocol.inputs(1))[:, targets].toarray()
    phi = np.empty((T, c, K))
    for k in range(T):
        phi[k] = O @ x
        if k + 1 < T:
            x = F @ x
    A = np.zeros((T * c, T * K), order="F")  # column s + T k: target k's input of round s
    A3 = A.reshape(T * c, T, K, order="F")
    for s in range(T):
        A3[s * c:, s, :] = phi[: T - s].reshape((T - s) * c, K) * scale[s, targets]
    W = dtrmm(1.0, J, A, lower=1, overwrite_b=1).reshape(T * c, T, K, order="F")  # J A, J lower triangular
    Wk = W.transpose(2, 1, 0)  # (K, T, m), contiguous
    return Wk @ Wk.transpose(0, 2, 1)
