"""The linear-Gaussian model of a protocol, and what one observer sees of it (issue 29).

Many decentralized protocols are linear in the messages they exchange: each round an agent sends a linear
function of what it received, plus its own data-dependent *contribution* and fresh Gaussian noise (gossip
averaging, DPSGD on a graph, linearised ADMM with a coordinator). Per coordinate of the released vectors (every
coordinate follows the same maps with independent noise), such a protocol is

    x(t) = F(t) x(t-1) + E(t) u(t),   u_k(t) = c_k(t) + z_k(t),   z_k(t) ~ N(0, sigma_k(t)^2),   x(0) = 0,
    messages of round t:  y(t) = H(t) x(t),  message j sent by ``senders[j]`` to the parties ``R(t)[:, j]``,

with ``x`` the protocol's state (released values, duals, a coordinator's average, ...), ``c_k(t)`` agent ``k``'s
contribution (e.g. its clipped gradient step, l2 sensitivity ``Delta_k(t)``) and ``z_k(t)`` the noise its
mechanism draws. Parties are the agents ``0..N-1`` and, when there is one, the coordinator ``N``.

:class:`LinearProtocol` holds these maps as plain data (callables of ``t``, sparse matrices). :func:`observer_view`
builds the matrix ``B`` of the messages an observer set receives as a function of every input ``u_k(s)``:

    view = B u,   B[(j, t), (k, s)] = h_j(t)^T F(t) ... F(s+1) E(s)[:, k]   (s <= t),

by the adjoint recursion ``Psi_s = [H_obs(s); Psi_{s+1} F(s+1)]``, ``B[:, s] = Psi_s E(s)``: one sparse product per
round, never a dense ``(N T) x (N T)`` matrix. The accountant of :mod:`privdist.privacy.pairwise.network_dp` turns ``B`` and
the noise into the privacy loss of the observer's whole view.

References:
    Cyffers, Even, Bellet & Massoulie 2022 (Muffliato, pairwise network DP); Koskela & Kulkarni 2025 (linear-systems
    view of gossip averaging, arXiv 2505.19969); Bellet, Cyffers et al. 2025 (decentralized learning as a matrix
    mechanism, arXiv 2510.17480).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..._checks import check_int
from ...errors import ShapeMismatchError, ValidationError

__all__ = ["LinearProtocol", "Messages", "ObserverView", "observer_view", "observer_ids", "observed_rows"]


@dataclass(frozen=True)
class Messages:
    """The messages of one round: rows ``H`` over the state, who sends each (``senders``, ``-1`` for the
    coordinator) and who receives it (``receivers``: 0/1, parties x messages)."""

    H: sp.csr_array
    senders: np.ndarray
    receivers: sp.csc_array


@dataclass(frozen=True)
class LinearProtocol:
    """A protocol's linear-Gaussian model (module docstring), per coordinate of its released vectors.

    Attributes:
        name: the algorithm it models.
        n_agents: ``N``.
        rounds: ``T``.
        n_state: dimension of ``x``.
        transition: ``t -> F(t)`` (``n_state x n_state``), ``t = 1..T``.
        inputs: ``t -> E(t)`` (``n_state x N``): where each agent's noisy input ``u_k(t)`` enters the state.
        messages: ``t -> Messages`` of round ``t``.
        sensitivity: ``(T, N)``: the l2 sensitivity ``Delta_k(t)`` of agent ``k``'s contribution in round ``t``
            (the one its release declares, enforced by clipping); the noise std is ``z_k(t) Delta_k(t)`` with the
            declared noise multiplier ``z_k(t)``.
        links: parties x parties 0/1, ``links[a, b] = 1`` when ``a`` receives a message of ``b`` (union over rounds):
            the communication graph whose distances the report uses.
        has_coordinator: party ``N`` is a coordinator (it has no input of its own).
        notes: the model's assumptions specific to the algorithm, for the report.
        time_invariant: ``transition``, ``inputs`` and ``messages`` are the same every round (gossip on a static
            graph): the accountant may then use the lag recursion of :mod:`privdist.privacy.pairwise.innovations`.
    """

    name: str
    n_agents: int
    rounds: int
    n_state: int
    transition: Callable[[int], sp.sparray]
    inputs: Callable[[int], sp.sparray]
    messages: Callable[[int], Messages]
    sensitivity: np.ndarray
    links: sp.csr_array
    has_coordinator: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    time_invariant: bool = False

    def __post_init__(self):
        check_int(self.n_agents, "n_agents", 1)
        check_int(self.rounds, "rounds", 1)
        check_int(self.n_state, "n_state", 1)
        sens = np.asarray(self.sensitivity, dtype=float)
        if sens.shape != (self.rounds, self.n_agents):
            raise ShapeMismatchError(f"sensitivity must have shape (rounds, n_agents) = "
                                     f"{(self.rounds, self.n_agents)}, got {sens.shape}")
        if not np.all(np.isfinite(sens)) or np.any(sens <= 0):
            raise ValidationError("sensitivity must be finite and > 0 for every agent and round")
        object.__setattr__(self, "sensitivity", sens)

    @property
    def n_parties(self) -> int:
        """Agents, plus the coordinator when there is one."""
        return self.n_agents + int(self.has_coordinator)

    def distances(self) -> np.ndarray:
        """Hop distances between parties in the undirected communication graph (``inf``: never connected)."""
        from scipy.sparse.csgraph import shortest_path

        g = sp.csr_array(self.links)
        g = ((g + g.T) > 0).astype(float)
        return shortest_path(g, directed=False, unweighted=True)


@dataclass(frozen=True)
class ObserverView:
    """The observer set's view as a function of the inputs: ``blocks[s]`` is ``B[:, s]`` restricted to the rows of
    rounds ``>= s + 1`` (``rows_from[s]`` onwards), shape ``(m - rows_from[s], N)``; ``m`` rows in all, ordered by
    round; ``rows_round`` is the round of each row."""

    blocks: list
    rows_from: np.ndarray
    rows_round: np.ndarray

    @property
    def m(self) -> int:
        return int(self.rows_round.size)


def observer_ids(protocol: LinearProtocol, observer) -> np.ndarray:
    """The parties of an observer: an int (one agent, or ``N`` for the coordinator), or a sequence of them (a
    colluding set).

    Raises:
        ValidationError: an id outside the parties, or an empty set.
    """
    ids = np.atleast_1d(np.asarray(observer, dtype=np.int64)).ravel()
    if ids.size == 0:
        raise ValidationError("an observer set needs at least one party")
    bad = ids[(ids < 0) | (ids >= protocol.n_parties)]
    if bad.size:
        what = "agents 0..N-1 and the coordinator N" if protocol.has_coordinator else "agents 0..N-1"
        raise ValidationError(f"observer {int(bad[0])} is not a party of this {protocol.name} protocol ({what}, "
                              f"N = {protocol.n_agents})")
    return np.unique(ids)


def observed_rows(protocol: LinearProtocol, members: np.ndarray) -> list:
    """Per round ``1..T``, the rows ``H`` (over the state) of the messages the observer set ``members`` receives
    from a non-member."""
    if protocol.time_invariant:  # the same messages every round
        return [_observed_rows(protocol, 1, members)] * protocol.rounds
    return [_observed_rows(protocol, t, members) for t in range(1, protocol.rounds + 1)]


def _observed_rows(protocol: LinearProtocol, t: int, members: np.ndarray) -> sp.csr_array:
    """Rows ``H`` of round ``t`` that a member receives from a non-member (own messages are functions of what
    the observer already knows)."""
    msg = protocol.messages(t)
    H = sp.csr_array(msg.H)
    if H.shape[1] != protocol.n_state:
        raise ShapeMismatchError(f"round {t}: messages have {H.shape[1]} state columns, the state has "
                                 f"{protocol.n_state}")
    recv = sp.csc_array(msg.receivers)
    if recv.shape != (protocol.n_parties, H.shape[0]):
        raise ShapeMismatchError(f"round {t}: receivers must be parties x messages = "
                                 f"{(protocol.n_parties, H.shape[0])}, got {recv.shape}")
    senders = np.asarray(msg.senders, dtype=np.int64)
    sender_party = np.where(senders < 0, protocol.n_agents, senders)
    seen = np.asarray(recv[members].sum(axis=0)).ravel() > 0
    keep = np.flatnonzero(seen & ~np.isin(sender_party, members))
    return H[keep]


def observer_view(protocol: LinearProtocol, observer) -> ObserverView:
    """``B``: every message the observer set receives from another party, in rounds ``1..T``, as a linear map of
    the inputs ``u`` (module docstring). Memory: ``m N T / 2`` floats for ``m`` observed messages.

    Args:
        protocol: the model.
        observer: see :func:`observer_ids`.

    Raises:
        ValidationError / ShapeMismatchError: a bad observer, or maps of the wrong shapes.
    """
    members = observer_ids(protocol, observer)
    T, N = protocol.rounds, protocol.n_agents
    obs = observed_rows(protocol, members)
    counts = np.array([o.shape[0] for o in obs])
    starts = np.concatenate([[0], np.cumsum(counts)])
    m = int(starts[-1])
    rows_round = np.repeat(np.arange(1, T + 1), counts)
    blocks: list = [None] * T
    psi = np.zeros((0, protocol.n_state))
    for s in range(T, 0, -1):
        if psi.shape[0]:
            F = sp.csr_array(protocol.transition(s + 1))
            psi = np.asarray((F.T @ psi.T).T)
        psi = np.vstack([obs[s - 1].toarray(), psi]) if counts[s - 1] else psi
        E = sp.csr_array(protocol.inputs(s))
        if E.shape != (protocol.n_state, N):
            raise ShapeMismatchError(f"round {s}: inputs must be n_state x N = {(protocol.n_state, N)}, got {E.shape}")
        blocks[s - 1] = np.asarray((E.T @ psi.T).T) if psi.shape[0] else np.zeros((0, N))
    return ObserverView(blocks, starts[:-1].astype(np.int64), rows_round)
