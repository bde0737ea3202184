"""Diagnosis ``floor`` (issue 39): why the private global model falls below the constant predictor on small cases.

Everything here is measured on a VALIDATION split of each case's TRAINING rows (30 %, a fixed seed; the test rows of
``bench_utility`` are never read), with the estimators' defaults at total epsilon 1 (``random_state`` = draw):

* ``private``: the default private model; ``shrunk s``: its coefficients scaled by ``s`` with its intercept kept
  (post-hoc, to see whether the coefficients' noise is what costs); ``intercept``: ``s = 0``;
* ``exact ranges``: the same private fit with every column's range (and a regressor's target range) read off the
  training rows without noise (``scale="data"``, ``target_bounds`` = min/max: NOT private, a diagnosis of the DP
  range step only: the gap to ``private`` is what the range step costs);
* ``noise / signal``: the mean over validation rows of the variance over draws of the private model's score
  (``x^T w + b`` on its own preprocessing: the logit, or the prediction in the target's units), divided by the
  variance over rows of the non-private model's score: above 1, the noise in the scores exceeds their signal.

Run: ``python benchmarks/diag_floor.py [--cases Guatemala,radon] [--draws 5]`` (prints a table; writes nothing).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

SHRINK = (0.75, 0.5, 0.25, 0.0)


def _cases(names):
    from bench_utility import sklearn_cases
    from silo_cases import silo_cases

    return [c for c in silo_cases()[0] + sklearn_cases() if any(n in c["name"] for n in names)]


def _validation(case, seed: int = 7):
    """The case's training rows split 70/30 at random; parties renumbered over the 70 %."""
    rng = np.random.default_rng(seed)
    n = case["ytr"].shape[0]
    va = np.zeros(n, dtype=bool)
    va[rng.choice(n, int(round(0.3 * n)), replace=False)] = True
    groups = np.unique(case["groups"][~va], return_inverse=True)[1]
    return (case["Xtr"][~va], case["ytr"][~va], groups), (case["Xtr"][va], case["ytr"][va])


def _score(cls, model, coef, intercept, X, y):
    """Accuracy (classification) or RMSE (regression, predictions clipped to the model's target bounds)."""
    Z = np.asarray(model.preprocessor_.transform(X))
    s = Z @ coef + intercept
    if cls:
        return float(np.mean(model.classes_[(s > 0).astype(int)] == y))
    bounds = getattr(model, "target_bounds_", None)
    if bounds is not None:
        s = np.clip(s, *bounds)
    return float(np.sqrt(np.mean((s - y) ** 2)))


def diagnose(case, draws: int = 5) -> dict:
    from privdist.learn import DistributedLogisticRegression, DistributedRidge

    cls = case.get("task", "classification") == "classification"
    Est = DistributedLogisticRegression if cls else DistributedRidge
    (X, y, g), (Xv, yv) = _validation(case)
    kw = {"bounds": case["bounds"]} if case.get("bounds") is not None else {}
    exact = {"scale": "data"} if cls else {"scale": "data", "target_bounds": (float(y.min()), float(y.max()))}
    if cls:
        values, counts = np.unique(y, return_counts=True)
        baseline = float(np.mean(yv == values[np.argmax(counts)]))
    else:
        baseline = float(np.sqrt(np.mean((yv - y.mean()) ** 2)))
    out = {"case": case["name"], "rows": int(y.size), "validation": int(yv.size), "baseline": baseline}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = Est(epsilon=None, **kw).fit(X, y, groups=g)
        out["non_private"] = _score(cls, plain, plain.coef_, plain.intercept_, Xv, yv)
        rows = {k: [] for k in ("private", *[f"shrunk {s:g}" for s in SHRINK], "exact ranges")}
        scores = []
        for d in range(draws):
            m = Est(epsilon=1.0, random_state=d, **kw).fit(X, y, groups=g)
            rows["private"].append(_score(cls, m, m.coef_, m.intercept_, Xv, yv))
            for s in SHRINK:
                rows[f"shrunk {s:g}"].append(_score(cls, m, s * m.coef_, m.intercept_, Xv, yv))
            e = Est(epsilon=1.0, random_state=d, **{**kw, **exact}).fit(X, y, groups=g)
            rows["exact ranges"].append(_score(cls, e, e.coef_, e.intercept_, Xv, yv))
            scores.append(np.asarray(m.preprocessor_.transform(Xv)) @ m.coef_ + m.intercept_)
    signal = np.asarray(plain.preprocessor_.transform(Xv)) @ plain.coef_ + plain.intercept_
    out["noise_over_signal"] = float(np.mean(np.var(np.array(scores), axis=0)) / max(np.var(signal), 1e-300))
    out.update({k: (float(np.mean(v)), float(np.std(v))) for k, v in rows.items()})
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="Guatemala,radon,breast,diabetes,Bangladesh,London,Dutch")
    p.add_argument("--draws", type=int, default=5)
    args = p.parse_args(argv)
    cols = ["baseline", "non_private", "private", *[f"shrunk {s:g}" for s in SHRINK], "exact ranges"]
    print("| case | rows (validation) | " + " | ".join(cols) + " | noise / signal |")
    print("|---" * (len(cols) + 3) + "|")
    for case in _cases(args.cases.split(",")):
        r = diagnose(case, args.draws)
        cells = [f"{r[c]:.3f}" if not isinstance(r[c], tuple) else f"{r[c][0]:.3f} +- {r[c][1]:.3f}" for c in cols]
        print(f"| {r['case']} | {r['rows']} ({r['validation']}) | " + " | ".join(cells)
              + f" | {r['noise_over_signal']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
