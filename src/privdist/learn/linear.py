"""Horizontal estimators: each agent holds some rows; a private distributed algorithm fits one linear model."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from .._checks import shown
from ._base import DistributedLinearModel, UtilityWarning, binary_classifier_tags, binary_labels, warn_if_majority

__all__ = ["DistributedLogisticRegression", "DistributedRidge", "DistributedLasso"]


class DistributedLogisticRegression(ClassifierMixin, DistributedLinearModel):
    """Logistic regression fitted by a (private) distributed algorithm over agents holding rows; three or
    more classes: one-vs-rest on shares of the total budget (:mod:`privdist.learn.multiclass`).

    Args:
        algorithm: A privdist algorithm for horizontal data: ``"dpmm"`` (default: federated majorize-minimize
            with one noisy Gram release and noisy clipped gradient sums, rows weighted by 1/n, a complete network;
            :mod:`privdist.algorithms.dpmm`), ``"ssp"`` (one-shot sufficient statistics: AdaSSP ridge, PASS logistic;
            :mod:`privdist.algorithms.ssp`), ``"dpsgd"`` (per-sample gradients clipped), ``"dpadmm"``,
            ``"pvp"``, ``"dvp"``, ``"laadmm"``, or ``"consensus_admm"`` (no noise). Every one enforces its
            guarantee's assumptions (clipping) except where its report says otherwise.
        epsilon: TOTAL epsilon per agent for the whole run, the DP range step included (``None``: no noise, a
            non-private baseline).
        delta: TOTAL delta per agent for the whole run.
        n_agents: Number of agents when ``fit`` gets no ``groups`` (rows are then split at random, equally).
        network: ``"complete"``, ``"ring"``, ``"star"``, ... (:func:`privdist.network.make_network` kinds) or a
            ``Network``.
        rounds: Communication rounds (the budget covers all of them); ``None``: the algorithm's default (dpmm: 20
            for classification with noise, 100 without, 2 for regression; the others 100).
        alpha: Regularisation weight of the whole network objective.
        fit_intercept: Fit an intercept (a constant feature 1 appended after row clipping).
        row_norm: Public bound: every row is clipped to this Euclidean norm before training.
        scale: ``"dp"`` (default): every column without public ``bounds`` is mapped into [-1, 1] by bounds from a
            differentially private range step (noisy histograms on a public grid, 1%/99% quantiles;
            :mod:`privdist.privacy.dp_ranges`) that spends ``range_share`` of each agent's total budget (the
            printed guarantee is the composition, equal to the request for Gaussian algorithms); no such column:
            no step, nothing spent. ``"bounds"`` (public ``bounds``; unnamed columns assumed in [-1, 1]),
            ``"none"`` (features as given, only row clipping) or ``"data"`` (min/max of the training data; NOT
            private; recorded in ``privacy_report_["preprocessing"]`` and warned about).
        bounds: Public per-column bounds ((2, d) array, a pair, or ``{column: (lo, hi)}``): all columns for
            ``scale="bounds"``; with ``scale="dp"`` the columns they name (or non-NaN columns of a (2, d) array)
            spend no budget.
        range_share: Share of each agent's total budget spent by the DP range step (``scale="dp"``), in (0, 1);
            a step that would be swamped at it takes the smallest larger share of 0.2 .. 0.5 that is not (a
            regressor's target weighted by 2 there, else its target alone;
            :func:`privdist.privacy.range_plan.plan_range`, public; recorded).
        algorithm_params: Overrides of the algorithm's hyperparameters (e.g. ``{"alpha0": 32}``); never the
            budget or the trust model (``epsilon``, ``delta``, ``rounds``, ``trust``, the secure-aggregation
            parameters: a ``ValidationError``), which the fit's privacy plan decides from the parameters above.
        secure: Draw the noise from fresh OS entropy (never recorded). Default True: what a release needs.
        random_state: Research reproducibility: seeds the partition and the noise; switches ``secure`` off and
            warns (a seeded model is not for release).
        trust: Whom the parties trust (:mod:`privdist.learn.trust`), one of

            * ``"auto"`` (default): ``"secure_aggregation"`` when ``algorithm`` is ``"dpmm"`` or ``"ssp"`` and
              ``epsilon`` is set, ``"local"`` otherwise;
            * ``"local"``: no one is trusted; every agent's release carries all the noise its own sensitivity
              needs, so a sum of ``K`` agents' releases carries ``sqrt(K)`` times a central curator's noise;
            * ``"secure_aggregation"`` (``algorithm="dpmm"`` or ``"ssp"``; another algorithm is a
              ``ValidationError``): the agents' gradient and Gram sums, and the DP range step's histograms, go
              through secure aggregation with distributed Skellam noise, so the coordinator sees only sums carrying
              noise of a central curator's scale, calibrated (RDP) on the whole budget. Assumes an honest-but-curious
              aggregator and at most ``colluding`` agents colluding with it (``secure_aggregation``, default 0;
              stated in ``privacy_report_["trust"]``). Without noise (``epsilon=None``) the sums are gathered in
              the clear.
        secure_aggregation: The public parameters of secure aggregation
            (:class:`~privdist.privacy.secure_params.SecureAggregation` or a dict of its fields): ``colluding``
            (agents assumed to collude with the aggregator), ``dropout_tolerance`` (fraction of agents whose noise
            shares a sum may lose and still meet the budget), ``bits``, ``recovery`` (``"retry"`` or
            ``"shamir"``) and ``threshold``; None: the defaults (no colluder, no dropout). Only with secure
            aggregation (a ``ValidationError`` under local trust).
        classes: PUBLIC class labels, ``(negative, positive)`` or ``(c0, c1, c2, ...)`` (one-vs-rest), compared
            with ``y`` as text; a label outside them is a ``ValidationError``. None: read from ``y``, which makes
            the report ``guaranteed: false`` unless the labels are 0/1, -1/+1, False/True or 0..C-1 (the model
            file names its classes; :mod:`privdist.learn.labels`).

    Attributes:
        coef_, intercept_: The model (average of the agents' released models); shape (C, d) and (C,) for C >= 3
            classes.
        agent_coefs_, agent_intercepts_: Each agent's released model, shape (K, d) and (K,) ((K, C, d) and (K, C)
            for C >= 3 classes).
        privacy_report_: Requested budget, the guarantee per agent (PLD with an RDP cross-check; under secure
            aggregation the Skellam RDP bound, which ``guarantee_accountant`` names), the paper's claim, the
            calibration, assumptions enforced, preprocessing steps (and whether they are private), noise mode,
            the trust model (``"trust"``) and what was promised (``"promised"``: the privacy plan).
        privacy_plan_: The fit's :class:`~privdist.privacy.plan.PrivacyPlan`: every privacy decision, taken once
            from the parameters and public facts before any row was read (JSON: ``privacy_plan_.to_json()``).
        ledger_: The job's ledger (the range step's releases, then every training round), what the report composes.
        history_: ``{"objective": training objective per round, ...}``.
        n_agents_: Number of agents of the fit.
        preprocessor_: The fitted column maps and row clipping (:class:`privdist.data.bounds.Preprocessor`).
        classes_: The class labels (``classes_[1]`` is the positive class of a binary fit).
        estimators_: Three or more classes: the binary one-vs-rest models, one per class of ``classes_``.
    """

    _loss = "logistic"
    _regularizer = "l2"

    def __init__(self, algorithm="dpmm", epsilon=1.0, delta=1e-5, n_agents=10, network="complete", rounds=None,
                 alpha=1e-4, fit_intercept=True, row_norm=1.0, scale="dp", bounds=None, range_share=0.1,
                 algorithm_params=None, secure=True, random_state=None, trust="auto",
                 secure_aggregation=None, classes=None):
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
        self.range_share = range_share
        self.algorithm_params = algorithm_params
        self.secure = secure
        self.random_state = random_state
        self.trust = trust
        self.secure_aggregation = secure_aggregation
        self.classes = classes

    def __sklearn_tags__(self):
        tags = binary_classifier_tags(super().__sklearn_tags__())
        tags.classifier_tags.multi_class = True  # one-vs-rest (privdist.learn.multiclass)
        return tags

    def fit(self, X, y, groups=None):
        """Fit on rows ``X``, labels ``y`` and ``groups`` (the agent holding each row, optional). Three or more
        classes: one-vs-rest, each class's binary model on an equal share of the total budget
        (:mod:`privdist.learn.multiclass`)."""
        from .labels import class_labels, record_classes
        from .multiclass import fit_one_vs_rest, is_multiclass

        X_in = X  # scored as given: a DataFrame keeps its column names (no scikit-learn feature-name warning)
        X, y = self._validate_xy(X, y, y_numeric=False)
        y, stated, step = class_labels(self.classes, y)  # names read off y are not private (issue 39)
        for name in ("estimators_",):  # a refit replaces a former one-vs-rest fit
            self.__dict__.pop(name, None)
        if is_multiclass(y) if stated is None else len(stated) > 2:
            return record_classes(fit_one_vs_rest(self, X, y, groups, X_score=X_in, classes=stated), step)
        y_pm = binary_labels(self, y, stated)
        self._fit(X, y_pm, groups)
        record_classes(self, step)
        if self.privacy_plan_.private:
            warn_if_majority(self, X_in, y_pm, ": the noise dominates; more rows per agent, fewer rounds or a larger "
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

    def personalize(self, X, y, random_state=None):
        """This party's personal model: the released model regularised towards on its own rows ``X, y``
        (:func:`privdist.learn.personal.personalize`; owner-only, spends no privacy, not a release)."""
        from .personal import personalize

        return personalize(self, X, y, random_state=random_state)

    def predict(self, X):
        if self._multiclass():
            return self.classes_[np.argmax(self.decision_function(X), axis=1)]
        score = self._decision(X)
        return self.classes_[(score > 0).astype(int)]


class _DistributedRegressor(RegressorMixin, DistributedLinearModel):
    _loss = "squared"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = True
        return tags

    def fit(self, X, y, groups=None):
        """Fit on rows ``X``, responses ``y`` and ``groups`` (the agent holding each row, optional)."""
        _check_numeric_target(y)
        X_in = X  # scored as given (column names kept)
        X, y = self._validate_xy(X, y, y_numeric=True)
        y = np.asarray(y, dtype=float)
        self._fit(X, y, groups)
        if self.privacy_plan_.private:
            mse = float(np.mean((self.predict(X_in) - y) ** 2))
            var = float(np.var(y))
            self.train_score_ = {"mse": mse, "mean_predictor_mse": var}
            if mse >= var:
                warnings.warn(f"the private model's training MSE {mse:.4g} is no better than predicting the mean "
                              f"({var:.4g}): at epsilon={self.epsilon} the noise dominates", UtilityWarning,
                              stacklevel=2)
        return self

    def predict(self, X):
        """The linear score, clipped to the target's bounds when it was scaled (``target_bounds_``, public or from
        the DP range step): post-processing, a bounded target is never predicted outside its range."""
        score = self._decision(X)
        bounds = getattr(self, "target_bounds_", None)
        return score if bounds is None else np.clip(score, *bounds)


def _check_numeric_target(y) -> None:
    """A regressor's target must be numbers (scikit-learn's own check would say only "could not convert string to
    float"); NaN and infinity are left to its finiteness check, which names them."""
    from ..errors import NonNumericDataError

    values = np.asarray(y)
    if values.dtype.kind in "biuf":
        return
    try:
        values.astype(float)
    except (TypeError, ValueError):
        bad = next((v for v in values.ravel() if not _is_number(v)), None)
        raise NonNumericDataError(f"y must be numeric for a regressor, got a value {shown(bad)}; class labels are fitted "
                                  "by DistributedLogisticRegression") from None


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


