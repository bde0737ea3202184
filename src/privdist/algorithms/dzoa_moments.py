"""Large-``J`` sampler of D-ZOA's inner loop: the ``J``-pair average drawn from its exact first two moments.

For the papers' objective (spec §2.4(b))

    F(b) = b^T A b - c^T b + l1w ||b||_1 + const,   A = G / n + q I,  G = X^T X,  c = 2 X^T y / n + v,

one pair ``(nu1, nu2) = (x, z)`` of the two-point estimate at ``a = b + u1 x`` is, exactly for the quadratic part,

    g_j = z [z^T (w + 2 u1 A x) + u2 z^T A z] + l1w z [sum_p (|a_p + u2 z_p| - |a_p|) / u2],   w = 2 A b - c.

The l1 difference is ``sign(a_p) z_p`` unless ``|a_p| < u2 |z_p|`` (probability ``O(u2 / u1) = O(1 / (P^2 t))``); with
that smoothing ``g_j = z z^T h + u2 z (z^T A z)``, ``h = w + l1w sign(b + u1 x) + 2 u1 A x`` a function of ``x`` only,
and Gaussian moment identities (Isserlis) give, with ``s_p = E sign(b_p + u1 x_p) = erf(b_p / (sqrt(2) u1))`` and
``C = diag(2 phi(b_p / u1))`` (``E[sign(b_p + u1 x_p) x_p]``, Stein),

    m = E g_j = w + l1w s
    Sigma_h = Cov h = l1w^2 diag(1 - s^2) + 4 u1^2 A^2 + 2 u1 l1w (C A + A C)
    Cov g_j = (||m||^2 + tr Sigma_h) I + m m^T + 2 Sigma_h + u2^2 [((tr A)^2 + 2 tr A^2) I + 4 tr(A) A + 8 A^2].

The average of ``J`` i.i.d. pairs is then drawn as ``m + e / sqrt(J)`` with ``e`` Gaussian of covariance
``Cov g_j`` (central limit theorem). No factorisation per step: ``e`` is built as a sum of independent parts with
exactly that covariance (:func:`step_noise`),

    e = sqrt(||m||^2 + tr Sigma_h) xi1 + zeta m + sqrt(2) [l1w (C xi2 + sqrt(1 - s^2 - C^2) xi3) + 2 u1 A xi2]
        + u2 E6^{1/2} xi4,

(``xi1..xi4 ~ N(0, I_P)``, ``zeta ~ N(0, 1)``; ``l1w (C xi2 + sqrt(1 - s^2 - C^2) xi3) + 2 u1 A xi2`` has covariance
``Sigma_h`` because ``(C xi2 + ..., xi2)`` has the joint covariance of ``(sign(b + u1 x) - s, x)``, and
``1 - s^2 - C^2 >= 0`` by Cauchy-Schwarz; ``E6`` the ``A``-only matrix of ``u2^2`` above, factorised once per call).
The iterate-independent parts (``2 sqrt(2) u1 A xi2 + u2 E6^{1/2} xi4`` of every step) are formed for all ``T`` steps
at once; each agent draws its ``T x (4P + 1)`` normals in one call. Per step only ``O(P^2)`` work remains (``A b``),
done for all agents in the same array operations (one ``(P, P) x (P,)`` product per agent: each agent's numbers do
not depend on the other agents of the call, :func:`moment_inner_loops`). It is an approximation in
two places, the CLT for the average and the smoothed kink, so it is only used for ``J_k`` at or above a threshold
validated against the exact sampler (``tests/algorithms/test_algorithms_dzoa_moments.py``: two-sample tests of the
release distribution at ``J = 10^2, 10^3, 10^4`` and of final NE over trials), and every run records which agents
used it (``run_info``).

References:
    S1 (7)-(9), Alg. 1; spec §2.4(b), §2.9; issue 14 item 5.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

from .dzoa_inner import quadratic_form

__all__ = ["MOMENT_J_THRESHOLD", "MOMENT_BUDGET", "pair_moments", "step_noise", "moment_inner_loops"]

#: Smallest ``J_k`` for which ``inner_sampler="auto"`` uses the moment sampler: the smallest validated ``J``
#: (``tests/algorithms/test_algorithms_dzoa_moments.py``: release distribution and final NE against the exact sampler
#: at ``J = 30`` and ``10^2`` in the fast suite, with more power at ``30`` and ``10^2`` and at ``10^3``, ``10^4``
#: slow-marked, plus S0's own configuration at ``J = 30``, slow). Below it the CLT for one step's average is not
#: validated and the exact sampler runs. Lowered from 100 to 30 in issue 14 (S0's and S1 Fig 1's ``J``).
MOMENT_J_THRESHOLD = 30

#: Most draws (``K T (4P + 1)`` normals) held at once: calls with more agents run in slices of agents.
MOMENT_BUDGET = 1 << 21

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _quad_parts(X, y, counts, q, v):
    """``A`` (K, P, P), ``c`` (K, P) of ``F``'s quadratic part and the ``A``-only constants of the covariance."""
    P = X.shape[2]
    A, c = quadratic_form(X, y, counts, q, v)
    A2 = A @ A
    trA = np.trace(A, axis1=1, axis2=2)
    trA2 = np.trace(A2, axis1=1, axis2=2)
    E6 = ((trA**2 + 2.0 * trA2)[:, None, None] * np.eye(P) + 4.0 * trA[:, None, None] * A + 8.0 * A2)
    return A, c, A2, trA2, E6


