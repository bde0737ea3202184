"""Horizontally partitioned empirical risk minimisation, vectorised over agents.

Agent ``k`` holds ``(X_k, y_k)`` with ``N_k`` rows and the local objective (spec §2.1, S1(2); §6.2 ``O_p``;
S3 ``L_{D_i}``)

    f_k(beta) = w_k sum_j l(x_kj^T beta, y_kj) + (reg_weight / K) R(beta),

with the per-sample loss weight ``w_k = 1/N_k`` (``loss_scale="mean"``, the spec's reading of S1(1)/(2), the
default) or ``w_k = 1`` (``loss_scale="sum"``: ``sum_k f_k = ||X beta - y||^2 + eta R`` for the squared loss, so
the distributed minimiser is exactly S1(30)/(31)'s ``beta^c``, AMB-D12 revised), so that ``sum_k f_k`` is the
network objective. Agents' data are stored padded to a common row count with per-row weights ``w_k`` (0 on
padding), so every oracle below is one batched array expression over the leading agent axis: no Python loop over
agents. Algorithms whose sensitivity involves ``1/N_k`` read :attr:`HorizontalERM.sample_weight` instead (a
replace-one change of a record moves the data term's gradient by at most ``2 c1 w_k``).
"""

from __future__ import annotations

import copy
from functools import cached_property

import numpy as np

from .._checks import check_finite, check_nonnegative
from ..errors import ShapeMismatchError, ValidationError
from .losses import Loss, RowClippedLoss
from .regularizers import Regularizer

__all__ = ["HorizontalERM", "LOSS_SCALES"]

#: Accepted ``loss_scale`` values: per-sample weight ``1/N_k`` (mean) or ``1`` (sum).
LOSS_SCALES = ("mean", "sum")


