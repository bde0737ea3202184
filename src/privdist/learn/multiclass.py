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

The report is not assembled from the classes' numbers: the classes' ledgers are merged (in order, per party) into one
ledger and the accountant composes all the releases at once (:func:`privdist.privacy.privacy_report`), so the printed
epsilon per party (PLD, or the Skellam RDP bound of secure sums: ``guarantee_accountant``) is that of everything the
parties released.

Prediction follows scikit-learn's one-vs-rest conventions: ``decision_function`` has shape ``(n, C)``,
``predict`` is the class of the largest score and ``predict_proba`` normalises the ``C`` sigmoids per row.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["is_multiclass", "fit_one_vs_rest", "ovr_scores", "ovr_proba", "class_budgets"]


def is_multiclass(y) -> bool:
    """More than two distinct labels."""
    return len(np.unique(np.asarray(y))) > 2


def _releases_are_gaussian(est) -> bool:
    """Whether the algorithm of ``est`` releases Gaussian noise at a total budget (its mechanism, built without
    running it: nothing is read from the data)."""
    from ..algorithms.registry import make_algorithm
    from .budget import total_budget_params
    from .trust import trust_params

    params = {**est._default_algorithm_params(est.algorithm, float(est.row_norm)),
              **total_budget_params(est.algorithm, est.epsilon, est.delta, est._rounds()),
              **trust_params(est), **dict(est.algorithm_params or {})}
    algo = make_algorithm(est.algorithm, **params)
    info = algo.mechanism_info() if hasattr(algo, "mechanism_info") else {}
    return info.get("kind") == "gaussian"


def _joint_skellam(est, ranges, n_classes: int) -> dict | None:
    """Under secure aggregation with noise: the dpmm parameters that calibrate each class's Skellam noise on the
    joint composition of all ``n_classes`` runs and the range release (``runs``, ``prior``), None otherwise."""
    from .trust import trust_params

    params = trust_params(est, ranges)
    if est.epsilon is None or params.get("trust") != "secure_aggregation":
        return None
    return {"runs": int(n_classes), **({"prior": params["prior"]} if "prior" in params else {})}


def class_budgets(epsilon, delta: float, n_classes: int, gaussian: bool) -> tuple[list, list, str]:
    """``(epsilons, deltas, rule)`` of ``n_classes`` binary fits sharing the total ``(epsilon, delta)``."""
    if epsilon is None:
        return [None] * n_classes, [float(delta)] * n_classes, "none (no noise)"
    if gaussian:
        from ..privacy.split import split_budget

        eps = list(split_budget(float(epsilon), float(delta), [1.0] * n_classes))
        return eps, [float(delta)] * n_classes, "gaussian_mu2_shares"
    return ([float(epsilon) / n_classes] * n_classes, [float(delta) / n_classes] * n_classes,
            "basic_composition")


def fit_one_vs_rest(est, X, y, groups=None):
    """Fit ``est`` (a :class:`~privdist.learn.DistributedLogisticRegression`) one-vs-rest on ``C >= 3`` classes."""
    from ..privacy import privacy_report
    from ._base import PrivacyTargetWarning, ResearchModeWarning, UtilityWarning, noise_seed, summarise_privacy

    est._check_params()
    from sklearn.utils.multiclass import check_classification_targets

    check_classification_targets(y)
    classes = np.unique(y)
    C = len(classes)
    seed, secure = noise_seed(est.random_state, est.secure, stacklevel=4)
    # the same parties in every binary fit; one preprocessing: the DP range step runs once, on its share
    groups, _, pre, ranges = est._parties_and_ranges(X, groups, np.random.default_rng(seed), seed, secure)
    Z = pre.transform(X)
    joint = _joint_skellam(est, ranges, C)
    if joint is not None:  # one Skellam calibration for all classes and the range release: exactly the total
        epsilons, deltas, rule = [float(est.epsilon)] * C, [float(est.delta)] * C, "skellam_joint_rdp"
        gaussian = False
    else:
        gaussian = est.epsilon is None or _releases_are_gaussian(est)
        epsilons, deltas, rule = class_budgets(ranges.epsilon, ranges.delta, C, gaussian)
    seeds = ([int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(C)]
             if est.random_state is not None else [None] * C)
    params = est.get_params()
    subs = []
    for c in range(C):
        sub = type(est)(**{**params, "epsilon": epsilons[c], "delta": deltas[c], "scale": "none", "bounds": None,
                           "random_state": seeds[c]})
        if joint is not None:
            sub.algorithm_params = {**dict(est.algorithm_params or {}), **joint}
        with warnings.catch_warnings():  # the combined fit warns once, about the whole model
            for category in (ResearchModeWarning, UtilityWarning, PrivacyTargetWarning):
                warnings.simplefilter("ignore", category)
            sub.fit(Z, (y == classes[c]).astype(int), groups=groups)
        subs.append(sub)

    ledger = subs[0].ledger_
    for sub in subs[1:]:
        ledger = ledger.merge(sub.ledger_)
    ranges.record_releases(ledger)  # the range release composes with every class's training
    if est.epsilon is not None and not gaussian and joint is None:
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
    est.history_ = {"objective": np.stack([s.history_["objective"] for s in subs]), "rounds": est._rounds(),
                    "note": "training objective of each class's binary model (rows: classes_), for the data holder "
                            "only (computed on private data; not a release)"}
    est.algorithm_params_ = subs[0].algorithm_params_
    est.ledger_ = ledger
    mechanism = {"one_vs_rest": C, "per_class": [s.privacy_report_["calibration"]["mechanism"] for s in subs]}
    report = summarise_privacy(privacy_report(ledger, float(est.delta)), mechanism, pre.record,
                               subs[0].privacy_report_.get("noise"), epsilon=est.epsilon, delta=est.delta,
                               rounds=est._rounds(), algorithm=est.algorithm, stacklevel=4)
    report["multiclass"] = {
        "strategy": "one-vs-rest", "classes": C, "budget_rule": rule,
        "class_epsilons": epsilons, "class_deltas": deltas,
        "note": ("each class's binary model spends an equal share of the total per party; the guarantee above "
                 "composes all the classes' releases (one merged ledger)" if est.epsilon is not None else
                 "no noise: every class's model is non-private")
        + ("; Gaussian releases: shares of GDP mu^2, exact" if rule == "gaussian_mu2_shares" else "")
        + ("; non-Gaussian releases: basic composition (epsilon/C, delta/C each), conservative"
           if rule == "basic_composition" else "")
        + ("; secure aggregation: one Skellam noise calibrated on the RDP composition of every class's releases "
           "and the range release, exact" if rule == "skellam_joint_rdp" else "")}
    report["trust"] = subs[0].privacy_report_.get("trust")
    est.privacy_report_ = report
    if est.epsilon is not None:
        acc = float(np.mean(est.predict(X) == y))
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
