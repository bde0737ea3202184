"""Issue 39 (new surfaces): the deployment commands' bad inputs found by trying docs/deploy.md as a new user, each a
named one-line error (exit 2) found before anything is dialled, listened for, spent or overwritten. No process is
started here: every check happens before the network."""

import pytest

from privdist.cli.main import main
from privdist.runtime.remote.pki import rehearsal_consortium


@pytest.fixture(scope="module")
def consortium(tmp_path_factory):
    return rehearsal_consortium(tmp_path_factory.mktemp("deploy-inputs"), ["party0"])


def _party(d, data, *extra):
    return ["party", str(data), "--target", "label", "--classes", "no,yes", "--key", d / "party0/party0.key",
            "--cert", d / "party0/party0.crt", "--ca", d / "ca/ca.crt", "--coordinator", "127.0.0.1:1",
            "--coordinator-name", "coord", "--ledger-dir", d / "ledger", "--timeout", "1", *extra]


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, err


def test_a_party_file_that_is_missing_or_has_no_rows_is_named_before_dialling(consortium, tmp_path, capsys):
    code, err = _run(_party(consortium, tmp_path / "nope.csv"), capsys)
    assert code == 2 and "data file" in err and "nope.csv" in err and "not found" in err  # was a traceback
    (tmp_path / "header.csv").write_text("age,label\n\n")
    code, err = _run(_party(consortium, tmp_path / "header.csv"), capsys)
    assert code == 2 and "header.csv: the file has no data rows" in err  # was found only after accepting the plan


def test_a_holdout_out_of_range_is_named_before_the_job_spends_anything(consortium, tmp_path, capsys):
    (tmp_path / "mine.csv").write_text("age,label\n30,no\n40,yes\n")
    code, err = _run(_party(consortium, tmp_path / "mine.csv", "--holdout", "1.5"), capsys)
    assert code == 2 and err.count("\n") == 1 and "--holdout must be in [0, 1), got 1.5" in err


def test_a_header_with_a_byte_order_mark_states_its_real_column_names(tmp_path):
    """Excel's "CSV UTF-8" starts the file with a byte-order mark: the party stated '\\ufeffage' (another column
    than its partners' 'age', or 'no column label' when the label came first)."""
    from privdist.cli.party_cmd import _facts, _vertical_facts

    path = tmp_path / "excel.csv"
    path.write_text("label,age\nno,30\nyes,40\n", encoding="utf-8-sig")
    assert _facts(str(path), "label", ["no", "yes"], {}) == {"rows": 2, "columns": ["age"], "classes": ["no", "yes"]}
    assert _vertical_facts(str(path))["columns"] == ["label", "age"]


def _coordinate(d, out, *extra):
    return ["coordinate", "--parties", "party0,party1", "--key", d / "coord/coord.key", "--cert", d / "coord/coord.crt",
            "--ca", d / "ca/ca.crt", "--epsilon", "1", "--out", out, "--timeout", "1", *extra]


@pytest.mark.parametrize("content, message", [
    ('{"age": [15, 50', "not valid JSON"),
    ("[15, 50]", "public bounds are a JSON object"),
    ('{"age": "wide"}', "column 'age' needs a pair of numbers"),
    ('{"age": "12"}', "column 'age' needs a pair of numbers"),
    ('{"age": [50, 15]}', "column 'age' needs finite bounds with low < high"),
    ('{"age": [NaN, 1]}', "column 'age' needs finite bounds with low < high"),
    (None, "bounds file .* not found"),
])
def test_a_bad_bounds_file_is_named_before_listening(consortium, tmp_path, capsys, content, message):
    """A bounds file that is not JSON, not an object, or not finite pairs low < high: tracebacks (or, inverted,
    found only once every party had joined)."""
    import re

    path = tmp_path / "bounds.json"
    if content is not None:
        path.write_text(content)
    code, err = _run(_coordinate(consortium, tmp_path / "release", "--bounds", path), capsys)
    assert code == 2 and re.search(message, err) and "listening" not in capsys.readouterr().out


@pytest.mark.parametrize("extra, message", [
    (("--epsilon", "-1"), "epsilon must be a finite number > 0"),
    (("--delta", "2"), r"delta must be in \(0, 1\)"),
    (("--rounds", "0"), "rounds must be an integer from 1"),
    (("--vertical-protocol", "pool"), "protocol of a vertical job"),
])
def test_the_jobs_settings_are_checked_before_listening(consortium, tmp_path, capsys, extra, message):
    """They were checked only once every party had joined (the operator waited for nothing)."""
    import re

    code, err = _run(_coordinate(consortium, tmp_path / "release", *extra), capsys)
    assert code == 2 and re.search(message, err)


