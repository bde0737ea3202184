"""Issue 39 (new-user fixes): ``privdist fit``'s warnings and per-party rows name columns and parties by their names,
and a warning about many parties or columns is one line (a few names, then "and N more").

A new user's two CSVs had produced warnings naming columns ``x10, x14`` and parties ``0..64`` (189 lines for 65
parties). Here: 65 parties named by a text party column, most of them tiny; named, constant, extreme and one-hot
columns.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privdist.cli.fit_cmd import PARTY_ROWS, _party_rows
from privdist.cli.fit_diagnose import data_warnings, tiny_parties
from privdist.cli.main import main
from privdist.data.names import SHOWN, column_label, name_list, party_label, unnamed_label

POSITIONAL_COLUMN = re.compile(r"\bx\d+\b")
POSITIONAL_PARTY = re.compile(r"\bparty \d+\b")


def _schools_csv(path, n_parties: int = 65, seed: int = 0):
    """``n_parties`` schools (Lincoln High and Roosevelt the smallest), columns hours, income (extreme), const,
    track (text, one-hot), y."""
    rng = np.random.default_rng(seed)
    names = ["Lincoln High", "Roosevelt"] + [f"School {k:02d}" for k in range(n_parties - 2)]
    sizes = np.r_[3, 4, rng.integers(6, 40, size=n_parties - 2)]
    school = np.repeat(names, sizes)
    n = school.size
    df = pd.DataFrame({"school": school, "hours": rng.uniform(0, 40, n), "income": rng.lognormal(10, 1, n),
                       "const": 3.0, "track": rng.choice(["academic", "vocational", "arts"], n)})
    df["y"] = (df.hours / 40 + rng.normal(0, 0.3, n) > 0.5).astype(int)
    df.to_csv(path, index=False)
    return names


def _fit(tmp_path, capsys, *extra):
    path = tmp_path / "schools.csv"
    names = _schools_csv(path)
    out = tmp_path / "out"
    assert main(["fit", str(path), "--target", "y", "--party-column", "school", "--onehot", "--categories",
                 "track=academic,arts,vocational", "--epsilon", "1", "--delta", "1e-5", "--rounds", "3", "--curve",
                 "", "--draws", "1", "--evaluation", "--out", str(out), *extra]) == 0
    console = capsys.readouterr().out
    return names, console, out


def test_fit_names_parties_and_columns_in_one_line_each(tmp_path, capsys):
    names, console, out = _fit(tmp_path, capsys, "--scale", "none")
    flat = " ".join(console.split())
    evaluation = json.loads((out / "evaluation.json").read_text())
    small = evaluation["tiny_parties"]
    # the tiny-parties warning: one line naming the smallest parties by their school, and how many more
    line = next(w for w in evaluation["warnings"] if w.startswith("tiny parties"))
    assert f"{len(small)} of 65 parties" in line
    assert "Lincoln High (" in line and "Roosevelt (" in line
    listed = ", ".join(f"{p['party']} ({p['train_rows']})" for p in small[:SHOWN])
    assert listed in line and f"and {len(small) - SHOWN} more" in line
    assert [p["train_rows"] for p in small] == sorted(p["train_rows"] for p in small)  # the smallest first
    assert {p["party"] for p in small} <= set(names)
    assert " ".join(line.split()) in flat  # printed as written
    # the unscaled columns by their names
    unscaled = next(w for w in evaluation["warnings"] if w.startswith("features unscaled"))
    assert unscaled.startswith("features unscaled: income, hours reach")
    # no positional names anywhere a user reads
    for text in (console, (out / "results.json").read_text(), json.dumps(evaluation)):
        assert not POSITIONAL_COLUMN.search(text)
    assert not POSITIONAL_PARTY.search(console)
    # a handful of warning lines and per-party rows summarised: the console does not grow with the parties
    assert len(evaluation["warnings"]) <= 4
    assert "all 65 parties" in flat and "each party alone: median" in flat and " alone (" not in flat
    assert len(console.splitlines()) < 80


def test_the_range_step_names_the_file_columns(tmp_path, capsys):
    """The DP range step's record (released in results.json and model.json) names the CSV's columns."""
    _, console, out = _fit(tmp_path, capsys)
    results = json.loads((out / "results.json").read_text())
    step = next(s for s in results["privacy"]["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert step["columns"] == ["hours", "income", "const"]
    model = json.loads((out / "model.json").read_text())
    assert not POSITIONAL_COLUMN.search(json.dumps(model)) and not POSITIONAL_COLUMN.search(console)


def test_few_parties_are_listed_by_name(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 240
    df = pd.DataFrame({"a": rng.normal(size=n), "site": rng.choice(["[b]oston", "Denver", "Miami"], n)})
    df["y"] = (df.a + rng.normal(size=n) > 0).astype(int)
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "y", "--party-column", "site", "--epsilon", "1",
                 "--delta", "1e-5", "--rounds", "3", "--curve", ""]) == 0
    console = capsys.readouterr().out
    assert "Denver alone (" in console and "Miami alone (" in console
    assert "[b]oston alone (" in console  # a name in brackets is printed, not read as markup
    assert re.search(r"│\s+Denver │", console) and not POSITIONAL_PARTY.search(console)


def test_one_file_per_party_is_named_by_its_file(tmp_path, capsys):
    rng = np.random.default_rng(2)
    files = []
    for name, n in (("clinic_a.csv", 15), ("clinic_b.csv", 160)):
        df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
        df["y"] = (df.a > 0).astype(int)
        df.to_csv(tmp_path / name, index=False)
        files.append(str(tmp_path / name))
    assert main(["fit", *files, "--target", "y", "--epsilon", "1", "--delta", "1e-5", "--rounds", "3",
                 "--curve", ""]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "tiny parties: 1 of 2 parties" in flat and "clinic_a.csv (12)" in flat and "clinic_b" not in \
        flat.partition("tiny parties")[2].partition(";")[0]


def test_a_party_too_small_to_split_is_named(tmp_path, capsys):
    df = pd.DataFrame({"a": np.arange(41.0), "site": ["Tiny Town"] + ["Big City"] * 40, "y": [0, 1] * 20 + [0]})
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "y", "--party-column", "site", "--epsilon", "1",
                 "--delta", "1e-5"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "1 party holds fewer than 2 rows (Tiny Town)" in err and "Traceback" not in err


@pytest.mark.parametrize("n_parties", [65, 1000])
def test_many_parties_give_a_bounded_number_of_lines(n_parties):
    """The tiny-parties warning is one line naming SHOWN parties and counting the rest; the privacy table is one row
    when every party has the same guarantee, one row per distinct guarantee otherwise."""
    rng = np.random.default_rng(n_parties)
    names = [f"District {k:04d}" for k in range(n_parties)]
    sizes = rng.integers(2, 30, size=n_parties)
    X = rng.normal(size=(int(sizes.sum()), 4))
    notes = data_warnings(X, "dp", 1.0, sizes, ["a", "b", "c", "d"], natural=True, party_names=names)
    assert len(notes) == 1
    n_small = int(np.sum(sizes < 40))
    assert f"{n_small} of {n_parties} parties" in notes[0] and f"and {n_small - SHOWN} more" in notes[0]
    assert notes[0].count("District ") == SHOWN
    assert len(tiny_parties(sizes, 4, names)) == n_small
    same = [{"agent": k, "guarantee_pld": 1.0, "guarantee_rdp": 1.0, "paper_claim": None} for k in range(n_parties)]
    assert _party_rows(same, names) == [(f"all {n_parties} parties", ["1.0000", "1.0000", "n/a"])]
    two = [dict(a, guarantee_pld=0.5 if a["agent"] % 7 == 0 else 1.0) for a in same]
    rows = _party_rows(two, names)
    stricter = len(range(0, n_parties, 7))
    assert len(rows) == 2 and rows[0][0].startswith(f"{stricter} parties: District 0000, District 0007")
    assert rows[0][0].endswith(f"and {stricter - SHOWN} more") and rows[0][1][0] == "0.5000"


def test_numpy_data_get_positional_names():
    X = np.zeros((50, 12))
    X[:, 10] = 500.0
    text = data_warnings(X, "none", 1.0, np.array([25, 25]), None)
    assert text[0].startswith("features unscaled: column 10 reach")
    assert "tiny parties: 2 of 2 parties" in text[1] and "party 0 (25), party 1 (25)" in text[1]
    assert column_label(None, 3) == "column 3" and column_label(["a", "b", "c", "d"], 3) == "d"
    assert party_label(None, 3) == "party 3" and party_label(["north", "south"], 1) == "south"
    assert unnamed_label("x10", None) == "column 10" and unnamed_label("x10", ["x10"]) == "x10"
    assert unnamed_label("<target>", None) == "the target"


def test_few_parties_are_rows_of_their_own():
    agents = [{"agent": k, "guarantee_pld": 1.0, "guarantee_rdp": 1.0, "paper_claim": None}
              for k in range(PARTY_ROWS)]
    assert [r[0] for r in _party_rows(agents, None)] == [f"party {k}" for k in range(PARTY_ROWS)]


@given(st.lists(st.text(min_size=1, max_size=8), max_size=40), st.integers(1, 10))
def test_name_list_shows_at_most_limit_and_counts_the_rest(names, limit):
    text = name_list(names, limit)
    shown = min(len(names), limit)
    assert text.startswith(", ".join(names[:shown]))
    if len(names) > limit:
        assert text.endswith(f" and {len(names) - limit} more")
    else:
        assert text == ", ".join(names)
