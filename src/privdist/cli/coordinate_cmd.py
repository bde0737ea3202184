"""``privdist coordinate``: the coordinator of a job across organisations (issue 38). It holds no data.

``privdist coordinate --parties A,B,C --key coord.key --cert coord.crt --ca ca.crt [--host 127.0.0.1] [--port N]
--epsilon 1 --delta 1e-5 [--bounds bounds.json] [--algorithm dpmm|ssp] --out DIR`` listens with mutual TLS for the named
parties (each dials in with a certificate the consortium CA signed), collects their public facts, builds the job's
privacy plan (the builder of ``privdist fit``) and offers it; if every party accepts, it runs the rounds (the
parties' sums through secure aggregation by default), then writes ``DIR/model.json`` and ``DIR/results.json``: the
same release as ``privdist fit`` (the model, each party's guarantee, the plan). A party that refuses stops the job
with its reasons; a party that goes silent or away during the rounds is a dropout of the secure sums.

``privdist coordinate --vertical --labels LABELS.csv --target COL ...`` runs a vertical job: the parties (``privdist
party --vertical``) hold columns of the same rows, the coordinator holds the labels (column COL of its own file, rows
in the parties' order) and nothing else. Trust ``auto`` is ``local`` there, and ``--vertical-protocol auto`` the pool
(each party fits its block on the labels; or ADMM sharing, also with ``--trust secure_aggregation``: the sum of the
shares through secure aggregation). ``model.json`` then holds no coefficients: each party keeps its own block
(:mod:`privdist.learn.job_vertical`).
"""

from __future__ import annotations

__all__ = ["register"]


def register(sub) -> None:
    from .fit_trust import add_vertical_protocol

    p = sub.add_parser("coordinate", help="coordinate a job across organisations: offer the plan, run the rounds, "
                                          "write the model (holds no data)")
    p.add_argument("--parties", required=True, metavar="A,B,C", help="the parties' names (their certificates' CNs)")
    p.add_argument("--key", required=True, help="the coordinator's private key")
    p.add_argument("--cert", required=True, help="the coordinator's certificate (role coordinator)")
    p.add_argument("--ca", required=True, help="the consortium CA's certificate")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="the port (default 0: any free port, printed)")
    p.add_argument("--port-file", help="write the chosen port to this file (for scripts)")
    p.add_argument("--job-id", default="job",
                   help="the job's id (each party's ledger keys it; a rerun needs a new one)")
    p.add_argument("--epsilon", type=float, required=True, help="total epsilon per party for the whole job")
    p.add_argument("--delta", type=float, default=1e-5, help="total delta per party")
    p.add_argument("--algorithm", choices=("dpmm", "ssp"),
                   help="the optimiser of a horizontal job (default dpmm; ssp: one-shot sufficient statistics); the "
                        "plan names it and every party builds and checks it")
    p.add_argument("--rounds", type=int, help="rounds (default: the algorithm's)")
    p.add_argument("--trust", choices=("auto", "local", "secure_aggregation"), default="auto",
                   help="auto (secure aggregation; --vertical: local), local, or secure_aggregation")
    p.add_argument("--colluding", type=int, default=0, help="parties assumed to collude with the aggregator")
    p.add_argument("--dropout-tolerance", type=float, default=0.0,
                   help="fraction of parties a secure sum may lose and still meet the budget")
    p.add_argument("--bounds", metavar="FILE", help="PUBLIC bounds of columns: JSON {column: [lo, hi]}")
    p.add_argument("--scale", choices=("dp", "bounds", "none"),
                   help="dp (the default of a horizontal job: columns without public --bounds get bounds from a DP "
                        "range step, a round of the parties on a share of the budget), bounds (--bounds names every "
                        "column; the default of a vertical job) or none (columns already in range)")
    p.add_argument("--row-norm", type=float, default=1.0, help="public row-norm bound (rows clipped to it; not "
                                                                "with --vertical: no party holds a whole row)")
    p.add_argument("--vertical", action="store_true", help="a vertical job: the parties hold columns of the same "
                                                            "rows, the coordinator the labels (--labels, --target)")
    p.add_argument("--labels", metavar="FILE", help="--vertical: the coordinator's CSV holding the label column")
    p.add_argument("--target", help="--vertical: the label column of --labels")
    add_vertical_protocol(p)
    p.add_argument("--rho", type=float, default=1.0, help="--vertical: ADMM penalty (default 1)")
    p.add_argument("--b1", type=float, default=1.0, help="--vertical: PUBLIC clip bound of the shares (default 1)")
    p.add_argument("--seed", type=int, help="research mode: seeded noise (parties' policies must allow it)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a party (default 600)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for model.json and results.json")
    p.set_defaults(func=coordinate_main)