class HorizontalERM:
    """Per-agent local objectives ``f_k`` of a horizontally partitioned ERM problem.

    Args:
        parts: one ``(X_k, y_k)`` pair per agent; all ``X_k`` share the column count.
        loss: per-sample loss (:mod:`privdist.problems.losses`).
        regularizer: ``R`` (:mod:`privdist.problems.regularizers`).
        reg_weight: total weight ``eta`` of ``R`` in ``sum_k f_k`` (each agent carries ``eta / K``).
        n_agents_total: ``K`` used to split ``reg_weight``; defaults to ``len(parts)`` (kept by :meth:`subset`).
        loss_scale: ``"mean"`` (weight ``1/N_k`` on each sample, default) or ``"sum"`` (weight 1; AMB-D12 revised).

    Raises:
        ShapeMismatchError: column counts differ, or ``len(y_k) != rows of X_k``.
        NonFiniteDataError: NaN or inf in any part.
        ValidationError: an agent without samples, negative ``reg_weight``, labels outside the loss's domain,
            unknown ``loss_scale``.
    """

    def __init__(self, parts, loss: Loss, regularizer: Regularizer, reg_weight: float = 0.0, *,
                 n_agents_total: int | None = None, agent_ids=None, loss_scale: str = "mean"):
        parts = list(parts)
        if not parts:
            raise ValidationError("an ERM problem needs at least one agent")
        if loss_scale not in LOSS_SCALES:
            raise ValidationError(f"loss_scale must be one of {LOSS_SCALES}, got {loss_scale!r}")
        self.loss_scale = loss_scale
        self.loss = loss
        self.regularizer = regularizer
        self.reg_weight = check_nonnegative(reg_weight, "reg_weight")
        Xs, ys = [], []
        for k, (X, y) in enumerate(parts):
            X = check_finite(X.toarray() if hasattr(X, "toarray") else X, f"X of agent {k}")
            y = check_finite(y, f"y of agent {k}").ravel()
            if X.ndim != 2:
                raise ShapeMismatchError(f"X of agent {k} must be 2-D, got shape {X.shape}")
            if X.shape[0] != y.shape[0]:
                raise ShapeMismatchError(f"agent {k}: X has {X.shape[0]} rows but y has {y.shape[0]} entries")
            if X.shape[0] == 0:
                raise ValidationError(f"agent {k} has no samples")
            if Xs and X.shape[1] != Xs[0].shape[1]:
                raise ShapeMismatchError(f"agent {k} has {X.shape[1]} features, agent 0 has {Xs[0].shape[1]}")
            Xs.append(X)
            ys.append(loss.check_labels(y, f"y of agent {k}"))
        K = len(Xs)
        self.counts = np.array([X.shape[0] for X in Xs])
        n_max, P = int(self.counts.max()), Xs[0].shape[1]
        self.X = np.zeros((K, n_max, P))
        self.y = np.zeros((K, n_max))
        self.w = np.zeros((K, n_max))
        for k in range(K):  # construction only, not a hot path
            n = self.counts[k]
            self.X[k, :n], self.y[k, :n], self.w[k, :n] = Xs[k], ys[k], (1.0 / n if loss_scale == "mean" else 1.0)
        self.n_agents_total = int(n_agents_total or K)
        self.agent_ids = np.arange(K) if agent_ids is None else np.asarray(agent_ids)
        self.local_reg = self.reg_weight / self.n_agents_total

    # ------------------------------------------------------------------ shape
    @property
    def n_agents(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[2]

    @property
    def sample_weight(self) -> np.ndarray:
        """Per-sample loss weight ``w_k`` of each agent, shape (K,): ``1/N_k`` (mean) or 1 (sum)."""
        return 1.0 / self.counts if self.loss_scale == "mean" else np.ones(self.counts.shape)

    def parts(self):
        """The unpadded ``(X_k, y_k)`` pairs."""
        return [(self.X[k, :n], self.y[k, :n]) for k, n in enumerate(self.counts)]

    def subset(self, agents) -> "HorizontalERM":
        """The same problem restricted to ``agents`` (their data only; ``K`` for the regularizer kept)."""
        agents = np.asarray(agents)
        source = getattr(self, "_unclipped", None)
        if source is not None:
            return source.subset(agents).with_clipped_gradients(self.loss.c1)
        parts = [(self.X[k, : self.counts[k]], self.y[k, : self.counts[k]]) for k in agents]
        return HorizontalERM(parts, self.loss, self.regularizer, self.reg_weight,
                             n_agents_total=self.n_agents_total, agent_ids=self.agent_ids[agents],
                             loss_scale=self.loss_scale)

    @cached_property
    def row_norms(self) -> np.ndarray:
        """``||x_kj||`` of every (padded) row, shape (K, n); 0 on padding."""
        return np.linalg.norm(self.X, axis=2)

    def with_clipped_gradients(self, c1: float) -> "HorizontalERM":
        """The same problem with every per-sample loss replaced by its clipped version: ``l'`` clipped to
        ``+-c1/||x_kj||`` (:class:`~privdist.problems.losses.RowClippedLoss`), so every per-sample gradient has
        norm ``<= c1`` at every point. For the squared loss this is the Huber loss; for the logistic loss on rows
        of norm ``<= 1`` and ``c1 >= 1`` it is the loss itself. Values, gradients and exact solves all use it.

        Raises:
            ValidationError: ``c1 <= 0``.
        """
        from .._checks import check_positive

        c1 = check_positive(c1, "c1")
        source = getattr(self, "_unclipped", None) or self
        out = copy.copy(source)
        for key in ("oracle",):  # cached objects holding the loss
            out.__dict__.pop(key, None)
        norms = source.row_norms
        with np.errstate(divide="ignore"):
            thr = np.where(norms > 0, c1 / np.where(norms > 0, norms, 1.0), np.inf)
        out.loss = RowClippedLoss(source.loss, thr, c1)
        out._unclipped = source
        return out

    # ---------------------------------------------------------------- oracles
    def _margins(self, B: np.ndarray) -> np.ndarray:
        """``z_kj = x_kj^T beta_k`` for ``B`` of shape (K, P) -> (K, n), or (K, P, m) -> (K, n, m)."""
        if B.ndim == 2:
            return np.einsum("knp,kp->kn", self.X, B)
        return np.matmul(self.X, B)

    def local_values(self, B: np.ndarray) -> np.ndarray:
        """``f_k(beta_k)`` for ``B`` (K, P) -> (K,), or many vectors per agent ``B`` (K, P, m) -> (K, m)."""
        B = np.asarray(B, dtype=float)
        Z = self._margins(B)
        if B.ndim == 2:
            data = np.einsum("kn,kn->k", self.w, self.loss.value(Z, self.y))
            return data + self.local_reg * self.regularizer.value(B)
        data = np.einsum("kn,knm->km", self.w, self.loss.value(Z, self.y[:, :, None]))
        return data + self.local_reg * self.regularizer.value(np.swapaxes(B, 1, 2))

    def per_sample_grads(self, B: np.ndarray) -> np.ndarray:
        """``l'(x_kj^T beta_k) x_kj`` of the loss part, shape (K, n, P); zero on padding rows."""
        Z = self._margins(B)
        d = self.loss.dz(Z, self.y) * (self.w > 0)
        return d[:, :, None] * self.X

    def loss_grads(self, B: np.ndarray, clip: float | None = None) -> np.ndarray:
        """Gradient of the data term ``w_k sum_j l``, optionally with each per-sample gradient clipped to l2 norm
        ``clip`` (which makes ``2 clip w_k`` an a-priori replace-one sensitivity; ``w_k`` = 1/N_k or 1)."""
        d = self.loss.dz(self._margins(B), self.y)
        if clip is not None:  # ||l'(z) x|| = |l'(z)| ||x||: clip the scalar, never form (K, n, P)
            norms = self.row_norms
            scale = np.minimum(1.0, clip / np.maximum(np.abs(d) * norms, 1e-300))
            d = d * scale
        return np.einsum("kn,knp->kp", d * self.w, self.X)

    def local_grads(self, B: np.ndarray, clip: float | None = None) -> np.ndarray:
        """A (sub)gradient of ``f_k`` at ``beta_k`` (sign(0) = 0 for l1), shape (K, P)."""
        B = np.asarray(B, dtype=float)
        return self.loss_grads(B, clip) + self.local_reg * self.regularizer.subgradient(B)

    def objective(self, beta: np.ndarray) -> float:
        """Network objective ``sum_k f_k(beta)`` at one common vector ``beta`` (P,)."""
        B = np.broadcast_to(np.asarray(beta, dtype=float), (self.n_agents, self.n_features))
        return float(self.local_values(np.ascontiguousarray(B)).sum())

    # --------------------------------------------------- exact local solves
    @cached_property
    def _gram_eig(self):
        """Eigen-decomposition of ``G_k = w_k X_k^T X_k`` (K, P, P), computed once."""
        G = np.einsum("kn,knp,knq->kpq", self.w, self.X, self.X)
        return np.linalg.eigh(G)

    @cached_property
    def _xty(self) -> np.ndarray:
        return np.einsum("kn,knp,kn->kp", self.w, self.X, self.y)

    def prox_solve(self, q, v, init=None, tol: float = 1e-10, max_iter: int = 5000) -> np.ndarray:
        """Exact minimiser of ``f_k(b) + q_k ||b||^2 - v_k^T b`` for every agent at once (spec §6.2, §11).

        Squared loss with l2 (or no) regularizer: closed form through the cached eigen-decomposition of
        ``G_k``. Other smooth cases: damped Newton to gradient norm ``tol``. l1: accelerated proximal gradient
        (FISTA with the strongly-convex momentum; Nesterov's momentum sequence where the subproblem is not strongly
        convex: ``q = 0`` with a non-quadratic loss or a singular Gram matrix, e.g. one agent with fewer rows than
        features) to step size ``tol``.

        Args:
            q: (K,) or scalar, the quadratic weight (>= 0).
            v: (K, P) linear term.
            init: warm start (K, P); zeros by default.
        """
        K, P = self.n_agents, self.n_features
        q = np.broadcast_to(np.asarray(q, dtype=float), (K,))
        v = np.asarray(v, dtype=float)
        if self.regularizer.smooth and self.loss.quadratic:
            lam, U = self._gram_eig
            c = self.local_reg * self.regularizer.hessian_scale / 2.0  # R'' = 2c I in the 1/2-free convention
            rhs = v + self.loss.curvature_bound * self._xty  # squared loss: l'' = 2
            coef = np.einsum("kpq,kp->kq", U, rhs) / (2.0 * lam + 2.0 * (c + q)[:, None])
            return np.einsum("kpq,kq->kp", U, coef)
        B = np.zeros((K, P)) if init is None else np.array(init, dtype=float)
        if self.regularizer.smooth:
            return self._newton(q, v, B, tol, max_iter)
        return self._fista(q, v, B, tol, max_iter)

    def _smooth_value(self, q, v, B):
        Z = self._margins(B)
        val = np.einsum("kn,kn->k", self.w, self.loss.value(Z, self.y)) + q * (B * B).sum(1) - (v * B).sum(1)
        if self.regularizer.smooth:
            val = val + self.local_reg * self.regularizer.value(B)
        return val

    def _newton(self, q, v, B, tol, max_iter):
        """Damped Newton, vectorised over agents; stops at ``||grad|| <= tol (1 + ||v||)`` or when the step
        no longer changes the iterate (quadratic convergence makes 50 iterations ample)."""
        eye = np.eye(self.n_features)
        scale = 1.0 + np.linalg.norm(v, axis=1)
        for _ in range(min(max_iter, 50)):
            Z = self._margins(B)
            g = self.local_grads(B) + 2.0 * q[:, None] * B - v
            if np.all(np.linalg.norm(g, axis=1) <= tol * scale):
                break
            h = self.loss.d2z(Z, self.y) * self.w
            H = np.einsum("kn,knp,knq->kpq", h, self.X, self.X)
            H += (self.local_reg * self.regularizer.hessian_scale + 2.0 * q)[..., None, None] * eye
            step = -np.linalg.solve(H, g[..., None])[..., 0]
            f0, t = self._smooth_value(q, v, B), np.ones(self.n_agents)
            slope = (g * step).sum(1)
            for _ in range(40):  # vectorised backtracking (Armijo)
                bad = self._smooth_value(q, v, B + t[:, None] * step) > f0 + 1e-4 * t * slope + 1e-15 * np.abs(f0)
                if not bad.any():
                    break
                t = np.where(bad, t / 2.0, t)
            B_new = B + t[:, None] * step
            if np.all(np.abs(B_new - B) <= 1e-15 * (1.0 + np.abs(B))):
                return B_new
            B = B_new
        return B

    @cached_property
    def _gram_lmax(self) -> np.ndarray:
        return self._gram_eig[0][:, -1]

    def _fista(self, q, v, B, tol, max_iter):
        lam_max = self._gram_lmax
        L = self.loss.curvature_bound * lam_max + 2.0 * q
        mu = 2.0 * q + (self.loss.curvature_bound * self._gram_eig[0][:, 0] if self.loss.quadratic else 0.0)
        mu = np.maximum(mu, 0.0)  # a singular Gram matrix (fewer rows than features) rounds to 0 or just below
        L = np.maximum(L, 1e-12)
        strong = mu > 0  # strongly convex: constant momentum; else (q = 0 and no curvature) Nesterov's sequence
        constant = ((np.sqrt(L) - np.sqrt(mu)) / (np.sqrt(L) + np.sqrt(mu)))[:, None]
        step = (1.0 / L)[:, None]
        Yv, B_prev = B.copy(), B.copy()
        t_k = 1.0
        for _ in range(max_iter):
            t_next = (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k)) / 2.0
            mom = np.where(strong[:, None], constant, (t_k - 1.0) / t_next)
            t_k = t_next
            grad = self.loss_grads(Yv) + 2.0 * q[:, None] * Yv - v
            B_new = self.regularizer.prox(Yv - step * grad, self.local_reg * step[:, 0])
            delta = np.max(np.linalg.norm(B_new - B_prev, axis=1) / (1.0 + np.linalg.norm(B_new, axis=1)))
            Yv = B_new + mom * (B_new - B_prev)
            B_prev = B_new
            if delta < tol:
                break
        return B_prev
