"""privdist.audit: canaries, releases through run(), the CI audit of every guarantee, a broken sigma is caught."""

import json
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from privdist.algorithms import ALGORITHMS, make_algorithm
from privdist.algorithms.dpsgd import DPSGD
from privdist.audit import (LinearCost, audit, copies_are_independent, first_releasing_rounds, neighbours,
                            problem_for, problem_kind, small_problem)
from privdist.cli.main import main

from conftest import HalfNoiseStreams

#: Typical private configuration of an algorithm whose default runs without noise or needs a public constant.
TYPICAL_PRIVATE = {"admm_sharing": {"mode": "output", "epsilon": 1.0, "b1": 10.0}, "dzoa": {"R": 9.0}}


def _algorithm(name):
    return make_algorithm(name, **TYPICAL_PRIVATE.get(name, {}))


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_ci_audit_every_declared_guarantee(name):
    """Fast audit (worst-case canary, small N) of every registered algorithm that declares a guarantee, over the
    fewest rounds in which it releases: fails when the empirical lower bound exceeds the guarantee of those rounds."""
    algo = _algorithm(name)
    rounds = first_releasing_rounds(algo)
    if rounds is None:
        pytest.skip(f"{name} declares no guarantee in 1-3 rounds of its default/typical private configuration")
    problem, network = problem_for(algo, rounds)
    d0, d1 = neighbours(problem, "worst")
    # seconds each: 2000 releases per dataset when one run yields many (disjoint copies), else 300 (40 for D-ZOA)
    n = 2000 if copies_are_independent(algo, d0, d1, network, rounds, 0) else 40 if name == "dzoa" else 300
    res = audit(algo, problem, network, releases=n, rounds=rounds, canary="worst")
    assert res.claims["guaranteed"] and math.isfinite(res.claims["guarantee"])
    assert res.verdict == "consistent", (
        f"{name}: empirical epsilon >= {res.epsilon_lb:.4g} (95%) refutes its guarantee {res.claims['guarantee']:.4g}")


@dataclass(frozen=True)
class _BrokenDPSGD(DPSGD):
    """DPSGD that declares its sigma but draws half of it."""

    name: ClassVar[str] = "dpsgd"

    def step(self, state, inbox, t, rng):
        return super().step(state, inbox, t, HalfNoiseStreams(rng))


def test_halved_sigma_is_refuted_and_the_honest_one_is_not():
    honest = audit(DPSGD(epsilon=2.0), releases=3000)
    broken = audit(_BrokenDPSGD(epsilon=2.0), releases=3000)
    assert honest.claims["guarantee"] == broken.claims["guarantee"]  # same declaration
    assert honest.verdict == "consistent"
    assert broken.verdict == "refuted" and broken.epsilon_lb > broken.claims["guarantee"]


