"""Helpers of the release-level privacy tests (issue 12): one ``step`` of an algorithm on a given state and inbox,
with chosen noise streams, on a dataset or on its neighbour (one row of one agent replaced)."""

from __future__ import annotations

import numpy as np

from privdist.network import complete
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.runtime import AgentBlock, AgentStreams


def unit_rows(rng, n, p):
    X = rng.normal(size=(n, p))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.3, 1.0, size=(n, 1))


def make_parts(K=8, n=12, p=6, loss="logistic", seed=0):
    """``K`` agents with ``n`` rows of norm <= 1 each; labels +-1 (logistic) or N(0, 1) (squared)."""
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(K):
        X = unit_rows(rng, n, p)
        y = np.sign(rng.normal(size=n)) if loss == "logistic" else X @ rng.normal(size=p) + 0.1 * rng.normal(size=n)
        parts.append((X, np.where(y == 0, 1.0, y)))
    return parts


def problem_of(parts, loss="logistic", reg_weight=0.1):
    return HorizontalERM(parts, make_loss(loss), make_regularizer("l2"), reg_weight)


def neighbour(parts, row, label, agent=0, j=0):
    """``parts`` with row ``j`` of ``agent`` replaced by ``(row, label)``."""
    out = [(X.copy(), y.copy()) for X, y in parts]
    out[agent][0][j] = row
    out[agent][1][j] = label
    return out


def block_of(network, K):
    degrees = getattr(network, "degrees", None)
    return AgentBlock(np.arange(K), K, None if degrees is None else np.asarray(degrees))


def streams(seed, K, round_=1):
    return AgentStreams(seed, 0, np.arange(K), round_)


def init_state(algo, problem, network, K, seed=0):
    state, _ = algo.init(problem, network, block_of(network, K), streams(seed, K, 0))
    return state


def public_inbox(algo, problem, network, K, seed=1, scale=0.3):
    """Random public messages of the right shapes (the inbox is public: both neighbours see the same one)."""
    rng = np.random.default_rng(seed)
    return {m.name: scale * rng.normal(size=(K, *m.shape)) for m in algo.messages(problem, network)}


def release(algo, state, inbox, t, seed, key):
    new_state, out = algo.step(state, inbox, t, streams(seed, state_rows(state), t))
    return new_state, out[key]


def state_rows(state):
    for name in ("x", "w", "q"):
        arr = getattr(state, name, None)
        if arr is not None:
            return arr.shape[0]
    raise AttributeError("state has no per-agent array")


def complete_net(K):
    return complete(K)
