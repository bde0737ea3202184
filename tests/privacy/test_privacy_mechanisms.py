"""Issue 23: mechanism objects draw the noise they declare (spread over many releases, and a threshold test between
neighbouring inputs that never refutes the declared epsilon but comes close to it), and budgets become mechanisms
in one place (a total budget's PLD guarantee equals the request)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privdist.errors import ShapeMismatchError, UnknownNameError, ValidationError
from privdist.privacy import (GammaNormMechanism, GaussianMechanism, Identity, LaplaceMechanism, agent_epsilon,
                              gamma_norm_mechanism, gaussian_mechanism, gaussian_release, laplace_mechanism,
                              mechanism_from_dict)
from privdist.privacy.audit_stats import threshold_audit
from privdist.runtime import AgentStreams

N_REL = 20_000


def _streams(agents, round_=1, seed=0):
    return AgentStreams(seed, 0, np.asarray(agents), round_)


def _many(mech, values, sensitivity, n=N_REL):
    """``n`` independent releases of one agent's ``values`` (one stream per release)."""
    rows = np.repeat(np.asarray(values, dtype=float)[None, :], n, axis=0)
    return mech.privatize(rows, sensitivity, np.random.default_rng(7))


def test_gaussian_spread_matches_declared_multiplier():
    mech = GaussianMechanism(2.5)
    noise = _many(mech, np.zeros(4), 0.3)
    assert noise.std() == pytest.approx(2.5 * 0.3, rel=0.02)
    assert mech.releases([0, 1]) == [gaussian_release(2.5)] * 2


def test_laplace_and_gamma_norm_spread():
    lap = _many(LaplaceMechanism(1.5), np.zeros(3), 0.2)
    assert np.abs(lap).mean() == pytest.approx(1.5 * 0.2, rel=0.02)
    gam = _many(GammaNormMechanism(0.8), np.zeros(5), 0.4)
    assert np.linalg.norm(gam, axis=1).mean() == pytest.approx(5 * 0.4 / 0.8, rel=0.02)  # E||w|| = dim Delta / eps


@pytest.mark.parametrize("mech, delta", [(GaussianMechanism(2.0), 1e-5), (LaplaceMechanism(1.0), 0.0)])
def test_threshold_audit_between_neighbours_is_close_to_declared_epsilon(mech, delta):
    """Neighbouring inputs at distance = sensitivity: the empirical lower bound never exceeds the declared epsilon
    (PLD of one release) and reaches a good share of it (a larger drawn noise than declared would show here)."""
    sens = 1.0
    x0 = _many(mech, np.zeros(1), sens, 50_000)
    x1 = mech.privatize(np.full((50_000, 1), sens), sens, np.random.default_rng(8))
    test = threshold_audit(x0, x1, max(delta, 1e-5))
    declared = agent_epsilon(((mech.releases([0])[0], 1),), max(delta, 1e-5), "pld")
    lower = test.bounds[max(delta, 1e-5)]["epsilon_lb"]
    assert lower <= declared
    assert lower >= 0.5 * declared  # measured: Gaussian 1.29 of 1.99, Laplace 0.95 of 1.00


def test_noise_at_half_the_declared_scale_is_refuted():
    """The same audit catches a mechanism that draws half the noise it declares."""
    x0 = _many(GaussianMechanism(1.5), np.zeros(1), 1.0, 50_000)
    x1 = GaussianMechanism(1.5).privatize(np.ones((50_000, 1)), 1.0, np.random.default_rng(8))
    declared = agent_epsilon(((GaussianMechanism(3.0).releases([0])[0], 1),), 1e-5, "pld")  # 1.27; measured 1.74
    assert threshold_audit(x0, x1, 1e-5).bounds[1e-5]["epsilon_lb"] > declared


def test_per_agent_levels_follow_agent_ids():
    mech = GaussianMechanism((1.0, 4.0, 2.0))
    rows = np.zeros((2, 20_000))
    noise = mech.privatize(rows, 1.0, _streams([2, 1]))  # a block of agents 2 and 1
    assert noise[0].std() == pytest.approx(2.0, rel=0.03) and noise[1].std() == pytest.approx(4.0, rel=0.03)
    assert [r.event.noise_multiplier for r in mech.releases([2, 1])] == [2.0, 4.0]
    with pytest.raises(ShapeMismatchError):
        mech.privatize(np.zeros((1, 2)), 1.0, _streams([3]))


