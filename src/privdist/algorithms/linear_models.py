"""Linear-Gaussian models of privdist's gossip and coordinator protocols, for pairwise accounting (issue 29).

Each function returns the :class:`~privdist.privacy.pairwise.linear_protocol.LinearProtocol` of one algorithm on one network
for a number of rounds: how its released messages depend on every agent's noisy contribution. The contribution of
an agent is the data-dependent part of its update with the sensitivity its mechanism declares; everything else is
the linear mixing the algorithm applies to released values. Models exist for:

* gossip with a mixing matrix: **DPSGD** on a static network (Metropolis weights) or a time-varying directed one
  (``W(t)``), spec §6.6: ``q(t) = W(t) q(t-1) + u(t)``, ``u_k(t) = -alpha_t d_k(q_k(t-1)) + e_k(t)``; the message
  ``q_k(t)`` reaches every ``l != k`` with ``W(t+1)[l, k] > 0`` (the receivers of the next round, the final round's
  release included);
* **DP-ADMM** (spec §6.1): agents' releases ``w~_i(t) = a_t (rho z + lambda_i + w~_i(t-1)/eta_t) + u_i(t)``,
  ``a_t = 1/(rho + 1/eta_t)``, gathered by the coordinator, which broadcasts ``z(t)`` and scatters ``lambda_i(t)``.

Not modelled (their per-pair column is the local-DP bound, see ``docs/network_dp.md``): D-ZOA + Gaussian (its
local step is an argmin of a non-quadratic objective, not affine in the received messages), DPDO-NC (Laplace noise
and a projected mirror step; no exact accountant for sums of Laplace noise here), the sharing and vertical protocols
(parties' messages go to a coordinator that sees them all: pairwise equals local DP there).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..privacy.pairwise.linear_protocol import LinearProtocol, Messages

__all__ = ["mixing", "gossip_protocol", "dpsgd_protocol", "dpadmm_protocol"]

_GRADIENT_NOTE = ("{name}: an agent's contribution is its clipped gradient step, taken at its own last release; the "
                  "model treats the other agents' gradients as fixed, so their dependence on the target through "
                  "messages the observer does not see is not accounted (exact for gradients that do not depend on "
                  "the iterate)")


def mixing(network, t: int) -> sp.csr_array:
    """``W(t)``: the weights of a time-varying network, the Metropolis weights of a static one (the ``MIX`` rule)."""
    if hasattr(network, "weights"):
        return sp.csr_array(network.weights(t))
    return sp.csr_array(network.metropolis_weights())


def _receivers(W: sp.csr_array) -> sp.csc_array:
    """Parties x messages: ``l`` receives ``k``'s message when ``W[l, k] > 0``, ``l != k``."""
    R = sp.coo_array(W)
    keep = (R.data > 0) & (R.row != R.col)
    return sp.csc_array((np.ones(int(keep.sum())), (R.row[keep], R.col[keep])), shape=R.shape)


def gossip_protocol(name: str, network, rounds: int, sensitivity: np.ndarray, notes=()) -> LinearProtocol:
    """``q(t) = W(t) q(t-1) + u(t)`` with every ``q_k(t)`` sent to the receivers of ``W(t+1)``.

    Args:
        name: the algorithm.
        network: a static ``Network`` or a ``TimeVaryingNetwork``.
        rounds: ``T``.
        sensitivity: ``(T, N)`` l2 sensitivity of each agent's contribution per round.
        notes: model assumptions for the report.
    """
    N = network.n_agents
    eye = sp.identity(N, format="csr")
    static = not hasattr(network, "weights")
    cache: dict[int, sp.csr_array] = {}

    def W(t):
        key = 0 if static else t
        if key not in cache:
            cache[key] = mixing(network, t)
        return cache[key]

    received: dict[int, Messages] = {}

    def messages(t):
        key = 0 if static else t
        if key not in received:
            received[key] = Messages(eye, np.arange(N), _receivers(W(t + 1)))
        return received[key]

    links = sp.csr_array((N, N))
    for t in [2] if static else range(2, rounds + 2):  # who hears whom, over the run
        links = links + _receivers(W(t))
    return LinearProtocol(name, N, rounds, N, W, lambda t: eye, messages, sensitivity,
                          sp.csr_array((links > 0).astype(float)), False, tuple(notes), time_invariant=static)


