"""A user's own data from files: CSV, Parquet, svmlight and numpy (``.npy``/``.npz``).

Every format is read by a library reader (pandas for CSV/TSV, pyarrow through pandas for Parquet, scikit-learn's
``load_svmlight_file``, ``numpy.load`` with ``allow_pickle=False``); nothing here parses text by hand. A table's
``target`` column becomes the labels, the other columns the features, checked for what a distributed private fit
needs, each failure with a named error:

* a ``target`` (or ``party_column``, ``drop``) name that is not a column: :class:`UnknownColumnError` listing them;
* non-numeric feature columns: :class:`NonNumericDataError`, unless ``encode="onehot"`` (pandas ``get_dummies``).
  The categories are the PUBLIC list given in ``categories`` (values outside it encode as all zeros, so nothing in
  the encoding depends on the data), else the sorted values read from the data, recorded in
  ``extras["preprocessing"]`` as a step that is *not private* (the column names, e.g. ``city=<a rare value>``,
  would publish data verbatim; issue 24: such a fit is reported ``guaranteed: false``);
* NaN or infinity anywhere: :class:`NonFiniteDataError` (naming the column and row; no silent imputation);
* an empty file: :class:`EmptyPartyError`.

Labels: a non-numeric target, or one with exactly two distinct values, is a binary classification target mapped
to -1/+1 in sorted order (``extras["classes"]`` keeps the original values); otherwise the target is a numeric
response. ``task="regression"`` or ``"classification"`` overrides the guess. The class names are public when given
(``classes=(negative, positive)``) or a canonical encoding (0/1, -1/+1, False/True); otherwise they are read from
the data and recorded as a non-private step (a model file that names them publishes them).

Nothing is scaled here: scaling and row clipping are :mod:`privdist.data.bounds` (public bounds; any scaling read
off the data is explicit and recorded as a non-private step).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import (DataFileNotFoundError, DataFormatError, EmptyPartyError, NonFiniteDataError,
                      NonNumericDataError, UnknownColumnError, ValidationError)
from .dataset import Dataset
from .frames import check_column_names, check_stray, same_when_normalised
from .hints import categories_hint, classes_hint, classes_step

__all__ = ["FILE_FORMATS", "file_format", "load_file", "load_files", "classes_hint", "TASKS"]

#: Formats and the file-name endings that select them (``format=`` overrides the ending).
FILE_FORMATS: dict[str, tuple[str, ...]] = {
    "csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz"),
    "tsv": (".tsv", ".tsv.gz", ".tab"),
    "parquet": (".parquet", ".pq"),
    "svmlight": (".svm", ".svmlight", ".libsvm", ".svm.gz", ".libsvm.gz"),
    "npy": (".npy",),
    "npz": (".npz",),
}
TASKS = ("auto", "classification", "regression")


def file_format(path, format: str | None = None) -> str:
    """The format of ``path``: ``format`` if given, else from the file-name ending.

    Raises:
        DataFormatError: unknown ``format`` or an ending no format claims (the message lists them).
    """
    if format is not None:
        if format not in FILE_FORMATS:
            raise DataFormatError(f"unknown file format {format!r}; known: {', '.join(FILE_FORMATS)}")
        return format
    name = Path(path).name.lower()
    for fmt, endings in FILE_FORMATS.items():
        if name.endswith(endings):
            return fmt
    known = ", ".join(e for ends in FILE_FORMATS.values() for e in ends)
    raise DataFormatError(f"cannot tell the format of {str(path)!r} from its name (known endings: {known}); "
                          "pass format='csv' (or --format)")


def load_file(
    path: str | os.PathLike,
    target: str | int | None = None,
    *,
    format: str | None = None,
    encode: str = "none",
    drop: Sequence[str] = (),
    party_column: str | None = None,
    task: str = "auto",
    n_features: int | None = None,
    name: str | None = None,
    categories: dict | None = None,
    classes: Sequence | None = None,
) -> Dataset:
    """Load a labelled data set from a file.

    Args:
        path: A ``.csv``/``.tsv`` (optionally compressed), ``.parquet``, svmlight (``.svm``, ``.libsvm``),
            ``.npy`` or ``.npz`` file.
        target: The label column: a column name (CSV, TSV, Parquet); for ``.npy`` an integer column index
            (default: the last column); for ``.npz`` the name of the label array (default ``"y"``, features in
            ``"X"``); ignored by svmlight (labels are in the file).
        format: Override the format guessed from the file name (a key of :data:`FILE_FORMATS`).
        encode: ``"none"`` (non-numeric feature columns are an error) or ``"onehot"`` (they are one-hot encoded).
        drop: Columns to leave out of the features (tables only).
        party_column: A column naming each row's party (natural silos): removed from the features and kept in
            ``extras["party"]`` (the values) for :func:`privdist.data.parties.column_groups`.
        task: ``"auto"``, ``"classification"`` (two classes: labels mapped to -1/+1; three or more: each label's
            index in ``extras["classes"]``) or ``"regression"``. ``"auto"`` takes a numeric target with more than
            two values as a regression target.
        n_features: Column count of an svmlight file (default: the largest index in the file).
        name: Data set name (default: the file name).
        categories: PUBLIC category lists of text columns (or of numeric codes), ``{column: [value, ...]}`` (stated
            before seeing the data; with ``encode="onehot"`` a listed column gets exactly these columns, in this
            order, compared as text, and a value outside the list encodes as all zeros). Unlisted text columns take
            their categories from the data (a non-private step).
        classes: PUBLIC ``(negative, positive)`` (or ``(c0, c1, c2, ...)``) class values of a classification
            target (a value outside them is a :class:`ValidationError`; a class absent from the data is allowed).

    Returns:
        A dense :class:`Dataset` (CSR for svmlight) with ``feature_names``; ``extras`` holds ``"task"``,
        ``"classes"`` (classification), ``"party"`` (with ``party_column``), ``"source"`` (the file name) and
        ``"preprocessing"`` (steps that read the data, e.g. the one-hot categories).

    Raises:
        DataFileNotFoundError: no such file.
        DataFormatError: unknown format, unreadable content, bad ``encode``/``task``.
        UnknownColumnError: ``target``, ``party_column`` or a ``drop`` column is not in the table.
        NonNumericDataError: non-numeric feature columns with ``encode="none"``.
        NonFiniteDataError: NaN or infinity in a feature or the target.
        EmptyPartyError: the file has no rows.
        ValidationError: a classification target with fewer than two classes.
    """
    path = Path(path)
    if path.is_dir():
        raise DataFormatError(f"data file {str(path)!r} is a directory: give a file (.csv, .tsv, .parquet, .svm, "
                              ".npy, .npz; several files = one per party)")
    if not path.is_file():
        raise DataFileNotFoundError(f"data file {str(path)!r} not found")
    if encode not in ("none", "onehot"):
        raise DataFormatError(f"encode must be 'none' or 'onehot', got {encode!r}")
    if task not in TASKS:
        raise DataFormatError(f"task must be one of {TASKS}, got {task!r}")
    fmt = file_format(path, format)
    label = name or path.name
    extras: dict = {"source": path.name, "format": fmt, "preprocessing": []}
    if fmt in ("csv", "tsv", "parquet"):
        X, y, names = _from_table(_read_table(path, fmt), target, encode, tuple(drop), party_column, label, extras,
                                  categories)
    elif fmt == "svmlight":
        X, y, names = _from_svmlight(path, n_features, label)
    else:
        X, y, names = _from_numpy(path, fmt, target, label)
    if X.shape[0] == 0:
        raise EmptyPartyError(f"{label}: the file has no data rows")
    y = _labels(y, task, label, extras, classes)
    return Dataset(X=X, y=y, name=label, feature_names=names, credit=f"user data from {path.name}", extras=extras)


def load_files(paths: Sequence, target=None, **kwargs) -> tuple[Dataset, np.ndarray]:
    """One file per party: load each, check they agree on the columns, stack them.

    Args:
        paths: One file per party (in party order).
        target, **kwargs: As for :func:`load_file` (the same for every file).

    Returns:
        ``(dataset, groups)``: the stacked data set and, per row, the index of the file (party) it came from.

    Raises:
        EmptyPartyError: no paths, or a file without rows (the message names the party and the file).
        ValidationError: files whose feature columns differ (after encoding).
        And everything :func:`load_file` raises.
    """
    paths = list(paths)
    if not paths:
        raise EmptyPartyError("give at least one file (one per party)")
    if kwargs.get("encode") == "onehot":
        # one-hot per file would give each party its own columns: encode the stacked table instead
        return _load_files_onehot(paths, target, kwargs)
    sets = []
    for k, p in enumerate(paths):
        try:
            sets.append(load_file(p, target, **kwargs))
        except EmptyPartyError:
            raise EmptyPartyError(f"party {k} ({Path(p).name}) has no rows") from None
    first = sets[0]
    for k, ds in enumerate(sets[1:], start=1):
        if ds.feature_names != first.feature_names:
            twins = [f"{a!r}/{b!r}" for a, b in zip(first.feature_names, ds.feature_names)
                     if same_when_normalised(a, b)]
            raise ValidationError(f"party {k} ({Path(paths[k]).name}) has columns {list(ds.feature_names)}, "
                                  f"party 0 has {list(first.feature_names)}: files of one data set must agree"
                                  + (f" (names {twins} differ only in Unicode normalisation)" if twins else ""))
    return _stack(sets, first, paths)


def _load_files_onehot(paths, target, kwargs):
    import pandas as pd

    fmt = kwargs.get("format")
    frames = []
    for k, p in enumerate(paths):
        p = Path(p)
        if p.is_dir():
            raise DataFormatError(f"data file {str(p)!r} (party {k}) is a directory: give a file")
        if not p.is_file():
            raise DataFileNotFoundError(f"data file {str(p)!r} (party {k}) not found")
        f = file_format(p, fmt)
        if f not in ("csv", "tsv", "parquet"):
            raise DataFormatError(f"encode='onehot' needs tables (csv, tsv, parquet), party {k} is {f}")
        df = _read_table(p, f)
        if len(df) == 0:
            raise EmptyPartyError(f"party {k} ({p.name}) has no rows")
        if frames and set(map(str, df.columns)) != set(map(str, frames[0].columns)):  # stacked: NaN, not a word
            raise ValidationError(f"party {k} ({p.name}) has columns {[str(c) for c in df.columns]}, party 0 has "
                                  f"{[str(c) for c in frames[0].columns]}: files of one data set must agree")
        frames.append(df)
    groups = np.concatenate([np.full(len(df), k) for k, df in enumerate(frames)])
    table = pd.concat(frames, ignore_index=True)
    extras: dict = {"source": [Path(p).name for p in paths], "format": "tables", "preprocessing": []}
    X, y, names = _from_table(table, target, "onehot", tuple(kwargs.get("drop", ())), kwargs.get("party_column"),
                              kwargs.get("name") or "files", extras, kwargs.get("categories"))
    y = _labels(y, kwargs.get("task", "auto"), "files", extras, kwargs.get("classes"))
    ds = Dataset(X=X, y=y, name=kwargs.get("name") or "files", feature_names=names,
                 credit="user data, one file per party", extras=extras)
    return ds, groups


def _stack(sets, first, paths):
    import scipy.sparse as sp

    X = sp.vstack([d.X for d in sets], format="csr") if first.is_sparse else np.vstack([d.X for d in sets])
    y = np.concatenate([d.y for d in sets])
    classes = [d.extras.get("classes") for d in sets]
    if first.extras.get("task") == "classification" and any(c != classes[0] for c in classes):
        raise ValidationError(f"the files' labels differ: {classes}; every party must use the same two classes")
    groups = np.concatenate([np.full(d.n_samples, k) for k, d in enumerate(sets)])
    extras = dict(first.extras, source=[Path(p).name for p in paths])
    ds = Dataset(X=X, y=y, name=first.name, feature_names=first.feature_names,
                 credit="user data, one file per party", extras=extras)
    return ds, groups


# ----------------------------------------------------------------------------------------------- readers
def _read_table(path: Path, fmt: str):
    import pandas as pd

    try:
        if fmt == "parquet":
            return pd.read_parquet(path)
        sep = "," if fmt == "csv" else "\t"
        table = pd.read_csv(path, sep=sep, skipinitialspace=True)
        header = pd.read_csv(path, sep=sep, skipinitialspace=True, header=None, nrows=1, dtype=str)
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise DataFormatError(f"cannot read {path.name} as {fmt}: {exc}") from None
    names = [str(v) for v in header.iloc[0].tolist()] if len(header) else []
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:  # pandas would rename the second 'label' to 'label.1' and read it as a feature (issue 26)
        raise DataFormatError(f"{path.name}: column name(s) {repeated} appear more than once in the header; give "
                              "every column its own name")
    return table


def _from_table(df, target, encode, drop, party_column, label, extras, categories=None):
    import pandas as pd

    columns = [str(c) for c in df.columns]
    check_column_names(columns, label)  # 'é' composed and decomposed are one name to a reader (issue 40)
    df.columns = columns
    for what, col in (("target", target), ("party column", party_column), *(("drop column", c) for c in drop)):
        if col is not None and str(col) not in columns:
            raise UnknownColumnError(f"{label}: {what} {col!r} is not a column; columns: {columns}")
    if target is None:
        raise UnknownColumnError(f"{label}: name the label column with target=...; columns: {columns}")
    target = str(target)
    if len(df) == 0:
        raise EmptyPartyError(f"{label}: the file has no data rows")
    y = df[target]
    if party_column is not None:
        party = df[str(party_column)]
        if party.isna().any():
            raise NonFiniteDataError(f"{label}: party column {party_column!r} has a missing value at row "
                                     f"{int(np.flatnonzero(party.isna().to_numpy())[0])}")
        extras["party"] = party.to_numpy()
    features = df.drop(columns=[c for c in {target, party_column, *drop} if c is not None])
    if features.shape[1] == 0:
        raise ValidationError(f"{label}: no feature columns are left besides the target {target!r}")
    _check_missing(features, label)
    listed = {str(c) for c in categories} if encode == "onehot" and isinstance(categories, dict) else set()
    # bool is numeric; a numeric column with stated categories is one-hot encoded too (codes 0/1: issue 39)
    text = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c]) or c in listed]
    check_stray(features, [c for c in text if c not in listed], label)  # a number with a typo stays an error
    if text and encode == "none":
        raise NonNumericDataError(f"{label}: column(s) {text} are not numeric; pass encode='onehot' "
                                  "(CLI: --onehot) to one-hot encode them, or drop them")
    if text:
        public = _public_categories(categories, columns, label)
        cats = {c: public[c] if c in public else sorted(features[c].astype(str).unique().tolist()) for c in text}
        for c in text:  # a value outside a public list encodes as all zeros
            values = features[c].astype(str)
            features[c] = pd.Categorical(values.where(values.isin(cats[c])), categories=cats[c])
        features = pd.get_dummies(features, columns=text, prefix_sep="=", dtype=float)
        stated = [c for c in text if c in public]
        if stated:
            extras["preprocessing"].append({"step": "onehot_public_categories", "columns": stated,
                                            "categories": {c: cats[c] for c in stated}, "private": True,
                                            "note": "category lists stated as public; values outside them encode "
                                                    "as all zeros"})
        read = [c for c in text if c not in public]
        if read:
            extras["preprocessing"].append({"step": "onehot_categories_from_data", "columns": read,
                                            "private": False,
                                            "note": "NOT PRIVATE: category lists read from the data become feature "
                                                    "names (a value held by one record is published verbatim); "
                                                    "state them as public (categories=..., CLI "
                                                    + categories_hint({c: cats[c] for c in read}) + ")"})
    X = features.to_numpy(dtype=float)
    _check_finite(X, list(features.columns), label)
    return X, y.to_numpy(), tuple(str(c) for c in features.columns)


def _check_missing(features, label):
    na = features.isna().to_numpy()
    if na.any():
        row, col = (int(i) for i in np.argwhere(na)[0])
        raise NonFiniteDataError(f"{label}: {int(na.sum())} missing value(s) (NaN), first in column "
                                 f"{features.columns[col]!r} at row {row}; privdist does not impute: drop or fill them")


def _check_finite(X, names, label):
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raise NonFiniteDataError(f"{label}: {int(bad.sum())} non-finite value(s) (NaN or inf), first in column "
                                 f"{names[col]!r} at row {row}")


def _from_svmlight(path: Path, n_features, label):
    from sklearn.datasets import load_svmlight_file

    try:
        X, y = load_svmlight_file(str(path), n_features=n_features)
    except (ValueError, OSError) as exc:
        raise DataFormatError(f"cannot read {path.name} as svmlight: {exc}") from None
    return X.tocsr(), y, tuple(f"x{j}" for j in range(X.shape[1]))


def _from_numpy(path: Path, fmt: str, target, label):
    try:
        obj = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise DataFormatError(f"cannot read {path.name} as {fmt} (object arrays are refused): {exc}") from None
    if fmt == "npz":
        key = "y" if target is None else str(target)
        keys = list(obj.files)
        for k in ("X", key):
            if k not in keys:
                raise UnknownColumnError(f"{label}: array {k!r} is not in the file; arrays: {keys}")
        X, y = obj["X"], obj[key]
    else:
        if obj.ndim != 2 or obj.shape[1] < 2:
            raise DataFormatError(f"{label}: a .npy file must hold a 2-D array with the label as one column, "
                                  f"got shape {obj.shape}")
        col = obj.shape[1] - 1 if target is None else target
        if isinstance(col, bool) or not isinstance(col, (int, np.integer)) or not -obj.shape[1] <= col < obj.shape[1]:
            raise UnknownColumnError(f"{label}: target of a .npy file is a column index in "
                                     f"0..{obj.shape[1] - 1}, got {target!r}")
        col = int(col) % obj.shape[1]
        y, X = obj[:, col], np.delete(obj, col, axis=1)
    if not np.issubdtype(np.asarray(X).dtype, np.number):
        raise NonNumericDataError(f"{label}: the feature array has dtype {X.dtype}, not numeric")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise DataFormatError(f"{label}: X must be 2-D, got shape {X.shape}")
    names = tuple(f"x{j}" for j in range(X.shape[1]))
    _check_finite(X, names, label)
    return X, y, names


def _public_categories(categories, columns, label) -> dict:
    """``categories`` checked: ``{column: [str, ...]}`` of existing columns, each list non-empty and unique."""
    if categories is None:
        return {}
    if not isinstance(categories, dict):
        raise ValidationError(f"{label}: categories must map a column to its list of values, got "
                              f"{type(categories).__name__}")
    out = {}
    for col, values in categories.items():
        if str(col) not in columns:
            raise UnknownColumnError(f"{label}: categories name column {col!r}, which is not a column; columns: "
                                     f"{columns}")
        if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
            raise ValidationError(f"{label}: categories of {col!r} must be a non-empty list of values, got {values!r}")
        vals = [str(v) for v in values]
        if len(set(vals)) != len(vals):
            raise ValidationError(f"{label}: categories of {col!r} repeat a value: {vals}")
        out[str(col)] = vals
    return out


def _labels(y, task, label, extras, classes=None) -> np.ndarray:
    import pandas as pd

    y = pd.Series(y)
    if y.isna().any():
        raise NonFiniteDataError(f"{label}: the target has {int(y.isna().sum())} missing value(s), first at row "
                                 f"{int(np.flatnonzero(y.isna().to_numpy())[0])}")
    numeric = pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y)
    values = sorted(y.unique().tolist(), key=lambda v: (str(type(v)), v))
    if task == "auto":  # stated classes make it classification (a numeric target was fitted as a regression)
        task = "classification" if (not numeric or len(values) == 2 or classes is not None) else "regression"
    extras["task"] = task
    if task == "regression":
        if classes is not None:
            raise ValidationError(f"{label}: classes name the classes of a classification target, but the task is "
                                  "regression; drop the classes or the regression task")
        if not numeric:
            raise NonNumericDataError(f"{label}: a regression target must be numeric, got {y.dtype}")
        out = y.to_numpy(dtype=float)
        _check_finite(out[:, None], ["target"], label)
        return out
    if classes is not None:
        return _public_labels(y, classes, label, extras)
    if len(values) < 2:
        raise ValidationError(f"{label}: classification needs at least two classes in the target, found "
                              f"{len(values)}: {values[:10]}")
    extras["classes"] = [v.item() if hasattr(v, "item") else v for v in values]
    extras["preprocessing"].append(classes_step(extras["classes"]))
    if len(values) > 2:  # several classes: the index of each row's class in extras["classes"]
        return _class_index(y.to_numpy(), values)
    return np.where(y.to_numpy() == values[1], 1.0, -1.0)


def _class_index(y, values) -> np.ndarray:
    index = {v: i for i, v in enumerate(values)}
    return np.array([index[v] for v in y.tolist()], dtype=int)


def _public_labels(y, classes, label, extras) -> np.ndarray:
    """Labels mapped by the PUBLIC ``classes = (negative, positive)`` (compared as text); three or more classes:
    each row's index in ``classes``."""
    if isinstance(classes, str) or len(classes) < 2 or len({str(c) for c in classes}) != len(classes):
        raise ValidationError(f"{label}: classes must be two or more different values (negative, positive, ...), "
                              f"got {classes!r}")
    text = y.astype(str).to_numpy()
    names = [str(c) for c in classes]
    bad = np.flatnonzero(~np.isin(text, names))
    if bad.size:
        raise ValidationError(f"{label}: the target holds {bad.size} value(s) outside the stated classes {names}, "
                              f"first at row {int(bad[0])}")
    extras["classes"] = [c.item() if hasattr(c, "item") else c for c in classes]
    extras["preprocessing"].append({"step": "classes_public", "private": True,
                                    "note": f"class names {names} stated as public"})
    if len(names) > 2:
        return _class_index(text, names)
    return np.where(text == names[1], 1.0, -1.0)


