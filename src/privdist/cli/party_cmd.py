"""``privdist party``: a data holder's side of a job across organisations (issue 38), run on its own machine.

``privdist party DATA.csv --target y --classes A,B --key me.key --cert me.crt --ca ca.crt --coordinator
HOST:PORT --coordinator-name NAME [--policy policy.toml] [--ledger-dir DIR]`` dials out to the coordinator (the party
opens no port) with mutual TLS, states its public facts (row count and columns, read from the file's lines and
header; the class names it states with ``--classes``), receives the job's privacy plan, checks it against its policy
and its lifetime ledger and refuses with the reasons before it reads any value of its data. Accepted, it reads its
file (a file it cannot read as the job needs, e.g. a missing value, aborts the job in its ledger; the error stays
here, the coordinator is told only that it could not read its data), builds the algorithm from the plan with the
privdist installed on this machine and answers the rounds; each round's releases are in its ledger before they leave.
Nothing executable is received.

After the rounds the coordinator sends the release (the model, public) and the party fits its PERSONAL model from it
and its own rows (issue 39, :mod:`privdist.learn.personal_release`): written owner-only (mode 0600, marked
``owner_only``, ``release: false``) to ``--out DIR``/``personal-model-NAME.json`` (NAME: the party's certificate name;
default DIR: the folder of DATA.csv; a file of an earlier job there stops the party before it dials, unless
``--overwrite``), never sent, no privacy spent; it prints one line comparing alone / global / personal on its own
rows (``--holdout F``, default 0.3: a seeded split of its rows, the personal model and "alone" fitted on the rest,
accuracy on the held-out part; ``--holdout 0``: the cross-validated log loss of the personal model's own selection).
``--no-personal`` skips it.

``privdist party --vertical DATA.csv --out DIR --key ... --coordinator ...`` takes part in a vertical job (ADMM
sharing): the file holds some COLUMNS of every row (rows in the order the consortium agreed; no label column: the
coordinator holds the labels), the party states its row count and column names, and when the job ends it writes its
own coefficient block to ``DIR/parties/party_<m>.json`` (owner-only: the block never leaves this machine).

``privdist party --ledger [--ledger-dir DIR] [--policy FILE]`` prints what the party has spent, on which jobs, with
which coordinator.
"""

from __future__ import annotations

__all__ = ["register"]


def register(sub) -> None:
    p = sub.add_parser("party", help="take part in a job across organisations: check its plan, then train on your "
                                     "data without it leaving this machine")
    p.add_argument("data", nargs="?", metavar="DATA.csv", help="the party's own data (a CSV with a header)")
    p.add_argument("--target", help="the label column (not with --vertical)")
    p.add_argument("--classes", metavar="A,B", help="PUBLIC class names of the label (the job orders them "
                                                     "sorted: the later one is the positive class; not with "
                                                     "--vertical)")
    p.add_argument("--categories", action="append", metavar="COL=a,b,c|FILE",
                   help="PUBLIC categories of a text column, one-hot encoded (as privdist fit --categories)")
    p.add_argument("--vertical", action="store_true", help="a vertical job: the file holds some columns of every "
                                                            "row and no labels (the coordinator holds them)")
    p.add_argument("--out", metavar="DIR", help="folder for this party's owner-only files: its personal model "
                                                "personal-model-NAME.json, NAME its certificate's name (default: "
                                                "DATA.csv's folder); --vertical: its "
                                                "coefficient block parties/party_<m>.json")
    p.add_argument("--holdout", type=float, default=0.3, metavar="F",
                   help="share of the party's rows held out for its printed comparison alone / global / personal "
                        "(default 0.3; 0: cross-validated log loss); the saved personal model uses every row")
    p.add_argument("--no-personal", action="store_true", help="do not fit or write the personal model")
    p.add_argument("--overwrite", action="store_true",
                   help="replace this party's file from an earlier job in the --out folder (its personal model; "
                        "--vertical: its coefficient block); without it the party stops before dialling")
    p.add_argument("--key", help="this party's private key (privdist pki request)")
    p.add_argument("--cert", help="this party's certificate, signed by the consortium CA")
    p.add_argument("--ca", help="the consortium CA's certificate")
    p.add_argument("--coordinator", metavar="HOST:PORT", help="the coordinator's address")
    p.add_argument("--coordinator-name", help="the name the coordinator's certificate must carry")
    p.add_argument("--policy", metavar="FILE", help="this party's policy (TOML or JSON; default: the defaults of "
                                                    "privdist.privacy.policy.PartyPolicy)")
    p.add_argument("--ledger-dir", metavar="DIR", help="this party's lifetime ledger (default: a folder in the "
                                                       "user's data directory)")
    p.add_argument("--ledger", action="store_true", help="print what this party has spent and exit")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the coordinator (default 600)")
    p.set_defaults(func=party_main)


def _ledger_dir(args):
    from pathlib import Path

    if args.ledger_dir:
        return Path(args.ledger_dir)
    import platformdirs

    return Path(platformdirs.user_data_dir("privdist")) / "ledger"