def pair_moments(A, c, A2, trA2, E6, b, l1w: float, u1t: float, u2t: float):
    """Mean ``m`` (K, P) and covariance (K, P, P) of one pair's estimate ``g_j`` at iterates ``b`` (K, P)."""
    K, P = b.shape
    eye = np.eye(P)
    m = 2.0 * np.einsum("kpq,kq->kp", A, b) - c
    sig_h = 4.0 * u1t * u1t * A2
    tr_h = 4.0 * u1t * u1t * trA2
    if l1w:
        r = b / u1t
        s = erf(r / _SQRT2)
        C = 2.0 * _INV_SQRT_2PI * np.exp(-0.5 * r * r)
        m = m + l1w * s
        d = l1w * l1w * (1.0 - s * s)
        sig_h = sig_h + d[:, :, None] * eye + 2.0 * u1t * l1w * (C[:, :, None] * A + A * C[:, None, :])
        tr_h = tr_h + d.sum(axis=1) + 4.0 * u1t * l1w * np.einsum("kp,kpp->k", C, A)
    cov = ((m * m).sum(axis=1) + tr_h)[:, None, None] * eye + m[:, :, None] * m[:, None, :] + 2.0 * sig_h \
        + u2t * u2t * E6
    return m, cov


def step_noise(m, s2, C, a, xi, pre, l1w: float) -> np.ndarray:
    """``e`` (K, P) of one step, covariance ``Cov g_j`` of :func:`pair_moments` (module docstring).

    ``xi`` (K, 4P + 1): ``[xi1, xi2, xi3, xi4, zeta]`` of each agent; ``pre`` (K, P): the iterate-independent part
    ``2 sqrt(2) u1 A xi2 + u2 E6^{1/2} xi4``; ``s2 = s^2``, ``C`` the l1 terms (unused when ``l1w = 0``); ``a`` (K,)
    ``||m||^2 + tr Sigma_h``.
    """
    P = m.shape[1]
    e = np.sqrt(a)[:, None] * xi[:, :P]
    e += xi[:, 4 * P:] * m
    e += pre
    if l1w:
        d = 1.0 - s2
        d -= C * C
        e += (_SQRT2 * l1w) * (C * xi[:, P:2 * P] + np.sqrt(np.maximum(d, 0.0, out=d), out=d) * xi[:, 2 * P:3 * P])
    return e


