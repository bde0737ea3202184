"""Warnings of ``privdist fit`` that name the likely cause of a poor private model (issue 25).

They read the data (column magnitudes, rows per party, held-out metrics), so they are owner-only console output,
like the comparison table: never written to the release files (:mod:`privdist.cli.fit_release`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["data_warnings", "tiny_parties", "utility_warnings", "target_hints", "UNSCALED_LIMIT", "ROWS_PER_FEATURE"]

#: A column with |values| above this, fitted with --scale none, is "unscaled".
UNSCALED_LIMIT = 10.0
#: A party with fewer training rows than this many per feature is "tiny".
ROWS_PER_FEATURE = 10


def tiny_parties(sizes, n_features: int, party_names=None) -> list[dict]:
    """The parties holding fewer than ``ROWS_PER_FEATURE`` training rows per feature, smallest first:
    ``[{"party": name, "train_rows": n}, ...]`` (names: :func:`privdist.data.names.party_label`)."""
    from ..data.names import party_label

    rows = [int(s) for s in sizes]
    small = sorted((k for k, n in enumerate(rows) if n < ROWS_PER_FEATURE * n_features), key=lambda k: (rows[k], k))
    return [{"party": party_label(party_names, k), "train_rows": rows[k]} for k in small]


def data_warnings(X_train, scale: str, row_norm: float | None, sizes, feature_names,
                  natural: bool = False, party_names=None) -> list[str]:
    """Unscaled features (``scale == "none"``; ``row_norm`` None: a vertical fit) and tiny parties (``sizes``:
    training rows per party, or None when every party holds every row, as in a vertical fit). ``natural``: the
    parties are the data's own groups (a party column, one file each): the advice never suggests splitting the rows
    into fewer parties (``--agents`` would throw the groups away). Columns and parties are named by their names
    (``feature_names``; ``party_names``, party k = name k) and each warning is one line however many columns or
    parties it concerns: a few names, then how many more (issue 39, :mod:`privdist.data.names`)."""
    from ..data.names import column_labels, name_list

    out = []
    X = np.asarray(X_train.toarray() if hasattr(X_train, "toarray") else X_train, dtype=float)
    d = X.shape[1]
    if scale == "none" and X.size:
        peak = np.max(np.abs(X), axis=0)
        big = np.flatnonzero(peak > UNSCALED_LIMIT)
        if big.size:
            big = big[np.argsort(-peak[big], kind="stable")]  # the largest first
            shown = name_list(column_labels(feature_names, big))
            out.append(f"features unscaled: {shown} reach |value| {peak[big].max():.3g} (> "
                       f"{UNSCALED_LIMIT:g}) with --scale none; "
                       + (f"every row is clipped to norm {row_norm:g}, so these columns swamp the others and the "
                          "private model learns little from the rest" if row_norm is not None else
                          "the parties' shares are clipped to the public b1, so these columns saturate the clipping")
                       + ": state public "
                       "bounds (--bounds COL=LO:HI, or a file) or use --scale dp")
    small = tiny_parties(sizes if sizes is not None else [X.shape[0]], d, party_names if sizes is not None else None)
    if small:
        if sizes is not None:
            listed = name_list([f"{p['party']} ({p['train_rows']})" for p in small])
            who = (f"{len(small)} of {len(sizes)} parties hold fewer than {ROWS_PER_FEATURE} training rows per feature "
                   f"(< {ROWS_PER_FEATURE * d} rows for {d} features): {listed}")
        else:
            who = (f"the training split holds fewer than {ROWS_PER_FEATURE} training rows per feature "
                   f"({small[0]['train_rows']} rows for {d} features)")
        out.append(f"tiny parties: {who}; the noise that protects a party is large beside what its rows say; "
                   + ("fewer features (public --categories, --bounds), a larger budget or more rows help (the "
                      "parties are the data's own groups)" if natural else
                      "use fewer parties (--agents), fewer features, or more rows"))
    return out


def utility_warnings(rows: dict, task: str, data_notes: list[str], *, epsilon: float, rounds: int,
                     n_classes: int = 2) -> list[str]:
    """A private model no better than the baseline on the held-out split, with the likely cause."""
    names = list(rows)
    private, nonpriv = rows[names[0]], rows[names[1]]
    base_name = "majority class" if task == "classification" else "mean predictor"
    base = rows.get(base_name)
    if base is None:
        return []
    if task == "classification":
        key, worse = "accuracy", private["accuracy"] <= base["accuracy"]
        np_worse = nonpriv["accuracy"] <= base["accuracy"]
    else:
        key, worse = "rmse", private["rmse"] >= base["rmse"]
        np_worse = nonpriv["rmse"] >= base["rmse"]
    if not worse:
        return []
    causes = []
    if np_worse:
        causes.append("the same algorithm without noise is no better either, so the noise is not the (only) cause: "
                      "the features, their scaling or the rounds are")
    causes += [n.split(":")[0] + " (above)" for n in data_notes]
    if not np_worse:
        causes.append(f"the noise: total epsilon {epsilon:g} over {rounds} rounds"
                      + (f", shared by {n_classes} one-vs-rest models" if n_classes > 2 else "")
                      + "; a larger --epsilon, fewer --rounds or more rows per party would help")
    return [f"the private model is no better than the {base_name} on the held-out split ({key} "
            f"{private[key]:.3f} vs {base[key]:.3f}); likely cause: " + "; ".join(causes)]


def target_hints(ds, y, target_bounds) -> list[str]:
    """A regression target: few distinct integer values (say how to fit classes), or unscaled (|y| > 10 without
    ``--target-bounds``: the clipped steps cannot reach it)."""
    if ds.extras.get("task") != "regression":
        return []
    out = []
    values = np.unique(y)
    if 2 < values.size <= 10 and np.all(values == np.round(values)):
        out.append(f"the target has {values.size} distinct integer values and was fitted as a regression target; "
                   "--task classification (or --classes A,B,C) fits it as classes (one-vs-rest)")
    peak = float(np.max(np.abs(y))) if np.size(y) else 0.0
    if target_bounds is None and peak > UNSCALED_LIMIT:
        out.append(f"target unscaled: |target| reaches {peak:.3g} (> {UNSCALED_LIMIT:g}) without --target-bounds; "
                   "the private steps are clipped, so the model cannot reach such values in the rounds it has: "
                   "state public bounds of the target (--target-bounds LO:HI)")
    return out


def stated_warnings(ds) -> list[str]:
    """Public lists that miss the data (issue 39; owner-only console advice): rows whose value of a text column is
    outside its stated ``--categories`` (encoded as all zeros: a list spelled ``a,b`` for a column holding ``0..3+``
    dropped the column without a word), and stated ``--classes`` that no row holds (three or more classes: a
    one-vs-rest model of negatives only, still on its share of the budget)."""
    from ..data.names import name_list

    out = []
    X, names = ds.X, [str(n) for n in (ds.feature_names or ())]
    n = X.shape[0]
    for step in ds.extras.get("preprocessing", []):
        if step.get("step") != "onehot_public_categories" or "categories" not in step or hasattr(X, "tocsr"):
            continue  # the shipped Adult's documented lists are not a user's statement
        missed = []
        for col in step["columns"]:
            idx = [j for j, name in enumerate(names) if name in {f"{col}={v}" for v in step["categories"][col]}]
            outside = int(np.sum(~np.any(np.asarray(X[:, idx]) != 0, axis=1)))
            if outside:
                missed.append(f"{col} ({outside} of {n} rows)")
        if missed:
            out.append(f"values outside the stated --categories encode as all zeros: {name_list(missed)}; check "
                       "each list's spelling and case against the column's values")
    classes = ds.extras.get("classes") or []
    public = any(s.get("step") == "classes_public" for s in ds.extras.get("preprocessing", []))
    if public and len(classes) > 2:
        counts = np.bincount(np.asarray(ds.y, dtype=int), minlength=len(classes))
        absent = [str(c) for c, k in zip(classes, counts) if k == 0]
        if absent:
            out.append(f"--classes names {name_list(absent)}, which no row holds: its one-vs-rest model sees "
                       "negatives only and takes a share of the budget; leave it out if it is not a class here")
    return out