def _header_and_rows(path: str) -> tuple[list | None, int]:
    """The header of the party's CSV (a UTF-8 byte-order mark dropped, as pandas drops it) and its count of
    non-blank lines after it; named errors for a missing file and a file without data rows."""
    import csv

    from ..errors import DataFileNotFoundError, EmptyPartyError

    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
            rows = sum(1 for line in fh if line.strip())
    except IsADirectoryError:
        raise DataFileNotFoundError(f"data file {path!r} is a folder, not a CSV file") from None
    except (FileNotFoundError, NotADirectoryError):
        raise DataFileNotFoundError(f"data file {path!r} not found") from None
    if header and not rows:
        raise EmptyPartyError(f"{path}: the file has no data rows")
    return header, rows


def _facts(path: str, target: str, classes: list[str], categories: dict) -> dict:
    """The public facts of the party's file from its header, its line count and the public categories (one-hot
    columns ``col=value`` after the other columns, as :func:`privdist.data.load_file` makes them): no value is
    parsed."""
    from ..errors import ValidationError

    header, rows = _header_and_rows(path)
    if not header or target not in header:
        raise ValidationError(f"{path}: no column {target!r} in its header {header}")
    plain = [c for c in header if c != target and c not in categories]
    onehot = [f"{c}={v}" for c in header if c in categories for v in categories[c]]
    return {"rows": rows, "columns": plain + onehot, "classes": classes}


def _vertical_facts(path: str) -> dict:
    """A vertical party's public facts: its row count and column names (header and line count only)."""
    from ..errors import ValidationError

    header, rows = _header_and_rows(path)
    if not header:
        raise ValidationError(f"{path}: no header (a vertical party's file names its columns)")
    return {"rows": rows, "columns": header}


def _vertical_loader(path: str):
    def load():
        import pandas as pd

        import numpy as np

        from ..errors import NonFiniteDataError, NonNumericDataError

        df = pd.read_csv(path)
        bad = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
        if bad:
            raise NonNumericDataError(f"{path}: column(s) {bad} are not numeric (a job takes numeric columns)")
        X = df.to_numpy(dtype=float)
        missing = [str(c) for c, ok in zip(df.columns, np.isfinite(X).all(axis=0)) if not ok]
        if missing:
            raise NonFiniteDataError(f"{path}: missing or infinite value(s) in column(s) {missing}; privdist does not "
                                     "impute: drop or fill them")
        return X, [str(c) for c in df.columns]

    return load


def _loader(path: str, target: str, classes: list[str], categories: dict):
    """The party's data, read (as ``privdist fit`` reads a file: public categories one-hot encoded, the stated
    classes) only once it has accepted the plan."""
    def load():
        import numpy as np

        from ..data import load_file

        ds = load_file(path, target, encode="onehot" if categories else "none", task="classification",
                       categories=categories or None, classes=classes)
        X = ds.X.toarray() if hasattr(ds.X, "toarray") else np.asarray(ds.X, dtype=float)
        y = np.where(np.asarray(ds.y) > 0, classes[1], classes[0])
        return X, y, [str(c) for c in ds.feature_names]

    return load