@pytest.mark.parametrize("canary", ["extreme", "worst"])
def test_dzoa_paper_claim_is_refuted(canary, tmp_path, capsys):
    """D-ZOA adds no noise: its nearly deterministic release refutes the paper's per-release claim with small N,
    whether its declared events are guarantees or (after the privacy-truth fix) claims."""
    out = tmp_path / "dzoa.json"
    assert main(["audit", "dzoa", "--claim", "paper", "--canary", canary, "--releases", "40",
                 "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["verdict"] == "refuted" and d["audited_claim"] <= 0.15 < d["epsilon_lb_at_paper_delta"]
    assert "verdict (paper): refuted" in capsys.readouterr().out


@pytest.mark.slow
def test_dpsgd_one_round_bound_is_within_a_factor_two_of_the_claim():
    res = audit(make_algorithm("dpsgd"), releases=1_000_000, jobs=2)
    assert res.verdict == "consistent"
    assert res.epsilon_lb >= res.claims["guarantee"] / 2, (res.epsilon_lb, res.claims["guarantee"])
    print(f"dpsgd one round: lower bound {res.epsilon_lb:.4f}, guarantee {res.claims['guarantee']:.4f}")


# ---------------------------------------------------------------------------------------------- canaries
def test_horizontal_canaries_replace_one_record_in_range():
    problem, _ = small_problem("horizontal")
    for canary in ("worst", "extreme"):
        d0, d1 = neighbours(problem, canary, target=1)
        diff = [np.flatnonzero(np.any(a[0] != b[0], axis=1) | (a[1] != b[1])) for a, b in zip(d0.parts(), d1.parts())]
        assert [len(x) for x in diff] == [0, 1, 0, 0, 0]
        assert max(np.linalg.norm(X, axis=1).max() for X, _ in d1.parts()) <= 1 + 1e-12
        assert d0.local_reg == problem.local_reg


def test_vertical_canaries_change_one_column_by_at_most_one():
    problem, _ = small_problem("vertical")
    for canary in ("worst", "extreme"):
        d0, d1 = neighbours(problem, canary, target=2)
        assert problem_kind(d0) == "vertical"
        diffs = [np.asarray(a) - np.asarray(b) for a, b in zip(d0.blocks, d1.blocks)]
        assert [bool(np.any(x)) for x in diffs] == [False, False, True, False, False]
        assert np.count_nonzero(np.any(diffs[2], axis=0)) == 1 and np.linalg.norm(diffs[2]) <= 1 + 1e-12


def test_online_canaries_change_one_node_cost_within_the_gradient_bound():
    problem, _ = small_problem("online", horizon=5)
    d0, d1 = neighbours(problem, "worst", target=3)
    X = np.zeros((5, 2))
    g0, g1 = d0.grads(1, X), d1.grads(1, X)
    np.testing.assert_array_equal(np.delete(g0, 3, 0), np.delete(g1, 3, 0))
    assert np.linalg.norm(g0[3]) == pytest.approx(problem.grad_bound)
    assert isinstance(d0.subset([2, 3]), LinearCost) and d0.subset([2, 3]).node == 1


def test_copies_are_used_only_when_an_agent_ignores_the_other_copies():
    problem, network = small_problem("horizontal")
    d0, d1 = neighbours(problem, "worst")
    assert copies_are_independent(make_algorithm("dpsgd"), d0, d1, network, 1, 0)
    online, net = small_problem("online", horizon=3)
    o0, o1 = neighbours(online, "worst")
    # DPDO-NC's default step size is 1/N over all agents: the copies would change it, so it runs run by run
    assert not copies_are_independent(make_algorithm("dpdonc"), o0, o1, net, 1, 0)


def test_audit_cli_errors_and_plot(tmp_path, capsys):
    assert main(["audit", "dpsgd", "--canary", "nope"]) == 2
    assert main(["audit", "nosuch"]) == 2
    assert main(["audit", "dpsgd", "--claim", "both"]) == 2
    assert main(["audit", "dpsgd", "--params", "epsilon"]) == 2
    err = capsys.readouterr().err
    assert all(line.startswith("error: ") for line in err.strip().splitlines())
    plot = tmp_path / "region"
    assert main(["audit", "dpsgd", "--params", "epsilon=1.0", "--releases", "200", "--plot", str(plot)]) == 0
    assert (tmp_path / "region.png").exists() and (tmp_path / "region.svg").exists()


def test_whole_run_audit_composes_the_same_rounds():
    res = audit(make_algorithm("dpsgd"), releases=100, rounds=3)
    assert res.rounds == 3 and res.claims["releases"] == 3 and res.verdict == "consistent"
    one = audit(make_algorithm("dpsgd"), releases=100, rounds=1)
    assert res.claims["guarantee"] > one.claims["guarantee"]


def test_coordinator_release_of_an_algorithm_whose_agents_send_nothing():
    res = audit(make_algorithm("orzo"), releases=30)
    assert res.verdict == "not guaranteed" and res.mode == "runs"
    assert res.claims["guarantee"] == math.inf


def test_audit_a_spec_run_on_its_own_problem(tmp_path, capsys):
    out = tmp_path / "qs.json"
    assert main(["audit", "quickstart", "--releases", "50", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["algorithm"] == "dpsgd" and d["params"]["alpha0"] == 0.3  # the spec's first private run
    assert main(["audit", "quickstart", "--run", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("error: spec 'quickstart' has no run 'nosuch'")


def test_replicates_on_ray_equal_the_processes():
    """--backend ray: the replicate batches run as Ray tasks and give exactly the releases of a serial audit."""
    pytest.importorskip("ray")
    from privdist.audit.releases import collect_releases
    from privdist.runtime.ray_backend import connect

    algo = make_algorithm("dpsgd")
    problem, network = problem_for(algo, 1)
    d0, d1 = neighbours(problem, "worst")
    serial = collect_releases(algo, d0, d1, network, 1, 64, jobs=2)
    connect(num_cpus=1)
    on_ray = collect_releases(algo, d0, d1, network, 1, 64, jobs=2, parallel="ray")
    assert on_ray[2]["parallel"] == "ray"
    np.testing.assert_array_equal(serial[0], on_ray[0])
    np.testing.assert_array_equal(serial[1], on_ray[1])


def test_cli_audit_of_dpmm_defaults_to_the_rounds_in_which_it_releases(capsys):
    """dpmm's last round only delivers the model: a one-round audit would audit nothing, so the CLI picks 2."""
    assert main(["audit", "dpmm", "--releases", "50"]) == 0
    out = capsys.readouterr().out
    assert "(rounds: 2, the fewest in which dpmm releases" in out and "2 round(s)" in out
    assert main(["audit", "dpsgd", "--releases", "50"]) == 0
    assert "1 round(s)" in capsys.readouterr().out
