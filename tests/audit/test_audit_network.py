"""Audit of per-pair (network DP) claims with an observer that sees only its neighbours' messages (issue 29)."""

import numpy as np
import pytest

from privdist.algorithms import DPSGD
from privdist.algorithms.dpadmm import DPADMM
from privdist.audit.network import audit_pair
from privdist.errors import ValidationError
from privdist.network import complete, ring
from privdist.problems import HorizontalERM, make_loss, make_regularizer

N, T = 10, 6


def _problem(label_scale: float) -> HorizontalERM:
    """Unit rows, one feature; labels of size ``label_scale``. At 1000 every clipped squared-loss gradient is
    saturated (``-c1 sign(y) x``) whatever the iterate: DPSGD is then exactly the linear-Gaussian model."""
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(N):
        X = rng.standard_normal((4, 1))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        parts.append((X, label_scale * np.sign(rng.standard_normal(4)) * rng.uniform(0.5, 1.5, 4)))
    return HorizontalERM(parts, make_loss("squared"), make_regularizer("l2"), 0.0)


ALG = DPSGD(alpha0=0.5, epsilon=20.0, delta=1e-5, budget="total", gaussian_constant=2.0)


@pytest.mark.parametrize("observer", [1, 2, 3])
def test_neighbours_only_audit_is_consistent_and_nearly_tight(observer):
    """On the exactly linear problem the audit's lower bound must stay below the per-pair claim, and comes close to
    it (the accountant is not loose); the target's local epsilon is far above at distance >= 2."""
    a = audit_pair(ALG, _problem(1000.0), ring(N), observer=observer, target=0, rounds=T, releases=3000)
    assert a.distance == observer
    assert a.verdict == "consistent"
    # 1,500 evaluation releases per dataset: the Clopper-Pearson slack costs up to ~0.3 of mu at these sizes
    assert a.mu_lb <= a.mu and a.mu_lb >= 0.6 * a.mu
    assert a.epsilon < a.local_epsilon
    if observer >= 2:
        assert a.result.epsilon_lb < a.local_epsilon / 4


def test_an_over_optimistic_pairwise_claim_is_refuted():
    a = audit_pair(ALG, _problem(1000.0), ring(N), observer=2, target=0, rounds=T, releases=3000)
    b = audit_pair(ALG, _problem(1000.0), ring(N), observer=2, target=0, rounds=T, releases=3000,
                   claim_mu=a.mu / 2)
    assert b.verdict == "refuted"


def test_gradients_that_depend_on_the_iterate_stay_consistent_at_distance_two():
    """Labels of size 1: the other agents' gradients move with their iterates (outside the model); the audit of
    the distance-2 observer still finds nothing beyond the per-pair claim."""
    a = audit_pair(ALG, _problem(1.0), ring(N), observer=2, target=0, rounds=T, releases=3000)
    assert a.verdict == "consistent" and a.mu_lb <= a.mu


def test_bad_arguments_are_named_errors():
    with pytest.raises(ValidationError):
        audit_pair(ALG, _problem(1.0), ring(N), observer=0, target=0, rounds=2, releases=16)
    with pytest.raises(ValidationError):  # an agent of DP-ADMM hears the coordinator only
        audit_pair(DPADMM(epsilon=1.0), _problem(1.0), complete(N), observer=1, target=0, rounds=2, releases=16)
