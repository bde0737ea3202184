"""D-ZOA + Gaussian (issue 12): the noise drawn is the noise declared, the sensitivity holds on worst-case
neighbouring datasets, and the report is a guarantee equal to dp-accounting's value."""

import math
from dataclasses import replace

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.gaussian_mechanism import get_epsilon_gaussian
from dp_accounting.rdp import RdpAccountant

from conftest import make_dzoa_problem
from privdist.algorithms import make_algorithm
from privdist.algorithms.dzoa_gauss import DZOAGauss, huber, huber_dz
from privdist.errors import ValidationError
from privdist.privacy import privacy_report
from privdist.problems import HorizontalERM
from privdist.runtime import AgentBlock, AgentStreams, run


def _state_and_inbox(algo, problem, net, rounds=4):
    state = run(algo, problem, net, rounds, seed=1).final_state
    return state, {"beta": net.adjacency.toarray() @ state.beta}


def test_huber_derivative_is_the_clipped_squared_loss_derivative():
    r = np.linspace(-3, 3, 601)
    np.testing.assert_allclose(np.gradient(huber(r, 1.0), r)[1:-1], huber_dz(r, 1.0)[1:-1], atol=1e-2)
    assert np.abs(huber_dz(r, 1.0)).max() == 1.0 and huber(np.array([0.3]), 1.0)[0] == pytest.approx(0.09)


@pytest.mark.parametrize("calibration", ["exact", "classical"])
def test_noise_drawn_has_the_declared_std(ridge_problem, net5, calibration):
    """3000 coordinates (60 replicates x 5 agents x 10): (release - noise-free output) / sigma_k has std 1 +- 5 %."""
    algo = DZOAGauss(epsilon=0.5, delta=1e-3, calibration=calibration, T=5, J=4)
    state, inbox = _state_and_inbox(algo, ridge_problem, net5)
    z = algo.dp_events(state, 5)[0].event.noise_multiplier
    np.testing.assert_allclose(state.sigma, z * state.sensitivity, rtol=1e-12)
    ratios = []
    for s in range(60):
        out = algo.step(state, inbox, 5, AgentStreams(s, 0, np.arange(5), 5))[1]["beta"]
        clean = algo.local_output(state, inbox, AgentStreams(s, 0, np.arange(5), 5))[0]
        ratios.append((out - clean) / state.sigma[:, None])
    ratios = np.concatenate(ratios).ravel()
    assert ratios.size >= 2000
    assert abs(ratios.std() - 1.0) < 0.05 and abs(ratios.mean()) < 0.1


def _neighbour(problem, agent, row, x, label):
    parts = [(X.copy(), y.copy()) for X, y in problem.parts()]
    parts[agent][0][row], parts[agent][1][row] = x, label
    return HorizontalERM(parts, problem.loss, problem.regularizer, problem.reg_weight)


@pytest.mark.parametrize("local_solver", ["zo", "exact"])
@pytest.mark.parametrize("reg", ["l1", "l2"])
def test_noise_free_release_moves_at_most_the_declared_sensitivity(net5, reg, local_solver):
    """Worst case the assumptions allow: one row replaced by a unit-norm row with an extreme label (both signs),
    same state, same inbox, same inner-loop seed. The move stays below Delta_k and reaches a good part of it."""
    base = make_dzoa_problem(2, reg)
    algo = DZOAGauss(epsilon=0.5, T=20, J=8, local_solver=local_solver)
    state, inbox = _state_and_inbox(algo, base, net5)
    block = AgentBlock(np.arange(5), 5, net5.degrees)
    u = np.full(10, 1 / math.sqrt(10))
    big = 1e3 * np.abs(base.y).max()
    worst = np.zeros(5)
    for agent in range(5):
        for sign in (1.0, -1.0):
            a = _neighbour(base, agent, 0, u, sign * big)
            b = _neighbour(base, agent, 0, u, -sign * big)
            outs = []
            for prob in (a, b):
                st = algo.init(prob, net5, block, AgentStreams(0, 0, block.agents, 0))[0]
                st = replace(st, beta=state.beta, gamma=state.gamma)
                outs.append(algo.local_output(st, inbox, AgentStreams(9, 0, block.agents, 5))[0])
            moved = np.linalg.norm(outs[0] - outs[1], axis=1)
            others = np.delete(moved, agent)
            assert np.all(others == 0.0)  # the other agents' data did not change
            worst[agent] = max(worst[agent], moved[agent])
    assert np.all(worst <= state.sensitivity), worst / state.sensitivity
    base = state.sensitivity / (1 + 2 * algo.tau_rel)  # 2 c1 / (N_k mu_k), the exact minimiser's bound
    assert np.all(worst >= 0.25 * base), worst / base  # not vacuous: a good part of the bound is reached


