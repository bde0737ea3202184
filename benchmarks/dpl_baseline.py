"""The diffprivlib column of the utility benchmark: its pooled private model at the same epsilon (an optional
benchmark extra; ``bench_utility`` documents the settings)."""

from __future__ import annotations

import warnings

import numpy as np

ALPHA = 1e-4  # the estimators' default alpha; the pooled and local scikit-learn models use the same scale


def _metric(task, model, X, y):
    """Test accuracy, or RMSE for a regression."""
    pred = model.predict(X)
    if task == "classification":
        return float(np.mean(pred == y))
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def import_diffprivlib():
    """``(module models, None)`` or ``(None, note)``: diffprivlib is an optional benchmark extra."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from diffprivlib import models
        return models, None
    except Exception as exc:  # ImportError, or an incompatibility raised at import
        return None, f"diffprivlib column skipped: import failed ({type(exc).__name__}: {exc})"


def _diffprivlib(dpl, task, Z, ytr, Zte, yte, draws, private):
    out = []
    for d in range(draws):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if task == "classification":
                m = dpl.LogisticRegression(epsilon=1.0, data_norm=1.0, C=1.0 / (2 * ALPHA * Z.shape[0]),
                                           random_state=d)
            else:
                lo, hi = (private.target_bounds_ if private.target_bounds_ is not None
                          else (float(np.min(ytr)), float(np.max(ytr))))
                m = dpl.LinearRegression(epsilon=1.0, bounds_X=(-1.0, 1.0), bounds_y=(float(lo), float(hi)),
                                         random_state=d)
            out.append(_metric(task, m.fit(Z, ytr), Zte, yte))
    return out
