"""What ``privdist fit``'s horizontal (:mod:`privdist.cli.fit_horizontal`) and vertical
(:mod:`privdist.cli.fit_vertical`) paths share: held-out metrics, the majority-class and mean baselines, scores of
any model, fitting with the estimator's warnings kept, the number of noise draws and the progress display.

A module of its own so that the paths import it instead of each other (issue 23: no import circles).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

__all__ = ["held_out_metrics", "majority_score", "model_score", "fit_with_notes", "named", "default_draws",
           "FitProgress", "NO_PROGRESS", "CHEAP_FIT"]

#: A fit is "cheap" (three noise draws by default) below this many training rows x features x rounds x models
#: (public sizes only); measured: 20,000 rows x 10 features x 100 rounds (dpsgd, 10 parties) took 0.5 s, so a fit
#: at this size takes a few seconds.
CHEAP_FIT = 1e8


def held_out_metrics(task: str, y_true, score) -> dict:
    """Held-out metrics of ``score``: classification with 1-D decision scores (labels > 0 positive): accuracy and
    log loss; with a 2-D ``(n, C)`` matrix of class probabilities (labels = class indices): accuracy and the
    multi-class log loss; regression (predictions): RMSE and R^2 (1 - SSE / SST, SST about the test mean; None when
    the held-out target is constant, SST = 0)."""
    score = np.asarray(score, dtype=float)
    y_true = np.asarray(y_true)
    if task == "classification" and score.ndim == 2:
        p = np.clip(score, 1e-12, 1.0)
        p = p / p.sum(axis=1, keepdims=True)
        idx = y_true.astype(int)
        return {"accuracy": float(np.mean(np.argmax(p, axis=1) == idx)),
                "log_loss": float(-np.mean(np.log(p[np.arange(idx.size), idx])))}
    if task == "classification":
        from scipy.special import expit

        p = np.clip(expit(score), 1e-12, 1 - 1e-12)
        pos = y_true > 0
        return {"accuracy": float(np.mean((score > 0) == pos)),
                "log_loss": float(-np.mean(np.where(pos, np.log(p), np.log(1 - p))))}
    y_true = y_true.astype(float)
    sse = float(np.sum((score - y_true) ** 2))
    sst = float(np.sum((y_true - y_true.mean()) ** 2))
    # R^2 of a constant held-out target is not defined: None (stated, never NaN; issue 40)
    return {"rmse": float(np.sqrt(sse / y_true.size)), "r2": 1.0 - sse / sst if sst > 0 else None}


def majority_score(y_train, n: int, n_classes: int | None = None) -> np.ndarray:
    """``n`` scores predicting the training majority: two classes, the log-odds of the training base rate;
    ``n_classes >= 3`` (labels = class indices), the training class frequencies as probabilities ``(n, C)``."""
    if n_classes is not None and n_classes > 2:
        freq = np.bincount(np.asarray(y_train, dtype=int), minlength=n_classes) / max(len(y_train), 1)
        freq = freq + 1e-12 * (freq == 0)  # ties broken by the lowest index, as argmax does
        return np.tile(freq, (n, 1))
    prior = float(np.clip(np.mean(np.asarray(y_train) > 0), 1e-12, 1 - 1e-12))
    return np.full(n, np.log(prior / (1 - prior)))


def model_score(model, Z, n_classes: int | None = None) -> np.ndarray:
    """What :func:`held_out_metrics` scores: a regressor's predictions, a binary classifier's decision scores, or
    (``n_classes >= 3``) the ``(n, C)`` class probabilities, a class the model never saw at probability 0."""
    if not hasattr(model, "predict_proba"):
        return model.predict(Z)
    if n_classes is None or n_classes <= 2:
        return model.decision_function(Z)
    proba = model.predict_proba(Z)
    out = np.zeros((proba.shape[0], n_classes))
    out[:, np.asarray(model.classes_, dtype=int)] = proba
    return out


def fit_with_notes(estimator, X, y, **fit_kwargs) -> tuple:
    """``(estimator.fit(X, y, ...), its warnings as text)``, leaving out the research-mode seed notice."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = estimator.fit(X, y, **fit_kwargs)
    return est, [str(w.message) for w in caught if "random_state is set" not in str(w.message)]


def named(X, feature_names):
    """``X`` as a DataFrame with the data's column names (the estimators then name columns in their warnings and
    records, ``hours`` not ``x0``, issue 39); ``X`` itself when the data have no names. No copy of the values."""
    if not feature_names:
        return X
    import pandas as pd

    return pd.DataFrame(X, columns=[str(n) for n in feature_names], copy=False)


def default_draws(n_rows: int, n_features: int, rounds: int, n_models: int = 1) -> int:
    """Noise draws of the private model for the owner-only spread: 3 when the fit is cheap (public sizes:
    ``rows * features * rounds * models < CHEAP_FIT``), else 1."""
    return 3 if n_rows * max(n_features, 1) * rounds * n_models < CHEAP_FIT else 1


class FitProgress:
    """A progress bar over the fits of one ``privdist fit`` (model i of n), on stderr, shown only on a terminal."""

    def __init__(self, total: int, enabled: bool | None = None):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        self.enabled = console.is_terminal if enabled is None else enabled
        self._progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True,
                                  disable=not self.enabled)
        self._task = None
        self.total = total

    def __enter__(self):
        self._progress.__enter__()
        self._task = self._progress.add_task("fitting", total=self.total)
        return self

    def __exit__(self, *exc):
        return self._progress.__exit__(*exc)

    def add(self, n: int) -> None:
        """``n`` more fits than planned."""
        self.total += n
        if self._task is not None:
            self._progress.update(self._task, total=self.total)

    @contextlib.contextmanager
    def step(self, description: str):
        """One fit: shown while it runs, counted when it ends."""
        if self._task is not None:
            self._progress.update(self._task, description=description)
        try:
            yield
        finally:
            if self._task is not None:
                self._progress.advance(self._task)


class _NoProgress:
    total = 0

    def add(self, n: int) -> None:
        pass

    @contextlib.contextmanager
    def step(self, description: str):
        yield


NO_PROGRESS = _NoProgress()
