"""Online problem kinds, the regret plot and the regret claims (S4, spec §5.8).

Problem kinds (``[problem].kind``):

* ``online_localization`` — S4's moving-target localisation (:func:`privdist.problems.online.make_localization`);
  keys ``layout`` ("literal" | "distinct", AMB-O4), ``radius``, ``noise``, ``n_agents``.
* ``online_simplex_quadratic`` — Remark 2's simplex test problem; keys ``n_agents``, ``dim``.

``[network]`` kinds for these problems: ``s4`` (A_1, A_2, A_3 of spec §5.8; params ``schedule`` = "cyclic" |
"random", ``seed``) and ``random_time_varying`` (params ``n``, ``n_matrices``, ``density``, ``schedule``).

Metrics. The regret needs the round (to know ``f_t``): the metrics are round-aware (``with_round``, see
:func:`privdist.run`), and at round index ``k`` they score the decisions ``x_{k+1}`` against ``f_{k+1}`` (the
problem is drawn with ``rounds + 1`` cost functions; the last term is not plotted). Metric ``regret_<i>_<v>`` (1-based) is the round
term ``<sum_j grad f_t^j(x_t^i), x_t^i - v>`` of node ``i`` against vertex ``v`` of Omega; the plot and claims
average their cumulative sums over trials and then take the max over vertices (spec §5.8, AMB-O8). Metric
``regret_rate`` is the single-trial ``max_i R_{k+1}^i / (k+1)`` at index ``k`` (the max inside the expectation,
S4 (3) of Remark 1): a per-trial summary whose trial mean bounds the plotted ``max_i E[R^i] / T`` from above.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import SpecError, UnknownNameError
from ..network import TimeVaryingNetwork, random_time_varying, s4_matrices
from ..problems.online import make_localization, make_simplex_quadratic, regret_terms
from .problem_kinds import ProblemKind, Trial, register_problem_kind
from .claims import register_claim_kind
from .plots import register_plotter

__all__ = ["RoundClock", "make_online_network", "regret_curves", "REGRET_METRIC"]

REGRET_METRIC = re.compile(r"^regret_(\d+)_(\d+)$")


class _MetricNames(tuple):
    """Metric names a kind offers: the listed ones plus every ``regret_<i>_<v>`` (checked against the built
    problem's size by :func:`privdist.experiments.build.build_trial`)."""

    def __contains__(self, name) -> bool:
        return tuple.__contains__(self, name) or bool(isinstance(name, str) and REGRET_METRIC.match(name))


class RoundClock:
    """Round-aware regret terms: round index ``k`` scores the decisions at time ``t = k + 1``.

    One clock is shared by the ``N x V`` metrics of a trial; it caches the terms of the last (round, decisions)
    evaluated. ``regret_rate`` accumulates over the rounds of one run, which the runner evaluates in order.
    """

    def __init__(self, problem):
        self.problem = problem
        self._key, self._terms = None, None

    def terms(self, k: int, est: np.ndarray) -> np.ndarray:
        key = (k, est.tobytes())
        if key != self._key:
            self._key, self._terms = key, regret_terms(self.problem, k + 1, est)
        return self._terms

    def rate_metric(self):
        """The metric ``regret_rate``: ``max_{i,v} sum_{t<=k+1} r_t(i, v) / (k + 1)`` within one run."""
        cum = [None]

        def fn(est, k):
            terms = self.terms(k, np.asarray(est, dtype=float))
            cum[0] = terms.copy() if k == 0 else cum[0] + terms
            return float(cum[0].max() / (k + 1))

        fn.with_round = True
        return fn

    def metric(self, node: int, vertex: int):
        """The metric ``regret_<node+1>_<vertex+1>`` as a round-aware callable ``f(est, k) -> float``."""

        def fn(est, k):
            return float(self.terms(k, np.asarray(est, dtype=float))[node, vertex])

        fn.with_round = True
        return fn


def make_online_network(spec, rng) -> TimeVaryingNetwork:
    """The ``[network]`` of an online spec: ``s4`` or ``random_time_varying``."""
    kind, params = spec.network.kind, dict(spec.network.params)
    schedule, seed = params.pop("schedule", "cyclic"), params.pop("seed", None)
    if schedule == "random" and seed is None:
        seed = int(rng.integers(2**31))
    if kind == "s4":
        mats = s4_matrices()
    elif kind == "random_time_varying":
        try:
            mats = random_time_varying(params.pop("n"), params.pop("n_matrices", 3), rng,
                                       density=params.pop("density", 2))
        except KeyError:
            raise SpecError("[network] kind 'random_time_varying' needs params.n") from None
    else:
        raise UnknownNameError("online network kind", kind, ["s4", "random_time_varying"])
    if params:
        raise SpecError(f"[network] kind {kind!r}: unknown params {sorted(params)}")
    return TimeVaryingNetwork(mats, schedule=schedule, seed=seed, B=len(mats) if schedule == "cyclic" else None)


def _metrics(problem):
    clock = RoundClock(problem)
    n_vertices = problem.domain.vertices().shape[0]
    out = {"regret_rate": clock.rate_metric()}
    out.update({f"regret_{i + 1}_{v + 1}": clock.metric(i, v) for i in range(problem.n_agents)
                for v in range(n_vertices)})
    return out


def build_localization(spec, rng, data_dir) -> Trial:
    p = spec.problem
    network = make_online_network(spec, rng)
    problem = make_localization(rng, spec.rounds + 1, n_agents=p.get("n_agents", network.n_agents),
                                layout=p.get("layout", "literal"), radius=p.get("radius", 3.0),
                                noise=p.get("noise", 1e-3))
    return Trial(problem, network, _metrics(problem), {"theta": problem.grad_bound})


def build_simplex_quadratic(spec, rng, data_dir) -> Trial:
    p = spec.problem
    network = make_online_network(spec, rng)
    problem = make_simplex_quadratic(rng, spec.rounds + 1, n_agents=p.get("n_agents", network.n_agents),
                                     dim=p.get("dim", 3))
    return Trial(problem, network, _metrics(problem), {"theta": problem.grad_bound})


_NAMES = _MetricNames(["regret_rate"] + [f"regret_{i}_{v}" for i in range(1, 7) for v in range(1, 5)])
register_problem_kind(ProblemKind("online_localization", frozenset({"layout", "radius", "noise", "n_agents"}),
                                  _NAMES, build_localization))
register_problem_kind(ProblemKind("online_simplex_quadratic", frozenset({"n_agents", "dim"}), _NAMES,
                                  build_simplex_quadratic))


# ---------------------------------------------------------------------------------------------- regret curves
def regret_curves(metrics: dict) -> np.ndarray:
    """``E[R_tau^i] / tau`` (T, N) from a run's aggregated metrics (``{name: {"curve_mean": ...}}``).

    ``curve_mean`` is the trial mean of each round term, so its cumulative sum is the mean cumulative sum; the
    max over vertices comes after (AMB-O8). The last entry (time ``rounds + 1``) is dropped.
    """
    cells = {}
    for name, m in metrics.items():
        match = REGRET_METRIC.match(name)
        if match:
            cells[(int(match.group(1)), int(match.group(2)))] = np.asarray(m["curve_mean"], dtype=float)[:-1]
    if not cells:
        raise SpecError("no regret_<i>_<v> metrics in this run; list them in the spec's metrics")
    N, V = max(i for i, _ in cells), max(v for _, v in cells)
    T = len(next(iter(cells.values())))
    R = np.full((T, N, V), -np.inf)
    for (i, v), curve in cells.items():
        R[:, i - 1, v - 1] = curve
    return np.cumsum(R, axis=0).max(axis=2) / np.arange(1, T + 1)[:, None]


def _selected(plot_or_claim, runs, key="runs"):
    refs = plot_or_claim.get(key) or []
    return [r for r in runs if not refs or r["label"] in refs or r.get("group") in refs]


def _draw_regret(ax, plot, runs, traces):
    nodes = plot.get("nodes", "max")
    for r in _selected(plot, runs):
        curves = regret_curves(r["metrics"])
        tau = np.arange(1, curves.shape[0] + 1)
        if nodes == "each":
            for i in range(curves.shape[1]):
                ax.plot(tau, curves[:, i], lw=1.3, label=f"node {i + 1}")
        else:
            ax.plot(tau, curves.max(axis=1), lw=1.6, label=r["label"])
    ref = plot.get("reference")
    if ref:
        for r in runs:
            if r["label"] == ref:
                curves = regret_curves(r["metrics"])
                ax.plot(np.arange(1, curves.shape[0] + 1), curves.max(axis=1), "k--", lw=1.0,
                        label=f"{ref} (reference)")
    ax.set_xlabel("time T")
    label = "E[R_T^i] / T" if nodes == "each" else "max_i E[R_T^i] / T"
    ax.set_ylabel(label)
    ax.set_ylabel = lambda *a, **k: None  # keep this label: draw_plots would label the axis with the metric name


register_plotter("online_regret", _draw_regret, frozenset({"nodes", "reference"}))


# ---------------------------------------------------------------------------------------------- claims
def _members(refs, by_label):
    out = []
    for ref in refs:
        out += [lab for lab, r in by_label.items() if lab == ref or r.get("group") == ref]
    return out


def _claim_vanishing(c, by_label, metric):
    """max_i E[R_T^i]/T falls at T/10 -> T/2 -> T for every listed run, and ends below ``value`` if given."""
    labels = _members(c.get("runs") or [c["run"]], by_label)
    if not labels:
        return None, "no run matched"
    ok, parts = True, []
    for lab in labels:
        m = regret_curves(by_label[lab]["metrics"]).max(axis=1)
        T = len(m)
        pts = [m[max(T // 10 - 1, 0)], m[T // 2 - 1], m[-1]]
        holds = pts[0] > pts[1] > pts[2] and ("value" not in c or pts[2] < c["value"])
        ok &= holds
        parts.append(f"{lab}: {pts[0]:.4g} (T={max(T // 10, 1)}) -> {pts[1]:.4g} (T={T // 2}) -> {pts[2]:.4g} "
                     f"(T={T})")
    return ok, "; ".join(parts)


def _claim_order(c, by_label, metric):
    """Final max_i E[R_T^i]/T strictly increasing along ``runs`` (e.g. no DP, eps=5, eps=1, eps=0.5)."""
    labels = _members(c["runs"], by_label)
    if len(labels) < 2:
        return None, f"an order needs at least two runs, found {len(labels)}"
    vals = [regret_curves(by_label[lab]["metrics"]).max(axis=1)[-1] for lab in labels]
    increasing = c.get("direction", "increasing") == "increasing"
    holds = all((b > a) if increasing else (b < a) for a, b in zip(vals, vals[1:]))
    return holds, " -> ".join(f"{lab}: {v:.4g}" for lab, v in zip(labels, vals))


def _claim_nodes_alike(c, by_label, metric):
    """Final E[R_T^i]/T of every node within ``value`` (relative) of the node mean, for ``run``."""
    final = regret_curves(by_label[c["run"]]["metrics"])[-1]
    spread = float((final.max() - final.min()) / abs(final.mean()))
    return spread <= c["value"], (f"{c['run']}: per-node E[R_T^i]/T = " + ", ".join(f"{v:.4g}" for v in final)
                                  + f"; (max - min) / mean = {spread:.3g} (threshold {c['value']})")


register_claim_kind("regret_vanishing", _claim_vanishing)
register_claim_kind("regret_order", _claim_order)
register_claim_kind("regret_nodes_alike", _claim_nodes_alike)
