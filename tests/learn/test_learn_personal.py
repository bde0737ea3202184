"""A model per party and the per-party evaluation (issue 39): limits, gains on non-IID parties, no privacy spent,
named errors."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import ModelNotFittedError, ParameterTypeError, ShapeMismatchError, ValidationError
from privdist.learn import (DistributedLasso, DistributedLogisticRegression, DistributedRidge, evaluate_parties,
                            personalize)


def _silos(seed: int, K: int = 12, d: int = 5, shift: float = 0.4, task: str = "regression", n_classes: int = 2):
    """Non-IID parties: party k's true coefficients are a common vector plus its own shift; 20-200 rows each;
    a stratified-by-party 75/25 split."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=(max(n_classes, 2), d))
    Xtr, ytr, gtr, Xte, yte, gte = [], [], [], [], [], []
    for k in range(K):
        n = int(rng.integers(20, 201))
        bk = beta + rng.normal(scale=shift, size=beta.shape)
        x = rng.uniform(-1, 1, size=(n, d))
        if task == "regression":
            y = 2.0 * x @ bk[0] + rng.normal(size=n)
        elif n_classes == 2:  # logistic labels
            y = (rng.uniform(size=n) < 1 / (1 + np.exp(-3.0 * x @ bk[0]))).astype(int)
        else:  # multinomial logit labels (Gumbel trick)
            y = np.argmax(3.0 * x @ bk[:n_classes].T + rng.gumbel(size=(n, n_classes)), axis=1)
        cut = int(0.75 * n)
        Xtr.append(x[:cut]), ytr.append(y[:cut]), gtr.append(np.full(cut, k))
        Xte.append(x[cut:]), yte.append(y[cut:]), gte.append(np.full(n - cut, k))
    cat = np.concatenate
    return np.vstack(Xtr), cat(ytr), cat(gtr), np.vstack(Xte), cat(yte), cat(gte)


