"""Issue 26: property tests over ``privdist fit`` arguments and CSV contents.

Every generated command must exit 0 (and then have written a model that loads and predicts finite values, when
``--out`` was given) or exit 2 with one ``error: ...`` line naming the problem without numpy reprs. A traceback,
another exit code or a hang fails. Rounds are drawn from tiny values and from values that must be refused
(above the 10^6 cap), never from the long but legal range in between. The fast suite runs 150 cases; the
slow-marked twin 2,500.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

#: Each option with its values, the usual ones first (Hypothesis favours the first values of a list, so most
#: generated commands are plausible and train; the rest probe the edges).
OPTIONS = {
    "--seed": ["0", "1", "-1"],
    "--algorithm": ["dpsgd", "dpmm", "dpadmm", "pvp", "laadmm", "dvp", "consensus_admm", "zzz"],
    "--agents": ["3", "2", "1", "5", "1000", "0", "-1", "x"],
    "--evaluation": None,
    "--out": ["OUT", "OUT/sub", "FILE", "DIR_WITH_FILE"],
    "--scale": ["dp", "none", "bounds", "data", "zz"],
    "--party-column": ["party", "label", "nope", "a"],
    "--vertical": ["2", "1", "3", "0", "100"],
    "--vertical-protocol": ["admm_sharing", "pool", "x"],
    "--feature-groups": ["a;b", "a,b;c", "0;1", "", ";", "a,a;b", "x", "a;b;c;d;e", "txt;a"],
    "--dirichlet": ["0.5", "5", "0", "-1", "nan", "inf"],
    "--agents-count": ["3", "2", "1", "0"],
    "--epsilon": ["0.5", "1e-3", "1e3", "1e-5", "0", "-1", "nan", "inf", "1e-8", "1e4", "x"],
    "--delta": ["1e-6", "1e-13", "0.1", "0", "0.5", "nan", "x"],
    "--network": ["complete", "ring", "star", "random_geometric", "erdos_renyi", "dzoa5", "nope"],
    "--rounds": ["1", "3", "0", "-1", "1000000000", "x"],
    "--task": ["auto", "classification", "regression", "z"],
    "--onehot": None,
    "--categories": ["txt=x,y", "txt=", "bad", "nope=x", "missing.json"],
    "--bounds": ["a=0:1", "b=-3:3", "a=1:0", "a=x", "a=0:inf", "nope=0:1", "=0:1"],
    "--target-bounds": ["-5:5", "5:-5", "x", "0:inf"],
    "--classes": ["0,1", "no,yes", "0,1,2", "a,b", "a", "a,a"],
    "--range-share": ["0.1", "0.5", "0", "1", "nan"],
    "--row-norm": ["1", "3", "0", "-1", "inf"],
    "--test-size": ["0.2", "0.5", "0.999", "0", "1", "nan"],
    "--curve": ["", "1", "0.5,2", "abc", "nan", "1e-9"],
    "--draws": ["1", "2", "0", "-1"],
    "--trust": ["auto", "local", "secure_aggregation", "x"],
    "--colluding": ["0", "1", "5", "-1", "1.5", "100000000000000000000000"],
    "--dropout-tolerance": ["0", "0.2", "1", "nan", "inf", "-0.1", "1e400", "x"],
    "--overwrite": None,
    "--yes": None,
    "--bogus": None,
}
#: Half of the generated commands are plausible: options from this table only (values that should train), at most
#: one way of forming the parties, on a table without nasty cells.
PLAUSIBLE = {
    "--seed": ["0", "1"], "--algorithm": ["dpsgd", "dpmm", "dpadmm", "pvp", "laadmm"], "--evaluation": None,
    "--out": ["OUT"], "--scale": ["dp", "none", "data"], "--epsilon": ["0.5", "2"], "--task": ["auto"],
    "--bounds": ["a=-3:3"], "--test-size": ["0.3"], "--curve": ["1"], "--draws": ["2"], "--row-norm": ["2"],
    "--range-share": ["0.2"], "--onehot": None, "--trust": ["auto", "local"],
}
PARTIES = {"--agents": ["2", "3"], "--party-column": ["party"], "--dirichlet": ["5"], "--vertical": ["2"],
           "--feature-groups": ["a;b,c"]}
#: Added unless drawn: keeps every fit tiny (a fit of a few rounds, one noise draw, no curve refits).
DEFAULTS = {"--target": "label", "--epsilon": "1", "--delta": "1e-5", "--rounds": "2", "--draws": "1",
            "--curve": ""}


@st.composite
def tables(draw, plausible: bool = False) -> str:
    """A CSV text: numeric columns a, b, c, a text column, a label and a party column, with nasty variants (none
    when ``plausible``)."""
    n = draw(st.sampled_from([60, 120, 40] if plausible else [60, 120, 40, 10, 3, 1, 0]))
    rng = np.random.default_rng(draw(st.integers(0, 5)))
    cols = {"a": rng.normal(size=n).round(3), "b": (rng.normal(size=n) * draw(st.sampled_from([1, 1e4]))).round(3),
            "c": rng.integers(0, 5, n)}
    label = draw(st.sampled_from(["binary", "text", "three", "real"] + ([] if plausible else ["constant", "missing"])))
    if label == "binary":
        y = rng.integers(0, 2, n).astype(str)
    elif label == "text":
        y = rng.choice(["no", "yes"], n)
    elif label == "three":
        y = rng.integers(0, 3, n).astype(str)
    elif label == "real":
        y = rng.normal(size=n).round(3).astype(str)
    elif label == "constant":
        y = np.full(n, "1")
    else:
        y = np.where(rng.random(n) > 0.2, "1", "")
    rows = [[str(cols["a"][i]), str(cols["b"][i]), str(cols["c"][i]), str(rng.choice(["x", "y"])), y[i],
             str(rng.integers(0, draw(st.sampled_from([3, 2, 1, 20]))))] for i in range(n)]
    header = ["a", "b", "c", "txt", "label", "party"]
    nasty = "none" if plausible else draw(st.sampled_from(["none"] * 6 + ["nan_cell", "inf_cell", "dup_header",
                                                                          "ragged", "party_missing"]))
    if nasty == "dup_header":
        header[1] = "label"
    elif nasty == "nan_cell" and rows:
        rows[0][0] = "nan"
    elif nasty == "inf_cell" and rows:
        rows[-1][1] = "inf"
    elif nasty == "ragged" and rows:
        rows[0].append("9")
    elif nasty == "party_missing" and rows:
        rows[0][5] = ""
    if plausible or not draw(st.booleans()):  # a text column (then --onehot is needed) in half of the others
        header.pop(3)
        rows = [r[:3] + r[4:] for r in rows]
    return "\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n"


@st.composite
def fit_commands(draw):
    plausible = draw(st.booleans())
    table = PLAUSIBLE if plausible else OPTIONS
    chosen = draw(st.lists(st.sampled_from(list(table)), max_size=5, unique=True))
    if plausible and draw(st.booleans()):
        chosen.append(draw(st.sampled_from(list(PARTIES))))
    argv = []
    for opt in chosen:
        argv.append(opt)
        values = PARTIES[opt] if opt in PARTIES else table[opt]
        if values is not None:
            argv.append(draw(st.sampled_from(values)))
    for opt, value in DEFAULTS.items():
        if opt not in chosen:
            argv += [opt, value]
    return draw(tables(plausible)), argv


def _check_fit(table: str, argv: list[str], tmp_path) -> None:
    from privdist.cli.main import main

    data = tmp_path / "data.csv"
    data.write_text(table)
    (tmp_path / "FILE").write_text("x")
    (tmp_path / "DIR_WITH_FILE").mkdir(exist_ok=True)
    (tmp_path / "DIR_WITH_FILE" / "notes.txt").write_text("mine")
    names = {"OUT": tmp_path / "out", "FILE": tmp_path / "FILE", "OUT/sub": tmp_path / "out" / "sub",
             "DIR_WITH_FILE": tmp_path / "DIR_WITH_FILE"}
    argv = [str(names.get(a, a)) for a in argv]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["fit", str(data), *argv])
        except SystemExit as exc:
            code = exc.code
    text = err.getvalue()
    event(f"exit {code}")  # --hypothesis-show-statistics: how many generated fits trained
    assert code in (0, 2), f"exit {code} for {argv}:\n{text[-3000:]}"
    if code == 2:
        lines = [line for line in text.strip().splitlines() if line.strip()]
        assert lines and lines[-1].startswith("error: "), f"{argv}:\n{text[-3000:]}"
        assert "np.float64(" not in text and "np.int64(" not in text and "np.str_(" not in text, text
        return
    if "--out" in argv:
        from privdist.learn import load_model

        model = load_model(f"{argv[argv.index('--out') + 1]}/model.json")  # a vertical model joins its blocks
        assert np.all(np.isfinite(model.coef))


FAST = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@settings(FAST, max_examples=150)
@given(command=fit_commands())
def test_generated_fit_commands_exit_0_or_2(command, tmp_path_factory):
    _check_fit(*command, tmp_path_factory.mktemp("fit"))


@pytest.mark.slow
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=2500)
@given(command=fit_commands())
def test_generated_fit_commands_slow(command, tmp_path_factory):
    _check_fit(*command, tmp_path_factory.mktemp("fit"))
