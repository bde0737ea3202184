"""Issue 40: property tests over the ``[privacy] pairwise*`` options (the suite of issue 15,
``test_experiments_fuzz.py``, extended to the per-pair report).

Generated specs (observer lists valid and not, tolerances, topologies and sizes from 1 agent, modelled and
unmodelled algorithms) run end to end, figures included. Each must end in a complete ``results.json`` with
``summary.md``, ordered summaries and one figure per modelled run with pairs, or in a one-line named error
(:class:`~privdist.errors.PrivdistError`); any other exception fails. The fast suite runs 8 examples, the
slow-marked twin 300.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from privdist.errors import PrivdistError
from privdist.experiments import parse_spec, run_experiment

RUNS = {
    "dpsgd": {"algorithm": "dpsgd", "params": {"alpha0": 0.3, "epsilon": 1.0}},
    "dpsgd_default": {"algorithm": "dpsgd", "params": {}},
    "dpsgd_round": {"algorithm": "dpsgd", "params": {"epsilon": 0.5, "budget": "round"}},
    "dpsgd_correlated": {"algorithm": "dpsgd", "params": {"trust": "correlated", "epsilon": 1.0}},  # refused
    "dpadmm": {"algorithm": "dpadmm", "params": {"rho": 1.0, "eta0": 1.0, "epsilon": 1.0}},
    "dzoa_gauss": {"algorithm": "dzoa_gauss", "params": {"epsilon": 1.0, "T": 3}},  # no per-pair model
    "consensus_admm": {"algorithm": "consensus_admm", "params": {}},  # not private
}
RTOL = [1e-12, 1e-6, 1e-3, 2e-2, 0.5, 0.5000001, 0.0, -1e-3, 1.0, math.nan, math.inf, "0.01", True]


@st.composite
def networks(draw, n: int) -> dict:
    kind = draw(st.sampled_from(["ring", "complete", "star", "random_regular", "erdos_renyi", "dzoa5"]))
    if kind == "dzoa5":
        return {"kind": kind, "params": {}}
    params = {"n": n}
    if kind == "random_regular":
        params["d"] = draw(st.integers(1, 4))
    if kind == "erdos_renyi":
        params["p"] = draw(st.sampled_from([0.3, 0.7, 1.0]))
    return {"kind": kind, "params": params}


def observers(n: int):
    party = st.integers(-2, n + 2)
    return st.one_of(
        st.lists(st.integers(0, max(n - 1, 0)), min_size=1, max_size=4),  # valid agents
        st.lists(party, min_size=0, max_size=4),  # negatives, the coordinator N, out of range, []
        st.sampled_from([[0.0], ["1"], [[0, 1]], [True], 3, "0,1", [2**63]]),  # wrong types
    )


@st.composite
def pairwise_specs(draw, max_agents: int = 9) -> dict:
    n = draw(st.integers(1, max_agents))
    network = draw(networks(n))
    n_data = 5 if network["kind"] == "dzoa5" else n
    privacy = {"delta": 1e-5, "budget": "total", "pairwise": draw(st.sampled_from([True, True, True, False]))}
    if draw(st.booleans()):
        privacy["pairwise_observers"] = draw(observers(n_data))
    if draw(st.booleans()):
        privacy["pairwise_rtol"] = draw(st.sampled_from(RTOL))
    labels = draw(st.lists(st.sampled_from(sorted(RUNS)), min_size=1, max_size=2, unique=True))
    return {"name": "pwfz", "trials": 1, "rounds": draw(st.integers(1, 5)), "seed": draw(st.integers(0, 3)),
            "data": {"kind": "dzoa_synthetic",
                     "params": {"n_agents": n_data, "samples_per_agent": 3, "n_features": 2}},
            "network": network, "problem": {"loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
            "privacy": privacy, "runs": [{"label": k, **RUNS[k]} for k in labels]}


def _ordered(stats: dict) -> bool:
    values = [stats[k] for k in ("min", "median", "max")]
    if any(v is None for v in values):
        return all(v is None for v in values)
    values = [float(v) for v in values]  # results.json writes inf as "inf"
    return values[0] <= values[1] <= values[2]


def _check(raw: dict, out) -> None:
    try:
        run_experiment(parse_spec(raw), out, progress=False)
    except PrivdistError as exc:  # a named error, on one line
        assert "\n" not in str(exc).strip(), str(exc)
        event(f"named error: {type(exc).__name__}")
        return
    event("complete")
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] and (out / "summary.md").is_file() and not data.get("figure_errors")
    for r in data["runs"]:
        pw = r["privacy"].get("pairwise")
        assert (pw is not None) == raw["privacy"]["pairwise"]
        if pw is None or pw["status"] != "model":
            continue
        for group in [pw["summary"], *pw["by_distance"], *pw["by_distance_common"]]:
            assert all(_ordered(group[k]) for k in ("mu", "epsilon", "local_epsilon", "local_over_pair_epsilon"))
        figure = any(f.startswith("pairwise_" + r["label"]) and f.endswith(".png") for f in data["figures"])
        assert figure == (pw["summary"]["pairs"] > 0), (r["label"], pw["summary"]["pairs"], data["figures"])


FAST = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, max_examples=8)


@settings(FAST)
@given(raw=pairwise_specs(max_agents=6))
def test_generated_pairwise_specs_end_in_summary_and_figure_or_named_error(raw, tmp_path_factory):
    _check(raw, tmp_path_factory.mktemp("pw") / "out")


@pytest.mark.slow
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=300)
@given(raw=pairwise_specs(max_agents=24))
def test_generated_pairwise_specs_slow(raw, tmp_path_factory):
    _check(raw, tmp_path_factory.mktemp("pw") / "out")
