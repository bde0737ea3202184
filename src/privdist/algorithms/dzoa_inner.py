"""D-ZOA's two-point zeroth-order inner loop, vectorised over the ``2 J`` points of a step (spec §2.4(b), §2.9).

:func:`zo_gradient` / :func:`zo_inner_loop` take any ``value_diff(A, H, u2) = [F(A + u2 H) - F(A)] / u2``
(columns are points). :func:`squared_inner_loops` is the fast path of the papers' objective
``F_k(b) = 1/n_k ||X_k b - y_k||^2 + l1w ||b||_1 + q_k ||b||^2 - v_k^T b`` for several agents at once: the products
``X nu`` do not depend on the iterate, so they are formed for several steps at once (``chunk // J`` steps per
block, or ``chunk`` pairs per block when ``J > chunk``), leaving per step only ``O((n + P) J)`` reductions, done
for all agents in the same array operations (small ``J``, as in S0 and at small epsilon, is bound by the per-step
overhead, which this shares). Each agent consumes its generator exactly as :func:`zo_inner_loop` does
(``standard_normal`` of shape ``(2, P, c)`` per step and chunk, drawn in blocks that give the same numbers), so
both produce the same iterates up to rounding. :func:`squared_inner_loop` is the one-agent form.
"""

from __future__ import annotations

import numpy as np

__all__ = ["zo_gradient", "zo_inner_loop", "squared_diff", "generic_diff", "squared_inner_loop", "squared_inner_loops",
           "quadratic_form", "pad_samples", "BLOCK_BUDGET"]

#: Doubles per precomputed block of draws (about ``tb K P max(J, P)``): bounds memory as the agent axis grows (trials
#: batched by :func:`privdist.runtime.run_many`) while a small call still precomputes all its steps at once.
BLOCK_BUDGET = 1 << 18


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
    n = X.shape[0]
    return squared_inner_loops(X[None], y[None], np.array([n]), np.array([q], dtype=float), np.asarray(v)[None], l1w,
                               np.array([J]), T, np.asarray(alphas)[None], u1, [gen], chunk,
                               None if probe is None else (0, probe), average)[0]


def _draw_block(gens, Js, P: int, tb: int, lo: int, width: int) -> np.ndarray:
    """Pairs ``lo .. lo + width`` of ``tb`` steps for every agent, zero-padded: shape (K, tb, 2, P, width).

    Agent ``k`` draws ``standard_normal((tb, 2, P, c_k))`` from its own generator, ``c_k`` its pairs in the range
    (none once ``J_k`` is exhausted): the same numbers as ``tb`` consecutive per-step draws."""
    cs = [min(width, int(J) - lo) for J in Js]
    full = all(c == width for c in cs)
    Z = np.empty((len(gens), tb, 2, P, width)) if full else np.zeros((len(gens), tb, 2, P, width))
    for k, gen in enumerate(gens):
        if full:
            gen.standard_normal(out=Z[k])  # the same numbers as standard_normal((tb, 2, P, width)), no copy
        elif cs[k] > 0:
            Z[k, ..., :cs[k]] = gen.standard_normal((tb, 2, P, cs[k]))
    return Z


