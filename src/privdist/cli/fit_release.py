"""What ``privdist fit`` writes, and which of it is a release (issue 24: the release boundary).

Every output of a fit is one of two kinds:

* **release**, covered by the printed guarantee: ``model.json`` (the private model: for horizontal fits the average
  of the agents' released models; public preprocessing: bounds, row norm, category lists and class names stated as
  public) and ``results.json`` (the privacy report, the settings and a description of the data that holds nothing
  read from it beyond the row and column counts, public under replace-one neighbours). Anything in them read from
  the data without DP (``--scale data``, category lists or class names taken from the data) makes the report
  ``guaranteed: false`` with the reason, never just a warning.
* **owner-only evaluation**, not covered: ``evaluation.json`` (held-out metrics of the private, non-private, pooled
  and local-only models, each party's own test rows scored alone, by the private model and by its personal model
  (issue 39), training scores, clipping counts: noise-free functions of the data),
  ``privacy_utility.png`` (the same models refitted at further epsilons on the same data), a vertical party's
  coefficient block ``parties/party_<m>.json`` (for party ``m`` only; always written, a party needs its block to
  score a row), the private model's spread over further noise draws (``--draws``: refits at the same budget; the
  release is the first draw), the console table and its warnings. In secure mode the evaluation files are written only with ``--evaluation``;
  with ``--seed`` (research mode) always. Each owner-only output is named in the report's ``exposures``.

Public knowledge comes from the command line: ``--bounds col=lo:hi`` or a JSON/TOML file ``{col: [lo, hi]}``,
``--categories col=a,b,c`` or a file ``{col: [a, b, c]}``, ``--classes NEG,POS``.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np

from ..errors import DataFileNotFoundError, DataFormatError, ValidationError

__all__ = ["public_mapping", "parse_bounds", "parse_categories", "parse_classes", "release_boundary", "same_epsilon",
           "draws_spend", "write_fit"]


def _read_mapping_file(path: Path, what: str) -> dict:
    if not path.is_file():
        raise DataFileNotFoundError(f"{what} file {str(path)!r} not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".toml":
            try:
                import tomllib
            except ImportError:  # pragma: no cover - Python 3.10
                import tomli as tomllib
            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ValueError as exc:
        raise DataFormatError(f"cannot read {what} file {path.name}: {exc}") from None
    if not isinstance(data, dict):
        raise DataFormatError(f"{what} file {path.name} must hold a mapping column -> value(s)")
    return data


def public_mapping(specs, what: str, parse_value) -> dict:
    """``specs`` (CLI values: ``col=VALUE`` or a .json/.toml file) -> ``{column: parse_value(VALUE)}``."""
    out: dict = {}
    for spec in specs or ():
        if "=" not in spec or Path(spec).suffix.lower() in (".json", ".toml"):
            for col, value in _read_mapping_file(Path(spec), what).items():
                out[str(col)] = parse_value(value, str(col))
            continue
        col, _, value = spec.partition("=")
        if not col.strip():
            raise ValidationError(f"{what} {spec!r}: name the column before '='")
        out[col.strip()] = parse_value(value, col.strip())
    return out


def _bound_value(value, col: str) -> tuple[float, float]:
    if isinstance(value, str):
        parts = value.split(":")
        if len(parts) != 2:
            raise ValidationError(f"--bounds {col}={value!r}: write LOW:HIGH, e.g. {col}=0:100")
        value = parts
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValidationError(f"bounds of {col!r} must be two numbers (low, high), got {value!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValidationError(f"bounds of {col!r} must be finite with low < high, got ({lo}, {hi})")
    return lo, hi


def _category_value(value, col: str) -> list[str]:
    values = value.split(",") if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not values:
        raise ValidationError(f"categories of {col!r} must be a non-empty list, got {value!r}")
    return [str(v).strip() for v in values]


def parse_bounds(specs) -> dict:
    """``--bounds`` values -> ``{column: (low, high)}`` (public per-column bounds)."""
    return public_mapping(specs, "--bounds", _bound_value)


def parse_categories(specs) -> dict:
    """``--categories`` values -> ``{column: [value, ...]}`` (public category lists)."""
    return public_mapping(specs, "--categories", _category_value)


def parse_classes(text: str | None):
    """``--classes NEG,POS`` -> ``("NEG", "POS")``; ``A,B,C`` -> three classes (one-vs-rest); or None."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) < 2 or not all(parts) or len(set(parts)) != len(parts):
        raise ValidationError(f"--classes needs two or more different values (NEGATIVE,POSITIVE or A,B,C,...), "
                              f"got {text!r}")
    return tuple(parts)


