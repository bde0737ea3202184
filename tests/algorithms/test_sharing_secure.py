"""Issue 27: ADMM sharing's coordinator sum under secure aggregation (``trust="secure_aggregation"``, the guaranteed
``output`` mode). The masks cancel exactly, the sum carries the declared Skellam noise at sensitivity 2 C, dropouts
are survived with each round's guarantee recomputed, the same seed gives the same transcript, and the modes without
a sensitivity bound are refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import assert_secure_ledger, make_vertical_problem
from privdist.algorithms import make_algorithm
from privdist.errors import SecureAggregationUnavailableError, UnknownNameError, ValidationError
from privdist.network import complete
from privdist.privacy import privacy_report
from privdist.privacy.sharing_calibration import clipped_sensitivity
from privdist.runtime import run
from privdist.runtime.secure.secagg import unmask_sum
from privdist.runtime.secure.secure_round import Dropout, PartySide


def _secure(**kw):
    return make_algorithm("admm_sharing", **{"mode": "output", "epsilon": 1.0, "delta": 1e-5, "b1": 3.0,
                                             "budget": "total", "trust": "secure_aggregation", **kw})


def _round_sum(res, t):
    msgs = res.transcript.rounds[t]
    masked, answers = msgs[("agent", "Q")], msgs[("agent", "secagg.answer@attempt0")]
    return unmask_sum(masked, answers, np.ones(masked.shape[0], dtype=bool),
                      res.config["secure_aggregation"]["bits"])


def test_the_masks_cancel_exactly_and_the_sensitivity_is_twice_the_local_one(monkeypatch):
    plain = {}
    original = PartySide.mask_outbox

    def record(self, t, out):
        plain[t] = np.asarray(out["Q"]).copy()
        return original(self, t, out)

    monkeypatch.setattr(PartySide, "mask_outbox", record)
    M = 4
    problem = make_vertical_problem(0, n_parties=M, n_samples=60)
    algo = _secure().for_rounds(4)
    res = run(algo, problem, complete(M), 4, seed=2, transcript="full")
    for t in (1, 3):
        np.testing.assert_array_equal(_round_sum(res, t), plain[t].sum(axis=0))
    C = clipped_sensitivity(algo.rho, algo.b1, M)
    np.testing.assert_array_equal(res.final_state.sensitivity, 2.0 * C)
    assert res.final_coordinator_state.scale == 2.0 * C
    np.testing.assert_allclose(res.final_coordinator_state.s, algo.mechanism.decode(_round_sum(res, 4), 2.0 * C))


def test_the_sum_carries_the_declared_noise():
    """Round 1 starts from x = 0, so every Q_m is 0 and the decoded sum is the noise alone: over 200 seeds its
    spread per coordinate is the declared std at sensitivity 2 C, with all M shares."""
    M, n = 5, 40
    problem = make_vertical_problem(1, n_parties=M, n_samples=n)
    algo = _secure().for_rounds(2)
    scale = 2.0 * clipped_sensitivity(algo.rho, algo.b1, M)
    sums = np.array([algo.mechanism.decode(_round_sum(run(algo, problem, complete(M), 2, seed=s,
                                                          transcript="full"), 1), scale) for s in range(200)])
    declared = algo.mechanism.noise_std(scale, n)
    assert abs(sums.mean()) < 4 * declared / math.sqrt(sums.size)
    assert sums.std() == pytest.approx(declared, rel=0.03)


def test_dropouts_are_survived_and_the_guarantee_recomputed():
    M, T = 10, 6
    problem = make_vertical_problem(0, n_parties=M, n_samples=50)
    algo = _secure(dropout_tolerance=0.1)
    res = run(algo, problem, complete(M), T, seed=5, dropout=Dropout(0.15, after_send=0.05))
    rounds = res.config["secure_aggregation"]["rounds"]
    assert any(r["present"] < M for r in rounds) and any(r["attempts"] > 1 for r in rounds)
    assert np.all(np.isfinite(res.estimates))
    report = privacy_report(res.ledger, 1e-5)
    algo = algo.for_rounds(T)
    assert_secure_ledger(algo, problem, res, rounds, range(M), M, report)
    assert any("secure_aggregation" in a for a in report["assumptions"])
    assert any("2 C" in a for a in report["assumptions"])


def test_the_guarantee_is_the_budget_and_utility_beats_local_dp():
    """10 parties, total epsilon 1, 30 rounds: the secure sum's final objective (3 draws) is below local DP's."""
    M, T = 10, 30
    problem = make_vertical_problem(0, n_parties=M, n_samples=200)
    objective = {"f": lambda est: problem.objective(est.sum(axis=0))}
    secure = [run(_secure(), problem, complete(M), T, seed=s, metrics=objective) for s in range(3)]
    local = [run(_secure(trust="local"), problem, complete(M), T, seed=s, metrics=objective) for s in range(3)]
    eps = privacy_report(secure[0].ledger, 1e-5)["per_agent"][0]["epsilon"]["rdp"]
    assert eps == pytest.approx(1.0, rel=1e-3) and eps <= 1.0 + 1e-9
    assert np.mean([r.curves["f"][-1] for r in secure]) < np.mean([r.curves["f"][-1] for r in local])


def test_the_same_seed_gives_the_same_transcript():
    M = 4
    problem = make_vertical_problem(0, n_parties=M, n_samples=30)
    a, b = (run(_secure(), problem, complete(M), 3, seed=7, dropout=0.2) for _ in range(2))
    c = run(_secure(), problem, complete(M), 3, seed=8, dropout=0.2)
    assert a.transcript.digest == b.transcript.digest != c.transcript.digest
    np.testing.assert_array_equal(a.estimates, b.estimates)


def test_named_errors():
    with pytest.raises(SecureAggregationUnavailableError, match="guaranteed mode"):
        make_algorithm("admm_sharing", mode="variable_isotropic", epsilon=1.0, b1=3.0, trust="secure_aggregation")
    with pytest.raises(SecureAggregationUnavailableError):
        _secure(clip=False)
    with pytest.raises(SecureAggregationUnavailableError):
        make_algorithm("admm_sharing", noise_std=0.5, trust="secure_aggregation")
    with pytest.raises(UnknownNameError):
        _secure(trust="curator")
    with pytest.raises(ValidationError, match="bits="):
        run(_secure(bits=8), make_vertical_problem(0, n_parties=3, n_samples=30), complete(3), 2, seed=0)
    with pytest.raises(ValidationError, match="dropout_tolerance"):
        _secure(dropout_tolerance=-0.1)