def dpsgd_protocol(algorithm, problem, network, rounds: int) -> LinearProtocol:
    """DPSGD's model: contribution ``-alpha_t d_k``, sensitivity ``Delta_k(t) = 2 alpha_t c1 w_k`` (spec §6.6)."""
    t = np.arange(1, rounds + 1, dtype=float)
    alpha = algorithm.alpha0 / np.sqrt(t)
    w = np.asarray(problem.sample_weight, dtype=float)
    sens = 2.0 * algorithm.c1 * alpha[:, None] * w[None, :]
    return gossip_protocol("dpsgd", network, rounds, sens, (_GRADIENT_NOTE.format(name="dpsgd"),))


def dpadmm_protocol(algorithm, problem, network, rounds: int) -> LinearProtocol:
    """DP-ADMM's model: state ``(w~, lambda, z)``; round ``t`` is the agents' step then the coordinator's (its
    ``z`` and ``lambda`` reach the agents in round ``t + 1``); sensitivity ``Delta_k(t) = 2 c1 w_k a_t``."""
    N, rho = network.n_agents, float(algorithm.rho)
    n = 2 * N + 1
    iw, il, iz = np.arange(N), N + np.arange(N), 2 * N
    # coordinator (spec §6.1): w' = w, z' = mean(w) - sum(lambda)/(N rho), lambda_i' = lambda_i - rho w_i + rho z'
    C = sp.lil_array((n, n))
    C[iw, iw] = 1.0
    C[iz, iw] = 1.0 / N
    C[iz, il] = -1.0 / (N * rho)
    C = C.toarray()
    C[np.ix_(il, iw)] = rho / N - rho * np.eye(N)
    C[np.ix_(il, il)] = np.eye(N) - 1.0 / N
    C = sp.csr_array(C)
    E0 = sp.csr_array((np.ones(N), (iw, np.arange(N))), shape=(n, N))
    inputs = sp.csr_array(C @ E0)

    def a(t):
        return 1.0 / (rho + np.sqrt(t) / algorithm.eta0)

    def transition(t):
        A = sp.lil_array((n, n))
        A[iw, iz] = a(t) * rho
        A[iw, il] = a(t)
        A[iw, iw] = a(t) * np.sqrt(t) / algorithm.eta0
        A[il, il] = 1.0
        A[iz, iz] = 1.0
        return sp.csr_array(C @ sp.csr_array(A))

    rows = sp.csr_array((np.ones(2 * N + 1), (np.arange(2 * N + 1), np.concatenate([iw, [iz], il]))), shape=(n, n))
    senders = np.concatenate([np.arange(N), -np.ones(N + 1, dtype=np.int64)])
    recv = sp.lil_array((N + 1, 2 * N + 1))
    recv[N, np.arange(N)] = 1.0          # w~_k -> coordinator
    recv[np.arange(N), N] = 1.0          # z -> every agent
    recv[np.arange(N), N + 1 + np.arange(N)] = 1.0  # lambda_k -> agent k
    msgs = Messages(rows, senders, sp.csc_array(recv))
    links = sp.lil_array((N + 1, N + 1))
    links[N, np.arange(N)] = 1.0
    links[np.arange(N), N] = 1.0
    w = np.asarray(problem.sample_weight, dtype=float)
    sens = 2.0 * algorithm.c1 * a(np.arange(1, rounds + 1, dtype=float))[:, None] * w[None, :]
    return LinearProtocol("dpadmm", N, rounds, n, transition, lambda t: inputs, lambda t: msgs, sens,
                          sp.csr_array(links), True, (_GRADIENT_NOTE.format(name="dpadmm"),))
