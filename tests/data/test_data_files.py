"""Data from files (issue 16): readers, named errors, partitions, public preprocessing, [data] kind = "file"."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import dump_svmlight_file

from privdist.data import (Preprocessor, column_blocks, dirichlet_groups, load_dataset, load_file, load_files,
                           make_groups, random_groups, split_rows, vertical_partition)
from privdist.errors import (DataFormatError, EmptyPartyError, NonFiniteDataError, NonNumericDataError,
                             UnknownColumnError, ValidationError)


def _frame(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n) * 10,
                         "color": rng.choice(["red", "blue"], n), "site": rng.choice(["A", "B", "C"], n),
                         "label": rng.choice(["no", "yes"], n)})


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".tsv"])
def test_tables_load_with_target_and_onehot(tmp_path, suffix):
    df = _frame()
    path = tmp_path / f"d{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False, sep="\t" if suffix == ".tsv" else ",")
    ds = load_file(path, "label", encode="onehot", party_column="site")
    assert ds.feature_names == ("a", "b", "color=blue", "color=red")
    assert set(ds.y) == {-1.0, 1.0} and ds.extras["classes"] == ["no", "yes"]
    np.testing.assert_array_equal(ds.y, np.where(df["label"] == "yes", 1.0, -1.0))
    assert list(ds.extras["party"]) == list(df["site"])
    assert ds.extras["preprocessing"][0]["step"] == "onehot_categories_from_data"


def test_svmlight_and_numpy(tmp_path):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(20, 3)), rng.choice([-1.0, 1.0], 20)
    dump_svmlight_file(X, y, str(tmp_path / "d.svm"))
    ds = load_file(tmp_path / "d.svm")
    np.testing.assert_allclose(ds.X.toarray(), X, rtol=1e-6)
    np.save(tmp_path / "d.npy", np.column_stack([X, y]))
    np.testing.assert_allclose(load_file(tmp_path / "d.npy").X, X)
    np.savez(tmp_path / "d.npz", X=X, target=y * 3.5 + rng.normal(size=20))
    assert load_file(tmp_path / "d.npz", "target").extras["task"] == "regression"


def test_bad_data_named_errors(tmp_path):
    df = _frame()
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(UnknownColumnError, match="'nope' is not a column"):
        load_file(tmp_path / "d.csv", "nope")
    with pytest.raises(NonNumericDataError, match="encode='onehot'"):
        load_file(tmp_path / "d.csv", "label")
    df.loc[3, "a"] = np.nan
    df.to_csv(tmp_path / "nan.csv", index=False)
    with pytest.raises(NonFiniteDataError, match="column 'a' at row 3"):
        load_file(tmp_path / "nan.csv", "label", encode="onehot")
    df.iloc[:0].to_csv(tmp_path / "empty.csv", index=False)
    with pytest.raises(EmptyPartyError):
        load_file(tmp_path / "empty.csv", "label", encode="onehot")
    with pytest.raises(DataFormatError):
        load_file(tmp_path / "d.csv", "label", format="xlsx")


def test_files_one_per_party(tmp_path):
    df = _frame(30).drop(columns=["color", "site"])
    paths = []
    for k, part in enumerate(np.array_split(np.arange(30), 3)):
        paths.append(tmp_path / f"p{k}.csv")
        df.iloc[part].to_csv(paths[-1], index=False)
    ds, groups = load_files(paths, "label")
    assert ds.n_samples == 30 and list(np.bincount(groups)) == [10, 10, 10]
    df.iloc[:0].to_csv(tmp_path / "p_empty.csv", index=False)
    with pytest.raises(EmptyPartyError, match="party 1"):
        load_files([paths[0], tmp_path / "p_empty.csv"], "label")
    # issue 39 (new user): with --onehot a file lacking a column was stacked with NaN and refused as "missing values"
    df.iloc[:10].drop(columns=[df.columns[0]]).to_csv(tmp_path / "p_less.csv", index=False)
    with pytest.raises(ValidationError, match=r"party 1 \(p_less.csv\) has columns .*must agree"):
        load_files([paths[0], tmp_path / "p_less.csv"], "label", encode="onehot")


def test_partitions():
    y = np.r_[np.ones(60), -np.ones(40)]
    g1 = dirichlet_groups(y, 4, 0.3, np.random.default_rng(5))
    g2 = dirichlet_groups(y, 4, 0.3, np.random.default_rng(5))
    np.testing.assert_array_equal(g1, g2)  # seeded
    assert np.bincount(g1, minlength=4).min() >= 1
    skew = [np.mean(y[g1 == k] > 0) for k in range(4)]
    assert max(skew) - min(skew) > 0.2  # label skew at alpha 0.3
    g = random_groups(10, 3, np.random.default_rng(0))
    assert sorted(np.bincount(g)) == [3, 3, 4]
    col = make_groups("column", 5, values=np.array(["b", "a", "b", "c", "a"]))
    np.testing.assert_array_equal(col, [1, 0, 1, 2, 0])
    with pytest.raises(EmptyPartyError, match="party 2 holds no rows"):
        split_rows(np.zeros((4, 2)), np.zeros(4), np.array([0, 1, 0, 1]), n_parties=3)
    blocks = column_blocks(["a", "b", "c", "d"], {"bank": ["a", "c"], "shop": ["b", "d"]})
    parts = vertical_partition(np.arange(8.0).reshape(2, 4), blocks)
    np.testing.assert_array_equal(parts[0], [[0, 2], [4, 6]])
    with pytest.raises(UnknownColumnError):
        column_blocks(["a"], [["zz"]])


def test_preprocessing_public_and_recorded():
    X = np.array([[3.0, 4.0], [0.3, 0.4]])
    pre = Preprocessor().fit(X)
    np.testing.assert_allclose(np.linalg.norm(pre.transform(X), axis=1), [1.0, 0.5])
    assert all(step["private"] for step in pre.record)
    pre = Preprocessor(scale="data").fit(X)
    assert not pre.record[0]["private"] and "NOT PRIVATE" in pre.record[0]["note"]
    pre = Preprocessor(scale="bounds", bounds={"x0": (0, 10)}).fit(X, ["x0", "x1"])
    assert pre.bounds_[:, 0].tolist() == [0, 10] and pre.record[0]["private"]


def test_toml_file_kind_runs(tmp_path):
    from privdist.cli.main import main

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "x3": X[:, 2], "party": np.repeat([0, 1, 2], 20),
                  "y": np.where(X[:, 0] > 0, "pos", "neg")}).to_csv(tmp_path / "mine.csv", index=False)
    csv = (tmp_path / "mine.csv").as_posix()
    ds = load_dataset("file", path=csv, target="y", row_norm=1.0, party_column="party")
    assert np.linalg.norm(ds.X, axis=1).max() <= 1 + 1e-12
    spec = tmp_path / "my.toml"
    spec.write_text(f'''
name = "mine"
trials = 1
rounds = 5
[data]
kind = "file"
partition = "column"
params = {{ path = "{csv}", target = "y", party_column = "party", row_norm = 1.0 }}
[network]
kind = "complete"
params = {{ n = 3 }}
[problem]
kind = "horizontal_erm"
loss = "logistic"
reg_weight = 0.01
[[runs]]
label = "dpsgd"
algorithm = "dpsgd"
params = {{ epsilon = 1.0, delta = 1e-5 }}
''')
    assert main(["run", str(spec), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "results.json").exists()
