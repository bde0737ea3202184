"""``privdist fit``: train a private distributed model on your own data file(s).

``privdist fit data.csv --target label --agents 10 --epsilon 1 --delta 1e-5 --out model_dir`` splits the rows
among 10 parties, holds out a test split, fits the private distributed model (``--epsilon``/``--delta`` are the
TOTAL budget per party for the whole run) and prints its test accuracy and log loss (RMSE for a numeric target)
beside the same algorithm without noise, a centralized (pooled, non-private) model and each party's local-only
model, then the per-party privacy report. ``--vertical N`` / ``--feature-groups SPEC`` instead split the COLUMNS
among the parties (vertical federated learning on ADMM sharing, :mod:`privdist.cli.fit_vertical`). ``--out`` receives
the releases ``model.json`` (:mod:`privdist.learn.model_io`) and ``results.json``, and, with ``--evaluation`` (or
``--seed``), the owner-only ``evaluation.json`` and ``privacy_utility.png``; what each file is and why is
:mod:`privdist.cli.fit_release` (issue 24). Every file is written atomically.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import EmptyPartyError, ValidationError
from .fit_common import fit_with_notes, held_out_metrics, majority_score
from .fit_release import parse_bounds, parse_categories, parse_classes, release_boundary, write_fit

__all__ = ["register", "fit_main"]


def register(sub) -> None:
    """Add the ``fit`` sub-command."""
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
    p.add_argument("--agents-count", type=int, default=10, help="parties of --dirichlet (default 10)")
    p.add_argument("--algorithm", default="dpmm", help="dpmm (default; complete network), dpsgd, dpadmm, pvp, "
                   "dvp, laadmm (horizontal; "
                   "vertical runs always use admm_sharing)")
    p.add_argument("--epsilon", type=float, required=True, help="total epsilon per party for the whole run")
    p.add_argument("--delta", type=float, required=True, help="total delta per party")
    p.add_argument("--network", default="complete", help="complete (default), ring, star, ...")
    p.add_argument("--rounds", type=int, help="communication rounds (default: dpmm 20 for classification and 2 for regression, "
                   "other algorithms 100; 50 with --vertical/--feature-groups)")
    p.add_argument("--task", choices=("auto", "classification", "regression"), default="auto")
    p.add_argument("--onehot", action="store_true", help="one-hot encode non-numeric feature columns (their "
                   "category lists from --categories are public; lists read from the data make the report "
                   "guaranteed: false)")
    p.add_argument("--categories", action="append", metavar="COL=a,b,c|FILE",
                   help="PUBLIC category list of a text column (repeatable), or a .json/.toml file {col: [values]}")
    p.add_argument("--bounds", action="append", metavar="COL=LO:HI|FILE",
                   help="PUBLIC bounds of a numeric column (repeatable), or a .json/.toml file {col: [lo, hi]}; "
                   "columns are mapped into [-1, 1] (values outside clipped) without spending budget")
    p.add_argument("--classes", metavar="NEG,POS", help="PUBLIC class names of the target (negative, positive)")
    p.add_argument("--scale", choices=("dp", "none", "bounds", "data"), default=None,
                   help="dp (default): columns without public --bounds (one-hot columns of public categories and "
                   "the shipped Adult's documented bounds are public) get bounds from a DP range step spending "
                   "--range-share of the budget; a numeric target too; none: features as given (rows clipped to "
                   "--row-norm); bounds: the public --bounds only (other columns assumed in [-1, 1]); data: min/max "
                   "read from the training data (NOT private: the report says guaranteed: false)")
    p.add_argument("--range-share", type=float, default=0.1,
                   help="share of each party's total budget spent by the DP range step of --scale dp (default 0.1)")
    p.add_argument("--row-norm", type=float, default=1.0, help="public bound: rows clipped to this norm")
    p.add_argument("--test-size", type=float, default=0.2, help="held-out fraction (default 0.2)")
    p.add_argument("--curve", default="0.25,0.5,1,2,4",
                   help="total epsilons of the privacy-utility plot (comma-separated; empty: no plot); an "
                   "owner-only evaluation, fitted only when it is written")
    p.add_argument("--evaluation", action="store_true",
                   help="write the owner-only evaluation.json and privacy_utility.png (test metrics and refits, "
                   "not covered by the guarantee); always written with --seed")
    p.add_argument("--seed", type=int, help="research mode: seed the split and the noise (not for release)")
    p.add_argument("--out", help="directory for model.json, results.json and privacy_utility.png")
    p.set_defaults(func=fit_main)


def _load(args):
    from ..data import column_groups, load_file, load_files

    if args.data == ["adult"] and not os.path.exists("adult"):  # the UCI Adult files shipped in the package
        from ..data.adult import load_adult_public

        if args.party_column:
            raise ValidationError("the shipped 'adult' data has no party column: use --agents, --dirichlet, "
                                  "--vertical or --feature-groups")
        return load_adult_public(), None
    kwargs = {"encode": "onehot" if args.onehot else "none", "task": args.task,
              "categories": parse_categories(args.categories) or None, "classes": parse_classes(args.classes)}
    if len(args.data) > 1:
        if args.party_column or args.agents or args.dirichlet or args.vertical or args.feature_groups:
            raise ValidationError("several DATA files are one party each: do not combine them with --agents, "
                                  "--party-column, --dirichlet, --vertical or --feature-groups")
        return load_files(args.data, args.target, **kwargs)
    ds = load_file(args.data[0], args.target, party_column=args.party_column, **kwargs)
    if args.party_column:
        return ds, column_groups(ds.extras["party"])[0]
    return ds, None


def _sk_model(task, alpha, n_rows):
    from sklearn.linear_model import LogisticRegression, Ridge

    if task == "classification":  # same objective scale: mean loss + alpha ||w||^2  ->  C = 1 / (2 alpha n)
        return LogisticRegression(C=1.0 / max(2 * alpha * n_rows, 1e-12), max_iter=2000)
    return Ridge(alpha=alpha * n_rows)


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
    from rich.console import Console
    from rich.table import Table

    from ..learn._base import with_preprocessing

    console = Console()
    ds, groups = _load(args)
    X, y = ds.X, ds.y
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    secure = args.seed is None
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
    rng = np.random.default_rng(seed)
    if not 0 < args.test_size < 1:
        raise ValidationError(f"--test-size must be in (0, 1), got {args.test_size}")
    scale, bounds = _scaling(args, ds, X.shape[1])
    vertical = args.vertical is not None or bool(args.feature_groups)
    if args.rounds is None:
        args.rounds = 50 if vertical else None
    if vertical:
        from .fit_vertical import fit_vertical

        private, rows, local, refit, notes, yte, Xte, K, n_test = fit_vertical(args, ds, X, y, seed, scale, bounds)
        what = f"{K} parties holding column groups (vertical), admm_sharing"
    else:
        private, rows, local, refit, notes, yte, Xte, K, n_test = _fit_horizontal(args, ds, X, y, groups, seed, rng,
                                                                                  scale, bounds)
        what = f"{K} parties, {args.algorithm}"
    task = ds.extras["task"]
    evaluate = args.evaluation or not secure
    eps_list = [float(e) for e in args.curve.split(",") if e.strip()] if args.curve else []
    report = dict(private.privacy_report_, per_agent=[dict(a) for a in private.privacy_report_["per_agent"]])
    with_preprocessing(report, ds.extras.get("preprocessing", []) + private.privacy_report_["preprocessing"])
    boundary, exposures = release_boundary(vertical=vertical, n_parties=K, evaluation=evaluate and bool(args.out),
                                           curve=eps_list, epsilon=args.epsilon)
    report["exposures"] = list(report.get("exposures", [])) + exposures
    report["release_boundary"] = boundary
    private.privacy_report_ = report  # the model file carries the report of what it is

    keys = list(next(iter(rows.values())).keys())
    table = Table(title=f"{ds.name}: {what}, total epsilon {args.epsilon}, delta {args.delta} per party; test "
                        f"split {n_test} rows (owner-only evaluation, not covered by the guarantee)")
    table.add_column("model")
    for key in keys:
        table.add_column(key, justify="right")
    for name, m in rows.items():
        table.add_row(name, *[f"{m.get(k, float('nan')):.4f}" for k in keys])
    for m in local:
        held = f"{m['rows']} rows" if "rows" in m else f"its {m['columns']} columns, with the labels"
        table.add_row(f"party {m['party']} alone ({held})", *[f"{m.get(k, float('nan')):.4f}" for k in keys])
    console.print(table)
    _print_privacy(console, report, args)
    for text in notes:
        console.print(f"[yellow]warning:[/yellow] {text}")

    curve = []
    if evaluate and args.out:  # the curve refits on the same data: owner-only, computed only when written
        for eps in eps_list:
            est = private if eps == args.epsilon else refit(eps)
            curve.append({"epsilon": eps, **held_out_metrics(task, yte, _score(est, Xte))})
    results = {"data": {"files": [str(p) for p in args.data], "rows": int(X.shape[0]), "features": int(X.shape[1]),
                        "task": task, "classes": ds.extras.get("classes"), "parties": K,
                        "preprocessing": report["preprocessing"]},
               "settings": {k: v for k, v in vars(args).items() if k != "func"},
               "privacy": report, "release_boundary": boundary,
               "notes": ["model.json and results.json are the release: covered by the printed guarantee (see "
                         "privacy.guaranteed); the owner-only outputs are listed in release_boundary.owner_only and "
                         "privacy.exposures"],
               "noise": report.get("noise")}
    evaluation = None
    if evaluate:
        evaluation = {"owner_only": "NOT A RELEASE: metrics computed without noise from the data (held-out rows, "
                                    "each party's rows); keep with the data holder",
                      "test": rows, "local_only": local, "privacy_utility": curve,
                      "train_score": getattr(private, "train_score_", None),
                      "clipping": getattr(private, "clipping_", None)}
    if args.out:
        names = write_fit(args.out, private, ds, results, evaluation, curve, task, rows)
        console.print(f"wrote {args.out}: " + ", ".join(names)
                      + ("" if evaluate else " (owner-only evaluation.json not written: --evaluation)"))
    if not secure:
        console.print("[yellow]research mode (--seed): noise is seeded; not for release[/yellow]")
    return 0


def _fit_horizontal(args, ds, X, y, groups, seed, rng, scale, bounds):
    """Rows split among parties: the private and non-private distributed models and the baselines."""
    from sklearn.model_selection import train_test_split

    from ..data import make_groups
    from ..learn import DistributedLogisticRegression, DistributedRidge

    task = ds.extras["task"]
    if groups is None:
        if args.dirichlet is not None:
            groups = make_groups("dirichlet", X.shape[0], args.agents_count, y=y, alpha=args.dirichlet, rng=rng)
        else:
            groups = make_groups("random", X.shape[0], args.agents or 10, rng=rng)
    sizes = np.bincount(groups)
    if sizes.min() < 2:  # stratified by party: every party needs a training and a test row
        small = [int(k) for k in np.flatnonzero(sizes < 2)]
        raise EmptyPartyError(f"party(ies) {small} hold fewer than 2 rows ({sizes.min()}), too few for a train/test "
                              "split: use fewer parties, or a larger Dirichlet alpha")
    idx_tr, idx_te = train_test_split(np.arange(X.shape[0]), test_size=args.test_size, random_state=seed % 2**32,
                                      stratify=groups)
    Xtr, ytr, gtr, Xte, yte = X[idx_tr], y[idx_tr], groups[idx_tr], X[idx_te], y[idx_te]
    K = int(groups.max()) + 1
    Est = DistributedLogisticRegression if task == "classification" else DistributedRidge
    common = dict(algorithm=args.algorithm, delta=args.delta, network=args.network, rounds=args.rounds,
                  row_norm=args.row_norm, scale=scale, bounds=bounds, random_state=args.seed, n_agents=K,
                  range_share=args.range_share)

    def fit(eps):
        return fit_with_notes(Est(epsilon=eps, **common), Xtr, ytr, groups=gtr)

    private, notes = fit(args.epsilon)
    nonpriv, _ = fit(None)
    pre = private.preprocessor_
    Ztr, Zte = pre.transform(Xtr), pre.transform(Xte)
    rows = {"private distributed": held_out_metrics(task, yte, _score(private, Xte)),
            "non-private distributed": held_out_metrics(task, yte, _score(nonpriv, Xte))}
    central = _sk_model(task, 1e-4, Ztr.shape[0]).fit(Ztr, ytr)
    rows["centralized (pooled, non-private)"] = held_out_metrics(task, yte, _score(central, Zte))
    local = []
    for k in range(K):
        mask = gtr == k
        if task == "classification" and len(np.unique(ytr[mask])) < 2:
            m = {"accuracy": float(np.mean((yte > 0) == (ytr[mask][0] > 0))), "log_loss": float("nan")}
        else:
            alone = _sk_model(task, 1e-4, int(mask.sum())).fit(Ztr[mask], ytr[mask])
            m = held_out_metrics(task, yte, _score(alone, Zte))
        local.append({"party": k, "rows": int(mask.sum()), **m})
    if task == "classification":  # predict the training majority; its log loss uses the training base rate
        baseline = held_out_metrics(task, yte, majority_score(ytr, yte.shape[0]))
    else:
        baseline = held_out_metrics(task, yte, np.full(yte.shape, float(np.mean(ytr))))
    rows["majority class" if task == "classification" else "mean predictor"] = baseline

    return private, rows, local, (lambda eps: fit(eps)[0]), notes, yte, Xte, K, len(idx_te)


def _score(model, Z):
    return model.decision_function(Z) if hasattr(model, "predict_proba") else model.predict(Z)


def _print_privacy(console, report, args) -> None:
    from rich.table import Table

    t = Table(title=f"privacy per party (requested total: epsilon {args.epsilon}, delta {args.delta}); "
                    f"guaranteed = {report['guaranteed']}")
    for col in ("party", "guarantee (PLD)", "RDP cross-check", "paper's claim"):
        t.add_column(col, justify="right")
    for a in report["per_agent"]:
        t.add_row(str(a["agent"]), *[f"{v:.4f}" if v is not None else "n/a"
                                      for v in (a["guarantee_pld"], a["guarantee_rdp"], a["paper_claim"])])
    console.print(t)
    console.print(f"guarantee epsilon = {report['epsilon']:.4f} (PLD, delta {report['delta']}); noise: "
                  f"{(report.get('noise') or {}).get('mode', '?')}")
    if "messages_epsilon" in report:
        console.print(f"  [red]not a guarantee:[/red] the messages alone spend {report['messages_epsilon']:.4f}, "
                      "but preprocessing read the data without DP (below)")
    for text in report["assumptions"]:
        console.print(f"  assumption: {text}")
    for text in report.get("exposures", []):
        console.print(f"  [yellow]exposure (no DP event):[/yellow] {text}")
    if report.get("scope"):
        console.print(f"  scope: {report['scope']}")
    for step in report["preprocessing"]:
        kind = "public" if step["private"] else "NOT PRIVATE"
        if "share" in step:  # the DP range step: a release inside the guarantee
            kind = (f"DP release, share {step['share']:g} of the budget" if step.get("epsilon") is not None
                    else "no noise (non-private fit)") + (f"; no range estimated for {len(step['fallback'])} "
                                                          "column(s), kept in [-1, 1]" if step["fallback"] else "")
        console.print(f"  preprocessing: {step['step']} ({kind})")
