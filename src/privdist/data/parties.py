"""Who holds what: per-row party labels (horizontal) and per-column groups (vertical).

A horizontal partition is represented by ``groups``, one integer per row naming the party (agent) that holds it
(the ``groups=`` of the estimators' ``fit``); :func:`split_rows` turns it into one ``(X_k, y_k)`` pair per party.
Ways to make ``groups``:

* :func:`random_groups`: a seeded random equal split (sizes differ by at most one);
* :func:`column_groups`: the value of a column (natural silos: hospital, region, ...);
* :func:`dirichlet_groups`: label skew, non-IID (each class is spread over parties by proportions drawn from
  ``Dirichlet(alpha)``; small ``alpha`` = strong skew; the usual benchmark of federated learning, Hsu et al. 2019);
* one file per party: :func:`privdist.data.files.load_files` returns its ``groups``.

A vertical partition (ADMM sharing) is a list of column-index arrays, one per party: :func:`column_blocks` builds
it from groups of column names, :func:`feature_blocks` from any of the forms ``feature_groups=`` of
:class:`privdist.learn.SharedFeatureLogisticRegression` accepts, checking every column is in exactly one group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from .._checks import check_int, check_positive
from ..errors import (EmptyPartyError, FeatureGroupError, NonFiniteDataError, ShapeMismatchError, UnknownColumnError,
                      ValidationError)

__all__ = ["PARTITIONS", "random_groups", "column_groups", "dirichlet_groups", "check_groups", "split_rows",
           "column_blocks", "feature_blocks", "make_groups"]

#: Horizontal partitions by name (``make_groups``).
PARTITIONS = ("random", "column", "dirichlet", "contiguous")


def _rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def random_groups(n_samples: int, n_parties: int, rng: np.random.Generator) -> np.ndarray:
    """A seeded random equal split: party of each of ``n_samples`` rows (sizes differ by at most one).

    Raises:
        EmptyPartyError: more parties than rows.
    """
    n, k = check_int(n_samples, "n_samples", 0), check_int(n_parties, "n_parties")
    if k > n:
        raise EmptyPartyError(f"{k} parties but only {n} rows (n_samples={n}): party {n} would hold no rows")
    groups = np.empty(n, dtype=int)
    groups[_rng(rng).permutation(n)] = np.arange(n) % k
    return groups


def column_groups(values) -> tuple[np.ndarray, list]:
    """Natural silos: one party per distinct value of a column, in sorted order.

    Returns:
        ``(groups, names)``: party index per row and the column value of each party.
    """
    values = np.asarray(values)
    if values.ndim != 1 or values.size == 0:
        raise ValidationError(f"party values must be a non-empty 1-D array, got shape {values.shape}")
    missing = _missing(values)
    if missing.any():
        raise NonFiniteDataError(f"{int(missing.sum())} row(s) have no party (NaN or None), first at row "
                                 f"{int(np.flatnonzero(missing)[0])}")
    names, groups = np.unique(values.astype(str) if values.dtype == object else values, return_inverse=True)
    return groups.astype(int), [v.item() if hasattr(v, "item") else v for v in names]


def dirichlet_groups(y, n_parties: int, alpha: float, rng: np.random.Generator, min_rows: int = 1,
                     max_tries: int = 100) -> np.ndarray:
    """Label-skewed (non-IID) parties: the rows of each class go to parties in proportions ~ ``Dirichlet(alpha)``.

    Draws are repeated (with the same generator, so the result is a function of its seed) until every party has
    at least ``min_rows`` rows.

    Args:
        y: Labels (any values; each distinct value is a class).
        n_parties: Number of parties.
        alpha: Concentration (> 0); ``alpha -> inf`` approaches an IID split, ``alpha = 0.1`` is strongly skewed.
        rng: Generator (seed it for a reproducible partition).
        min_rows: Fewest rows a party may get.
        max_tries: Redraws before giving up.

    Raises:
        EmptyPartyError: no draw in ``max_tries`` gives every party ``min_rows`` rows.
    """
    y = np.asarray(y)
    k = check_int(n_parties, "n_parties")
    alpha = check_positive(alpha, "alpha")
    rng = _rng(rng)
    if k * min_rows > y.size:
        raise EmptyPartyError(f"{k} parties need at least {k * min_rows} rows, the data has {y.size}")
    classes = np.unique(y)
    for _ in range(check_int(max_tries, "max_tries")):
        groups = np.empty(y.size, dtype=int)
        for c in classes:
            idx = rng.permutation(np.flatnonzero(y == c))
            share = rng.dirichlet(np.full(k, alpha))
            cuts = (np.cumsum(share)[:-1] * idx.size).astype(int)
            for party, part in enumerate(np.split(idx, cuts)):
                groups[part] = party
        if np.bincount(groups, minlength=k).min() >= min_rows:
            return groups
    raise EmptyPartyError(f"Dirichlet(alpha={alpha}) left a party with fewer than {min_rows} rows in {max_tries} "
                          "draws; raise alpha or use fewer parties")


def make_groups(kind: str, n_samples: int, n_parties: int | None = None, *, y=None, values=None, alpha: float = 0.5,
                rng: np.random.Generator | None = None) -> np.ndarray:
    """Groups by name: ``"random"``, ``"contiguous"`` (blocks in file order), ``"column"`` (``values``) or
    ``"dirichlet"`` (``y``, ``alpha``).

    Raises:
        UnknownNameError: unknown ``kind``.
    """
    from ..errors import UnknownNameError

    if kind == "column":
        if values is None:
            raise ValidationError("partition 'column' needs the party column's values (party_column=...)")
        return column_groups(values)[0]
    if kind == "contiguous":
        k = check_int(n_parties, "n_parties")
        if k > n_samples:
            raise EmptyPartyError(f"{k} parties but only {n_samples} rows")
        return np.repeat(np.arange(k), [len(b) for b in np.array_split(np.arange(n_samples), k)])
    if kind == "random":
        return random_groups(n_samples, n_parties, rng)
    if kind == "dirichlet":
        return dirichlet_groups(y, n_parties, alpha, rng)
    raise UnknownNameError("partition", kind, PARTITIONS)


def check_groups(groups, n_samples: int, n_parties: int | None = None) -> tuple[np.ndarray, int]:
    """Validate per-row party labels; return them as ``0..K-1`` integers and ``K``.

    Labels may be any values (they are mapped to ``0..K-1`` in sorted order) unless ``n_parties`` is given, in
    which case they must be integers in ``0..n_parties-1`` and every party must appear.

    Raises:
        ShapeMismatchError: ``len(groups) != n_samples``.
        EmptyPartyError: a party of ``0..n_parties-1`` holds no rows (the message names it).
        ValidationError: labels outside ``0..n_parties-1``.
    """
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n_samples:
        raise ShapeMismatchError(f"groups must give one party per row: {n_samples} rows, got shape {groups.shape}")
    missing = _missing(groups)
    if missing.any():  # NaN / None is no party's name (it would silently become a party of its own)
        raise NonFiniteDataError(f"groups has {int(missing.sum())} row(s) without a party (NaN or None), first at "
                                 f"row {int(np.flatnonzero(missing)[0])}")
    if n_parties is None:
        _, inv = np.unique(groups, return_inverse=True)
        return inv.astype(int), int(inv.max()) + 1 if inv.size else 0
    k = check_int(n_parties, "n_parties")
    if not np.issubdtype(groups.dtype, np.integer) or (groups.size and (groups.min() < 0 or groups.max() >= k)):
        raise ValidationError(f"groups must be integers in 0..{k - 1} with n_parties={k}")
    counts = np.bincount(groups, minlength=k)
    if (counts == 0).any():
        raise EmptyPartyError(f"party {int(np.flatnonzero(counts == 0)[0])} holds no rows "
                              f"({int((counts == 0).sum())} of {k} parties are empty)")
    return groups.astype(int), k


def _missing(values: np.ndarray) -> np.ndarray:
    """Which entries of a party-label array are missing (NaN, or None in an object array)."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype == object:
        return np.array([v is None or (isinstance(v, float) and v != v) for v in values], dtype=bool)
    return np.zeros(values.shape, dtype=bool)