#: Relative tolerance under which two total epsilons are the same budget (a ``--curve`` point at the requested
#: epsilon is the released model, not a refit).
EPSILON_RTOL = 1e-9


def same_epsilon(a: float, b: float) -> bool:
    """Whether ``a`` and ``b`` are the same total epsilon (relative tolerance :data:`EPSILON_RTOL`)."""
    return math.isclose(a, b, rel_tol=EPSILON_RTOL)


def draws_spend(ledgers, delta: float) -> dict:
    """What publishing several fits spends per party: their ledgers merged (each fit's releases after the previous
    one's: sequential composition, :meth:`~privdist.privacy.PrivacyLedger.merge`) and composed at ``delta`` by
    privdist's accountant (:func:`privdist.privacy.privacy_report`), so the mechanism each fit actually used is
    composed: the PLD of Gaussian releases, the Skellam RDP bound of secure sums, the DP range step's releases with
    them. Returns ``{"epsilon": largest over parties, "accountant": "pld" | "skellam_rdp" | "mixed",
    "guaranteed": bool, "fits": len(ledgers)}``."""
    from ..learn._base import guarantee_accountant_of
    from ..privacy import privacy_report

    merged = ledgers[0]
    for ledger in ledgers[1:]:
        merged = merged.merge(ledger)
    report = privacy_report(merged, delta, accountants=("pld",))
    values = [a["epsilon"]["pld"] for a in report["per_agent"]]
    return {"epsilon": max((math.inf if v is None else v) for v in values) if values else 0.0,
            "accountant": guarantee_accountant_of(report["per_agent"]),
            "guaranteed": all(a["guaranteed"] for a in report["per_agent"]), "fits": len(ledgers)}


#: How :func:`release_boundary` names the accountant of :func:`draws_spend`.
_SPEND_BY = {"pld": "PLD", "skellam_rdp": "Skellam RDP bound", "mixed": "PLD or Skellam RDP bound per party"}


def release_boundary(*, vertical: bool, n_parties: int, evaluation: bool, curve: list[float],
                     epsilon: float, draws: int = 1, delta: float | None = None,
                     spend: dict | None = None) -> tuple[dict, list[str]]:
    """``(boundary, exposures)``: which files are releases, which are owner-only, and one exposure per owner-only
    output (named whether or not it is written). ``draws > 1``: the private model's spread over that many noise
    draws (the release is one of them; the others are owner-only refits); ``spend``, :func:`draws_spend` of the
    draws' ledgers, is what publishing them together costs (without it only the basic-composition bound is
    stated)."""
    where = "written" if evaluation else "not written (secure mode; --evaluation writes it)"
    owner = {"evaluation.json": f"held-out metrics of the private, non-private, pooled and local-only models, "
                                + ("" if vertical else "each party's own test rows scored by its model alone, the "
                                   "private model and its personal model (per_party), ")
                                + f"training scores{' and clipping counts' if vertical else ''}: computed without "
                                f"noise from the data ({where})",
             "console": "the comparison table printed by privdist fit (the same metrics, for the data holder)"}
    if curve:
        refits = [e for e in curve if not same_epsilon(e, epsilon)]  # a point at the requested epsilon is draw 0
        total = sum(refits) + epsilon
        if total > epsilon * (1 + EPSILON_RTOL):
            at = f" and delta {(len(refits) + 1) * delta:g}" if delta is not None else ""
            spends = (f"publishing the curve spends up to {total:g} per party{at} (basic composition of the release "
                      f"and {len(refits)} refit{'s' if len(refits) > 1 else ''}), more than the requested "
                      f"{epsilon:g}")
        else:
            spends = "every point is the released model itself: publishing the curve spends nothing beyond it"
        owner["privacy_utility.png"] = (f"the model fitted at total epsilons {curve} on the same data; {spends} "
                                        f"({where})")
    if draws > 1:
        basic = f"at most {draws * epsilon:g}" + (f" at delta {draws * delta:g}" if delta is not None else "")
        if spend is not None and delta is not None:
            exact = (f"{spend['epsilon']:.4g} per party at delta {delta:g} (the {_SPEND_BY[spend['accountant']]} of "
                     f"the {spend['fits']} fits' releases composed by privdist's accountant; {basic} by basic "
                     "composition)")
            if not spend["guaranteed"]:
                exact += " for the messages alone: the report is not a guarantee"
        else:
            exact = f"{basic} per party (basic composition)"
        owner["private model spread (console, evaluation.json)"] = (
            f"{draws - 1} further private fits at total epsilon {epsilon:g} on the same data (the mean +- std over "
            f"{draws} noise draws; the released model is draw 0); publishing the spread spends the {draws} fits "
            f"together, {exact}, not {epsilon:g}")
    if vertical:
        owner["parties/party_<m>.json"] = ("party m's coefficient block, computed without noise from its own "
                                           f"columns; one file per party ({n_parties}), for that party only")
    boundary = {"release": {"model.json": "the private model and its privacy report (covered by the guarantee)",
                            "results.json": "privacy report, settings, public data description (covered)"},
                "owner_only": owner}
    exposures = [f"owner-only {name}: {text}" for name, text in owner.items()]
    return boundary, exposures


