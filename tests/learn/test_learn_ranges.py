"""Issue 25: scale="dp" (the default) in the estimators and in privdist fit: the printed epsilon is the requested
total with the range release in the ledger, raw features learn, a regression target is mapped back."""

import json
import warnings

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split

from privdist.learn import DistributedLogisticRegression, DistributedRidge, SharedFeatureLogisticRegression


def _quiet(est, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, **kw)


def test_dp_scale_reports_the_requested_total_and_records_the_range_release():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=4000) * 300 + 1000, rng.normal(size=4000)])
    y = (X[:, 0] > 1000).astype(int)
    m = _quiet(DistributedLogisticRegression(epsilon=1.0, n_agents=4, rounds=20, bounds={"x1": (-3, 3)},
                                             random_state=0), X, y)
    rep = m.privacy_report_
    assert rep["guaranteed"] and rep["epsilon"] == pytest.approx(1.0, rel=1e-3)
    step = next(s for s in rep["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["private"] and step["columns"] == ["x0"] and step["share"] == 0.1 and not step["fallback"]
    lo, hi = step["bounds"]["x0"]
    assert lo < 500 and hi > 1500 and np.allclose(m.preprocessor_.bounds_[:, 0], (lo, hi))
    assert np.allclose(m.preprocessor_.bounds_[:, 1], (-3, 3))  # public: no budget
    assert m.score(X, y) > 0.8
    # the ledger holds one more release per agent than training alone: the range step's
    plain = _quiet(DistributedLogisticRegression(epsilon=1.0, n_agents=4, rounds=20, scale="bounds",
                                                 bounds=[[0, -3], [2000, 3]], random_state=0), X, y)
    assert plain.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert step["epsilon"] < 1.0 and step["noise_multiplier"] > 1


def test_all_columns_public_spends_nothing():
    X = np.random.default_rng(0).uniform(-1, 1, size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    m = _quiet(DistributedLogisticRegression(epsilon=1.0, n_agents=2, rounds=5, bounds=[[-1, -1], [1, 1]],
                                             random_state=0), X, y)
    assert [s["step"] for s in m.preprocessor_.record] == ["scale_by_public_bounds", "clip_rows"]
    assert m.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)


def test_breast_cancer_raw_features_learn_with_dp_scale():
    """Non-private fits (epsilon None) on raw breast-cancer features, 10 parties: the default scale='dp' (exact grid
    quantiles) learns; with dpsgd's public step size, scale='none' collapses (rows clipped to norm 1 are dominated by
    the columns in the hundreds); dpmm's Gram preconditioning makes the default optimiser far less sensitive."""
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)

    def score(**kw):
        return _quiet(DistributedLogisticRegression(epsilon=None, n_agents=10, random_state=0, **kw),
                      Xtr, ytr).score(Xte, yte)

    dp, none = score(algorithm="dpsgd"), score(algorithm="dpsgd", scale="none")
    assert dp > 0.93 and dp > none + 0.2, (dp, none)
    assert score() > 0.93


def test_small_classification_raises_the_range_share_publicly():
    """Breast cancer (455 training rows, 30 raw columns, 10 parties, total epsilon 1): at the default share 0.1 the
    step's noise would swamp every count; the classifier takes the smallest share of SHARE_LADDER that does not
    (recorded with the requested one), the total stays the request, and the model is far above the majority class
    (0.653 when the step was skipped and the raw columns clipped to [-1, 1])."""
    from privdist.privacy.range_plan import SHARE_LADDER

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    m = _quiet(DistributedLogisticRegression(epsilon=1.0, n_agents=10, random_state=0), Xtr, ytr)
    step = next(s for s in m.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["requested_share"] == 0.1 and step["share"] in SHARE_LADDER and "swamp" in step["share_note"]
    assert m.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert m.score(Xte, yte) > 0.8 > max(np.mean(yte), 1 - np.mean(yte))
    # under local trust the noise is sqrt(K) larger: swamped at every share, nothing is spent
    local = _quiet(DistributedLogisticRegression(epsilon=1.0, n_agents=10, random_state=0, trust="local"), Xtr, ytr)
    step = next(s for s in local.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["share"] == 0.0


def test_ridge_target_is_scaled_and_mapped_back():
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    m = _quiet(DistributedRidge(epsilon=None, n_agents=5, random_state=0), Xtr, ytr)
    lo, hi = m.target_bounds_
    assert lo <= np.quantile(ytr, 0.01) and hi >= np.quantile(ytr, 0.99)
    pred = m.predict(Xte)
    assert 50 < pred.mean() < 300  # original units
    rmse = float(np.sqrt(np.mean((pred - yte) ** 2)))
    assert rmse < 0.9 * float(np.std(yte)), rmse
    step = next(s for s in m.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["columns"][-1] == "<target>" and step["target_bounds"] == [lo, hi]
    pub = _quiet(DistributedRidge(epsilon=None, n_agents=5, target_bounds=(0, 400), random_state=0), Xtr, ytr)
    assert pub.target_bounds_ == (0.0, 400.0) and 50 < pub.predict(Xte).mean() < 300
    # private: the composition is the requested total
    priv = _quiet(DistributedRidge(epsilon=1.0, n_agents=5, random_state=0), Xtr, ytr)
    assert priv.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)


def test_vertical_dp_scale_is_the_requested_total():
    X, y = load_breast_cancer(return_X_y=True)
    m = _quiet(SharedFeatureLogisticRegression(epsilon=1.0, n_parties=3, rounds=10, protocol="admm_sharing",
                                               bounds={f"x{j}": (0, 50) for j in range(10)}, random_state=0), X, y)
    rep = m.privacy_report_
    for a in rep["per_agent"]:
        assert a["guarantee_pld"] == pytest.approx(1.0, rel=1e-3)  # party 0 (public bounds) trains on its whole budget
    step = next(s for s in rep["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert [p["party"] for p in step["parties"]] == [1, 2] and "row-level" in rep["scope"]


def test_cli_fit_default_is_dp_and_writes_the_bounds(tmp_path, capsys):
    import pandas as pd

    from privdist.cli.main import main

    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame({"a": rng.normal(size=n) * 300 + 1000, "b": rng.normal(size=n)})
    df["y"] = (df["a"] - 1000 + 100 * rng.normal(size=n) > 0).astype(int)
    df.to_csv(tmp_path / "d.csv", index=False)
    base = ["fit", str(tmp_path / "d.csv"), "--target", "y", "--epsilon", "1", "--delta", "1e-5", "--agents", "2",
            "--rounds", "10", "--curve", ""]
    assert main(base + ["--out", str(tmp_path / "o1")]) == 0
    model = json.loads((tmp_path / "o1" / "model.json").read_text())
    step = next(s for s in model["preprocessing"]["steps"] if s["step"] == "scale_by_dp_ranges")
    assert step["share"] == 0.1 and step["columns"] == ["a", "b"]  # the file's names (issue 39), not x0, x1
    assert model["preprocessing"]["bounds"][0][0] == step["bounds"]["a"][0]
    assert model["privacy"]["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert main(base + ["--scale", "dp", "--range-share", "0.05", "--bounds", "b=-4:4", "--out",
                        str(tmp_path / "o2")]) == 0
    model = json.loads((tmp_path / "o2" / "model.json").read_text())
    step = next(s for s in model["preprocessing"]["steps"] if s["step"] == "scale_by_dp_ranges")
    assert step["share"] == 0.05 and step["columns"] == ["a"] and model["preprocessing"]["bounds"][1][1] == 4.0
    assert "DP release, share 0.05" in capsys.readouterr().out


def test_a_skipped_range_step_warns_with_its_cause_and_cure():
    """Diabetes, 5 parties, epsilon 1. 442 rows: the step on all 11 columns is swamped at the requested share, so it
    takes a larger share of the ladder with the target's counts weighted (issue 39) and finds the target; 250 rows:
    no share of the ladder is free of swamping, the target alone (less sensitivity) is affordable; 150 rows: nothing
    runs. The estimator names the unestimated columns, why, and what to do (no silent clipping)."""
    X, y = load_diabetes(return_X_y=True, scaled=False)
    with pytest.warns(Warning):
        m = DistributedRidge(epsilon=1.0, n_agents=5, random_state=0).fit(X, y)
    step = next(s for s in m.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["share"] > 0.1 and step["requested_share"] == 0.1 and step["target_weight"] == 2
    assert "<target>" not in step["fallback"] and len(step["fallback"]) < 10 and "target_only" not in step
    assert step["sensitivity"] == pytest.approx(math.sqrt(2 * (10 + 4)))
    lo, hi = m.target_bounds_  # the central bins only at this noise (seeded: 64 to 181; y's 1 % / 99 %: 39 / 319)
    assert lo <= np.quantile(y, 0.25) and hi >= np.quantile(y, 0.6)
    assert m.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    with pytest.warns(Warning) as caught:
        m = DistributedRidge(epsilon=1.0, n_agents=5, random_state=0).fit(X[:250], y[:250])
    texts = [str(w.message) for w in caught if "no private range" in str(w.message)]
    assert len(texts) == 1
    # too few rows for all 11 columns at any share; the target alone is affordable and its range found
    assert "10 column(s)" in texts[0] and "250 rows are too few" in texts[0] and "target alone" in texts[0]
    assert "bounds=" in texts[0]
    step = next(s for s in m.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["share"] == 0.1 and "<target>" not in step["fallback"] and step["target_only"]
    assert m.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    # a third of the rows: not even the target is affordable, nothing runs or is spent
    with pytest.warns(Warning) as caught:
        m = DistributedRidge(epsilon=1.0, n_agents=5, random_state=0).fit(X[:150], y[:150])
    texts = [str(w.message) for w in caught if "no private range" in str(w.message)]
    assert "11 column(s)" in texts[0] and "not run: 150 rows" in texts[0] and "target_bounds=" in texts[0]
    step = next(s for s in m.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["share"] == 0.0 and step["fallback"][-1] == "<target>"
    # stated public bounds remove the cause: no such warning
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        DistributedRidge(epsilon=1.0, n_agents=5, random_state=0, scale="bounds", bounds=np.vstack(
            [X.min(axis=0), X.max(axis=0)]), target_bounds=(25, 346)).fit(X, y)
    assert not [w for w in quiet if "no private range" in str(w.message)]


def test_non_private_regression_does_not_clip_rows_and_reaches_ridge():
    """Row clipping is a privacy device: a non-private regressor with features mapped into [-1, 1] skips it (no
    clip_rows step) and comes within 2 % of scikit-learn's Ridge on the same scaled features; a private one and a
    non-private classifier keep it."""
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6)) * [1, 10, 100, 1000, 0.1, 5] + [0, 50, 0, -3000, 1, 0]
    y = X @ [3.0, 0.3, 0.03, 0.003, 30.0, 0.6] + 500 + rng.normal(size=3000) * 5
    tr, te = slice(0, 2400), slice(2400, None)
    m = DistributedRidge(epsilon=None, n_agents=4, random_state=0).fit(X[tr], y[tr])
    assert "clip_rows" not in [s["step"] for s in m.preprocessor_.record]
    pre = m.preprocessor_
    y_lo, y_hi = m.target_bounds_
    ys = np.clip(y[tr], y_lo, y_hi)
    ridge = Ridge(alpha=m.alpha * 2400).fit(pre.transform(X[tr]), ys)
    rmse = np.sqrt(np.mean((m.predict(X[te]) - y[te]) ** 2))
    ref = np.sqrt(np.mean((ridge.predict(pre.transform(X[te])) - y[te]) ** 2))
    assert rmse <= 1.02 * ref
    private = _quiet(DistributedRidge(epsilon=1.0, n_agents=4, random_state=0), X[tr], y[tr])
    assert "clip_rows" in [s["step"] for s in private.preprocessor_.record]
    clf = DistributedLogisticRegression(epsilon=None, n_agents=4).fit(X[tr], (y[tr] > 500).astype(int))
    assert "clip_rows" in [s["step"] for s in clf.preprocessor_.record]
