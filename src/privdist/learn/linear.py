"""Horizontal estimators: each agent holds some rows; a private distributed algorithm fits one linear model."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from ..errors import ValidationError
from ._base import DistributedLinearModel, UtilityWarning, binary_classifier_tags, binary_labels, warn_if_majority

__all__ = ["DistributedLogisticRegression", "DistributedRidge", "DistributedLasso"]

_DOC_PARAMS = """
    Args:
        algorithm: A privdist algorithm for horizontal data: ``"dpsgd"`` (default; per-sample gradients clipped,
            so its guarantee is enforced), ``"dpadmm"``, ``"pvp"``, ``"dvp"``, ``"laadmm"``, or
            ``"consensus_admm"`` (no noise).
        epsilon: TOTAL epsilon per agent for the whole run (``None``: no noise, a non-private baseline).
        delta: TOTAL delta per agent.
        n_agents: Number of agents when ``fit`` gets no ``groups`` (rows are then split at random, equally).
        network: ``"complete"``, ``"ring"``, ``"star"``, ... (:func:`privdist.network.make_network` kinds) or a
            ``Network``.
        rounds: Communication rounds (each costs one release per agent; the budget covers all of them).
        alpha: Regularisation weight of the whole network objective.
        fit_intercept: Fit an intercept (a constant feature 1 appended after row clipping).
        row_norm: Public bound: every row is clipped to this Euclidean norm before training.
        scale: ``"none"`` (default), ``"bounds"`` (public ``bounds``) or ``"data"`` (min/max of the training data;
            NOT private; recorded in ``privacy_report_["preprocessing"]`` and warned about).
        bounds: Public per-column bounds for ``scale="bounds"`` ((2, d) array, a pair, or ``{column: (lo, hi)}``).
        algorithm_params: Overrides of the algorithm's hyperparameters (e.g. ``{"alpha0": 32}``).
        secure: Draw the noise from fresh OS entropy (never recorded). Default True: what a release needs.
        random_state: Research reproducibility: seeds the partition and the noise; switches ``secure`` off and
            warns (a seeded model is not for release).

    Attributes:
        coef_, intercept_: The model (average of the agents' released models).
        agent_coefs_, agent_intercepts_: Each agent's released model, shape (K, d) and (K,).
        privacy_report_: Requested budget, the PLD guarantee per agent (RDP cross-check), the paper's claim,
            the calibration, assumptions enforced, preprocessing steps (and whether they are private), noise mode.
        history_: ``{"objective": training objective per round, ...}``.
        n_agents_: Number of agents of the fit.
"""


class _Defaults:
    def __init__(self, algorithm="dpsgd", epsilon=1.0, delta=1e-5, n_agents=10, network="complete", rounds=100,
                 alpha=1e-4, fit_intercept=True, row_norm=1.0, scale="none", bounds=None, algorithm_params=None,
                 secure=True, random_state=None):
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.n_agents = n_agents
        self.network = network
        self.rounds = rounds
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.row_norm = row_norm
        self.scale = scale
        self.bounds = bounds
        self.algorithm_params = algorithm_params
        self.secure = secure
        self.random_state = random_state


class DistributedLogisticRegression(ClassifierMixin, DistributedLinearModel):
    __doc__ = ("Logistic regression fitted by a (private) distributed algorithm over agents holding rows; three or "
               "more classes: one-vs-rest on shares of the total budget (:mod:`privdist.learn.multiclass`)."
               + _DOC_PARAMS)
    __init__ = _Defaults.__init__
    _loss = "logistic"
    _regularizer = "l2"

    def __sklearn_tags__(self):
        tags = binary_classifier_tags(super().__sklearn_tags__())
        tags.classifier_tags.multi_class = True  # one-vs-rest (privdist.learn.multiclass)
        return tags

    def fit(self, X, y, groups=None):
        """Fit on rows ``X``, labels ``y`` and ``groups`` (the agent holding each row, optional). Three or more
        classes: one-vs-rest, each class's binary model on an equal share of the total budget
        (:mod:`privdist.learn.multiclass`)."""
        from .multiclass import fit_one_vs_rest, is_multiclass

        X, y = self._validate_xy(X, y, y_numeric=False)
        for name in ("estimators_",):  # a refit replaces a former one-vs-rest fit
            self.__dict__.pop(name, None)
        if is_multiclass(y):
            return fit_one_vs_rest(self, X, y, groups)
        y_pm = binary_labels(self, y)
        self._fit(X, y_pm, groups)
        if self.epsilon is not None:
            warn_if_majority(self, X, y_pm, ": the noise dominates; more rows per agent, fewer rounds or a larger "
                             "budget would help")
        return self

    def _multiclass(self) -> bool:
        return getattr(self, "coef_", None) is not None and np.ndim(self.coef_) == 2

    def decision_function(self, X):
        """Scores: shape (n,) for two classes (positive = ``classes_[1]``), (n, C) for C >= 3 (one-vs-rest)."""
        if self._multiclass():
            from .multiclass import ovr_scores

            return ovr_scores(self, X)
        return self._decision(X)

    def predict_proba(self, X):
        from scipy.special import expit

        if self._multiclass():
            from .multiclass import ovr_proba

            return ovr_proba(self.decision_function(X))
        p = expit(self._decision(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        if self._multiclass():
            return self.classes_[np.argmax(self.decision_function(X), axis=1)]
        score = self._decision(X)
        return self.classes_[(score > 0).astype(int)]


def _regressor_init(self, algorithm="dpsgd", epsilon=1.0, delta=1e-5, n_agents=10, network="complete", rounds=100,
                    alpha=1e-4, fit_intercept=True, row_norm=1.0, scale="none", bounds=None, algorithm_params=None,
                    secure=True, random_state=None, target_bounds=None):
    _Defaults.__init__(self, algorithm, epsilon, delta, n_agents, network, rounds, alpha, fit_intercept, row_norm,
                       scale, bounds, algorithm_params, secure, random_state)
    self.target_bounds = target_bounds


def _target_map(target_bounds) -> tuple[float, float]:
    """``(center, half_width)`` of PUBLIC target bounds ``(low, high)``: ``y -> (y - center) / half_width``."""
    try:
        lo, hi = (float(v) for v in target_bounds)
    except (TypeError, ValueError):
        raise ValidationError(f"target_bounds must be two numbers (low, high), got {target_bounds!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValidationError(f"target_bounds must be finite with low < high, got ({lo}, {hi})")
    return (lo + hi) / 2, (hi - lo) / 2


class _DistributedRegressor(RegressorMixin, DistributedLinearModel):
    _loss = "squared"
    __init__ = _regressor_init

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = True
        return tags

    def fit(self, X, y, groups=None):
        """Fit on rows ``X``, responses ``y`` and ``groups`` (the agent holding each row, optional)."""
        X, y = self._validate_xy(X, y, y_numeric=True)
        y = np.asarray(y, dtype=float)
        if self.target_bounds is None:
            self._fit(X, y, groups)
        else:  # fit on the target mapped into [-1, 1] by PUBLIC bounds, then map the (released) model back
            center, half = _target_map(self.target_bounds)
            self._fit(X, np.clip((y - center) / half, -1.0, 1.0), groups)
            self.coef_, self.intercept_ = self.coef_ * half, float(self.intercept_ * half + center)
            self.agent_coefs_, self.agent_intercepts_ = self.agent_coefs_ * half, self.agent_intercepts_ * half + center
            self.privacy_report_["preprocessing"] = list(self.privacy_report_["preprocessing"]) + [
                {"step": "scale_target_by_public_bounds", "private": True, "bounds": [center - half, center + half],
                 "note": "target mapped into [-1, 1] by bounds stated as public (values outside clipped); the model "
                         "is mapped back (post-processing of the release)"}]
        if self.epsilon is not None:
            mse = float(np.mean((self.predict(X) - y) ** 2))
            var = float(np.var(y))
            self.train_score_ = {"mse": mse, "mean_predictor_mse": var}
            if mse >= var:
                warnings.warn(f"the private model's training MSE {mse:.4g} is no better than predicting the mean "
                              f"({var:.4g}): at epsilon={self.epsilon} the noise dominates", UtilityWarning,
                              stacklevel=2)
        return self

    def predict(self, X):
        """The linear score; with PUBLIC ``target_bounds``, clipped to them (post-processing: a bounded target is
        never predicted outside its stated range)."""
        score = self._decision(X)
        if getattr(self, "target_bounds", None) is not None:
            center, half = _target_map(self.target_bounds)
            score = np.clip(score, center - half, center + half)
        return score


_DOC_TARGET = """        target_bounds: PUBLIC ``(low, high)`` of the target: it is mapped into [-1, 1] (values outside clipped)
            for training, the model mapped back, and ``predict`` clips to the bounds; ``None`` (default): the target
            as given (a large target then needs many clipped steps).
"""


class DistributedRidge(_DistributedRegressor):
    __doc__ = ("Ridge regression (squared loss + alpha ||w||^2) fitted by a (private) distributed algorithm."
               + _DOC_PARAMS.replace("\n    Attributes:", _DOC_TARGET + "\n    Attributes:"))
    _regularizer = "l2"


class DistributedLasso(_DistributedRegressor):
    __doc__ = ("Lasso (squared loss + alpha ||w||_1) fitted by a (private) distributed algorithm."
               + _DOC_PARAMS.replace("\n    Attributes:", _DOC_TARGET + "\n    Attributes:"))
    _regularizer = "l1"

