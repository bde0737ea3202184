"""Issue 37: one privacy plan per fit. Its declared events equal the fit's ledger for every horizontal and vertical
estimator, every trust model and multiclass; it round-trips through JSON; nothing below it re-decides the budget."""

import json
import warnings

import numpy as np
import pytest

from privdist.errors import UnknownNameError, ValidationError
from privdist.learn import DistributedLasso, DistributedLogisticRegression, DistributedRidge
from privdist.learn import SharedFeatureLogisticRegression
from privdist.learn.plan import declared_ledger
from privdist.privacy.plan import PrivacyPlan, resolve_trust


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n) * 30 + 100, rng.normal(size=n), rng.exponential(size=n)])
    y = (X[:, 0] - 100 + 30 * X[:, 1] > 0).astype(int)
    y3 = np.digitize(X[:, 1], [-0.4, 0.4])
    yr = X @ [0.05, 3.0, -1.0] + rng.normal(size=n)
    return X, y, y3, yr


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _declared(m):
    """The plan's declaration, from the plan alone: the factories its estimator builds from it (no data)."""
    plan = m.privacy_plan_
    if plan.kind == "vertical" and plan.algorithm == "pool":  # no training release: the range step's only
        return declared_ledger(plan, [], {"blocks": [len(g) for g in m.feature_groups_], "bias": m.fit_intercept})
    if plan.kind == "vertical":
        from privdist.algorithms.sharing import ADMMSharing
        from privdist.learn.budget import total_budget_params

        t = plan.training[0]
        params = {**total_budget_params("admm_sharing", t.epsilon, t.delta, plan.rounds), **plan.training_params(0)}
        if plan.private:
            params["b1"] = float(m.b1)
        factory = ADMMSharing(rho=float(m.rho), **params)
        return declared_ledger(plan, [factory], {"blocks": [len(g) for g in m.feature_groups_],
                                                 "bias": m.fit_intercept})
    P = plan.columns + (1 if m.fit_intercept else 0)
    subs = getattr(m, "estimators_", [m] * plan.classes)
    factories = [sub._algorithm(plan, c, P)[0] for c, sub in enumerate(subs)]
    loss = "squared" if m._loss == "squared" else "logistic"
    return declared_ledger(plan, factories, {"features": P, "loss": loss})


def _assert_equal_ledgers(declared, actual):
    assert declared.n_agents == actual.n_agents
    for k in range(actual.n_agents):
        assert declared.entries(k) == actual.entries(k), f"party {k}"


HORIZONTAL = [
    (DistributedLogisticRegression, dict(), "y"),  # dpmm under secure aggregation (auto), secure range step
    (DistributedLogisticRegression, dict(trust="local"), "y"),
    (DistributedLogisticRegression, dict(trust="secure_aggregation", secure_aggregation={"colluding": 1,
                                                                                          "dropout_tolerance": 0.2}),
     "y"),
    (DistributedLogisticRegression, dict(algorithm="dpsgd"), "y"),
    (DistributedLogisticRegression, dict(algorithm="dpadmm"), "y"),
    (DistributedLogisticRegression, dict(algorithm="pvp"), "y"),
    (DistributedLogisticRegression, dict(algorithm="dvp"), "y"),
    (DistributedLogisticRegression, dict(algorithm="laadmm", rounds=10), "y"),
    (DistributedLogisticRegression, dict(algorithm="consensus_admm", epsilon=None), "y"),
    (DistributedLogisticRegression, dict(epsilon=None), "y"),
    (DistributedLogisticRegression, dict(scale="none"), "y"),  # no range step
    (DistributedLogisticRegression, dict(), "y3"),  # one-vs-rest, one joint Skellam calibration
    (DistributedLogisticRegression, dict(trust="local"), "y3"),  # Gaussian mu^2 shares
    (DistributedLogisticRegression, dict(algorithm="dpsgd"), "y3"),
    (DistributedRidge, dict(), "yr"),  # the target as one more column of the secure range step
    (DistributedRidge, dict(trust="local"), "yr"),
    (DistributedLasso, dict(algorithm="dpsgd", target_bounds=(-10, 10)), "yr"),
    (DistributedLogisticRegression, dict(algorithm="ssp"), "y"),  # issue 39: one-shot statistics, secure (auto)
    (DistributedLogisticRegression, dict(algorithm="ssp", trust="local"), "y"),
    (DistributedLogisticRegression, dict(algorithm="ssp"), "y3"),
    (DistributedLogisticRegression, dict(algorithm="ssp", trust="local"), "y3"),
    (DistributedRidge, dict(algorithm="ssp"), "yr"),
    (DistributedRidge, dict(algorithm="ssp", trust="local"), "yr"),
    (DistributedRidge, dict(algorithm="ssp", epsilon=None), "yr"),
]