def _fit(Est, X, y, g, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Est(epsilon=1.0, delta=1e-5, random_state=0, n_agents=int(g.max()) + 1, **kw).fit(X, y, groups=g)


@pytest.fixture(scope="module")
def ridge_case():
    Xtr, ytr, gtr, Xte, yte, gte = _silos(1)
    return _fit(DistributedRidge, Xtr, ytr, gtr), (Xtr, ytr, gtr, Xte, yte, gte)


def test_ridge_limits_alone_and_global(ridge_case):
    from sklearn.linear_model import Ridge

    model, (Xtr, ytr, gtr, *_) = ridge_case
    mask = gtr == 3
    alone = personalize(model, Xtr[mask], ytr[mask], strengths=(0.0,))
    Z = model.preprocessor_.transform(Xtr[mask])
    sk = Ridge(alpha=model.alpha * mask.sum()).fit(Z, ytr[mask])
    np.testing.assert_allclose(alone.coef_, sk.coef_, atol=1e-8)
    assert alone.intercept_ == pytest.approx(sk.intercept_, abs=1e-8)
    glob = personalize(model, Xtr[mask], ytr[mask], strengths=(math.inf,), intercept_prior=math.inf)
    np.testing.assert_array_equal(glob.coef_, model.coef_)
    assert glob.intercept_ == model.intercept_
    np.testing.assert_allclose(glob.predict(Xtr[mask]), model.predict(Xtr[mask]))
    huge = personalize(model, Xtr[mask], ytr[mask], strengths=(1e9,))  # lam -> inf approaches the global model
    np.testing.assert_allclose(huge.coef_, model.coef_, atol=1e-6)


def test_personalize_spends_no_privacy(ridge_case):
    model, (Xtr, ytr, gtr, *_) = ridge_case
    coef, intercept = model.coef_.copy(), model.intercept_
    events = copy.deepcopy(model.ledger_.to_dict()) if hasattr(model.ledger_, "to_dict") else None
    eps = model.privacy_report_["epsilon"]
    p = model.personalize(Xtr[gtr == 0], ytr[gtr == 0], random_state=0)
    assert "not a release" in p.note.lower()
    np.testing.assert_array_equal(model.coef_, coef)
    assert model.intercept_ == intercept
    assert model.privacy_report_["epsilon"] == eps
    if events is not None:
        assert model.ledger_.to_dict() == events
    from privdist.privacy import privacy_report

    again = privacy_report(model.ledger_, 1e-5)
    assert max(a["epsilon"]["pld"] for a in again["per_agent"]) == pytest.approx(eps, rel=1e-9)


def test_personalize_is_deterministic(ridge_case):
    model, (Xtr, ytr, gtr, *_) = ridge_case
    a = personalize(model, Xtr[gtr == 2], ytr[gtr == 2], random_state=5)
    b = personalize(model, Xtr[gtr == 2], ytr[gtr == 2], random_state=5)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.strength_ == b.strength_


@pytest.mark.parametrize("task,n_classes,seed,shift,epsilon,at_least,min_gain",
                         [("regression", 2, 1, 0.15, 2.0, 18, 0.02),
                          ("classification", 2, 2, 0.3, 1.0, 18, 0.0),
                          ("classification", 3, 3, 0.3, 1.0, 11, -0.01)])
def test_personal_gains_on_non_iid_parties(task, n_classes, seed, shift, epsilon, at_least, min_gain):
    """20 parties of 20-200 rows, 10 features, each with its own coefficient shift; measured at these seeds:
    19, 20 and 12 of 20 parties at least as good as alone, mean gains +0.0381 RMSE, +0.025 and -0.005 accuracy
    (the global model: -0.13 RMSE, -0.020, -0.076; before the intercept prior and the size-aware rule of issue 39's
    rework: -0.0017 RMSE, +0.025, -0.0127). Three classes: "alone" is scikit-learn's multinomial model, the
    personal model one-vs-rest, so lam = 0 is not exactly alone there (a known gap)."""
    Xtr, ytr, gtr, Xte, yte, gte = _silos(seed, K=20, d=10, shift=shift, task=task, n_classes=n_classes)
    Est = DistributedRidge if task == "regression" else DistributedLogisticRegression
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Est(epsilon=epsilon, random_state=0, n_agents=20).fit(Xtr, ytr, groups=gtr)
    out = evaluate_parties(model, Xtr, ytr, gtr, Xte, yte, gte, names=[f"silo{k}" for k in range(20)])
    s = out["summary"]["all"]
    assert s["parties"] == 20
    assert s["personal_gains"] >= at_least  # most parties at least as good as alone
    assert s["mean_gain_personal"] >= min_gain
    assert s["mean_gain_personal"] > s["mean_gain_global"]
    assert [r["name"] for r in out["parties"]] == [f"silo{k}" for k in range(20)]
    assert out["metric"] == ("rmse" if task == "regression" else "accuracy")


def test_ridge_leave_one_out_is_exact():
    """The closed-form leave-one-out errors equal refitting without each row (penalty held at n P)."""
    from privdist.learn._personal_objective import _design, _penalty, _pull, _ridge_loo

    rng = np.random.default_rng(3)
    n, d = 25, 4
    A = _design(rng.normal(size=(n, d)), True)
    y = A @ rng.normal(size=d + 1) + rng.normal(size=n)
    theta_g = rng.normal(size=d + 1)
    for lam, mu in ((0.0, 0.0), (0.1, 0.0), (10.0, 0.0), (0.1, 3.0), (10.0, 1.0)):  # mu: the intercept prior, held
        prior = mu / n
        M = n * np.diag(_penalty(d + 1, 0.01, lam, True, prior))
        c = n * _pull(d + 1, lam, True, prior) * theta_g
        brute = []
        for i in range(n):
            keep = np.arange(n) != i
            theta = np.linalg.solve(A[keep].T @ A[keep] + M, A[keep].T @ y[keep] + c)
            brute.append((A[i] @ theta - y[i]) ** 2)
        np.testing.assert_allclose(_ridge_loo(A, y, theta_g, 0.01, lam, True, None, prior=prior), brute, rtol=1e-8)
    r = y - A @ theta_g  # lam = inf: the global coefficients, the intercept pooled from the other rows' residuals
    brute = [(A[i] @ theta_g + (r.sum() - r[i]) / (n - 1 + 2.0) - y[i]) ** 2 for i in range(n)]
    np.testing.assert_allclose(_ridge_loo(A, y, theta_g, 0.01, math.inf, True, None, prior=2.0 / n), brute,
                               rtol=1e-10)


def test_intercept_is_free_coefficients_pulled(ridge_case):
    """Without the intercept prior only the coefficients are pulled towards the global model: a party whose targets
    are the global model's predictions shifted by a constant keeps the global coefficients and its own intercept at a
    large lam; with the prior (mu rows) its intercept moves by n / (n + mu) of the shift (Gelman & Hill 2007, ch. 12)."""
    model, (Xtr, *_) = ridge_case
    X = Xtr[:40]
    y = model._decision(X) + 7.5
    p = personalize(model, X, y, strengths=(1e8,), intercept_prior=0.0)
    np.testing.assert_allclose(p.coef_, model.coef_, atol=1e-5)
    assert p.intercept_ == pytest.approx(model.intercept_ + 7.5, abs=1e-5)
    for strength in (1e8, math.inf):
        pooled = personalize(model, X, y, strengths=(strength,), intercept_prior=2.0)
        assert pooled.intercept_ == pytest.approx(model.intercept_ + 7.5 * 40 / 42, abs=1e-5)
    kept = personalize(model, X, y, strengths=(1.0,), intercept_prior=math.inf)  # mu = inf: the global intercept
    assert kept.intercept_ == pytest.approx(model.intercept_, abs=1e-6)


def test_one_class_party_and_few_rows_pool_the_intercept():
    """Fallbacks keep the global coefficients; the intercept is the MAP under the prior: finite for one class, moving
    towards that class as its rows grow; ``intercept_prior=inf`` keeps the global model."""
    Xtr, ytr, gtr, *_ = _silos(2, task="classification")
    model = _fit(DistributedLogisticRegression, Xtr, ytr, gtr)
    rows = gtr == 0
    Xp, yp = Xtr[rows][ytr[rows] == 1], ytr[rows][ytr[rows] == 1]
    one = personalize(model, Xp, yp)
    assert one.strength_ == math.inf and "one class" in one.fallback_ and "pooled" in one.fallback_
    np.testing.assert_array_equal(one.coef_, model.coef_)
    shifts = [personalize(model, Xp[:n], yp[:n]).intercept_ - model.intercept_ for n in (1, 4, 12, len(yp))]
    assert all(np.isfinite(shifts)) and 0 < shifts[0] < shifts[1] < shifts[2] < shifts[3]
    assert np.mean(personalize(model, Xp, yp).predict(Xp) == 1) >= np.mean(model.predict(Xp) == 1)
    kept = personalize(model, Xp, yp, intercept_prior=math.inf)
    assert kept.intercept_ == model.intercept_
    few = personalize(model, Xtr[rows][:4], ytr[rows][:4])
    assert few.strength_ == math.inf and "fewer than" in few.fallback_
    np.testing.assert_array_equal(few.coef_, model.coef_)
    assert few.predict_proba(Xtr[:3]).shape == (3, 2)


def test_evaluation_one_class_party_and_no_nan():
    Xtr, ytr, gtr, Xte, yte, gte = _silos(4, K=4, task="classification")
    ytr = ytr.copy()
    ytr[gtr == 1] = 1  # party 1's training rows hold one class: alone predicts it
    model = _fit(DistributedLogisticRegression, Xtr, ytr, gtr)
    out = evaluate_parties(model, Xtr, ytr, gtr, Xte, yte, gte)
    row = out["parties"][1]
    assert row["alone"] == pytest.approx(float(np.mean(yte[gte == 1] == 1)))
    assert row["personal_strength"] == "global coefficients"

    def walk(v):
        if isinstance(v, dict):
            return all(walk(x) for x in v.values())
        if isinstance(v, list):
            return all(walk(x) for x in v)
        return not (isinstance(v, float) and math.isnan(v))

    assert walk(out)


def test_named_errors(ridge_case):
    model, (Xtr, ytr, gtr, *_) = ridge_case
    with pytest.raises(ShapeMismatchError):
        personalize(model, Xtr[:30, :3], ytr[:30])
    with pytest.raises(ShapeMismatchError):
        personalize(model, Xtr[:30], ytr[:29])
    with pytest.raises(ModelNotFittedError):
        personalize(DistributedRidge(), Xtr[:30], ytr[:30])
    with pytest.raises(ModelNotFittedError):
        DistributedLogisticRegression().personalize(Xtr[:30], ytr[:30] > 0)
    with pytest.raises(ParameterTypeError):
        personalize(_fit(DistributedLasso, Xtr, ytr, gtr), Xtr[:30], ytr[:30])
    with pytest.raises(ValidationError):
        personalize(model, Xtr[:30], ytr[:30], strengths=(-1.0,))
    for bad in (-1.0, math.nan, "strong"):
        with pytest.raises(ValidationError, match="intercept_prior"):
            personalize(model, Xtr[:30], ytr[:30], intercept_prior=bad)
    p = personalize(model, Xtr[:30], ytr[:30])
    with pytest.raises(ShapeMismatchError):
        p.predict(Xtr[:5, :2])
    Xtr_nan = Xtr[:30].copy()
    Xtr_nan[0, 0] = np.nan
    with pytest.raises(ValidationError):
        personalize(model, Xtr_nan, ytr[:30])
    clf = _fit(DistributedLogisticRegression, Xtr, (ytr > 0).astype(int), gtr)
    with pytest.raises(ValidationError, match="does not know"):
        personalize(clf, Xtr[:30], np.full(30, 7))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(12, 60))
