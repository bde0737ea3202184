"""The validation pass of ``privdist fit`` (issue 26): everything is checked before any training, with the
discipline of ``privdist run``.

* :func:`check_fit_args`, before the data are read: types and ranges of every option (``--epsilon`` and the
  ``--curve`` epsilons as a run's, ``--delta`` in ``[1e-12, 0.1)`` as a run's, counts from 1 to
  :data:`~privdist.learn._base.MAX_COUNT`, ...), the algorithm and network offered, the public bounds, category
  lists and classes, and whether the budget can be shared with the DP range step at all.
* :func:`check_fit_data`, once the data are loaded and before any training: parties against rows, classes and the
  test split (the split is stratified by party: each party needs a training and a test row), the columns of a
  vertical split, honest parties left in each secure sum (``--colluding``, ``--dropout-tolerance``), and the size
  estimate :func:`fit_estimate`: a fit above the limits of :func:`privdist._checks.check_estimate` needs ``--yes``.
* :func:`fit_output`: the ``--out`` directory is locked and marked as a fit's (:class:`privdist.experiments.store.
  ResultsDir`, the lock of ``run``): another command's results are not replaced without ``--overwrite``, two fits
  never write into one directory at once, and a second fit replaces the first one's files rather than mixing with
  them. Files are written atomically (:mod:`privdist._io`).

Every failure is a named error (one ``error: ...`` line, exit 2).
"""

from __future__ import annotations

import contextlib
import inspect
import math

import numpy as np

from .._checks import check_estimate
from ..experiments.validate import DELTA_RANGE, EPSILON_RANGE  # a run's ranges: total epsilon, --curve, --delta
from ..errors import EmptyPartyError, FeatureGroupError, UnknownNameError, ValidationError

__all__ = ["FIT_ALGORITHMS", "check_fit_args", "check_fit_data", "curve_epsilons", "fit_estimate", "fit_output"]

#: Algorithms ``privdist fit`` offers: every one gives a guarantee at ``--epsilon``.
FIT_ALGORITHMS = ("dpmm", "ssp", "dpsgd", "dpadmm", "pvp", "laadmm")
#: Algorithms of the estimators that ``fit`` does not offer, and why.
NOT_OFFERED = {
    "dvp": "its Gaussian variant (the one a total budget calibrates) is a heuristic without a formal guarantee "
           "(spec 6.4), so the fit would only ever report epsilon inf",
    "consensus_admm": "it adds no noise, so the fit would only ever report epsilon inf (the table already shows "
                      "the same algorithm without noise)",
}
# Rough upper-end costs of one estimator fit (measured on 2 shared cores, issue 26): a round costs about 1 ms of
# overhead plus 5e-8 s per data value (pvp and laadmm, the slowest, at 50,000 x 50) plus 2e-8 s per directed link
# of the network (dpsgd, 2,000 parties on a complete network: 0.04 s per round); building the network about
# 3e-7 s per pair of parties; the data are held about six times (loaded, split, scaled, designed, per party).
_ROUND_SECONDS, _VALUE_SECONDS, _LINK_SECONDS, _PAIR_SECONDS = 1e-3, 5e-8, 2e-8, 3e-7


def _count(value, option: str, low: int = 1) -> None:
    from ..learn._base import MAX_COUNT

    if value is not None and not low <= value <= MAX_COUNT:
        raise ValidationError(f"{option} must be from {low} to {MAX_COUNT}, got {value}")


def _number(value: float, option: str, low: float, high: float | None = None) -> None:
    """``low < value`` (and ``value < high``), finite."""
    if math.isfinite(value) and low < value and (high is None or value < high):
        return
    where = f"in ({low:g}, {high:g})" if high is not None else f"> {low:g}"
    raise ValidationError(f"{option} must be a finite number {where}, got {value:g}")


def curve_epsilons(text: str | None) -> list[float]:
    """``--curve "0.25,0.5,1"`` -> ``[0.25, 0.5, 1.0]`` (empty text: no curve); each in :data:`EPSILON_RANGE`."""
    out = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        try:
            eps = float(part)
        except ValueError:
            raise ValidationError(f"--curve takes comma-separated total epsilons, e.g. 0.25,0.5,1; got {part!r}") \
                from None
        if not EPSILON_RANGE[0] <= eps <= EPSILON_RANGE[1]:
            raise ValidationError(f"--curve epsilon {part.strip()} must lie in [{EPSILON_RANGE[0]:g}, "
                                  f"{EPSILON_RANGE[1]:g}]")
        out.append(eps)
    return out


