import json
import subprocess
import sys

from privdist.cli.main import main


def test_list_json(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    qs = next(r for r in rows if r["name"] == "quickstart")
    assert set(qs) >= {"name", "paper", "figure", "estimated_seconds"}


def test_run_quickstart_small(tmp_path, capsys):
    out = tmp_path / "qs"
    assert main(["run", "quickstart", "--trials", "2", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "DPSGD eps=0.15" in text and "claim admm_exact" in text and "epsilon per agent" in text
    assert json.loads((out / "results.json").read_text())["trials"] == 2
    assert (out / "ne_vs_iteration.png").exists()


def test_errors_are_one_line_with_exit_2(tmp_path, capsys):
    assert main(["run", "nosuch"]) == 2
    assert "unknown experiment 'nosuch'" in capsys.readouterr().err
    assert main(["reproduce", "S9"]) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\ntrials = 1\nrounds = 2\nbogus = 1\n[data]\nkind='dzoa_synthetic'\n[network]\nkind='dzoa5'\n")
    assert main(["run", str(bad)]) == 2
    assert "unknown key(s) ['bogus']" in capsys.readouterr().err


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "privdist.cli.main", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "privdist" in proc.stdout


# ``privdist run`` that stops after its third trial file until it is killed: the kill lands at a known point, so
# how many trials finished does not depend on the machine's speed
_HOLD_AFTER_THREE_TRIALS = """
import sys, threading
from privdist.experiments import runner
save, saved = runner._save_trial, []
def hold_after_three(*args, **kwargs):
    save(*args, **kwargs)
    saved.append(1)
    if len(saved) == 3:
        threading.Event().wait()
runner._save_trial = hold_after_three
from privdist.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_killed_run_keeps_finished_trials_and_resumes(tmp_path):
    import os
    import signal

    from conftest import wait_until

    out = tmp_path / "k"
    args = ["run", "quickstart", "--trials", "8", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_AFTER_THREE_TRIALS, *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: proc.poll() is not None or len(list((out / "trials").glob("trial_*.json"))) >= 3,
                   timeout=300, what="three finished trial files")
        assert proc.poll() is None, "the run ended before it was killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    finished = sorted((out / "trials").glob("trial_*.json"))
    assert len(finished) == 3
    for f in finished:
        json.loads(f.read_text())  # every finished trial is complete JSON
    partial = json.loads((out / "results.json").read_text())
    assert partial["complete"] is False and partial["trials"] == 2  # written after each trial file but the third's
    assert main(["run", "quickstart", "--trials", "8", "--out", str(out), "--resume", "--no-progress"]) == 0
    final = json.loads((out / "results.json").read_text())
    assert final["complete"] is True and final["trials"] == 8


def test_report_renders_results_directories_as_markdown(tmp_path, capsys):
    from privdist.cli.main import main
    from privdist.experiments import load_experiment, run_experiment

    run_experiment(load_experiment("quickstart").with_overrides(trials=2), tmp_path / "qs", progress=False)
    assert main(["report", str(tmp_path / "qs")]) == 0
    out = capsys.readouterr().out
    assert "| consensus ADMM (non-private) |" in out and "inf (not private)" in out
    assert "guarantee eps (PLD)" in out and "**holds**" in out
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "holds no results.json" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "qs"), "--metric", "nope"]) == 2


def test_help_and_list_do_not_import_the_heavy_layers():
    """Start-up (issue 16): --help and list load neither dp-accounting, scipy, the algorithms nor the runtime."""
    import subprocess
    import sys

    code = ("import sys; from privdist.cli.main import main\n"
            "import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['list'])\n"
            "    try: main(['--help'])\n"
            "    except SystemExit: pass\n"
            "heavy = [m for m in ('dp_accounting', 'scipy', 'privdist.algorithms', 'privdist.runtime', 'matplotlib')"
            " if m in sys.modules]\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_backend_choices_match_the_runtime():
    from privdist.cli.run_cmd import BACKEND_NAMES
    from privdist.runtime import BACKENDS

    assert set(BACKEND_NAMES) == set(BACKENDS)


def test_run_set_overrides_a_catalog_value_without_a_toml_copy(tmp_path, capsys):
    import json

    from privdist.cli.main import main
    from privdist.experiments import load_experiment

    spec = load_experiment("quickstart").with_settings(["runs.1.sweep.epsilon=[0.5]", "runs.1.params.alpha0=0.1",
                                                        "trials=2", "privacy.secure=true"])
    assert [r.params.get("epsilon") for r in spec.runs] == [None, 0.5] and spec.runs[1].params["alpha0"] == 0.1
    assert spec.trials == 2 and spec.privacy.secure is True
    out = tmp_path / "o"
    assert main(["run", "quickstart", "--set", "runs.1.sweep.epsilon=[0.5]", "--set", "trials=1", "--out", str(out),
                 "--no-progress"]) == 0
    saved = json.loads((out / "results.json").read_text())
    assert saved["config"]["runs"][1]["sweep"]["epsilon"] == [0.5]
    capsys.readouterr()
    for bad in ("runs.9.params.epsilon=1", "nope", "runs.1.params.epsilon=\"x\"", "rounds.x=1"):
        assert main(["run", "quickstart", "--set", bad, "--out", str(tmp_path / "b")]) == 2
        assert capsys.readouterr().err.startswith("error:")
