"""Secure mode (issue 12 item 8): noise from fresh OS entropy, never shared between the points of a sweep."""

import json

import numpy as np

from privdist.algorithms import DPSGD
from privdist.data import dzoa_regression, horizontal_partition
from privdist.network import dzoa5
from privdist.problems import L2, HorizontalERM, SquaredLoss
from privdist.runtime import run


def _problem():
    ds = dzoa_regression(np.random.default_rng(0))
    return HorizontalERM(horizontal_partition(ds.X, ds.y, n_agents=5), SquaredLoss(), L2(), reg_weight=1.0)


def _recovered_round_one(secure: bool) -> tuple[np.ndarray, np.ndarray]:
    """Two sweep points (epsilon 0.15 and 0.5): combine their round-1 releases q = x + sigma z to cancel z."""
    problem, out, sig = _problem(), [], []
    for eps in (0.15, 0.5):
        algo = DPSGD(alpha0=0.3, epsilon=eps, delta=1e-3)
        res = run(algo, problem, dzoa5(), rounds=1, seed=7, transcript="full", secure=secure)
        out.append(res.transcript.messages("agent", "q")[1])
        sig.append(2.0 * 0.3 * algo.c1 / np.asarray(problem.counts, float)[:, None] * algo.mechanism.noise_multiplier)
    noise_free = (sig[1] * out[0] - sig[0] * out[1]) / (sig[1] - sig[0])
    truth = run(DPSGD(alpha0=0.3, epsilon=None), problem, dzoa5(), rounds=1, transcript="full")
    return noise_free, truth.transcript.messages("agent", "q")[1]


def test_seeded_sweep_shares_noise_so_the_noise_free_iterate_is_recovered():
    recovered, truth = _recovered_round_one(secure=False)
    np.testing.assert_allclose(recovered, truth, atol=1e-12)  # the defect a seeded sweep publishes


def test_secure_sweep_shares_no_noise():
    recovered, truth = _recovered_round_one(secure=True)
    assert np.abs(recovered - truth).max() > 1e-3


def test_secure_experiment_records_its_noise_mode(tmp_path):
    from privdist.experiments import load_experiment, run_experiment

    spec = load_experiment("quickstart").with_overrides(trials=1, secure=True)
    run_experiment(spec, tmp_path / "s", progress=False)
    saved = json.loads((tmp_path / "s" / "results.json").read_text())
    assert saved["noise"]["mode"] == "secure" and saved["config"]["privacy"]["secure"] is True
