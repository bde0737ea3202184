"""``privdist fit``: train a private distributed model on your own data file(s).

``privdist fit data.csv --target label --agents 10 --epsilon 1 --delta 1e-5 --out model_dir`` splits the rows
among 10 parties, holds out a test split, fits the private distributed model (``--epsilon``/``--delta`` are the
TOTAL budget per party for the whole run) and prints its test accuracy and log loss (RMSE for a numeric target)
beside the same algorithm without noise, a centralized (pooled, non-private) model and each party's local-only
model, then the per-party privacy report. ``--vertical N`` / ``--feature-groups SPEC`` instead split the COLUMNS
among the parties (vertical federated learning on ADMM sharing, :mod:`privdist.cli.fit_vertical`). ``--out`` receives ``model.json`` (:mod:`privdist.learn.model_io`),
``results.json`` and ``privacy_utility.png``, each written atomically.
"""

from __future__ import annotations

import io
import os

import numpy as np

from ..errors import EmptyPartyError, ValidationError
from .fit_common import fit_with_notes, held_out_metrics, majority_score

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
    p.add_argument("--algorithm", default="dpsgd", help="dpsgd (default), dpadmm, pvp, dvp, laadmm (horizontal; "
                   "vertical runs always use admm_sharing)")
    p.add_argument("--epsilon", type=float, required=True, help="total epsilon per party for the whole run")
    p.add_argument("--delta", type=float, required=True, help="total delta per party")
    p.add_argument("--network", default="complete", help="complete (default), ring, star, ...")
    p.add_argument("--rounds", type=int, help="communication rounds (default 100; 50 with --vertical/--feature-groups)")
    p.add_argument("--task", choices=("auto", "classification", "regression"), default="auto")
    p.add_argument("--onehot", action="store_true", help="one-hot encode non-numeric feature columns")
    p.add_argument("--scale", choices=("none", "data"), default="none",
                   help="none: use features as given (rows clipped to --row-norm); data: min/max scaling read "
                   "from the training data (NOT private; recorded and warned)")
    p.add_argument("--row-norm", type=float, default=1.0, help="public bound: rows clipped to this norm")
    p.add_argument("--test-size", type=float, default=0.2, help="held-out fraction (default 0.2)")
    p.add_argument("--curve", default="0.25,0.5,1,2,4",
                   help="total epsilons of the privacy-utility plot (comma-separated; empty: no plot)")
    p.add_argument("--seed", type=int, help="research mode: seed the split and the noise (not for release)")
    p.add_argument("--out", help="directory for model.json, results.json and privacy_utility.png")
    p.set_defaults(func=fit_main)


def _load(args):
    from ..data import column_groups, load_file, load_files

    if args.data == ["adult"] and not os.path.exists("adult"):  # the UCI Adult files shipped in the package
        from ..data import load_adult

        if args.party_column:
            raise ValidationError("the shipped 'adult' data has no party column: use --agents, --dirichlet, "
                                  "--vertical or --feature-groups")
        ds = load_adult()
        ds.extras["task"] = "classification"
        return ds, None
    kwargs = {"encode": "onehot" if args.onehot else "none", "task": args.task}
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