def test_a_vertical_job_checks_its_labels_and_takes_rounds_0_as_given(consortium, tmp_path, capsys):
    """--rounds 0 of a vertical job was read as 'not given' and ran the default 50 rounds; labels that are not two
    classes were found once every party had joined, a missing labels file was a traceback."""
    labels = tmp_path / "labels.csv"
    labels.write_text("y\nno\nyes\nmaybe\n")
    base = ("--vertical", "--scale", "none", "--target", "y", "--labels")
    code, err = _run(_coordinate(consortium, tmp_path / "r", *base, tmp_path / "nope.csv"), capsys)
    assert code == 2 and "labels file" in err and "not found" in err
    code, err = _run(_coordinate(consortium, tmp_path / "r", *base, labels), capsys)
    assert code == 2 and "must hold two classes" in err
    labels.write_text("y\nno\nyes\n")
    code, err = _run(_coordinate(consortium, tmp_path / "r", *base, labels, "--rounds", "0"), capsys)
    assert code == 2 and "rounds must be an integer from 1" in err


def test_a_folder_holding_a_release_is_not_overwritten_by_another_job(consortium, tmp_path, capsys):
    """A second job with the first one's --out replaced its model.json and results.json without a word."""
    out = tmp_path / "release"
    out.mkdir()
    (out / "model.json").write_text('{"job": "first"}')
    code, err = _run(_coordinate(consortium, out), capsys)
    assert code == 2 and "already holds a release (model.json)" in err
    assert (out / "model.json").read_text() == '{"job": "first"}' and not (out / "results.json").exists()


def test_a_partys_file_from_an_earlier_job_is_not_replaced_without_overwrite(consortium, tmp_path, capsys):
    """A party's second job wrote its personal model (or, vertical, its coefficient block) over the first job's
    without a word; neither can be made again (the release stays with the coordinator). Now it stops before
    dialling unless --overwrite."""
    (tmp_path / "mine.csv").write_text("age,label\n30,no\n40,yes\n")
    (tmp_path / "personal-model-party0.json").write_text("{}")
    code, err = _run(_party(consortium, tmp_path / "mine.csv"), capsys)
    assert code == 2 and "personal-model-party0.json exists" in err and "--overwrite" in err
    code, err = _run(_party(consortium, tmp_path / "mine.csv", "--overwrite"), capsys)
    assert code == 2 and "no mutually authenticated connection" in err  # on to dialling (nobody listens)
    (tmp_path / "own" / "parties").mkdir(parents=True)
    (tmp_path / "own" / "parties" / "party_1.json").write_text("{}")
    vertical = ["party", "--vertical", tmp_path / "mine.csv", "--out", tmp_path / "own", "--key",
                consortium / "party0/party0.key", "--cert", consortium / "party0/party0.crt", "--ca",
                consortium / "ca/ca.crt", "--coordinator", "127.0.0.1:1", "--coordinator-name", "coord",
                "--ledger-dir", tmp_path / "ledger", "--timeout", "1"]
    code, err = _run(vertical, capsys)
    assert code == 2 and "party_1.json exists" in err
    assert (tmp_path / "personal-model-party0.json").read_text() == "{}"


def test_a_ledger_the_party_cannot_write_or_read_is_named_before_dialling(consortium, tmp_path, capsys):
    """It was found when the plan arrived: the error (with the party's local path) went to the coordinator and the
    party printed that the coordinator had gone away before offering a plan."""
    (tmp_path / "mine.csv").write_text("age,label\n30,no\n40,yes\n")
    (tmp_path / "afile").write_text("")
    argv = _party(consortium, tmp_path / "mine.csv", "--no-personal")
    code, err = _run(argv[:argv.index("--ledger-dir") + 1] + [tmp_path / "afile" / "ledger"] + argv[-3:], capsys)
    assert code == 2 and "cannot open the ledger lock" in err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "ledger.json").write_text("{")
    code, err = _run(argv[:argv.index("--ledger-dir") + 1] + [tmp_path / "broken"] + argv[-3:], capsys)
    assert code == 2 and "not valid JSON" in err and "never resets a ledger" in err


def test_categories_with_vertical_are_refused_not_ignored(consortium, tmp_path, capsys):
    """A vertical party's --categories was silently ignored: its text column failed only after it accepted the plan."""
    (tmp_path / "cols.csv").write_text("city,age\nParis,30\nLyon,40\n")
    argv = ["party", "--vertical", tmp_path / "cols.csv", "--out", tmp_path / "own", "--categories",
            "city=Paris,Lyon", "--key", consortium / "party0/party0.key", "--cert", consortium / "party0/party0.crt",
            "--ca", consortium / "ca/ca.crt", "--coordinator", "127.0.0.1:1", "--coordinator-name", "coord",
            "--ledger-dir", tmp_path / "ledger", "--timeout", "1"]
    code, err = _run(argv, capsys)
    assert code == 2 and "--categories is not read with --vertical" in err


def test_a_vertical_partys_missing_value_is_its_own_named_error():
    """A vertical party's NaN was found after it accepted, past its own checks: the coordinator got 'the features
    of party 1 contain NaN' and the party printed that the coordinator had gone away. The loader names it (and so
    the party keeps the error, the job aborted in its ledger: test_learn_job)."""
    import tempfile
    from pathlib import Path

    from privdist.cli.party_cmd import _vertical_loader
    from privdist.errors import NonFiniteDataError

    path = Path(tempfile.mkdtemp()) / "cols.csv"
    path.write_text("GS,lang\n29,46\n,45\n")
    with pytest.raises(NonFiniteDataError, match=r"missing or infinite value\(s\) in column\(s\) \['GS'\]"):
        _vertical_loader(str(path))()
