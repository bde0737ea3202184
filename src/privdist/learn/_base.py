"""The shared fitting path of the horizontal estimators: a thin shell over :func:`privdist.run` (STYLE #10)."""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._checks import shown
from ..errors import BinaryOnlyError, DivergenceError, ParameterTypeError, ValidationError
from ._inputs import validate_data as _validate_data  # privdist's table checks, then scikit-learn's
from .budget import NON_PRIVATE_ALGORITHMS, TOTAL_BUDGET_ALGORITHMS, total_budget_params
from .trust import trust_report

__all__ = ["DistributedLinearModel", "summarise_privacy", "guarantee_accountant_of", "with_preprocessing",
           "noise_seed", "check_number", "check_finite_fit", "UtilityWarning", "ResearchModeWarning",
           "PrivacyTargetWarning"]


class UtilityWarning(UserWarning):
    """The private model is no better than the majority-class (or mean) predictor."""


class ResearchModeWarning(UserWarning):
    """``random_state`` was set: the noise is seeded and can be regenerated; not for release."""


class PrivacyTargetWarning(UserWarning):
    """The accounted guarantee differs from the requested budget (or is not a guarantee at all)."""


#: Relative tolerance between the requested and the PLD-accounted total epsilon.
EPSILON_TOLERANCE = 1e-3

#: Largest ``rounds`` / ``n_agents`` / ``n_parties`` an estimator accepts (as an integer hyperparameter of a run
#: spec, :data:`privdist.experiments.validate.MAX_INT_PARAM`): a typo such as ``rounds=10**12`` is an error, not a
#: fit that never ends (issue 26).
MAX_COUNT = 10**6

#: Largest public row norm (``row_norm``): the step sizes scale with its square, which must stay a finite float.
MAX_ROW_NORM = 1e6

#: A fit whose training objective ends this many times above its value at the start (the zero model; at least 1)
#: has diverged (steps that overshoot, e.g. a subgradient step times a huge regularisation weight): warned about.
DIVERGENCE_FACTOR = 1e3

#: DPSGD step scale at row norm 1 with an intercept, for the logistic loss: chosen on a validation split of the
#: Adult training file (10 parties, total epsilon 1, 100 rounds; grid 16/64/256), never on test data.
_DPSGD_STEP_LOGISTIC = 64.0


def noise_seed(random_state, secure: bool, stacklevel: int = 3) -> tuple[int, bool]:
    """``(seed, secure)`` of a fit: ``random_state`` set = research mode (seeded noise, warned, ``secure`` off);
    else a seed from fresh entropy (used for the partition only; the noise comes from ``secure`` draws).

    Raises:
        ValidationError: ``random_state`` is a negative integer; ParameterTypeError: it is neither None, an integer
            nor a numpy ``Generator``/``RandomState`` (scikit-learn's conventions).
    """
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0]), secure
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValidationError(f"random_state must be >= 0 (a seed), got {shown(random_state)}")
        seed = int(random_state)
    elif isinstance(random_state, np.random.Generator):
        seed = int(random_state.integers(2**63))
    elif isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(2**31))
    else:
        raise ParameterTypeError(f"random_state must be None, an integer seed or a numpy Generator/RandomState, got "
                                 f"{type(random_state).__name__} {shown(random_state)}")
    if secure:
        warnings.warn("random_state is set: the noise is seeded (research mode) and anyone who knows the "
                      "seed can remove it; these models are not for release (use random_state=None)",
                      ResearchModeWarning, stacklevel=stacklevel)
    return seed, False


