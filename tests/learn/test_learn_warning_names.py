"""Issue 39: the estimators' warnings name the columns of a DataFrame by their names, and those of a NumPy array by
position (``column 3``), never the internal record key ``x3``; many columns give one line, a few names and "and N
more"."""

from __future__ import annotations

import re
import warnings

import pandas as pd
from sklearn.datasets import load_diabetes

from privdist.learn import DistributedRidge


def _fallback_warning(X, y) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DistributedRidge(epsilon=1.0, n_agents=5, random_state=0).fit(X, y)
    texts = [str(w.message) for w in caught if "no private range" in str(w.message)]
    assert len(texts) == 1
    return texts[0]


def test_a_range_fallback_names_dataframe_columns_and_counts_the_rest():
    """150 diabetes rows: the range step is not run, so the 10 columns and the target keep [-1, 1]."""
    frame = load_diabetes(as_frame=True, scaled=False)
    X, y = frame.data.iloc[:150], frame.target.iloc[:150]
    text = _fallback_warning(X, y)
    assert "11 column(s) (age, sex, bmi, bp, s1 and 6 more)" in text
    assert not re.search(r"\bx\d+\b", text)


def test_a_range_fallback_of_numpy_data_names_positions():
    X, y = load_diabetes(return_X_y=True, scaled=False)
    text = _fallback_warning(X[:150], y[:150])
    assert "11 column(s) (column 0, column 1, column 2, column 3, column 4 and 6 more)" in text
    assert not re.search(r"\bx\d+\b", text)


def test_the_target_is_named_as_the_target():
    """300 rows (seed 0): the step runs and finds no range for three features and the target, named as such."""
    frame = load_diabetes(as_frame=True, scaled=False)
    text = _fallback_warning(pd.DataFrame(frame.data).iloc[:300], frame.target.iloc[:300])
    assert "4 column(s) (sex, s2, s3, the target)" in text and "<target>" not in text
