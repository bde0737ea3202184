"""Issue 15: every CLI error is one line ``error: ...`` with exit 2; Ctrl-C is one line, exit 130."""

import json

import pytest

from privdist.cli.main import main

TINY = """name = "tiny"
trials = 2
rounds = 3
[data]
kind = "dzoa_synthetic"
[network]
kind = "dzoa5"
[[runs]]
label = "admm"
algorithm = "consensus_admm"
"""


@pytest.fixture
def spec_file(tmp_path):
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    return f


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize("extra,text", [
    (["--jobs", "0"], "--jobs must be >= 1"),
    (["--jobs", "-2"], "--jobs must be >= 1"),
    (["--resume", "--overwrite"], "exclude each other"),
    (["--out", "/proc/privdist-x"], "cannot create results directory"),
    (["--trials", "0"], "trials"),
    (["--jobs", "two"], "invalid int value"),
])
def test_bad_options_are_one_line_errors(spec_file, tmp_path, capsys, extra, text):
    argv = ["run", str(spec_file), "--no-progress", "--out", str(tmp_path / "o"), *extra]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2 and text in _one_error_line(capsys)


@pytest.mark.parametrize("line,text", [
    ('[[runs]]\nlabel = "b"\nalgorithm = "dpsgd"\nparams = { epsilon = "1" }\n', "runs[1].params.epsilon"),
    ('[[runs]]\nlabel = "b"\nalgorithm = "dpsgd"\nparams = { delta = 0.5 }\n', "runs[1].params.delta"),
])
def test_spec_errors_are_one_line(tmp_path, capsys, line, text):
    f = tmp_path / "bad.toml"
    f.write_text(TINY + line)
    assert main(["run", str(f), "--out", str(tmp_path / "o")]) == 2
    assert text in _one_error_line(capsys)


def test_huge_spec_needs_yes(tmp_path, capsys):
    f = tmp_path / "big.toml"
    f.write_text(TINY.replace("rounds = 3", "rounds = 1000000000000"))
    assert main(["run", str(f), "--out", str(tmp_path / "o")]) == 2
    assert "pass --yes" in _one_error_line(capsys)


def test_quick_without_quick_table_says_so(spec_file, tmp_path, capsys):
    assert main(["run", str(spec_file), "--quick", "--no-progress", "--out", str(tmp_path / "o")]) == 0
    assert "has no [quick] table" in capsys.readouterr().err


def test_divergence_exits_non_zero(tmp_path, capsys):
    f = tmp_path / "div.toml"
    f.write_text(TINY.replace('"consensus_admm"', '"dpsgd"\nparams = { alpha0 = 1e200 }').replace("trials = 2",
                                                                                              "trials = 1"))
    assert main(["run", str(f), "--no-progress", "--out", str(tmp_path / "o")]) == 2
    assert "diverged" in capsys.readouterr().err
    assert json.loads((tmp_path / "o" / "results.json").read_text())["errors"]


def test_ctrl_c_keeps_finished_trials(spec_file, tmp_path, capsys, monkeypatch):
    from privdist.experiments import runner

    real = runner.run_trial

    def interrupt_second(spec, trial, *a, **k):
        if trial == 1:
            raise KeyboardInterrupt
        return real(spec, trial, *a, **k)

    monkeypatch.setattr(runner, "run_trial", interrupt_second)
    out = tmp_path / "o"
    assert main(["run", str(spec_file), "--no-progress", "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interrupted: 1 finished trial(s)")
    assert (out / "trials" / "trial_0000.json").exists() and not (out / ".privdist-lock").exists()
    monkeypatch.setattr(runner, "run_trial", real)
    assert main(["run", str(spec_file), "--no-progress", "--out", str(out), "--resume"]) == 0


def test_ctrl_c_during_start_up_is_one_line(monkeypatch, capsys):
    import privdist.cli.main as cli

    def boom():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", boom)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"
