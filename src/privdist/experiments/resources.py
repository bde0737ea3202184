"""Memory and time a validated spec needs, estimated before any data is generated (issue 15).

:func:`check_resources` refuses an experiment above :data:`MAX_BYTES` or :data:`MAX_SECONDS` (the limits of
:mod:`privdist._checks`, shared with ``fit`` and ``audit``) unless the caller confirms it (``allow_large=True``,
``privdist run --yes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import MAX_BYTES, MAX_SECONDS, check_estimate
from .validate import data_kinds, n_agents_of_network

__all__ = ["Estimate", "estimate", "check_resources", "MAX_BYTES", "MAX_SECONDS"]


@dataclass(frozen=True)
class Estimate:
    """What a spec needs: peak memory in bytes and serial CPU seconds (both rough upper-end estimates)."""

    bytes: float
    seconds: float
    agents: int
    samples: int
    features: int


_FIXED_SHAPES = {"adult": (45222, 104), "a9a": (32561, 123), "a9a.t": (16281, 123), "generated": (0, 0)}


def _data_shape(spec) -> tuple[int, int]:
    kind, params = spec.data.kind, spec.data.params
    defaults = {k: d for k, (_, d) in data_kinds().get(kind, {}).items()}
    get = {**defaults, **params}.get
    if kind == "dzoa_synthetic":
        return get("n_agents") * get("samples_per_agent"), get("n_features")
    if kind in ("gisette", "gisette_synthetic"):
        return get("n_train") + get("n_test"), get("n_features")
    if kind in ("a9a", "a9a.t") and isinstance(get("n_features"), int):
        return _FIXED_SHAPES[kind][0], get("n_features")
    return _FIXED_SHAPES.get(kind, (0, 0))


def estimate(spec) -> Estimate:
    """Rough memory and time needs of a validated spec (before any data is generated).

    Memory: the data three times (loaded, partitioned, reference solve), a dozen (agents x features) state arrays,
    and the per-round curves of every trial, run and metric (kept in memory and in the trial files). Time: about
    0.1 ms of per-round overhead plus one pass over the data (1e9 values per second) per round, run and trial,
    and the spec's own ``estimated_seconds`` if larger.
    """
    samples, features = _data_shape(spec)
    agents = n_agents_of_network(spec.network) or spec.data.params.get("n_agents") or 1
    if spec.problem["kind"].startswith("online_"):
        features = spec.problem.get("dim", 2)
        agents = spec.problem.get("n_agents", agents)
        samples = agents * (spec.rounds + 1)
    n_runs, n_metrics = len(spec.runs), len(spec.metrics)
    data_bytes = 3.0 * 8 * samples * features
    state_bytes = 12.0 * 8 * agents * max(features, 1) + 8.0 * agents * agents
    curve_bytes = 40.0 * spec.trials * n_runs * n_metrics * (spec.rounds + 1)
    per_round = 1e-4 + (samples * features + agents * max(features, 1)) / 1e9
    seconds = spec.trials * (n_runs * spec.rounds * per_round + samples * features / 1e8)
    return Estimate(data_bytes + state_bytes + curve_bytes, max(seconds, spec.estimated_seconds), int(agents),
                    int(samples), int(features))


def check_resources(spec, allow_large: bool = False) -> Estimate:
    """The :func:`estimate` of ``spec``; raise above :data:`MAX_BYTES` or :data:`MAX_SECONDS` unless allowed.

    Raises:
        ResourceLimitError: the estimate is above a limit and ``allow_large`` is false.
    """
    est = estimate(spec)
    check_estimate(f"experiment {spec.name!r}", est.bytes, est.seconds, allow_large,
                   f"{spec.trials} trials x {len(spec.runs)} runs x {spec.rounds} rounds, {est.agents} agents, "
                   f"{est.samples} x {est.features} data")
    return est
