"""Issue 40: property tests over the trust parameters, through the plan's one validation
(:meth:`privdist.privacy.secure_params.SecureAggregation.check`, :func:`privdist.privacy.plan.secure_section`).

The estimators' ``trust`` and ``secure_aggregation={colluding, dropout_tolerance, recovery, threshold, bits}``, and
the CLI's ``--trust --colluding --dropout-tolerance``: every generated value (NaN, infinities, wrong types, out of
range, numpy scalars) ends in a finite fit or in one named privdist error, one line, without numpy reprs (the issue's
``dropout_tolerance=nan`` ended in ``ValueError: cannot convert float NaN to integer``). Fast suites: 120 estimator
cases, 300 plan checks, 25 CLI commands; the slow-marked twins 1,500, 5,000 and 300. ``privdist coordinate`` checks
``--colluding``/``--dropout-tolerance`` before it reads its key or listens for parties.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from privdist.errors import PrivdistError
from privdist.learn import DistributedLogisticRegression
from privdist.privacy.plan import secure_section

#: Values of each parameter, valid ones first (Hypothesis favours the first values of a list).
SECURE = {
    "colluding": [0, 1, 2, np.int64(1), -1, 10**30, 1.0, 1.5, float("nan"), float("inf"), "1", None, True, [1]],
    "dropout_tolerance": [0.0, 0.2, 0.5, np.float64(0.3), 0, 0.999, 1, 1.0, -0.1, float("nan"), float("inf"),
                          -float("inf"), 1e300, "0.1", None, True, [0.1]],
    "recovery": ["retry", "shamir", "x", "", None, 3, float("nan"), ["shamir"]],
    "threshold": [None, 1, 2, 3, np.int64(2), 0, -1, 10**30, 2.5, float("nan"), float("inf"), "2", True],
    "bits": [None, 32, 53, 8, np.int64(40), 7, 54, 0, -1, 32.0, float("nan"), float("inf"), "32", True],
}
TRUST = ["auto", "secure_aggregation", "local", "x", "", None, 3, float("nan"), ["auto"]]
WHOLE = [None, {}, "x", 3, float("nan"), ["colluding"], {"colluding": 0, "bogus": 1}]


@st.composite
def secure_params(draw):
    """A ``secure_aggregation`` argument: a dict of drawn fields, or (rarely) something that is no dict."""
    if not draw(st.integers(0, 9)):
        return draw(st.sampled_from(WHOLE))
    keys = draw(st.lists(st.sampled_from(sorted(SECURE)), max_size=4, unique=True))
    return {k: draw(st.sampled_from(SECURE[k])) for k in keys}


def _named(exc: PrivdistError) -> None:
    text = str(exc)
    assert "\n" not in text and "np.float64(" not in text and "np.int64(" not in text, text


def _check_plan(trust, params) -> None:
    try:
        secure_section(trust, params)
    except PrivdistError as exc:
        event("named error")
        _named(exc)
        return
    event("accepted")


@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, max_examples=300)
@given(trust=st.sampled_from(["secure_aggregation", "local"]), params=secure_params())
def test_plan_validation_of_secure_parameters(trust, params):
    _check_plan(trust, params)


@pytest.mark.slow
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=5000)
@given(trust=st.sampled_from(["secure_aggregation", "local"]), params=secure_params())
def test_plan_validation_of_secure_parameters_slow(trust, params):
    _check_plan(trust, params)


_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(30, 2))
Y = (X[:, 0] > 0).astype(int)


def _check_fit(trust, params, n_agents, algorithm) -> None:
    kwargs = {"n_agents": n_agents, "rounds": 2, "random_state": 0, "epsilon": 1.0, "algorithm": algorithm}
    if trust != "omit":
        kwargs["trust"] = trust
    if params != "omit":
        kwargs["secure_aggregation"] = params
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DistributedLogisticRegression(**kwargs).fit(X, Y)
    except PrivdistError as exc:
        event("named error")
        _named(exc)
        return
    event("fitted")
    assert np.all(np.isfinite(est.coef_))


fits = dict(trust=st.sampled_from(["omit"] + TRUST), params=st.one_of(st.just("omit"), secure_params()),
            n_agents=st.sampled_from([3, 2, 5]), algorithm=st.sampled_from(["dpmm", "dpsgd"]))


@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, max_examples=120)
@given(**fits)
def test_estimator_trust_parameters_end_in_fit_or_named_error(trust, params, n_agents, algorithm):
    _check_fit(trust, params, n_agents, algorithm)


@pytest.mark.slow
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=1500)
@given(**fits)
def test_estimator_trust_parameters_slow(trust, params, n_agents, algorithm):
    _check_fit(trust, params, n_agents, algorithm)


CLI = {"--trust": ["auto", "secure_aggregation", "local", "x", ""],
       "--colluding": ["0", "1", "2", "-1", "1.5", "x", "100000000000000000000000", "nan"],
       "--dropout-tolerance": ["0", "0.2", "0.5", "0.999", "1", "-0.1", "nan", "inf", "--=-inf", "1e400", "x"]}


@st.composite
def cli_args(draw):
    argv = []
    for opt in draw(st.lists(st.sampled_from(sorted(CLI)), min_size=1, max_size=3, unique=True)):
        value = draw(st.sampled_from(CLI[opt]))
        argv += [f"{opt}={value[3:]}"] if value.startswith("--=") else [opt, value]
    return argv + ["--algorithm", draw(st.sampled_from(["dpmm", "dpsgd"])), "--agents",
                   draw(st.sampled_from(["3", "2"]))]


def _check_cli(argv, tmp_path) -> None:
    from privdist.cli.main import main

    data = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    data.write_text("a,b,label\n" + "".join(f"{rng.normal():.3f},{rng.normal():.3f},{int(rng.random() > 0.5)}\n"
                                           for _ in range(40)))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["fit", str(data), "--target", "label", "--epsilon", "1", "--delta", "1e-5", "--rounds", "2",
                         "--draws", "1", "--curve", "", "--scale", "none", *argv])
        except SystemExit as exc:
            code = exc.code
    text = err.getvalue()
    event(f"exit {code}")
    assert code in (0, 2), f"exit {code} for {argv}:\n{text[-3000:]}"
    if code == 2:
        lines = [line for line in text.strip().splitlines() if line.strip()]
        assert lines and lines[-1].startswith("error: ") and "Traceback" not in text, f"{argv}:\n{text[-3000:]}"
        assert "np.float64(" not in text and "np.int64(" not in text, text


@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, max_examples=25)
@given(argv=cli_args())
def test_cli_trust_options_exit_0_or_named_error(argv, tmp_path_factory):
    _check_cli(argv, tmp_path_factory.mktemp("trust"))


@pytest.mark.slow
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=300)
@given(argv=cli_args())
def test_cli_trust_options_slow(argv, tmp_path_factory):
    _check_cli(argv, tmp_path_factory.mktemp("trust"))


@pytest.mark.parametrize("option,value,message", [
    ("--dropout-tolerance", "nan", "dropout_tolerance must be in [0, 1), got nan"),
    ("--dropout-tolerance", "inf", "dropout_tolerance must be in [0, 1), got inf"),
    ("--dropout-tolerance", "-0.5", "dropout_tolerance must be in [0, 1)"),
    ("--colluding", "-1", "colluding must be >= 0"),
    ("--colluding", "100000000000000000000000", "leave no honest party"),
])
def test_coordinate_checks_trust_options_before_listening(tmp_path, capsys, option, value, message):
    """``privdist coordinate`` refuses them before it reads its key or waits for a party (the plan's validation)."""
    from privdist.cli.main import main

    missing = str(tmp_path / "none.pem")
    code = main(["coordinate", "--parties", "a,b", "--epsilon", "1", f"{option}={value}", "--out",
                 str(tmp_path / "out"), "--key", missing, "--cert", missing, "--ca", missing])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], lines
