"""Neighbouring datasets for an audit, per problem kind, from canary strategies (spec §1.1).

The neighbouring relation is the one the algorithms' guarantees use:

* ``horizontal`` (:class:`~privdist.problems.HorizontalERM`): agent ``target``'s local datasets differ in one
  record (a row of ``X_k`` and its label);
* ``vertical`` (:class:`~privdist.problems.vertical.VerticalProblem`): party ``target``'s block differs in one
  feature column, with ``||D_m - D_m'|| <= 1`` (S2 Def. 2);
* ``online`` (an online problem with ``grads`` and ``domain``): node ``target``'s cost function differs (S4 Def. 3).

Canary strategies (:data:`CANARIES`):

* ``worst``: the largest change the enforced assumptions allow. Horizontal: record 0 of the target is a unit-norm
  row ``u`` (rows of norm <= 1 are what ``c1 = 1`` assumes) with the largest label of the data in ``D`` and
  ``-u`` with the same label in ``D'``, so the per-sample gradients at margin 0 are opposite (a label flip for
  +/-1 labels). Vertical: the last column of the target's block is ``c - v/2`` in ``D`` and ``c + v/2`` in ``D'``
  with ``v`` the unit vector along the labels. An algorithm whose releases the generic pair does not move (a Gram
  matrix: ``u u^T = (-u)(-u)^T``) declares its own pair, ``audit_records`` (dpmm, ssp), which
  :func:`privdist.audit.audit` passes as ``records``. Online: the target's cost is linear with gradient ``+theta u`` in
  ``D`` and ``-theta u`` in ``D'`` (``theta`` the problem's gradient bound, 1 without one).
* ``extreme``: ``D`` is the data as given; ``D'`` moves one record to the data's own extremes. Horizontal: the
  target's most influential record (largest ``|y| ||x||``) becomes ``-x`` rescaled to the largest row norm of the
  data, with the largest ``|y|`` of the data. Vertical: the entry of largest magnitude of the last column of the
  target's block moves outwards by 1. Online: the target's cost becomes linear with the negated direction of its
  own first gradient at the origin, scaled to the largest first-round gradient norm of all nodes.
* ``pair``: the user's own ``(D, D')``.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnknownNameError, ValidationError

__all__ = ["CANARIES", "KINDS", "problem_kind", "neighbours", "LinearCost", "Stacked", "tile"]

CANARIES = ("worst", "extreme", "pair")
KINDS = ("horizontal", "vertical", "online")


def problem_kind(problem) -> str:
    """``"vertical"``, ``"online"`` or ``"horizontal"`` by the interface ``problem`` offers."""
    if hasattr(problem, "coordinator_data"):
        return "vertical"
    if hasattr(problem, "grads") and hasattr(problem, "domain"):
        return "online"
    if hasattr(problem, "parts") and hasattr(problem, "local_grads"):
        return "horizontal"
    raise ValidationError(f"the audit knows no neighbouring relation for a {type(problem).__name__}")


def neighbours(problem, canary: str = "worst", target: int = 0, pair=None, records=None):
    """``(D, D')``: two problems that differ in ``target``'s data under the relation of the problem's kind.

    Args:
        problem: the data to audit on.
        canary: one of :data:`CANARIES`.
        target: the agent/party/node whose data differ.
        pair: ``(D, D')`` for ``canary="pair"``.
        records: horizontal ``worst`` canary only: ``((x, y), (x', y'))``, the target's record 0 in ``D`` and in
            ``D'`` instead of the generic ``(u, y), (-u, y)`` (an algorithm's own sensitivity-attaining pair, e.g.
            one that releases a Gram matrix, which ``u`` and ``-u`` leave unchanged).

    Raises:
        UnknownNameError: unknown canary. ValidationError: ``pair`` missing, bad target.
    """
    if canary not in CANARIES:
        raise UnknownNameError("canary", str(canary), CANARIES)
    if canary == "pair":
        if pair is None or len(pair) != 2:
            raise ValidationError("canary 'pair' needs pair=(D, D')")
        return tuple(pair)
    kind = problem_kind(problem)
    n = problem.n_agents
    if not 0 <= int(target) < n:
        raise ValidationError(f"target must be in [0, {n}), got {target}")
    if kind == "horizontal":
        return _horizontal(problem, canary, int(target), records)
    return {"vertical": _vertical, "online": _online}[kind](problem, canary, int(target))


# ------------------------------------------------------------------------------------------- horizontal
def _rebuild_erm(problem, parts, copies: int = 1):
    from ..problems import HorizontalERM

    # reg_weight is split over all agents (eta / K): scale it so that every agent keeps its own eta / K
    return HorizontalERM(parts, problem.loss, problem.regularizer, problem.reg_weight * copies,
                         loss_scale=problem.loss_scale)


def _horizontal(problem, canary, target, records=None):
    parts = [(X.copy(), y.copy()) for X, y in problem.parts()]
    X, y = parts[target]
    rmax = max(float(np.linalg.norm(Xk, axis=1).max()) for Xk, _ in parts) or 1.0
    ymax = max(float(np.abs(yk).max()) for _, yk in parts) or 1.0
    if canary == "worst":
        u = X.T @ y
        if not np.any(u):
            u = np.eye(X.shape[1])[0]
        u = u / np.linalg.norm(u)
        j, lab = 0, ymax if problem.loss.name != "logistic" else 1.0
        a, b = ((u, lab), (-u, lab)) if records is None else records
        X0, y0, X1, y1 = X.copy(), y.copy(), X.copy(), y.copy()
        X0[j], y0[j] = a
        X1[j], y1[j] = b
    else:
        j = int(np.argmax(np.abs(y) * np.linalg.norm(X, axis=1)))
        X0, y0, X1, y1 = X, y, X.copy(), y.copy()
        norm = float(np.linalg.norm(X[j])) or 1.0
        X1[j] = -X[j] * (rmax / norm)
        y1[j] = y[j] if problem.loss.name == "logistic" else np.sign(y[j] or 1.0) * ymax
    d0, d1 = list(parts), list(parts)
    d0[target], d1[target] = (X0, y0), (X1, y1)
    return _rebuild_erm(problem, d0), _rebuild_erm(problem, d1)


# --------------------------------------------------------------------------------------------- vertical
def _vertical(problem, canary, target):
    from ..problems.vertical import VerticalProblem

    blocks = [np.asarray(D.toarray() if hasattr(D, "toarray") else D, dtype=float).copy() for D in problem.blocks]
    if problem.bias:
        blocks[0] = blocks[0][:, 1:]
    B = blocks[target]
    if B.shape[1] == 0:
        raise ValidationError(f"party {target} has no feature column besides the bias")
    col = B[:, -1].copy()
    if canary == "worst":
        v = problem.labels / np.linalg.norm(problem.labels)
        c0, c1 = col - v / 2, col + v / 2
    else:
        i = int(np.argmax(np.abs(col)))
        c0, c1 = col, col.copy()
        c1[i] += np.sign(col[i] or 1.0)

    def build(c):
        bl = [D.copy() for D in blocks]
        bl[target][:, -1] = c
        return VerticalProblem(bl, problem.labels, problem.reg_weight, problem.loss_scale, problem.bias)

    return build(c0), build(c1)


# ----------------------------------------------------------------------------------------------- online
class LinearCost:
    """An online problem whose node ``node`` has the linear cost ``f_t(x) = g^T x`` instead of its own.

    A linear cost has the same gradient ``g`` everywhere, so with ``||g|| = theta`` it is the largest gradient
    the analysis allows (S4 Ass. on ``theta``). The gradient bound stays the base problem's.
    """

    def __init__(self, base, node: int, gradient):
        self.base, self.node, self.gradient = base, int(node), np.asarray(gradient, dtype=float)
        self.n_agents, self.dim, self.horizon, self.domain = base.n_agents, base.dim, base.horizon, base.domain
        self.grad_bound = getattr(base, "grad_bound", None)

    def grads(self, t, X):
        G = np.array(self.base.grads(t, X), dtype=float)
        if 0 <= self.node < G.shape[0]:
            G[self.node] = self.gradient
        return G

    def total_grads(self, t, X):
        X = np.asarray(X, dtype=float)
        own = self.base.subset([self.node]).total_grads(t, X)
        return self.base.total_grads(t, X) - own + self.gradient

    def values(self, t, X):
        v = np.array(self.base.values(t, X), dtype=float)
        v[self.node] = float(np.asarray(X)[self.node] @ self.gradient)
        return v

    def subset(self, agents):
        agents = np.asarray(agents, dtype=int)
        where = np.flatnonzero(agents == self.node)
        sub = self.base.subset(agents)
        return LinearCost(sub, int(where[0]), self.gradient) if len(where) else sub


def _online(problem, canary, target):
    theta = getattr(problem, "grad_bound", None) or 1.0
    if canary == "worst":
        u = np.eye(problem.dim)[0]
        return LinearCost(problem, target, theta * u), LinearCost(problem, target, -theta * u)
    X = np.zeros((problem.n_agents, problem.dim))
    G = np.asarray(problem.grads(1, X), dtype=float)
    own = G[target]
    scale = float(np.linalg.norm(G, axis=1).max()) or theta
    direction = -own / np.linalg.norm(own) if np.any(own) else np.eye(problem.dim)[0]
    return problem, LinearCost(problem, target, scale * direction)


class Stacked:
    """Disjoint copies of online problems side by side (agents of copy ``c`` follow those of copy ``c - 1``)."""

    def __init__(self, problems):
        self.problems = list(problems)
        first = self.problems[0]
        self.sizes = [p.n_agents for p in self.problems]
        self.n_agents, self.dim, self.horizon, self.domain = sum(self.sizes), first.dim, first.horizon, first.domain
        bounds = [getattr(p, "grad_bound", None) for p in self.problems]
        self.grad_bound = None if any(b is None for b in bounds) else max(bounds)
        self._starts = np.concatenate([[0], np.cumsum(self.sizes)])

    def _each(self, method, t, X):
        return np.concatenate([getattr(p, method)(t, X[a:b]) for p, a, b in
                               zip(self.problems, self._starts[:-1], self._starts[1:])])

    def grads(self, t, X):
        return self._each("grads", t, np.asarray(X, dtype=float))

    def values(self, t, X):
        return self._each("values", t, np.asarray(X, dtype=float))

    def total_grads(self, t, X):
        return sum(p.total_grads(t, X) for p in self.problems)

    def subset(self, agents):
        agents = np.asarray(agents, dtype=int)
        parts = []
        for c, p in enumerate(self.problems):
            local = agents[(agents >= self._starts[c]) & (agents < self._starts[c + 1])] - self._starts[c]
            if len(local):
                parts.append(p.subset(local))
        return Stacked(parts)


def tile(problems):
    """One problem holding the given problems (all of one kind and size) as disjoint copies, or ``None`` when
    the kind cannot be tiled (vertical problems have one coordinator)."""
    kind = problem_kind(problems[0])
    if kind == "horizontal":
        parts = [part for p in problems for part in p.parts()]
        return _rebuild_erm(problems[0], parts, copies=len(problems))
    if kind == "online":
        return Stacked(problems)
    return None
