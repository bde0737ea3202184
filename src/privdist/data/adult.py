"""UCI Adult (Census Income), read from the original files shipped inside the package.

The files ``adult.data.gz`` (training split, 32,561 rows) and ``adult.test.gz`` (test split, 16,281 rows; its first
line is a comment and its labels end with ``'.'``) are the unmodified UCI files, gzip-compressed. Their SHA-256 is
checked every time they are parsed (once per process thanks to the in-process cache).

Credit: UCI Machine Learning Repository, Adult (Becker & Kohavi, 1996), CC BY 4.0.
"""

from __future__ import annotations

import gzip
import hashlib
from functools import lru_cache
from importlib import resources

import numpy as np

from ..errors import ChecksumError, DataFileNotFoundError, ValidationError
from .dataset import Dataset
from .preprocess import normalize_columns_rows

__all__ = ["load_adult", "load_adult_public", "adult_documented_categories", "ADULT_PUBLIC_BOUNDS", "ADULT_CREDIT",
           "ADULT_COLUMNS", "ADULT_CATEGORICAL"]

ADULT_CREDIT = "UCI Machine Learning Repository, Adult (Becker & Kohavi, 1996), CC BY 4.0"

#: The 14 attributes of the original files, in file order (from ``adult.names``).
ADULT_COLUMNS: tuple[str, ...] = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
)  # fmt: skip

#: The 8 categorical attributes (one-hot encoded); the other 6 are continuous and kept as numbers.
ADULT_CATEGORICAL: tuple[str, ...] = (
    "workclass", "education", "marital-status", "occupation", "relationship", "race", "sex", "native-country",
)  # fmt: skip

_FILES = ("adult.data.gz", "adult.test.gz")
_SHA256 = {
    "adult.data.gz": "7f2f073475c2616fd1f819e3a08d1f455e1c21e5f4d9acdbb6d10eeede672142",
    "adult.test.gz": "0f1a5ba20e8f56adb696d13c976f011527d88a3b161f7e224aefb73591cdb462",
}


def load_adult(normalize: bool = True) -> Dataset:
    """Load UCI Adult (train rows, then test rows), preprocessed as in S3 §5.2: 45,222 x 104.

    Steps (spec §1.4, S3 §5.2): read both original files, strip whitespace around every field, drop the test
    file's comment line and every row with a missing value (``'?'``), one-hot encode the 8 categorical attributes
    with scikit-learn's ``OneHotEncoder`` (categories sorted, feature names like ``"workclass=Private"``), keep the
    6 continuous attributes as numbers, map labels ``">50K"`` / ``">50K."`` to +1 and every other label to -1,
    and, if ``normalize``, apply :func:`normalize_columns_rows`.

    Column order (a choice; the spec is silent): the attributes in file order, each categorical attribute
    expanded in place into its sorted one-hot columns (``age, workclass=Federal-gov, ..., fnlwgt, ...``).
    Row order: the 30,162 complete training rows, then the 15,060 complete test rows; ``extras["n_train"]`` and
    ``extras["n_test"]`` give the two counts.

    The parsed matrix is cached in-process; each call returns fresh copies, so callers may modify them.

    Args:
        normalize: Apply the §1.4 column-then-row normalisation to ``X`` (labels are never rescaled).

    Returns:
        A dense :class:`Dataset` named ``"adult"`` with 104 named features and labels in {+1, -1}.

    Raises:
        ChecksumError: If a shipped file has been altered or truncated (the message names the file).
        DataFileNotFoundError: If a shipped file is missing (broken installation).
        ValidationError: If a file cannot be parsed.

    References:
        Spec §1.4, §4.10; S3 §5.2. Becker, B. & Kohavi, R. (1996). Adult. UCI Machine Learning Repository.
    """
    X, y, names, n_train = _load_adult_arrays(bool(normalize))
    return Dataset(
        X=X.copy(),
        y=y.copy(),
        name="adult",
        feature_names=names,
        credit=ADULT_CREDIT,
        extras={"n_train": n_train, "n_test": int(y.shape[0]) - n_train},
    )


