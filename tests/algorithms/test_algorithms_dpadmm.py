"""DP-ADMM with a coordinator (spec §6.1)."""

import math

import numpy as np
import pytest

from privdist.algorithms import make_algorithm
from privdist.algorithms.dpadmm import DPADMM
from privdist.errors import ValidationError
from privdist.privacy import privacy_report
from privdist.privacy.paper import dzoa_epsilon
from privdist.problems import normalized_error, reference_solution
from privdist.runtime import AgentBlock, AgentStreams, run


@pytest.mark.parametrize("fixture", ["ridge_problem", "lasso_problem"])
def test_noiseless_dpadmm_reaches_the_solution(fixture, net5, request):
    prob = request.getfixturevalue(fixture)
    bc = reference_solution(prob)
    res = run(DPADMM(rho=1.0, eta0=3.0, epsilon=None, clip=False), prob, net5, 300,
              metrics={"ne": lambda B: normalized_error(B, bc)})
    assert res.curves["ne"][-1] < 1e-3


def test_noise_std_is_time_varying_sensitivity_times_multiplier(ridge_problem, net5):
    block = AgentBlock(np.arange(5), 5, net5.degrees)
    noisy, clean = DPADMM(epsilon=0.5, eta0=2.0), DPADMM(epsilon=None, eta0=2.0)
    state, _ = noisy.init(ridge_problem, net5, block, AgentStreams(0, 0, block.agents, 0))
    inbox = {"z": np.ones((5, 10)), "lam": np.full((5, 10), 0.1)}
    t = 9
    _, a = noisy.step(state, inbox, t, AgentStreams(0, 0, block.agents, t))
    _, b = clean.step(state, inbox, t, AgentStreams(0, 0, block.agents, t))
    z = math.sqrt(2.1 * math.log(1.25 / 1e-3)) / 0.5
    sigma = 2.0 / (20 * (1.0 + math.sqrt(t) / 2.0)) * z
    expected = AgentStreams(0, 0, block.agents, t).normal((10,), scale=sigma)
    np.testing.assert_allclose(a["w"] - b["w"], expected, rtol=1e-10, atol=1e-14)


def test_coordinator_duals_sum_to_zero_and_accounting(ridge_problem, net5):
    algo = DPADMM(epsilon=0.15)
    res = run(algo, ridge_problem, net5, 20)
    lam = res.final_coordinator_state.lam
    assert np.abs(lam.sum(axis=0)).max() < 1e-10 and np.abs(lam).max() > 0
    rep = privacy_report(res.ledger, 1e-3)
    assert rep["per_agent"][0]["epsilon"]["paper"] == pytest.approx(dzoa_epsilon(0.15, 1e-3, 20))
    assert any("clipped" in a for a in res.ledger.assumptions)


def test_dpadmm_rejects_bad_values():
    for kw in ({"rho": 0}, {"eta0": -1}, {"epsilon": -0.1}, {"delta": 2.0}, {"gaussian_constant": 3.0}):
        with pytest.raises(ValidationError):
            make_algorithm("dpadmm", **kw)
