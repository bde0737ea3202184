"""Vertically partitioned logistic regression: parties hold feature blocks, a coordinator holds labels (S2).

``M`` parties each hold the columns ``D_m`` (``N x d_m``) of the same ``N`` samples; the coordinator holds the
labels ``Y in {-1, +1}^N``. The objective (spec §3.1, S2(2)-(6), AMB-V1) is

    F(x_1..x_M) = w sum_i log(1 + exp(-Y_i sum_m D_m^i x_m)) + lambda sum_m ||x_m||^2,

with ``w = 1`` (``loss_scale="sum"``, the authors' code, used for the figures) or ``w = 1/N`` (``"mean"``, the paper's
statement). Party 1 (index 0) gets an extra all-ones column (bias), as in the authors' code, which is regularised like
every other coefficient. A concatenated model ``beta`` is the parties' ``x_m`` stacked in party order; the runtime
estimate of party ``m`` is ``x_m`` embedded at its column offsets of ``beta`` (zeros elsewhere), so the sum over parties
of the estimates is ``beta``.

:meth:`VerticalProblem.subset` hands parties their own blocks only (:class:`PartyData`, no labels);
:meth:`VerticalProblem.coordinator_data` hands the coordinator the labels only (:class:`CoordinatorData`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from .._checks import check_nonnegative
from ..errors import NonFiniteDataError, ShapeMismatchError, ValidationError

__all__ = ["VerticalProblem", "PartyData", "CoordinatorData", "log_loss", "to_pm1", "LOSS_SCALES"]

LOSS_SCALES = ("sum", "mean")


def log_loss(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean logistic loss ``(1/n) sum_i log(1 + exp(-Y_i h_i))`` (spec §1.5), computed stably."""
    return float(np.mean(np.logaddexp(0.0, -labels * logits)))


def to_pm1(labels, where: str = "labels") -> np.ndarray:
    """Labels in ``{-1, +1}`` or ``{0, 1}`` as a float array in ``{-1, +1}``.

    Raises:
        NonFiniteDataError: NaN or infinity among the labels.
        ValidationError: any other value (the message shows the values found).
    """
    y = np.asarray(labels, dtype=float).ravel()
    if not np.isfinite(y).all():
        raise NonFiniteDataError(f"{where} contain NaN or infinity")
    values = set(np.unique(y).tolist())
    if values <= {-1.0, 1.0}:
        return y.copy()
    if values <= {0.0, 1.0}:
        return 2.0 * y - 1.0
    raise ValidationError(f"{where} must be in {{-1, +1}} or {{0, 1}}, got values {sorted(values)[:6]}")


def _as_block(D, m: int):
    """A party's block as CSR (sparse input) or a C-contiguous float array, checked finite and 2-D."""
    if sp.issparse(D):
        D = sp.csr_matrix(D, dtype=float)
        data = D.data
    else:
        D = np.ascontiguousarray(D, dtype=float)
        data = D
    if D.ndim != 2:
        raise ShapeMismatchError(f"the block of party {m} must be 2-D, got shape {D.shape}")
    if D.shape[1] == 0:
        raise ValidationError(f"party {m} has a block with no columns")
    if not np.isfinite(data).all():
        raise NonFiniteDataError(f"the features of party {m} contain NaN or infinity")
    return D


@dataclass(frozen=True, eq=False)
class PartyData:
    """What the parties of one block hold: their own feature blocks, nothing else (no labels).

    Attributes:
        agents: global party ids; blocks: one ``N x d_m`` matrix per party (party 0 includes the bias column);
        offsets: column offset of each party's ``x_m`` in ``beta``; n_features: ``d`` (all parties);
        reg_weight: ``lambda``; n_parties: ``M``.
    """

    agents: np.ndarray
    blocks: tuple
    offsets: tuple[int, ...]
    n_features: int
    n_samples: int
    reg_weight: float
    n_parties: int
    cache: dict | None = None

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(int(D.shape[1]) for D in self.blocks)

    def gram(self, i: int) -> np.ndarray:
        """``D_m^T D_m`` (dense, ``d_m x d_m``) of the ``i``-th party of the block (computed once per problem)."""
        key = int(self.agents[i])
        if self.cache is not None and key in self.cache:
            return self.cache[key]
        D = self.blocks[i]
        G = D.T @ D
        G = np.asarray(G.toarray() if sp.issparse(G) else G)
        if self.cache is not None:
            self.cache[key] = G
        return G