# a diverging agent (a tuning grid's edge) overflows to inf/nan, which the runner's metric guard records as divergence
# (DivergenceError); numpy's overflow warnings for it were noise in ``reproduce``'s output. Rows are independent, so
# the other agents' numbers are untouched.
@np.errstate(over="ignore", invalid="ignore")
def moment_inner_loops(X, y, counts, q, v, l1w: float, Js, T: int, alphas, u1: float, gens,
                       average: bool = False) -> np.ndarray:
    """D-ZOA's inner loop of ``K`` agents with each step's ``J_k``-pair average drawn from its moments.

    Same arguments as :func:`~privdist.algorithms.dzoa_inner.squared_inner_loops` (``counts`` = ``1/w_k``); each
    agent draws ``standard_normal((T, 4P + 1))`` from its own generator (one row per step).

    Row independent (batched trials, issue 14): every operation is element-wise per agent, a sum over one agent's
    ``P`` coordinates, or a product of one agent's matrices whose shapes do not depend on the other agents
    (``(P, P) x (P,)`` per step, ``(T, P) x (P, P)`` per call), so agent ``k``'s numbers are bit for bit those of a
    call with any other agents. Calls with more than ``max(1, MOMENT_BUDGET // (T (4P + 1)))`` agents run in slices of
    agents (memory bound).

    Returns:
        (K, P) final (or averaged) iterates.
    """
    K, _, P = X.shape
    cap = max(1, MOMENT_BUDGET // (T * (4 * P + 1)))
    if K > cap:
        parts = [np.asarray(a) for a in (X, y, counts, q, v, Js, alphas)]
        return np.concatenate([moment_inner_loops(*[a[i:i + cap] for a in parts[:5]], l1w, parts[5][i:i + cap], T,
                                                  parts[6][i:i + cap], u1, gens[i:i + cap], average)
                               for i in range(0, K, cap)])
    A, c, A2, trA2, E6 = _quad_parts(X, y, counts, q, v)
    E6h = np.linalg.cholesky(E6)
    Z = np.empty((K, T, 4 * P + 1))
    for k, g in enumerate(gens):
        g.standard_normal(out=Z[k])  # the same numbers as standard_normal((T, 4P + 1))
    ts = np.arange(1, T + 1, dtype=float)
    u1s, u2s = u1 / ts, u1 / (P * P * ts * ts)
    # iterate-independent noise of every step: 2 sqrt(2) u1t A xi2 + u2t E6^{1/2} xi4, shape (K, T, P); the
    # products are one (T, P) x (P, P) product per agent
    pre = (2.0 * _SQRT2) * u1s[None, :, None] * np.matmul(Z[:, :, P:2 * P], np.swapaxes(A, 1, 2)) \
        + u2s[None, :, None] * np.matmul(Z[:, :, 3 * P:4 * P], np.swapaxes(E6h, 1, 2))
    # ||m||^2 + tr Sigma_h = sum_p [m_p^2 - l1w^2 s_p^2 + 4 u1t l1w A_pp C_p] + (4 u1t^2 tr A^2 + l1w^2 P)
    a0 = 4.0 * u1s[:, None] ** 2 * trA2[None, :] + l1w * l1w * P  # (T, K)
    diag_a = np.einsum("kpp->kp", A)
    r_scale = 1.0 / (_SQRT2 * u1s)  # b / (sqrt(2) u1t)
    A2x = 2.0 * A
    step = np.asarray(alphas, dtype=float).T  # (T, K)
    noise_step = step / np.sqrt(np.asarray(Js, dtype=float))[None, :]
    c0, l1w2 = 2.0 * _INV_SQRT_2PI, l1w * l1w
    b, acc = np.zeros((K, P)), np.zeros((K, P))
    s2 = C = None
    for t in range(T):
        m = np.matmul(A2x, b[:, :, None])[:, :, 0]  # one (P, P) x (P,) product per agent
        m -= c
        if l1w:
            r = b * r_scale[t]
            C = np.exp(-(r * r))
            C *= c0
            s = erf(r)
            m += l1w * s
            s2 = s * s
            qa = m * m
            qa -= l1w2 * s2
            qa += ((4.0 * l1w) * u1s[t]) * diag_a * C
        else:
            qa = m * m
        e = step_noise(m, s2, C, qa.sum(axis=1) + a0[t], Z[:, t], pre[:, t], l1w)
        b = b - step[t][:, None] * m - noise_step[t][:, None] * e
        if average:
            acc += b
    return acc / T if average else b
