"""Issue 40: interrupted writes. A run or fit writes its completion marker (``.privdist-complete``) last; every reader
(``privdist report``, the audit's release reader, ``load_model``) refuses a directory without it by one named error;
temporary files of the atomic writer left by a killed process are removed when the directory is opened again
(``--resume``). Kills are simulated by writing the state a killed process leaves (no sleeps, no real signals).
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from privdist._io import COMPLETE_MARKER
from privdist.errors import IncompleteOutputError, OutputDirError
from privdist.experiments import parse_spec, run_experiment
from privdist.experiments.store import FIT_EXPERIMENT, MARKER, ResultsDir

SPEC = {
    "name": "tiny", "trials": 2, "rounds": 5, "seed": 1, "data": {"kind": "dzoa_synthetic"},
    "network": {"kind": "dzoa5"}, "problem": {"loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
    "privacy": {"delta": 1e-3},
    "runs": [{"label": "dpsgd", "algorithm": "dpsgd", "params": {"alpha0": 0.3, "epsilon": 0.5}}],
}


def _report(directory):
    from privdist.cli.report_cmd import report_markdown

    return report_markdown([directory])


def _interrupt(out, experiment: str, config: dict, **kw) -> None:
    """The state a process killed right after opening ``out`` leaves: the directory prepared (old files still there,
    completion marker removed), nothing finished."""
    ResultsDir(out, experiment, config, **kw).close()


def test_a_finished_run_is_marked_and_reported(tmp_path):
    out = tmp_path / "run"
    run_experiment(parse_spec(SPEC), out, progress=False)
    assert (out / COMPLETE_MARKER).is_file()
    assert json.loads((out / MARKER).read_text())["completion_marker"] is True
    assert "tiny" in _report(out)


def test_an_interrupted_run_is_refused_until_resumed(tmp_path):
    spec = parse_spec(SPEC)
    out = tmp_path / "run"
    run_experiment(spec, out, progress=False)
    _interrupt(out, spec.name, spec.config(), resume=True)  # killed while rewriting: results.json still looks whole
    assert json.loads((out / "results.json").read_text())["complete"] is True
    with pytest.raises(IncompleteOutputError) as info:
        _report(out)
    assert "is incomplete: the run was interrupted" in str(info.value) and "--resume" in str(info.value)
    assert "\n" not in str(info.value)
    run_experiment(spec, out, progress=False, resume=True)
    assert "tiny" in _report(out)


def test_resume_removes_temporary_files_of_a_killed_writer(tmp_path):
    spec = parse_spec({**SPEC, "trials": 3})
    out = tmp_path / "run"
    run_experiment(spec, out, progress=False)
    (out / "trials" / "trial_0002.json").unlink()  # killed during trial 2, while writing results.json
    (out / COMPLETE_MARKER).unlink()
    stale = [out / ".results.json.k2x8q1.tmp", out / "trials" / ".trial_0002.json.a9b0c1.tmp"]
    for f in stale:
        f.write_bytes(b"{" * 335_000)  # a partial write
    with pytest.raises(IncompleteOutputError):
        _report(out)
    res = run_experiment(spec, out, progress=False, resume=True)
    assert res["trials"] == 3 and not any(f.exists() for f in stale)
    assert not list(out.rglob("*.tmp")) and (out / COMPLETE_MARKER).is_file()


def test_a_directory_of_an_older_privdist_is_read_as_before(tmp_path):
    out = tmp_path / "run"
    run_experiment(parse_spec(SPEC), out, progress=False)
    marker = json.loads((out / MARKER).read_text())
    del marker["completion_marker"]
    (out / MARKER).write_text(json.dumps(marker))
    (out / COMPLETE_MARKER).unlink()
    assert "tiny" in _report(out)  # no protocol: its results.json's complete flag decides, as before
    data = json.loads((out / "results.json").read_text())
    (out / "results.json").write_text(json.dumps({**data, "complete": False}))
    with pytest.raises(OutputDirError, match="unfinished run"):
        _report(out)


def _fit(out, *extra) -> int:
    from privdist.cli.main import main

    data = out.parent / "d.csv"
    rng = np.random.default_rng(0)
    data.write_text("a,b,label\n" + "".join(f"{rng.normal():.3f},{rng.normal():.3f},{int(rng.random() > 0.5)}\n"
                                           for _ in range(60)))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(["fit", str(data), "--target", "label", "--epsilon", "1", "--delta", "1e-5", "--rounds", "2",
                     "--draws", "1", "--curve", "", "--scale", "none", "--out", str(out), *extra])


def test_an_interrupted_fit_is_refused_by_load_model_and_the_audit_reader(tmp_path):
    from privdist.audit.artifacts import read_release
    from privdist.learn import load_model

    out = tmp_path / "fit"
    assert _fit(out) == 0
    assert (out / COMPLETE_MARKER).is_file()
    load_model(out / "model.json")
    assert read_release(out, ["model.json", "results.json"])
    written = {name: (out / name).read_bytes() for name in ("model.json", "results.json")}
    _interrupt(out, FIT_EXPERIMENT, {"a": 1})  # a new fit began (directory cleared, marker removed) ...
    for name, content in written.items():  # ... wrote valid-looking files, and was killed before its marker
        (out / name).write_bytes(content)
    for read in (lambda: load_model(out / "model.json"), lambda: read_release(out, ["model.json"])):
        with pytest.raises(IncompleteOutputError, match="is incomplete: the run was interrupted"):
            read()
    assert _fit(out) == 0  # a rerun completes it
    load_model(out / "model.json")


def test_an_interrupted_directory_is_one_error_line_in_the_cli(tmp_path):
    from privdist.cli.main import main

    out = tmp_path / "run"
    run_experiment(parse_spec(SPEC), out, progress=False)
    (out / COMPLETE_MARKER).unlink()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["report", str(out)])
        except SystemExit as exc:
            code = exc.code
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "incomplete" in lines[0], lines


def test_a_writer_killed_during_its_first_file_leaves_a_directory_that_is_reused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / f"{MARKER}.x7y8z9.tmp").write_text('{"exp')  # killed while writing the experiment marker
    run_experiment(parse_spec(SPEC), out, progress=False)
    assert (out / COMPLETE_MARKER).is_file() and not list(out.rglob("*.tmp"))
