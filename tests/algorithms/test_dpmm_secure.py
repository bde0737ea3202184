"""Issue 27: dpmm with ``trust="secure_aggregation"``. The coordinator's sums carry the declared central noise (not
sqrt(K) times it), 10 % of the parties dropping out per round is survived with each round's guarantee recomputed from
the parties in the sum, the same seed gives the same transcript, a threshold audit of the aggregate release is
consistent with the printed guarantee, and the estimators take ``trust``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from conftest import assert_secure_ledger
from privdist.algorithms import make_algorithm
from privdist.errors import UnknownNameError, ValidationError
from privdist.learn import DistributedLogisticRegression
from privdist.network import make_network
from privdist.privacy import privacy_report
from privdist.privacy.audit_stats import threshold_audit
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.runtime import run
from privdist.runtime.secure.secagg import unmask_sum
from privdist.runtime.secure.secure_round import Dropout


def _problem(K=4, n=30, d=3, seed=0, canary=None, loss="logistic"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(K * n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.normal(size=d) > 0, 1.0, -1.0)
    if canary is not None:  # replace party 0's first row (a replace-one neighbour) by a row of the largest norm
        X[0], y[0] = np.eye(d)[0] * math.sqrt(2.0), canary
    parts = [(X[k * n:(k + 1) * n], y[k * n:(k + 1) * n]) for k in range(K)]
    return HorizontalERM(parts, make_loss(loss), make_regularizer("l2"), 1e-3)


def _secure(**kw):
    return make_algorithm("dpmm", **{"epsilon": 1.0, "delta": 1e-5, "trust": "secure_aggregation", **kw})


def _round_one_gradient(res, algo, P):
    """The decoded gradient sum the coordinator received in round 1, rebuilt from the full transcript (what the
    aggregator saw: masked vectors and answers)."""
    msgs = res.transcript.rounds[1]
    masked = msgs[("agent", "g")].astype(np.uint64)
    h = msgs[("agent", "h")].astype(np.uint64)
    answers = msgs[("agent", "secagg.answer@attempt0")].astype(np.uint64)
    present = np.ones(masked.shape[0], dtype=bool)
    total = unmask_sum(np.hstack([masked, h]), answers, present, algo._bits(res.final_state.problem))[:P]
    return algo.mechanism.decode(total, 2.0 * algo._clip(res.final_state.problem.loss))


def test_the_aggregate_carries_the_declared_central_noise():
    K, P = 5, 3
    problem, net = _problem(K), make_network("complete", n=K)
    algo = _secure(rounds=2).for_rounds(2)
    sums = np.array([_round_one_gradient(run(algo, problem, net, 2, seed=s, transcript="full"), algo, P)
                     for s in range(300)])
    declared = algo.mechanism.noise_std(2.0 * algo.row_bound, P)  # all K present, K shares calibrated
    assert sums.std(axis=0).mean() == pytest.approx(declared, rel=0.08)
    local = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, rounds=2).mechanism.noise_multiplier
    assert declared < 0.6 * local * 2.0 * algo.row_bound * math.sqrt(K)  # vs local DP's sqrt(K) sigma


def test_ten_percent_dropouts_are_survived_and_the_guarantee_recomputed():
    K = 20
    problem, net = _problem(K, n=20), make_network("complete", n=K)
    algo = _secure(dropout_tolerance=0.1, rounds=8)
    res = run(algo, problem, net, 8, seed=3, dropout=Dropout(0.1, after_send=0.05))
    rounds = res.config["secure_aggregation"]["rounds"]
    assert [r["round"] for r in rounds] == list(range(1, 9))
    assert any(r["present"] < K for r in rounds[:-1]) and any(r["attempts"] > 1 for r in rounds[:-1])
    assert np.all(np.isfinite(res.estimates))
    report = privacy_report(res.ledger, 1e-5)
    algo = algo.for_rounds(8)
    # each party's guarantee composes its own rounds, each at the parties present in it
    assert_secure_ledger(algo, problem, res, rounds, (0, 7), K, report)
    assert report["per_agent"][0]["guaranteed"] and report["per_agent"][7]["guaranteed"]
    assert any("secure_aggregation" in a for a in report["assumptions"])


def test_each_round_is_declared_from_the_parties_present():
    K = 10
    algo = _secure(colluding=2, dropout_tolerance=0.2, rounds=5).for_rounds(5)
    problem = _problem(K)
    present = np.ones(K, dtype=bool)
    present[[1, 4]] = False
    events = algo.secure_events(2, present, problem)
    assert events[1] is None and events[4] is None
    full = algo.secure_events(2, np.ones(K, dtype=bool), problem)[0].event
    assert events[0].event.variance == pytest.approx(full.variance * (8 - 2) / (10 - 2))
    assert full.variance == pytest.approx(algo.mechanism.variance(3) * 8 / algo.shares(K))  # 10 - 2 colluding
    assert algo.secure_events(5, present, problem) == [None] * K  # the last round releases nothing
    first = algo.secure_events(1, present, problem)[0].event  # round 1: the gradient sums and the Gram
    assert len(first.events) == 2


def test_the_same_seed_gives_the_same_transcript():
    K = 6
    problem, net = _problem(K), make_network("complete", n=K)
    algo = _secure(rounds=4)
    a, b = (run(algo, problem, net, 4, seed=11, dropout=0.2) for _ in range(2))
    c = run(algo, problem, net, 4, seed=12, dropout=0.2)
    assert a.transcript.digest == b.transcript.digest != c.transcript.digest
    np.testing.assert_array_equal(a.estimates, b.estimates)
    s1, s2 = (run(algo, problem, net, 4, seed=11, secure=True) for _ in range(2))
    assert s1.transcript.digest != s2.transcript.digest  # secure mode: keys and noise from OS entropy


def test_a_threshold_audit_of_the_aggregate_is_consistent_with_the_printed_guarantee():
    """Neighbouring data sets (party 0's first row a canary of norm row_bound with target +1 or -1: under the
    squared loss at w = 0 its clipped gradients differ by the full sensitivity 2 c1), 1,500 runs each: the decoded
    round-1 gradient sums (the aggregate the coordinator sees) are audited; the certified lower bound must not exceed
    the printed guarantee, and the audit must see the canary (a bound well above 0)."""
    K, P, n = 3, 3, 1500
    net = make_network("complete", n=K)
    algo = _secure(epsilon=8.0, rounds=2, gram_uses=1, c1=2.0 * math.sqrt(2.0)).for_rounds(2)
    releases = []
    for label in (1.0, -1.0):
        problem = _problem(K, canary=label, loss="squared")
        releases.append(np.array([_round_one_gradient(run(algo, problem, net, 2, seed=s, transcript="full"),
                                                      algo, P) for s in range(n)]))
    res = run(algo, _problem(K, canary=1.0, loss="squared"), net, 2, seed=0)
    guarantee = privacy_report(res.ledger, 1e-5)["per_agent"][0]["epsilon"]["rdp"]
    test = threshold_audit(releases[0], releases[1], 1e-5, rng=np.random.default_rng(0))
    assert guarantee == pytest.approx(8.0, rel=1e-3)
    assert 0.3 < test.epsilon_lb() <= guarantee


def test_without_noise_the_sums_are_gathered_in_the_clear():
    K = 3
    res = run(_secure(epsilon=None), _problem(K), make_network("complete", n=K), 3, seed=0)
    assert "secure_aggregation" not in res.config
    assert math.isinf(privacy_report(res.ledger, 1e-5)["per_agent"][0]["epsilon"]["rdp"])


def test_the_modulus_is_checked_before_any_release():
    with pytest.raises(ValidationError, match="bits="):
        run(_secure(bits=16), _problem(4, n=500), make_network("complete", n=4), 3, seed=0)


def test_named_errors():
    with pytest.raises(UnknownNameError):
        make_algorithm("dpmm", trust="curator")
    with pytest.raises(ValidationError, match="dropout_tolerance"):
        _secure(dropout_tolerance=1.0)
    with pytest.raises(ValidationError, match="bits"):
        _secure(bits=64)
    with pytest.raises(ValidationError, match="dropout"):  # failures are simulated for secure sums only
        run(make_algorithm("dpmm", epsilon=1.0, delta=1e-5), _problem(3), make_network("complete", n=3), 2,
            dropout=0.1)


def test_the_estimator_takes_trust():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 4))
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DistributedLogisticRegression(epsilon=1.0, n_agents=20, random_state=0, trust="secure_aggregation",
                                          scale="none").fit(X, y)
    report = m.privacy_report_
    assert report["guaranteed"] and report["epsilon"] <= 1.0 + 1e-9
    assert report["calibration"]["mechanism"]["kind"] == "skellam"
    assert m.score(X, y) > 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranged = DistributedLogisticRegression(epsilon=1.0, n_agents=20, random_state=0,
                                               trust="secure_aggregation").fit(X * [1.0, 30.0, 1.0, 1.0], y)
    # the DP range step's Gaussian release and the Skellam training compose exactly to the total (dpmm's prior)
    assert ranged.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert ranged.privacy_report_["epsilon"] <= 1.0 + 1e-9 and len(ranged.algorithm_params_["prior"]) == 1
    with pytest.raises(ValidationError, match="prior"):
        make_algorithm("dpmm", prior=(3.0,))
    with pytest.raises(ValidationError, match="dpmm"):
        DistributedLogisticRegression(algorithm="dpsgd", trust="secure_aggregation").fit(X, y)
    with pytest.raises(UnknownNameError):
        DistributedLogisticRegression(trust="curator").fit(X, y)


@pytest.mark.parametrize("trust", ["local", "secure_aggregation"])
def test_silent_messages_are_not_recorded(trust):
    """dpmm's public schedule (``silent``): the Gram crosses the network in round 1 only and the agents send neither
    message in the last round, in both trust modes; the transcript holds what was sent (no zero Gram every round)."""
    algo = make_algorithm("dpmm", epsilon=1.0, delta=1e-5, trust=trust)
    res = run(algo, _problem(), make_network("complete", n=4), 4, seed=3, transcript="full")
    sent = {t: {n for role, n in msgs if role == "agent"} for t, msgs in res.transcript.rounds.items()}
    assert {"g", "h"} <= sent[1] and all("g" in sent[t] and "h" not in sent[t] for t in (0, 2, 3))
    assert not {"g", "h"} & sent.get(4, set())
    four = algo.for_rounds(4)
    assert all(four.silent("h", t) for t in (0, 2, 3, 4)) and not four.silent("h", 1) and four.silent("g", 4)
    again = run(algo, _problem(), make_network("complete", n=4), 4, seed=3, transcript="full")
    assert np.array_equal(res.estimates, again.estimates) and res.transcript.digest == again.transcript.digest
