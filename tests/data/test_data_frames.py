"""Issue 40 (older cases): DataFrames with a text column get an error that names the column (scikit-learn's own
conversion said ``could not convert string to float: 'red'``), and column names that differ only in Unicode
normalisation are refused instead of being taken as two features without a word."""

from __future__ import annotations

import unicodedata
import warnings

import numpy as np
import pandas as pd
import pytest

from privdist.data import load_file, load_files
from privdist.data.frames import check_column_names, check_table
from privdist.errors import DataFormatError, NonNumericDataError, ShapeMismatchError, ValidationError
from privdist.learn import DistributedLogisticRegression, DistributedRidge, SharedFeatureLogisticRegression

COMPOSED = unicodedata.normalize("NFC", "café")
DECOMPOSED = unicodedata.normalize("NFD", "café")


def _frames(k: int = 3, n: int = 30, text: bool = True):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(k):
        cols = {"a": rng.normal(size=n), "b": rng.normal(size=n)}
        if text:
            cols["colour"] = rng.choice(["red", "blue"], n)
        out.append(pd.DataFrame(cols))
    return out


@pytest.mark.parametrize("make", [
    lambda X, y: DistributedLogisticRegression(rounds=2, random_state=0).fit(X, y),
    lambda X, y: DistributedLogisticRegression(rounds=2, random_state=0).fit(X, y, groups=np.arange(len(y)) % 3),
    lambda X, y: DistributedRidge(rounds=2, random_state=0).fit(X, y.astype(float)),
    lambda X, y: SharedFeatureLogisticRegression(rounds=2, random_state=0).fit(X, y),
])
def test_three_dataframes_with_a_text_column_name_it(make):
    frames = _frames()
    X = pd.concat(frames, ignore_index=True)
    y = np.arange(len(X)) % 2
    with pytest.raises(NonNumericDataError, match=r"\['colour'\] are not numeric"):
        make(X, y)
    with pytest.raises(NonNumericDataError, match=r"party 0's DataFrame\): column\(s\) \['colour'\]"):
        make(frames, y)  # the list itself, as handed over


def test_a_list_of_numeric_dataframes_says_how_to_give_one_table():
    frames = _frames(text=False)
    with pytest.raises(ShapeMismatchError, match=r"list of 3 DataFrames.*pandas.concat"):
        DistributedLogisticRegression(rounds=2).fit(frames, np.arange(90) % 2)


