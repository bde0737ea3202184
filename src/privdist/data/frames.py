"""Checks of tables handed to privdist as pandas DataFrames or read from headers (issue 40), made before any
conversion to numbers so that the error names the column:

* a text (non-numeric) column: scikit-learn's own conversion said ``could not convert string to float: 'red'``
  without naming the column; :func:`check_table` raises :class:`~privdist.errors.NonNumericDataError` naming it
  (and, for a list of DataFrames, the party);
* two column names that differ only in their Unicode normalisation (``'é'`` composed, U+00E9, and decomposed, ``e``
  + U+0301): they print alike but were taken as two features without a word. :func:`check_column_names` refuses
  them (an error, not a silent merge: which column a model's coefficient belongs to must never be a guess);
* a numeric column holding a few non-numeric entries (a typo, a missing-value marker such as ``?``): read as text,
  it was one-hot encoded without a word into one feature per number (issue 39). :func:`stray_text` names the
  entries, and the callers refuse the column unless its categories are stated as public.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from ..errors import DataFormatError, NonNumericDataError, ShapeMismatchError

__all__ = ["check_column_names", "check_stray", "check_table", "same_when_normalised", "stray_text", "STRAY_SHARE",
           "STRAY_DISTINCT"]

#: A text column is a numeric one with stray entries when at least this share of its values are numbers and those
#: numbers take more than ``STRAY_DISTINCT`` values; codes such as ``0, 1, 2, 3+`` (few numbers) stay text.
STRAY_SHARE = 0.9
STRAY_DISTINCT = 10


def same_when_normalised(a: str, b: str) -> bool:
    """``a`` and ``b`` differ, but not in Unicode normal form NFC."""
    return a != b and unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)


def check_column_names(names, where: str) -> None:
    """Refuse column names that differ only in Unicode normalisation.

    Raises:
        DataFormatError: two such names (the message shows both with their code points).
    """
    seen: dict[str, str] = {}
    for name in (str(n) for n in names):
        key = unicodedata.normalize("NFC", name)
        if key in seen and seen[key] != name:
            raise DataFormatError(f"{where}: columns {seen[key]!r} ({_points(seen[key])}) and {name!r} "
                                  f"({_points(name)}) differ only in Unicode normalisation (they look the same); "
                                  "rename one, or normalise the header (NFC)")
        seen.setdefault(key, name)


def _points(text: str) -> str:
    return " ".join(f"U+{ord(ch):04X}" for ch in text if ord(ch) > 127) or "ASCII"


def _text_columns(frame) -> list[str]:
    import pandas as pd

    out = []
    for col in frame.columns:
        series = frame[col]
        if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
            continue
        try:
            pd.to_numeric(series)
        except (TypeError, ValueError):
            out.append(str(col))
    return out


def stray_text(series, name) -> str | None:
    """``"column 'age' holds numbers except 1 value(s) ('abc', first at row 5)"`` when the text column ``series``
    is a numeric column with stray entries (module docstring), else None."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        return None
    present = series.notna().to_numpy()
    numbers = pd.to_numeric(series, errors="coerce")
    stray = present & numbers.isna().to_numpy()
    if not stray.any() or stray.sum() > (1 - STRAY_SHARE) * present.sum() or numbers.nunique() <= STRAY_DISTINCT:
        return None
    row = int(np.flatnonzero(stray)[0])
    return (f"column {str(name)!r} holds numbers except {int(stray.sum())} value(s) ({series.iloc[row]!r}, first "
            f"at row {row})")


def check_stray(frame, columns, what: str, text_advice: str = "--onehot with its categories stated, "
                "--categories") -> None:
    """:class:`~privdist.errors.NonNumericDataError` for the first of ``columns`` (text columns of ``frame`` whose
    categories were not stated) that is a numeric column with stray entries (:func:`stray_text`); ``text_advice``
    says how to encode it should it really be text."""
    for col in columns:
        stray = stray_text(frame[col], col)
        if stray:
            raise NonNumericDataError(f"{what}: {stray}: a typo or a missing-value marker? privdist does not impute: "
                                      f"fix or drop those rows (a text column: {text_advice})")


def check_table(X, what: str = "X") -> None:
    """Named errors for a DataFrame (or a list of them) that would otherwise fail in scikit-learn's conversion
    without naming the column; anything else passes untouched (scikit-learn's checks follow).

    Raises:
        NonNumericDataError: text columns (named, with the party when ``X`` is a list of DataFrames).
        DataFormatError: column names differing only in Unicode normalisation.
        ShapeMismatchError: a list of DataFrames (one table is expected).
    """
    import sys

    pd = sys.modules.get("pandas")  # a DataFrame can only come from an imported pandas
    if pd is None:
        return
    if isinstance(X, (list, tuple)) and X and all(isinstance(f, pd.DataFrame) for f in X):
        for k, frame in enumerate(X):
            check_table(frame, f"{what}[{k}] (party {k}'s DataFrame)")
        raise ShapeMismatchError(f"{what} is a list of {len(X)} DataFrames; give one table: the parties' rows "
                                 "stacked (pandas.concat(frames)) with groups= naming each row's party, or their "
                                 "columns side by side (pandas.concat(frames, axis=1)) with feature_groups=")
    if not isinstance(X, pd.DataFrame):
        return
    check_column_names(X.columns, what)
    text = _text_columns(X)
    check_stray(X, text, what, "encode it, e.g. pandas.get_dummies")
    if text:
        raise NonNumericDataError(f"{what}: column(s) {text} are not numeric; encode them (e.g. pandas.get_dummies, "
                                  "or privdist fit --onehot) or drop them")
