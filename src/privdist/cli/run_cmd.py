"""``privdist run NAME|FILE.toml``: run one experiment into a results directory."""

from __future__ import annotations

import os
import sys

from ..errors import ValidationError

#: ``--backend`` choices: the keys of ``privdist.runtime.BACKENDS`` (a test keeps them equal; not imported here,
#: so that ``privdist --help`` does not load the runtime).
BACKEND_NAMES = ("ray", "simulate")

__all__ = ["register", "add_run_options", "check_run_options"]


def add_run_options(p) -> None:
    """Options shared by ``run`` and ``reproduce``."""
    p.add_argument("--seed", type=int, help="base seed (default: the spec's)")
    p.add_argument("--backend", default="simulate", choices=BACKEND_NAMES, help="runtime backend")
    p.add_argument("--jobs", type=int, default=1, help="trials run in parallel processes (default 1)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in the same --out")
    p.add_argument("--overwrite", action="store_true", help="replace another experiment's results in --out")
    p.add_argument("--data-dir", default=None, help="data directory (default: $PRIVDIST_DATA_DIR or user cache)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--secure", action="store_true",
                   help="draw noise from fresh OS entropy that is never recorded (for results meant for release; "
                        "without it the noise can be regenerated from the recorded seed)")
    p.add_argument("--address", "--ray-address", dest="ray_address", metavar="HOST:PORT",
                   help="Ray cluster for --backend ray / --parallel ray (default: $RAY_ADDRESS, else a local Ray); "
                        "a cluster kept warm by `privdist serve` is used with its warm party actors")
    p.add_argument("--parallel", choices=["process", "ray"], default="process",
                   help="spread trials over --jobs processes (default) or over Ray tasks")
    p.add_argument("--yes", action="store_true",
                   help="run even if the estimated memory or time is above the limits (4 GiB, 24 CPU-hours)")


def check_run_options(args) -> None:
    """Reject bad or inconsistent options (jobs, resume/overwrite, backend/parallel/address) before anything runs."""
    if args.jobs < 1:
        raise ValidationError(f"--jobs must be >= 1, got {args.jobs}")
    if args.resume and args.overwrite:
        raise ValidationError("--resume and --overwrite exclude each other (--resume keeps finished trials, "
                              "--overwrite removes them)")
    if "ray" in (args.backend, args.parallel):
        from ..experiments.ray_parallel import check_cli_options

        if not args.ray_address and not os.environ.get("RAY_ADDRESS"):
            from .serve_cmd import served_address

            args.ray_address = served_address()  # a `privdist serve` of this machine, if one runs
            if args.ray_address:
                print(f"note: using the privdist server at {args.ray_address}", file=sys.stderr)

        check_cli_options(args.backend, args.parallel, args.jobs, args.ray_address)
    elif args.ray_address:
        raise ValidationError("--address (--ray-address) needs --backend ray or --parallel ray")


def register(sub) -> None:
    p = sub.add_parser("run", help="run an experiment of the catalog or a TOML spec file")
    p.add_argument("experiment", help="catalog name (see `privdist list`) or path to a .toml spec")
    p.add_argument("--trials", type=int, help="number of trials (default: the spec's)")
    p.add_argument("--quick", action="store_true", help="the spec's quick variant (quick_trials, [quick] table)")
    p.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="change one value of the spec, e.g. runs.1.params.epsilon=0.5 (repeatable; validated)")
    p.add_argument("--out", help="results directory (default: results/NAME)")
    p.add_argument("--owner-metrics", action="store_true",
                   help="on a user's own data in secure mode, also write the owner-only evaluation (metrics computed "
                        "noise-free from the data) to OUT/owner_only/, named as exposures (= [output] owner_metrics)")
    add_run_options(p)
    p.set_defaults(func=_main)


def quick_variant(spec):
    """``spec.quick()``, with a one-line notice on stderr when the spec has no ``[quick]`` table (then the quick
    variant differs from the full one only by its ``quick_trials`` trials)."""
    if "quick" not in spec.raw and spec.mode != "quick":
        print(f"note: {spec.name} has no [quick] table: --quick runs {spec.quick_trials} trial(s) (quick_trials) "
              f"of the full {spec.rounds} rounds and sweep", file=sys.stderr)
    return spec.quick()


def diverged_exit(results: dict, out) -> int:
    """0, or 2 after one ``error:`` line if a run diverged (non-finite estimate or metric; see results.json), and
    one more if a figure could not be drawn (``figure_errors``, issue 40: the results themselves are complete)."""
    status = 0
    errors = results.get("errors", [])
    if errors:
        print(f"error: {len(errors)} diverged run(s) recorded in {out}/results.json; first: {errors[0]}",
              file=sys.stderr)
        status = 2
    figure_errors = results.get("figure_errors", [])
    if figure_errors:
        print(f"error: {len(figure_errors)} figure(s) not drawn (the results in {out}/results.json and summary.md "
              f"are complete); first: {figure_errors[0]}", file=sys.stderr)
        status = 2
    return status


def _main(args) -> int:
    check_run_options(args)
    from ..experiments import load_experiment, run_experiment  # here, not at import: start-up time
    from .report import print_results

    spec = load_experiment(args.experiment)
    spec = quick_variant(spec) if args.quick else spec
    spec = spec.with_overrides(trials=args.trials, seed=args.seed, secure=True if args.secure else None)
    settings = list(args.set) + (["output.owner_metrics=true"] if args.owner_metrics else [])
    if settings:
        spec = spec.with_settings(settings)
    out = args.out or os.path.join("results", spec.name)
    results = run_experiment(spec, out, jobs=args.jobs, overwrite=args.overwrite, resume=args.resume,
                             progress=not args.no_progress, data_dir=args.data_dir, backend=args.backend,
                             parallel=args.parallel, allow_large=args.yes)
    print_results(results, out)
    return diverged_exit(results, out)
