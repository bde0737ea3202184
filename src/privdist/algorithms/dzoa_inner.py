"""D-ZOA's two-point zeroth-order inner loop, vectorised over the ``2 J`` points of a step (spec §2.4(b), §2.9).

:func:`zo_gradient` / :func:`zo_inner_loop` take any ``value_diff(A, H, u2) = [F(A + u2 H) - F(A)] / u2``
(columns are points). :func:`squared_inner_loops` is the fast path of the papers' objective
``F_k(b) = 1/n_k ||X_k b - y_k||^2 + l1w ||b||_1 + q_k ||b||^2 - v_k^T b`` for many agents at once (the agents of
several independent trials: issue 14's batched runs): everything that does not depend on the iterate is formed
for a block of steps at once (``H nu2`` with ``H = X^T X / n_k + q_k I``, so no product with ``X`` remains),
leaving per step ``O(P J)`` element-wise work done for all agents of a group in the same array operations. Each
agent consumes its generator exactly as :func:`zo_inner_loop` does (``standard_normal`` of shape ``(2, P, c)`` per
step and chunk, drawn in blocks that give the same numbers), so both produce the same iterates up to rounding; and
each agent's numbers are bit for bit independent of the other agents in the call (row independence, see
:func:`squared_inner_loops`). :func:`squared_inner_loop` is the one-agent form.
"""

from __future__ import annotations

import numpy as np

__all__ = ["zo_gradient", "zo_inner_loop", "squared_diff", "generic_diff", "squared_inner_loop", "squared_inner_loops",
           "quadratic_form", "BLOCK_BUDGET"]


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


#: Elements of one precomputed (steps, agents, P, pairs) array of :func:`squared_inner_loops` (a block holds at most
#: about 10 such arrays, 5 MB). At ``P = 10``, ``J = 30``: 43 of ``T = 100`` steps per block at ``K = 5``; groups of at
#: most 218 agents, one step per block at that size. Larger blocks are slower here: each call's fresh arrays are
#: paid in page faults on first touch (measured at ``K = 5``: ``2^18``, all 100 steps in one block, 10-35% slower).
BLOCK_BUDGET = 1 << 16

#: Per-step cost of one more group of agents in :func:`squared_inner_loops`, in padded (agent, coordinate, pair)
#: elements (about 20 array operations of ~2 us against ~10 ns of per-step work per element; only speed depends
#: on it, never the numbers).
_GROUP_OVERHEAD = 4096


