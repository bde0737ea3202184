"""``run_many`` (issue 14): several runs stepped in lockstep give each run exactly what ``run`` gives it.

Equality is checked on the transcript digest (the bytes of every message), the curves and the privacy ledger, for the
algorithms that batch their arithmetic (D-ZOA with both inner samplers, D-ZOA + Gaussian with both local solvers)
and for one that does not (DP-ADMM, the default ``step_many``); a run stopped by its metric leaves the others
running; the experiment runner's batched trials equal its one-trial runs.
"""

import dataclasses

import numpy as np
import pytest

from privdist.algorithms import make_algorithm
from privdist.data import dzoa_regression, horizontal_partition
from privdist.errors import DivergenceError
from privdist.experiments import load_experiment
from privdist.experiments.runner import run_trial, run_trials
from privdist.network import dzoa5
from privdist.problems import HorizontalERM, make_loss, make_regularizer, normalized_error, reference_solution
from privdist.runtime import run, run_many
from privdist.runtime.rng import data_rng

B = 3


def _trials(regularizer="l1"):
    probs, metrics = [], []
    for trial in range(B):
        ds = dzoa_regression(data_rng(0, trial))
        prob = HorizontalERM(horizontal_partition(ds.X, ds.y, n_agents=5), make_loss("squared"),
                             make_regularizer(regularizer), 1.0, loss_scale="sum")
        bc = reference_solution(prob)
        probs.append(prob)
        metrics.append({"ne": lambda est, bc=bc: normalized_error(est, bc)})
    return probs, metrics


@pytest.mark.parametrize("name,params,reg", [
    ("dzoa", {"epsilon": 0.15, "R": "oracle", "mode": "s0", "J": 30, "T": 20}, "l1"),
    ("dzoa", {"epsilon": 0.15, "R": "oracle", "mode": "s1", "inner_sampler": "auto", "T": 20}, "l1"),
    ("dzoa", {"epsilon": 0.05, "R": "oracle", "mode": "s1", "T": 10}, "l1"),  # exact, J_k differ across trials
    ("dzoa", {"epsilon": 0.15, "R": "oracle", "mode": "s1", "inner_sampler": "auto", "T": 20}, "l2"),
    ("dzoa_gauss", {"epsilon": 0.15, "calibration": "classical", "c1": 4.0, "T": 20}, "l1"),
    ("dzoa_gauss", {"epsilon": 0.15, "calibration": "classical", "c1": 4.0, "local_solver": "exact"}, "l1"),
    ("dpadmm", {"epsilon": 0.5, "delta": 1e-3, "clip": False}, "l1"),
])
def test_run_many_equals_run(name, params, reg):
    alg = make_algorithm(name, **params)
    probs, metrics = _trials(reg)
    many = run_many(alg, probs, [dzoa5()] * B, 4, seed=3, trials=range(B), metrics=metrics)
    for trial, res in enumerate(many):
        one = run(alg, probs[trial], dzoa5(), 4, seed=3, trial=trial, metrics=metrics[trial])
        assert res.transcript.digest == one.transcript.digest
        np.testing.assert_array_equal(res.curves["ne"], one.curves["ne"])
        assert res.privacy(1e-3) == one.privacy(1e-3)
    assert len({res.transcript.digest for res in many}) == B  # the trials really differ


def test_a_stopped_run_leaves_the_others_running():
    alg = make_algorithm("dzoa", epsilon=0.15, R="oracle", mode="s0", J=30, T=10)
    probs, metrics = _trials()

    def broken(est, calls=[0]):
        calls[0] += 1
        if calls[0] > 2:
            raise DivergenceError("stop")
        return 0.0

    metrics[1] = {"ne": broken}
    many = run_many(alg, probs, [dzoa5()] * B, 4, seed=3, metrics=metrics)
    assert isinstance(many[1], DivergenceError)
    for trial in (0, 2):
        one = run(alg, probs[trial], dzoa5(), 4, seed=3, trial=trial, metrics=metrics[trial])
        assert many[trial].transcript.digest == one.transcript.digest


