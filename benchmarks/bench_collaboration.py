"""Benchmark ``collaboration``: where a private collaboration at total epsilon 1 beats each party's local-only model.

Issue 16 ("Done when"). UCI Adult as shipped (:func:`privdist.data.load_adult`): the 30,162 complete training rows
train, the 15,060 complete test rows score every model (test accuracy). Per scenario and seed:

* horizontal (parties hold rows): ``K`` parties of ``R`` rows each, drawn at random without replacement from the
  training rows (``K R`` rows in all); the private model is :class:`privdist.learn.DistributedLogisticRegression`
  with its defaults (DPSGD, 100 rounds, complete network) at total ``(epsilon, delta) = (1, 1e-5)`` per party; the
  local-only model of a party is scikit-learn's ``LogisticRegression`` on its own rows (same objective scale as
  ``privdist fit``: ``C = 1 / (2 alpha n)``, ``alpha = 1e-4``), non-private (it never leaves the party);
* vertical (parties hold columns; labels at the coordinator, S2): all training rows, the columns split among ``M``
  parties (even contiguous split, or by attribute); the private model is
  :class:`privdist.learn.SharedFeatureLogisticRegression` with its defaults at total ``(1, 1e-5)`` per party; the
  local-only model of party ``m`` is ``LogisticRegression(C = 1 / (2 lambda))`` (the same sum-loss objective) on
  its own columns WITH the labels (the label holder's model if it held those columns; in S2 every party also
  reads the labels off the protocol).

Printed per scenario: mean +- standard deviation over seeds of the private model's accuracy, the mean, best and
worst local-only accuracy over parties, the fraction of parties whose local-only model the private model beats
(mean over seeds), the non-private collaboration and the centralized model. Run:
``python benchmarks/bench_collaboration.py [--seeds 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

HORIZONTAL = [(10, 100), (50, 100), (300, 100), (1000, 30), (600, 50), (60, 500), (10, 3016)]  # (parties K, rows per party R)
ATTRIBUTES = {  # a split of Adult's 14 attributes into 3 parties (one-hot columns follow their attribute)
    "demographics": ["age", "race", "sex", "native-country", "marital-status", "relationship"],
    "employment": ["workclass", "occupation", "hours-per-week", "fnlwgt"],
    "education+capital": ["education", "education-num", "capital-gain", "capital-loss"],
}
VERTICAL = [2, 3, 4, 6, "attributes"]


def _sk(C):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=2000)


def _acc(score, y):
    return float(np.mean((score > 0) == (y > 0)))


def horizontal(X, y, Xte, yte, K, R, seed):
    from privdist.learn import DistributedLogisticRegression

    rng = np.random.default_rng(seed)
    idx = rng.choice(X.shape[0], K * R, replace=False)
    Xs, ys, groups = X[idx], y[idx], np.repeat(np.arange(K), R)
    out = {}
    for name, eps in (("private", 1.0), ("non_private", None)):
        est = DistributedLogisticRegression(epsilon=eps, delta=1e-5, random_state=seed).fit(Xs, ys, groups=groups)
        out[name] = est.score(Xte, yte)
    Z, Zte = est.preprocessor_.transform(Xs), est.preprocessor_.transform(Xte)
    out["centralized"] = _sk(1.0 / (2e-4 * K * R)).fit(Z, ys).score(Zte, yte)
    local = []
    for k in range(K):
        m = groups == k
        if len(np.unique(ys[m])) < 2:  # one class only: it predicts that class
            local.append(float(np.mean(yte == ys[m][0])))
        else:
            local.append(_sk(1.0 / (2e-4 * R)).fit(Z[m], ys[m]).score(Zte, yte))
    out["local"] = local
    return out


def vertical(X, y, Xte, yte, names, split, seed):
    from privdist.data import feature_blocks
    from privdist.learn import SharedFeatureLogisticRegression

    groups = list(ATTRIBUTES.values()) if split == "attributes" else None
    n_parties = 3 if split == "attributes" else split
    out = {}
    for name, eps in (("private", 1.0), ("non_private", None)):
        est = SharedFeatureLogisticRegression(epsilon=eps, delta=1e-5, n_parties=n_parties, feature_groups=groups,
                                              random_state=seed)
        blocks = feature_blocks(groups, X.shape[1], n_parties, names)
        est.set_params(feature_groups=[b.tolist() for b in blocks]).fit(X, y)
        out[name] = est.score(Xte, yte)
    lam = est.alpha
    out["centralized"] = _sk(1.0 / (2 * lam)).fit(X, y).score(Xte, yte)
    out["local"] = [_sk(1.0 / (2 * lam)).fit(X[:, b], y).score(Xte[:, b], yte) for b in blocks]
    return out


def _row(label, runs):
    priv = np.array([r["private"] for r in runs])
    local = np.array([r["local"] for r in runs])  # (seeds, parties)
    beats = np.mean([np.mean(r["private"] > np.array(r["local"])) for r in runs])
    return {"scenario": label, "private_mean": float(priv.mean()), "private_std": float(priv.std()),
            "local_mean": float(local.mean()), "local_best": float(local.max(axis=1).mean()),
            "local_worst": float(local.min(axis=1).mean()), "beats_fraction": float(beats),
            "non_private": float(np.mean([r["non_private"] for r in runs])),
            "centralized": float(np.mean([r["centralized"] for r in runs])), "seeds": len(runs)}


def main(argv=None):
    from privdist.data import load_adult

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="two horizontal and two vertical scenarios")
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--horizontal", help="scenarios KxR, comma-separated (default: all of HORIZONTAL)")
    p.add_argument("--vertical", help="splits M or 'attributes', comma-separated (default: all of VERTICAL)")
    args = p.parse_args(argv)
    ds = load_adult()
    X = ds.X.toarray() if hasattr(ds.X, "toarray") else np.asarray(ds.X)
    n = ds.extras["n_train"]
    y = np.where(ds.y > 0, 1, 0)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    print(f"majority class (test): {max(yte.mean(), 1 - yte.mean()):.4f}")
    hs = HORIZONTAL[:2] if args.quick else HORIZONTAL
    vs = VERTICAL[1:2] + VERTICAL[-1:] if args.quick else VERTICAL
    if args.horizontal is not None:
        hs = [tuple(int(v) for v in s.split("x")) for s in args.horizontal.split(",") if s]
    if args.vertical is not None:
        vs = [v if v == "attributes" else int(v) for v in args.vertical.split(",") if v]
    rows = []
    warnings.simplefilter("ignore")
    for split in vs:
        t0 = time.perf_counter()
        runs = [vertical(Xtr, ytr, Xte, yte, ds.feature_names, split, s) for s in range(args.seeds)]
        label = "vertical by attribute M=3" if split == "attributes" else f"vertical even M={split}"
        rows.append(_row(label, runs) | {"seconds": time.perf_counter() - t0,
                                          "local_per_party": [round(v, 4) for v in runs[0]["local"]]})
        print(json.dumps(rows[-1]), flush=True)
    for K, R in hs:
        t0 = time.perf_counter()
        runs = [horizontal(Xtr, ytr, Xte, yte, K, R, s) for s in range(args.seeds)]
        rows.append(_row(f"horizontal K={K} R={R}", runs) | {"seconds": time.perf_counter() - t0})
        print(json.dumps(rows[-1]), flush=True)
    print(f"{'scenario':28s} {'private (mean+-sd)':>20s} {'local mean':>10s} {'best':>7s} {'worst':>7s} "
          f"{'beats':>6s} {'non-priv':>8s} {'central':>8s}")
    for r in rows:
        print(f"{r['scenario']:28s} {r['private_mean']:.4f} +- {r['private_std']:.4f}     {r['local_mean']:.4f} "
              f"{r['local_best']:.4f} {r['local_worst']:.4f} {r['beats_fraction']:6.2f} {r['non_private']:.4f}   "
              f"{r['centralized']:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