def _check_algorithm(args) -> None:
    from ..network.generators import NETWORK_KINDS, _REGISTRY

    if args.algorithm in NOT_OFFERED:
        raise ValidationError(f"--algorithm {args.algorithm} is not offered by privdist fit: "
                              f"{NOT_OFFERED[args.algorithm]}; choose one of {', '.join(FIT_ALGORITHMS)}")
    if args.algorithm not in FIT_ALGORITHMS:
        raise UnknownNameError("algorithm for privdist fit", args.algorithm, FIT_ALGORITHMS)
    if args.network not in NETWORK_KINDS:
        raise UnknownNameError("network kind", args.network, NETWORK_KINDS)
    if not _takes_n_only(_REGISTRY[args.network][0]):
        params = inspect.signature(_REGISTRY[args.network][0]).parameters
        needs = [p for p, v in params.items() if p not in ("n", "rng") and v.default is inspect.Parameter.empty]
        usable = [k for k in NETWORK_KINDS if _takes_n_only(_REGISTRY[k][0])]
        raise ValidationError(f"--network {args.network} cannot be built from the number of parties alone"
                              f"{' (it needs ' + ', '.join(needs) + ')' if needs else ''}; privdist fit takes "
                              f"{', '.join(usable)}")
    vertical = args.vertical is not None or args.feature_groups is not None
    if args.algorithm in ("dpmm", "ssp") and args.network != "complete" and not vertical:
        raise ValidationError(f"{args.algorithm} gathers the parties' noisy sums at a coordinator and uses no "
                              f"network, so --network {args.network} would have no effect; drop it, or choose a "
                              "decentralized algorithm (--algorithm dpsgd, dpadmm, pvp or laadmm)")


def _takes_n_only(func) -> bool:
    """A network generator that needs nothing but the number of parties (``n``; ``rng`` is supplied)."""
    params = inspect.signature(func).parameters
    return "n" in params and all(p in ("n", "rng") or v.default is not inspect.Parameter.empty
                                 for p, v in params.items())


def _check_trust(args) -> None:
    """``--trust``, ``--colluding`` and ``--dropout-tolerance`` (issue 27) against the algorithm and each other."""
    from ..privacy.plan import secure_section
    from .fit_trust import resolved_trust, trust_options

    # vertical fits (ADMM sharing) take secure aggregation too (issue 39): the coordinator's sum of the shares
    # the plan's own checks (one implementation), made before any data is read
    secure_section(resolved_trust(args), trust_options(args).get("secure_aggregation"), args.epsilon is not None)


def _check_budget_split(args, epsilons: list[float]) -> None:
    """The DP range step (``--scale dp``) shares each total epsilon with training; a share too small to calibrate
    is an error here, before the data are read."""
    from ..privacy.dp_ranges import GAUSSIAN_ALGORITHMS, range_budget

    if args.scale not in (None, "dp"):
        return
    exact = args.algorithm in GAUSSIAN_ALGORITHMS or args.vertical is not None or args.feature_groups is not None
    for eps in epsilons:
        range_budget(eps, args.delta, args.range_share, exact)


