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



def standard_normal_interval(reps, cells, false_failure=1e-6):
    """Acceptance intervals for draws ``z`` of shape ``(reps, *cells)`` (``reps`` repetitions, e.g. seeds, of a
    release of ``cells`` coordinates) that are i.i.d. N(0, 1) when an algorithm draws the noise it declares: its
    noise (release minus its known noiseless value) divided by the declared std. Exactly, with ``n = reps * cells``:
    ``sum z^2 ~ chi2(n)`` (the spread) and ``sum_cells (sum_reps z)^2 / reps ~ chi2(cells)`` (each coordinate's mean
    is 0: a wrong noiseless value shows here). Each statistic gets a two-sided interval of probability
    ``1 - false_failure / 2``, so a correct algorithm fails with probability at most ``false_failure`` (union bound).

    Returns ``((lo, hi), (mlo, mhi))``: accept iff ``lo <= sum z^2 <= hi`` and ``mlo <= mean statistic <= mhi``.
    """
    from scipy.stats import chi2

    tail, n = false_failure / 4, reps * cells  # half of the budget per statistic, split over its two tails
    return ((float(chi2.ppf(tail, n)), float(chi2.isf(tail, n))),
            (float(chi2.ppf(tail, cells)), float(chi2.isf(tail, cells))))


def wrong_std_acceptance(n, ratio, false_failure=1e-6):
    """Probability that the spread interval of :func:`standard_normal_interval` for ``n`` draws accepts ``sum z^2``
    when the true noise std is ``ratio`` times the declared one (``sum z^2 ~ ratio^2 chi2(n)``): one minus the
    test's power against that std."""
    from scipy.stats import chi2

    (lo, hi), _ = standard_normal_interval(n, 1, false_failure)
    return float(chi2.cdf(hi / ratio**2, n) - chi2.cdf(lo / ratio**2, n))


def _statistics(z):
    z = np.asarray(z, dtype=float)
    reps = z.shape[0]
    z = z.reshape(reps, -1)
    return z.shape, float(np.sum(z * z)), float(np.sum(z.sum(axis=0) ** 2) / reps)


def accepts_standard_normal(z, false_failure=1e-6) -> bool:
    """Whether ``z`` (shape ``(reps, *cells)``) passes both checks of :func:`standard_normal_interval`."""
    (reps, cells), ss, ms = _statistics(z)
    (lo, hi), (mlo, mhi) = standard_normal_interval(reps, cells, false_failure)
    return lo <= ss <= hi and mlo <= ms <= mhi


def assert_standard_normal(z, false_failure=1e-6, power_at=0.10):
    """Assert that the standardised noise ``z`` (shape ``(reps, *cells)``, see :func:`standard_normal_interval`) is
    i.i.d. N(0, 1): its spread and its per-coordinate means within the sampling distribution's acceptance intervals
    at probability ``false_failure`` of failing a correct algorithm, with enough draws that a std off by
    ``power_at`` either way would be accepted with probability below ``false_failure`` as well (the test tells a
    wrong sigma from the right one)."""
    (reps, cells), ss, ms = _statistics(z)
    n = reps * cells
    for ratio in (1.0 - power_at, 1.0 + power_at):
        assert wrong_std_acceptance(n, ratio, false_failure) < false_failure, \
            f"{n} draws cannot tell a noise std {ratio:g} x the declared one from the declared one"
    (lo, hi), (mlo, mhi) = standard_normal_interval(reps, cells, false_failure)
    assert lo <= ss <= hi, (f"drawn/declared noise std {np.sqrt(ss / n):.4f} outside the chi2({n}) interval "
                            f"[{np.sqrt(lo / n):.4f}, {np.sqrt(hi / n):.4f}] (false-failure probability {false_failure:g})")
    assert mlo <= ms <= mhi, (f"the {cells} coordinates' mean noise is not 0: chi2({cells}) statistic {ms:.1f} "
                              f"outside [{mlo:.1f}, {mhi:.1f}] (false-failure probability {false_failure:g})")
