"""Building the privacy plan of an estimator's fit (issue 37): the one place its privacy is decided.

:func:`horizontal_plan` and :func:`vertical_plan` turn an estimator's parameters and the PUBLIC facts of its data
(row count, columns without public bounds, parties, classes) into a :class:`~privdist.privacy.plan.PrivacyPlan`
before any row is read: the trust model (:func:`~privdist.privacy.plan.resolve_trust`), the secure-aggregation
parameters (:func:`~privdist.privacy.plan.secure_section`), the range step and its budget share
(:func:`~privdist.privacy.range_plan.plan_range`), the training budget of every binary fit (one-vs-rest: Gaussian
``mu^2`` shares, one joint Skellam calibration, or basic composition). The estimators, ``privdist fit`` and the
multiclass path consume the plan; none of them decides any of this again.

:func:`declared_ledger` is what the plan declares, computed from the plan alone: the range step's releases
(:meth:`~privdist.privacy.range_plan.RangePlan.mechanism`) and each training run's releases as the algorithm factory
the plan parameterises declares them from public shapes (a backend started on zeros of the public shape; no data,
no round run). It equals the ledger of the fit (tested for every estimator, trust model and multiclass).
"""

from __future__ import annotations

import numpy as np

from ..errors import UnknownNameError, ValidationError
from ..privacy.plan import PrivacyPlan, TrainingPlan, check_plan_keys, resolve_trust, secure_section
from ..privacy.range_plan import plan_range, plan_range_vertical, training_budget

__all__ = ["horizontal_plan", "vertical_plan", "resolve_protocol", "PROTOCOLS", "declared_ledger",
           "algorithm_overrides", "class_budgets"]


def algorithm_overrides(est) -> dict:
    """The estimator's ``algorithm_params`` without what the plan decides (a named error for a budget key)."""
    return check_plan_keys(getattr(est, "algorithm_params", None))


def _is_gaussian(est, epsilon, delta, rounds: int) -> bool:
    """Whether the training algorithm of ``est`` releases Gaussian noise at a total budget (its mechanism, built
    without running it: nothing is read from the data)."""
    from ..algorithms.registry import make_algorithm
    from .budget import total_budget_params

    params = {**est._default_algorithm_params(est.algorithm, float(est.row_norm)), **algorithm_overrides(est),
              **total_budget_params(est.algorithm, epsilon, delta, rounds)}
    algo = make_algorithm(est.algorithm, **params)
    return (algo.mechanism_info() if hasattr(algo, "mechanism_info") else {}).get("kind") == "gaussian"


def _exact(est) -> bool:
    """Whether the range step's split composes exactly with training (Gaussian releases)."""
    from ..privacy.dp_ranges import GAUSSIAN_ALGORITHMS

    return est.algorithm in GAUSSIAN_ALGORITHMS and dict(est.algorithm_params or {}).get("noise",
                                                                                           "gaussian") == "gaussian"


def _check_per_party(epsilon, parties: int) -> None:
    if isinstance(epsilon, (list, tuple)) and len(epsilon) != parties:
        raise ValidationError(f"a per-party epsilon needs one value per party ({parties}), got {len(epsilon)}")