def squared_inner_loops(X, y, counts, q, v, l1w: float, Js, T: int, alphas, u1: float, gens, chunk: int = 4096,
                        probe=None, average: bool = False, budget: int = BLOCK_BUDGET) -> np.ndarray:
    """:func:`zo_inner_loop` of ``K`` agents at once for ``F_k(b) = 1/n_k ||X_k b - y_k||^2 + l1w ||b||_1
    + q_k ||b||^2 - v_k^T b`` (the papers' squared loss; spec §2.4(b)).

    The function differences are exact for this quadratic-plus-l1 ``F``: with ``F(b) = b^T H b - c^T b`` (+ the l1
    part) the difference of pair ``j`` is ``d_j = w(b)^T nu2_j + u1 a1_j + u2 a2_j (+ l1 part)``, ``w(b) = 2 H b - c``,
    ``a1_j = 2 nu1_j^T H nu2_j``, ``a2_j = nu2_j^T H nu2_j``. The iterate-independent ``u1 a1 + u2 a2`` of a block of
    steps are formed at once (``H nu2`` by one small product per agent and step); per step remains, with an l1 part,
    ``O(P J)`` element-wise work (every pair's ``d_j``, then ``g = 1/J sum_j d_j nu2_j``) and without one ``O(P^2)``
    (``g = 1/J (M w(b) + r)``, ``M = sum_j nu2_j nu2_j^T``, ``r = sum_j (u1 a1_j + u2 a2_j) nu2_j`` formed with the
    block), done for all agents of a group in the same array operations. Every agent consumes its own generator
    exactly as :func:`zo_inner_loop` does (``standard_normal((2, P, c))`` per step and chunk of ``c <= chunk``
    pairs, drawn as ``standard_normal((tb, 2, P, c))`` for ``tb`` steps at once when ``J_k <= chunk``: the same
    numbers), so the iterates agree with it up to rounding (a different association of the same terms).

    Row independence (batched trials, issue 14): agent ``k``'s numbers do not depend on the other agents of the
    call, nor on the grouping, the block size or ``budget``: bit for bit, not only up to rounding. Agents run in
    groups of similar ``J_k`` (:func:`_groups`: speed only), their pairs zero-padded to the group's width (at least
    2); every operation is element-wise per agent, a matrix product whose shape depends on one agent alone
    (:func:`_per_agent`: ``H nu2`` as ``(P, P) x (P, c_k)``, ``M`` and ``r`` over the agent's own ``c_k`` pairs,
    ``H b`` as ``(P, P) x (P,)``, ``X^T X`` over its own rows; a BLAS product's entries can change with its shape,
    not with where its operands sit in memory), or a sum in index order over a leading array axis (:func:`_sum0`:
    over coordinates, pairs and chunks), to which the padding's zeros add exactly nothing.
    ``tests/algorithms/test_algorithms_dzoa_batch.py`` checks it (an agent's result alone, among other agents and
    at other budgets: exactly equal).

    Args:
        X, y: (K, n, P) and (K, n), rows beyond ``counts[k]`` zero.
        counts: (K,) ``n_k = 1/w_k`` (samples under the mean loss, 1 under the sum loss); q: (K,); v: (K, P); l1w: l1 weight; Js: (K,) pairs per step.
        T: steps; alphas: (K, T) step sizes; u1: smoothing; gens: K generators.
        chunk: most pairs per step drawn and processed at once.
        probe: optional ``(k, probe(t, g))`` called with agent ``k``'s estimate of each step.
        average: return the running averages of the iterates instead of the last ones.
        budget: elements of one precomputed (steps, agents, P, max(pairs, P)) array: at most
            ``max(1, budget // (P max(width, P)))`` agents per group and ``max(1, budget // (K_g P max(width, P)))``
            steps per block, so a block's memory (about ``10 budget`` doubles) does not grow with ``K``.

    Returns:
        (K, P) final (or averaged) iterates.
    """
    K, n, P = X.shape
    Js = np.asarray(Js).astype(int)
    H, c = quadratic_form(X, y, counts, q, v)  # every product with X nu goes through X^T X (P-space)
    alphas = np.asarray(alphas, dtype=float)
    ts = np.arange(1, T + 1, dtype=float)
    u1s, u2s = u1 / ts, u1 / (P * P * ts * ts)
    out = np.empty((K, P))
    for g in _groups(Js, P, chunk, budget):
        pr = None
        if probe is not None and probe[0] in g:
            pr = (int(np.flatnonzero(g == probe[0])[0]), probe[1])
        out[g] = _group_loops(H[g], c[g], l1w, Js[g], T, alphas[g], u1s, u2s, [gens[i] for i in g], chunk, pr,
                              average, budget)
    return out


def _width(J: int, chunk: int) -> int:
    """Array width of a group whose largest ``J`` is ``J`` (at least 2: then no sum below runs over one element)."""
    return max(2, min(J, chunk))


