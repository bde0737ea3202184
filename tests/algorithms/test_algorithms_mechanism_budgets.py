"""Issue 23: budgets and declarations of DPDO-NC, D-ZOA + Gaussian, D-ZOA, ADMM sharing and FDML.

A total budget of epsilon 1 over 200 rounds gives a PLD guarantee within 1 % below 1; the exact per-release
calibration, the claim-only declaration of D-ZOA and the noise without a sensitivity analysis (Perturbation) are
each one object; the budget rules raise named errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privdist.algorithms.dpdonc import DPDONC
from privdist.algorithms.dzoa import CLAIM_REASON, DZOA
from privdist.algorithms.dzoa_gauss import DZOAGauss
from privdist.algorithms.fdml import FDMLSGD
from privdist.algorithms.sharing import ADMMSharing
from privdist.errors import ShapeMismatchError, ValidationError
from privdist.network import TimeVaryingNetwork, complete, s4_matrices
from privdist.privacy import GaussianMechanism, Identity, LaplaceMechanism, calibrate, privacy_report
from privdist.privacy.declared import GaussianClaim, Perturbation, noise_std
from privdist.privacy.exact_gaussian import exact_gaussian_mechanism
from privdist.problems.online import make_localization
from privdist.runtime import run
from test_algorithms_mechanism_releases import THETA, _squared, _vertical

DELTA = 1e-5


def _online(horizon):
    return make_localization(np.random.default_rng(0), horizon), TimeVaryingNetwork(s4_matrices())


@pytest.mark.parametrize("name", ["dzoa_gauss", "dpdonc", "admm_sharing"])
def test_total_budget_of_epsilon_1_over_200_rounds_is_met_within_1_percent(name):
    if name == "dzoa_gauss":
        algo, (problem, network) = DZOAGauss(epsilon=1.0, delta=DELTA, budget="total", local_solver="exact"), _squared()
    elif name == "dpdonc":
        algo, (problem, network) = DPDONC(theta=THETA, epsilon=1.0, delta=DELTA, budget="total"), _online(201)
    else:
        algo, (problem, network) = ADMMSharing(mode="output", epsilon=1.0, delta=DELTA, b1=1.0, budget="total"), \
            _vertical()
    result = run(algo, problem, network, 200, seed=0)
    report = privacy_report(result.ledger, DELTA, accountants=("pld", "rdp"))
    for agent in report["per_agent"]:
        assert agent["guaranteed"] and 0.99 <= agent["epsilon"]["pld"] <= 1.0
        assert agent["epsilon"]["pld"] <= agent["epsilon"]["rdp"] < 1.5  # RDP, the cross-check, is looser
    assert result.config["mechanism"]["budget"] == "total"


def test_dpdonc_budget_rules():
    for off in (None, float("inf"), False):  # TOML has no null: inf (or false) means no noise
        algo = DPDONC(theta=THETA, epsilon=off)
        assert algo.epsilon is None and isinstance(algo.mechanism, Identity) and not algo.private
        assert algo.sigma(1, 2, 1.0, THETA, 1 / 6) == 0.0
    assert DPDONC(theta=THETA, epsilon=2.0).mechanism == LaplaceMechanism(0.5)
    with pytest.raises(ValidationError, match="needs delta"):
        DPDONC(theta=THETA, epsilon=1.0, budget="total", rounds=10)
    with pytest.raises(ValidationError, match="delta"):
        DPDONC(theta=THETA, epsilon=1.0, delta=2.0)
    with pytest.raises(ValidationError, match="epsilon"):
        DPDONC(theta=THETA, epsilon=-1.0)
    problem, network = _online(20)
    with pytest.raises(ValidationError, match="rounds=5"):
        run(DPDONC(theta=THETA, epsilon=1.0, delta=DELTA, budget="total", rounds=5), problem, network, 10)
    # the per-step budget's noise scale is S4's sigma_t = 2 sqrt(d) alpha_t theta / (omega epsilon)
    assert DPDONC(theta=THETA, epsilon=5.0).sigma(3, 2, 1.0, THETA, 1 / 6) == pytest.approx(
        2 * math.sqrt(2) / 6 / math.sqrt(3) * THETA / 5.0, rel=1e-15)


def test_dzoa_gauss_calibrations_and_rules():
    exact = DZOAGauss(epsilon=0.15, delta=1e-3)
    assert exact.mechanism == GaussianMechanism(calibrate(0.15, 1e-3, 1, accountant="pld"), 0.15, 1e-3, None)
    classical = DZOAGauss(epsilon=0.15, delta=1e-3, calibration="classical")
    assert classical.mechanism.noise_multiplier == math.sqrt(2.1 * math.log(1.25 / 1e-3)) / 0.15
    assert classical.mechanism.composition == "dzoa"
    with pytest.raises(ValidationError, match="classical"):
        DZOAGauss(epsilon=0.5, calibration="classical", budget="total")
    with pytest.raises(ValidationError, match="epsilon < 1"):
        DZOAGauss(epsilon=1.0, calibration="classical")
    assert isinstance(DZOAGauss(epsilon=None).mechanism, Identity)
    assert isinstance(DZOAGauss(epsilon=False).mechanism, Identity)  # TOML's false
    # per-agent totals: the stricter agent gets more noise; run_info records the std the mechanism drew
    problem, network = _squared()
    eps = (0.5, 1.0, 2.0, 0.5, 1.0, 2.0)
    res = run(DZOAGauss(epsilon=eps, delta=DELTA, budget="total", local_solver="exact"), problem, network, 5)
    z = res.config["mechanism"]["noise_multiplier"]
    assert z[0] > z[1] > z[2] and z[0] == z[3]
    np.testing.assert_array_equal(res.final_state.sigma, res.final_state.sensitivity * np.asarray(z))


def test_exact_gaussian_mechanism_is_one_exact_release():
    mech = exact_gaussian_mechanism(0.5, 1e-5)
    rel = mech.releases([0])[0]
    assert rel.guarantee and rel.epsilon == 0.5 and rel.composition is None
    eps = privacy_report(_ledger_of([rel]), 1e-5, accountants=("pld",))["per_agent"][0]["epsilon"]["pld"]
    assert 0.499 <= eps <= 0.5
    assert isinstance(exact_gaussian_mechanism(None, 1e-5), Identity)
    total = exact_gaussian_mechanism((1.0, 2.0), 1e-5, budget="total", releases=50)
    assert total.noise_multiplier[0] > total.noise_multiplier[1]
    with pytest.raises(ValidationError, match=r"epsilon\[1\]"):
        exact_gaussian_mechanism((1.0, -1.0), 1e-5)


def _ledger_of(releases):
    from privdist.privacy import PrivacyLedger

    ledger = PrivacyLedger(1)
    for rel in releases:
        ledger.record(0, rel)
    return ledger


def test_dzoa_declares_its_claim_from_one_object():
    """D-ZOA adds no noise: its releases come from the block's GaussianClaim (never a guarantee), which draws
    nothing; exact_inner and a run without a target declare through Identity."""
    problem, network = _squared()
    algo = DZOA(epsilon=0.5, delta=1e-3, R=2.0, T=10, allow_outside_theorem=True, check_rows=False)
    res = run(algo, problem, network, 4)
    claim = res.final_state.declaration
    assert isinstance(claim, GaussianClaim) and not hasattr(claim, "privatize") and not claim.private
    for agent in range(network.n_agents):
        entries = res.ledger.entries(agent)
        assert entries == [(claim.releases([agent])[0], 4)]
        rel = entries[0][0]
        assert not rel.guarantee and rel.reason == CLAIM_REASON and rel.composition == "dzoa"
        assert rel.epsilon == res.final_state.calib.epsilon[agent]
        assert rel.event.noise_multiplier == pytest.approx(math.sqrt(2.1 * math.log(1250)) / rel.epsilon, rel=1e-15)
    assert np.all(noise_std(claim, 1.0, claim.agents) == 0)
    with pytest.raises(ShapeMismatchError, match="not covered"):
        claim.releases([99])
    with pytest.raises(ValidationError, match="reason"):
        GaussianClaim((0,), (1.0,), 1e-3, " ")
    exact = run(DZOA(epsilon=0.5, delta=1e-3, exact_inner=True, allow_outside_theorem=True, check_rows=False),
                problem, network, 2)
    assert isinstance(exact.final_state.declaration, Identity)
    assert "exact_inner=True" in exact.ledger.entries(0)[0][0].reason
    clear = run(DZOA(epsilon=None, mode="fixed", T=5, J=3, check_rows=False), problem, network, 2)
    assert isinstance(clear.final_state.declaration, Identity)


def test_sharing_budget_rules_and_noise_without_sensitivity():
    with pytest.raises(ValidationError, match="guaranteed mode"):
        ADMMSharing(mode="variable_isotropic", epsilon=1.0, b1=1.0, budget="total")
    with pytest.raises(ValidationError, match="guaranteed mode"):
        ADMMSharing(mode="output", epsilon=1.0, b1=1.0, clip=False, budget="total")
    guaranteed = ADMMSharing(mode="output", epsilon=0.5, delta=0.01, b1=1.0)
    assert guaranteed.mechanism.composition == "advanced" and guaranteed.mechanism.reason is None
    assert guaranteed.mechanism.noise_multiplier == math.sqrt(2.0 * math.log(1.25 / 0.01)) / 0.5
    claim = ADMMSharing(mode="paper_precision", epsilon=0.5, delta=0.01, b1=1.0)
    assert claim.mechanism.reason == claim.unenforced() and claim.mechanism.reason
    noisy = ADMMSharing(mode="variable_isotropic", noise_std=0.3)
    assert isinstance(noisy.mechanism, Perturbation) and not hasattr(noisy.mechanism, "privatize")
    problem, network = _vertical()
    res = run(noisy, problem, network, 3)
    rel = res.ledger.entries(0)[0][0]
    assert not rel.guarantee and "std 0.3" in rel.reason and "without a sensitivity bound" in rel.reason
    np.testing.assert_array_equal(res.final_state.sigma, 0.3)


def test_fdml_noise_is_a_perturbation_not_a_mechanism():
    algo = FDMLSGD(batch_size=10, noise_std=0.2)
    assert isinstance(algo.perturbation, Perturbation) and FDMLSGD(batch_size=10).perturbation is None
    problem, network = _vertical()
    res = run(algo, problem, network, 3)
    rel = res.ledger.entries(1)[0][0]
    assert rel == algo.perturbation.releases([1])[0] and not rel.guarantee and "std 0.2" in rel.reason