def write_fit(out, est, ds, results: dict, evaluation: dict | None, curve, task: str, rows: dict,
              local: list | None = None) -> list[str]:
    """Write the release files, and the owner-only ones when ``evaluation`` is given; returns their names."""
    from .._io import atomic_write_bytes, write_json
    from ..learn.model_io import save_model

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    classes = ds.extras.get("classes")
    if classes and len(classes) > 2:  # labels are class indices; a class absent from the training rows has no model
        classes = [classes[int(i)] for i in est.classes_]
    files = save_model(est, out / "model.json", ds.feature_names, meta={"data": results["data"]}, classes=classes)
    write_json(out / "results.json", results)
    names = [str(p.relative_to(out)) for p in files] + ["results.json"]
    if evaluation is None:
        return names
    write_json(out / "evaluation.json", evaluation)
    names.append("evaluation.json")
    if curve:
        atomic_write_bytes(out / "privacy_utility.png", _curve_png(curve, task, rows, local or []))
        names.append("privacy_utility.png")
    return names


def _curve_png(curve, task: str, rows: dict, local: list) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = "accuracy" if task == "classification" else "rmse"
    fig, ax = plt.subplots(figsize=(5, 3.5))
    names = list(rows)  # private, non-private, centralized, baseline (horizontal and vertical alike)
    ax.plot([c["epsilon"] for c in curve], [c[key] for c in curve], "o-", label=names[0])
    for name, style in zip(names[1:3], ("--", ":")):
        ax.axhline(rows[name][key], ls=style, color="gray", label=name)
    alone = [m[key] for m in local if np.isfinite(m.get(key, np.nan))]
    if alone:
        ax.axhline(float(np.mean(alone)), ls=(0, (5, 1, 1, 1)), color="tab:green",
                   label=f"each party alone (mean of {len(alone)})")
    base = rows.get("majority class") or rows.get("mean predictor")
    ax.axhline(base[key], ls="-.", color="red", label="majority class" if task == "classification" else "mean predictor")
    ax.set_xscale("log")
    values = [c[key] for c in curve] + [rows[n][key] for n in names[1:]]
    values = [v for v in values if np.isfinite(v) and v > 0]
    if key == "rmse" and values and max(values) > 10 * min(values):  # a noisy end of the curve hides the rest
        ax.set_yscale("log")
    eps = [c["epsilon"] for c in curve]
    ax.set_xticks(eps, [f"{e:g}" for e in eps])  # the budgets themselves; no crowded minor labels
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("total epsilon per party")
    ax.set_ylabel(f"test {key.upper() if key == 'rmse' else key} (owner-only evaluation)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return buf.getvalue()