def test_streams_give_the_samplers_numbers():
    """Row i is drawn from agent i's own stream, as AgentStreams.normal draws it (bit-identical transcripts)."""
    s1, s2 = _streams([0, 1, 2], 4), _streams([0, 1, 2], 4)
    sens = np.array([0.1, 0.2, 0.3])
    got = GaussianMechanism(3.0).privatize(np.ones((3, 5)), sens, s1)
    assert np.array_equal(got, np.ones((3, 5)) + s2.normal((5,), scale=sens * 3.0))


def test_uses_compose_exactly():
    g = GaussianMechanism(2.0).releases([0], uses=4)[0]
    assert g.event.noise_multiplier == 1.0  # 4 Gaussians of z = 2 are one of z / 2
    lap = LaplaceMechanism(2.0).releases([0], uses=4)[0]
    assert lap.epsilon == pytest.approx(2.0)  # pure DP adds: 4 x 0.5
    assert GammaNormMechanism(0.25).releases([0], uses=2)[0].epsilon == pytest.approx(0.5)


def test_identity_is_in_the_clear():
    mech = Identity("x: iterates sent without noise")
    values = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(mech.privatize(values, 1.0, _streams([0, 1])), values) and not mech.private
    rel = mech.releases([0, 1])
    assert len(rel) == 2 and not rel[0].guarantee
    assert agent_epsilon(((rel[0], 1),), 1e-5, "pld") == math.inf


@pytest.mark.parametrize("mech", [GaussianMechanism(1.5, 0.3, 1e-3, "dzoa"), GaussianMechanism((1.0, 2.0)),
                                  LaplaceMechanism(2.0, reason="an assumed bound"), GammaNormMechanism((0.1, 0.2)),
                                  Identity("y: sent in the clear")])
def test_round_trip(mech):
    assert mechanism_from_dict(mech.to_dict()) == mech


def test_named_errors():
    with pytest.raises(ValidationError):
        GaussianMechanism(-1.0)
    with pytest.raises(ValidationError):
        GaussianMechanism(1.0).privatize(np.zeros((2, 2)), -1.0, _streams([0, 1]))
    with pytest.raises(ShapeMismatchError):
        GaussianMechanism(1.0).privatize(np.zeros((2, 2)), [1.0, 2.0, 3.0], _streams([0, 1]))
    with pytest.raises(UnknownNameError):
        mechanism_from_dict({"kind": "cauchy"})
    with pytest.raises(ValidationError):
        GaussianMechanism(1.0).releases([0], uses=0)


@pytest.mark.parametrize("builder, kind", [(gaussian_mechanism, "gaussian"), (laplace_mechanism, "laplace"),
                                           (gamma_norm_mechanism, "gamma_norm")])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_total_budget_pld_guarantee_equals_request(builder, kind, epsilon):
    mech = builder(epsilon, budget="total", releases=200, delta=1e-5) if kind != "gaussian" else \
        builder(epsilon, 1e-5, budget="total", releases=200)
    assert mech.kind == kind
    got = agent_epsilon(((mech.releases([0])[0], 200),), 1e-5, "pld")
    assert 0.99 * epsilon <= got <= epsilon


def test_per_party_total_budgets():
    mech = gaussian_mechanism((0.5, 2.0), 1e-5, budget="total", releases=100)
    eps = [agent_epsilon(((r, 100),), 1e-5, "pld") for r in mech.releases([0, 1])]
    assert 0.495 <= eps[0] <= 0.5 and 1.98 <= eps[1] <= 2.0  # the stricter party gets more noise
    assert mech.noise_multiplier[0] > mech.noise_multiplier[1]


def test_round_budget_and_no_budget():
    mech = gaussian_mechanism(0.15, 1e-3, constant=2.1)
    assert mech.noise_multiplier == pytest.approx(math.sqrt(2.1 * math.log(1.25e3)) / 0.15)
    assert mech.composition == "dzoa" and mech.epsilon == 0.15
    assert isinstance(gaussian_mechanism(None, 1e-3), Identity)
    with pytest.raises(UnknownNameError):
        gaussian_mechanism(1.0, 1e-5, budget="per_round")
    with pytest.raises(ValidationError):
        gaussian_mechanism(1.0, 1e-5, budget="total")  # no release count
    with pytest.raises(ValidationError):
        laplace_mechanism(1.0, budget="total", releases=10)  # no delta for the PLD target