def horizontal_plan(est, *, rows: int, columns: int, parties: int, dp_columns: tuple, dp_target: bool,
                    classes: int, seeded: bool) -> PrivacyPlan:
    """The plan of a horizontal estimator's fit.

    Args:
        est: the estimator (its parameters are already checked).
        rows, columns, parties: public facts of the training data (``columns`` of ``X``).
        dp_columns: names of the columns the range step estimates (those without public bounds), in order.
        dp_target: the target is one more column of the step (a regressor without public ``target_bounds``).
        classes: binary fits (one-vs-rest over ``classes >= 3``; 1 otherwise).
        seeded: research mode.
    """
    eps, delta, rounds = est.epsilon, float(est.delta), est._rounds()
    _check_per_party(eps, parties)
    trust = resolve_trust(est.algorithm, getattr(est, "trust", "local"), eps)
    secure = secure_section(trust, est.secure_aggregation, eps is not None)
    algorithm_overrides(est)
    secure_step = secure is not None and parties > 1  # the range step's histograms through one secure sum
    if secure_step and isinstance(eps, (list, tuple)):
        raise ValidationError("secure aggregation adds one noise to the whole sum: per-party budgets (a list of "
                              "epsilons) are not supported; give one epsilon")
    step_columns = tuple(dp_columns) + (("<target>",) if dp_target else ())
    rng_plan = None
    if step_columns:
        rng_plan = plan_range(step_columns, epsilon=eps, delta=delta, share=est.range_share, exact=_exact(est),
                              n_rows=rows, n_parties=parties,
                              secure_shares=secure.shares(parties) if secure_step else None,
                              colluding=secure.colluding if secure_step else 0, dp_target=dp_target)
    train_eps, train_delta = (eps, delta) if rng_plan is None or secure is not None else \
        training_budget(eps, delta, rng_plan)
    prior = ()
    if secure is not None and rng_plan is not None and rng_plan.released:
        priors = [rng_plan.mechanism(k).prior() for k in rng_plan.releasing_parties(parties)]
        prior = (priors[0],) if rng_plan.kind == "skellam" else (max(priors),)
    training, rule = _class_budgets(est, classes, train_eps, train_delta, prior, trust, rounds)
    return PrivacyPlan(kind="horizontal", algorithm=est.algorithm, epsilon=eps, delta=delta, trust=trust,
                       secure=secure, parties=int(parties), rows=int(rows), columns=int(columns),
                       classes=len(training), rounds=int(rounds), range=rng_plan, training=tuple(training),
                       class_rule=rule, public=_public(est), seeded=bool(seeded))


def _class_budgets(est, classes: int, eps, delta: float, prior: tuple, trust: str, rounds: int):
    """``(training plans, rule)`` of ``classes`` binary fits sharing the training budget ``(eps, delta)``."""
    if classes == 1:
        return [TrainingPlan(eps, delta, prior)], "single"
    if est.epsilon is None:
        return [TrainingPlan(None, delta)] * classes, "none (no noise)"
    if trust == "secure_aggregation":  # one Skellam calibration for every class and the range release
        return [TrainingPlan(float(est.epsilon), float(est.delta), prior, classes)] * classes, "skellam_joint_rdp"
    gaussian = _is_gaussian(est, est.epsilon, est.delta, rounds)
    epsilons, deltas, rule = class_budgets(eps, delta, classes, gaussian)
    return [TrainingPlan(e, d) for e, d in zip(epsilons, deltas)], rule


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


def _public(est) -> dict:
    """The public bounds the sensitivities rest on, as the user stated them (JSON-ready)."""
    out = {"scale": est.scale}
    if hasattr(est, "row_norm"):
        out["row_norm"] = float(est.row_norm)
    if getattr(est, "b1", None) is not None:
        out["b1"] = float(est.b1)
    if getattr(est, "target_bounds", None) is not None:
        out["target_bounds"] = [float(v) for v in est.target_bounds]
    if est.bounds is not None:
        b = est.bounds
        out["bounds"] = ({str(k): [float(v) for v in pair] for k, pair in b.items()} if isinstance(b, dict) else
                         [[None if np.isnan(v) else float(v) for v in row] for row in np.atleast_2d(
                             np.asarray(b, dtype=float))])
    return out


#: The vertical protocols: S2's DP ADMM sharing, or party-local experts pooled in log-odds (issue 39).
PROTOCOLS = ("auto", "admm_sharing", "pool")


def resolve_protocol(protocol, trust, secure_aggregation, epsilon) -> str:
    """The vertical protocol of a fit (:mod:`privdist.learn.vertical`, "The default protocol"): ``protocol``
    checked (named errors) and ``"auto"`` resolved: ``"admm_sharing"`` without noise or with secure aggregation
    (asked by ``trust="secure_aggregation"`` or by its parameters), ``"pool"`` otherwise.

    Raises:
        UnknownNameError: ``protocol`` not one of :data:`PROTOCOLS`. ValidationError: ``"pool"`` asked with secure
            aggregation (the pool sends no sum).
    """
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise UnknownNameError("protocol", str(protocol), PROTOCOLS)
    secure = trust == "secure_aggregation" or secure_aggregation is not None
    if protocol == "pool" and secure:
        raise ValidationError("protocol='pool' releases nothing computed from a party's columns while training, "
                              "so there is no sum for secure aggregation: use trust='auto' or 'local' (and no "
                              "secure_aggregation parameters), or protocol='admm_sharing'")
    if protocol == "auto":
        return "admm_sharing" if secure or epsilon is None else "pool"
    return protocol


