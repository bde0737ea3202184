"""S3 experiment layer: the sparse oracles, the ``adult_erm`` kind (on a small stand-in), the S3 catalog specs."""

import numpy as np
import pytest

from conftest import make_dzoa_problem
from privdist.algorithms._sparse_oracle import SparseERMOracle, SparseHorizontalERM
from privdist.data import Dataset
from privdist.errors import PrivdistError, SpecError
from privdist.experiments import kinds_adult
from privdist.experiments.build import build_trial
from privdist.experiments.catalog import experiments_of_paper
from privdist.experiments.spec import parse_spec
from privdist.problems import make_loss, make_regularizer, reference_solution


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_sparse_oracle_matches_dense(loss):
    prob = make_dzoa_problem(5, "l2", loss=loss)
    oracle = SparseERMOracle(prob)
    B = np.random.default_rng(0).normal(size=(5, 10))
    np.testing.assert_allclose(oracle.values(B), prob.local_values(B), rtol=1e-12)
    np.testing.assert_allclose(oracle.grads(B), prob.local_grads(B), atol=1e-12)
    q, v = np.full(5, 0.3), B
    np.testing.assert_allclose(oracle.prox_solve(q, v, tol=1e-12), prob.prox_solve(q, v, tol=1e-12), atol=1e-9)
    w = oracle.pooled_newton(tol=1e-12)
    np.testing.assert_allclose(w, reference_solution(prob), atol=1e-8)


def test_sparse_problem_subset_keeps_class():
    base = make_dzoa_problem(6, "l2", loss="logistic")
    prob = SparseHorizontalERM(base.parts(), make_loss("logistic"), make_regularizer("l2"), 1.0)
    sub = prob.subset([1, 3])
    assert isinstance(sub, SparseHorizontalERM) and sub.n_agents == 2 and sub.n_agents_total == 5
    B = np.ones((2, 10))
    np.testing.assert_allclose(sub.local_grads(B), base.subset([1, 3]).local_grads(B), atol=1e-12)


def _spec(n_agents=4, lam=1e-2):
    return parse_spec({"name": "t", "title": "t", "paper": "S3", "figure": "x", "rounds": 3, "trials": 1,
                       "metrics": ["empirical_risk", "excess_risk"], "data": {"kind": "adult"},
                       "network": {"kind": "complete", "params": {"n": n_agents}},
                       "problem": {"kind": "adult_erm", "lam": lam}, "privacy": {"delta": 1e-5},
                       "runs": [{"label": "l", "algorithm": "laadmm", "params": {"rho": 1e-3}}]})


@pytest.fixture
def small_adult(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.random((40, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.normal(size=6) > 0, 1.0, -1.0)
    monkeypatch.setattr(kinds_adult, "_dataset", lambda kind, data_dir, params: Dataset(X, y, "adult"))
    return X, y


def test_adult_kind_builds_problem_and_metrics(small_adult):
    trial = build_trial(_spec(), 0)
    prob = trial.problem
    assert prob.n_agents == 4 and prob.counts.sum() == 40 and prob.reg_weight == pytest.approx(5e-3)
    zero = np.zeros((4, 6))
    assert trial.metrics["empirical_risk"](zero) == pytest.approx(4 * np.log(2.0))  # sum_i L_{D_i}(0)
    w = trial.extras["w_star"]
    assert trial.metrics["excess_risk"](np.tile(w, (4, 1))) == pytest.approx(0.0, abs=1e-10)
    assert trial.metrics["excess_risk"](zero) > 0
    assert trial.extras["D"] == pytest.approx(2 * np.linalg.norm(w))


def test_adult_kind_bad_input(small_adult):
    with pytest.raises(PrivdistError):  # agents left with no samples by the split
        build_trial(_spec(n_agents=50), 0)
    with pytest.raises(SpecError):
        build_trial(_spec(lam=-1.0), 0)


def test_s3_catalog_entries():
    names = {s.name for s in experiments_of_paper("laadmm")}
    assert {"s3_fig1", "s3_fig2", "s3_fig3"} <= names
    fig3 = next(s for s in experiments_of_paper("S3") if s.name == "s3_fig3")
    algos = {r.algorithm for r in fig3.runs}
    assert algos == {"consensus_admm", "laadmm", "pvp", "dvp", "radmm"}
    assert fig3.trials == 10 and len(fig3.claims) == 2
