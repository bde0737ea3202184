"""The trade-off (Gaussian DP) audit in CI: passes on the real code, catches a planted half-sigma bug and a planted
missing-clip bug in every run (fixed seeds), audits the composition of several rounds and an estimator's output.

Parameters (issue 24): a total budget of epsilon 1 at delta 1e-5 is ``mu = 1/z = 0.268``-GDP for one Gaussian
release (z = 3.73). Half the declared sigma doubles ``mu`` to 0.536; with 20,000 releases per dataset (10,000
evaluated) the trade-off bound ``mu_lb`` under the bug was >= 0.454 over 8 seeds (one round) and >= 0.418 over 3
seeds (3 rounds, whole view), against the claim 0.268; on the real code it stayed <= 0.252 (it cannot exceed the
true 0.268 but with probability 2.5 %). A missing clip lets the worst canary's gradient (label 4.95, row of norm 1)
through unclipped: ``mu`` about 5 times the claim.
"""

import warnings

import numpy as np
import pytest

from privdist.algorithms import make_algorithm
from privdist.audit import audit, audit_outputs
from privdist.cli.main import main
from privdist.errors import UnknownNameError, ValidationError
from privdist.privacy.mechanisms import GaussianMechanism
from privdist.problems.erm import HorizontalERM

EPS, DELTA, N = 1.0, 1e-5, 20_000
SEED = 1000003  # a fixed base seed: CI is deterministic


def _algo(name):
    return make_algorithm(name, epsilon=EPS, delta=DELTA, budget="total")


def _scale_drawn_noise(monkeypatch, factor: float) -> None:
    """Planted bug: the Gaussian mechanism draws ``factor`` times the noise it declares (the ledger is unchanged)."""
    honest = GaussianMechanism.privatize

    def scaled(self, values, sensitivity, rng):
        v = np.asarray(values, dtype=float)
        return v + factor * (honest(self, v, sensitivity, rng) - v)

    monkeypatch.setattr(GaussianMechanism, "privatize", scaled)


@pytest.fixture
def half_sigma(monkeypatch):
    _scale_drawn_noise(monkeypatch, 0.5)


@pytest.fixture
def no_clip(monkeypatch):
    """Planted bug: per-sample gradient clipping is a no-op (DPSGD still declares the clipped sensitivity)."""
    honest = HorizontalERM.loss_grads
    monkeypatch.setattr(HorizontalERM, "loss_grads", lambda self, B, clip=None: honest(self, B, None))


def _check(res, verdict):
    d = res.to_dict()
    t = d["tradeoff"]
    assert t["mu_claim"] == pytest.approx(1 / 3.7306316348, rel=1e-6)  # the PLD calibration of epsilon 1
    assert res.verdict == verdict, (res.algorithm, t["mu_lb"], t["mu_claim"], res.epsilon_lb)
    return t


@pytest.mark.parametrize("name", ["dpsgd", "dpadmm"])
def test_real_code_is_consistent(name):
    t = _check(audit(_algo(name), releases=N, seed=SEED), "consistent")
    assert 0.15 < t["mu_lb"] <= t["mu_claim"]  # the bound is informative, and below the claim
    assert t["epsilon_lb_gdp"] == pytest.approx(t["ratio_to_claim"] * EPS)


@pytest.mark.parametrize("name", ["dpsgd", "dpadmm"])
def test_half_sigma_bug_is_refuted(name, half_sigma):
    res = audit(_algo(name), releases=N, seed=SEED)
    t = _check(res, "refuted")
    assert "tradeoff" in res.refuted_by and t["mu_lb"] > 1.5 * t["mu_claim"]


def test_missing_clip_bug_is_refuted(no_clip):
    for canary in ("worst", "extreme"):
        res = audit(_algo("dpsgd"), releases=5000, canary=canary, seed=SEED)
        t = _check(res, "refuted")
        assert set(res.refuted_by) == {"threshold", "tradeoff"} and t["mu_lb"] > 10 * t["mu_claim"]


def test_whole_view_of_three_rounds_against_their_composition(half_sigma):
    """view='all': the target's three outboxes against the composition of three releases (a total budget)."""
    res = audit(_algo("dpsgd"), releases=N, rounds=3, seed=SEED)
    assert res.view == "all" and res.claims["releases"] == 3
    t = _check(res, "refuted")
    assert t["mu_lb"] > 1.4 * t["mu_claim"]


def test_whole_view_of_three_rounds_is_consistent_on_the_real_code():
    res = audit(_algo("dpsgd"), releases=N, rounds=3, seed=SEED)
    assert res.view == "all" and res.to_dict()["view"] == "all"
    _check(res, "consistent")
    last = audit(_algo("dpsgd"), releases=200, rounds=3, view="last")
    assert last.view == "last"
    with pytest.raises(UnknownNameError):
        audit(_algo("dpsgd"), releases=200, view="first")


def test_non_gaussian_claim_is_checked_against_its_pld_curve():
    """PVP's default Gamma-norm noise is declared as a Laplace event (pure DP): no mu, the verdict checks the
    point against the claim's PLD curve."""
    res = audit(make_algorithm("pvp", epsilon=1.0, budget="total"), releases=2000, seed=SEED)
    d = res.to_dict()["tradeoff"]
    assert d["mu_claim"] is None and d["claim_curve"]["kind"] == "pld"
    assert res.verdict == "consistent"