def split_rows(X, y, groups, n_parties: int | None = None) -> list[tuple]:
    """One ``(X_k, y_k)`` pair per party from per-row ``groups`` (rows keep their order within a party).

    Raises:
        EmptyPartyError: a party holds no rows.
    """
    groups, k = check_groups(groups, X.shape[0], n_parties)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    y = np.asarray(y)
    return [(X[groups == p], y[groups == p]) for p in range(k)]


def column_blocks(feature_names: Sequence[str], groups) -> list[np.ndarray]:
    """Column-index blocks of a vertical partition from groups of column names.

    Args:
        feature_names: The data set's column names.
        groups: A mapping ``party name -> column names`` or a sequence of column-name lists, one per party.
            Every column must be in exactly one group (:func:`privdist.data.vertical_partition` checks it).

    Returns:
        One integer array of column indices per party.

    Raises:
        UnknownColumnError: a name that is not a column.
        EmptyPartyError: a party with no columns.
    """
    names = [str(n) for n in feature_names]
    where = {n: j for j, n in enumerate(names)}
    lists = list(groups.values()) if isinstance(groups, Mapping) else list(groups)
    blocks = []
    for m, cols in enumerate(lists):
        if isinstance(cols, str):
            cols = [cols]
        if len(cols) == 0:
            raise EmptyPartyError(f"party {m} would get no columns")
        missing = [c for c in cols if str(c) not in where]
        if missing:
            raise UnknownColumnError(f"party {m}: column(s) {missing} are not in the data; columns: {names}")
        blocks.append(np.array([where[str(c)] for c in cols], dtype=int))
    return blocks


