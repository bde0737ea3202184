"""Issue 27: DPSGD as federated averaging over a star with ``trust="secure_aggregation"``. The masks cancel exactly
(the coordinator's sum is the sum of the parties' integer vectors), the aggregate carries the declared central noise,
dropouts are survived with each round's guarantee recomputed from the parties in the sum, the same seed gives the
same transcript, and a graph without a coordinator is refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import assert_secure_ledger
from privdist.algorithms import make_algorithm
from privdist.errors import SecureAggregationUnavailableError, ValidationError
from privdist.network import make_network
from privdist.privacy import privacy_report
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.runtime import run
from privdist.runtime.secure.secagg import unmask_sum
from privdist.runtime.secure.secure_round import Dropout, PartySide


def _problem(K=5, n=20, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(K * n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=K * n) > 0, 1.0, -1.0)
    parts = [(X[k * n:(k + 1) * n], y[k * n:(k + 1) * n]) for k in range(K)]
    return HorizontalERM(parts, make_loss("logistic"), make_regularizer("l2"), 1e-3)


def _secure(**kw):
    return make_algorithm("dpsgd", **{"alpha0": 1.0, "epsilon": 1.0, "delta": 1e-5, "budget": "total",
                                      "trust": "secure_aggregation", **kw})


def _round_sum(res, t=1):
    """The integer sum the aggregator unmasked in round ``t``, rebuilt from the full transcript (masked vectors and
    answers of the first attempt, every party present)."""
    msgs = res.transcript.rounds[t]
    masked, answers = msgs[("agent", "u")], msgs[("agent", "secagg.answer@attempt0")]
    present = np.ones(masked.shape[0], dtype=bool)
    return unmask_sum(masked, answers, present, res.config["secure_aggregation"]["bits"])


def test_the_masks_cancel_exactly(monkeypatch):
    """The parties' integer vectors are recorded before masking; the sum rebuilt from what the aggregator saw is
    exactly their sum, its last coordinate counts the parties, and the coordinator's step used it."""
    plain = {}
    original = PartySide.mask_outbox

    def record(self, t, out):
        plain[t] = np.asarray(out["u"]).copy()
        return original(self, t, out)

    monkeypatch.setattr(PartySide, "mask_outbox", record)
    K, P = 5, 3
    problem = _problem(K)
    algo = _secure().for_rounds(3)
    res = run(algo, problem, make_network("complete", n=K), 3, seed=4, transcript="full")
    total = _round_sum(res)
    np.testing.assert_array_equal(total, plain[1].sum(axis=0))
    assert total[-1] == K
    masked = res.transcript.rounds[1][("agent", "u")]
    assert not np.array_equal(masked.astype(np.int64), plain[1])  # what crossed the network is masked
    g = algo.mechanism.decode(total[:P], 2.0 * algo.c1 / 20)
    np.testing.assert_allclose(res.transcript.rounds[1][("coordinator", "w")], -algo.alpha0 * g / K)


def test_the_aggregate_carries_the_declared_central_noise():
    """Round 1 at w = 0 is deterministic but for the noise: over 300 seeds the decoded gradient sum's spread is
    the declared central noise (all K shares), far below local DP's sqrt(K) sigma."""
    K, P = 5, 3
    problem, net = _problem(K), make_network("complete", n=K)
    algo = _secure().for_rounds(2)
    sens = 2.0 * algo.c1 / 20  # 2 c1 max_k 1/N_k
    sums = np.array([algo.mechanism.decode(_round_sum(run(algo, problem, net, 2, seed=s, transcript="full"))[:P],
                                           sens) for s in range(300)])
    exact = problem.loss_grads(np.zeros((K, P)), clip=algo.c1).sum(axis=0)
    declared = algo.mechanism.noise_std(sens, P)
    assert sums.mean(axis=0) == pytest.approx(exact, abs=4 * declared / math.sqrt(300))
    assert sums.std(axis=0).mean() == pytest.approx(declared, rel=0.08)
    local = make_algorithm("dpsgd", epsilon=1.0, delta=1e-5, budget="total", rounds=1).mechanism.noise_multiplier
    assert declared < 0.6 * local * sens * math.sqrt(K)