def check_fit_args(args) -> None:
    """Check every option of ``privdist fit`` that does not need the data (see the module docstring).

    Raises:
        ValidationError (and its named subclasses): the first bad option, named.
    """
    from ..learn._base import MAX_ROW_NORM
    from .fit_horizontal import parse_target_bounds
    from .fit_release import parse_bounds, parse_categories, parse_classes
    from .fit_vertical import parse_feature_groups

    if not EPSILON_RANGE[0] <= args.epsilon <= EPSILON_RANGE[1]:  # NaN fails too
        raise ValidationError(f"--epsilon (the total budget per party) must lie in [{EPSILON_RANGE[0]:g}, "
                              f"{EPSILON_RANGE[1]:g}], got {args.epsilon:g}")
    if not DELTA_RANGE[0] <= args.delta < DELTA_RANGE[1]:
        raise ValidationError(f"--delta must lie in [{DELTA_RANGE[0]:g}, {DELTA_RANGE[1]:g}) (a larger delta lets a "
                              f"release expose a record with that probability), got {args.delta:g}")
    _check_algorithm(args)
    _check_trust(args)
    for option, value in (("--agents", args.agents), ("--agents-count", args.agents_count),
                          ("--vertical", args.vertical), ("--rounds", args.rounds), ("--draws", args.draws)):
        _count(value, option)
    if args.seed is not None and not 0 <= args.seed < 2**63:
        raise ValidationError(f"--seed must be from 0 to 2**63 - 1, got {args.seed}")
    if args.dirichlet is not None:
        _number(args.dirichlet, "--dirichlet", 0.0)
    _number(args.test_size, "--test-size", 0.0, 1.0)
    _number(args.range_share, "--range-share", 0.0, 1.0)
    if not 0 < args.row_norm <= MAX_ROW_NORM:  # NaN fails too
        raise ValidationError(f"--row-norm must be in (0, {MAX_ROW_NORM:g}], got {args.row_norm:g}")
    if args.feature_groups is not None:
        groups = parse_feature_groups(args.feature_groups)
        empty = [m for m, g in enumerate(groups) if not g]
        if empty:
            raise FeatureGroupError(f"--feature-groups {args.feature_groups!r}: party(ies) {empty} name no column "
                                    "(write 'a,b;c,d': ';' separates the parties, ',' their columns)")
    if args.party_column is not None and args.party_column == args.target:
        raise ValidationError(f"--party-column {args.party_column!r} is the --target: every party would hold one "
                              "class; name the column that says which party holds each row")
    vertical = args.vertical is not None or args.feature_groups is not None
    if getattr(args, "vertical_protocol", "auto") != "auto" and not vertical:
        raise ValidationError(f"--vertical-protocol {args.vertical_protocol} is the protocol of a vertical fit "
                              "(--vertical N or --feature-groups); a horizontal fit has none")
    if args.target_bounds is not None:
        if vertical:
            raise ValidationError("--target-bounds is for a numeric target, and vertical fits are classifiers")
        parse_target_bounds(args.target_bounds)
    parse_bounds(args.bounds)
    parse_categories(args.categories)
    parse_classes(args.classes)
    _check_budget_split(args, [args.epsilon] + curve_epsilons(args.curve))


def _parties(args, n_rows: int, groups) -> tuple[int, np.ndarray | None]:
    if groups is not None:
        groups = np.asarray(groups)
        return int(groups.max()) + 1, np.bincount(groups)
    if args.dirichlet is not None:
        return args.agents_count, None
    return args.agents or 10, None


