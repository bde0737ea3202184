"""``privdist personalize``: a party's personal model from a released ``model.json`` and its own file (issue 39).

``privdist personalize model.json --data mine.csv --target y --out personal-model.json [--onehot] [--categories
COL=a,b] [--drop COL] [--holdout 0.3]`` reads the release (a horizontal model of ``privdist fit`` or ``privdist
coordinate``; format ``privdist-linear-model/1`` with its ``objective``), reads the party's file as ``privdist fit``
reads one (the same column naming: one-hot columns ``col=value`` of public categories; the class names are the
release's), fits the personal model (:func:`privdist.learn.personal.personalize`, from the release by
:mod:`privdist.learn.personal_release`), writes it owner-only (mode 0600, marked ``owner_only`` and ``release:
false``) and prints the comparison alone / global / personal on the party's own rows. Nothing is sent anywhere, no
privacy is spent and no ledger is touched: post-processing of the release and of the party's own rows.

The file's feature columns must be the model's, by name (extra columns: ``--drop`` them); a vertical model, a model
file without ``objective`` (older than issue 39) and labels outside the release's classes are refused by name.
"""

from __future__ import annotations

__all__ = ["register"]


def register(sub) -> None:
    p = sub.add_parser("personalize", help="fit your owner-only personal model from a released model.json and your "
                                           "own data (no privacy spent, nothing sent)")
    p.add_argument("model", metavar="MODEL.json", help="the released model (privdist fit/coordinate's model.json)")
    p.add_argument("--data", required=True, metavar="FILE", help="your own data (CSV/Parquet... with a header)")
    p.add_argument("--target", required=True, help="the target column of --data")
    p.add_argument("--out", required=True, metavar="FILE", help="where to write the personal model (owner-only; not "
                                                                "a release: never publish it)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists (without it: a named error)")
    p.add_argument("--onehot", action="store_true", help="one-hot encode text columns (as privdist fit --onehot)")
    p.add_argument("--categories", action="append", metavar="COL=a,b,c|FILE",
                   help="PUBLIC categories of a text column, as the fit stated them (privdist fit --categories)")
    p.add_argument("--drop", action="append", metavar="COL", help="a column of --data to leave out (repeatable)")
    p.add_argument("--holdout", type=float, default=0.3, metavar="F",
                   help="share of your rows held out for the printed comparison (default 0.3; 0: cross-validated "
                        "loss); the written model uses every row")
    p.add_argument("--seed", type=int, default=0, help="seed of the cross-validation folds and the holdout split")
    p.set_defaults(func=personalize_main)


def _own_rows(args, released):
    """The party's file read as ``privdist fit`` reads it, the labels as the release's classes."""
    import numpy as np
    import pandas as pd

    from ..data import load_file
    from ..errors import ShapeMismatchError
    from .fit_release import parse_categories

    classes = None if released.classes_ is None else list(released.linear.classes)
    categories = parse_categories(args.categories) or None
    model_names = [str(n) for n in getattr(released, "feature_names_in_", [])]
    options = dict(encode="onehot" if (args.onehot or categories) else "none", drop=tuple(args.drop or ()),
                   task="regression" if classes is None else "classification", classes=classes)
    ds = load_file(args.data, args.target, categories=categories, **options)
    if options["encode"] == "onehot":  # the release's category lists (public: model.json names them), not the
        # party's own values: a school holding one value of a column had lacked the model's other columns (issue 39)
        read = {str(c) for s in ds.extras["preprocessing"] if s["step"] == "onehot_categories_from_data"
                for c in s["columns"]}
        columns = read | {n for n in map(str, ds.feature_names) if "=" not in n}
        released_lists: dict = {}
        for name in model_names:
            col, eq, value = name.partition("=")
            if eq and col in columns and col not in (categories or {}):
                released_lists.setdefault(col, []).append(value)
        if released_lists:
            ds = load_file(args.data, args.target, categories={**(categories or {}), **released_lists}, **options)
    X = ds.X.toarray() if hasattr(ds.X, "toarray") else np.asarray(ds.X, dtype=float)
    names = [str(c) for c in ds.feature_names]
    extra = [n for n in names if n not in set(model_names)]
    if extra:
        raise ShapeMismatchError(f"{args.data}: column(s) {extra[:5]} are not the model's (its columns: "
                                 f"{model_names[:20]}); --drop them, or check --onehot/--categories")
    y = np.asarray(ds.y)
    if classes is not None:
        index = np.where(y > 0, 1, 0) if len(classes) == 2 else y.astype(int)
        y = np.asarray(classes, dtype=object)[index]
        y = np.asarray(list(y))
    return pd.DataFrame(X, columns=names), y


def personalize_main(args) -> int:
    from pathlib import Path

    from rich.console import Console

    from ..errors import ValidationError
    from ..learn.personal import personalize
    from ..learn.personal_release import own_comparison, released_model, save_personal
    from .party_cmd import comparison_line

    console = Console()
    out = Path(args.out)
    if out.resolve() == Path(args.model).resolve() or out.name == "model.json":
        raise ValidationError(f"--out {args.out} would take the name of a release (model.json): a personal model is "
                              "owner-only, give it its own name (e.g. personal-model.json)")
    if out.exists() and not args.overwrite:
        from ..errors import OutputDirError

        raise OutputDirError(f"--out {args.out} exists: give the personal model another name, or pass --overwrite "
                             "to replace it")
    released = released_model(Path(args.model))
    X, y = _own_rows(args, released)
    personal = personalize(released, X, y, random_state=args.seed)
    comparison = own_comparison(released, X, y, personal, holdout=args.holdout, seed=args.seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_personal(personal, released, out, {"release": str(args.model), "data": str(args.data),
                                            "comparison": comparison})
    console.print(f"personal model (owner-only, not a release, no privacy spent): {out}", soft_wrap=True)
    console.print(comparison_line(comparison), soft_wrap=True)
    return 0