def test_cli_view_and_tradeoff_output(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["audit", "dpsgd", "--params", "epsilon=1.0", "delta=1e-5", "budget='total'", "--rounds", "2",
                 "--view", "all", "--releases", "500", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "trade-off" in text and "view all" in text
    import json

    d = json.loads(out.read_text())
    assert d["view"] == "all" and d["tradeoff"]["mu_claim"] > 0
    assert main(["audit", "dpsgd", "--view", "nope"]) == 2


# --------------------------------------------------------------------------- estimators, end to end
def _neighbour_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    y1 = y.copy()
    y1[0] = 1 - y[0]  # one row changed (its label)
    return X, y, y1, np.repeat([0, 1], 10)


def _fits(X, y, groups, n, offset, rounds=2):
    from privdist.learn import DistributedLogisticRegression

    out, report = [], None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded fits warn that they are not for release
        for i in range(n):
            m = DistributedLogisticRegression(algorithm="dpsgd", scale="none", epsilon=EPS, delta=DELTA, rounds=rounds,
                                              n_agents=2,
                                              random_state=2 * i + offset).fit(X, y, groups)
            out.append(np.append(m.coef_.ravel(), m.intercept_))
            report = m.privacy_report_
    return np.vstack(out), report


def _estimator_audit(n, rounds=2):
    from dp_accounting import dp_event

    X, y, y1, groups = _neighbour_data()
    x0, rep = _fits(X, y, groups, n, 0, rounds)
    x1, _ = _fits(X, y1, groups, n, 1, rounds)
    z = rep["calibration"]["mechanism"]["noise_multiplier"]
    assert rep["epsilon"] == pytest.approx(EPS) and rep["guaranteed"]
    # the printed (epsilon, delta), and its exact curve: `rounds` Gaussian releases of multiplier z per agent
    return audit_outputs(x0, x1, epsilon=rep["epsilon"], delta=rep["delta"],
                         event=dp_event.GaussianDpEvent(z / np.sqrt(rounds)))


def test_estimator_output_is_consistent_with_its_printed_epsilon():
    res = _estimator_audit(800)
    assert res.verdict == "consistent" and res.epsilon_lb <= EPS and res.epsilon_lb_gdp <= EPS
    assert res.to_dict()["tradeoff"]["mu_claim"] == pytest.approx(np.sqrt(2) / 5.1, rel=0.05)


def test_estimator_audit_catches_a_tenth_of_the_noise(monkeypatch):
    """The same end-to-end harness has the power to refute: with a tenth of the declared noise it does."""
    _scale_drawn_noise(monkeypatch, 0.1)
    res = _estimator_audit(800)
    assert res.verdict == "refuted" and "tradeoff" in res.refuted_by


@pytest.mark.slow
def test_estimator_output_is_consistent_with_many_fits():
    res = _estimator_audit(10_000)
    assert res.verdict == "consistent"
    print(f"estimator end-to-end: epsilon_lb {res.epsilon_lb:.4g}, mu_lb {res.tradeoff.mu_lb:.4g}, "
          f"epsilon_lb_gdp {res.epsilon_lb_gdp:.4g} (printed epsilon {EPS})")


def test_audit_outputs_takes_samplers_and_checks_its_input():
    rng = np.random.default_rng(3)
    res = audit_outputs(lambda: rng.normal(size=2), lambda i: rng.normal(size=2) + [2.0, 0.0], 400,
                        epsilon=1.0, delta=1e-5, mu=0.5)
    assert res.verdict == "refuted" and res.tradeoff.mu_lb > 1.0  # mu 2 against a claim of 0.5
    ok = audit_outputs(rng.normal(size=(400, 2)), rng.normal(size=(400, 2)), epsilon=1.0, delta=1e-5)
    assert ok.verdict == "consistent" and ok.to_dict()["claim"]["curve"]["kind"] == "region"
    with pytest.raises(ValidationError):
        audit_outputs(lambda: 1.0, lambda: 2.0, epsilon=1.0, delta=1e-5)  # samplers need n
    with pytest.raises(ValidationError):
        audit_outputs(np.zeros((10, 1)), np.zeros((10, 1)), epsilon=1.0, delta=1.5)


@pytest.mark.slow
def test_tradeoff_bound_reaches_085_of_dpsgd_guarantee_with_1e5_releases():
    """Issue 24: DPSGD, total epsilon 1 at delta 1e-5, one release, 1e5 releases per dataset: the trade-off bound
    reaches >= 0.85 of the PLD guarantee (measured 0.892-0.919 over 5 seeds, benchmarks/bench_audit_tightness.py)."""
    res = audit(_algo("dpsgd"), releases=100_000, seed=0)
    t = _check(res, "consistent")
    assert t["ratio_to_claim"] >= 0.85, t
    assert res.epsilon_lb < t["epsilon_lb_gdp"]  # the threshold test at one delta is the weaker bound
