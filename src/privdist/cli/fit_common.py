"""What ``privdist fit``'s horizontal (:mod:`privdist.cli.fit_cmd`) and vertical (:mod:`privdist.cli.fit_vertical`)
paths share: held-out metrics, the majority-class score and fitting with the estimator's warnings kept.

A module of its own so that the two paths import it instead of each other (issue 23: no import circles).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["held_out_metrics", "majority_score", "fit_with_notes"]


def held_out_metrics(task: str, y_true, score) -> dict:
    """Accuracy and log loss of decision scores (classification, labels > 0 positive), else the RMSE."""
    if task == "classification":
        from scipy.special import expit

        p = np.clip(expit(score), 1e-12, 1 - 1e-12)
        pos = y_true > 0
        return {"accuracy": float(np.mean((score > 0) == pos)),
                "log_loss": float(-np.mean(np.where(pos, np.log(p), np.log(1 - p))))}
    return {"rmse": float(np.sqrt(np.mean((score - y_true) ** 2)))}


def majority_score(y_train, n: int) -> np.ndarray:
    """``n`` decision scores predicting the training majority: the log-odds of the training base rate."""
    prior = float(np.clip(np.mean(np.asarray(y_train) > 0), 1e-12, 1 - 1e-12))
    return np.full(n, np.log(prior / (1 - prior)))


def fit_with_notes(estimator, X, y, **fit_kwargs) -> tuple:
    """``(estimator.fit(X, y, ...), its warnings as text)``, leaving out the research-mode seed notice."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = estimator.fit(X, y, **fit_kwargs)
    return est, [str(w.message) for w in caught if "random_state is set" not in str(w.message)]