def test_dropouts_are_survived_and_the_guarantee_recomputed():
    K, T = 20, 8
    problem, net = _problem(K, n=10), make_network("complete", n=K)
    algo = _secure(dropout_tolerance=0.1, colluding=1)
    res = run(algo, problem, net, T, seed=3, dropout=Dropout(0.1, after_send=0.05))
    rounds = res.config["secure_aggregation"]["rounds"]
    assert any(r["present"] < K for r in rounds[:-1]) and any(r["attempts"] > 1 for r in rounds[:-1])
    assert rounds[-1].get("silent")  # the last round only delivers the model
    assert np.all(np.isfinite(res.estimates))
    report = privacy_report(res.ledger, 1e-5)
    algo = algo.for_rounds(T)
    assert_secure_ledger(algo, problem, res, rounds, (0, 5), K, report)
    full = algo.secure_events(1, np.ones(K, dtype=bool), problem)[0].event
    assert full.variance == pytest.approx(algo.mechanism.variance(3) * (K - 1) / algo.shares(K))
    assert algo.shares(K) == K - 1 - 2
    assert any("secure_aggregation" in a for a in report["assumptions"])


def test_the_guarantee_is_the_budget_and_utility_beats_local_dp():
    """20 parties of 30 rows, total epsilon 1, 40 rounds (the non-private objective ends at 5.03 on both): the
    secure star's final objective, averaged over 3 noise draws, is below gossip's under local DP."""
    K, T = 20, 40
    problem, net = _problem(K, n=30), make_network("complete", n=K)
    objective = {"f": lambda est: problem.objective(est.mean(axis=0))}
    secure = [run(_secure(alpha0=10.0), problem, net, T, seed=s, metrics=objective) for s in range(3)]
    local = [run(make_algorithm("dpsgd", alpha0=10.0, epsilon=1.0, delta=1e-5, budget="total"), problem, net, T,
                 seed=s, metrics=objective) for s in range(3)]
    eps = privacy_report(secure[0].ledger, 1e-5)["per_agent"][0]["epsilon"]["rdp"]
    assert eps == pytest.approx(1.0, rel=1e-3) and eps <= 1.0 + 1e-9
    assert np.mean([r.curves["f"][-1] for r in secure]) < np.mean([r.curves["f"][-1] for r in local])
    assert np.ptp(secure[0].estimates, axis=0).max() == 0.0  # every party holds the coordinator's model


def test_the_same_seed_gives_the_same_transcript():
    K = 6
    problem, net = _problem(K), make_network("complete", n=K)
    algo = _secure()
    a, b = (run(algo, problem, net, 4, seed=11, dropout=0.2) for _ in range(2))
    c = run(algo, problem, net, 4, seed=12, dropout=0.2)
    assert a.transcript.digest == b.transcript.digest != c.transcript.digest
    np.testing.assert_array_equal(a.estimates, b.estimates)


def test_without_noise_the_star_gathers_in_the_clear():
    K = 4
    problem = _problem(K)
    res = run(_secure(epsilon=None), problem, make_network("complete", n=K), 5, seed=0)
    assert "secure_aggregation" not in res.config
    assert math.isinf(privacy_report(res.ledger, 1e-5)["per_agent"][0]["epsilon"]["rdp"])
    assert res.final_coordinator_state.w.any()


def test_named_errors():
    problem = _problem(6)
    with pytest.raises(SecureAggregationUnavailableError, match="coordinator"):
        run(_secure(), problem, make_network("ring", n=6), 3, seed=0)
    with pytest.raises(SecureAggregationUnavailableError):
        run(_secure(epsilon=None), problem, make_network("star", n=6), 3, seed=0)
    with pytest.raises(ValidationError, match="clip"):
        _secure(clip=False)
    with pytest.raises(ValidationError, match="bits="):
        run(_secure(bits=8), problem, make_network("complete", n=6), 3, seed=0)
    with pytest.raises(ValidationError, match="per-party"):
        _secure(epsilon=(1.0,) * 6, rounds=3)
    with pytest.raises(ValidationError, match="pairwise"):
        _secure(rounds=3).linear_protocol(problem, make_network("complete", n=6), 3)
