"""An observer's whitened view of a linear-Gaussian protocol by recursions over rounds (issue 29).

The accountant of :mod:`privdist.privacy.network_dp` needs, per observer set, the Cholesky factor ``L`` (round
order) of the view's covariance ``G = B S^2 B^T`` (``m x m``, ``m`` observed messages), and per target the matrix
``M = X^T X`` of its whitened columns ``X = L^{-1} A`` (``A``: the target's columns of ``B S``). Built from the
blocks of ``B`` (:func:`~privdist.privacy.linear_protocol.observer_view`), ``G`` costs ``sum_s m_s^2 N`` and ``X``
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
  a target's whitened columns are ``X_s E(s)`` scaled by its noise.

``M`` is then one batched product per chunk of targets (5/8 of it: the later rounds' inputs do not reach the
earlier rounds' messages).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .linear_protocol import LinearProtocol

__all__ = ["separable_noise", "lag_covariance", "whitened_columns", "fisher_matrices"]

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


def lag_covariance(protocol: LinearProtocol, rows: list, sigma: np.ndarray):
    """``G`` by the lag Gram (module docstring), or None when the protocol is not time-invariant or the noise not
    separable (then build it from the blocks of ``B``).

    Args:
        protocol: the model.
        rows: the observed rows ``O_t`` of each round (``observed_rows``).
        sigma: ``(T, N)`` noise stds, 0 for the inputs the observer knows.
    """
    if not protocol.time_invariant:
        return None
    sep = separable_noise(sigma)
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
    RE = np.asarray(E.T @ R.reshape(m, -1).T).T * np.sqrt(w)  # m x N
    Q = RE @ RE.T
    G = np.zeros((m, m))
    for s in range(T):
        a = s * c
        G[a:, a:] += d[s] * Q[: m - a, : m - a]
    return G


def whitened_columns(protocol: LinearProtocol, rows: list, J: np.ndarray, scale: np.ndarray,
                     out: np.ndarray | None = None) -> np.ndarray:
    """``X``: ``(N, T, m)``, row ``s - 1`` of agent ``k`` the whitened column of its input of round ``s``
    (``X_s E(s)``, zero above the first row of round ``s``) times ``scale[s - 1, k]`` (closed-loop adjoint, module
    docstring). Memory: ``8 N T m`` bytes.

    Args:
        protocol: the model.
        rows: observed rows ``O_t`` per round.
        J: inverse of the round-ordered Cholesky factor of ``G`` (``m x m``, lower triangular).
        scale: ``(T, N)`` per-input factor (e.g. the sensitivity: then ``X^T X`` is in the units of the ball).
        out: a buffer of that shape to reuse, zero wherever ``X`` is (its entries above each round's first row are
            never written, so a buffer from an observer with the same rows per round can be passed again).
    """
    T, n, N = protocol.rounds, protocol.n_state, protocol.n_agents
    counts = np.array([o.shape[0] for o in rows])
    starts = np.concatenate([[0], np.cumsum(counts)])
    m = int(starts[-1])
    X = np.zeros((N, T, m)) if out is None else out
    XT = np.zeros((n, 0))  # X_{s+1}^T: state x rows of rounds > s
    FT = E = None
    for s in range(T, 0, -1):
        a, c = int(starts[s - 1]), int(counts[s - 1])
        new = np.empty((n, m - a))
        new[:, :c] = 0.0
        if XT.shape[1]:
            if FT is None or not protocol.time_invariant:
                FT = sp.csr_array(sp.csr_array(protocol.transition(s + 1)).T)
            new[:, c:] = FT @ XT
        if c:
            O = sp.csc_array(rows[s - 1])
            nz = np.flatnonzero(np.diff(O.indptr))  # state entries the round's messages read
            new[nz] += O[:, nz].toarray().T @ J[a:, a:a + c].T
        XT = new
        if E is None or not protocol.time_invariant:
            E = sp.csr_array(protocol.inputs(s))
            identity = E.shape == (n, n) and E.nnz == n and (E != sp.identity(n)).nnz == 0
        np.multiply(XT if identity else np.asarray(E.T @ XT), scale[s - 1][:, None], out=X[:, s - 1, a:])
    return X


def fisher_matrices(X: np.ndarray, first_rows: np.ndarray | None = None) -> np.ndarray:
    """``M = X X^T`` per target (``(n, T, T)`` from :func:`whitened_columns`' ``(n, T, m)``). With
    ``first_rows`` (the first message row of each round), the inputs of the later half of the rounds, which do not
    reach the rows of the earlier half, are left out of that half's product: 5/8 of the dense work."""
    T = X.shape[1]
    h = T // 2
    if first_rows is None or h == 0:
        return X @ X.transpose(0, 2, 1)
    a = int(first_rows[h])
    late = X[:, :, a:]
    M = late @ late.transpose(0, 2, 1)
    early = X[:, :h, :a]
    M[:, :h, :h] += early @ early.transpose(0, 2, 1)
    return M