def _files():
    """Directory (a ``Traversable``) holding the shipped files; tests may monkeypatch it."""
    return resources.files("privdist.data") / "files"


@lru_cache(maxsize=2)
def _load_adult_arrays(normalize: bool) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], int]:
    """Parse (and optionally normalise) the shipped files once per process; arrays are read-only."""
    folder = _files()
    X, y, names, n_train = _parse_adult_files(folder / _FILES[0], folder / _FILES[1])
    if normalize:
        X = normalize_columns_rows(X)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y, names, n_train


def _read_verified(path, expected_sha256: str) -> str:
    """Return the decompressed text of a gzip file after checking the SHA-256 of its compressed bytes."""
    name = getattr(path, "name", str(path))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFileNotFoundError(
            f"shipped data file {name} is missing (looked for {path}); reinstall privdist to restore it"
        ) from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected_sha256:
        raise ChecksumError(
            f"{name} ({path}) has sha256 {digest}, expected {expected_sha256}: the file is altered or truncated; "
            "reinstall privdist to restore it"
        )
    try:
        return gzip.decompress(raw).decode("latin-1")
    except (OSError, EOFError) as exc:  # pragma: no cover - a file with the right checksum decompresses
        raise ValidationError(f"{name} ({path}) is not a valid gzip file: {exc}") from None