def coordinate_main(args) -> int:
    from pathlib import Path

    from rich.console import Console

    from .._io import write_json
    from ..errors import ValidationError
    from ..learn.deploy import run_coordinator
    from ..learn.job import JobRequest
    from ..learn.model_io import save_model

    console = Console()
    names = [n.strip() for n in args.parties.split(",") if n.strip()]
    if len(set(names)) != len(names) or len(names) < 2:
        raise ValidationError(f"--parties names at least two distinct parties, got {args.parties!r}")
    bounds = None
    args.scale = args.scale or ("bounds" if args.vertical else "dp")
    if args.vertical and args.scale == "dp":
        raise ValidationError("a vertical job takes --scale bounds or none: its DP range step does not run across "
                              "processes yet")
    if args.scale == "bounds" and not args.bounds:
        raise ValidationError("--scale bounds needs --bounds FILE (public bounds of every column); --scale dp "
                              "estimates the missing ones with a DP range step")
    if args.bounds:
        bounds = _read_bounds(args.bounds)
    secure = {k: v for k, v in (("colluding", args.colluding), ("dropout_tolerance", args.dropout_tolerance)) if v}
    if secure:  # the plan's one validation, before listening for the parties (issue 40)
        from ..privacy.secure_params import SecureAggregation

        params = SecureAggregation(**secure)
        params.check()
        params.shares(len(names))  # an honest party left in every sum
    labels = None
    if args.vertical and args.algorithm:
        raise ValidationError("--algorithm is the optimiser of a horizontal job; a vertical job runs the pool or "
                              "ADMM sharing (--vertical-protocol)")
    if args.vertical:
        if not args.labels or not args.target:
            raise ValidationError("--vertical needs --labels FILE and --target COL (the coordinator holds the labels)")
        import pandas as pd

        from ..errors import DataFileNotFoundError

        try:
            frame = pd.read_csv(args.labels)
        except (FileNotFoundError, IsADirectoryError):
            raise DataFileNotFoundError(f"labels file {args.labels!r} not found") from None
        if args.target not in frame.columns:
            raise ValidationError(f"{args.labels}: no column {args.target!r} in its header {list(frame.columns)}")
        labels = frame[args.target].to_numpy()
        classes = pd.unique(frame[args.target].dropna())
        if frame[args.target].isna().any() or len(classes) != 2:
            raise ValidationError(f"{args.labels}: column {args.target!r} must hold two classes and no missing "
                                  f"value, got {int(frame[args.target].isna().sum())} missing and classes "
                                  f"{sorted(map(str, classes))[:10]}")
        from ..learn.job_vertical import VerticalJobRequest, vertical_job_estimator

        request = VerticalJobRequest(epsilon=args.epsilon, delta=args.delta, trust=args.trust,
                                     secure_aggregation=secure or None, protocol=args.vertical_protocol,
                                     rho=args.rho, b1=args.b1, scale=args.scale, bounds=bounds, job_id=args.job_id,
                                     seed=args.seed,
                                     **({"rounds": args.rounds} if args.rounds is not None else {}))
        vertical_job_estimator(request.settings(), len(names))  # its parameters checked before listening
    else:
        if args.labels or args.target:
            raise ValidationError("--labels and --target are the labels of a vertical job (--vertical); in a "
                                  "horizontal job each party holds its own")
        if args.vertical_protocol != "auto":
            raise ValidationError(f"--vertical-protocol {args.vertical_protocol} is the protocol of a vertical job "
                                  "(--vertical); a horizontal job's optimiser is --algorithm")
        request = JobRequest(epsilon=args.epsilon, delta=args.delta, trust=args.trust,
                             secure_aggregation=secure or None, rounds=args.rounds, row_norm=args.row_norm,
                             scale=args.scale, bounds=bounds, job_id=args.job_id, seed=args.seed,
                             algorithm=args.algorithm or "dpmm")
        from ..learn.job import job_estimator

        job_estimator(request.settings(), len(names))._check_params()  # before listening, not once parties joined
    out = _release_dir(args.out)

    def listening(port: int) -> None:
        console.print(f"job {args.job_id!r} listening on {args.host}:{port} for {names}")
        if args.port_file:
            Path(args.port_file).write_text(str(port))

    model = run_coordinator(request, names, key=args.key, cert=args.cert, ca=args.ca, host=args.host,
                            port=args.port, timeout=args.timeout, labels=labels, on_listening=listening)
    files = save_model(model, out / "model.json", feature_names=list(model.feature_names_in_),
                       party_blocks=not args.vertical)
    notes = ["model.json and results.json are the release: covered by each party's guarantee"]
    if args.vertical:
        notes.append("a vertical model file holds no coefficients: each party wrote its own block "
                     "(parties/party_<m>.json, owner-only) on its machine; scoring a row needs every block")
    results = {"privacy": model.privacy_report_, "plan": model.privacy_plan_.to_dict(), "remote": model.remote_,
               "settings": request.settings(), "noise": model.privacy_report_.get("noise"), "notes": notes}
    write_json(out / "results.json", results)
    eps = model.privacy_report_["epsilon"]
    lost = sorted(names[int(k)] for k in (model.remote_.get("lost_parties") or {}))
    gone = f" ({len(lost)} lost during the rounds: {', '.join(lost)})" if lost else ""
    console.print(f"job finished with {len(names)} parties{gone}; guarantee epsilon = {eps:.4f} per party "
                  f"(delta {args.delta:g}); wrote {', '.join(str(f) for f in files)} and {out / 'results.json'}")
    if getattr(model, "protocol_", None) == "pool":
        console.print("pool: every party was given the labels (the named exposure in results.json) and fitted its "
                      "block on its own columns; nothing computed from a party's columns left it")
    return 0


