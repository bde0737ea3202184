"""``privdist account``: privacy calculator (epsilon of M releases, or the noise that meets a budget).

``privdist account --mechanism gaussian --noise-multiplier 5 --count 100 --delta 1e-5`` prints the total epsilon
of 100 Gaussian releases with sigma = 5 x sensitivity under the paper formula, RDP and PLD.
``privdist account --calibrate --target-epsilon 1 --delta 1e-5 --count 100`` prints the smallest noise
multiplier meeting the budget under each accountant (spec §1.3; STYLE #8).
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from .._checks import check_int, check_positive, check_probability
from ..errors import CalibrationError, ValidationError
from ..privacy import ACCOUNTANTS, COMPOSITIONS, MECHANISMS, agent_epsilon, calibrate, paper_bound
from ..privacy.calibration import default_composition, mechanism_release

__all__ = ["register"]


def register(sub) -> None:
    """Add the ``account`` sub-command to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "account",
        help="privacy calculator: epsilon of M releases, or the noise that meets a budget",
        description="Epsilon of COUNT releases of a Gaussian or Laplace mechanism under the paper formula, RDP "
        "and PLD; with --calibrate, the smallest noise multiplier meeting --target-epsilon.",
    )
    p.add_argument("--mechanism", choices=MECHANISMS, default="gaussian", help="noise mechanism (default gaussian)")
    p.add_argument("--noise-multiplier", type=float, help="sigma / l2 sensitivity (Gaussian), scale / l1 (Laplace)")
    p.add_argument("--count", type=int, required=True, help="number of releases (rounds)")
    p.add_argument("--delta", type=float, required=True, help="target delta (and per-release delta of the paper formula)")
    p.add_argument(
        "--paper-formula",
        choices=("auto", *COMPOSITIONS),
        default="auto",
        help="paper composition: auto (moments for gaussian, basic for laplace), moments, dzoa, advanced, basic",
    )
    p.add_argument("--delta-prime", type=float, help="slack delta' of advanced composition (default: --delta)")
    p.add_argument("--calibrate", action="store_true", help="find the smallest noise multiplier instead")
    p.add_argument("--target-epsilon", type=float, help="total epsilon budget (with --calibrate)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_main)


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def _account(args, formula: str) -> dict:
    z = check_positive(args.noise_multiplier, "--noise-multiplier")
    entries = [(mechanism_release(args.mechanism, z, args.delta, formula), args.count)]
    eps = {name: agent_epsilon(entries, args.delta, name, delta_prime=args.delta_prime) for name in ACCOUNTANTS}
    bound = paper_bound(entries, args.delta_prime)
    return {
        "mechanism": args.mechanism,
        "noise_multiplier": z,
        "count": args.count,
        "delta": args.delta,
        "epsilon": eps,
        "paper_formula": formula,
        "paper_delta": bound.delta,
        "paper_note": bound.reason,
    }


def _calibrate(args, formula: str) -> dict:
    if args.target_epsilon is None:
        raise ValidationError("--target-epsilon is required with --calibrate")
    target = check_positive(args.target_epsilon, "--target-epsilon")
    z: dict[str, float | None] = {}
    note = None
    for name in ACCOUNTANTS:
        try:
            z[name] = calibrate(target, args.delta, args.count, args.mechanism, name, formula,
                                delta_prime=args.delta_prime)
        except CalibrationError as exc:
            if name != "paper":
                raise
            z[name], note = None, str(exc)
    paper_delta = None
    if z["paper"] is not None:
        entries = [(mechanism_release(args.mechanism, z["paper"], args.delta, formula), args.count)]
        paper_delta = paper_bound(entries, args.delta_prime).delta
    return {
        "mechanism": args.mechanism,
        "target_epsilon": target,
        "count": args.count,
        "delta": args.delta,
        "noise_multiplier": z,
        "paper_formula": formula,
        "paper_delta": paper_delta,
        "paper_note": note,
    }


def _main(args: argparse.Namespace) -> int:
    check_int(args.count, "--count")
    check_probability(args.delta, "--delta")
    if args.delta_prime is not None:
        check_probability(args.delta_prime, "--delta-prime")
    else:
        args.delta_prime = args.delta  # AMB-V6: delta' = delta
    formula = default_composition(args.mechanism) if args.paper_formula == "auto" else args.paper_formula
    if args.calibrate:
        out = _calibrate(args, formula)
    else:
        if args.noise_multiplier is None:
            raise ValidationError("--noise-multiplier is required (or use --calibrate with --target-epsilon)")
        out = _account(args, formula)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    _print(out, calibrating=args.calibrate)
    return 0


def _print(out: dict, calibrating: bool) -> None:
    console = Console()
    if calibrating:
        title = (f"smallest {out['mechanism']} noise multiplier for epsilon {out['target_epsilon']:g}, "
                 f"delta {out['delta']:g}, {out['count']} releases")
        values, column = out["noise_multiplier"], "noise multiplier"
    else:
        title = (f"{out['count']} {out['mechanism']} releases, noise multiplier {out['noise_multiplier']:g}, "
                 f"delta {out['delta']:g}")
        values, column = out["epsilon"], "epsilon"
    table = Table(title=title)
    table.add_column("accountant")
    table.add_column(column, justify="right")
    table.add_column("delta", justify="right")
    for name in ACCOUNTANTS:
        label = f"paper ({out['paper_formula']})" if name == "paper" else name
        delta = out["paper_delta"] if name == "paper" else out["delta"]
        table.add_row(label, _fmt(values[name]), _fmt(delta))
    console.print(table)
    if out.get("paper_note"):
        console.print(f"paper formula: {out['paper_note']}")
    if not calibrating:
        paper, pld = out["epsilon"]["paper"], out["epsilon"]["pld"]
        if paper is not None and pld is not None and paper < pld:
            console.print(
                "[yellow]note:[/yellow] the paper formula is below the exact PLD epsilon here, so it is not a "
                "valid upper bound for these parameters"
            )