def party_main(args) -> int:
    from rich.console import Console

    from ..errors import ValidationError
    from ..privacy.lifetime import LifetimeLedger
    from ..privacy.policy import PartyPolicy

    console = Console()
    policy = PartyPolicy.from_file(args.policy) if args.policy else PartyPolicy()
    ledger = LifetimeLedger(_ledger_dir(args))
    if args.ledger:
        from ..privacy.lifetime_report import ledger_report
        from .ledger_view import render_ledger_report

        render_ledger_report(ledger_report(ledger, policy=policy), console)
        return 0
    needed = ("data", "key", "cert", "ca", "coordinator", "coordinator_name") + (("out",) if args.vertical else
                                                                                  ("target", "classes"))
    missing = [f"--{n.replace('_', '-')}" for n in needed if not getattr(args, n)]
    if missing:
        raise ValidationError(f"privdist party needs {', '.join(missing)} (or --ledger to print the ledger)")
    if not 0 <= args.holdout < 1:  # before the job: it is only used after the rounds
        raise ValidationError(f"--holdout must be in [0, 1), got {args.holdout:g}")
    if args.vertical and args.categories:
        raise ValidationError("--categories is not read with --vertical (it was ignored): a vertical party's file "
                              "holds numeric columns; one-hot encode a text column in the file itself")
    if args.vertical and (args.target or args.classes):
        raise ValidationError("a vertical party holds no labels: leave out --target and --classes (the coordinator "
                              "holds the labels)")
    from ..learn.deploy import run_party
    from ..learn.job import LifetimeGate, PartyJob
    from ..learn.job_vertical import VerticalPartyJob
    from ..runtime.remote.pki import Identity
    from .fit_release import parse_categories

    if args.vertical:
        kind, load, facts = VerticalPartyJob, _vertical_loader(args.data), _vertical_facts(args.data)
    else:
        classes = [c.strip() for c in args.classes.split(",")]
        if len(classes) != 2 or len(set(classes)) != 2:
            raise ValidationError(f"--classes names the two classes, negative first, got {args.classes!r}")
        categories = parse_categories(args.categories) or {}
        kind = PartyJob
        load = _loader(args.data, args.target, classes, categories)
        facts = _facts(args.data, args.target, classes, categories)
    me = Identity.load(args.key, args.cert, args.ca, role="party")
    _check_own_files(args, me.name)
    with ledger.locked():  # a ledger it cannot write (or read) is named here, not when the plan arrives
        pass
    job = kind(me.name, load, facts, gate=LifetimeGate(ledger, policy, args.coordinator_name),
               **({"out": args.out} if args.vertical else {}))
    console.print(f"{me.name}: dialling {args.coordinator_name} at {args.coordinator}")
    outcome = run_party(job, key=args.key, cert=args.cert, ca=args.ca, coordinator=args.coordinator,
                        coordinator_name=args.coordinator_name, timeout=args.timeout)
    if outcome.status == "no_plan":
        console.print(f"{me.name}: the coordinator went away before it offered the plan of job {outcome.job!r}; "
                      "nothing was read or released and the ledger is unchanged")
        return 1
    if outcome.status == "unreadable":
        console.print(f"{me.name}: could not read its data for job {outcome.job!r} after accepting its plan; "
                      "the job is aborted in the ledger, nothing was released (the coordinator was told, without the "
                      "error, which stays here)")
        raise outcome.error
    if outcome.status == "abandoned":
        console.print(f"{me.name}: the coordinator went away; job {outcome.job!r} is aborted in the ledger (what "
                      "was released stays charged)")
        return 1
    if outcome.status == "called_off":
        console.print(f"{me.name}: the coordinator called off job {outcome.job!r}; it is aborted in the ledger")
        return 4
    if outcome.status == "refused":
        console.print(f"{me.name}: refused the plan of job {outcome.job!r} (no data read): "
                      + "; ".join(outcome.reasons))
        return 3
    block = getattr(job, "block_file", None)
    console.print(f"{me.name}: the job finished; ledger: {ledger.path}"
                  + (f"; its own coefficient block (owner-only): {block}" if block else ""))
    if not args.vertical and not args.no_personal:
        _personal(job, args, me.name, console)
    return 0


def _personal_path(args, name: str):
    from pathlib import Path

    from ..learn.personal_release import personal_file

    return (Path(args.out) if args.out else Path(args.data).resolve().parent) / personal_file(name)


def _check_own_files(args, name: str) -> None:
    """Before dialling: the party's owner-only file of this job would not replace one of an earlier job (it cannot
    be made again: the release stays with the coordinator) unless ``--overwrite``."""
    from pathlib import Path

    from ..errors import OutputDirError

    if args.overwrite:
        return
    if args.vertical:
        held = sorted(str(p) for p in (Path(args.out) / "parties").glob("party_*.json"))
    else:
        held = [] if args.no_personal else [str(p) for p in [_personal_path(args, name)] if p.exists()]
    if held:
        raise OutputDirError(f"{held[0]} exists (this party's file from an earlier job?): move it, give --out another "
                             "folder, or pass --overwrite to replace it" + ("" if args.vertical else
                                                                            " (or --no-personal)"))


def _personal(job, args, name: str, console) -> None:
    """The party's personal model (module docstring): written owner-only, one line printed."""
    from ..learn.personal_release import party_personal

    path = _personal_path(args, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path, comp = party_personal(job, path, holdout=args.holdout)
    console.print(f"{name}: its personal model (owner-only, not a release, no privacy spent): {path}", soft_wrap=True)
    console.print(f"{name}: {comparison_line(comp)}", soft_wrap=True)


def comparison_line(comp: dict) -> str:
    """One line of :func:`privdist.learn.personal_release.own_comparison`'s result."""
    if comp["method"] == "none":
        return f"own rows: no comparison ({comp['reason']})"
    strength = comp.get("strength")
    values = strength if isinstance(strength, list) else [strength]
    # inf (the global coefficients) arrives as a float from the cross-validation and as "global coefficients" from
    # the held-out comparison (privdist.learn.party_eval)
    shown = ", ".join("global" if v in ("global", "global coefficients") or v == float("inf") else f"{float(v):g}"
                      for v in values)
    if comp["method"] == "holdout":
        where = f"own rows held out ({comp['test_rows']} of {comp['train_rows'] + comp['test_rows']})"
    else:
        where = "own rows cross-validated (optimistic for personal)"
    metric = comp["metric"].replace("_", " ")
    personal = comp["note"] if comp.get("personal") is None else f"personal {comp['personal']:.4f}"
    return (f"{where}, {metric}: alone {comp['alone']:.4f}, global {comp['global']:.4f}, {personal} "
            f"(strength {shown}; 0 = alone)")
