"""Issue 15: property tests over experiment specs, algorithm factories and CLI arguments.

Any outcome other than success or a named privdist error (a subclass of :class:`PrivdistError`; for the
Python API also a TypeError/ValueError whose message names the parameter) fails. The fast suite runs
150 + 100 + 60 = 310 generated cases; the slow-marked twins run 5,000 + 3,000 + 2,000 = 10,000. The
``[privacy] pairwise*`` keys are among the mutated ones here; ``test_experiments_pairwise_fuzz.py`` runs them end
to end, figures included (issue 40).
"""

from __future__ import annotations

import copy
import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privdist.algorithms.registry import ALGORITHMS, make_algorithm
from privdist.errors import PrivdistError
from privdist.experiments import parse_spec, run_trial
from privdist.experiments.resources import check_resources

BASE = {"name": "fz", "trials": 1, "rounds": 3, "seed": 0, "data": {"kind": "dzoa_synthetic", "params": {}},
        "network": {"kind": "dzoa5", "params": {}}, "problem": {}, "privacy": {}, "quick": {},
        "runs": [{"label": "r", "algorithm": "consensus_admm", "params": {}}]}
FAST_ALGORITHMS = ["consensus_admm", "dpsgd", "dpadmm", "pvp", "dvp", "radmm", "zooadmm", "orzo"]