def _groups(Js, P: int, chunk: int, budget: int) -> list:
    """Agents of one call in groups, each run by one loop: ascending ``J_k``, power-of-two buckets of ``J_k``
    merged while one group's padding costs less than another group's per-step overhead (:data:`_GROUP_OVERHEAD`),
    then split to at most ``max(1, budget // (P max(width, P)))`` agents. Only speed and memory depend on the
    grouping."""
    order = np.argsort(Js, kind="stable")
    keys = np.array([int(J - 1).bit_length() for J in Js[order]])
    groups = np.split(order, np.flatnonzero(np.diff(keys)) + 1)

    def work(g):
        J = int(Js[g].max())
        return len(g) * P * max(_width(J, chunk), P) * -(-J // chunk)

    merged = [groups[0]]
    for g in groups[1:]:
        both = np.concatenate([merged[-1], g])
        if work(both) <= work(merged[-1]) + work(g) + _GROUP_OVERHEAD:
            merged[-1] = both
        else:
            merged.append(g)
    out = []
    for g in merged:
        w = _width(int(Js[g].max()), chunk)
        cap = max(1, budget // (P * max(w, P)))
        out += [g[i:i + cap] for i in range(0, len(g), cap)]
    return out


def _sum0(x: np.ndarray) -> np.ndarray:
    """``x[0] + x[1] + ...`` in index order over axis 0 (C-contiguous ``x``), so zero slices appended at the end change
    nothing. numpy reduces a leading axis that way, element-wise over the trailing ones, unless a single trailing
    element is left (then it sums pairwise, in an order that depends on the length): accumulated instead."""
    return np.add.reduce(x, axis=0) if x[0].size > 1 else np.add.accumulate(x, axis=0)[-1]


def _draw_block(gens, cs, Z: np.ndarray) -> None:
    """``c_k`` pairs of ``tb`` steps for every agent into ``Z`` (K, tb, 2, P, width), zero-padded.

    Agent ``k`` draws ``standard_normal((tb, 2, P, c_k))`` from its own generator (nothing when ``c_k = 0``): the
    same numbers as ``tb`` consecutive per-step draws."""
    width = Z.shape[-1]
    if any(c != width for c in cs):
        Z.fill(0.0)
    for k, gen in enumerate(gens):
        if cs[k] == width:
            gen.standard_normal(out=Z[k])  # the same numbers as standard_normal((tb, 2, P, width)), no copy
        elif cs[k] > 0:
            Z[k, ..., :cs[k]] = gen.standard_normal(Z[k, ..., :cs[k]].shape)


def _per_agent(out, cs, width: int, product) -> None:
    """``out[idx] = product(idx, c, None)`` for the agents ``idx`` with ``c > 0`` pairs in the range (for all agents at
    once, ``product(slice(None), width, out)``, when every ``c_k`` is the width), the others' rows zero. So every
    agent's product has its own shape: a BLAS product's entries can change with its shape (zero-padded widths did
    with this OpenBLAS at ``P = 17, 50, 100``), not with where its operands sit in memory."""
    if np.all(cs == width):
        product(slice(None), width, out)
        return
    out.fill(0.0)
    for c in np.unique(cs[cs > 0]):
        idx = np.flatnonzero(cs == c)
        out[idx] = product(idx, int(c), None)


class _Block:
    """Work arrays of one block of ``tb <= per`` steps of a group, allocated once per group.

    The draws are copied once to a pair-last, agent-second-last layout (tb, 2, P, K, w), where element-wise
    operations run in long inner loops and every sum runs over a leading axis (:func:`_sum0`); ``H nu2`` (same
    layout) and ``a = u1 a1 + u2 a2`` (tb, K, w) are formed from it. With an l1 part a step needs every pair's
    difference: ``nu2`` also as (tb, w, K, P) and the offsets ``u1 nu1``, ``u1 nu1 + u2 nu2`` of a pair's two points
    from ``b`` (tb, 2, P, K, w). Without one ``sum_j d_j nu2_j = M w(b) + r`` with the iterate-independent
    ``M = sum_j nu2_j nu2_j^T`` and ``r = sum_j a_j nu2_j`` (one ``(P, c) x (c, P)`` and one ``(P, c) x (c,)``
    product per agent and step), leaving ``O(P^2)`` per step."""

    def __init__(self, K: int, P: int, w: int, per: int, l1: bool):
        self.l1 = l1
        self.Z, self.Zt = np.empty((K, per, 2, P, w)), np.empty((per, 2, P, K, w))
        self.HN2, self.V, self.a = np.empty((per, P, K, w)), np.empty((per, P, K, w)), np.empty((per, K, w))
        if l1:
            self.U, self.N2j = np.empty((per, 2, P, K, w)), np.empty((per, w, K, P))
            self.E, self.AB, self.G = np.empty((P, K, w)), np.empty((2, P, K, w)), np.empty((w, K, P))
        else:
            self.M, self.r = np.empty((K, per, P, P)), np.empty((K, per, P))

    def fill(self, gens, Js, lo: int, c_max: int, tb: int, H, u1b, u2b) -> None:
        """Draw the block's pairs (``min(c_max, J_k - lo)`` per agent and step) and form its iterate-independent
        arrays."""
        Z, Zt, HN2, V, a, w = self.Z[:, :tb], self.Zt[:tb], self.HN2[:tb], self.V[:tb], self.a[:tb], self.Z.shape[-1]
        cs = np.clip(np.minimum(c_max, Js - lo), 0, None)
        _draw_block(gens, cs, Z)
        np.copyto(Zt, Z.transpose(1, 2, 3, 0, 4))
        N1, N2, N2a = Zt[:, 0], Zt[:, 1], Z[:, :, 1]  # (tb, P, K, w) and agent first (K, tb, P, w)
        _per_agent(HN2.transpose(2, 0, 1, 3), cs, w,  # H nu2: (P, P) x (P, c) per agent and step
                   lambda idx, c, out: _pad(np.matmul(H[idx, None], N2a[idx, :, :, :c], out=out), w))
        np.multiply(N2, HN2, out=V)
        np.add.reduce(V, axis=1, out=a)  # a2 = nu2^T H nu2: sums over coordinates in index order (K w > 1)
        a *= u2b[:, None, None]
        np.multiply(N1, HN2, out=V)
        a1 = np.add.reduce(V, axis=1)  # a1 / 2 = nu1^T H nu2
        a1 *= 2.0 * u1b[:, None, None]
        a += a1
        if self.l1:
            np.copyto(self.N2j[:tb], N2.transpose(0, 3, 2, 1))
            U = self.U[:tb]
            np.multiply(N1, u1b[:, None, None, None], out=U[:, 0])
            np.multiply(N2, u2b[:, None, None, None], out=U[:, 1])
            U[:, 1] += U[:, 0]
        else:
            aa = a.transpose(1, 0, 2)  # (K, tb, w)
            _per_agent(self.M[:, :tb], cs, w, lambda idx, c, out: _gram(N2a[idx, :, :, :c], out))
            _per_agent(self.r[:, :tb, :, None], cs, w,
                       lambda idx, c, out: np.matmul(N2a[idx, :, :, :c], aa[idx, :, :c, None], out=out))

    def step_sum(self, s: int, b, wv, coef: float) -> np.ndarray:
        """``sum_j d_j nu2_j`` (K, P) of slot ``s`` at ``b`` (K, P), ``wv = w(b)`` (K, P), ``coef = l1w / u2``."""
        if not self.l1:
            g = np.matmul(self.M[:, s], wv[:, :, None])[:, :, 0]  # one (P, P) x (P,) product per agent
            g += self.r[:, s]
            return g
        E, AB, G = self.E, self.AB, self.G
        np.multiply(self.Zt[s, 1], wv.T[:, :, None], out=E)
        d = _sum0(E)  # w(b)^T nu2_j, (K, w)
        d += self.a[s]
        # l1w sum_p (|b + u1 nu1 + u2 nu2| - |b + u1 nu1|) / u2
        np.add(self.U[s], b.T[:, :, None], out=AB)
        np.abs(AB, out=AB)
        np.subtract(AB[1], AB[0], out=AB[1])
        dl = _sum0(AB[1])
        dl *= coef
        d += dl
        np.multiply(self.N2j[s], d.T[:, :, None], out=G)
        return _sum0(G)


def _gram(x, out=None):
    """``x x^T`` over the last two axes, always from one buffer: numpy then takes BLAS's symmetric product (syrk),
    whose entries differ from a general product of two buffers holding the same numbers."""
    return np.matmul(x, np.swapaxes(x, -1, -2), out=out)


def _pad(x, w: int):
    """``x`` (..., c) zero-padded to (..., w)."""
    if x.shape[-1] == w:
        return x
    out = np.zeros((*x.shape[:-1], w))
    out[..., :x.shape[-1]] = x
    return out


def _group_loops(H, c, l1w: float, Js, T: int, alphas, u1s, u2s, gens, chunk: int, probe, average: bool,
                 budget: int) -> np.ndarray:
    """:func:`squared_inner_loops` of one group (all ``T`` steps)."""
    K, P = c.shape
    Jmax = int(Js.max())
    c_max = min(Jmax, chunk)  # pairs of a step drawn at once (a chunk)
    w = _width(Jmax, chunk)
    chunked = Jmax > chunk
    per = 1 if chunked else min(T, max(1, budget // (K * P * max(w, P))))
    H2, Jf = 2.0 * H, Js.astype(float)[:, None]
    coef = l1w / u2s  # d_j's l1 part: l1w sum_p (|b + u1 nu1 + u2 nu2| - |b + u1 nu1|) / u2
    blk = _Block(K, P, w, per, bool(l1w))
    b, acc = np.zeros((K, P)), np.zeros((K, P))
    t = 1
    while t <= T:
        tb = 1 if chunked else min(per, T - t + 1)
        if not chunked:
            blk.fill(gens, Js, 0, c_max, tb, H, u1s[t - 1:t - 1 + tb], u2s[t - 1:t - 1 + tb])
        for s in range(tb):
            i = t - 1 + s
            wv = np.matmul(H2, b[:, :, None])[:, :, 0]  # w(b) = 2 H b - c: a (P, P) x (P,) product per agent
            wv -= c
            if chunked:
                g = None
                for lo in range(0, Jmax, c_max):
                    blk.fill(gens, Js, lo, c_max, 1, H, u1s[i:i + 1], u2s[i:i + 1])
                    gp = blk.step_sum(0, b, wv, coef[i])
                    g = gp if g is None else np.add(g, gp, out=g)  # chunk by chunk: zero chunks add nothing
            else:
                g = blk.step_sum(s, b, wv, coef[i])
            g /= Jf
            if probe is not None:
                probe[1](i + 1, g[probe[0]])
            b = b - alphas[:, i:i + 1] * g
            if average:
                acc += b
        t += tb
    return acc / T if average else b


def quadratic_form(X, y, counts, q, v):
    """``H`` (K, P, P) and ``c`` (K, P) of each agent's ``F(b) = b^T H b - c^T b`` (+ the l1 part):
    ``H = X^T X / n_k + q I``, ``c = 2 X^T y / n_k + v`` (``counts`` = ``n_k = 1/w_k``).

    Row independent, also of zero rows appended to ``X_k, y_k`` (batched runs pad their data to one ``n``): the
    products run per agent over its rows up to the last nonzero one (agents with as many rows share one call)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    K, n, P = X.shape
    nz = np.any(X != 0, axis=2) | (y != 0)
    rows = np.where(nz.any(axis=1), n - np.argmax(nz[:, ::-1], axis=1), 0)
    G, Xy = np.zeros((K, P, P)), np.zeros((K, P))
    for r in np.unique(rows):
        if r == 0:
            continue
        g = np.flatnonzero(rows == r)
        XgT = np.swapaxes(X[g, :r], 1, 2)
        G[g] = _gram(XgT)
        Xy[g] = np.matmul(XgT, y[g, :r, None])[:, :, 0]
    nk = np.asarray(counts, dtype=float)[:, None, None]
    H = G / nk + np.asarray(q, dtype=float)[:, None, None] * np.eye(P)
    c = 2.0 * Xy / nk[:, :, 0] + np.asarray(v, dtype=float)
    return H, c