def file_dataset(path, target=None, *, row_norm: float | None = None, scale: str = "none", bounds=None,
                 **kwargs) -> Dataset:
    """:func:`load_file`, then optional preprocessing: the ``[data] kind = "file"`` entry of the data registry.

    Args:
        path, target, **kwargs: As for :func:`load_file`.
        row_norm: Clip every row to this Euclidean norm (a public bound; ``None``: no clipping unless ``scale``
            is set, then 1).
        scale: ``"none"``, ``"bounds"`` (public ``bounds``) or ``"data"`` (per-column min/max of the file: NOT
            private, recorded in ``extras["preprocessing"]``); see :class:`privdist.data.bounds.Preprocessor`.
        bounds: Public bounds for ``scale="bounds"``.

    Returns:
        The :class:`Dataset`, dense when preprocessed.
    """
    from .bounds import Preprocessor

    ds = load_file(path, target, **kwargs)
    if row_norm is None and scale == "none":
        return ds
    pre = Preprocessor(scale=scale, bounds=bounds, row_norm=1.0 if row_norm is None else row_norm)
    pre.fit(ds.X, ds.feature_names)
    extras = dict(ds.extras, preprocessing=[*ds.extras.get("preprocessing", []), *pre.record])
    return Dataset(X=pre.transform(ds.X), y=ds.y, name=ds.name, feature_names=ds.feature_names, credit=ds.credit,
                   extras=extras)