def vertical_plan(est, *, rows: int, columns: int, dp_columns: tuple, party_columns: tuple,
                  seeded: bool) -> PrivacyPlan:
    """The plan of a vertical fit (ADMM sharing, or the pool of :mod:`.vertical_pool`: no training rounds):
    ``party_columns[m]`` are party ``m``'s columns among ``dp_columns`` (those without public bounds)."""
    eps, delta, rounds = est.epsilon, float(est.delta), int(est.rounds)
    algorithm = resolve_protocol(getattr(est, "protocol", "admm_sharing"), est.trust, est.secure_aggregation, eps)
    if algorithm == "pool":  # no training rounds: each party fits its own block (learn.vertical_pool)
        rounds = 0
    trust = resolve_trust("admm_sharing", est.trust, eps)
    secure = secure_section(trust, est.secure_aggregation, eps is not None)
    parties = len(party_columns)
    _check_per_party(eps, parties)
    rng_plan, train = None, eps
    if dp_columns:
        rng_plan, train = plan_range_vertical(tuple(dp_columns), party_columns, epsilon=eps, delta=delta,
                                              share=est.range_share, n_rows=rows)
    prior = ()
    if secure is not None:  # one Skellam calibration of the whole budget, composed with the range releases
        train = eps
        if rng_plan is not None and rng_plan.released:
            prior = (min(z for z in rng_plan.noise_multipliers if z is not None),)
    public = _public(est)
    if algorithm == "pool":  # no noisy training release (epsilon None: nothing spent) and no clip bound b1
        train = None
        public.pop("b1", None)
    return PrivacyPlan(kind="vertical", algorithm=algorithm, epsilon=eps, delta=delta, trust=trust,
                       secure=secure, parties=parties, rows=int(rows), columns=int(columns), classes=1,
                       rounds=rounds, range=rng_plan, training=(TrainingPlan(train, delta, prior),),
                       public=public, seeded=bool(seeded))


def declared_ledger(plan: PrivacyPlan, factories, problem_shape: dict):
    """The ledger ``plan`` declares (module docstring): the range releases, then each binary fit's rounds.

    Args:
        factories: the algorithm factory of each binary fit (built from the plan by the estimator's own code path).
        problem_shape: ``{"features": P}`` (horizontal: columns of the design, intercept included) or
            ``{"blocks": [d_m, ...]}`` (vertical).
    """
    from ..network import complete
    from ..privacy import PrivacyLedger
    from ..runtime import make_backend

    K = plan.parties
    ledger = PrivacyLedger(K)
    if plan.range is not None:
        for k in plan.range.releasing_parties(K):
            ledger.record(k, plan.range.mechanism(k).release())
    problem = _standin(plan, problem_shape)
    agents, present = np.arange(K), np.ones(K, dtype=bool)
    for algo in factories:
        algo = algo.for_rounds(plan.rounds)
        be = make_backend("simulate")
        be.start(algo, problem, complete(K), 0, 0, secure=False)
        try:
            for t in range(1, plan.rounds + 1):
                if getattr(algo, "secure", False):
                    ledger.record_round(agents, algo.secure_events(t, present, problem))
                else:
                    ledger.record_round(agents, be.dp_events(t))
        finally:
            be.close()
    return ledger


def _standin(plan: PrivacyPlan, shape: dict):
    """Zeros of the public shape: what the algorithms' declarations read (agent ids, dimensions, row counts)."""
    from ..problems import HorizontalERM, make_loss, make_regularizer
    from ..problems.vertical import VerticalProblem

    if plan.kind == "vertical":
        return VerticalProblem([np.zeros((plan.rows, d)) for d in shape["blocks"]], np.ones(plan.rows), 1e-3, "sum",
                               bias=shape.get("bias", True))
    P = int(shape["features"])
    parts = [(np.zeros((1, P)), np.ones(1)) for _ in range(plan.parties)]
    return HorizontalERM(parts, make_loss(shape.get("loss", "logistic")), make_regularizer("l2"), 1e-4)
