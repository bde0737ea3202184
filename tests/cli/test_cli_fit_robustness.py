"""Issue 26: every case the issue lists for ``privdist fit`` ends in success with a correct result or in one
``error: ...`` line with exit 2, found before any training where the data are not needed."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from privdist.cli.main import main

BASE = ["--target", "label", "--epsilon", "1", "--delta", "1e-5", "--seed", "0", "--curve", "", "--draws", "1"]


@pytest.fixture
def csv(tmp_path):
    """300 rows, four numeric features, a binary label, a party column of three parties."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    df = pd.DataFrame(X, columns=list("abcd"))
    df["label"] = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    df["party"] = rng.integers(0, 3, 300)
    path = tmp_path / "bin.csv"
    df.to_csv(path, index=False)
    return path


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if a fit starts training (the case must be refused before)."""
    import privdist.cli.fit_horizontal as horizontal
    import privdist.cli.fit_vertical as vertical

    def refuse(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(horizontal, "fit_horizontal", refuse)
    monkeypatch.setattr(vertical, "fit_vertical", refuse)


def _fit(argv, capsys) -> tuple[int, str, str]:
    try:
        code = main(["fit", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _error(argv, capsys) -> str:
    code, _, err = _fit(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    return lines[0]


# ---------------------------------------------------------------------------------------------- tracebacks
def test_numeric_non_binary_target_fits_a_regression(tmp_path, capsys):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    df = pd.DataFrame(X, columns=list("abc"))
    df["label"] = X @ np.array([1.0, 2.0, 0.0]) + 0.1 * rng.normal(size=300)
    df.to_csv(tmp_path / "reg.csv", index=False)
    code, out, err = _fit([str(tmp_path / "reg.csv"), *BASE, "--agents", "3", "--target-bounds=-8:8"], capsys)
    assert code == 0, err
    assert "rmse" in out and "r2" in out and "mean predictor" in out


def test_more_parties_than_test_rows(csv, capsys, no_training):
    assert "fewer test rows than the 150 parties" in _error([str(csv), *BASE, "--agents", "150"], capsys)


def test_party_column_with_5000_parties_is_refused_at_once(tmp_path, capsys, no_training):
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(10000, 2)), columns=["a", "b"])
    df["label"] = (df["a"] > 0).astype(int)
    df["party"] = np.arange(10000) % 5000
    df.to_csv(tmp_path / "many.csv", index=False)
    assert "fewer test rows than the 5000 parties" in _error([str(tmp_path / "many.csv"), *BASE, "--party-column",
                                                              "party"], capsys)


def test_test_size_leaving_no_training_rows(csv, capsys, no_training):
    assert "0 training and 300 test rows" in _error([str(csv), *BASE, "--test-size", "0.999"], capsys)


@pytest.mark.parametrize("value,text", [("abc", "--curve takes comma-separated"), ("0.5,nan", "--curve epsilon"),
                                        ("1e9", "--curve epsilon")])
def test_bad_curve_before_training(csv, tmp_path, capsys, no_training, value, text):
    argv = [str(csv), *BASE[:-4], "--curve", value, "--out", str(tmp_path / "o")]
    assert text in _error(argv, capsys)


def test_out_is_a_file(csv, tmp_path, capsys, no_training):
    (tmp_path / "file").write_text("x")
    assert "exists and is not a directory" in _error([str(csv), *BASE, "--out", str(tmp_path / "file")], capsys)


def test_out_cannot_be_created(csv, tmp_path, capsys, no_training):
    (tmp_path / "file").write_text("x")
    assert "cannot create results directory" in _error([str(csv), *BASE, "--out", str(tmp_path / "file" / "x")],
                                                       capsys)


# ---------------------------------------------------------------------------------------------- hangs
def test_huge_rounds(csv, capsys, no_training):
    assert "--rounds must be from 1 to 1000000" in _error([str(csv), *BASE, "--rounds", "1000000000"], capsys)


def test_size_estimate_needs_yes(csv, capsys, monkeypatch):
    import privdist._checks as checks

    monkeypatch.setattr(checks, "MAX_SECONDS", 1e-3)  # every fit is "large": the estimate must ask for --yes
    assert "pass --yes" in _error([str(csv), *BASE, "--agents", "3", "--rounds", "2"], capsys)
    code, _, err = _fit([str(csv), *BASE, "--agents", "3", "--rounds", "2", "--yes"], capsys)
    assert code == 0, err


def test_complete_network_of_thousands_is_built_directly():
    import networkx as nx

    from privdist.network import Network, complete

    for n in (1, 2, 5, 40):
        assert complete(n).to_dict() == Network.from_networkx(nx.complete_graph(n)).to_dict()
    assert complete(3000).degrees.min() == 2999


# ---------------------------------------------------------------------------------------------- silently wrong
def test_zero_agents(csv, capsys, no_training):
    assert "--agents must be from 1" in _error([str(csv), *BASE, "--agents", "0"], capsys)


def test_empty_feature_groups(csv, capsys, no_training):
    assert "name no column" in _error([str(csv), *BASE, "--feature-groups", ""], capsys)


def test_out_holding_run_results_needs_overwrite(csv, tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text('name = "tiny"\ntrials = 1\nrounds = 2\n[data]\nkind = "dzoa_synthetic"\n[network]\n'
                    'kind = "dzoa5"\n[[runs]]\nlabel = "a"\nalgorithm = "consensus_admm"\n')
    out = tmp_path / "res"
    assert main(["run", str(spec), "--out", str(out), "--no-progress"]) == 0
    before = (out / "results.json").read_bytes()
    capsys.readouterr()
    assert "holds results of experiment 'tiny', not 'privdist fit'" in _error([str(csv), *BASE, "--out", str(out)],
                                                                              capsys)
    assert (out / "results.json").read_bytes() == before  # untouched: report still reads it
    assert main(["report", str(out)]) == 0
    capsys.readouterr()
    code, _, err = _fit([str(csv), *BASE, "--agents", "3", "--rounds", "2", "--out", str(out), "--overwrite"],
                        capsys)
    assert code == 0, err
    assert not (out / "trials").exists() and (out / "model.json").exists()
    assert "output of privdist fit" in _error_of(["report", str(out)], capsys)


def _error_of(argv, capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    return err


def test_party_column_equal_to_target(csv, capsys, no_training):
    assert "is the --target" in _error([str(csv), *BASE, "--party-column", "label"], capsys)


def test_duplicated_target_column(tmp_path, capsys, no_training):
    rng = np.random.default_rng(3)
    lines = ["a,b,label,label"] + [f"{rng.normal()},{rng.normal()},{v},{v}" for v in rng.integers(0, 2, 100)]
    (tmp_path / "dup.csv").write_text("\n".join(lines) + "\n")
    assert "['label'] appear more than once" in _error([str(tmp_path / "dup.csv"), *BASE], capsys)


@pytest.mark.parametrize("delta", ["0.5", "0.1", "0", "nan"])
def test_delta_of_a_run(csv, capsys, no_training, delta):
    argv = [str(csv), *BASE]
    argv[argv.index("--delta") + 1] = delta
    assert "--delta must lie in [1e-12, 0.1)" in _error(argv, capsys)


def test_two_fits_into_one_out_do_not_mix(csv, tmp_path, capsys):
    out = tmp_path / "o"
    first = [str(csv), *BASE[:-4], "--curve", "1,2", "--agents", "3", "--rounds", "2", "--out", str(out)]
    assert _fit(first, capsys)[0] == 0
    assert (out / "privacy_utility.png").exists() and (out / "evaluation.json").exists()
    second = [str(csv), "--target", "label", "--epsilon", "0.5", "--delta", "1e-5", "--agents", "3", "--rounds", "2",
              "--out", str(out)]  # secure mode: no evaluation files
    assert _fit(second, capsys)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == [".privdist-complete", ".privdist-experiment", "model.json",
                                                     "results.json"]
    assert json.loads((out / "results.json").read_text())["settings"]["epsilon"] == 0.5


def test_a_fit_while_another_writes_is_refused(csv, tmp_path, capsys, no_training):
    from privdist.experiments.store import acquire_lock, release_lock

    out = tmp_path / "o"
    out.mkdir()
    lock = acquire_lock(out)  # this live process holds it, as a running fit would
    try:
        assert "is in use by privdist process" in _error([str(csv), *BASE, "--out", str(out)], capsys)
    finally:
        release_lock(lock)


# ---------------------------------------------------------------------------------------------- messages
def test_tiny_epsilon_is_a_range_error(csv, capsys, no_training):
    assert "must lie in [1e-06, 1000], got 1e-08" in _error([str(csv), *BASE[:2], "--epsilon", "1e-8",
                                                            *BASE[4:]], capsys)


def test_epsilon_too_small_for_the_range_step_says_what_works(csv, capsys, no_training):
    err = _error([str(csv), *BASE[:2], "--epsilon", "1e-5", *BASE[4:]], capsys)
    assert "too small to calibrate" in err and "raise epsilon" in err


def test_small_epsilon_is_printed_with_its_digits(csv, capsys):
    # trust local: Gaussian releases spend exactly the request (under the default secure aggregation the Skellam
    # RDP conversion at this noise level certifies (0, delta), printed as 0.0000 correctly)
    code, out, err = _fit([str(csv), *BASE[:2], "--epsilon", "1e-4", *BASE[4:], "--agents", "2", "--rounds", "2",
                           "--trust", "local"], capsys)
    assert code == 0, err
    assert "guarantee epsilon = 0.0001 (PLD" in out and "0.0000" not in out


def test_dvp_is_not_offered(csv, capsys, no_training):
    err = _error([str(csv), *BASE, "--algorithm", "dvp"], capsys)
    assert "not offered by privdist fit" in err and "epsilon inf" in err


def test_directory_as_data(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    assert "is a directory" in _error([str(tmp_path / "d"), *BASE], capsys)


def test_network_ignored_by_dpmm_is_an_error(csv, capsys, no_training):
    assert "uses no network" in _error([str(csv), *BASE, "--network", "ring"], capsys)


def test_network_that_needs_parameters(csv, capsys, no_training):
    assert "it needs p" in _error([str(csv), *BASE, "--algorithm", "dpsgd", "--network", "erdos_renyi"], capsys)


def test_negative_seed(csv, capsys, no_training):
    argv = [str(csv), *BASE]
    argv[argv.index("--seed") + 1] = "-1"
    assert "--seed must be from 0" in _error(argv, capsys)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_out_under_proc(csv, capsys, no_training):
    assert "cannot create results directory" in _error([str(csv), *BASE, "--out", "/proc/privdist-x"], capsys)


def test_drop_leaves_a_row_id_out_of_the_features(csv, tmp_path, capsys):
    """Issue 39 (new user): Contraception's ``rownames`` and ``woman`` (row ids) became features of the released model,
    and ``privdist fit`` had no way to leave them out (``privdist personalize`` had ``--drop``)."""
    df = pd.read_csv(csv)
    df.insert(0, "rownames", np.arange(1, len(df) + 1))
    df.to_csv(tmp_path / "ids.csv", index=False)
    code, _, err = _fit([str(tmp_path / "ids.csv"), *BASE, "--party-column", "party", "--drop", "rownames",
                         "--out", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "out" / "model.json").read_text())["feature_names"] == list("abcd")
    assert "'nosuch' is not a column" in _error([str(tmp_path / "ids.csv"), *BASE, "--drop", "nosuch"], capsys)
    assert "--drop" in _error(["adult", *BASE[2:], "--agents", "3", "--drop", "age"], capsys)


def test_a_fit_that_fails_leaves_the_former_fit_in_out(csv, tmp_path, capsys):
    """Issue 39 (new user): re-running into an --out with a typo in --target deleted the former fit's model.json and
    results.json before failing (and --test-size 0.95 ended in an IndexError with the same loss)."""
    out = tmp_path / "out"
    code, _, err = _fit([str(csv), *BASE, "--party-column", "party", "--evaluation", "--out", str(out)], capsys)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert {"model.json", "results.json", "evaluation.json", ".privdist-complete"} <= set(before)
    df = pd.read_csv(csv)
    df.loc[df.index[:2], "party"] = 7  # a party of two rows: --test-size 0.95 leaves it no training row
    df.to_csv(tmp_path / "small.csv", index=False)
    assert "not a column" in _error([str(csv), *BASE, "--target", "nosuch", "--out", str(out)], capsys)
    assert "without a training row (7)" in _error([str(tmp_path / "small.csv"), *BASE, "--party-column", "party",
                                                   "--test-size", "0.95", "--out", str(out)], capsys)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    code, _, err = _fit([str(csv), *BASE, "--party-column", "party", "--seed", "1", "--out", str(out)], capsys)
    assert code == 0, err  # a fit that succeeds replaces the former one
    names = {p.name for p in out.iterdir()}
    assert "model.json" in names and ".privdist-complete" in names
    assert (out / "model.json").read_bytes() != before["model.json"]