def check_budget_and_counts(est, counts: tuple[str, ...]) -> None:
    """Named errors for the parameters every estimator shares: ``epsilon`` (finite > 0, or None), ``delta`` in
    (0, 1), the integer counts ``counts`` (1 to :data:`MAX_COUNT`) and ``secure`` (a bool)."""
    eps = est.epsilon
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating))
                            or not 0 < eps < math.inf):
        raise ValidationError(f"epsilon must be a finite number > 0 (the total budget) or None (no noise), got "
                              f"{shown(eps)}")
    if isinstance(est.delta, bool) or not (isinstance(est.delta, (int, float, np.floating)) and 0 < est.delta < 1):
        raise ValidationError(f"delta must be in (0, 1), got {shown(est.delta)}")
    for name in counts:
        value = getattr(est, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_COUNT:
            raise ValidationError(f"{name} must be an integer from 1 to {MAX_COUNT}, got {shown(value)}")
    if type(est.secure) is not bool:
        raise ParameterTypeError(f"secure must be a bool, got {type(est.secure).__name__} {shown(est.secure)}")


def check_number(value, name: str, low: float = 0.0, strict: bool = False, high: float = math.inf) -> float:
    """``float(value)`` of a finite real ``>= low`` (``> low`` with ``strict``) and ``<= high``, else a named
    error."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterTypeError(f"{name} must be a number, got {type(value).__name__} {shown(value)}")
    if not math.isfinite(value) or value < low or (strict and value == low) or value > high:
        upper = f" and <= {high:g}" if math.isfinite(high) else ""
        raise ValidationError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}{upper}, got "
                              f"{shown(value)}")
    return float(value)


def check_finite_fit(est, estimates, objective, advice: str, stacklevel: int = 4) -> None:
    """After training: :class:`DivergenceError` when an agent's released model is not finite (NaN or inf); a
    :class:`UtilityWarning` when the training objective ended more than :data:`DIVERGENCE_FACTOR` times above its
    value at the start (the steps overshoot). ``advice`` says what to change."""
    estimates = np.asarray(estimates, dtype=float)
    if not np.all(np.isfinite(estimates)):
        raise DivergenceError(f"the fit diverged: the released model has non-finite coefficients (NaN or inf) after "
                              f"{len(objective) - 1} rounds{advice}")
    objective = np.asarray(objective, dtype=float)
    start, end = float(objective[0]), float(objective[-1])
    if not math.isfinite(end) or end > DIVERGENCE_FACTOR * max(abs(start), 1.0):
        warnings.warn(f"the fit diverged: the training objective rose from {start:.4g} at the start (the zero "
                      f"model) to {end:.4g}{advice}", UtilityWarning, stacklevel=stacklevel)


def binary_classifier_tags(tags):
    """scikit-learn tags of privdist's binary classifiers (sparse input accepted, noisy fits)."""
    tags.classifier_tags.multi_class = False
    tags.input_tags.sparse = True
    tags.non_deterministic = True
    return tags


def binary_labels(est, y, stated=None) -> np.ndarray:
    """Check that ``y`` holds exactly two classes (scikit-learn's messages), set ``est.classes_`` (the ``stated``
    public pair when given, else the sorted labels) and return the labels as -1/+1 (+1 = ``classes_[1]``)."""
    from sklearn.utils.multiclass import check_classification_targets, type_of_target

    check_classification_targets(y)
    if len(np.unique(y)) < 2:
        raise ValidationError(f"Classifier can't train when only one class is present: y holds one class only "
                              f"({shown(np.unique(y)[0])})")
    kind = type_of_target(y)
    if kind != "binary":
        raise BinaryOnlyError(f"Only binary classification is supported. The type of the target is {kind}. "
                              f"({type(est).__name__} fits two classes; y has {len(np.unique(y))})")
    est.classes_ = np.unique(y) if stated is None else stated
    return np.where(y == est.classes_[1], 1.0, -1.0)


def warn_if_majority(est, X, y_pm, advice: str) -> None:
    """Set ``est.train_score_`` and warn (:class:`UtilityWarning`) when a private model's training accuracy is no
    better than predicting the majority class (labels ``y_pm`` in {-1, +1})."""
    acc = float(np.mean((est.decision_function(X) > 0) == (y_pm > 0)))
    majority = float(max(np.mean(y_pm > 0), np.mean(y_pm < 0)))
    est.train_score_ = {"accuracy": acc, "majority_class": majority}
    if acc <= majority + 1e-12:
        warnings.warn(f"the private model's training accuracy {acc:.3f} is no better than predicting the majority "
                      f"class ({majority:.3f}) at epsilon={est.epsilon}{advice}", UtilityWarning, stacklevel=3)


#: The ``privacy_report_["accountant"]`` text for each ``guarantee_accountant`` (what computed the guarantee).
ACCOUNTANT_TEXT = {
    "pld": "pld (dp-accounting's PLD accountant); rdp as a cross-check; paper = the source paper's own formula",
    "skellam_rdp": "skellam_rdp: the Skellam RDP bound of the secure sums (Agarwal, Kairouz & Liu 2021) at integer "
                   "orders, composed with the run's other releases and converted by dp-accounting; guarantee_pld "
                   "repeats it (no PLD is published for this mechanism) and guarantee_rdp is the same bound; paper = "
                   "the source paper's own formula",
    "mixed": "per party (per_agent.guarantee_accountant): pld (dp-accounting's PLD accountant) for parties without "
             "Skellam releases, the Skellam RDP bound (repeated in guarantee_pld) for parties with them; paper = the "
             "source paper's own formula"}


def guarantee_accountant_of(agents) -> str:
    """``"pld"``, ``"skellam_rdp"`` or ``"mixed"``: what computed the guarantee of the agents of a
    :func:`privdist.privacy.privacy_report` (its per-agent ``guarantee_accountant``, read from the ledger's events)."""
    by = {a.get("guarantee_accountant", "pld") for a in agents} or {"pld"}
    return by.pop() if len(by) == 1 else "mixed"


def summarise_privacy(report, mechanism, preprocessing, noise, *, epsilon, delta, rounds: int, algorithm: str,
                      stacklevel: int = 5) -> dict:
    """The estimators' ``privacy_report_`` from a run's :func:`privdist.privacy.privacy_report`; warns
    (:class:`PrivacyTargetWarning`) when the guarantee is missing or exceeds the request, or when preprocessing
    read private data. ``mechanism`` is the algorithm's ``mechanism_info()`` (budget, kind, noise multiplier)."""
    agents = report["per_agent"]
    pld = [a["epsilon"].get("pld") for a in agents]
    guaranteed = all(a["guaranteed"] for a in agents)
    worst = max((math.inf if v is None else v) for v in pld) if pld else math.inf
    by = guarantee_accountant_of(agents)
    out = {
        "requested": {"epsilon": epsilon, "delta": delta, "scope": "total per agent, whole run"},
        "accountant": ACCOUNTANT_TEXT[by],
        "guarantee_accountant": by,
        "guaranteed": guaranteed,
        "epsilon": worst,
        "delta": report["delta"],
        "calibration": {"mechanism": mechanism, "rounds": int(rounds)},
        "per_agent": [{"agent": a["agent"], "guaranteed": a["guaranteed"],
                       "guarantee_pld": a["epsilon"].get("pld"), "guarantee_rdp": a["epsilon"].get("rdp"),
                       "paper_claim": a["epsilon"].get("paper"),
                       "guarantee_accountant": a.get("guarantee_accountant", "pld")} for a in agents],
        "assumptions": report.get("assumptions", []),
        "not_guaranteed": report.get("not_guaranteed", []),
        "exposures": report.get("exposures", []),
        "preprocessing": preprocessing,
        "noise": noise,
        "algorithm": algorithm,
    }
    if epsilon is not None:
        if not guaranteed:
            warnings.warn(f"{algorithm}: the privacy is the paper's claim, not a guarantee: "
                          f"{out['not_guaranteed']}", PrivacyTargetWarning, stacklevel=stacklevel)
        elif abs(worst - epsilon) > EPSILON_TOLERANCE * epsilon + 1e-9 and worst > epsilon:
            warnings.warn(f"{algorithm}: accounted epsilon {worst:.6g} exceeds the requested "
                          f"{epsilon}", PrivacyTargetWarning, stacklevel=stacklevel)
    with_preprocessing(out, preprocessing)
    if any(not step["private"] for step in preprocessing):
        warnings.warn("preprocessing read the private data without noise (scale='data'): the guarantee does "
                      "not cover it, so the model is reported guaranteed: false (epsilon inf); state public "
                      "bounds instead (scale='bounds')", PrivacyTargetWarning, stacklevel=stacklevel)
    return out


def with_preprocessing(report: dict, steps: list) -> dict:
    """Set ``report["preprocessing"] = steps``; when a step read the data without DP (``private`` false), the
    report is no longer a guarantee (issue 24): ``guaranteed`` false, ``epsilon`` and every party's guarantee inf,
    the step named in ``not_guaranteed``; what the messages alone spend given that step stays in
    ``messages_epsilon`` (and ``messages_pld``/``messages_rdp`` per party)."""
    from ..data.bounds import non_private_reasons

    report["preprocessing"] = list(steps)
    reasons = non_private_reasons(steps)
    if not reasons:
        return report
    if "messages_epsilon" not in report:
        report["messages_epsilon"] = report["epsilon"]
    report["guaranteed"] = False
    report["epsilon"] = math.inf
    report["not_guaranteed"] = [r for r in report.get("not_guaranteed", []) if not r.startswith("preprocessing step")]
    report["not_guaranteed"] += reasons
    for a in report["per_agent"]:
        if "messages_pld" not in a:
            a["messages_pld"], a["messages_rdp"] = a["guarantee_pld"], a["guarantee_rdp"]
        a["guaranteed"], a["guarantee_pld"], a["guarantee_rdp"] = False, math.inf, math.inf
    return report


class DistributedLinearModel(BaseEstimator):
    """Base of the horizontal estimators; subclasses set ``_loss``, ``_regularizer`` and the label handling."""

    _loss = "logistic"
    _regularizer = "l2"

    # ------------------------------------------------------------------ configuration
    def _default_algorithm_params(self, algorithm: str, row_norm: float) -> dict:
        """Hyperparameters from the PUBLIC data scale: rows have norm <= ``row_norm`` (clipped), plus 1 for the
        intercept column, so ``||x||^2 <= R2 = row_norm^2 + 1`` and the loss curvature is <= ``l'' R2``
        (``l'' <= 1/4`` logistic, 2 squared). Step sizes scale as ``1 / (l'' R2)``; the constant of DPSGD was
        chosen on a validation split (see ``_DPSGD_STEP_LOGISTIC``). Nothing here reads the data."""
        r2 = row_norm**2 + (1.0 if self.fit_intercept else 0.0)
        curvature = 0.25 if self._loss == "logistic" else 2.0
        lipschitz = math.sqrt(r2) * (1.0 if self._loss == "logistic" else 1.0)
        if algorithm == "dpmm":  # c1: |l'| <= 1 logistic; |2 (z - y)| <= 2 at w = 0 with |y| <= 1 (target scaled)
            return {"row_bound": math.sqrt(r2), "c1": row_norm * (1.0 if self._loss == "logistic" else 2.0)}
        if algorithm == "ssp":  # rows clipped to sqrt(R2) with the intercept; the target scaled into [-1, 1]
            return {"row_bound": math.sqrt(r2), "y_bound": 1.0}
        if algorithm == "dpsgd":
            return {"alpha0": _DPSGD_STEP_LOGISTIC * 0.25 * 2.0 / (curvature * r2), "c1": 1.0, "clip": True}
        if algorithm == "dpadmm":
            return {"c1": 1.0, "clip": True, "rho": 1.0, "eta0": 1.0 / (curvature * r2)}
        if algorithm in ("pvp", "dvp"):
            return {"c1": lipschitz, "rho": 0.1}
        if algorithm == "laadmm":
            return {"c1": lipschitz, "rho": 0.1}
        if algorithm == "consensus_admm":
            return {"rho": curvature * r2}
        return {}

    def _check_params(self):
        from ..network import Network

        known = TOTAL_BUDGET_ALGORITHMS + NON_PRIVATE_ALGORITHMS
        if not isinstance(self.algorithm, str) or self.algorithm not in known:
            raise ValidationError(f"algorithm must be one of {TOTAL_BUDGET_ALGORITHMS + NON_PRIVATE_ALGORITHMS}, "
                                  f"got {shown(self.algorithm)}")
        check_budget_and_counts(self, ("n_agents",) if self.rounds is None else ("rounds", "n_agents"))
        check_number(self.alpha, "alpha")
        from ..privacy.dp_ranges import check_share

        check_share(self.range_share)
        check_number(self.row_norm, "row_norm", strict=True, high=MAX_ROW_NORM)
        if not isinstance(self.network, (str, Network)):
            raise ParameterTypeError(f"network must be a network kind (e.g. 'complete', 'ring') or a Network, got "
                                     f"{type(self.network).__name__} {shown(self.network)}")
        from .plan import algorithm_overrides

        if self.algorithm_params is not None and not isinstance(self.algorithm_params, dict):
            raise ParameterTypeError(f"algorithm_params must be a dict (e.g. {{'alpha0': 32}}) or None, got "
                                     f"{type(self.algorithm_params).__name__} {shown(self.algorithm_params)}")
        algorithm_overrides(self)  # no budget or trust key
        if type(self.fit_intercept) is not bool:
            raise ParameterTypeError(f"fit_intercept must be a bool, got {shown(self.fit_intercept)}")
        from ..privacy.plan import resolve_trust, secure_section

        # the plan's one validation of trust and its parameters, up front
        secure_section(resolve_trust(self.algorithm, getattr(self, "trust", "local"), self.epsilon),
                       self.secure_aggregation, self.epsilon is not None)

    # ------------------------------------------------------------------ fit
    def _rounds(self) -> int:
        """``rounds``, or the algorithm's default: dpmm 20 (logistic; chosen on a validation split of the Adult
        training rows, 10 parties, total epsilon 1: 0.825/0.829/0.828 at 10/20/40; 100 without noise, where rounds
        cost no privacy: breast cancer, 10 parties, 0.965/0.982 at 20/100) and 2 for the squared loss (one exact MM
        step from 0 = sufficient-statistics ridge), 100 for the others."""
        if self.rounds is not None:
            return int(self.rounds)
        if self.algorithm == "ssp":  # round 1 releases the statistics, round 2 delivers the model
            return 2
        if self.algorithm == "dpmm":
            return 2 if self._loss != "logistic" else 20 if self.epsilon is not None else 100
        return 100

    def _clip_norm(self) -> float | None:
        """The row-clipping norm: ``row_norm``; None (no clipping) for a non-private regression whose features are
        mapped into [-1, 1] (``scale`` other than ``"none"``): clipping is a privacy device, and clipping a row
        bends a linear relation (a 4,000-row mixed-scale regression: non-private RMSE 79.5 clipped, 39.6 not;
        scikit-learn's Ridge 29.1). A classifier keeps it: a clipped row keeps its direction, and the
        non-private model then equals the pooled one on the benchmark (breast cancer 0.974 both)."""
        if self.epsilon is None and self.scale != "none" and self._loss == "squared":
            return None
        return self.row_norm

    def _row_bound(self, n_columns: int) -> float:
        """The public row-norm bound the step sizes use: ``row_norm``, or ``sqrt(d)`` for unclipped rows of ``d``
        columns in [-1, 1] (intercept column excluded)."""
        if self._clip_norm() is not None:
            return float(self.row_norm)
        return math.sqrt(max(1, n_columns - (1 if self.fit_intercept else 0)))

    def _parties(self, X, groups, rng):
        """``(groups, n_parties)``: ``groups`` checked, or a random equal split drawn from ``rng``."""
        from ..data.parties import check_groups, random_groups

        if groups is None:
            return random_groups(X.shape[0], self.n_agents, rng), self.n_agents
        return check_groups(groups, X.shape[0])

    def _plan_and_ranges(self, X, groups, seed: int, secure: bool, classes: int = 1, y=None):
        """``(plan, preprocessor, range step, ledger)`` of a fit (issue 37): the privacy plan from the parameters
        and the public facts (rows, columns without public bounds, parties, classes), then its DP range step carried
        out on each party's own rows (``scale="dp"``; its releases recorded in the job's ledger, round 0).
        ``y``: a regressor's target (one more column of the step without public ``target_bounds``)."""
        from ..data.bounds import Preprocessor
        from ..privacy import PrivacyLedger
        from .plan import horizontal_plan
        from .ranges import check_target_bounds, fallback_message, fit_ranges

        n_parties = int(groups.max()) + 1
        pre = Preprocessor(scale=self.scale, bounds=self.bounds, row_norm=self._clip_norm())
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else [str(n) for n in names]
        cols = pre.dp_columns(X.shape[1], names)
        target_bounds = getattr(self, "target_bounds", None)
        dp_target = (self._loss == "squared" and y is not None and pre.scale == "dp"
                     and check_target_bounds(target_bounds) is None)
        plan = horizontal_plan(self, rows=X.shape[0], columns=X.shape[1], parties=n_parties,
                               dp_columns=tuple(names[j] if names else f"x{j}" for j in cols), dp_target=dp_target,
                               classes=classes, seeded=not secure)
        ledger = PrivacyLedger(n_parties)
        ranges = fit_ranges(pre, X, [np.flatnonzero(groups == k) for k in range(n_parties)], plan.range,
                            seed=seed, secure=secure, ledger=ledger, delta=float(self.delta), feature_names=names,
                            y=y, target_bounds=target_bounds, dp_target=dp_target)
        message = fallback_message(pre.record, X.shape[0], self.epsilon, names)
        if message:  # the cause and the cure, the columns by name (issue 39)
            warnings.warn(message, UtilityWarning, stacklevel=4)
        return plan, pre, ranges, ledger

    def _fit(self, X, y_pm, groups):
        self._check_params()
        seed, secure = noise_seed(self.random_state, self.secure, stacklevel=4)
        rng = np.random.default_rng(seed)  # the partition, then the network
        groups, _ = self._parties(X, groups, rng)
        plan, pre, ranges, ledger = self._plan_and_ranges(X, groups, seed, secure,
                                                          y=y_pm if self._loss == "squared" else None)
        self.preprocessor_, self.target_bounds_ = pre, ranges.target
        self._train(plan, 0, pre.transform(X), ranges.scale_target(y_pm), groups, ledger, seed, secure, rng,
                    unscale=ranges.unscale)
        self.privacy_report_ = self._report(plan, self.ledger_, pre.record, self._noise)
        return self

    def _algorithm(self, plan, index: int, n_columns: int):
        """The algorithm factory of binary fit ``index`` of ``plan``: hyperparameters from the public data scale,
        the user's overrides (never a budget key), the horizon and the plan's privacy parameters."""
        from ..algorithms.registry import make_algorithm
        from .budget import total_budget_params
        from .plan import algorithm_overrides

        t = plan.training[index]
        params = {**self._default_algorithm_params(self.algorithm, self._row_bound(n_columns)),
                  **algorithm_overrides(self), **total_budget_params(self.algorithm, t.epsilon, t.delta, plan.rounds),
                  **plan.training_params(index)}
        return make_algorithm(self.algorithm, **params), params

    def _train(self, plan, index: int, Z, y, groups, ledger, seed: int, secure: bool, rng, unscale=None):
        """Train binary fit ``index`` of ``plan`` on the preprocessed rows ``Z`` (the job's ``ledger`` continued;
        ``rng`` draws a random network); sets the model, ``history_``, ``ledger_`` and ``algorithm_params_``."""
        from ..data.parties import split_rows
        from ..network import make_network
        from ..problems import HorizontalERM, make_loss, make_regularizer
        from ..runtime import run

        Z = self._design(Z)
        parts = split_rows(Z, y, groups, plan.parties)
        self.n_agents_ = plan.parties
        problem = HorizontalERM(parts, make_loss(self._loss), make_regularizer(self._regularizer), float(self.alpha))
        network = self.network if not isinstance(self.network, str) else make_network(
            self.network, rng=rng, n=plan.parties)
        algo, params = self._algorithm(plan, index, Z.shape[1])
        problem_objective = problem.objective
        result = run(algo, problem, network, plan.rounds, seed=seed % 2**63, secure=secure, ledger=ledger,
                     metrics={"objective": lambda est: problem_objective(est.mean(axis=0))})
        est = np.asarray(result.estimates)
        check_finite_fit(self, est, result.curves["objective"], self._divergence_advice(params))
        unscale = unscale or (lambda c, i: (c, i))
        self.agent_coefs_, self.agent_intercepts_ = unscale(*self._split(est))
        coef, intercept = unscale(*self._split(est.mean(axis=0)[None, :]))
        self.coef_, self.intercept_ = coef[0], float(intercept[0])
        self.history_ = {"objective": np.asarray(result.curves["objective"]), "rounds": plan.rounds,
                         "note": "training objective of the agents' average model, for the data holder only "
                                 "(computed on private data; not a release)"}
        self.ledger_ = result.ledger  # the job's ledger: the range release, then every training run so far
        self.privacy_plan_ = plan
        self._algo, self._noise = algo, result.config.get("noise")
        self.algorithm_params_ = algo.params()
        return self

    def _report(self, plan, ledger, preprocessing, noise, mechanism=None) -> dict:
        """``privacy_report_`` of the job: the accountants over its ledger, "what was promised" (the plan) and the
        trust section."""
        from ..privacy import privacy_report

        if mechanism is None:
            mechanism = self._algo.mechanism_info() if hasattr(self._algo, "mechanism_info") else None
        out = summarise_privacy(privacy_report(ledger, float(self.delta)), mechanism, preprocessing, noise,
                                epsilon=self.epsilon, delta=self.delta, rounds=plan.rounds,
                                algorithm=self.algorithm, stacklevel=6)
        out["promised"] = plan.promised()
        out["trust"] = trust_report(plan, self._algo)
        return out

    def _divergence_advice(self, params: dict) -> str:
        """What to change when :func:`check_finite_fit` finds a diverged fit (the step-size parameters used)."""
        steps = {k: params[k] for k in ("alpha0", "eta0", "rho") if k in params}
        return (f" ({self.algorithm} with alpha={shown(self.alpha)}" + (f", {shown(steps)}" if steps else "")
                + "): lower the step size (algorithm_params) or alpha, or use algorithm='dpmm'")

    def _design(self, X):
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        return np.hstack([X, np.ones((X.shape[0], 1))]) if self.fit_intercept else X

    def _split(self, B):
        B = np.atleast_2d(B)
        if self.fit_intercept:
            return B[:, :-1].copy(), B[:, -1].copy()
        return B.copy(), np.zeros(B.shape[0])

    def _decision(self, X):
        check_is_fitted(self, "coef_")
        X = _validate_data(self, X, accept_sparse=True, reset=False)
        Z = self.preprocessor_.transform(X)
        Z = np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z)
        return Z @ self.coef_ + self.intercept_

    def _validate_xy(self, X, y, y_numeric):
        return _validate_data(self, X, y, accept_sparse=True, y_numeric=y_numeric)
