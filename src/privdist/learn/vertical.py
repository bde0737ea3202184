"""Vertical (feature-partitioned) logistic regression on DP ADMM sharing (S2; spec §3.4-§3.7; issue 16).

Every party holds some COLUMNS of the same rows; the labels are held by the coordinator, as in S2
(:mod:`privdist.algorithms.sharing`). Each round party ``m`` sends only its share ``Q_m = D_m x_m + noise`` (an
N-vector); its coefficient block ``x_m`` never leaves it.

**The only guaranteed mode.** ``epsilon`` set: ADMM sharing in its clipped ``output`` mode with the public numeric
``b1``: the party step clips ``||y|| <= b1`` and ``||v_m|| <= M b1``, so ``||Q_m(D) - Q_m(D')|| <= C =
(1 + M rho) b1 / rho`` for ANY two blocks of party ``m`` (column-level neighbours, S2 Def. 2, and stronger), and
Gaussian noise ``sigma = z C`` with ``z`` the smallest noise multiplier whose ``rounds``-fold composition is
``(epsilon, delta)`` under the PLD accountant (:func:`privdist.learn.budget.total_budget_params`), so the printed
guarantee per party equals the requested TOTAL budget. ``epsilon=None``: no noise, no clipping (reported inf).

**What it does not cover** (reported in ``privacy_report_``): the labels leave the coordinator (every party reads
them off ``sign(y)`` in every round, S2 Lemma 2; a named exposure, no DP event); the fitted blocks ``x_m`` are
computed by each party from its own columns and the (private) transcript, so ``coef_`` gathered in this process is
for the data holder(s), not a release; predicting a new row needs each party's ``D_m^new x_m``, again not covered.

**Defaults** (public constants, nothing read from the data): ``rho = 1`` and ``b1 = 1`` (with the sum loss,
``|y_i| <= 1``); ``rounds = 50``; ``alpha = 1e-3`` (lambda of S2's experiments). Chosen on a validation split of
the Adult TRAINING file (24,000 / 6,162 rows, 3 parties with an even column split, total epsilon 1): validation
accuracy was the same to 3 decimals for ``b1`` in {1, 10, 100} (clipping is active every round and the noise scales
with ``b1``), within 0.007 for ``rho`` in {0.3, 1, 3} and lower at ``rho = 10``; private accuracy did not depend on
``rounds`` in {10, 20, 50}, and the non-private model needs about 12 rounds, hence 50.

**The model of a private fit** (issue 39) is each party's mean of its iterates over the rounds
(:class:`~privdist.algorithms.sharing.ADMMSharing` ``average=True``: post-processing, no release), not the last
iterate: at a total epsilon near 1 every share's noise is far larger than the share, and the mean averages the
fresh noise of each round out (validation split above, seeds 0-2: 0.8307, 0.8326, 0.8321 against 0.8275, 0.8260,
0.8266). A non-private fit keeps its last iterate (it converges).

**The pool** (``protocol="pool"``, issue 39; :mod:`privdist.learn.vertical_pool`): each party fits its own block on
its columns and the labels and the coordinator pools the parties' log-odds with the public weight ``1/sqrt(M)``;
nothing computed from a party's columns leaves it while training, so the ledger holds only the range step's
releases. Why: ADMM sharing's private model stays below the best party alone (above), and under S2's neighbours no
noisy share can carry what a combination needs (the module docstring of the pool has the measurements).

**The default protocol** (``protocol="auto"``, :func:`resolve_protocol`; issue 39, picked by the measurement of
``docs/own-data.md``: Adult, 3 parties, pool 0.844 / 0.845 / 0.841 on three test splits against 0.839 / 0.836 /
0.834 for the best party alone and 0.836 for ADMM sharing): the pool for a private fit under local trust; ADMM
sharing where there is a sum to aggregate (``trust="secure_aggregation"`` or secure-aggregation parameters) and
without noise (``epsilon=None``: the joint model, which reaches the centralised one).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..errors import ValidationError
from .._checks import shown
from .plan import PROTOCOLS, resolve_protocol
from .trust import trust_report
from ._base import (_validate_data, binary_classifier_tags, binary_labels, check_budget_and_counts, check_finite_fit,
                    check_number, noise_seed, summarise_privacy, warn_if_majority)

__all__ = ["SharedFeatureLogisticRegression", "VERTICAL_SCOPE", "vertical_report", "PROTOCOLS", "resolve_protocol"]


#: What the guarantee of a vertical fit does not cover (beside the label exposure the algorithm names).
VERTICAL_SCOPE = ("shared_feature: the DP guarantee covers each party's shares Q_m (what the coordinator and the "
                  "other parties see) under column-level neighbours (any two blocks of that party's columns); each "
                  "party's coefficient block x_m is computed from its own columns and stays with it (a model file "
                  "holds no block: privdist.learn.save_model writes block m to parties/party_<m>.json, owner-only "
                  "for party m); coef_ gathered in one process is for the data holder(s), and scoring a new row "
                  "needs each party's D_m x_m (further releases, not covered)")

#: Added to the scope when a DP range step ran (its neighbours are row-level, see fit_ranges_vertical).
RANGE_SCOPE = ("; the DP range step (scale='dp') is DP for row-level neighbours (one row's values in a party's "
               "columns), so the composed guarantee is for row-level neighbours")


class SharedFeatureLogisticRegression(ClassifierMixin, BaseEstimator):
    """Binary logistic regression over parties holding COLUMN groups, fitted by DP ADMM sharing (S2).

    Args:
        epsilon: TOTAL epsilon per party for the whole run (``None``: no noise, a non-private baseline).
        delta: TOTAL delta per party.
        n_parties: Number of parties when ``feature_groups`` is None (columns split evenly, contiguously).
        feature_groups: Which party holds which column: None, one party index per column (``[0, 0, 1, 2, ...]``),
            or one list of columns per party (indices, or names of ``X``'s columns; a name ``"a"`` also takes the
            one-hot columns ``"a=..."``). Every column in exactly one group.
        rounds: ADMM rounds (each costs one release per party; the budget covers all of them).
        rho: ADMM penalty (> 0).
        b1: PUBLIC clipping bound (> 0, a number stated before seeing the data): ``||y|| <= b1``,
            ``||v_m|| <= M b1`` in the party step; the noise scales with it.
        alpha: ``lambda`` of ``sum_i log(1 + exp(-y_i h_i)) + lambda ||beta||^2`` (S2 objective, sum loss).
        fit_intercept: Give party 0 a constant column whose coefficient is the intercept; it is penalised by
            ``alpha`` like every other coefficient (as in the S2 authors' code).
        scale: ``"dp"`` (default): each party maps its columns without public ``bounds`` into [-1, 1] by bounds
            from a DP range step on its own columns (all rows) that spends ``range_share`` of its total budget
            (:func:`privdist.learn.ranges.fit_ranges_vertical`; the composition is the request, for row-level
            neighbours); ``"bounds"`` (public ``bounds``), ``"none"`` or ``"data"`` (min/max of the training data;
            NOT private; recorded and warned). Per-column maps: each is done by the column's own party.
        bounds: Public per-column bounds (see :func:`privdist.data.bounds.bounds_array`; with ``scale="dp"`` the
            columns they name spend no budget).
        range_share: Share of each party's total budget spent by the DP range step, in (0, 1).
        secure: Draw the noise from fresh OS entropy (never recorded). Default True.
        random_state: Research reproducibility: seeds the noise; switches ``secure`` off and warns.
        trust: Whom the parties trust (:mod:`privdist.learn.trust`), one of

            * ``"auto"`` (default): ``"local"`` (measured as good here as secure aggregation with 3 parties, see
              :func:`privdist.privacy.plan.resolve_trust`);
            * ``"local"``: no one is trusted; every party's share ``Q_m`` carries all the noise its own sensitivity
              needs;
            * ``"secure_aggregation"``: the coordinator's sum of the shares goes through secure aggregation with
              distributed Skellam noise (:mod:`privdist.algorithms.sharing`), so the noise is central rather than
              one per party, but a party's own noise-free share is then hidden state and the sensitivity doubles;
              calibrated (RDP) on the whole budget composed with the DP range step's (local, Gaussian) releases.
              Assumes an honest-but-curious aggregator and at most ``colluding`` parties colluding with it
              (``secure_aggregation``, default 0; stated in ``privacy_report_["trust"]``). Without noise
              (``epsilon=None``) the shares are gathered in the clear.
        secure_aggregation: The public parameters of secure aggregation
            (:class:`~privdist.privacy.secure_params.SecureAggregation` or a dict of its fields: ``colluding``,
            ``dropout_tolerance``, ``bits``, ``recovery``, ``threshold``); None: the defaults. Only with
            ``trust="secure_aggregation"``.
        protocol: ``"auto"`` (default; :func:`resolve_protocol`: the pool for a private fit under local trust,
            ADMM sharing with secure aggregation or without noise), ``"admm_sharing"`` (S2: the parties exchange
            noisy shares every round) or ``"pool"`` (:mod:`privdist.learn.vertical_pool`: each party fits its own
            block on its columns and the labels, the coordinator pools their log-odds with the public weight
            ``1/sqrt(M)``; nothing computed from a party's columns leaves it while training, so no DP event beyond
            the range step; with the pool, ``rounds``, ``rho`` and ``b1`` are unused and ``trust`` must be
            ``"auto"`` or ``"local"``: there is no sum to aggregate). Issue 39: on Adult with 3 parties the pool is
            above the best party alone, ADMM sharing below it.

    Attributes:
        coef_, intercept_: The model on ``X``'s columns (concatenation of the parties' blocks).
        coef_blocks_: Party ``m``'s coefficients on its own columns ``feature_groups_[m]``.
        protocol_: the protocol run (``"auto"`` resolved).
        intercept_blocks_: the pool only: party ``m``'s share of the intercept (their sum is
            ``intercept_``; ADMM sharing's intercept is party 0's bias coefficient).
        feature_groups_: Column indices of each party. n_parties_: their number.
        preprocessor_: The fitted per-column maps (:class:`privdist.data.bounds.Preprocessor`, rows not clipped).
        privacy_report_: Requested budget, guarantee per party (PLD with an RDP cross-check; the Skellam RDP
            bound with ``trust="secure_aggregation"``, named by ``guarantee_accountant``), the calibration, the
            assumptions enforced, ``exposures`` (the labels), ``scope``, preprocessing, noise mode, what was
            promised (``"promised"``: the privacy plan).
        privacy_plan_: The fit's :class:`~privdist.privacy.plan.PrivacyPlan` (every privacy decision, taken once
            before any row was read). ledger_: the job's ledger (range releases, then the shares), what the report
            composes and what several fits compose (``privdist fit`` draws).
        history_: ``{"objective": ADMM objective of the parties' models per round, ...}``.
        clipping_: the public clip bounds and, per party, how many rounds were clipped (owner-only: a noise-free
            function of the data, kept out of ``privacy_report_``).

    Raises:
        FeatureGroupError: groups that leave a column out, repeat it, or name one out of range.
        EmptyPartyError: a party with no columns (also ``n_parties`` above the number of columns).
        ValidationError: bad parameter values (``b1`` must be a positive number).
    """

    def __init__(self, epsilon=1.0, delta=1e-5, n_parties=3, feature_groups=None, rounds=50, rho=1.0, b1=1.0,
                 alpha=1e-3, fit_intercept=True, scale="dp", bounds=None, range_share=0.1, secure=True,
                 random_state=None, trust="auto", secure_aggregation=None, protocol="auto"):
        self.epsilon = epsilon
        self.delta = delta
        self.n_parties = n_parties
        self.feature_groups = feature_groups
        self.rounds = rounds
        self.rho = rho
        self.b1 = b1
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.scale = scale
        self.bounds = bounds
        self.range_share = range_share
        self.secure = secure
        self.random_state = random_state
        self.trust = trust
        self.secure_aggregation = secure_aggregation
        self.protocol = protocol

    def __sklearn_tags__(self):
        return binary_classifier_tags(super().__sklearn_tags__())

    def _check_params(self):
        from ..privacy.plan import resolve_trust

        check_budget_and_counts(self, ("rounds", "n_parties"))
        resolve_protocol(self.protocol, self.trust, self.secure_aggregation, self.epsilon)
        from ..privacy.plan import secure_section

        secure_section(resolve_trust("admm_sharing", self.trust, self.epsilon), self.secure_aggregation,
                       self.epsilon is not None)  # the plan's checks, up front
        from ..privacy.dp_ranges import check_share

        check_share(self.range_share)
        for name in ("rho", "b1"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0 < value < np.inf:
                raise ValidationError(f"{name} must be a finite number > 0 (b1 is a PUBLIC bound, never read off the "
                                      f"data), got {shown(value)}")
        check_number(self.alpha, "alpha")
        if type(self.fit_intercept) is not bool:
            raise ValidationError(f"fit_intercept must be a bool, got {shown(self.fit_intercept)}")

    def fit(self, X, y):
        """Fit on ``X`` (all parties' columns side by side, rows aligned) and binary labels ``y``."""
        from ..algorithms.sharing import ADMMSharing
        from ..data.bounds import Preprocessor
        from ..data.parties import feature_blocks
        from ..network import complete
        from ..privacy import PrivacyLedger
        from ..problems.vertical import VerticalProblem
        from ..runtime import run
        from .budget import total_budget_params
        from .plan import vertical_plan
        from .ranges import fit_ranges_vertical

        X_in = X  # scored as given (column names kept)
        self.__dict__.pop("intercept_blocks_", None)  # a pool's shares, not of a refit with another protocol
        X, y = _validate_data(self, X, y, accept_sparse="csr")
        y_pm = binary_labels(self, y)
        self._check_params()
        groups = feature_blocks(self.feature_groups, X.shape[1], self.n_parties,
                                getattr(self, "feature_names_in_", None))
        seed, secure = noise_seed(self.random_state, self.secure, stacklevel=3)
        # per-column maps only (each column's own party applies them); rows are not clipped (no party holds one)
        self.preprocessor_ = Preprocessor(scale=self.scale, bounds=self.bounds, row_norm=None)
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else [str(n) for n in names]
        cols = self.preprocessor_.dp_columns(X.shape[1], names)
        col_names = tuple(names[j] if names else f"x{j}" for j in cols)
        where = {int(j): i for i, j in enumerate(cols)}
        plan = vertical_plan(self, rows=X.shape[0], columns=X.shape[1], dp_columns=col_names,
                             party_columns=tuple(tuple(col_names[where[int(j)]] for j in g if int(j) in where)
                                                 for g in groups), seeded=not secure)
        ledger = PrivacyLedger(len(groups))
        fit_ranges_vertical(self.preprocessor_, X, groups, plan.range, seed=seed, secure=secure, ledger=ledger,
                            feature_names=names)
        Z = self.preprocessor_.transform(X)
        problem = VerticalProblem([Z[:, g] for g in groups], y_pm, float(self.alpha), "sum",
                                  bias=bool(self.fit_intercept))
        M = len(groups)
        self.protocol_ = plan.algorithm  # resolve_protocol's answer, the plan's
        if self.protocol_ == "pool":
            return self._fit_pool(X, X_in, y_pm, Z, groups, plan, ledger)
        training = plan.training[0]
        params = {**total_budget_params("admm_sharing", training.epsilon, training.delta, plan.rounds),
                  **plan.training_params(0)}
        if plan.private:
            params["b1"] = float(self.b1)
        algo = ADMMSharing(rho=float(self.rho), average=plan.private, **params)  # private: averaged iterates
        objective = problem.objective
        result = run(algo, problem, complete(M), plan.rounds, seed=seed % 2**63, secure=secure, ledger=ledger,
                     metrics={"objective": lambda est: objective(est.sum(axis=0))})
        check_finite_fit(self, result.estimates, result.curves["objective"],
                         f" (admm_sharing with rho={shown(self.rho)}, alpha={shown(self.alpha)}): change rho or alpha",
                         stacklevel=3)
        beta = np.asarray(result.estimates).sum(axis=0)
        offset = 1 if self.fit_intercept else 0
        coef = np.zeros(X.shape[1])
        coef[np.concatenate(groups)] = beta[offset:]
        self.coef_ = coef
        self.intercept_ = float(beta[0]) if self.fit_intercept else 0.0
        self.feature_groups_ = [np.asarray(g) for g in groups]
        self.coef_blocks_ = [coef[g].copy() for g in groups]
        self.n_parties_ = M
        self.history_ = {"objective": np.asarray(result.curves["objective"]), "rounds": plan.rounds,
                         "note": "ADMM objective of the parties' models, for the data holders only (computed on "
                                 "private data; not a release)"}
        states = result.final_state if isinstance(result.final_state, list) else [result.final_state]
        self.ledger_, self.privacy_plan_ = result.ledger, plan  # the job's ledger: range releases, then the shares
        info = algo.run_info(states)  # the counts of clipped rounds are a noise-free function of the data
        self.clipping_ = info
        self.privacy_report_ = vertical_report(self, plan, algo, result.ledger, result.config.get("noise"),
                                               {k: v for k, v in info.items() if k != "clipped_rounds_per_party"},
                                               stacklevel=4)
        if plan.private:
            warn_if_majority(self, X_in, y_pm, "")
        return self

    def _fit_pool(self, X, X_in, y_pm, Z, groups, plan, ledger):
        """``protocol="pool"`` (:mod:`privdist.learn.vertical_pool`): no training release; the ledger holds the
        range step's releases only."""
        from .vertical_pool import POOL_SCOPE, fit_local_pool

        blocks, shares, info = fit_local_pool([Z[:, g] for g in groups], y_pm, float(self.alpha),
                                              bool(self.fit_intercept))
        coef = np.zeros(X.shape[1])
        for g, b in zip(groups, blocks):
            coef[g] = b
        self.coef_, self.intercept_ = coef, float(sum(shares))  # gathered here for the data holders
        self.intercept_blocks_ = [float(b) for b in shares]  # party m's share (its block file holds it)
        self.feature_groups_ = [np.asarray(g) for g in groups]
        self.coef_blocks_ = [coef[g].copy() for g in groups]
        self.n_parties_ = len(groups)
        self.history_ = {"rounds": 0, "pool_weight": info["weight"],
                         "note": "pool: no rounds; each party's own fit, for the data holders only"}
        self.ledger_, self.privacy_plan_ = ledger, plan
        self.clipping_ = {}
        self.privacy_report_ = pool_report(self, plan, ledger, POOL_SCOPE, info["weight"], stacklevel=4)
        if plan.private:
            warn_if_majority(self, X_in, y_pm, "")
        return self

    def decision_function(self, X):
        check_is_fitted(self, "coef_")
        X = _validate_data(self, X, accept_sparse="csr", reset=False)
        Z = self.preprocessor_.transform(X)
        return np.asarray(Z @ self.coef_).ravel() + self.intercept_

    def predict_proba(self, X):
        from scipy.special import expit

        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        score = self.decision_function(X)  # checks fitted first
        return self.classes_[(score > 0).astype(int)]


def pool_report(est, plan, ledger, scope: str, weight: float, *, stacklevel: int = 3) -> dict:
    """The ``privacy_report_`` of a pooled fit: the guarantee composed from ``ledger`` (the range step's releases
    only: the pool's training records no event), the label exposure and the scope."""
    from ..privacy import privacy_report
    from .vertical_pool import POOL_LABEL_EXPOSURE

    report = privacy_report(ledger, float(est.delta))
    report["exposures"] = list(report.get("exposures", [])) + [POOL_LABEL_EXPOSURE]
    mech = {"kind": "none", "note": "pool: no training release (each party's block is fitted and kept by it)",
            "pool_weight": weight}
    ranged = plan.range is not None and plan.range.released
    noise = {"mode": ("none in training (pool); the DP range step's: " + ("seeded" if plan.seeded else "secure"))
             if ranged else "none (pool: no noisy release)"}
    rep = summarise_privacy(report, mech, est.preprocessor_.record, noise, epsilon=est.epsilon, delta=est.delta,
                            rounds=0, algorithm="pool (party-local experts, log-odds pool)" if plan.private
                            else "pool (no range noise)", stacklevel=stacklevel)
    rep["requested"]["scope"] = "total per party, whole run"
    rep["label_holder"] = "coordinator (labels given to every party, see exposures)"
    rep["scope"] = scope + (RANGE_SCOPE if ranged else "")
    rep["training_releases"] = "none (no DP event: nothing computed from a party's columns leaves it while training)"
    rep["clipping"] = {}
    rep["b1"] = None
    rep["promised"] = plan.promised()
    rep["trust"] = trust_report(plan, None)
    return rep


def vertical_report(est, plan, algo, ledger, noise, clipping: dict, *, stacklevel: int = 3) -> dict:
    """The ``privacy_report_`` of a vertical fit with ``plan`` trained by ``algo`` (the estimator's and a vertical
    job's, :mod:`privdist.learn.job_vertical`): the guarantee composed from ``ledger``, the label exposure, the
    scope, the public clip bounds (``clipping``: the counts of clipped rounds stay with the parties) and the plan.
    """
    from ..privacy import privacy_report

    report = privacy_report(ledger, float(est.delta))
    rep = summarise_privacy(report, algo.mechanism_info(), est.preprocessor_.record, noise,
                            epsilon=est.epsilon, delta=est.delta, rounds=plan.rounds,
                            algorithm="admm_sharing (clipped output)" if plan.private else "admm_sharing (no noise)",
                            stacklevel=stacklevel)
    rep["requested"]["scope"] = "total per party, whole run"
    rep["label_holder"] = "coordinator (labels exposed to every party, see exposures)"
    rep["scope"] = VERTICAL_SCOPE + (RANGE_SCOPE if plan.range is not None and plan.range.released else "")
    rep["clipping"] = dict(clipping)
    rep["b1"] = float(est.b1) if plan.private else None
    rep["promised"] = plan.promised()
    rep["trust"] = trust_report(plan, algo)
    return rep
