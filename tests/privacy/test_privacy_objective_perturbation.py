"""Objective perturbation as a mechanism object and the papers' totals (issue 23; spec §6.4, AMB-X3, S3(16))."""

import math

import numpy as np
import pytest

from privdist.errors import CalibrationError, ShapeMismatchError, UnknownNameError, ValidationError
from privdist.privacy import GaussianMechanism, Identity, gamma_norm_mechanism, privacy_report, PrivacyLedger
from privdist.privacy.objective_perturbation import (ObjectivePerturbationMechanism, objective_perturbation_constants,
                                                     objective_perturbation_mechanism)
from privdist.privacy.paper_budget import paper_round_epsilon, paper_sigma, s3_gaussian_mechanism


def test_declares_pure_epsilon_and_composes_uses():
    mech = ObjectivePerturbationMechanism(0.4)
    rel = mech.releases([0, 1])
    assert len(rel) == 2 and rel[0].epsilon == pytest.approx(0.4) and rel[0].delta == 0.0
    # generic pure DP, like Gamma-norm noise: binary randomized response with ratio e^eps (issue 24)
    p = rel[0].event.noise_parameter
    assert rel[0].event.num_buckets == 2 and (2 - p) / p == pytest.approx(math.exp(0.4))
    three = mech.releases([0], uses=3)[0]
    assert three.epsilon == pytest.approx(1.2) and three.event.count == 3 and three.event.event == rel[0].event
    per_agent = ObjectivePerturbationMechanism((0.5, 1.0))
    assert [r.epsilon for r in per_agent.releases([1, 0])] == pytest.approx([1.0, 0.5])


def test_constants_are_alg2_of_the_mechanisms_own_epsilon():
    counts, mu = np.array([452.0, 20.0]), np.array([0.198, 0.01])
    eps_p, phi = ObjectivePerturbationMechanism(0.5).constants([0, 1], counts, mu, 0.25)
    np.testing.assert_array_equal((eps_p, phi), objective_perturbation_constants(0.5, counts, mu, 0.25))
    assert eps_p[0] == pytest.approx(0.5 - 2 * math.log1p(0.25 / (452 * 0.198))) and phi[0] == 0.0
    assert eps_p[1] == pytest.approx(0.25) and phi[1] == pytest.approx(0.25 / (20 * math.expm1(0.125)) - 0.01)
    # per agent: agent 1's own epsilon
    eps_p2, _ = ObjectivePerturbationMechanism((9.0, 0.5)).constants([1, 1], counts, mu, 0.25)
    np.testing.assert_array_equal(eps_p2, eps_p)


def test_draws_at_the_rate_it_is_given_and_refuses_more_than_its_epsilon():
    mech = ObjectivePerturbationMechanism(0.8)
    rng = np.random.default_rng(0)
    dim, n = 6, 4000
    out = mech.privatize(np.zeros((n, dim)), 2.0, rng, eps_prime=np.full(n, 0.5))
    assert np.linalg.norm(out, axis=1).mean() == pytest.approx(dim * 2.0 / 0.5, rel=0.03)  # E||b|| = dim Delta/eps'
    zeros = np.zeros((2, dim))
    with pytest.raises(ValidationError, match="rate budget"):
        mech.privatize(zeros, 2.0, rng)
    with pytest.raises(ValidationError, match=r"\(0, epsilon\]"):
        mech.privatize(zeros, 2.0, rng, eps_prime=[0.5, 0.9])
    with pytest.raises(ValidationError, match=r"\(0, epsilon\]"):
        mech.privatize(zeros, 2.0, rng, eps_prime=[0.5, 0.0])
    with pytest.raises(ValidationError, match="sensitivity"):
        mech.privatize(zeros, 0.0, rng, eps_prime=[0.5, 0.5])
    with pytest.raises(ShapeMismatchError):
        mech.privatize(zeros, 2.0, rng, eps_prime=[0.5])
    with pytest.raises(ShapeMismatchError):
        mech.privatize(np.zeros(3), 2.0, rng, eps_prime=[0.5])


def test_budgets():
    assert isinstance(objective_perturbation_mechanism(None, clear="dvp: in the clear"), Identity)
    assert objective_perturbation_mechanism(0.3).epsilon == 0.3
    total = objective_perturbation_mechanism(1.0, budget="total", releases=50, delta=1e-5)
    assert total.epsilon == gamma_norm_mechanism(1.0, budget="total", releases=50, delta=1e-5).epsilon
    ledger = PrivacyLedger(1)
    ledger.record(0, total.releases([0])[0], 50)
    assert 0.99 <= privacy_report(ledger, 1e-5, ("pld",))["per_agent"][0]["epsilon"]["pld"] <= 1.0
    reason = "dvp: assumed bound"
    assert objective_perturbation_mechanism(0.3, reason=reason).releases([0])[0].guarantee is False
    with pytest.raises(ValidationError):
        objective_perturbation_mechanism(-1.0)


def test_paper_totals():
    assert paper_round_epsilon(2.0, 1e-5, 4, "basic") == 0.5
    c0 = math.sqrt(math.log(1e5) / math.log(1.25e5))
    assert paper_round_epsilon(1.0, 1e-5, 100, "moments") == pytest.approx(1.0 / (c0 * 10))
    with pytest.raises(UnknownNameError):
        paper_round_epsilon(1.0, 1e-5, 100, "advanced")
    with pytest.raises(ValidationError):
        paper_round_epsilon(1.0, 1e-5, 0, "basic")
    mech = s3_gaussian_mechanism(1.0, 1e-5, 100, 10)
    assert isinstance(mech, GaussianMechanism) and mech.noise_multiplier == paper_sigma(1.0, 1e-5, 100, 10)
    # the round's release composes its l steps; the moments formula over t rounds gives the total back
    rel = mech.releases([0], uses=10)[0]
    assert rel.event.noise_multiplier == pytest.approx(mech.noise_multiplier / math.sqrt(10))
    assert rel.epsilon * c0 * 10 == pytest.approx(1.0)
    assert isinstance(s3_gaussian_mechanism(None, 1e-5, 100, 10), Identity)
    with pytest.raises(CalibrationError):
        s3_gaussian_mechanism(1e-320, 1e-5, 100, 10)


def test_objective_perturbation_round_trips_through_its_dict():
    from privdist.privacy import ObjectivePerturbationMechanism, mechanism_from_dict

    mech = ObjectivePerturbationMechanism(0.5)
    assert mechanism_from_dict(mech.to_dict()) == mech
