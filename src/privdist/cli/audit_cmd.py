"""``privdist audit ALGORITHM|SPEC``: an empirical lower bound on epsilon beside the claims (DESIGN "audit").

``privdist audit dpsgd --releases 20000`` audits DPSGD's first release on the worst-case canary of its small
default problem; ``privdist audit s1_fig1 --run DZOA`` audits one run of a catalog experiment on that
experiment's own problem and network. Prints the claims (guarantee, paper, tight claimed), both lower bounds (the
threshold test at one delta and the trade-off / Gaussian-DP bound) with their confidence and the verdict;
``--json`` and ``--plot`` write them to files.
"""

from __future__ import annotations

import math
import sys

from ..errors import ValidationError

__all__ = ["register", "parse_params"]


def register(sub) -> None:
    p = sub.add_parser("audit", help="empirical lower bound on an algorithm's epsilon (refutes wrong claims)",
                       description="Releases of neighbouring datasets through the algorithm's own steps, a "
                       "threshold test with Clopper-Pearson bounds, and the verdict against the claimed epsilon.")
    p.add_argument("target", metavar="ALGORITHM|SPEC", help="registered algorithm, or catalog experiment / .toml spec")
    p.add_argument("--params", nargs="*", default=[], metavar="K=V", help="algorithm parameters (TOML values)")
    p.add_argument("--run", help="label of the spec's run to audit (default: its first private run)")
    p.add_argument("--releases", type=int, default=1000, help="releases per dataset (default 1000)")
    p.add_argument("--rounds", type=int, default=None,
                   help="rounds per run (the claims compose the same rounds); default: the fewest (1-3) in which "
                        "a registered algorithm releases (2 for dpmm and ssp, whose last round only delivers the "
                        "model), else 1")
    p.add_argument("--view", default=None,
                   help="what is audited: the target's last-round outbox (last) or its outboxes of all rounds "
                        "(all: the whole transcript the guarantee covers); default last for 1 round, all for more")
    p.add_argument("--canary", default="worst", help="worst | extreme (pair: Python API only)")
    p.add_argument("--agents", type=int, default=2,
                   help="agents of the default small problem (default 2; ignored for a SPEC)")
    p.add_argument("--target-agent", type=int, default=0, help="agent whose data differ (default 0)")
    p.add_argument("--delta", type=float, help="delta of the bound (default: the algorithm's delta, else 1e-5)")
    p.add_argument("--claim", default="guarantee", help="claim the verdict is about: guarantee | paper")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--backend", choices=("process", "ray"), default="process",
                   help="spread the replicates over --jobs processes (default) or over Ray tasks")
    p.add_argument("--ray-address", help="Ray cluster for --backend ray (default: a local Ray or $RAY_ADDRESS)")
    p.add_argument("--seed", type=int, default=0, help="base seed of the replicates")
    p.add_argument("--secure", action="store_true", help="fresh OS-entropy noise in every replicate")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="write the result as JSON")
    p.add_argument("--plot", metavar="OUT", help="write the privacy-region plot (OUT.png and OUT.svg)")
    p.add_argument("--yes", action="store_true",
                   help="audit even if the estimated memory or time is above the limits (as privdist run --yes)")
    p.set_defaults(func=_main)


def _value(text: str):
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except Exception:
        return text


def parse_params(items) -> dict:
    """``["k=v", ...]`` -> ``{k: TOML value of v}`` (a bare word stays a string; ``none`` is None).

    Raises:
        ValidationError: an item without ``=``.
    """
    out = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"--params takes K=V items, got {item!r}")
        out[key.strip()] = _value(val)
    return out


def _from_spec(name: str, label: str | None, params: dict):
    from ..algorithms import make_algorithm
    from ..experiments import load_experiment
    from ..experiments.build import build_trial

    from ..algorithms import ALGORITHMS
    from ..errors import UnknownNameError

    try:
        spec = load_experiment(name)
    except UnknownNameError:
        raise ValidationError(f"{name!r} is neither a registered algorithm ({', '.join(sorted(ALGORITHMS))}) nor a "
                              "catalog experiment or .toml spec (see `privdist list`)") from None
    runs = spec.runs
    if label is not None:
        runs = [r for r in runs if r.label == label]
        if not runs:
            raise ValidationError(f"spec {spec.name!r} has no run {label!r}; runs: {[r.label for r in spec.runs]}")
    trial = build_trial(spec, 0)
    chosen = runs[0]
    for r in runs:  # the first run with a privacy budget
        if r.params.get("epsilon") not in (None, False):
            chosen = r
            break
    return make_algorithm(chosen.algorithm, **{**chosen.params, **params}), trial.problem, trial.network


def _fmt(x) -> str:
    if x is None:
        return "n/a"
    return "inf" if isinstance(x, float) and math.isinf(x) else f"{x:.4g}"


#: Public constants an algorithm needs that the audit supplies from its own generated problem when the user gives
#: none: the audit's data are synthetic canaries, public by construction, so D-ZOA's pooled calibration (R) is not a
#: leak here (it would be on a user's data, where D-ZOA requires a public R).
AUDIT_DEFAULTS = {"dzoa": {"R": "oracle"}}


def _check_outputs(args) -> None:
    """``--json`` and ``--plot`` must be writable files, checked before the releases are drawn (issue 26)."""
    from pathlib import Path

    from .._io import check_writable_dir

    for option, value in (("--json", args.json_out), ("--plot", args.plot)):
        if value is None:
            continue
        path = Path(value)
        if not path.name or path.is_dir():
            raise ValidationError(f"{option} {value!r} is a directory: give a file name")
        check_writable_dir(path.parent if str(path.parent) else Path("."), f"the directory of {option}")


