"""Time-varying directed networks with doubly stochastic weights, the setting of DPDO-NC (spec §5).

At time ``t = 1, 2, ...`` node ``i`` mixes ``z_t^i = sum_j a_ij(t) q_t^j``; ``a_ij(t) > 0`` iff ``j`` can send to ``i``
(rows are receivers, spec §5.2). A :class:`TimeVaryingNetwork` is a finite set of weight matrices and a schedule
saying which one is used at each ``t`` (STYLE #12: the schedule is a pure function of ``t``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._checks import check_int
from ..errors import NetworkShapeError, NotBStronglyConnectedError, UnknownNameError, ValidationError
from .checks import check_b_strongly_connected, check_doubly_stochastic, is_strongly_connected
from .graph import Network

__all__ = ["SCHEDULES", "TimeVaryingNetwork", "s4_matrices", "random_time_varying"]

SCHEDULES: tuple[str, ...] = ("cyclic", "random")
"""Switching rules accepted by :class:`TimeVaryingNetwork`."""


class TimeVaryingNetwork:
    """A sequence of doubly stochastic (possibly non-symmetric) weight matrices and a switching schedule.

    Schedules (AMB-O2):

    * ``"cyclic"``: ``W(t) = matrices[(t - 1) mod m]`` (S4's ``A_1 -> A_2 -> A_3 -> A_1 ...``). ``B`` defaults to
      ``m`` and every cyclic window of ``B`` consecutive matrices is checked to have a strongly connected union.
    * ``"random"``: ``W(t) = matrices[k_t]`` with ``k_t`` drawn uniformly by ``numpy.random.default_rng([seed, t])``,
      so any ``t`` can be asked in any order and gives the same answer. The constructor checks that the union of
      all matrices is strongly connected (otherwise no ``B`` can work); :meth:`check_b_strongly_connected_until`
      checks the realised windows up to a horizon.

    Zero diagonals are allowed (S4's ``A_2``, AMB-O7). The object is immutable; :meth:`weights` returns copies.

    Args:
        matrices: non-empty sequence of ``n x n`` doubly stochastic matrices (dense or ``scipy.sparse``).
        schedule: ``"cyclic"`` or ``"random"``.
        B: window length of B-strong connectivity (``>= 1``); default ``m`` for ``"cyclic"``, ``None`` (not
            fixed) for ``"random"``.
        seed: integer ``>= 0``, required by ``"random"``; ignored by ``"cyclic"``.
        tol: tolerance of the row/column sums.

    Raises:
        ValidationError: no matrix, missing or invalid ``seed``/``B``.
        UnknownNameError: unknown ``schedule``.
        NetworkShapeError: matrices not square or of different shapes.
        NotDoublyStochasticError: a matrix is not doubly stochastic.
        NotBStronglyConnectedError: the schedule is not B-strongly connected (cyclic), or the union of all
            matrices is not strongly connected (random).

    References:
        spec §5.1, §5.2, §5.5, §5.8; AMB-O2, AMB-O7. Zhou & Li, "Privacy-Preserving Distributed Online Mirror
        Descent for Nonconvex Optimization" (S4), Assumptions on ``A(t)`` and ``G(t)``.
    """

    __slots__ = ("_mats", "_schedule", "_B", "_seed")

    def __init__(
        self,
        matrices: Sequence[Any],
        schedule: str = "cyclic",
        B: int | None = None,
        seed: int | None = None,
        *,
        tol: float = 1e-10,
    ) -> None:
        if sp.issparse(matrices) or (isinstance(matrices, np.ndarray) and matrices.ndim == 2):
            raise ValidationError("matrices must be a sequence of weight matrices; use TimeVaryingNetwork.static(W)")
        mats = [check_doubly_stochastic(W, tol=tol, name=f"matrices[{k}]") for k, W in enumerate(matrices)]
        if not mats:
            raise ValidationError("a TimeVaryingNetwork needs at least one weight matrix")
        for k, W in enumerate(mats):
            if W.shape != mats[0].shape:
                raise NetworkShapeError(f"all matrices must have one shape; matrices[{k}] is {W.shape}, "
                                        f"matrices[0] is {mats[0].shape}")
        if schedule not in SCHEDULES:
            raise UnknownNameError("schedule", str(schedule), SCHEDULES)
        if schedule == "random":
            if seed is None:
                raise ValidationError("schedule='random' needs an integer seed >= 0, got None")
            seed = check_int(seed, "seed", minimum=0)
        else:
            seed = None
        if B is not None:
            B = check_int(B, "B", minimum=1)
        elif schedule == "cyclic":
            B = len(mats)
        if schedule == "cyclic":
            check_b_strongly_connected(mats, B, cyclic=True)
        elif not is_strongly_connected(sum(mats[1:], mats[0])):
            raise NotBStronglyConnectedError(
                f"the union of all {len(mats)} matrices is not strongly connected, so no random schedule over "
                "them is B-strongly connected for any B"
            )
        for W in mats:
            for arr in (W.data, W.indices, W.indptr):
                arr.flags.writeable = False
        object.__setattr__(self, "_mats", tuple(mats))
        object.__setattr__(self, "_schedule", schedule)
        object.__setattr__(self, "_B", B)
        object.__setattr__(self, "_seed", seed)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def static(cls, W: Any, *, tol: float = 1e-10) -> TimeVaryingNetwork:
        """A constant schedule ``W(t) = W`` (``W`` must be doubly stochastic and strongly connected; B = 1)."""
        return cls([W], schedule="cyclic", tol=tol)

    @classmethod
    def from_network(cls, network: Network) -> TimeVaryingNetwork:
        """A constant schedule with the Metropolis weights of an undirected :class:`Network` (spec §6.6)."""
        if not isinstance(network, Network):
            raise TypeError(f"network must be a Network, got {type(network).__name__}")
        return cls.static(network.metropolis_weights())

    # ------------------------------------------------------------------ protocol
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("TimeVaryingNetwork is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("TimeVaryingNetwork is immutable")

    def __reduce__(self):
        return (_rebuild, (self.matrices, self._schedule, self._B, self._seed))

    def __repr__(self) -> str:
        seed = f", seed={self._seed}" if self._seed is not None else ""
        return (f"TimeVaryingNetwork(n_agents={self.n_agents}, n_matrices={self.n_matrices}, "
                f"schedule={self._schedule!r}, B={self._B}{seed})")

    # ------------------------------------------------------------------ accessors
    @property
    def n_agents(self) -> int:
        """Number of nodes ``N``."""
        return int(self._mats[0].shape[0])

    @property
    def n_matrices(self) -> int:
        """Number of distinct weight matrices ``m``."""
        return len(self._mats)

    @property
    def schedule(self) -> str:
        """``"cyclic"`` or ``"random"``."""
        return self._schedule

    @property
    def seed(self) -> int | None:
        """Seed of the random schedule (``None`` for cyclic)."""
        return self._seed

    @property
    def B(self) -> int | None:
        """Window length of B-strong connectivity (checked for cyclic; ``None`` if not fixed for random)."""
        return self._B

    @property
    def matrices(self) -> tuple[sp.csr_array, ...]:
        """Copies of the weight matrices, as float64 ``csr_array``."""
        return tuple(W.copy() for W in self._mats)

    def index(self, t: int) -> int:
        """0-based index of the matrix used at time ``t >= 1``."""
        t = check_int(t, "t", minimum=1)
        m = len(self._mats)
        if self._schedule == "cyclic":
            return (t - 1) % m
        return int(np.random.default_rng([self._seed, t]).integers(m))

    def weights(self, t: int) -> sp.csr_array:
        """Weight matrix ``A(t)`` for ``t = 1, 2, ...`` (a new float64 ``csr_array``; row ``i`` = receiver ``i``).

        Raises:
            ValidationError: ``t < 1``.
        """
        return self._mats[self.index(t)].copy()

    def in_neighbors(self, t: int, i: int) -> np.ndarray:
        """Nodes ``j`` with ``a_ij(t) > 0`` (senders to ``i`` at ``t``), sorted; ``i`` itself is included iff
        ``a_ii(t) > 0`` (AMB-O7).

        Raises:
            ValidationError: ``t < 1`` or ``i`` outside ``0 .. n_agents - 1``.
        """
        W = self._mats[self.index(t)]
        i = check_int(i, "i", minimum=0)
        if i >= self.n_agents:
            raise ValidationError(f"node index i must be < n_agents={self.n_agents}, got {i}")
        lo, hi = W.indptr[i], W.indptr[i + 1]
        return W.indices[lo:hi][W.data[lo:hi] > 0].astype(np.int64)

    def check_b_strongly_connected_until(self, horizon: int, B: int | None = None) -> None:
        """Check that every window ``t .. t+B-1`` (``1 <= t <= horizon - B + 1``) of the realised schedule has a
        strongly connected union.

        Args:
            horizon: last time step ``T`` (>= B).
            B: window length; default :attr:`B`.

        Raises:
            ValidationError: no ``B`` given nor fixed at construction, or ``horizon < B``.
            NotBStronglyConnectedError: some window fails (its start is reported 0-based and as ``t``).
        """
        horizon = check_int(horizon, "horizon", minimum=1)
        B = self._B if B is None else check_int(B, "B", minimum=1)
        if B is None:
            raise ValidationError("B is needed: pass B here or to the constructor")
        if horizon < B:
            raise ValidationError(f"horizon must be >= B={B}, got {horizon}")
        sequence = [self._mats[self.index(t)] for t in range(1, horizon + 1)]
        check_b_strongly_connected(sequence, B, cyclic=False)

    def describe(self) -> str:
        """One line: size, number of matrices, schedule and B."""
        seed = f" (seed {self._seed})" if self._seed is not None else ""
        return (f"time-varying directed network: {self.n_agents} nodes, {self.n_matrices} weight matrices, "
                f"{self._schedule} schedule{seed}, B={self._B}")


def _rebuild(matrices, schedule, B, seed) -> TimeVaryingNetwork:
    return TimeVaryingNetwork(matrices, schedule=schedule, B=B, seed=seed)


def s4_matrices() -> list[np.ndarray]:
    """The three 6 x 6 weight matrices ``A_1, A_2, A_3`` of S4's experiment (spec §5.8), as dense arrays.

    * ``A_1``: directed ring, ``a_11 = a_16 = 1/2``, ``a_{i,i-1} = a_ii = 1/2`` for ``i = 2..6``;
    * ``A_2``: ``a_ij = 1/5`` for ``i != j``, zero diagonal (AMB-O7);
    * ``A_3``: two cliques ``{1,3,5}``, ``{2,4,6}`` with self loops, ``a_ij = 1/3`` when ``i = j (mod 2)``.

    All are doubly stochastic; cycled ``1 -> 2 -> 3`` they are B-strongly connected with B = 3 (AMB-O2).

    References:
        spec §5.8; S4 §5 (Zhou & Li).
    """
    n = 6
    a1 = 0.5 * (np.eye(n) + np.roll(np.eye(n), -1, axis=1))  # row i receives from i and i-1 (mod n)
    a2 = (np.ones((n, n)) - np.eye(n)) / 5.0
    parity = np.arange(n) % 2
    a3 = (parity[:, None] == parity[None, :]).astype(float) / 3.0
    return [a1, a2, a3]


def random_time_varying(
    n: int, n_matrices: int, rng: np.random.Generator, density: int = 2
) -> list[sp.csr_array]:
    """Random directed doubly stochastic weight matrices, B-strongly connected with ``B = n_matrices``.

    Each matrix is ``(I + P_1 + ... + P_density) / (density + 1)`` with ``P_k`` uniformly random permutation
    matrices (``P[i, pi(i)] = 1``: node ``i`` receives from ``pi(i)``): doubly stochastic as an average of
    permutation matrices (Birkhoff), directed, with a positive diagonal and at most ``density + 1`` nonzeros per
    row. The first permutation of the first matrix is the cyclic shift ``i <- i - 1 (mod n)``, so the union of
    the ``n_matrices`` matrices contains a directed Hamiltonian cycle and every cyclic window of ``n_matrices``
    consecutive matrices is strongly connected. Cost O(n * density * n_matrices); meant for N in the thousands.

    Args:
        n: number of nodes (>= 1).
        n_matrices: number of matrices (>= 1).
        rng: source of randomness (the result is a pure function of its state).
        density: number of permutation matrices averaged with the identity in each matrix (>= 1).

    Returns:
        ``n_matrices`` float64 ``csr_array`` matrices of shape ``(n, n)``.

    Raises:
        ValidationError: an argument is out of range.
    """
    n = check_int(n, "n", minimum=1)
    n_matrices = check_int(n_matrices, "n_matrices", minimum=1)
    density = check_int(density, "density", minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    rows = np.tile(np.arange(n), density + 1)
    shift = (np.arange(n) - 1) % n
    out = []
    for k in range(n_matrices):
        perms = [np.arange(n)] + [rng.permutation(n) for _ in range(density)]
        if k == 0:
            perms[1] = shift
        cols = np.concatenate(perms)
        W = sp.csr_array((np.full(rows.size, 1.0 / (density + 1)), (rows, cols)), shape=(n, n))
        W.sum_duplicates()
        W.sort_indices()
        out.append(W)
    return out
