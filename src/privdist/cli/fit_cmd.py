"""``privdist fit``: train a private distributed model on your own data file(s).

``privdist fit data.csv --target label --agents 10 --epsilon 1 --delta 1e-5 --out model_dir`` splits the rows
among 10 parties, holds out a test split, fits the private distributed model (``--epsilon``/``--delta`` are the
TOTAL budget per party for the whole run) and prints its test accuracy and log loss (RMSE and R^2 for a numeric
target; three or more classes: one-vs-rest on shares of the budget, :mod:`privdist.learn.multiclass`) beside the
same algorithm without noise, a centralized (pooled, non-private) model, each party's local-only model and the
majority class (mean predictor), then the per-party privacy report and warnings that name the likely cause of a poor
private model (:mod:`privdist.cli.fit_diagnose`). With the owner-only evaluation the private model is shown as mean
+- std over ``--draws`` noise draws; the released model is the first draw. The rows-split path is
:mod:`privdist.cli.fit_horizontal`. ``--vertical N`` / ``--feature-groups SPEC`` instead split the COLUMNS
among the parties (vertical federated learning on ADMM sharing, :mod:`privdist.cli.fit_vertical`). ``--out`` receives
the releases ``model.json`` (:mod:`privdist.learn.model_io`) and ``results.json``, and, with ``--evaluation`` (or
``--seed``), the owner-only ``evaluation.json`` and ``privacy_utility.png``; what each file is and why is
:mod:`privdist.cli.fit_release` (issue 24). Every file is written atomically.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ValidationError
from .fit_release import (draws_spend, parse_bounds, parse_categories, parse_classes, release_boundary,
                          same_epsilon, write_fit)

__all__ = ["register", "fit_main", "PARTY_ROWS"]

#: The console's per-party tables list each party up to this many parties, and summarise beyond (issue 39).
PARTY_ROWS = 10


def register(sub) -> None:
    """Add the ``fit`` sub-command."""
    from .fit_trust import add_vertical_protocol

    p = sub.add_parser(
        "fit", help="train a private distributed model on your own CSV/Parquet/svmlight/numpy data",
        description="Fit a differentially private distributed linear model on DATA (one file, or one file per "
        "party) and compare it with non-private, centralized and local-only models on a held-out test split. "
        "--epsilon/--delta are the TOTAL privacy budget of each party for the whole run.")
    p.add_argument("data", nargs="+", metavar="DATA", help="data file(s): .csv, .tsv, .parquet, .svm/.libsvm, "
                   ".npy, .npz; several files = one per party; 'adult' = the UCI Adult data shipped in privdist")
    p.add_argument("--target", help="label column (tables); column index for .npy; array name for .npz")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--agents", type=int, help="number of parties: rows split at random, equally (default 10)")
    who.add_argument("--party-column", help="column naming each row's party (natural silos)")
    who.add_argument("--dirichlet", type=float, metavar="ALPHA",
                     help="label-skewed parties: Dirichlet(ALPHA) class proportions (with --agents-count)")
    who.add_argument("--vertical", type=int, metavar="N",
                     help="vertical: N parties hold an even, contiguous split of the COLUMNS; the labels stay "
                     "with a coordinator; private ADMM sharing (S2) in its clipped output mode")
    who.add_argument("--feature-groups", metavar="SPEC",
                     help="vertical with chosen columns: 'a,b;c,d' = party 0 holds a and b, party 1 c and d "
                     "(';' separates parties; an attribute name takes its one-hot columns 'name=...'; integers are "
                     "column indices); every column in exactly one group")
    add_vertical_protocol(p)
    p.add_argument("--agents-count", type=int, default=10, help="parties of --dirichlet (default 10)")
    p.add_argument("--algorithm", default="dpmm", help="dpmm (default; a coordinator, no network), ssp (one-shot "
                   "sufficient statistics, a coordinator), dpsgd, dpadmm, pvp, laadmm (horizontal; vertical runs "
                   "always use admm_sharing)")
    p.add_argument("--trust", choices=("auto", "local", "secure_aggregation"), default="auto",
                   help="auto (default): secure_aggregation for dpmm and ssp, local otherwise; secure_aggregation: "
                        "the sums (dpmm's and ssp's, or the sum of the vertical parties' shares) go through secure "
                        "aggregation with distributed Skellam noise (central-DP noise; assumes an honest-but-curious "
                        "aggregator, --colluding parties at most); local: each party's release carries all its "
                        "noise, no one trusted (docs/secure_aggregation.md)")
    p.add_argument("--colluding", type=int, default=0, help="with --trust secure_aggregation: parties assumed to "
                   "collude with the aggregator (their noise shares do not count; default 0)")
    p.add_argument("--dropout-tolerance", type=float, default=0.0, help="with --trust secure_aggregation: fraction "
                   "of parties whose noise shares may be missing in a round with the budget still met (default 0)")
    p.add_argument("--epsilon", type=float, required=True, help="total epsilon per party for the whole run")
    p.add_argument("--delta", type=float, required=True, help="total delta per party")
    p.add_argument("--network", default="complete", help="complete (default), ring, star, ...")
    p.add_argument("--rounds", type=int, help="communication rounds (default: dpmm 20 for classification and 2 for "
                   "regression, ssp 2, other algorithms 100; 50 with --vertical/--feature-groups)")
    p.add_argument("--task", choices=("auto", "classification", "regression"), default="auto")
    p.add_argument("--drop", action="append", metavar="COL", help="a column of the file(s) to leave out of the "
                   "features, such as a row id (repeatable)")
    p.add_argument("--onehot", action="store_true", help="one-hot encode non-numeric feature columns (their "
                   "category lists from --categories are public; lists read from the data make the report "
                   "guaranteed: false)")
    p.add_argument("--categories", action="append", metavar="COL=a,b,c|FILE",
                   help="PUBLIC category list of a text column, or of a numeric column of codes (repeatable; the "
                   "column is one-hot encoded, implies --onehot for it), or a .json/.toml file {col: [values]}")
    p.add_argument("--bounds", action="append", metavar="COL=LO:HI|FILE",
                   help="PUBLIC bounds of a numeric column (repeatable), or a .json/.toml file {col: [lo, hi]}; "
                   "columns are mapped into [-1, 1] (values outside clipped) without spending budget")
    p.add_argument("--target-bounds", metavar="LO:HI", help="PUBLIC bounds of a numeric target (regression): it "
                   "is mapped into [-1, 1] for training (values outside clipped) and the model mapped back; a negative LO: "
                   "--target-bounds=-5:5")
    p.add_argument("--classes", metavar="NAMES", help="PUBLIC class names of the target, comma-separated as the "
                   "file writes them: two as NEG,POS (negative first), three or more as A,B,C,... (fitted one-vs-rest, "
                   "horizontal only); without it the names are read from the data (guaranteed: false) and the report "
                   "names the option to state")
    p.add_argument("--scale", choices=("dp", "none", "bounds", "data"), default=None,
                   help="dp (default): columns without public --bounds (one-hot columns of public categories and "
                   "the shipped Adult's documented bounds are public) get bounds from a DP range step spending "
                   "--range-share of the budget; a numeric target too; none: features as given (rows clipped to "
                   "--row-norm); bounds: the public --bounds only (other columns assumed in [-1, 1]); data: min/max "
                   "read from the training data (NOT private: the report says guaranteed: false)")
    p.add_argument("--range-share", type=float, default=0.1,
                   help="share of each party's total budget spent by the DP range step of --scale dp (default 0.1; "
                        "a step that would be swamped at it takes the smallest larger share of 0.2 .. 0.5 that is "
                        "not, a regression target weighted by 2 there, decided from public sizes and recorded)")
    p.add_argument("--row-norm", type=float, default=1.0, help="public bound: rows clipped to this norm")
    p.add_argument("--test-size", type=float, default=0.2, help="held-out fraction (default 0.2)")
    p.add_argument("--curve", default="0.25,0.5,1,2,4",
                   help="total epsilons of the privacy-utility plot (comma-separated; empty: no plot); an "
                   "owner-only evaluation, fitted only when it is written")
    p.add_argument("--evaluation", action="store_true",
                   help="write the owner-only evaluation.json and privacy_utility.png (test metrics and refits, "
                   "not covered by the guarantee); always written with --seed")
    p.add_argument("--draws", type=int, metavar="N",
                   help="noise draws of the private model for the owner-only evaluation: the table shows mean +- "
                   "std over N fits; the released model is the first (default 3 for a cheap fit, else 1; secure "
                   "mode without --evaluation, or a fit that releases nothing noisy: 1)")
    p.add_argument("--seed", type=int, help="research mode: seed the split and the noise (not for release)")
    p.add_argument("--split-seed", type=int, help="seed of the random parties (--agents, --dirichlet) and of the "
                                                   "train/test split (default: --seed, else 0): the same split on "
                                                   "every run, the noise fresh (owner-only; never the noise)")
    p.add_argument("--out", help="directory for model.json, results.json and privacy_utility.png (locked while the "
                   "fit runs; a former fit's files there are replaced)")
    p.add_argument("--overwrite", action="store_true", help="replace another command's results in --out")
    p.add_argument("--yes", action="store_true",
                   help="fit even if the estimated memory or time is above the limits (as privdist run --yes)")
    p.set_defaults(func=fit_main)


def _load(args):
    """``(dataset, groups)``: ``groups`` None for a generated split (made later); parties from the data (a party
    column, one file each) are named in ``extras["party_names"]`` (party k = name k) for the messages
    (:mod:`privdist.data.names`) and the owner-only per-party rows."""
    from ..data import column_groups, load_file, load_files

    if args.data == ["adult"] and not os.path.exists("adult"):  # the UCI Adult files shipped in the package
        from ..data.adult import load_adult_public

        if args.party_column:
            raise ValidationError("the shipped 'adult' data has no party column: use --agents, --dirichlet, "
                                  "--vertical or --feature-groups")
        if args.drop:
            raise ValidationError("--drop works on your own files; the shipped 'adult' data keeps all its columns")
        return load_adult_public(), None
    kwargs = {"encode": "onehot" if args.onehot or args.categories else "none", "task": args.task,
              "categories": parse_categories(args.categories) or None, "classes": parse_classes(args.classes),
              "drop": tuple(args.drop or ())}
    if len(args.data) > 1:
        if any(v is not None for v in (args.party_column, args.agents, args.dirichlet, args.vertical,
                                       args.feature_groups)):
            raise ValidationError("several DATA files are one party each: do not combine them with --agents, "
                                  "--party-column, --dirichlet, --vertical or --feature-groups")
        ds, groups = load_files(args.data, args.target, **kwargs)
        # one file per party: named by its file name, or by its path when two files share a name
        names = [os.path.basename(str(f)) for f in args.data]
        ds.extras["party_names"] = names if len(set(names)) == len(names) else [str(f) for f in args.data]
        return ds, groups
    ds = load_file(args.data[0], args.target, party_column=args.party_column, **kwargs)
    if args.party_column:
        groups, names = column_groups(ds.extras["party"])
        ds.extras["party_names"] = [str(n) for n in names]  # party k = the k-th sorted value of the party column
        return ds, groups
    return ds, None


def _onehot_bounds(ds) -> dict:
    """``{one-hot column: (-1, 1)}``: columns ``"name=value"`` of a one-hot encoded attribute are in {0, 1} by
    construction (public whatever the category list; a list read from the data is reported on its own), so they
    are kept as they are and spend no budget."""
    attrs = {str(c) for s in ds.extras.get("preprocessing", []) if str(s.get("step", "")).startswith("onehot")
             for c in s.get("columns", [])}
    return {n: (-1.0, 1.0) for n in (ds.feature_names or ()) if str(n).partition("=")[0] in attrs and "=" in str(n)}


def _scaling(args, ds, n_features: int):
    """``(scale, bounds)`` of the fit. Default ``"dp"``: public ``--bounds`` (or the shipped Adult's documented
    bounds) and one-hot columns are mapped without budget, every other column (and a numeric target) by the DP range
    step (bounds: a (2, d) array, NaN = no public bound); nothing to estimate = no step, nothing spent."""
    from ..data.bounds import bounds_array, partial_bounds

    stated = parse_bounds(args.bounds) or ds.extras.get("public_bounds") or {}
    scale = args.scale or "dp"
    if scale == "dp":
        return scale, partial_bounds({**_onehot_bounds(ds), **stated}, ds.feature_names, n_features)
    if scale == "bounds":
        if not stated:
            raise ValidationError("--scale bounds needs public bounds: --bounds COL=LO:HI (or a file)")
        return scale, bounds_array(stated, ds.feature_names, n_features)
    if stated and args.bounds:
        raise ValidationError(f"--bounds conflicts with --scale {scale}: public bounds are used with --scale bounds")
    return scale, None


def fit_main(args) -> int:
    """``privdist fit``: every option checked first (:mod:`privdist.cli.fit_check`), ``--out`` locked for the whole
    fit, the data checked against the options before any training."""
    from .fit_check import check_fit_args, fit_output

    check_fit_args(args)
    with fit_output(args) as store:
        return _fit(args, store)


def _fit(args, store=None) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ..learn._base import with_preprocessing
    from .fit_check import check_fit_data, curve_epsilons
    from .fit_common import FitProgress, default_draws
    from .fit_diagnose import data_warnings, stated_warnings, target_hints, tiny_parties, utility_warnings

    console = Console()
    ds, groups = _load(args)
    X, y = ds.X, ds.y
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    secure = args.seed is None
    # the parties and the split are reproducible (--split-seed); the noise is the estimators' (fresh OS entropy
    # unless --seed): a rerun compares the same split
    seed = args.split_seed if args.split_seed is not None else (args.seed if args.seed is not None else 0)
    if seed < 0:
        raise ValidationError(f"--split-seed must be >= 0, got {seed}")
    rng = np.random.default_rng(seed)
    task = ds.extras["task"]
    n_classes = len(ds.extras.get("classes") or []) if task == "classification" else 0
    check_fit_data(args, ds, X, groups, n_classes)
    scale, bounds = _scaling(args, ds, X.shape[1])
    vertical = args.vertical is not None or args.feature_groups is not None
    if args.rounds is None:
        args.rounds = 50 if vertical else None
    evaluate = args.evaluation or not secure
    eps_list = curve_epsilons(args.curve)
    # public sizes only: rows, columns, rounds, the number of class models
    n_train = int(round(X.shape[0] * (1 - args.test_size)))
    draws = (args.draws or default_draws(n_train, X.shape[1], args.rounds or 20, n_classes if n_classes > 2 else 1)
             if evaluate else 1)
    refits = [e for e in eps_list if not same_epsilon(e, args.epsilon)] if evaluate and args.out else []
    with FitProgress(2 + (draws - 1) + len(refits)) as progress:
        if vertical:
            from .fit_vertical import fit_vertical

            fitted = fit_vertical(args, ds, X, y, seed, scale, bounds, progress=progress)
            what = f"{fitted.n_parties} parties holding column groups (vertical), {fitted.private.protocol_}"
        else:
            from .fit_horizontal import fit_horizontal

            fitted = fit_horizontal(args, ds, X, y, groups, seed, rng, scale, bounds, progress=progress)
            what = f"{fitted.n_parties} parties, {args.algorithm}" + (
                f", one-vs-rest over {n_classes} classes" if n_classes > 2 else "")
        private, rows, local = fitted.private, fitted.rows, fitted.local
        ledger = private.ledger_
        if args.draws is None and not any(ledger.n_releases(k) for k in range(ledger.n_agents)):
            draws = 1  # nothing noisy released (the pool on public bounds): every draw would be this model
        draw_metrics = [rows[next(iter(rows))]]  # draw 0 is the released model
        draw_ledgers = [private.ledger_]  # what each draw released, composed for the spread's exposure
        for i in range(1, draws):  # owner-only: further noise draws at the same budget, for the spread
            model = fitted.fit(args.epsilon, i)
            draw_metrics.append(fitted.metrics(model))
            draw_ledgers.append(model.ledger_)
        if draws > 1:
            rows[next(iter(rows))] = _spread(draw_metrics)
        curve = []
        for eps in eps_list if evaluate and args.out else []:  # owner-only refits, computed only when written
            curve.append({"epsilon": eps, **(draw_metrics[0] if same_epsilon(eps, args.epsilon)
                                              else fitted.metrics(fitted.fit(eps)))})
    K = fitted.n_parties
    report = dict(private.privacy_report_, per_agent=[dict(a) for a in private.privacy_report_["per_agent"]])
    with_preprocessing(report, ds.extras.get("preprocessing", []) + private.privacy_report_["preprocessing"])
    boundary, exposures = release_boundary(vertical=vertical, n_parties=K, evaluation=evaluate and bool(args.out),
                                           curve=eps_list, epsilon=args.epsilon, draws=draws, delta=args.delta,
                                           spend=draws_spend(draw_ledgers, args.delta) if draws > 1 else None)
    report["exposures"] = list(report.get("exposures", [])) + exposures
    report["release_boundary"] = boundary
    private.privacy_report_ = report  # the model file carries the report of what it is

    party_names = None if vertical else ds.extras.get("party_names")  # vertical parties hold columns, not groups
    _print_table(console, ds, what, args, fitted, draws)
    _print_privacy(console, report, args, party_names)
    data_notes = data_warnings(fitted.X_train, scale, None if vertical else args.row_norm,
                               fitted.sizes, ds.feature_names, natural=groups is not None, party_names=party_names)
    data_notes += target_hints(ds, y, args.target_bounds) + stated_warnings(ds)
    diagnosed = utility_warnings(rows, task, data_notes, epsilon=args.epsilon,
                                 rounds=args.rounds or private.history_.get("rounds"),
                                 n_classes=max(n_classes, 2))
    notes = [n for n in fitted.notes if not (diagnosed and "no better than" in n)]  # the diagnosis replaces it
    for text in notes + data_notes + diagnosed:
        console.print(f"[yellow]warning:[/yellow] {escape(text)}")  # names in [brackets] are not markup
    if args.draws and args.draws > 1 and not evaluate:
        console.print("note: --draws applies to the owner-only evaluation (--evaluation or --seed): one draw fitted")

    results = {"data": {"files": [str(p) for p in args.data], "rows": int(X.shape[0]), "features": int(X.shape[1]),
                        "task": task, "classes": ds.extras.get("classes"), "parties": K,
                        "preprocessing": report["preprocessing"]},
               "settings": {k: v for k, v in vars(args).items() if k != "func"},
               "privacy": report, "plan": private.privacy_plan_.to_dict(), "release_boundary": boundary,
               "notes": ["model.json and results.json are the release: covered by the printed guarantee (see "
                         "privacy.guaranteed); the owner-only outputs are listed in release_boundary.owner_only and "
                         "privacy.exposures"],
               "noise": report.get("noise")}
    evaluation = None
    if evaluate:
        evaluation = {"owner_only": "NOT A RELEASE: metrics computed without noise from the data (held-out rows, "
                                    "each party's rows); keep with the data holder",
                      "test": rows, "local_only": local, "privacy_utility": curve,
                      "per_party": getattr(fitted, "parties", None),
                      "draws": {"n": draws, "released": 0, "metrics": draw_metrics,
                                "note": "the released model is draw 0; the others are owner-only refits at the "
                                        "same budget (see privacy.exposures)"},
                      "warnings": notes + data_notes + diagnosed,
                      "tiny_parties": tiny_parties(fitted.sizes, X.shape[1], party_names) if fitted.sizes is not None
                      else [],
                      "train_score": getattr(private, "train_score_", None),
                      "clipping": getattr(private, "clipping_", None)}
    if args.out:
        if store is not None:
            store.start_writing()  # the former fit's files are removed only now (issue 39)
        names = write_fit(args.out, private, ds, results, evaluation, curve, task, rows, local=local)
        console.print(f"wrote {args.out}: " + ", ".join(names)
                      + ("" if evaluate else " (owner-only evaluation.json not written: --evaluation)"))
    if not secure:
        console.print("[yellow]research mode (--seed): noise is seeded; not for release[/yellow]")
    return 0


def _spread(metrics: list[dict]) -> dict:
    """Mean, standard deviation (``<metric>_std``) and count of the metrics of several noise draws."""
    out = {}
    for key in metrics[0]:
        if any(m[key] is None for m in metrics):  # not computable (e.g. R^2 of a constant test target)
            out[key], out[f"{key}_std"] = None, None
            continue
        values = np.array([m[key] for m in metrics], dtype=float)
        out[key] = float(np.mean(values))
        out[f"{key}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    out["draws"] = len(metrics)
    return out


def _cell(m: dict, key: str) -> str:
    value = m.get(key)
    if value is None or not np.isfinite(value):  # not computable (stated in evaluation.json), never "nan"
        return "n/a"
    if m.get(f"{key}_std") is not None:
        return f"{value:.3f} ± {m[f'{key}_std']:.3f}"
    return f"{value:.3f}"


def _print_table(console, ds, what, args, fitted, draws: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ..data.names import party_label

    rows, local = fitted.rows, fitted.local
    keys = [k for k in next(iter(rows.values())) if not k.endswith("_std") and k != "draws"]
    spread = f"; private: mean ± std over {draws} noise draws (the release is one of them)" if draws > 1 else ""
    table = Table(title=f"{ds.name}: {what}, total epsilon {args.epsilon}, delta {args.delta} per party; test "
                        f"split {fitted.n_test} rows (owner-only evaluation, not covered by the guarantee){spread}")
    table.add_column("model")
    for key in keys:
        table.add_column(key, justify="right")
    for name, m in rows.items():
        table.add_row(name, *[_cell(m, k) for k in keys])
    if len(local) > PARTY_ROWS:  # one row for many parties: each alone is in evaluation.json
        rows_held = [m["rows"] for m in local if "rows" in m]
        held = f", {min(rows_held)} to {max(rows_held)} rows" if rows_held else ""
        table.add_row(f"each party alone: median (min to max) over {len(local)} parties{held}",
                      *[_range_cell(local, k) for k in keys])
    for m in local if len(local) <= PARTY_ROWS else ():
        held = f"{m['rows']} rows" if "rows" in m else f"its {m['columns']} columns, with the labels"
        who = party_label(ds.extras.get("party_names") if "rows" in m else None, m["party"])
        table.add_row(escape(f"{who} alone ({held})"), *[_cell(m, k) for k in keys])
    console.print(table)
    if getattr(fitted, "parties", None) is not None:
        console.print(_parties_summary(fitted.parties))


def _parties_summary(parties: dict) -> str:
    """Three lines whatever the number of parties: for how many parties the personal model and the global private
    model are at least as good as the party alone on its own test rows, and the mean gain (issue 39)."""
    metric, summary = parties["metric"], parties["summary"]
    unit = "accuracy" if metric == "accuracy" else "RMSE"
    lines = [f"per party, on its own test rows ({metric}; owner-only, not covered by the guarantee):"]
    for label, key in (("personalised model", "personal"), ("global private model", "global")):
        s, large = summary["all"], summary["large"]
        if not s["parties"]:
            lines.append(f"  {label}: no party has test rows")
            continue
        text = (f"  {label}: at least as good as alone for {s[f'{key}_gains']} of {s['parties']} parties, mean gain "
                f"{s[f'mean_gain_{key}']:+.3f} {unit}")
        if large["parties"] and large["parties"] != s["parties"]:
            text += (f" (parties with >= {summary['min_test_rows']} test rows: {large[f'{key}_gains']} of "
                     f"{large['parties']}, {large[f'mean_gain_{key}']:+.3f})")
        lines.append(text)
    return "\n".join(lines)


def _range_cell(metrics: list[dict], key: str) -> str:
    """``median (min to max)`` of a metric over the parties where it is a finite number (a one-class party's log loss
    is not), or ``n/a``."""
    values = np.array([m[key] for m in metrics if isinstance(m.get(key), (int, float))], dtype=float)
    values = values[np.isfinite(values)]
    if not values.size:
        return "n/a"
    return f"{np.median(values):.3f} ({values.min():.3f} to {values.max():.3f})"


def _party_rows(per_agent: list[dict], party_names) -> list[tuple[str, list[str]]]:
    """The per-party privacy table's rows: one per party up to ``PARTY_ROWS`` parties (named by
    :func:`privdist.data.names.party_label`), else one per distinct guarantee (``all 65 parties`` when they share
    it; a few names and how many more otherwise)."""
    from ..data.names import name_list, party_labels

    cells = [[_eps(v) if v is not None else "n/a" for v in (a["guarantee_pld"], a["guarantee_rdp"], a["paper_claim"])]
             for a in per_agent]
    labels = party_labels(party_names, [a["agent"] for a in per_agent])
    if len(per_agent) <= PARTY_ROWS:
        return list(zip(labels, cells))
    groups: dict[tuple, list[str]] = {}
    for label, row in zip(labels, cells):
        groups.setdefault(tuple(row), []).append(label)
    if len(groups) == 1:
        return [(f"all {len(per_agent)} parties", cells[0])]
    return [(f"{len(who)} parties: {name_list(who)}", list(row)) for row, who in groups.items()]


def _eps(value: float) -> str:
    """An epsilon with 4 decimals, or 3 significant digits below 0.001 (1e-05 never prints as 0.0000)."""
    return f"{value:.4f}" if value == 0 or not np.isfinite(value) or abs(value) >= 1e-3 else f"{value:.3g}"


#: The per-party table's guarantee columns for each ``guarantee_accountant`` of the report: the Skellam sums have an
#: RDP bound and no published PLD, so both columns hold that bound (:mod:`privdist.privacy.accountants`).
_GUARANTEE_COLUMNS = {"pld": ("guarantee (PLD)", "RDP cross-check"),
                      "skellam_rdp": ("guarantee (Skellam RDP)", "RDP (same bound)"),
                      "mixed": ("guarantee (PLD or Skellam RDP)", "RDP")}
_ACCOUNTANT_LABEL = {"pld": "PLD", "skellam_rdp": "Skellam RDP", "mixed": "PLD or Skellam RDP per party"}


def _print_privacy(console, report, args, party_names=None) -> None:
    from rich.markup import escape
    from rich.table import Table

    by = report.get("guarantee_accountant", "pld")  # what computed the guarantee, read from the ledger's events
    t = Table(title=f"privacy per party (requested total: epsilon {args.epsilon}, delta {args.delta}); "
                    f"guaranteed = {report['guaranteed']}")
    for col in ("party", *_GUARANTEE_COLUMNS[by], "paper's claim"):
        t.add_column(col, justify="right")
    for label, cells in _party_rows(report["per_agent"], party_names):
        t.add_row(escape(label), *cells)
    console.print(t)
    accountant = _ACCOUNTANT_LABEL[by]
    console.print(f"guarantee epsilon = {_eps(report['epsilon'])} ({accountant}, delta {report['delta']}); noise: "
                  f"{(report.get('noise') or {}).get('mode', '?')}")
    if "messages_epsilon" in report:
        console.print(f"  [red]not a guarantee:[/red] the messages alone spend {_eps(report['messages_epsilon'])}, "
                      "but preprocessing read the data without DP (below)")
    if report.get("trust"):
        console.print(f"  trust: {report['trust']['model']}: assumes {report['trust']['assumes']}")
    for text in report["assumptions"]:
        console.print(f"  assumption: {text}")
    for text in report.get("exposures", []):
        console.print(f"  [yellow]exposure (no DP event):[/yellow] {text}")
    if report.get("scope"):
        console.print(f"  scope: {report['scope']}")
    for step in report["preprocessing"]:
        kind = "public" if step["private"] else step.get("note") or "NOT PRIVATE"  # the note says what to state
        if "share" in step:  # the DP range step: a release inside the guarantee
            kind = (f"DP release, share {step['share']:g} of the budget" if step.get("epsilon") is not None
                    else "no noise (non-private fit)") + (f"; no range estimated for {len(step['fallback'])} "
                                                          "column(s), kept in [-1, 1]" if step["fallback"] else "")
        console.print(f"  preprocessing: {step['step']} ({kind})")