def _read_bounds(path: str) -> dict:
    """The public bounds file ``{column: [low, high]}``: named errors for a missing file, bad JSON, anything but
    an object of finite pairs with low < high."""
    import json
    from pathlib import Path

    import numpy as np

    from ..errors import DataFileNotFoundError, DataFormatError, ValidationError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, IsADirectoryError):
        raise DataFileNotFoundError(f"bounds file {path!r} not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"bounds file {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not data:
        raise DataFormatError(f'bounds file {path}: public bounds are a JSON object {{"column": [low, high], ...}}, '
                              f"got {type(data).__name__} {str(data)[:60]}")
    out = {}
    for name, pair in data.items():
        try:
            if not isinstance(pair, list):
                raise TypeError(pair)
            low, high = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise ValidationError(f"bounds file {path}: column {name!r} needs a pair of numbers [low, high], got "
                                  f"{pair!r}") from None
        if not (np.isfinite([low, high]).all() and low < high):
            raise ValidationError(f"bounds file {path}: column {name!r} needs finite bounds with low < high, got "
                                  f"{pair!r}")
        out[str(name)] = (low, high)
    return out


def _release_dir(path: str):
    """``--out``, created; a named error, before any party is called, when it already holds a release (another
    job's model.json or results.json: each job's release gets its own folder, none is overwritten)."""
    from pathlib import Path

    from ..errors import OutputDirError

    out = Path(path)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"--out {path} is a file, not a folder")
    held = [f for f in ("model.json", "results.json") if (out / f).exists()]
    if held:
        raise OutputDirError(f"--out {path} already holds a release ({', '.join(held)}); give each job its own "
                             "folder (a job's release is never overwritten)")
    out.mkdir(parents=True, exist_ok=True)
    return out