def _column_index(col, names: list[str] | None, d: int, m: int) -> list[int]:
    """Column ``col`` of party ``m`` as indices: an integer, a column name, or an attribute ``a`` whose one-hot
    columns are named ``"a=..."``."""
    if isinstance(col, (int, np.integer)) and not isinstance(col, bool):
        if not 0 <= col < d:
            raise FeatureGroupError(f"party {m}: column index {int(col)} is outside 0..{d - 1}")
        return [int(col)]
    if names is None:
        raise FeatureGroupError(f"party {m}: column {col!r} is a name but X has no column names (pass a DataFrame "
                                "or column indices)")
    key = str(col)
    if key in names:
        return [names.index(key)]
    hits = [j for j, n in enumerate(names) if n.startswith(key + "=")]
    if not hits:
        raise UnknownColumnError(f"party {m}: column {key!r} is not in the data; columns: {names}")
    return hits


def feature_blocks(feature_groups, n_features: int, n_parties: int | None = None,
                   feature_names: Sequence[str] | None = None) -> list[np.ndarray]:
    """Column indices of each party of a vertical partition (issue 16; S2's feature blocks).

    Args:
        feature_groups: None (``n_parties`` contiguous, even groups), one party index per column
            (``[0, 0, 1, 2, ...]``, parties ``0..K-1``), or one sequence of columns per party (indices, names, or
            an attribute name standing for its one-hot columns ``"name=..."``).
        n_features: Number of columns ``d``.
        n_parties: Parties of the even split (used only when ``feature_groups`` is None).
        feature_names: Column names, to resolve names.

    Returns:
        One sorted integer array per party.

    Raises:
        EmptyPartyError: a party with no columns (or ``n_parties > n_features``).
        FeatureGroupError: a column in no group or in two groups, an index out of range, a per-column list of the
            wrong length.
        UnknownColumnError: a name that is not a column.
    """
    d = check_int(n_features, "n_features")
    names = None if feature_names is None else [str(n) for n in feature_names]
    if feature_groups is None:
        k = check_int(n_parties, "n_parties")
        if k > d:
            raise EmptyPartyError(f"{k} parties but only {d} column(s): party {d} would hold no columns")
        return [np.asarray(b) for b in np.array_split(np.arange(d), k)]
    if isinstance(feature_groups, Mapping):
        feature_groups = list(feature_groups.values())
    groups = list(feature_groups)
    if groups and all(isinstance(g, (int, np.integer)) and not isinstance(g, bool) for g in groups):
        labels = np.asarray(groups, dtype=int)  # one party per column
        if labels.size != d:
            raise FeatureGroupError(f"feature_groups lists a party for {labels.size} column(s), X has {d}")
        if labels.min() < 0:
            raise FeatureGroupError(f"party indices must be >= 0, got {int(labels.min())}")
        counts = np.bincount(labels)
        if (counts == 0).any():
            raise EmptyPartyError(f"party {int(np.flatnonzero(counts == 0)[0])} holds no columns (parties are "
                                  f"0..{counts.size - 1})")
        return [np.flatnonzero(labels == m) for m in range(counts.size)]
    if not groups:
        raise EmptyPartyError("feature_groups lists no party")
    owner = np.full(d, -1)
    blocks = []
    for m, cols in enumerate(groups):
        cols = [cols] if isinstance(cols, (str, int, np.integer)) else list(cols)
        if not cols:
            raise EmptyPartyError(f"party {m} holds no columns (empty group {m})")
        idx = sorted({j for c in cols for j in _column_index(c, names, d, m)})
        taken = [j for j in idx if owner[j] >= 0]
        if taken:
            what = names[taken[0]] if names else taken[0]
            raise FeatureGroupError(f"column {what!r} is in the groups of parties {int(owner[taken[0]])} and {m}; "
                                    "every column must belong to exactly one party")
        owner[idx] = m
        blocks.append(np.asarray(idx, dtype=int))
    missing = np.flatnonzero(owner < 0)
    if missing.size:
        what = [names[j] for j in missing[:5]] if names else missing[:5].tolist()
        raise FeatureGroupError(f"{missing.size} column(s) are in no party's group (first: {what}); every column "
                                "must belong to exactly one party")
    return blocks
