"""More than two classes: one-vs-rest over the binary private distributed logistic regression (issue 25).

:class:`privdist.learn.DistributedLogisticRegression` on a target with ``C >= 3`` classes fits ``C`` binary models
(class ``c`` against the rest) on the SAME parties, rows and public preprocessing. Every party takes part in every
binary fit, so it releases ``C`` times as much; the TOTAL budget ``(epsilon, delta)`` per party is shared:

* **Gaussian releases** (every horizontal algorithm privdist calibrates to a total budget): each class gets
  ``epsilon_c`` from :func:`privdist.privacy.split.split_budget` ``(epsilon, delta, [1] * C)`` at the same ``delta``
  (equal shares of Gaussian DP's ``mu^2``), which compose EXACTLY to ``(epsilon, delta)``;
* **secure aggregation** (dpmm's Skellam sums): every class runs at the total budget with dpmm's ``runs = C`` and the
  range release as ``prior``, so one noise level is calibrated on the RDP composition of all the classes' releases
  and the range release: exactly the total (before, basic composition left 0.63 of a requested 1 in a 3-class test);
* **any other release**: basic composition, ``(epsilon / C, delta / C)`` per class (conservative; said so in the
  report's ``multiclass`` field and its assumptions).

The budgets are the privacy plan's (:func:`privdist.learn.plan.horizontal_plan`, ``classes=C``; issue 37). The report
is not assembled from the classes' numbers: the range step and the classes' runs continue one ledger (in order, per
party) and the accountant composes all the releases at once (:func:`privdist.privacy.privacy_report`), so the printed
epsilon per party (PLD, or the Skellam RDP bound of secure sums: ``guarantee_accountant``) is that of everything the
parties released.

Prediction follows scikit-learn's one-vs-rest conventions: ``decision_function`` has shape ``(n, C)``,
``predict`` is the class of the largest score and ``predict_proba`` normalises the ``C`` sigmoids per row.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["is_multiclass", "fit_one_vs_rest", "ovr_scores", "ovr_proba"]


def is_multiclass(y) -> bool:
    """More than two distinct labels."""
    return len(np.unique(np.asarray(y))) > 2


def fit_one_vs_rest(est, X, y, groups=None, X_score=None, classes=None):
    """Fit ``est`` (a :class:`~privdist.learn.DistributedLogisticRegression`) one-vs-rest on ``C >= 3`` classes: one
    privacy plan for the job (its range step once, a training budget per class), the classes' runs continuing one
    ledger."""
    from sklearn.utils.multiclass import check_classification_targets

    from ..data.bounds import Preprocessor
    from ..privacy import privacy_report
    from ._base import PrivacyTargetWarning, ResearchModeWarning, UtilityWarning, noise_seed, summarise_privacy
    from .trust import trust_report

    est._check_params()
    check_classification_targets(y)
    classes = np.unique(y) if classes is None else classes  # stated: public, in their order (a class may be absent)
    C = len(classes)
    seed, secure = noise_seed(est.random_state, est.secure, stacklevel=4)
    groups, _ = est._parties(X, groups, np.random.default_rng(seed))
    # the same parties in every binary fit; one preprocessing: the DP range step runs once, on its share
    plan, pre, ranges, ledger = est._plan_and_ranges(X, groups, seed, secure, classes=C)
    Z = pre.transform(X)
    seeds = ([int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(C)]
             if est.random_state is not None else [None] * C)
    params = est.get_params()
    subs = []
    for c in range(C):
        t = plan.training[c]
        sub = type(est)(**{**params, "epsilon": t.epsilon, "delta": t.delta, "scale": "none", "bounds": None,
                           "random_state": seeds[c]})
        with warnings.catch_warnings():  # the combined fit warns once, about the whole model
            for category in (ResearchModeWarning, UtilityWarning, PrivacyTargetWarning):
                warnings.simplefilter("ignore", category)
            sub_seed, sub_secure = noise_seed(seeds[c], est.secure)
            sub.classes_, sub.n_features_in_ = np.array([0, 1]), Z.shape[1]
            sub.preprocessor_ = Preprocessor(scale="none", bounds=None, row_norm=sub._clip_norm()).fit(Z)
            sub.target_bounds_ = None
            sub._train(plan, c, sub.preprocessor_.transform(Z), np.where(y == classes[c], 1.0, -1.0), groups,
                       ledger, sub_seed, sub_secure, np.random.default_rng(sub_seed))
        ledger = sub.ledger_
        subs.append(sub)
    if plan.class_rule == "basic_composition":
        ledger.add_assumption(f"one-vs-rest over {C} classes with non-Gaussian releases: each class fitted at "
                              f"(epsilon/{C}, delta/{C}) (basic composition; conservative)")
    est.classes_ = classes
    est.estimators_ = subs
    est.preprocessor_ = pre
    est.n_agents_ = subs[0].n_agents_
    est.coef_ = np.stack([s.coef_ for s in subs])
    est.intercept_ = np.array([s.intercept_ for s in subs])
    est.agent_coefs_ = np.stack([s.agent_coefs_ for s in subs], axis=1)  # (K, C, d)
    est.agent_intercepts_ = np.stack([s.agent_intercepts_ for s in subs], axis=1)  # (K, C)
    est.history_ = {"objective": np.stack([s.history_["objective"] for s in subs]), "rounds": plan.rounds,
                    "note": "training objective of each class's binary model (rows: classes_), for the data holder "
                            "only (computed on private data; not a release)"}
    est.algorithm_params_ = subs[0].algorithm_params_
    est.ledger_ = ledger
    est.privacy_plan_ = plan
    mechanism = {"one_vs_rest": C, "per_class": [s._algo.mechanism_info() if hasattr(s._algo, "mechanism_info")
                                                 else None for s in subs]}
    report = summarise_privacy(privacy_report(ledger, float(est.delta)), mechanism, pre.record, subs[0]._noise,
                               epsilon=est.epsilon, delta=est.delta, rounds=plan.rounds, algorithm=est.algorithm,
                               stacklevel=4)
    rule = plan.class_rule
    report["multiclass"] = {
        "strategy": "one-vs-rest", "classes": C, "budget_rule": rule,
        "class_epsilons": [t.epsilon for t in plan.training], "class_deltas": [t.delta for t in plan.training],
        "note": ("each class's binary model spends an equal share of the total per party; the guarantee above "
                 "composes all the classes' releases (one ledger)" if plan.private else
                 "no noise: every class's model is non-private")
        + ("; Gaussian releases: shares of GDP mu^2, exact" if rule == "gaussian_mu2_shares" else "")
        + ("; non-Gaussian releases: basic composition (epsilon/C, delta/C each), conservative"
           if rule == "basic_composition" else "")
        + ("; secure aggregation: one Skellam noise calibrated on the RDP composition of every class's releases "
           "and the range release, exact" if rule == "skellam_joint_rdp" else "")}
    report["promised"] = plan.promised()
    report["trust"] = trust_report(plan, subs[0]._algo)
    est.privacy_report_ = report
    if plan.private:
        acc = float(np.mean(est.predict(X if X_score is None else X_score) == y))
        majority = float(max(np.mean(y == c) for c in classes))
        est.train_score_ = {"accuracy": acc, "majority_class": majority}
        if acc <= majority + 1e-12:
            warnings.warn(f"the private model's training accuracy {acc:.3f} is no better than predicting the "
                          f"majority class ({majority:.3f}) at epsilon={est.epsilon} ({C} classes, one-vs-rest: "
                          "each class gets 1/C of the budget); more rows per agent, fewer rounds or a larger budget "
                          "would help", UtilityWarning, stacklevel=3)
    return est


def ovr_scores(est, X) -> np.ndarray:
    """``(n, C)`` decision scores of a one-vs-rest fit."""
    from sklearn.utils.validation import check_is_fitted

    from ._base import _validate_data

    check_is_fitted(est, "coef_")
    X = _validate_data(est, X, accept_sparse=True, reset=False)
    Z = est.preprocessor_.transform(X)
    Z = np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z)
    return Z @ est.coef_.T + est.intercept_


def ovr_proba(scores) -> np.ndarray:
    """scikit-learn's one-vs-rest probabilities: the classes' sigmoids, normalised per row."""
    from scipy.special import expit

    p = expit(np.asarray(scores, dtype=float))
    total = p.sum(axis=1, keepdims=True)
    return np.divide(p, total, out=np.full_like(p, 1.0 / p.shape[1]), where=total > 0)