def squared_inner_loops(X, y, counts, q, v, l1w: float, Js, T: int, alphas, u1: float, gens, chunk: int = 4096,
                        probe=None, average: bool = False, pad_to: int = 0) -> np.ndarray:
    """:func:`zo_inner_loop` of ``K`` agents at once for ``F_k(b) = 1/n_k ||X_k b - y_k||^2 + l1w ||b||_1
    + q_k ||b||^2 - v_k^T b`` (the papers' squared loss; spec §2.4(b)).

    The function differences are exact for this quadratic-plus-l1 ``F``: with ``G = X^T X`` they are
    ``w(b)^T nu2 + u1 a1 + u2 a2`` (+ the l1 part), where the iterate-independent ``a1, a2`` of a block of draws
    (``chunk // max J`` steps, or one step's ``chunk`` pairs when ``max J > chunk``) are formed once; per step only
    ``O(P J)`` work remains, done for all agents in one set of array operations (agents' pairs are zero-padded to the
    largest ``J_k``; a zero pair contributes nothing). Every agent consumes its own generator exactly as
    :func:`zo_inner_loop` does, so the iterates agree with it up to rounding.

    Args:
        X, y: (K, n, P) and (K, n), rows beyond ``counts[k]`` zero.
        counts: (K,) ``n_k = 1/w_k`` (samples under the mean loss, 1 under the sum loss); q: (K,); v: (K, P); l1w: l1 weight; Js: (K,) pairs per step.
        T: steps; alphas: (K, T) step sizes; u1: smoothing; gens: K generators.
        chunk: pairs per block (memory: about ``K (3 P + 2) chunk`` doubles).
        probe: optional ``(k, probe(t, g))`` called with agent ``k``'s estimate of each step.
        average: return the running averages of the iterates instead of the last ones.
        pad_to: pad every agent's pairs to at least this many per step (zero pairs). An agent's numbers depend only
            on its own data, ``J_k`` and the padded width (every product is per agent), not on the other rows; with
            a fixed width per ``J_k`` (:meth:`DZOA.step_many` pads to the next power of two) they do not depend on
            which agents share the call either (tested: bit-identical transcripts batched or alone).

    Returns:
        (K, P) final (or averaged) iterates.
    """
    K, n, P = X.shape
    Jmax = max(int(np.max(Js)), int(pad_to))
    Jf = np.asarray(Js, dtype=float)
    H, c = quadratic_form(X, y, counts, q, v)  # every product with X nu goes through X^T X (P-space)
    H2 = 2.0 * H  # w(b) = 2 H b - c, one stacked product per step (per agent: independent of the other rows)
    b, acc = np.zeros((K, P)), np.zeros((K, P))
    width = min(Jmax, chunk)
    # steps precomputed per block: the block's arrays hold about BLOCK_BUDGET doubles whatever K is (all T = 100
    # steps at K = 5, P = 10, J = 30); draws do not depend on the block size (consecutive per-step draws)
    per = max(1, min(T, BLOCK_BUDGET // (K * P * max(width, P)))) if Jmax <= chunk else 1
    ranges = range(0, Jmax, width)

    def block(Z, t0):
        # d_j = [F(b + u1 nu1 + u2 nu2) - F(b + u1 nu1)] / u2 = w(b)^T nu2 + u1 a1_j + u2 a2_j (+ l1 part), with
        # w(b) = 2 H b - c, a1 = 2 nu1^T H nu2, a2 = nu2^T H nu2, so the quadratic part of 1/J sum_j nu2_j d_j is
        # M w + r with the iterate-independent M = 1/J sum_j nu2 nu2^T (per agent) and
        # r = 1/J sum_j (u1 a1_j + u2 a2_j) nu2_j: O(P^2) per step; only the l1 part needs the pairs
        tb = Z.shape[1]
        ts = np.arange(t0, t0 + tb, dtype=float)[None, :, None]
        N1, N2 = Z[:, :, 0], Z[:, :, 1]  # (K, tb, P, w)
        HN2 = H[:, None] @ N2
        a = (u1 / ts) * 2.0 * np.einsum("ktpw,ktpw->ktw", N1, HN2) \
            + (u1 / (P * P * ts * ts)) * np.einsum("ktpw,ktpw->ktw", N2, HN2)
        r = np.ascontiguousarray(np.swapaxes((N2 @ a[..., None])[..., 0] / Jf[:, None, None], 0, 1))  # (tb, K, P)
        M = np.ascontiguousarray(np.swapaxes(N2 @ np.swapaxes(N2, 2, 3) / Jf[:, None, None, None], 0, 1))
        if not l1w:
            return M, r, None
        U1N1 = (u1 / ts)[..., None] * N1  # a = b + u1 nu1, a + u2 nu2 of every pair
        U2N2 = U1N1 + (u1 / (P * P * ts * ts))[..., None] * N2
        step_major = [np.ascontiguousarray(np.swapaxes(x, 0, 1))  # (tb, K, P, w): one contiguous slab per step
                      for x in (U1N1, U2N2, N2 * (l1w * P * P / (u1 * Jf[:, None, None, None])))]
        return M, r, step_major

    t = 1
    while t <= T:
        tb = min(per, T - t + 1)
        pre = block(_draw_block(gens, Js, P, tb, 0, width), t) if Jmax <= chunk else None
        for s in range(tb):
            tt = t + s
            w = (H2 @ b[:, :, None])[:, :, 0]
            w -= c
            g = np.zeros((K, P))
            blocks = [(pre, s)] if pre is not None else ((block(_draw_block(gens, Js, P, 1, lo, width), tt), 0)
                                                         for lo in ranges)
            for (M, r, l1), i in blocks:
                g += (M[i] @ w[:, :, None])[:, :, 0]
                g += r[i]
                if l1 is not None:
                    bk = b[:, :, None]
                    A = bk + l1[0][i]
                    d = np.abs(bk + l1[1][i]).sum(axis=1)
                    d -= np.abs(A, out=A).sum(axis=1)
                    g += (l1[2][i] @ d[:, :, None])[:, :, 0] * (tt * tt)  # l1w/(u2t J) sum_j d_j nu2_j
            if probe is not None:
                probe[1](tt, g[probe[0]])
            b = b - alphas[:, tt - 1, None] * g
            if average:
                acc += b
        t += tb
    return acc / T if average else b


def quadratic_form(X, y, counts, q, v):
    """``H`` (K, P, P) and ``c`` (K, P) of each agent's ``F(b) = b^T H b - c^T b`` (+ the l1 part):
    ``H = X^T X / n_k + q I``, ``c = 2 X^T y / n_k + v`` (``counts`` = ``n_k = 1/w_k``)."""
    nk = np.asarray(counts, dtype=float)[:, None, None]
    H = (np.swapaxes(X, 1, 2) @ X) / nk + np.asarray(q, dtype=float)[:, None, None] * np.eye(X.shape[2])
    c = 2.0 * np.einsum("knp,kn->kp", X, y) / nk[:, :, 0] + np.asarray(v, dtype=float)
    return H, c


def pad_samples(a: np.ndarray, n: int) -> np.ndarray:
    """Per-sample array ``a`` (K, n_a, ...) zero-padded to ``n`` samples (a zero row adds nothing to ``X^T X``,
    ``X^T y`` or a weighted loss with weight 0): several runs' agents stacked along the agent axis."""
    if a.shape[1] == n:
        return a
    return np.concatenate([a, np.zeros((a.shape[0], n - a.shape[1], *a.shape[2:]))], axis=1)