@pytest.mark.parametrize("Est,kw,target", HORIZONTAL, ids=lambda v: str(v) if not isinstance(v, type) else v.__name__)
def test_declared_events_equal_the_ledger_horizontal(Est, kw, target):
    X, y, y3, yr = _data()
    m = _fit(Est(n_agents=4, random_state=1, **kw), X, {"y": y, "y3": y3, "yr": yr}[target])
    plan = m.privacy_plan_
    _assert_equal_ledgers(_declared(m), m.ledger_)
    assert m.privacy_report_["promised"] == plan.promised()
    assert PrivacyPlan.from_json(plan.to_json()) == plan
    if plan.private and plan.range is not None:
        assert plan.range.released == any(m.ledger_.entries(k) for k in range(plan.parties))


@pytest.mark.parametrize("kw", [dict(n_agents=5), dict(n_agents=2, trust="local"), dict(n_agents=5, algorithm="ssp")])
def test_declared_events_equal_the_ledger_with_a_weighted_target(kw):
    """Issue 39: a small regression (diabetes' 442 rows; under local trust 2 parties, whose summed noise is smaller
    than 5's) whose range step climbs the share ladder with the target's counts weighted: the plan declares exactly
    what the fit records."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)
    m = _fit(DistributedRidge(random_state=0, **kw), X, y)
    assert m.privacy_plan_.range.target_weight == 2 and m.privacy_plan_.range.share > 0.1
    _assert_equal_ledgers(_declared(m), m.ledger_)
    assert PrivacyPlan.from_json(m.privacy_plan_.to_json()) == m.privacy_plan_


@pytest.mark.parametrize("kw", [dict(), dict(protocol="admm_sharing"), dict(trust="secure_aggregation"),
                                dict(epsilon=None), dict(bounds={"x0": (0, 200)}),
                                dict(bounds={"x0": (0, 200)}, protocol="admm_sharing"), dict(scale="none")])
def test_declared_events_equal_the_ledger_vertical(kw):
    X, y, _, _ = _data()
    m = _fit(SharedFeatureLogisticRegression(n_parties=3, rounds=8, random_state=1, **kw), X, y)
    _assert_equal_ledgers(_declared(m), m.ledger_)
    assert PrivacyPlan.from_json(m.privacy_plan_.to_json()) == m.privacy_plan_
    assert m.privacy_report_["promised"]["trust"] == m.privacy_plan_.trust


def test_plan_is_decided_from_public_facts_and_read_back():
    X, y, y3, _ = _data()
    m = _fit(DistributedLogisticRegression(n_agents=4, random_state=1), X, y3)
    plan = m.privacy_plan_
    assert (plan.trust, plan.parties, plan.rows, plan.columns, plan.classes) == ("secure_aggregation", 4, 600, 3, 3)
    assert plan.class_rule == "skellam_joint_rdp" and all(t.runs == 3 for t in plan.training)
    assert plan.range.kind == "skellam" and plan.training[0].prior == (plan.range.mechanism(0).prior(),)
    data = json.loads(plan.to_json())
    assert data["secure"] == {"colluding": 0, "dropout_tolerance": 0.0, "bits": None, "recovery": "auto",
                              "threshold": None}
    with pytest.raises(ValidationError):
        PrivacyPlan.from_dict({**data, "version": 99})
    with pytest.raises(ValidationError):
        PrivacyPlan.from_dict({k: v for k, v in data.items() if k != "training"})
    with pytest.raises(ValidationError):  # a plan read from a file is checked like a new one
        PrivacyPlan.from_dict({**data, "secure": {**data["secure"], "colluding": 4}})
    with pytest.raises(ValidationError):
        PrivacyPlan.from_dict({**data, "secure": None})


def test_trust_is_resolved_in_one_place():
    assert resolve_trust("dpmm", "auto", 1.0) == "secure_aggregation"
    assert resolve_trust("ssp", "auto", 1.0) == "secure_aggregation"
    assert resolve_trust("dpsgd", "auto", 1.0) == "local"
    assert resolve_trust("admm_sharing", "auto", 1.0) == "local"
    assert resolve_trust("dpmm", "secure_aggregation", None) == "local"  # no noise: nothing to aggregate securely
    with pytest.raises(UnknownNameError):
        resolve_trust("dpmm", "trusted", 1.0)
    with pytest.raises(ValidationError):
        resolve_trust("dpsgd", "secure_aggregation", 1.0)


@pytest.mark.parametrize("params", [{"epsilon": 5.0}, {"delta": 0.1}, {"prior": (1.0,)}, {"runs": 3},
                                    {"trust": "local"}, {"budget": "round"}, {"colluding": 1}])
def test_algorithm_params_cannot_change_the_budget(params):
    X, y, _, _ = _data()
    with pytest.raises(ValidationError, match="privacy plan decides"):
        _fit(DistributedLogisticRegression(n_agents=4, random_state=1, algorithm_params=params), X, y)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.1, 1.0, "0.1", True])
def test_secure_parameters_are_validated_by_the_plan(value):
    X, y, _, _ = _data()
    with pytest.raises(ValidationError):
        _fit(DistributedLogisticRegression(n_agents=4, random_state=1,
                                           secure_aggregation={"dropout_tolerance": value}), X, y)
    with pytest.raises(ValidationError, match="describe secure aggregation"):
        _fit(DistributedLogisticRegression(n_agents=4, random_state=1, trust="local",
                                           secure_aggregation={"colluding": 1}), X, y)
