"""SharedFeatureLogisticRegression (issue 16): vertical fit on DP ADMM sharing, total budget, conventions, errors."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from privdist.cli.main import main
from privdist.data import feature_blocks
from privdist.errors import EmptyPartyError, FeatureGroupError, UnknownColumnError, ValidationError
from privdist.learn import ResearchModeWarning, SharedFeatureLogisticRegression, load_model


def _data(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ np.linspace(1.0, -1.0, d) + 0.3 * rng.normal(size=n) > 0, 1, 0)
    return X, y


def test_total_budget_is_the_pld_guarantee_per_party():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResearchModeWarning)
        m = SharedFeatureLogisticRegression(epsilon=0.6, delta=1e-5, n_parties=2, rounds=15, random_state=0,
                                            protocol="admm_sharing").fit(X, y)
    rep = m.privacy_report_
    assert rep["guaranteed"] and len(rep["per_agent"]) == 2
    for party in rep["per_agent"]:
        assert party["guarantee_pld"] == pytest.approx(0.6, rel=1e-3)
        assert party["guarantee_rdp"] >= party["guarantee_pld"]
    assert rep["epsilon"] == pytest.approx(0.6, rel=1e-3)
    assert any("labels exposed" in e for e in rep["exposures"]) and "coef_" in rep["scope"]
    assert rep["clipping"]["clip_bound_y"] == 1.0 and rep["b1"] == 1.0
    assert m.coef_.shape == (4,) and [b.size for b in m.coef_blocks_] == [2, 2]
    assert np.array_equal(np.concatenate(m.coef_blocks_), m.coef_)
    assert m.history_["objective"].shape == (16,)


def test_non_private_is_inf_and_fits():
    X, y = _data()
    m = SharedFeatureLogisticRegression(epsilon=None, n_parties=2, rounds=30).fit(X, y)
    assert m.privacy_report_["epsilon"] == float("inf") and not m.privacy_report_["guaranteed"]
    assert m.score(X, y) > 0.85
    assert m.privacy_report_["noise"]["mode"] == "secure"
    with pytest.warns(ResearchModeWarning):
        clone(m).set_params(random_state=1).fit(X, y)


def test_feature_groups_forms_and_order():
    X, y = _data()
    groups = [[3, 0], [1, 2]]
    m = SharedFeatureLogisticRegression(epsilon=None, feature_groups=groups, rounds=20).fit(X, y)
    assert [g.tolist() for g in m.feature_groups_] == [[0, 3], [1, 2]]
    per_column = SharedFeatureLogisticRegression(epsilon=None, feature_groups=[0, 1, 1, 0], rounds=20).fit(X, y)
    assert np.allclose(per_column.coef_, m.coef_)  # the same partition written per column
    df = pd.DataFrame(X, columns=["a", "b", "c=1", "c=2"])
    named = SharedFeatureLogisticRegression(epsilon=None, feature_groups=[["a", "b"], ["c"]], rounds=5).fit(df, y)
    assert [g.tolist() for g in named.feature_groups_] == [[0, 1], [2, 3]]  # "c" takes its one-hot columns


@pytest.mark.parametrize("groups, error, match", [
    ([[0, 1], [2]], FeatureGroupError, "in no party"),
    ([[0, 1], [1, 2, 3]], FeatureGroupError, "exactly one party"),
    ([[0, 1, 2, 3], []], EmptyPartyError, "party 1 holds no columns"),
    ([0, 0, 2, 2], EmptyPartyError, "party 1 holds no columns"),
    ([0, 1, 1], FeatureGroupError, "3 column"),
    ([[0, 1], [2, 9]], FeatureGroupError, "outside"),
])
def test_bad_feature_groups_are_named_errors(groups, error, match):
    X, y = _data()
    with pytest.raises(error, match=match):
        SharedFeatureLogisticRegression(feature_groups=groups, rounds=2).fit(X, y)


def test_other_named_errors():
    X, y = _data(d=2)
    with pytest.raises(EmptyPartyError):
        SharedFeatureLogisticRegression(n_parties=3, rounds=2).fit(X, y)
    with pytest.raises(UnknownColumnError):
        feature_blocks([["a"], ["zz"]], 2, None, ["a", "b"])
    with pytest.raises(ValidationError, match="PUBLIC"):
        SharedFeatureLogisticRegression(b1="pilot", n_parties=2, rounds=2).fit(X, y)


# scikit-learn's generic checks on the private configuration (total epsilon 1, secure noise), each expected failure
# justified:
_EXPECTED_FAILURES = {
    "check_fit2d_1feature": "a vertical partition of 1 column over 2 parties leaves a party without columns: "
                            "EmptyPartyError by design (the check expects a fit)",
}


def test_check_estimator():
    est = SharedFeatureLogisticRegression(n_parties=2, rounds=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, expected_failed_checks=_EXPECTED_FAILURES, on_fail=None)
    failed = [r for r in results if r["status"] == "failed"]
    assert not failed, [(r["check_name"], str(r["exception"])[:200]) for r in failed]
    # an expected failure that now passes would be a stale justification
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(_EXPECTED_FAILURES)


def test_cli_vertical_csv_end_to_end(tmp_path, capsys):
    X, y = _data(n=400, d=4, seed=1)
    df = pd.DataFrame(X, columns=["age", "income", "visits", "score"])
    df["label"] = np.where(y > 0, "yes", "no")
    df.to_csv(tmp_path / "v.csv", index=False)
    out = tmp_path / "out"
    rc = main(["fit", str(tmp_path / "v.csv"), "--target", "label", "--feature-groups", "age,income;visits,score",
               "--classes", "no,yes", "--epsilon", "0.9", "--delta", "1e-5", "--rounds", "10", "--curve", "",
               "--vertical-protocol", "admm_sharing", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "guarantee epsilon = 0.9000 (PLD" in text and "labels exposed" in text
    for name in ("private shared", "non-private shared", "centralized", "party 0 alone", "party 1 alone"):
        assert name in text
    results = json.loads((out / "results.json").read_text())
    assert all(abs(a["guarantee_pld"] - 0.9) <= 1e-3 * 0.9 for a in results["privacy"]["per_agent"])
    model = load_model(out / "model.json")  # joins the parties' owner-only blocks (parties/party_<m>.json)
    assert [p["columns"] for p in model.data["vertical"]["parties"]] == [[0, 1], [2, 3]] and model.row_norm is None
    assert model.data["coef"] is None and model.coef.shape == (4,)  # the release holds no coefficient block
    assert main(["fit", str(tmp_path / "v.csv"), "--target", "label", "--feature-groups", "age;visits,score",
                 "--epsilon", "1", "--delta", "1e-5"]) == 2  # 'income' in no group: a named error, exit 2


def test_vertical_secure_aggregation_composes_with_the_range_step():
    """trust='secure_aggregation': the coordinator's sum through secure aggregation, one Skellam noise calibrated on
    the whole budget composed with the parties' range releases (prior); the default 'auto' stays local."""
    import warnings

    from privdist.learn import SharedFeatureLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) * [1, 100, 0.01, 10]
    y = (X @ [1, 0.01, 100, 0.1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec = SharedFeatureLogisticRegression(n_parties=2, rounds=10, random_state=0,
                                              trust="secure_aggregation").fit(X, y)
        auto = SharedFeatureLogisticRegression(n_parties=2, rounds=10, random_state=0).fit(X, y)
    rep = sec.privacy_report_
    assert rep["trust"]["model"] == "secure_aggregation" and auto.privacy_report_["trust"]["model"] == "local"
    assert any(s["step"] == "scale_by_dp_ranges" for s in rep["preprocessing"])
    assert rep["epsilon"] == pytest.approx(1.0, rel=1e-3)
    with pytest.raises(Exception, match="trust"):
        SharedFeatureLogisticRegression(trust="gossip").fit(X, y)


def test_cli_vertical_protocol_of_a_horizontal_fit_is_named(tmp_path, capsys):
    """Issue 39: --vertical-protocol without a vertical fit was ignored (the pool with secure aggregation:
    test_learn_vertical_pool.test_cli_vertical_protocol_pool)."""
    X, y = _data(n=60, d=4, seed=2)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    df["label"] = np.where(y > 0, "yes", "no")
    df.to_csv(tmp_path / "v.csv", index=False)
    assert main(["fit", str(tmp_path / "v.csv"), "--target", "label", "--epsilon", "1", "--delta", "1e-5",
                 "--vertical-protocol", "pool"]) == 2
    assert "protocol of a vertical fit" in capsys.readouterr().err
