"""SharedFeatureLogisticRegression(protocol="pool") (issue 39): party-local experts pooled in log-odds, no training
release (the ledger holds the range step's releases only), each party's block a function of its own columns."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from privdist.cli.main import main
from privdist.errors import UnknownNameError, ValidationError
from privdist.learn import SharedFeatureLogisticRegression, load_model, save_model
from privdist.learn.vertical_pool import fit_local_pool, pool_weight

BOUNDS = [[-4.0] * 6, [4.0] * 6]  # public bounds: no DP range step, so no release at all


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = (X @ np.array([1.0, -0.5, 0.8, 0.3, -1.0, 0.6]) + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _pool(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # research-mode seed
        return SharedFeatureLogisticRegression(epsilon=1.0, n_parties=3, protocol="pool", random_state=0,
                                               **{"scale": "bounds", "bounds": BOUNDS, **kw}).fit(X, y)


def test_pool_is_the_log_odds_pool_of_each_partys_own_fit():
    X, y = _data()
    m = _pool(X, y)
    Z = m.preprocessor_.transform(X)
    a = 1 / math.sqrt(3)
    assert pool_weight(3) == pytest.approx(a) and pool_weight(4) == 0.5
    prior = math.log(y.mean() / (1 - y.mean()))
    own = [LogisticRegression(C=1 / (2 * m.alpha), max_iter=2000).fit(Z[:, g], y) for g in m.feature_groups_]
    for block, model in zip(m.coef_blocks_, own):
        assert np.allclose(block, a * model.coef_[0], atol=1e-4)
    expected = prior + a * sum(model.intercept_[0] - prior for model in own)
    assert m.intercept_ == pytest.approx(expected, abs=1e-4)
    assert sum(m.intercept_blocks_) == pytest.approx(m.intercept_)
    score = prior + a * sum(model.decision_function(Z[:, g]) - prior for model, g in zip(own, m.feature_groups_))
    assert np.allclose(m.decision_function(X), score, atol=1e-3)


def test_pool_training_records_no_dp_event():
    X, y = _data()
    m = _pool(X, y)  # public bounds: nothing is released at all
    rep = m.privacy_report_
    assert all(m.ledger_.n_releases(k) == 0 for k in range(3))
    assert rep["guaranteed"] and rep["epsilon"] == 0.0 and rep["training_releases"].startswith("none")
    assert rep["promised"]["algorithm"] == "pool" and rep["promised"]["rounds"] == 0
    assert any(e.startswith("pool: labels exposed") for e in rep["exposures"]) and rep["scope"].startswith("pool:")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pool = SharedFeatureLogisticRegression(epsilon=1.0, n_parties=3, protocol="pool", random_state=0).fit(X, y)
        admm = SharedFeatureLogisticRegression(epsilon=1.0, n_parties=3, rounds=3, random_state=0,
                                               protocol="admm_sharing").fit(X, y)
    for k in range(3):  # the DP range step's releases only: those ADMM sharing also makes before its shares
        key = pool.ledger_.entry_key(k)
        assert key and key == admm.ledger_.entry_key(k)[:len(key)]
        assert pool.ledger_.n_releases(k) < admm.ledger_.n_releases(k)
    assert pool.privacy_report_["epsilon"] < 1.0 and "row-level" in pool.privacy_report_["scope"]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2), st.integers(0, 2**31 - 1))
def test_a_partys_columns_change_no_other_partys_block(party, seed):
    """Column-level neighbours (S2 Def. 2) and stronger: replacing all of party ``m``'s columns changes neither
    another party's block and intercept share nor the public weight (nothing computed from them crosses)."""
    X, y = _data(n=120)
    Xn = X.copy()
    cols = np.array_split(np.arange(6), 3)[party]
    Xn[:, cols] = np.random.default_rng(seed).uniform(-4, 4, size=(X.shape[0], cols.size))
    z = 2 * (X - (-4.0)) / 8.0 - 1  # the public bounds' map into [-1, 1]
    zn = 2 * (Xn - (-4.0)) / 8.0 - 1
    groups = np.array_split(np.arange(6), 3)
    y_pm = np.where(y > 0, 1.0, -1.0)
    base = fit_local_pool([z[:, g] for g in groups], y_pm, 1e-3, True)
    other = fit_local_pool([zn[:, g] for g in groups], y_pm, 1e-3, True)
    for k in range(3):
        if k != party:
            assert np.array_equal(base[0][k], other[0][k]) and base[1][k] == other[1][k]
    assert base[2] == other[2]


def test_pool_model_file_round_trip(tmp_path):
    X, y = _data()
    m = _pool(X, y)
    save_model(m, tmp_path / "model.json")
    loaded = load_model(tmp_path / "model.json")  # joins the parties' blocks and intercept shares
    assert np.allclose(loaded.decision_function(X), m.decision_function(X))


def test_pool_named_errors():
    X, y = _data(n=60)
    with pytest.raises(UnknownNameError, match="protocol"):
        SharedFeatureLogisticRegression(protocol="stacking").fit(X, y)
    for kw in ({"trust": "secure_aggregation"}, {"secure_aggregation": {"colluding": 0}}):
        with pytest.raises(ValidationError, match="no sum for secure aggregation"):
            SharedFeatureLogisticRegression(protocol="pool", **kw).fit(X, y)
    m = _pool(X, y)  # a refit with ADMM sharing drops the pool's intercept shares
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.set_params(protocol="admm_sharing", rounds=2).fit(X, y)
    assert not hasattr(m, "intercept_blocks_")


def test_cli_vertical_protocol_pool(tmp_path, capsys):
    X, y = _data(n=300, seed=1)
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    df["label"] = np.where(y > 0, "yes", "no")
    df.to_csv(tmp_path / "v.csv", index=False)
    common = ["fit", str(tmp_path / "v.csv"), "--target", "label", "--vertical", "3", "--classes", "no,yes",
              "--epsilon", "1", "--delta", "1e-5", "--rounds", "5", "--curve", "", "--vertical-protocol", "pool"]
    assert main(common + ["--out", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    assert "pool" in text and "party 2 alone" in text and "labels exposed" in text
    model = load_model(tmp_path / "out" / "model.json")
    assert model.coef.shape == (6,)
    assert main(common + ["--trust", "secure_aggregation"]) == 2  # nothing to aggregate: a named error
    assert "no sum for secure aggregation" in capsys.readouterr().err


def test_pool_plan_promises_no_training_release():
    X, y = _data(n=120)
    promised = _pool(X, y).privacy_report_["promised"]
    assert promised["training"][0]["epsilon"] is None and "b1" not in promised["public"]
    assert promised["budget"]["epsilon"] == 1.0


def test_cli_pool_on_public_bounds_draws_once(tmp_path, capsys):
    """Issue 39: the pool on public bounds releases nothing noisy, so every default noise draw was the same model and
    the table printed a spread of +- 0.000 over three of them; now one fit."""
    X, y = _data(n=200, seed=3)
    cols = [f"c{j}" for j in range(6)]
    df = pd.DataFrame(X, columns=cols)
    df["label"] = np.where(y > 0, "yes", "no")
    df.to_csv(tmp_path / "v.csv", index=False)
    bounds = [a for c in cols for a in ("--bounds", f"{c}=-6:6")]
    assert main(["fit", str(tmp_path / "v.csv"), "--target", "label", "--vertical", "3", "--classes", "no,yes",
                 "--epsilon", "1", "--delta", "1e-5", "--curve", "", "--seed", "0", *bounds]) == 0
    text = capsys.readouterr().out
    assert "pool" in text and "noise draws" not in text and "guarantee epsilon = 0.0000" in text