def test_predict_names_a_text_column_too():
    X = pd.concat(_frames(text=False), ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DistributedLogisticRegression(rounds=2, random_state=0).fit(X, np.arange(90) % 2)
    with pytest.raises(NonNumericDataError, match="colour"):
        est.predict(X.assign(colour="red"))


def test_numbers_held_as_text_objects_still_pass():
    X = pd.concat(_frames(text=False), ignore_index=True)
    check_table(X.assign(a=X["a"].astype(str).astype(object)))  # converts: scikit-learn's business


def test_unicode_twin_column_names_are_refused_in_dataframes():
    assert COMPOSED != DECOMPOSED
    X = pd.DataFrame({COMPOSED: [1.0, 2.0, 3.0, 4.0], DECOMPOSED: [0.5, 0.1, 0.2, 0.3]})
    with pytest.raises(DataFormatError, match="differ only in Unicode normalisation") as info:
        DistributedLogisticRegression(rounds=2).fit(X, [0, 1, 0, 1])
    assert "U+00E9" in str(info.value) and "U+0301" in str(info.value)
    check_column_names(["café", "cafe", "naïve"], "t")  # different names are fine


def test_unicode_twin_column_names_are_refused_in_files(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text(f"{COMPOSED},{DECOMPOSED},label\n1,2,0\n3,4,1\n5,6,0\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="t.csv: columns 'café'.*differ only in Unicode normalisation"):
        load_file(f, "label")
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(f"{COMPOSED},x,label\n1,2,0\n3,4,1\n", encoding="utf-8")
    b.write_text(f"{DECOMPOSED},x,label\n1,2,0\n3,4,1\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="differ only in Unicode normalisation"):
        load_files([a, b], "label")


def test_unicode_twins_are_one_error_line_in_the_cli(tmp_path, capsys):
    from privdist.cli.main import main

    f = tmp_path / "t.csv"
    f.write_text(f"{COMPOSED},{DECOMPOSED},label\n" + "1,2,0\n3,4,1\n" * 20, encoding="utf-8")
    code = main(["fit", str(f), "--target", "label", "--epsilon", "1", "--delta", "1e-5", "--rounds", "2"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Unicode normalisation" in lines[0], lines


def _typo_table(n: int = 200):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"age": rng.uniform(18, 90, n).round(1), "kids": rng.choice(["0", "1", "2", "3+"], n),
                       "label": rng.integers(0, 2, n)})
    df["age"] = df["age"].astype(object)
    df.loc[5, "age"] = "abc"
    return df


@pytest.mark.parametrize("encode", ["none", "onehot"])
def test_a_numeric_column_with_a_typo_is_named_not_one_hot_encoded(tmp_path, encode):
    """Issue 39 (new user): one 'abc' in a numeric column of 1,934 rows made it text, and --onehot encoded it into a
    feature per number (57 features, every party 'tiny') without a word."""
    _typo_table().to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(NonNumericDataError, match=r"column 'age' holds numbers except 1 value\(s\) \('abc', first "
                                                   r"at row 5\)"):
        load_file(tmp_path / "t.csv", "label", encode=encode)
    ds = load_file(tmp_path / "t.csv", "label", encode="onehot", categories={"age": ["abc"]})  # stated: text
    assert "age=abc" in ds.feature_names
    df = _typo_table()
    df.loc[5, "age"] = "40"
    df.to_csv(tmp_path / "codes.csv", index=False)  # codes 0, 1, 2, 3+ (few numbers) stay a text column
    assert "kids=3+" in load_file(tmp_path / "codes.csv", "label", encode="onehot").feature_names


def test_a_dataframe_with_a_typo_in_a_numeric_column_names_it():
    df = _typo_table()
    with pytest.raises(NonNumericDataError, match="column 'age' holds numbers except 1 value.*get_dummies"):
        check_table(df[["age"]])


@pytest.mark.parametrize("make", [
    lambda: DistributedLogisticRegression(rounds=2, random_state=0),
    lambda: DistributedRidge(rounds=2, random_state=0),
])
def test_a_missing_value_is_named_by_its_column_and_row(make):
    """Issue 39 (new user): NaN in a DataFrame column ended in scikit-learn's message (no column, advice to use
    HistGradientBoosting) instead of a named error."""
    from privdist.errors import NonFiniteDataError

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40)})
    y = (X["a"] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NonFiniteDataError, match="first in column 'b' at row 3"):
            make().fit(X.assign(b=X["b"].where(X.index != 3)), y)
        with pytest.raises(NonFiniteDataError, match="y: 1 missing.*at row 2"):
            make().fit(X, y.astype(float).where(y.index != 2))
        model = make().fit(X, y)
        with pytest.raises(NonFiniteDataError, match="column 'a' at row 0"):
            model.predict(X.assign(a=np.inf))


def test_stated_categories_of_a_numeric_column_of_codes_encode_it(tmp_path):
    """Issue 39 (new user): ``--categories COMB=0,1`` on nlschools' numeric 0/1 column was ignored without a word
    (the column stayed numeric); a party file whose codes 0, 1, 2 read as numbers lost a model's text column so."""
    df = _typo_table()
    df["age"] = df.index.astype(float)
    df["kids"] = np.arange(len(df)) % 3
    df.to_csv(tmp_path / "codes.csv", index=False)
    ds = load_file(tmp_path / "codes.csv", "label", encode="onehot", categories={"kids": ["0", "1", "2", "3+"]})
    assert ds.feature_names == ("age", "kids=0", "kids=1", "kids=2", "kids=3+")
    np.testing.assert_array_equal(ds.X[:4, 1:], [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]])
    assert load_file(tmp_path / "codes.csv", "label", encode="onehot").feature_names == ("age", "kids")


def test_stated_classes_of_a_numeric_target_are_not_ignored(tmp_path):
    """Issue 39 (new user): ``--classes a,b`` on nlschools' numeric ``lang`` (about 50 values) fitted a regression
    and ignored the classes without a word."""
    df = pd.DataFrame({"x": np.arange(60.0), "score": np.arange(60) % 12})
    df.to_csv(tmp_path / "num.csv", index=False)
    with pytest.raises(ValidationError, match="outside the stated classes"):
        load_file(tmp_path / "num.csv", "score", classes=("a", "b"))
    with pytest.raises(ValidationError, match="the task is regression"):
        load_file(tmp_path / "num.csv", "score", classes=("a", "b"), task="regression")
    ds = load_file(tmp_path / "num.csv", "score", classes=[str(v) for v in range(12)])
    assert ds.extras["task"] == "classification" and ds.extras["classes"] == [str(v) for v in range(12)]