def check_fit_data(args, ds, X, groups, n_classes: int) -> None:
    """Cross-field checks once the data are loaded, before any training: parties vs rows vs the test split, the
    columns of a vertical split, and the size estimate (``--yes`` above the limits).

    Raises:
        EmptyPartyError: a party with fewer than two rows, more vertical parties than columns.
        ValidationError: a test split too small or too large for the parties; a classification option on a
            numeric target; a regression target holding one value only (issue 40).
        ResourceLimitError: the estimate is above the limits and ``--yes`` was not given.
    """
    from ..privacy.plan import secure_section
    from .fit_trust import resolved_trust, trust_options

    n, d = X.shape
    n_test = math.ceil(args.test_size * n)  # scikit-learn's rounding of a fractional test size
    n_train = n - n_test
    vertical = args.vertical is not None or args.feature_groups is not None
    if args.target_bounds is not None and ds.extras.get("task") != "regression":
        raise ValidationError("--target-bounds is for a numeric (regression) target; this target is a class label")
    target = np.asarray(ds.y)
    if ds.extras.get("task") == "regression" and target.size and np.all(target == target.flat[0]):
        raise ValidationError(f"the target {args.target!r} holds one value only ({target.flat[0]}): there is nothing "
                              "to fit (and R^2 is not defined); choose another target")
    if vertical:
        parties = args.vertical or len(args.feature_groups.split(";"))
        secure = secure_section(resolved_trust(args), trust_options(args).get("secure_aggregation"),
                                args.epsilon is not None)
        if secure is not None:  # honest parties left in every sum of the shares
            secure.shares(parties)
        if parties > d:
            raise EmptyPartyError(f"{parties} vertical parties but only {d} column(s): a party would hold no column")
        if n_test < 1 or n_train < 2:
            raise ValidationError(f"--test-size {args.test_size:g} of {n} rows leaves {n_train} training and {n_test} "
                                  "test rows; a vertical fit needs at least 2 and 1")
    else:
        parties, sizes = _parties(args, n, groups)
        if sizes is not None and sizes.min() < 2:
            from ..data.names import name_list, party_labels

            small = party_labels(ds.extras.get("party_names"), np.flatnonzero(sizes < 2))
            raise EmptyPartyError(f"{len(small)} part{'y holds' if len(small) == 1 else 'ies hold'} fewer than 2 "
                                  f"rows ({name_list(small)}): each party needs a training and a test row; merge "
                                  "small parties or leave them out of the file")
        if 2 * parties > n:
            raise EmptyPartyError(f"{parties} parties but {n} rows: each party needs at least 2 (a training and a "
                                  "test row); use fewer parties (--agents)")
        if n_test < parties or n_train < parties:
            which = "test" if n_test < parties else "training"
            raise ValidationError(f"--test-size {args.test_size:g} of {n} rows gives {n_train} training and {n_test} "
                                  f"test rows, fewer {which} rows than the {parties} parties: the split is stratified "
                                  "by party (each party keeps a training and a test row); use fewer parties or "
                                  f"a {'larger' if which == 'test' else 'smaller'} --test-size")
        secure = secure_section(resolved_trust(args), trust_options(args).get("secure_aggregation"),
                                args.epsilon is not None)
        if secure is not None:  # honest parties left in every sum
            secure.shares(parties)
    nbytes, seconds = fit_estimate(args, n, d, parties, n_classes, vertical)
    rounds = _rounds(args, ds.extras.get("task"), vertical)
    check_estimate("this fit", nbytes, seconds, args.yes,
                   f"{n} rows x {d} columns, {parties} parties, {rounds} rounds, {_fits(args)} fit(s) x "
                   f"{n_classes if n_classes > 2 else 1} model(s)")


def _rounds(args, task: str | None, vertical: bool) -> int:
    """The rounds of each fit: ``--rounds``, else the estimators' defaults."""
    if args.rounds is not None:
        return args.rounds
    if vertical:
        return 50
    if args.algorithm == "ssp":
        return 2
    if args.algorithm == "dpmm":
        return 20 if task == "classification" else 2
    return 100


def _fits(args) -> int:
    """Fits of the private model: the release, the same without noise, the draws and the curve's refits (upper
    end: every draw and refit counted)."""
    return 1 + (args.draws or 3) + len(curve_epsilons(args.curve))


def fit_estimate(args, n: int, d: int, parties: int, n_classes: int, vertical: bool) -> tuple[float, float]:
    """``(bytes, seconds)`` of a fit, from public sizes only (rows, columns, parties, rounds, fits, class models);
    rough upper-end numbers (see the constants above)."""
    rounds = _rounds(args, "classification" if n_classes else "regression", vertical)
    links = parties * (parties - 1) if args.network == "complete" else 4 * parties
    models = n_classes if n_classes > 2 else 1
    per_fit = (_PAIR_SECONDS * parties * parties + rounds * (_ROUND_SECONDS + _VALUE_SECONDS * n * d
                                                                + _LINK_SECONDS * links))
    nbytes = 6.0 * 8 * n * max(d, 1) + 3.0 * 12 * links + 8.0 * 12 * parties * max(d, 1) * models
    return nbytes, per_fit * _fits(args) * models


@contextlib.contextmanager
def fit_output(args):
    """The locked, marked ``--out`` directory of a fit for the duration of the ``with`` block (nothing without
    ``--out``); its completion marker is written when the block ends without an error (issue 40).

    Raises:
        OutputDirError: ``--out`` holds another command's results (without ``--overwrite``) or is not a directory.
        ResultsLockedError: another live privdist process writes into it.
    """
    if not args.out:
        yield None
        return
    from ..experiments.store import FIT_EXPERIMENT, ResultsDir

    settings = {k: v for k, v in vars(args).items() if k != "func"}
    with ResultsDir(args.out, FIT_EXPERIMENT, settings, overwrite=args.overwrite, subdirs=(),
                    defer_clear=True) as store:
        yield store  # the fit calls store.start_writing() before its files: a fit that fails first removes nothing
        store.start_writing()
        store.mark_complete()  # after every file of the fit; readers refuse the directory without it (issue 40)