def test_runner_batched_trials_equal_single_trials():
    spec = load_experiment("s1_fig4")
    keep = [rs for rs in spec.runs if rs.label.endswith("eps=0.95 delta=0.001")]
    runs = tuple(dataclasses.replace(rs, params={**rs.params, "T": 10}) if rs.algorithm.startswith("dzoa") else rs
                 for rs in keep)
    spec = dataclasses.replace(spec, runs=runs, rounds=3, tuning=None)
    batched = run_trials(spec, [0, 1])
    for trial, entry in zip([0, 1], batched):
        alone = run_trial(spec, trial)
        assert entry["trial"] == trial
        for label, run_entry in alone["runs"].items():
            got = dict(entry["runs"][label])
            assert got.pop("seconds") >= 0
            assert got == {k: v for k, v in run_entry.items() if k != "seconds"}


@pytest.mark.parametrize("kernel", ["exact", "moments"])
@pytest.mark.parametrize("l1w", [0.2, 0.0])
def test_inner_kernels_are_row_independent(kernel, l1w):
    """Five agents give bit-identical iterates alone and embedded among 120 other agents (a batch of 25 trials);
    the exact kernel with the width D-ZOA pads these J_k (33..64) to."""
    from privdist.algorithms.dzoa_inner import squared_inner_loops
    from privdist.algorithms.dzoa_moments import moment_inner_loops

    rng = np.random.default_rng(0)
    K, n, P, T = 125, 20, 10, 30
    X = rng.standard_normal((K, n, P))
    X /= np.linalg.norm(X, axis=2, keepdims=True)
    y, v = rng.standard_normal((K, n)), rng.standard_normal((K, P))
    q, Js = rng.uniform(4, 12, K), rng.integers(33, 65 if kernel == "exact" else 5000, K)
    alphas = np.tile(0.2 / np.sqrt(np.arange(1, T + 1) * P * np.log(2 * P)), (K, 1))

    def call(rows):
        gens = [np.random.default_rng([7, int(k)]) for k in rows]
        args = (X[rows], y[rows], np.ones(len(rows)), q[rows], v[rows], l1w, Js[rows], T, alphas[rows], 1.0, gens)
        return squared_inner_loops(*args, pad_to=64) if kernel == "exact" else moment_inner_loops(*args)

    mine = np.array([60, 61, 62, 63, 64])
    np.testing.assert_array_equal(call(mine), call(np.arange(K))[mine])


def test_probe_rounds_record_only_there_and_batch_like_single_trials():
    """S1 Figs 2-3 with ``probe_rounds``: the probe records in those rounds only (NaN elsewhere), the probed agent
    runs the exact sampler there and the moment sampler otherwise (run_info says so), and batched trials equal
    single ones (the probed run leaves the batch only in its probed rounds)."""
    spec = load_experiment("s1_fig2_3")
    (rs,) = spec.runs
    rs = dataclasses.replace(rs, params={**rs.params, "T": 50, "probe_rounds": [2]})
    spec = dataclasses.replace(spec, runs=(rs,), rounds=3, plots=())
    batched = run_trials(spec, [0, 1])
    for trial, entry in zip([0, 1], batched):
        alone = run_trial(spec, trial)["runs"][rs.label]
        got = entry["runs"][rs.label]
        assert got["transcript_digest"] == alone["transcript_digest"]
        for m in spec.metrics:
            np.testing.assert_array_equal(got["curves"][m], alone["curves"][m])
        probe = np.asarray(got["curves"]["probe2"], dtype=float)  # inner step t = 50 (T = 50 here)
        assert np.isfinite(probe[2]) and np.all(np.isnan(np.delete(probe, 2)))
        sampler = got["info"]["inner_sampler_per_agent"]
        assert sampler[1].startswith("moments (exact in the probed rounds [2])")
        assert sampler.count("moments") == 4