class DistributedRidge(_DistributedRegressor):
    """Ridge regression (squared loss + alpha ||w||^2) fitted by a (private) distributed algorithm.

    Args:
        algorithm: A privdist algorithm for horizontal data: ``"dpmm"`` (default: federated majorize-minimize
            with one noisy Gram release and noisy clipped gradient sums, rows weighted by 1/n, a complete network;
            :mod:`privdist.algorithms.dpmm`), ``"ssp"`` (one-shot sufficient statistics: AdaSSP ridge, PASS logistic;
            :mod:`privdist.algorithms.ssp`), ``"dpsgd"`` (per-sample gradients clipped), ``"dpadmm"``,
            ``"pvp"``, ``"dvp"``, ``"laadmm"``, or ``"consensus_admm"`` (no noise). Every one enforces its
            guarantee's assumptions (clipping) except where its report says otherwise.
        epsilon: TOTAL epsilon per agent for the whole run, the DP range step included (``None``: no noise, a
            non-private baseline).
        delta: TOTAL delta per agent for the whole run.
        n_agents: Number of agents when ``fit`` gets no ``groups`` (rows are then split at random, equally).
        network: ``"complete"``, ``"ring"``, ``"star"``, ... (:func:`privdist.network.make_network` kinds) or a
            ``Network``.
        rounds: Communication rounds (the budget covers all of them); ``None``: the algorithm's default (dpmm: 20
            for classification with noise, 100 without, 2 for regression; the others 100).
        alpha: Regularisation weight of the whole network objective.
        fit_intercept: Fit an intercept (a constant feature 1 appended after row clipping).
        row_norm: Public bound: every row is clipped to this Euclidean norm before training.
        scale: ``"dp"`` (default): every column without public ``bounds`` is mapped into [-1, 1] by bounds from a
            differentially private range step (noisy histograms on a public grid, 1%/99% quantiles;
            :mod:`privdist.privacy.dp_ranges`) that spends ``range_share`` of each agent's total budget (the
            printed guarantee is the composition, equal to the request for Gaussian algorithms); no such column:
            no step, nothing spent. ``"bounds"`` (public ``bounds``; unnamed columns assumed in [-1, 1]),
            ``"none"`` (features as given, only row clipping) or ``"data"`` (min/max of the training data; NOT
            private; recorded in ``privacy_report_["preprocessing"]`` and warned about).
        bounds: Public per-column bounds ((2, d) array, a pair, or ``{column: (lo, hi)}``): all columns for
            ``scale="bounds"``; with ``scale="dp"`` the columns they name (or non-NaN columns of a (2, d) array)
            spend no budget.
        range_share: Share of each agent's total budget spent by the DP range step (``scale="dp"``), in (0, 1);
            a step that would be swamped at it takes the smallest larger share of 0.2 .. 0.5 that is not (a
            regressor's target weighted by 2 there, else its target alone;
            :func:`privdist.privacy.range_plan.plan_range`, public; recorded).
        target_bounds: Public ``(lo, hi)`` of the target: it is mapped into [-1, 1] (clipped) for training
            and the model mapped back, so ``predict``, ``coef_`` and ``intercept_`` are in the target's units. Without
            it, ``scale="dp"`` adds the target as one more column of the DP range step (``target_bounds_`` holds
            the bounds used; None: target unscaled, e.g. with ``scale="none"``).
        algorithm_params: Overrides of the algorithm's hyperparameters (e.g. ``{"alpha0": 32}``); never the
            budget or the trust model (``epsilon``, ``delta``, ``rounds``, ``trust``, the secure-aggregation
            parameters: a ``ValidationError``), which the fit's privacy plan decides from the parameters above.
        secure: Draw the noise from fresh OS entropy (never recorded). Default True: what a release needs.
        random_state: Research reproducibility: seeds the partition and the noise; switches ``secure`` off and
            warns (a seeded model is not for release).
        trust: Whom the parties trust (:mod:`privdist.learn.trust`), one of

            * ``"auto"`` (default): ``"secure_aggregation"`` when ``algorithm`` is ``"dpmm"`` or ``"ssp"`` and
              ``epsilon`` is set, ``"local"`` otherwise;
            * ``"local"``: no one is trusted; every agent's release carries all the noise its own sensitivity
              needs, so a sum of ``K`` agents' releases carries ``sqrt(K)`` times a central curator's noise;
            * ``"secure_aggregation"`` (``algorithm="dpmm"`` or ``"ssp"``; another algorithm is a
              ``ValidationError``): the agents' gradient and Gram sums, and the DP range step's histograms, go
              through secure aggregation with distributed Skellam noise, so the coordinator sees only sums carrying
              noise of a central curator's scale, calibrated (RDP) on the whole budget. Assumes an honest-but-curious
              aggregator and at most ``colluding`` agents colluding with it (``secure_aggregation``, default 0;
              stated in ``privacy_report_["trust"]``). Without noise (``epsilon=None``) the sums are gathered in
              the clear.
        secure_aggregation: The public parameters of secure aggregation
            (:class:`~privdist.privacy.secure_params.SecureAggregation` or a dict of its fields): ``colluding``
            (agents assumed to collude with the aggregator), ``dropout_tolerance`` (fraction of agents whose noise
            shares a sum may lose and still meet the budget), ``bits``, ``recovery`` (``"retry"`` or
            ``"shamir"``) and ``threshold``; None: the defaults (no colluder, no dropout). Only with secure
            aggregation (a ``ValidationError`` under local trust).

    Attributes:
        coef_, intercept_: The model (average of the agents' released models).
        agent_coefs_, agent_intercepts_: Each agent's released model, shape (K, d) and (K,).
        privacy_report_: Requested budget, the guarantee per agent (PLD with an RDP cross-check; under secure
            aggregation the Skellam RDP bound, which ``guarantee_accountant`` names), the paper's claim, the
            calibration, assumptions enforced, preprocessing steps (and whether they are private), noise mode,
            the trust model (``"trust"``) and what was promised (``"promised"``: the privacy plan).
        privacy_plan_: The fit's :class:`~privdist.privacy.plan.PrivacyPlan`: every privacy decision, taken once
            from the parameters and public facts before any row was read (JSON: ``privacy_plan_.to_json()``).
        ledger_: The job's ledger (the range step's releases, then every training round), what the report composes.
        history_: ``{"objective": training objective per round, ...}``.
        n_agents_: Number of agents of the fit.
        preprocessor_: The fitted column maps and row clipping (:class:`privdist.data.bounds.Preprocessor`).
        target_bounds_: The target's bounds used for scaling (public or from the DP range step; None: unscaled).
        train_score_: Private fits: ``{"mse": training MSE, "mean_predictor_mse": variance of y}`` (for the data
            holder; computed on private data, not a release).
    """

    _regularizer = "l2"

    def __init__(self, algorithm="dpmm", epsilon=1.0, delta=1e-5, n_agents=10, network="complete", rounds=None,
                 alpha=1e-4, fit_intercept=True, row_norm=1.0, scale="dp", bounds=None, range_share=0.1,
                 target_bounds=None, algorithm_params=None, secure=True, random_state=None, trust="auto",
                 secure_aggregation=None):
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
        self.range_share = range_share
        self.target_bounds = target_bounds
        self.algorithm_params = algorithm_params
        self.secure = secure
        self.random_state = random_state
        self.trust = trust
        self.secure_aggregation = secure_aggregation

    def personalize(self, X, y, random_state=None):
        """This party's personal model: the released model regularised towards on its own rows ``X, y``
        (:func:`privdist.learn.personal.personalize`; owner-only, spends no privacy, not a release)."""
        from .personal import personalize

        return personalize(self, X, y, random_state=random_state)


