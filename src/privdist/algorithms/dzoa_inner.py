"""D-ZOA's two-point zeroth-order inner loop, vectorised over the ``2 J`` points of a step (spec §2.4(b), §2.9).

:func:`zo_gradient` / :func:`zo_inner_loop` take any ``value_diff(A, H, u2) = [F(A + u2 H) - F(A)] / u2``
(columns are points). :func:`squared_inner_loop` is the fast path of the papers' objective
``F(b) = 1/n ||X b - y||^2 + l1w ||b||_1 + q ||b||^2 - v^T b``: the products ``X nu`` do not depend on the iterate,
so they are formed for several steps at once (``chunk // J`` steps per batch, or ``chunk`` pairs per batch when
``J > chunk``), leaving per step only ``O((n + P) J)`` reductions. It consumes the generator exactly as
:func:`zo_inner_loop` does (``standard_normal`` of shape ``(2, P, c)`` per step and chunk, drawn in batches that
give the same numbers), so both produce the same iterates up to rounding. Memory: about
``(2 P + 2 n + 6) * chunk`` doubles.
"""

from __future__ import annotations

import numpy as np

__all__ = ["zo_gradient", "zo_inner_loop", "squared_diff", "generic_diff", "squared_inner_loop"]


def zo_gradient(value_diff, b: np.ndarray, J: int, u1t: float, u2t: float, gen: np.random.Generator,
                chunk: int = 4096) -> np.ndarray:
    """Two-point estimate ``g = 1/J sum_j [F(b + u1t nu1 + u2t nu2) - F(b + u1t nu1)] / u2t nu2`` (S1(8)),
    all pairs of a chunk at once (draws ``(2, P, c)`` standard normals per chunk)."""
    P = b.shape[0]
    g = np.zeros(P)
    for start in range(0, J, chunk):
        c = min(chunk, J - start)
        Z = gen.standard_normal((2, P, c))
        A = b[:, None] + u1t * Z[0]
        g += Z[1] @ value_diff(A, Z[1], u2t)
    return g / J


def zo_inner_loop(value_diff, P: int, J: int, T: int, alphas: np.ndarray, u1: float, gen: np.random.Generator,
                  chunk: int = 4096, probe=None, average: bool = False) -> np.ndarray:
    """The two-point zeroth-order loop of S1(7)-(9) from ``b_0 = 0`` (also OR-ZO's iteration, spec §6.7).

    Args:
        value_diff: ``value_diff(A, H, u2) -> (c,)``: ``[F(A + u2 H) - F(A)] / u2`` column-wise, ``A, H`` (P, c).
        P, J, T: dimension, direction pairs per step, steps.
        alphas: step sizes ``alpha_t``, shape (T,).
        u1: smoothing constant (``u_{1,t} = u1/t``, ``u_{2,t} = u1/(P^2 t^2)``).
        gen: the agent's generator (draws ``(2, P, c)`` standard normals per chunk).
        chunk: pairs per vectorised batch (memory bound: about ``(4 P + 2 n) * chunk`` doubles).
        probe: optional ``probe(t, g)`` called with each step's estimate ``g^{(t)}``.
        average: return the running average of the iterates (AMB-D19 option) instead of the last one.

    Returns:
        ``b_T`` (or the average), shape (P,).
    """
    b = np.zeros(P)
    acc = np.zeros(P)
    for t in range(1, T + 1):
        g = zo_gradient(value_diff, b, J, u1 / t, u1 / (P * P * t * t), gen, chunk)
        if probe is not None:
            probe(t, g)
        b = b - alphas[t - 1] * g
        acc += b
    return acc / T if average else b


def squared_diff(X, y, q, v, l1w):
    """``value_diff`` of ``F(b) = 1/n ||X b - y||^2 + l1w ||b||_1 + q ||b||^2 - v^T b`` (exact differences)."""
    n = X.shape[0]

    def diff(A, H, u2):
        R = X @ A
        R -= y[:, None]
        S = X @ H
        out = (2.0 * np.einsum("nc,nc->c", R, S) + u2 * np.einsum("nc,nc->c", S, S)) / n
        out += q * (2.0 * np.einsum("pc,pc->c", A, H) + u2 * np.einsum("pc,pc->c", H, H))
        out -= v @ H
        if l1w:
            out += l1w * (np.abs(A + u2 * H) - np.abs(A)).sum(axis=0) / u2
        return out

    return diff


def generic_diff(sub, q, v):
    """``value_diff`` through the problem's batched values (any loss/regularizer), plus the ADMM penalty."""

    def diff(A, H, u2):
        pts = np.concatenate([A + u2 * H, A], axis=1)[None]
        vals = sub.local_values(pts)[0]
        c = A.shape[1]
        out = (vals[:c] - vals[c:]) / u2
        out += q * (2.0 * np.einsum("pc,pc->c", A, H) + u2 * np.einsum("pc,pc->c", H, H))
        out -= v @ H
        return out

    return diff


def squared_inner_loop(X, y, q: float, v, l1w: float, J: int, T: int, alphas, u1: float, gen, chunk: int = 4096,
                       probe=None, average: bool = False) -> np.ndarray:
    """:func:`zo_inner_loop` for ``F(b) = 1/n ||X b - y||^2 + l1w ||b||_1 + q ||b||^2 - v^T b`` (same draws)."""
    n, P = X.shape
    b, acc = np.zeros(P), np.zeros(P)
    per = max(1, chunk // J) if J <= chunk else 1
    t = 1
    while t <= T:
        tb = min(per, T - t + 1)
        if J <= chunk:
            Zs = [gen.standard_normal((tb, 2, P, J))]
        else:
            Zs = None
        for s in range(tb):
            tt = t + s
            u1t, u2t = u1 / tt, u1 / (P * P * tt * tt)
            g = np.zeros(P)
            parts = [Zs[0][s]] if Zs is not None else (
                gen.standard_normal((2, P, min(chunk, J - st))) for st in range(0, J, chunk))
            r0 = X @ b - y
            lin = 2.0 * q * b - v
            for Z in parts:
                N1, N2 = Z[0], Z[1]
                XN = X @ Z.reshape(2, P, -1)  # (2, n, c)
                S = XN[1]
                d = (2.0 * (r0 @ S + u1t * np.einsum("nc,nc->c", XN[0], S)) + u2t * np.einsum("nc,nc->c", S, S)) / n
                d += lin @ N2 + q * (2.0 * u1t * np.einsum("pc,pc->c", N1, N2) + u2t * np.einsum("pc,pc->c", N2, N2))
                if l1w:
                    A = b[:, None] + u1t * N1
                    d += l1w * (np.abs(A + u2t * N2) - np.abs(A)).sum(axis=0) / u2t
                g += N2 @ d
            g /= J
            if probe is not None:
                probe(tt, g)
            b = b - alphas[tt - 1] * g
            acc += b
        t += tb
    return acc / T if average else b
