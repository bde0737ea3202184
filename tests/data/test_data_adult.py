"""UCI Adult loader: shape, labels, encoding, checksum verification (spec §1.4, S3 §5.2)."""

from __future__ import annotations

import gzip
import shutil
from importlib import resources

import numpy as np
import pytest

from privdist.data import ADULT_CREDIT, load_adult
from privdist.data import adult as adult_module
from privdist.errors import ChecksumError, DataFileNotFoundError

N_POSITIVE = 11208  # rows with label >50K after dropping '?' rows (train 7508 + test 3700)


def _raw_lines(name: str) -> list[str]:
    raw = (resources.files("privdist.data") / "files" / name).read_bytes()
    return gzip.decompress(raw).decode("latin-1").splitlines()


@pytest.fixture(scope="module")
def adult():
    return load_adult()


def test_shape_credit_and_split(adult):
    assert adult.X.shape == (45222, 104)
    assert adult.y.shape == (45222,)
    assert adult.extras == {"n_train": 30162, "n_test": 15060}
    assert adult.credit == ADULT_CREDIT
    assert "Becker & Kohavi" in adult.credit and "CC BY 4.0" in adult.credit


def test_label_balance_matches_independent_count_on_raw_text(adult):
    assert set(np.unique(adult.y)) == {-1.0, 1.0}
    assert int((adult.y == 1).sum()) == N_POSITIVE
    assert abs(N_POSITIVE / 45222 - 0.248) < 0.001
    # independent count: plain string handling of the shipped text, no parsing code shared with the loader
    positive = complete = 0
    for name in ("adult.data.gz", "adult.test.gz"):
        for line in _raw_lines(name):
            if line.startswith("|") or line.count(",") != 14 or "?" in line:
                continue
            complete += 1
            positive += line.rstrip().rstrip(".").endswith(">50K")
    assert complete == 45222 and positive == N_POSITIVE


def test_feature_names_and_encoding():
    raw = load_adult(normalize=False)
    names = raw.feature_names
    assert len(names) == 104 and len(set(names)) == 104
    continuous = [n for n in names if "=" not in n]
    assert continuous == ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    per_attribute = {}
    for n in names:
        if "=" in n:
            attr, cat = n.split("=", 1)
            per_attribute.setdefault(attr, []).append(cat)
    assert {a: len(c) for a, c in per_attribute.items()} == {
        "workclass": 7, "education": 16, "marital-status": 7, "occupation": 14,
        "relationship": 6, "race": 5, "sex": 2, "native-country": 41,
    }  # fmt: skip
    for cats in per_attribute.values():
        assert cats == sorted(cats)
    # one-hot blocks: exactly one 1 per attribute per row
    for attr in per_attribute:
        cols = [i for i, n in enumerate(names) if n.startswith(attr + "=")]
        np.testing.assert_array_equal(raw.X[:, cols].sum(axis=1), 1.0)
    # first training row: 39, State-gov, 77516, Bachelors, 13, ..., <=50K
    row = dict(zip(names, raw.X[0]))
    assert row["age"] == 39 and row["fnlwgt"] == 77516 and row["education-num"] == 13
    assert row["workclass=State-gov"] == 1 and row["workclass=Private"] == 0
    assert row["education=Bachelors"] == 1 and raw.y[0] == -1
    # last row is the last complete test row (labels there end with '.')
    assert raw.y[-1] == 1 and dict(zip(names, raw.X[-1]))["age"] == 35


def test_normalised_rows_and_copies(adult):
    assert np.all(np.linalg.norm(adult.X, axis=1) <= 1 + 1e-12)
    assert np.all(np.abs(adult.X) <= 1)
    again = load_adult()
    assert again.X is not adult.X
    again.X[0, 0] = 123.0  # callers get writable copies; the cache is not affected
    assert load_adult().X[0, 0] == adult.X[0, 0]


@pytest.fixture
def fresh_cache():
    adult_module._load_adult_arrays.cache_clear()
    yield
    adult_module._load_adult_arrays.cache_clear()


def test_altered_file_raises_checksum_error(tmp_path, monkeypatch, fresh_cache):
    shipped = resources.files("privdist.data") / "files"
    for name in ("adult.data.gz", "adult.test.gz"):
        (tmp_path / name).write_bytes((shipped / name).read_bytes())
    text = gzip.decompress((tmp_path / "adult.test.gz").read_bytes()).replace(b"<=50K.", b">50K.", 1)
    (tmp_path / "adult.test.gz").write_bytes(gzip.compress(text))
    monkeypatch.setattr(adult_module, "_files", lambda: tmp_path)
    with pytest.raises(ChecksumError, match=r"adult\.test\.gz .*expected 0f1a5ba2"):
        load_adult()


def test_truncated_file_raises_checksum_error(tmp_path):
    shipped = resources.files("privdist.data") / "files"
    good = tmp_path / "adult.test.gz"
    good.write_bytes((shipped / "adult.test.gz").read_bytes())
    bad = tmp_path / "adult.data.gz"
    shutil.copyfileobj(open(good, "rb"), open(bad, "wb"))  # wrong content under the training file's name
    with pytest.raises(ChecksumError, match=r"adult\.data\.gz"):
        adult_module._parse_adult_files(bad, good)


def test_missing_shipped_file_is_named(tmp_path, monkeypatch, fresh_cache):
    monkeypatch.setattr(adult_module, "_files", lambda: tmp_path)
    with pytest.raises(DataFileNotFoundError, match=r"adult\.data\.gz is missing"):
        load_adult()