nasty = st.one_of(
    st.integers(min_value=-3, max_value=12), st.sampled_from([0, -1, 10**7, 10**9, 10**12, 2**63, -2**63]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1e-300, 1e308, 0.5, 0.05, 1e200]),
    st.booleans(), st.text(max_size=8), st.sampled_from(["../../x", "/tmp/x", "", ".hidden", "a/b", "1", "auto"]),
    st.lists(st.integers(0, 3), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
KEY_PATHS = [
    ("name",), ("trials",), ("rounds",), ("seed",), ("title",), ("metrics",), ("quick_trials",), ("mode",),
    ("estimated_seconds",), ("data", "kind"), ("data", "partition"), ("data", "params", "n_agents"),
    ("data", "params", "samples_per_agent"), ("data", "params", "n_features"), ("data", "params", "noise_var"),
    ("data", "params", "path"), ("network", "kind"), ("network", "params", "n"), ("network", "params", "p"),
    ("problem", "loss"), ("problem", "regularizer"), ("problem", "reg_weight"), ("problem", "reference"),
    ("problem", "kind"), ("privacy", "delta"), ("privacy", "accountants"), ("privacy", "secure"),
    ("quick", "rounds"), ("plots",), ("claims",), ("runs",), ("runs", 0, "label"), ("runs", 0, "sweep"),
    ("privacy", "pairwise"), ("privacy", "pairwise_observers"), ("privacy", "pairwise_rtol"),  # issue 40
]


def _set(raw: dict, path: tuple, value) -> None:
    cur = raw
    for part in path[:-1]:
        cur = cur.setdefault(part, {}) if isinstance(cur, dict) else cur[part]
    cur[path[-1]] = value


@st.composite
def specs(draw):
    raw = copy.deepcopy(BASE)
    algorithm = draw(st.sampled_from(FAST_ALGORITHMS))
    raw["runs"][0]["algorithm"] = algorithm
    fields = [f.name for f in dataclasses.fields(ALGORITHMS[algorithm])] + ["bogus"]
    for _ in range(draw(st.integers(0, 2))):
        raw["runs"][0]["params"][draw(st.sampled_from(fields))] = draw(nasty)
    for _ in range(draw(st.integers(0, 2))):
        try:
            _set(raw, draw(st.sampled_from(KEY_PATHS)), draw(nasty))
        except (TypeError, IndexError):  # an earlier mutation replaced the container
            pass
    if draw(st.booleans()):
        raw["plots"] = [{"kind": draw(st.sampled_from(["curves", "nope"])), "file": draw(nasty)}]
    return raw


def _check_spec(raw) -> None:
    try:
        spec = parse_spec(raw)
        est = check_resources(spec)
    except PrivdistError:
        return
    if est.seconds < 0.5 and spec.rounds <= 20 and spec.trials <= 3:  # small enough to run here
        try:
            out = run_trial(spec, 0)
        except PrivdistError:
            return
        for run in out["runs"].values():
            curve = run["curves"][spec.metrics[0]]
            assert run.get("diverged") or all(math.isfinite(v) for v in curve)


def _check_factory(name, params) -> None:
    try:
        make_algorithm(name, **params)
    except PrivdistError:
        pass
    except (TypeError, ValueError) as exc:  # documented kinds: wrong type or value, naming the parameter
        assert any(key in str(exc) for key in params), f"{type(exc).__name__} not naming its parameter: {exc}"


@st.composite
def factory_calls(draw):
    name = draw(st.sampled_from(sorted(ALGORITHMS)))
    fields = [f.name for f in dataclasses.fields(ALGORITHMS[name])]
    return name, draw(st.dictionaries(st.sampled_from(fields), nasty, max_size=3))


OPTIONS = [["--trials", st.sampled_from(["0", "1", "2", "-1", "x", "99999999999999999999"])],
           ["--seed", st.sampled_from(["0", "-5", "7", "1e3"])], ["--jobs", st.sampled_from(["0", "1", "-2", "q"])],
           ["--resume"], ["--overwrite"], ["--quick"], ["--secure"], ["--backend", st.sampled_from(["simulate", "z"])],
           ["--parallel", st.sampled_from(["process", "x"])], ["--out", st.sampled_from(["/proc/x", "OUT"])],
           ["--ray-address", st.just("auto")], ["--bogus"]]


@st.composite
def cli_args(draw):
    argv = []
    for opt in draw(st.lists(st.sampled_from(OPTIONS), max_size=4)):
        argv.append(opt[0])
        argv += [draw(s) for s in opt[1:]]
    return argv


TINY = """name = "fzcli"\ntrials = 1\nrounds = 2\n[data]\nkind = "dzoa_synthetic"\n[network]\nkind = "dzoa5"
[[runs]]\nlabel = "a"\nalgorithm = "consensus_admm"\n"""


def _check_cli(argv, tmp_path) -> None:
    from privdist.cli.main import main

    spec = tmp_path / "s.toml"
    spec.write_text(TINY)
    out = str(tmp_path / "o")
    argv = [out if a == "OUT" else a for a in argv]
    if "--out" not in argv:
        argv += ["--out", out]
    try:
        code = main(["run", str(spec), "--no-progress", *argv])
    except SystemExit as exc:
        code = exc.code
    assert code in (0, 2), (argv, code)


FAST = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@settings(FAST, max_examples=150)
@given(specs())
def test_generated_specs_end_in_success_or_named_error(raw):
    _check_spec(raw)


@settings(FAST, max_examples=100)
@given(factory_calls())
def test_generated_factory_calls_end_in_success_or_named_error(call):
    _check_factory(*call)


@settings(FAST, max_examples=60)
@given(argv=cli_args())
def test_generated_cli_arguments_end_in_exit_0_or_2(argv, tmp_path_factory):
    _check_cli(argv, tmp_path_factory.mktemp("cli"))


SLOW = settings(deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.slow
@settings(SLOW, max_examples=5000)
@given(specs())
def test_generated_specs_slow(raw):
    _check_spec(raw)


@pytest.mark.slow
@settings(SLOW, max_examples=3000)
@given(factory_calls())
def test_generated_factory_calls_slow(call):
    _check_factory(*call)


@pytest.mark.slow
@settings(SLOW, max_examples=2000)
@given(argv=cli_args())
def test_generated_cli_arguments_slow(argv, tmp_path_factory):
    _check_cli(argv, tmp_path_factory.mktemp("cli"))