def test_unnormalised_rows_are_clipped_so_the_bound_still_holds(net5):
    base = make_dzoa_problem(3, "l2")
    algo = DZOAGauss(epsilon=0.5, T=10, J=4)
    state, inbox = _state_and_inbox(algo, base, net5)
    block = AgentBlock(np.arange(5), 5, net5.degrees)
    outs = []
    for x, label in ((50.0 * np.eye(10)[0], 1e4), (-50.0 * np.eye(10)[0], 1e4)):
        st = algo.init(_neighbour(base, 1, 2, x, label), net5, block, AgentStreams(0, 0, block.agents, 0))[0]
        st = replace(st, beta=state.beta, gamma=state.gamma)
        outs.append(algo.local_output(st, inbox, AgentStreams(3, 0, block.agents, 5))[0])
    assert np.linalg.norm(outs[0][1] - outs[1][1]) <= state.sensitivity[1]


@pytest.mark.parametrize("calibration,composition", [("exact", None), ("classical", "dzoa")])
def test_report_is_a_guarantee_equal_to_dp_accounting(ridge_problem, net5, calibration, composition):
    algo = make_algorithm("dzoa_gauss", epsilon=0.15, delta=1e-3, calibration=calibration, T=5, J=4)
    M = 7
    res = run(algo, ridge_problem, net5, M)
    rel = algo.dp_events(res.final_state, M)[0]
    z = rel.event.noise_multiplier
    assert rel.guarantee and rel.composition == composition
    if calibration == "exact":  # calibrated to exactly (0.15, 1e-3) per release, never below
        assert get_epsilon_gaussian(z, 1e-3) == pytest.approx(0.15, rel=1e-6)
        assert get_epsilon_gaussian(z, 1e-3) <= 0.15
    else:
        assert z == pytest.approx(math.sqrt(2.1 * math.log(1250)) / 0.15)
    rdp = RdpAccountant()
    rdp.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), M))
    report = privacy_report(res.ledger, 1e-3)
    assert report["not_guaranteed"] == []
    for entry in report["per_agent"]:
        assert entry["guaranteed"] is True
        assert entry["epsilon"]["pld"] == pytest.approx(get_epsilon_gaussian(z / math.sqrt(M), 1e-3), rel=1e-9)
        assert entry["epsilon"]["rdp"] == pytest.approx(rdp.get_epsilon(1e-3), rel=1e-9)
        assert entry["claimed"] == {"rdp": entry["epsilon"]["rdp"], "pld": entry["epsilon"]["pld"]}


def test_bad_inputs_raise_named_errors(net5):
    with pytest.raises(ValidationError, match="epsilon < 1"):
        DZOAGauss(epsilon=1.5, calibration="classical")
    with pytest.raises(ValidationError, match="calibration"):
        DZOAGauss(calibration="paper")
    with pytest.raises(ValidationError, match="squared"):
        run(DZOAGauss(), make_dzoa_problem(0, "l2", loss="logistic"), net5, 1)
    res = run(DZOAGauss(epsilon=None, T=3, J=2), make_dzoa_problem(0, "l2"), net5, 2)
    assert privacy_report(res.ledger, 1e-3)["per_agent"][0]["epsilon"]["pld"] == math.inf
