"""Issue 26: the estimator cases the issue lists end in success with a correct result or in a named error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privdist.errors import (BinaryOnlyError, DataFileNotFoundError, DataFormatError, DivergenceError,
                             NonFiniteDataError, NonNumericDataError, OutputWriteError, ParameterTypeError,
                             ValidationError)
from privdist.learn import (DistributedLasso, DistributedLogisticRegression, DistributedRidge,
                            SharedFeatureLogisticRegression, UtilityWarning, load_model)


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ np.array([1.0, 2.0, 0.0]) + rng.normal(size=n)


def test_ridge_with_string_target():
    X, y = _data()
    with pytest.raises(NonNumericDataError, match="y must be numeric for a regressor, got a value 'a'"):
        DistributedRidge(random_state=0).fit(X, np.array(["a", "b"] * 100))


def test_groups_with_nan_are_no_party():
    X, y = _data()
    groups = np.array([0.0, 1.0, np.nan, 2.0] * 50)
    with pytest.raises(NonFiniteDataError, match="50 row.s. without a party"):
        DistributedLogisticRegression(random_state=0).fit(X, (y > 0).astype(int), groups=groups)


def test_huge_step_is_a_divergence_error():
    X, y = _data()
    est = DistributedLogisticRegression(algorithm="dpsgd", algorithm_params={"alpha0": 1e300}, random_state=0)
    with pytest.raises(DivergenceError, match="non-finite coefficients"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, (y > 0).astype(int))


def test_lasso_with_huge_alpha():
    """The optimum is 0: dpmm finds it; dpsgd's subgradient steps overshoot, and the fit says so."""
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.all(DistributedLasso(alpha=1e12, random_state=0).fit(X, y).coef_ == 0)
    with pytest.warns(UtilityWarning, match="the fit diverged: the training objective rose"):
        DistributedLasso(alpha=1e12, algorithm="dpsgd", random_state=0).fit(X, y)


@pytest.mark.parametrize("params,error,text", [
    ({"rounds": 10**12}, ValidationError, "rounds must be an integer from 1 to 1000000"),
    ({"n_agents": 0}, ValidationError, "n_agents must be an integer from 1"),
    ({"epsilon": float("inf")}, ValidationError, "epsilon must be a finite number > 0"),
    ({"random_state": "x"}, ParameterTypeError, "random_state must be None, an integer"),
    ({"random_state": -1}, ValidationError, "random_state must be >= 0"),
    ({"network": 5}, ParameterTypeError, "network must be a network kind"),
    ({"algorithm_params": "x"}, ParameterTypeError, "algorithm_params must be a dict"),
    ({"row_norm": float("nan")}, ValidationError, "row_norm must be a finite number > 0"),
])
def test_bad_parameters_are_named(params, error, text):
    X, y = _data()
    with pytest.raises(error, match=text):
        DistributedLogisticRegression(**params).fit(X, (y > 0).astype(int))


def test_one_class_and_three_classes():
    X, _ = _data()
    with pytest.raises(ValidationError, match="only one class"):
        DistributedLogisticRegression(random_state=0).fit(X, np.ones(200, int))
    with pytest.raises(BinaryOnlyError, match="fits two classes"):
        SharedFeatureLogisticRegression(random_state=0, rounds=2).fit(X, np.arange(200) % 3)


def test_load_model_errors(tmp_path):
    (tmp_path / "garbage.json").write_text("{not json")
    with pytest.raises(DataFormatError, match="cannot be read as JSON"):
        load_model(tmp_path / "garbage.json")
    with pytest.raises(DataFileNotFoundError, match="not found"):
        load_model(tmp_path / "missing.json")
    with pytest.raises(DataFormatError, match="is a directory"):
        load_model(tmp_path)
    (tmp_path / "short.json").write_text('{"format": "privdist-linear-model/1"}')
    with pytest.raises(DataFormatError, match="malformed"):
        load_model(tmp_path / "short.json")


def test_checkpoint_under_a_file(tmp_path, ridge_problem, net5):
    from privdist import run
    from privdist.algorithms import make_algorithm

    (tmp_path / "file").write_text("x")
    calls = []
    algo = make_algorithm("consensus_admm")
    with pytest.raises(OutputWriteError, match="checkpoint directory .* is not a directory"):
        run(algo, ridge_problem, net5, 5, checkpoint=tmp_path / "file" / "ck.pkl", checkpoint_every=1,
            metrics={"probe": lambda est: calls.append(1) or 0.0})
    assert not calls  # refused before round 0 was evaluated
