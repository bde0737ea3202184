"""The sum-loss reading (issue 14, AMB-D12 revised): values, reference, and every sensitivity that used 1/N_k."""

import numpy as np
import pytest

from privdist.algorithms import make_algorithm
from privdist.data import dzoa_regression, horizontal_partition
from privdist.errors import ValidationError
from privdist.network import dzoa5
from privdist.problems import HorizontalERM, literal_reference, make_loss, make_regularizer, reference_solution
from privdist.runtime import run


def _problem(scale, reg="l1", seed=0):
    ds = dzoa_regression(np.random.default_rng(seed))
    parts = horizontal_partition(ds.X, ds.y, n_agents=5)
    return HorizontalERM(parts, make_loss("squared"), make_regularizer(reg), 1.0, loss_scale=scale), ds


def test_sum_scale_values_and_weights():
    prob, _ = _problem("sum")
    B = np.random.default_rng(1).standard_normal((5, 10))
    direct = [np.sum((X @ b - y) ** 2) + 0.2 * np.abs(b).sum() for (X, y), b in zip(prob.parts(), B)]
    np.testing.assert_allclose(prob.local_values(B), direct, rtol=1e-12)
    np.testing.assert_array_equal(prob.sample_weight, np.ones(5))
    mean, _ = _problem("mean")
    np.testing.assert_allclose(mean.sample_weight, 1.0 / mean.counts)
    assert prob.subset([1, 3]).loss_scale == "sum"


def test_unknown_loss_scale_is_named():
    with pytest.raises(ValidationError, match="loss_scale"):
        _problem("median")


@pytest.mark.parametrize("reg", ["l1", "l2"])
def test_sum_reading_distributed_minimiser_is_s1_30_31(reg):
    prob, ds = _problem("sum", reg)
    lit = literal_reference(np.asarray(ds.X), ds.y, prob.loss, prob.regularizer, 1.0)
    np.testing.assert_allclose(reference_solution(prob), lit, atol=1e-8)
    mean, _ = _problem("mean", reg)
    assert np.linalg.norm(reference_solution(mean) - lit) > 1e-2  # the mean reading does not (the old floor)


def _first_noise(name, scale, **params):
    """Round-1 release minus the noise-free release, same seed: the injected noise."""
    prob, _ = _problem(scale, "l2")
    noisy = run(make_algorithm(name, epsilon=0.5, **params), prob, dzoa5(), rounds=1, seed=3, transcript="full")
    clean = run(make_algorithm(name, epsilon=None, **params), prob, dzoa5(), rounds=1, seed=3, transcript="full")
    key = {"dpsgd": "q", "dpadmm": "w"}[name]
    return (noisy.transcript.messages("agent", key)[1] - clean.transcript.messages("agent", key)[1]), prob


@pytest.mark.parametrize("name,params", [("dpsgd", {"alpha0": 0.3}), ("dpadmm", {"rho": 1.0, "eta0": 1.0})])
def test_gaussian_baselines_scale_noise_with_the_loss_weight(name, params):
    n_mean, prob = _first_noise(name, "mean", **params)
    n_sum, _ = _first_noise(name, "sum", **params)
    # sensitivity 2 c1 w_k: w_k = 1/N_k (mean) vs 1 (sum); same draws, so the noise differs by exactly N_k
    np.testing.assert_allclose(n_sum, n_mean * prob.counts[:, None], rtol=1e-9)


def test_pvp_and_laadmm_read_the_loss_weight():
    from privdist.contract import AgentBlock

    for scale in ("mean", "sum"):
        prob, _ = _problem(scale, "l2")
        net = dzoa5()
        block = AgentBlock(np.arange(5), 5, np.asarray(net.degrees))
        pvp = make_algorithm("pvp", rho=1.0, epsilon=0.5, noise="gaussian")
        st, _ = pvp.init(prob, net, block, None)
        np.testing.assert_allclose(pvp.sensitivity(st), 2.0 * prob.sample_weight / st.mu)
        lad = make_algorithm("laadmm", epsilon=1.0, delta=1e-5, l=2, iterations=5, D=1.0)
        st, _ = lad.init(prob, net, block, None)
        np.testing.assert_allclose(st.counts, 1.0 / prob.sample_weight)