def test_infinite_strength_is_the_global_model(ridge_case, seed, n):
    """Invariant: whatever the party's rows, the lam = inf personal model predicts as the global model."""
    model, _ = ridge_case
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 5))
    y = rng.normal(size=n) * 10
    p = personalize(model, X, y, strengths=(math.inf,), intercept_prior=math.inf)
    np.testing.assert_array_equal(p.coef_, model.coef_)
    bounds = model.target_bounds_
    expected = model.decision_function(X) if hasattr(model, "decision_function") else model._decision(X)
    if bounds is not None:  # the personal model clips to the release's bounds widened to the party's own range
        expected = np.clip(expected, min(bounds[0], y.min()), max(bounds[1], y.max()))
    np.testing.assert_allclose(p.predict(X), expected)


def test_dataframe_columns_are_matched_by_name():
    pd = pytest.importorskip("pandas")
    Xtr, ytr, gtr, *_ = _silos(6, K=3, task="classification")
    df = pd.DataFrame(Xtr, columns=list("abcde"))
    model = _fit(DistributedLogisticRegression, df, ytr, gtr)
    p = model.personalize(df[gtr == 0], ytr[gtr == 0], random_state=0)
    shuffled = df[list("edcba")]
    np.testing.assert_array_equal(p.predict(shuffled), p.predict(df))
    with pytest.raises(ShapeMismatchError, match="lacks"):
        p.predict(df.drop(columns="c"))