@dataclass(frozen=True, eq=False)
class CoordinatorData:
    """What the coordinator holds: the labels and the loss weight ``w`` (1 for ``sum``, ``1/N`` for ``mean``)."""

    labels: np.ndarray
    loss_weight: float
    n_parties: int


class VerticalProblem:
    """Logistic regression over vertically partitioned features (spec §3.1; S2(2)-(6)).

    Args:
        blocks: one ``N x d_m`` matrix (dense or sparse) per party, rows in the same sample order.
        labels: ``N`` labels in ``{-1, +1}`` or ``{0, 1}`` (held by the coordinator).
        reg_weight: ``lambda`` (>= 0); ``R_m(x) = ||x||^2``.
        loss_scale: ``"sum"`` (code, figures) or ``"mean"`` (paper text), AMB-V1.
        bias: prepend an all-ones column to party 0's block (as in the authors' code; penalised like the others).
        sample_ids: optional per-party sample identifiers (one array per party); they must agree in content and
            order (a party with other or reordered samples is an error naming both parties).

    Raises:
        ValidationError: fewer than one party, a block with no columns, bad labels, unknown ``loss_scale``,
            parties whose sample ids differ in content or order.
        ShapeMismatchError: parties with different row counts (the message names them), labels of another length.
        NonFiniteDataError: NaN or infinity in a block or among the labels.
    """

    def __init__(self, blocks: Sequence, labels, reg_weight: float = 1e-3, loss_scale: str = "sum",
                 bias: bool = True, sample_ids: Sequence | None = None):
        blocks = list(blocks)
        if not blocks:
            raise ValidationError("a vertical problem needs at least one party")
        blocks = [_as_block(D, m) for m, D in enumerate(blocks)]
        n = blocks[0].shape[0]
        for m, D in enumerate(blocks[1:], start=1):
            if D.shape[0] != n:
                raise ShapeMismatchError(f"party 0 has {n} samples but party {m} has {D.shape[0]}")
        if sample_ids is not None:
            self._check_ids(sample_ids, len(blocks), n)
        if n == 0:
            raise ValidationError("a vertical problem needs at least one sample")
        self.labels = to_pm1(labels)
        if self.labels.shape[0] != n:
            raise ShapeMismatchError(f"labels have {self.labels.shape[0]} entries but the parties have {n} samples")
        if loss_scale not in LOSS_SCALES:
            raise ValidationError(f"loss_scale must be one of {LOSS_SCALES}, got {loss_scale!r}")
        self.reg_weight = check_nonnegative(reg_weight, "reg_weight")
        self.loss_scale, self.bias = loss_scale, bool(bias)
        if bias:
            ones = np.ones((n, 1))
            D0 = blocks[0]
            blocks[0] = sp.hstack([sp.csr_matrix(ones), D0], format="csr") if sp.issparse(D0) else np.hstack([ones, D0])
        self.blocks = tuple(blocks)
        self.dims = tuple(int(D.shape[1]) for D in blocks)
        self.offsets = tuple(int(o) for o in np.concatenate([[0], np.cumsum(self.dims)[:-1]]))
        self.n_samples = n
        self._grams: dict[int, np.ndarray] = {}  # party -> D_m^T D_m, shared by runs on this problem
        self.memo: dict = {}  # derived quantities shared by runs on this problem (e.g. the pilot b1, AMB-V4)

    @staticmethod
    def _check_ids(sample_ids, n_parties: int, n: int) -> None:
        ids = [np.asarray(s).ravel() for s in sample_ids]
        if len(ids) != n_parties:
            raise ShapeMismatchError(f"sample_ids has {len(ids)} entries for {n_parties} parties")
        for m, s in enumerate(ids):
            if s.shape[0] != n:
                raise ShapeMismatchError(f"party {m} lists {s.shape[0]} sample ids for {n} rows")
            if m and not np.array_equal(s, ids[0]):
                what = "order" if set(s.tolist()) == set(ids[0].tolist()) else "samples"
                raise ValidationError(f"parties 0 and {m} hold different {what}: their sample ids disagree "
                                      f"(first mismatch at row {int(np.argmax(s != ids[0]))})")

    # --- sizes -------------------------------------------------------------------------------------------
    @property
    def n_agents(self) -> int:
        """Number of parties ``M`` (the runtime's agents)."""
        return len(self.blocks)

    n_agents_total = n_agents

    @property
    def n_features(self) -> int:
        """``d = sum_m d_m`` (bias included)."""
        return int(sum(self.dims))

    @property
    def loss_weight(self) -> float:
        return 1.0 if self.loss_scale == "sum" else 1.0 / self.n_samples

    # --- role views --------------------------------------------------------------------------------------
    def subset(self, agents) -> PartyData:
        """The feature blocks of parties ``agents`` (never the labels)."""
        agents = np.asarray(agents, dtype=int)
        return PartyData(agents, tuple(self.blocks[a] for a in agents), tuple(self.offsets[a] for a in agents),
                         self.n_features, self.n_samples, self.reg_weight, self.n_agents, self._grams)

    def coordinator_data(self) -> CoordinatorData:
        """The labels and loss weight (never the features)."""
        return CoordinatorData(self.labels.copy(), self.loss_weight, self.n_agents)

    # --- evaluation on a concatenated model ---------------------------------------------------------------
    def full_matrix(self):
        """All parties' blocks side by side (``N x d``; sparse if any block is sparse)."""
        if any(sp.issparse(D) for D in self.blocks):
            return sp.hstack([sp.csr_matrix(D) for D in self.blocks], format="csr")
        return np.hstack(self.blocks)

    def split(self, beta: np.ndarray) -> list[np.ndarray]:
        """``beta`` (d,) cut into the parties' ``x_m``."""
        beta = np.asarray(beta, dtype=float)
        return [beta[o:o + d] for o, d in zip(self.offsets, self.dims)]

    def logits(self, beta: np.ndarray) -> np.ndarray:
        """``sum_m D_m x_m`` (N,)."""
        return sum(np.asarray(D @ x).ravel() for D, x in zip(self.blocks, self.split(beta)))

    def objective(self, beta: np.ndarray) -> float:
        """``w sum_i log(1 + exp(-Y_i h_i)) + lambda ||beta||^2`` (the ADMM objective)."""
        beta = np.asarray(beta, dtype=float)
        h = self.logits(beta)
        return float(self.loss_weight * np.logaddexp(0.0, -self.labels * h).sum() + self.reg_weight * beta @ beta)

    def centralized_solution(self, tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
        """Minimiser of :meth:`objective` on the concatenated features (spec §10, §6.10, AMB-V8).

        Damped Newton with backtracking (dense Hessian, for ``d <= 2000``) or L-BFGS (larger ``d``); stops when
        ``||grad||_inf <= tol * max(1, ||grad(0)||_inf)``.

        Args:
            tol: relative gradient tolerance.
            max_iter: Newton iteration cap (L-BFGS gets 100 times as many).

        Returns:
            ``beta`` (d,).
        """
        from scipy.optimize import minimize
        from scipy.special import expit

        X, Y, w, lam = self.full_matrix(), self.labels, self.loss_weight, self.reg_weight

        def fun(b):
            h = np.asarray(X @ b).ravel()
            val = w * np.logaddexp(0.0, -Y * h).sum() + lam * b @ b
            return val, np.asarray(X.T @ (-w * Y * expit(-Y * h))).ravel() + 2 * lam * b, h

        b = np.zeros(self.n_features)
        f, g, h = fun(b)
        gtol = tol * max(1.0, np.abs(g).max())
        if self.n_features > 2000:
            res = minimize(lambda v: fun(v)[:2], b, jac=True, method="L-BFGS-B",
                           options={"maxiter": 100 * max_iter, "gtol": gtol, "ftol": 0.0, "maxcor": 30})
            return res.x
        for _ in range(max_iter):
            if np.abs(g).max() <= gtol:
                break
            p = expit(h)
            XW = X.multiply((w * p * (1 - p))[:, None]) if sp.issparse(X) else X * (w * p * (1 - p))[:, None]
            H = np.asarray((X.T @ XW).toarray() if sp.issparse(XW) else X.T @ XW) + 2 * lam * np.eye(b.size)
            step = np.linalg.solve(H, -g)
            a = 1.0
            while True:
                f_new, g_new, h_new = fun(b + a * step)
                if f_new <= f + 1e-4 * a * g @ step or a < 1e-10:
                    break
                a *= 0.5
            b, f, g, h = b + a * step, f_new, g_new, h_new
        return b