def _parse_rows(text: str, source: str) -> list[list[str]]:
    """Split the lines of one Adult file into 15 stripped fields; skip comments, blanks and rows with '?'."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(ADULT_COLUMNS) + 1:
            raise ValidationError(
                f"{source} line {lineno}: expected {len(ADULT_COLUMNS) + 1} comma-separated fields, got {len(fields)}"
            )
        if "?" in fields:
            continue
        rows.append(fields)
    return rows


def _parse_adult_files(data_path, test_path, checksums: dict[str, str] | None = None):
    """Parse the two original Adult files into ``(X, y, feature_names, n_train)`` (not normalised).

    Args:
        data_path: Path or ``Traversable`` of ``adult.data.gz``.
        test_path: Path or ``Traversable`` of ``adult.test.gz``.
        checksums: Expected SHA-256 per file name (defaults to the shipped files' values).
    """
    from sklearn.preprocessing import OneHotEncoder  # lazy: importing scikit-learn takes about a second

    table, y, n_train = _parse_table(data_path, test_path, checksums)

    cat_idx = [ADULT_COLUMNS.index(c) for c in ADULT_CATEGORICAL]
    encoder = OneHotEncoder(
        categories="auto",
        sparse_output=False,
        dtype=np.float64,
        feature_name_combiner=lambda feature, category: f"{feature}={category}",
    )
    onehot = encoder.fit_transform(table[:, cat_idx].astype(str))
    onehot_names = encoder.get_feature_names_out(list(ADULT_CATEGORICAL))
    ends = np.cumsum([len(c) for c in encoder.categories_])
    starts = ends - np.array([len(c) for c in encoder.categories_])

    blocks, names = [], []
    for j, column in enumerate(ADULT_COLUMNS):
        if column in ADULT_CATEGORICAL:
            k = ADULT_CATEGORICAL.index(column)
            blocks.append(onehot[:, starts[k] : ends[k]])
            names.extend(str(n) for n in onehot_names[starts[k] : ends[k]])
        else:
            try:
                blocks.append(table[:, j].astype(np.float64)[:, None])
            except ValueError as exc:
                raise ValidationError(f"adult: column {column!r} is not numeric: {exc}") from None
            names.append(column)
    X = np.ascontiguousarray(np.hstack(blocks))
    return X, y, tuple(names), n_train


def _parse_table(data_path, test_path, checksums=None):
    """The complete rows of both files as one object table, the labels (+1 = ">50K") and the training count."""
    checksums = _SHA256 if checksums is None else checksums
    train = _parse_rows(_read_verified(data_path, checksums[_FILES[0]]), _FILES[0])
    test = _parse_rows(_read_verified(test_path, checksums[_FILES[1]]), _FILES[1])
    table = np.array(train + test, dtype=object)
    labels = np.array([lab.rstrip(".") for lab in table[:, -1]])
    unknown = sorted(set(labels) - {">50K", "<=50K"})
    if unknown:
        raise ValidationError(f"adult: unexpected label(s) {unknown}; expected '>50K' or '<=50K' (optionally with '.')")
    return table, np.where(labels == ">50K", 1.0, -1.0), len(train)


#: PUBLIC bounds of Adult's continuous attributes, stated from the data's documentation, never read from the rows
#: (issue 24): age > 16 and hours-per-week > 0 are the extraction conditions printed in ``adult.names``; 90 (age)
#: and 99 (hours) are the Current Population Survey's top codes, 99999 the top code of capital gains; 16 is the
#: number of documented education levels; fnlwgt (a survey weight) and capital-loss get a-priori ranges chosen here
#: (values outside a range are clipped to it).
ADULT_PUBLIC_BOUNDS: dict[str, tuple[float, float]] = {
    "age": (17.0, 90.0), "fnlwgt": (0.0, 1.5e6), "education-num": (1.0, 16.0), "capital-gain": (0.0, 99999.0),
    "capital-loss": (0.0, 5000.0), "hours-per-week": (1.0, 99.0),
}  # fmt: skip


def adult_documented_categories() -> dict[str, list[str]]:
    """The category lists of the 8 categorical attributes as documented in the shipped ``adult.names`` (public)."""
    text = gzip.decompress((_files() / "adult.names.gz").read_bytes()).decode("utf-8")
    out = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and name.strip() in ADULT_CATEGORICAL and rest.strip() != "continuous.":
            out[name.strip()] = [v.strip() for v in rest.strip().rstrip(".").split(",")]
    missing = sorted(set(ADULT_CATEGORICAL) - set(out))
    if missing:
        raise ValidationError(f"adult.names: no documented categories for {missing}")
    return out


def load_adult_public() -> Dataset:
    """UCI Adult with nothing read from the rows beyond the rows themselves (``privdist fit adult``, issue 24).

    The same 45,222 complete rows and labels as :func:`load_adult`, but the one-hot columns are the categories
    DOCUMENTED in ``adult.names`` (in its order; a documented category absent from the rows is a zero column) and the
    continuous attributes are left raw, with :data:`ADULT_PUBLIC_BOUNDS` in ``extras["public_bounds"]`` for the
    estimators' ``scale="bounds"``. ``extras["preprocessing"]`` records the public steps.
    """
    folder = _files()
    table, y, n_train = _parse_table(folder / _FILES[0], folder / _FILES[1])
    cats = adult_documented_categories()
    blocks, names = [], []
    for j, column in enumerate(ADULT_COLUMNS):
        if column in cats:
            values = table[:, j].astype(str)
            blocks.append(np.stack([(values == c) for c in cats[column]], axis=1).astype(float))
            names.extend(f"{column}={c}" for c in cats[column])
        else:
            blocks.append(table[:, j].astype(np.float64)[:, None])
            names.append(column)
    steps = [{"step": "onehot_public_categories", "private": True, "columns": list(ADULT_CATEGORICAL),
              "note": "category lists documented in adult.names"},
             {"step": "classes_public", "private": True, "note": "classes <=50K and >50K documented in adult.names"}]
    return Dataset(X=np.ascontiguousarray(np.hstack(blocks)), y=y, name="adult", feature_names=tuple(names),
                   credit=ADULT_CREDIT,
                   extras={"n_train": n_train, "n_test": int(y.shape[0]) - n_train, "task": "classification",
                           "classes": ["<=50K", ">50K"], "public_bounds": dict(ADULT_PUBLIC_BOUNDS),
                           "preprocessing": steps})
