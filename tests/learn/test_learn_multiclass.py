"""Three or more classes: one-vs-rest on shares of the total budget, one composed report (issue 25)."""

import warnings

import numpy as np
import pytest

from privdist.learn import DistributedLogisticRegression, DistributedRidge, ResearchModeWarning, load_model, save_model
from privdist.learn.plan import class_budgets


def _blobs(n=360, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.8, 0.0], [-0.4, 0.7], [-0.4, -0.7]])
    k = rng.integers(0, 3, n)
    return centers[k] * 0.8 + 0.1 * rng.normal(size=(n, 2)), np.array(["a", "b", "c"])[k]


def _fit(**kw):
    X, y = _blobs()
    kw.setdefault("classes", ("a", "b", "c"))  # public: names read off y would make the report not a guarantee
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResearchModeWarning)
        return DistributedLogisticRegression(n_agents=3, rounds=30, random_state=0, **kw).fit(X, y), X, y


def test_three_classes_compose_to_the_requested_total():
    m, X, y = _fit(epsilon=1.0, trust="local")  # Gaussian releases: exact shares of mu^2
    report = m.privacy_report_
    assert report["guaranteed"]
    assert all(abs(a["guarantee_pld"] - 1.0) <= 1e-3 for a in report["per_agent"])
    assert report["multiclass"]["budget_rule"] == "gaussian_mu2_shares" and report["multiclass"]["classes"] == 3
    eps_c = report["multiclass"]["class_epsilons"]
    assert len(set(eps_c)) == 1 and eps_c[0] < 1.0
    # one job ledger: the range step's release, if it ran, then every class's run continuing it (3 x the rounds)
    step = next(s for s in report["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    ran = 1 if step["share"] > 0 else 0
    per_class = m.estimators_[1].ledger_.n_releases(0) - m.estimators_[0].ledger_.n_releases(0)
    assert per_class > 0 and m.estimators_[0].ledger_.n_releases(0) == ran + per_class
    assert m.ledger_.n_releases(0) == 3 * per_class + ran


def test_sklearn_conventions():
    m, X, y = _fit(epsilon=None)
    assert list(m.classes_) == ["a", "b", "c"]
    scores = m.decision_function(X)
    assert scores.shape == (len(X), 3) and m.coef_.shape == (3, 2) and m.intercept_.shape == (3,)
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(m.predict(X), m.classes_[np.argmax(scores, axis=1)])
    assert np.mean(m.predict(X) == y) > 0.9
    assert m.agent_coefs_.shape == (3, 3, 2)


def test_two_classes_unchanged():
    X, y = _blobs()
    keep = y != "c"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResearchModeWarning)
        m = DistributedLogisticRegression(n_agents=3, rounds=10, random_state=0, epsilon=1.0).fit(X[keep], y[keep])
    assert m.decision_function(X).shape == (len(X),) and m.coef_.shape == (2,)
    assert "multiclass" not in m.privacy_report_ and not hasattr(m, "estimators_")


def test_non_gaussian_split_is_basic_composition():
    eps, deltas, rule = class_budgets(1.0, 1e-5, 4, gaussian=False)
    assert eps == [0.25] * 4 and deltas == [2.5e-6] * 4 and rule == "basic_composition"
    eps, deltas, rule = class_budgets(1.0, 1e-5, 4, gaussian=True)
    assert deltas == [1e-5] * 4 and 0.25 < eps[0] < 1.0 and rule == "gaussian_mu2_shares"


def test_model_file_round_trip(tmp_path):
    m, X, _ = _fit(epsilon=2.0)
    save_model(m, tmp_path / "model.json")
    back = load_model(tmp_path / "model.json")
    assert back.kind == "logistic_ovr" and back.classes == ["a", "b", "c"]
    np.testing.assert_allclose(back.decision_function(X), m.decision_function(X), atol=1e-9)
    np.testing.assert_allclose(back.predict_proba(X), m.predict_proba(X), atol=1e-9)
    assert list(back.predict(X)) == list(m.predict(X))


def test_regressor_target_bounds_map_the_model_back():
    rng = np.random.default_rng(1)
    X = rng.uniform(-0.5, 0.5, size=(400, 2))
    y = 100 + 60 * X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResearchModeWarning)
        m = DistributedRidge(epsilon=None, n_agents=2, rounds=200, random_state=0, target_bounds=(0, 200)).fit(X, y)
    assert abs(m.intercept_ - 100) < 5 and np.sqrt(np.mean((m.predict(X) - y) ** 2)) < 5
    with pytest.raises(ValueError, match="target_bounds"):
        DistributedRidge(epsilon=None, target_bounds=(1, 1)).fit(X, y)


def test_target_bounds_clip_predictions_and_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.uniform(-0.5, 0.5, size=(200, 2))
    y = 50 + 40 * X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DistributedRidge(epsilon=0.1, n_agents=4, rounds=50, random_state=0, target_bounds=(0, 100)).fit(X, y)
    far = 50 * rng.normal(size=(50, 2))
    assert np.all((m.predict(far) >= 0) & (m.predict(far) <= 100))
    save_model(m, tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert back.target_bounds == (0.0, 100.0)
    np.testing.assert_allclose(back.predict(far), m.predict(far), atol=1e-9)


def test_three_classes_under_secure_aggregation_compose_to_the_total():
    """The default trust (secure aggregation, Skellam releases): every class's noise is calibrated on the joint RDP
    composition of the 3 classes' releases and the range release (dpmm's runs and prior), so the merged ledger's
    guarantee is the request itself, not below it (basic composition left 0.63 of it)."""
    m, X, y = _fit(epsilon=1.0)
    report = m.privacy_report_
    assert report["trust"]["model"] == "secure_aggregation"
    assert report["multiclass"]["budget_rule"] == "skellam_joint_rdp"
    assert m.estimators_[0].algorithm_params_["runs"] == 3
    assert max(a["guarantee_rdp"] for a in report["per_agent"]) == pytest.approx(1.0, rel=1e-3)
    assert report["guaranteed"] and all(a["guarantee_rdp"] <= 1.0 + 1e-9 for a in report["per_agent"])
