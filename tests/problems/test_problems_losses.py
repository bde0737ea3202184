import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import UnknownNameError, ValidationError
from privdist.problems import L1, L2, LogisticLoss, SquaredLoss, make_loss, make_regularizer, soft_threshold


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()])
def test_derivatives_match_finite_differences(loss):
    z = np.linspace(-5, 5, 41)
    y = np.where(np.arange(41) % 2 == 0, 1.0, -1.0)
    h = 1e-6
    num = (loss.value(z + h, y) - loss.value(z - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.dz(z, y), num, rtol=1e-6, atol=1e-8)
    num2 = (loss.dz(z + h, y) - loss.dz(z - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.d2z(z, y), num2, rtol=1e-5, atol=1e-7)
    assert np.all(loss.d2z(z, y) <= loss.curvature_bound + 1e-12)


def test_logistic_is_stable_for_large_margins():
    loss = LogisticLoss()
    assert loss.value(np.array([1000.0]), np.array([1.0]))[0] == pytest.approx(0.0, abs=1e-300)
    assert loss.value(np.array([-1000.0]), np.array([1.0]))[0] == pytest.approx(1000.0)


def test_logistic_rejects_01_labels():
    with pytest.raises(ValidationError, match="labels in"):
        LogisticLoss().check_labels(np.array([0.0, 1.0]), "y of agent 2")


def test_unknown_names():
    with pytest.raises(UnknownNameError, match="known: logistic, squared"):
        make_loss("hinge")
    with pytest.raises(UnknownNameError):
        make_regularizer("elasticnet")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=1, max_size=8), st.floats(0.01, 5))
def test_prox_minimises(vals, tau):
    v = np.array(vals)
    rng = np.random.default_rng(0)
    for reg in (L1(), L2()):
        p = reg.prox(v, tau)

        def obj(b):
            return tau * reg.value(b) + 0.5 * np.sum((b - v) ** 2)

        for _ in range(5):
            assert obj(p) <= obj(p + 1e-3 * rng.standard_normal(v.shape)) + 1e-12


def test_soft_threshold_and_sign_convention():
    np.testing.assert_array_equal(soft_threshold(np.array([-3.0, -0.5, 0.0, 2.0]), 1.0), [-2.0, 0.0, 0.0, 1.0])
    assert L1().subgradient(np.array([0.0]))[0] == 0.0