def fit_main(args) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    ds, groups = _load(args)
    X, y = ds.X, ds.y
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    secure = args.seed is None
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
    rng = np.random.default_rng(seed)
    if not 0 < args.test_size < 1:
        raise ValidationError(f"--test-size must be in (0, 1), got {args.test_size}")
    vertical = args.vertical is not None or bool(args.feature_groups)
    if args.rounds is None:
        args.rounds = 50 if vertical else 100
    if vertical:
        from .fit_vertical import fit_vertical

        private, rows, local, refit, notes, yte, Xte, K, n_test = fit_vertical(args, ds, X, y, seed)
        what = f"{K} parties holding column groups (vertical), admm_sharing"
    else:
        private, rows, local, refit, notes, yte, Xte, K, n_test = _fit_horizontal(args, ds, X, y, groups, seed, rng)
        what = f"{K} parties, {args.algorithm}"
    task = ds.extras["task"]
    keys = list(next(iter(rows.values())).keys())
    table = Table(title=f"{ds.name}: {what}, total epsilon {args.epsilon}, delta {args.delta} per party; test "
                        f"split {n_test} rows")
    table.add_column("model")
    for key in keys:
        table.add_column(key, justify="right")
    for name, m in rows.items():
        table.add_row(name, *[f"{m.get(k, float('nan')):.4f}" for k in keys])
    for m in local:
        held = f"{m['rows']} rows" if "rows" in m else f"its {m['columns']} columns, with the labels"
        table.add_row(f"party {m['party']} alone ({held})", *[f"{m.get(k, float('nan')):.4f}" for k in keys])
    console.print(table)
    _print_privacy(console, private.privacy_report_, args)
    for text in notes:
        console.print(f"[yellow]warning:[/yellow] {text}")

    curve = []
    eps_list = [float(e) for e in args.curve.split(",") if e.strip()] if args.curve else []
    for eps in eps_list:
        est = private if eps == args.epsilon else refit(eps)
        curve.append({"epsilon": eps, **held_out_metrics(task, yte, est.decision_function(Xte))})
    results = {"data": {"files": [str(p) for p in args.data], "rows": int(X.shape[0]), "features": int(X.shape[1]),
                        "task": task, "classes": ds.extras.get("classes"), "parties": K,
                        "preprocessing": ds.extras.get("preprocessing", [])
                        + private.privacy_report_["preprocessing"]},
               "settings": {k: v for k, v in vars(args).items() if k != "func"},
               "test": rows, "local_only": local, "privacy": private.privacy_report_, "privacy_utility": curve,
               "notes": ["local-only and centralized models are non-private baselines (sklearn on the same "
                         "preprocessed features)",
                         "the privacy-utility curve trains one model per epsilon on the same data: it is a "
                         "diagnostic for the data holder; publishing it spends more than one model's budget"],
               "noise": private.privacy_report_.get("noise")}
    if args.out:
        _write(args.out, private, ds, results, curve, task, rows)
        console.print(f"wrote {args.out}/model.json, results.json" + (", privacy_utility.png" if curve else ""))
    if not secure:
        console.print("[yellow]research mode (--seed): noise is seeded; not for release[/yellow]")
    return 0


def _fit_horizontal(args, ds, X, y, groups, seed, rng):
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
                  row_norm=args.row_norm, scale=args.scale, random_state=args.seed, n_agents=K)

    def fit(eps):
        return fit_with_notes(Est(epsilon=eps, **common), Xtr, ytr, groups=gtr)

    private, notes = fit(args.epsilon)
    nonpriv, _ = fit(None)
    pre = private.preprocessor_
    Ztr, Zte = pre.transform(Xtr), pre.transform(Xte)
    rows = {"private distributed": held_out_metrics(task, yte, private.decision_function(Xte)),
            "non-private distributed": held_out_metrics(task, yte, nonpriv.decision_function(Xte))}
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
    for text in report["assumptions"]:
        console.print(f"  assumption: {text}")
    for text in report.get("exposures", []):
        console.print(f"  [yellow]exposure (no DP event):[/yellow] {text}")
    if report.get("scope"):
        console.print(f"  scope: {report['scope']}")
    for step in report["preprocessing"]:
        console.print(f"  preprocessing: {step['step']} ({'public' if step['private'] else 'NOT PRIVATE'})")


def _write(out, est, ds, results, curve, task, rows) -> None:
    from pathlib import Path

    from .._io import atomic_write_bytes, write_json
    from ..learn.model_io import save_model

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_model(est, out / "model.json", ds.feature_names, meta={"data": results["data"]},
               classes=ds.extras.get("classes"))
    write_json(out / "results.json", results)
    if curve:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        key = "accuracy" if task == "classification" else "rmse"
        fig, ax = plt.subplots(figsize=(5, 3.5))
        names = list(rows)  # private, non-private, centralized, baseline (horizontal and vertical alike)
        ax.plot([c["epsilon"] for c in curve], [c[key] for c in curve], "o-", label=names[0])
        for name, style in zip(names[1:3], ("--", ":")):
            ax.axhline(rows[name][key], ls=style, color="gray", label=name)
        base = rows.get("majority class") or rows.get("mean predictor")
        ax.axhline(base[key], ls="-.", color="red", label="majority class" if task == "classification" else "mean")
        ax.set_xscale("log")
        eps = [c["epsilon"] for c in curve]
        ax.set_xticks(eps, [f"{e:g}" for e in eps])  # the budgets themselves; no crowded minor labels
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_xlabel("total epsilon per party")
        ax.set_ylabel(f"test {key}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120)
        plt.close(fig)
        atomic_write_bytes(out / "privacy_utility.png", buf.getvalue())