def _main(args) -> int:
    from ..algorithms import ALGORITHMS, make_algorithm
    from ..audit import CANARIES, CLAIMS, VIEWS, audit, first_releasing_rounds, plot_privacy_region

    if args.canary not in CANARIES:
        raise ValidationError(f"--canary must be one of {list(CANARIES)}, got {args.canary!r}")
    if args.canary == "pair":
        raise ValidationError("--canary pair needs the Python API: privdist.audit.audit(algo, canary='pair', "
                              "pair=(D, D_prime), network=...)")
    if args.view is not None and args.view not in VIEWS:
        raise ValidationError(f"--view must be one of {list(VIEWS)}, got {args.view!r}")
    if args.claim not in CLAIMS:
        raise ValidationError(f"--claim must be one of {list(CLAIMS)}, got {args.claim!r}")
    for name, low in (("releases", 8), ("rounds", 1), ("jobs", 1), ("agents", 2)):
        if getattr(args, name) is not None and getattr(args, name) < low:
            raise ValidationError(f"--{name} must be >= {low}, got {getattr(args, name)}")
    if args.ray_address and args.backend != "ray":
        raise ValidationError("--ray-address needs --backend ray")
    if args.delta is not None and not 0 < args.delta < 1:
        raise ValidationError(f"--delta must be in (0, 1), got {args.delta}")
    if not 0 <= args.target_agent < args.agents and args.target in ALGORITHMS:
        raise ValidationError(f"--target-agent must be in 0..{args.agents - 1} (--agents {args.agents}), got "
                              f"{args.target_agent}")
    _check_outputs(args)
    params = parse_params(args.params)
    if args.target in ALGORITHMS:
        supplied = {k: v for k, v in AUDIT_DEFAULTS.get(args.target, {}).items() if k not in params}
        if supplied:
            print(f"  (audit default for {args.target} on the audit's public synthetic problem: "
                  + ", ".join(f"{k}={v!r}" for k, v in supplied.items()) + ")")
        algo, problem, network = make_algorithm(args.target, **{**supplied, **params}), None, None
    else:
        algo, problem, network = _from_spec(args.target, args.run, params)
    rounds = args.rounds
    if rounds is None:
        rounds = (first_releasing_rounds(algo) if args.target in ALGORITHMS else None) or 1
        if rounds > 1:
            print(f"  (rounds: {rounds}, the fewest in which {args.target} releases; --rounds to change)")
    res = audit(algo, problem, network, releases=args.releases, rounds=rounds, canary=args.canary,
                delta=args.delta, claim=args.claim, target=args.target_agent, seed=args.seed, jobs=args.jobs,
                parallel=args.backend, address=args.ray_address,
                secure=args.secure, n_agents=args.agents, view=args.view, allow_large=args.yes)
    d = res.to_dict()
    c = res.claims
    b = d["test"]["bounds"][str(res.delta)]
    print(f"audit {res.algorithm} ({res.kind} problem, {res.canary} canary, {res.rounds} round(s), "
          f"{res.releases} releases per dataset, view {res.view}, {res.mode}, {res.seconds:.1f} s)")
    pd = c["paper_delta"]
    at = "" if pd is None or pd == res.delta else f" (at its delta {pd:g})"
    print(f"  claimed epsilon at delta={res.delta:g}: guarantee {_fmt(c['guarantee'])}, paper {_fmt(c['paper'])}{at}, "
          f"claimed (tight, declared events) {_fmt(c['claimed'])}")
    print(f"  lower bound: epsilon >= {res.epsilon_lb:.4g} with {b['confidence']:.0%} confidence "
          f"({d['test']['statistic']}; FPR {b['fpr']:.4f} <= {b['fpr_ub']:.4f}, FNR {b['fnr']:.4f} <= {b['fnr_ub']:.4f})")
    t = d["tradeoff"]
    if t is not None:
        claim_mu = f" against the claim's {_fmt(t['mu_claim'])}" if t["mu_claim"] is not None else ""
        ratio = f", {t['ratio_to_claim']:.1%} of the audited claim" if t.get("ratio_to_claim") is not None else ""
        print(f"  trade-off (Gaussian DP): mu >= {t['mu_lb']:.4g}{claim_mu} with {t['confidence']:.0%} confidence "
              f"(FPR <= {t['fpr_ub']:.4f}, FNR <= {t['fnr_ub']:.4f}); as a Gaussian claim: epsilon >= "
              f"{_fmt(t['epsilon_lb_gdp'])}{ratio}")
    if res.claim == "paper" and res.epsilon_lb_paper != res.epsilon_lb:
        print(f"  lower bound at the paper's delta: {res.epsilon_lb_paper:.4g}")
    by = f" (by the {' and the '.join(res.refuted_by)} test)" if res.refuted_by else ""
    print(f"  verdict ({res.claim}): {res.verdict}{by}"
          + ("; the declared events themselves are refuted" if res.declared_refuted else ""))
    for why in res.reasons:
        print(f"  not guaranteed: {why}")
    if args.json_out:
        from .._io import write_json

        write_json(args.json_out, d)
    if args.plot:
        for path in plot_privacy_region(res, args.plot):
            print(f"  wrote {path}", file=sys.stderr)
    return 0