class DistributedLasso(_DistributedRegressor):
    """Lasso (squared loss + alpha ||w||_1) fitted by a (private) distributed algorithm.

    Args:
        algorithm: A privdist algorithm for horizontal data: ``"dpmm"`` (default: federated majorize-minimize
            with one noisy Gram release and noisy clipped gradient sums, rows weighted by 1/n, a complete network;
            :mod:`privdist.algorithms.dpmm`), ``"ssp"`` (one-shot sufficient statistics: AdaSSP ridge, PASS logistic;
            :mod:`privdist.algorithms.ssp`), ``"dpsgd"`` (per-sample gradients clipped), ``"dpadmm"``,
            ``"pvp"``, ``"dvp"``, ``"laadmm"``, or ``"consensus_admm"`` (no noise). Every one enforces its
            guarantee's assumptions (clipping) except where its report says otherwise.
        epsilon: TOTAL epsilon per agent for the whole run, the DP range step included (``None``: no noise, a
            non-private baseline).
        delta: TOTAL delta per agent for the whole run.
        n_agents: Number of agents when ``fit`` gets no ``groups`` (rows are then split at random, equally).
        network: ``"complete"``, ``"ring"``, ``"star"``, ... (:func:`privdist.network.make_network` kinds) or a
            ``Network``.
        rounds: Communication rounds (the budget covers all of them); ``None``: the algorithm's default (dpmm: 20
            for classification with noise, 100 without, 2 for regression; the others 100).
        alpha: Regularisation weight of the whole network objective.
        fit_intercept: Fit an intercept (a constant feature 1 appended after row clipping).
        row_norm: Public bound: every row is clipped to this Euclidean norm before training.
        scale: ``"dp"`` (default): every column without public ``bounds`` is mapped into [-1, 1] by bounds from a
            differentially private range step (noisy histograms on a public grid, 1%/99% quantiles;
            :mod:`privdist.privacy.dp_ranges`) that spends ``range_share`` of each agent's total budget (the
            printed guarantee is the composition, equal to the request for Gaussian algorithms); no such column:
            no step, nothing spent. ``"bounds"`` (public ``bounds``; unnamed columns assumed in [-1, 1]),
            ``"none"`` (features as given, only row clipping) or ``"data"`` (min/max of the training data; NOT
            private; recorded in ``privacy_report_["preprocessing"]`` and warned about).
        bounds: Public per-column bounds ((2, d) array, a pair, or ``{column: (lo, hi)}``): all columns for
            ``scale="bounds"``; with ``scale="dp"`` the columns they name (or non-NaN columns of a (2, d) array)
            spend no budget.
        range_share: Share of each agent's total budget spent by the DP range step (``scale="dp"``), in (0, 1);
            a step that would be swamped at it takes the smallest larger share of 0.2 .. 0.5 that is not (a
            regressor's target weighted by 2 there, else its target alone;
            :func:`privdist.privacy.range_plan.plan_range`, public; recorded).
        target_bounds: Public ``(lo, hi)`` of the target: it is mapped into [-1, 1] (clipped) for training
            and the model mapped back, so ``predict``, ``coef_`` and ``intercept_`` are in the target's units. Without
            it, ``scale="dp"`` adds the target as one more column of the DP range step (``target_bounds_`` holds
            the bounds used; None: target unscaled, e.g. with ``scale="none"``).
        algorithm_params: Overrides of the algorithm's hyperparameters (e.g. ``{"alpha0": 32}``); never the
            budget or the trust model (``epsilon``, ``delta``, ``rounds``, ``trust``, the secure-aggregation
            parameters: a ``ValidationError``), which the fit's privacy plan decides from the parameters above.
        secure: Draw the noise from fresh OS entropy (never recorded). Default True: what a release needs.
        random_state: Research reproducibility: seeds the partition and the noise; switches ``secure`` off and
            warns (a seeded model is not for release).
        trust: Whom the parties trust (:mod:`privdist.learn.trust`), one of

            * ``"auto"`` (default): ``"secure_aggregation"`` when ``algorithm`` is ``"dpmm"`` or ``"ssp"`` and
              ``epsilon`` is set, ``"local"`` otherwise;
            * ``"local"``: no one is trusted; every agent's release carries all the noise its own sensitivity
              needs, so a sum of ``K`` agents' releases carries ``sqrt(K)`` times a central curator's noise;
            * ``"secure_aggregation"`` (``algorithm="dpmm"`` or ``"ssp"``; another algorithm is a
              ``ValidationError``): the agents' gradient and Gram sums, and the DP range step's histograms, go
              through secure aggregation with distributed Skellam noise, so the coordinator sees only sums carrying
              noise of a central curator's scale, calibrated (RDP) on the whole budget. Assumes an honest-but-curious
              aggregator and at most ``colluding`` agents colluding with it (``secure_aggregation``, default 0;
              stated in ``privacy_report_["trust"]``). Without noise (``epsilon=None``) the sums are gathered in
              the clear.
        secure_aggregation: The public parameters of secure aggregation
            (:class:`~privdist.privacy.secure_params.SecureAggregation` or a dict of its fields): ``colluding``
            (agents assumed to collude with the aggregator), ``dropout_tolerance`` (fraction of agents whose noise
            shares a sum may lose and still meet the budget), ``bits``, ``recovery`` (``"retry"`` or
            ``"shamir"``) and ``threshold``; None: the defaults (no colluder, no dropout). Only with secure
            aggregation (a ``ValidationError`` under local trust).

    Attributes:
        coef_, intercept_: The model (average of the agents' released models).
        agent_coefs_, agent_intercepts_: Each agent's released model, shape (K, d) and (K,).
        privacy_report_: Requested budget, the guarantee per agent (PLD with an RDP cross-check; under secure
            aggregation the Skellam RDP bound, which ``guarantee_accountant`` names), the paper's claim, the
            calibration, assumptions enforced, preprocessing steps (and whether they are private), noise mode,
            the trust model (``"trust"``) and what was promised (``"promised"``: the privacy plan).
        privacy_plan_: The fit's :class:`~privdist.privacy.plan.PrivacyPlan`: every privacy decision, taken once
            from the parameters and public facts before any row was read (JSON: ``privacy_plan_.to_json()``).
        ledger_: The job's ledger (the range step's releases, then every training round), what the report composes.
        history_: ``{"objective": training objective per round, ...}``.
        n_agents_: Number of agents of the fit.
        preprocessor_: The fitted column maps and row clipping (:class:`privdist.data.bounds.Preprocessor`).
        target_bounds_: The target's bounds used for scaling (public or from the DP range step; None: unscaled).
        train_score_: Private fits: ``{"mse": training MSE, "mean_predictor_mse": variance of y}`` (for the data
            holder; computed on private data, not a release).
    """

    _regularizer = "l1"

    def __init__(self, algorithm="dpmm", epsilon=1.0, delta=1e-5, n_agents=10, network="complete", rounds=None,
                 alpha=1e-4, fit_intercept=True, row_norm=1.0, scale="dp", bounds=None, range_share=0.1,
                 target_bounds=None, algorithm_params=None, secure=True, random_state=None, trust="auto",
                 secure_aggregation=None):
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
        self.range_share = range_share
        self.target_bounds = target_bounds
        self.algorithm_params = algorithm_params
        self.secure = secure
        self.random_state = random_state
        self.trust = trust
        self.secure_aggregation = secure_aggregation

