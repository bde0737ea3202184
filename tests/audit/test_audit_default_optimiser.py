"""The estimators' optimisers (dpmm, the default, and ssp) audited over the rounds in which they release (issue 39).

One round releases nothing (round T only delivers the model), so the audit runs 2 rounds: round 1's Gram and
gradient (ssp: ``X^T y``) releases. Under ``trust="secure_aggregation"`` the audited release is the sum the aggregator
unmasks (:mod:`privdist.audit.aggregate`); the canary is the pair the algorithm declares (``audit_records``), which
moves both releases.
"""

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from privdist.algorithms import make_algorithm
from privdist.algorithms.dpmm import DPMM
from privdist.audit import audit, neighbours, problem_for
from privdist.audit.aggregate import aggregate_view
from privdist.privacy import privacy_report
from privdist.runtime import run

from conftest import HalfNoiseStreams

ROUNDS = 2
CASES = [(name, trust) for name in ("dpmm", "ssp") for trust in ("local", "secure_aggregation")]


def _ledger_guarantee(algo, rounds: int, delta: float) -> float:
    algo = algo.for_rounds(rounds)
    problem, network = problem_for(algo, rounds)
    return privacy_report(run(algo, problem, network, rounds).ledger, delta)["per_agent"][0]["epsilon"]["pld"]


@pytest.mark.parametrize("name", ["dpmm", "ssp"])
def test_two_rounds_are_the_fewest_that_release(name):
    algo = make_algorithm(name)
    for rounds, releases in ((1, 0), (2, 1)):
        problem, network = problem_for(algo, rounds)
        entry = privacy_report(run(algo, problem, network, rounds).ledger, 1e-5)["per_agent"][0]
        assert entry["guaranteed"] and entry["releases"] == releases


@pytest.mark.parametrize("name,trust", CASES)
def test_default_optimiser_audit_is_consistent_with_the_ledger(name, trust):
    """Worst canary, 2 rounds: local trust in copies (10000 releases per data set), secure aggregation run by run
    (300: each run goes through the masking protocol). The audited guarantee is the ledger's for the same rounds."""
    algo = make_algorithm(name, trust=trust)
    n = 10_000 if trust == "local" else 300
    res = audit(algo, releases=n, rounds=ROUNDS, canary="worst")
    assert res.mode == ("copies" if trust == "local" else "runs")
    assert res.claims["guaranteed"] and res.claims["releases"] == 1
    assert res.claims["guarantee"] == pytest.approx(_ledger_guarantee(algo, ROUNDS, res.delta), rel=1e-12)
    assert res.verdict == "consistent", (res.epsilon_lb, res.epsilon_lb_gdp, res.claims["guarantee"])
    print(f"{name} {trust}: guarantee {res.claims['guarantee']:.4f}, lower bound {res.epsilon_lb:.4f} "
          f"(threshold), {res.epsilon_lb_gdp:.4f} (GDP), {res.verdict}")


def test_the_aggregate_view_sees_the_canary():
    """At epsilon 8 (2 rounds) 300 releases of the unmasked sums separate the neighbours (a bound well above 0, below
    the guarantee); the parties' masked outboxes alone would look uniform."""
    res = audit(make_algorithm("dpmm", trust="secure_aggregation", epsilon=8.0), releases=300, rounds=ROUNDS)
    assert res.verdict == "consistent" and res.mode == "runs"
    assert 1.0 < res.epsilon_lb_gdp < res.claims["guarantee"]


def test_the_declared_canary_moves_the_gram_and_the_gradient():
    """``u, -u`` (the generic worst pair) leaves the Gram unchanged; dpmm's pair moves the Gram by its sensitivity
    ``sqrt(2) row_bound^2`` (upper triangle) and the clipped gradient at ``w = 0`` by ``sqrt(2) c1``."""
    algo = make_algorithm("dpmm", epsilon=None)
    problem, network = problem_for(algo, ROUNDS)
    r, c1 = algo.row_bound, algo._clip(problem.loss)

    def round1(pair):
        outs = [run(algo, d, network, ROUNDS, transcript="full").transcript.rounds[1] for d in pair]
        return [[o[("agent", m)][0] for o in outs] for m in ("g", "h")]

    (g0, g1), (h0, h1) = round1(neighbours(problem, "worst"))
    assert np.array_equal(h0, h1)
    (g0, g1), (h0, h1) = round1(neighbours(problem, "worst", records=algo.audit_records(problem.n_features,
                                                                                       problem.loss)))
    assert np.linalg.norm(h0 - h1) == pytest.approx(math.sqrt(2.0) * r**2)
    assert np.linalg.norm(g0 - g1) == pytest.approx(math.sqrt(2.0) * c1)


def test_the_aggregate_view_is_what_the_coordinator_received():
    """The sums the view unmasks from the transcript give the coordinator's own round-1 model exactly."""
    algo = make_algorithm("dpmm", trust="secure_aggregation").for_rounds(ROUNDS)
    problem, network = problem_for(algo, ROUNDS)
    view = aggregate_view(algo, problem, network, 0, "all")
    res = run(algo, problem, network, ROUNDS, seed=3, transcript="full")
    row = view.rows(res, [0], ROUNDS)[0]
    P = problem.n_features
    g, h = row[:P + 1].astype(np.int64), row[P + 1:].astype(np.int64)
    c1 = algo._clip(problem.loss)
    g_sum = algo.mechanism.decode(g[:P], 2.0 * c1)
    h_sum = algo.mechanism.decode(h, math.sqrt(2.0) * algo.row_bound**2)
    assert g[P] == 40  # both parties' rows
    w1 = algo._update(np.zeros(P), g_sum / g[P], algo._majorizer(h_sum, P, float(g[P]), problem), problem)
    np.testing.assert_allclose(np.ravel(res.transcript.rounds[1][("coordinator", "w")]), w1, rtol=1e-10, atol=1e-12)


@dataclass(frozen=True)
class _BrokenDPMM(DPMM):
    """dpmm that declares its noise but draws half of it (Gram and gradient)."""

    name: ClassVar[str] = "dpmm"

    def step(self, state, inbox, t, rng):
        return super().step(state, inbox, t, HalfNoiseStreams(rng))


def test_dpmm_with_half_its_noise_is_refuted_and_the_honest_one_is_not():
    """Default budget (epsilon 1 in total), 2 rounds, 10000 releases per data set (copies: seconds)."""
    honest = audit(DPMM(), releases=10_000, rounds=ROUNDS)
    broken = audit(_BrokenDPMM(), releases=10_000, rounds=ROUNDS)
    assert honest.claims["guarantee"] == broken.claims["guarantee"]  # same declaration
    assert honest.verdict == "consistent"
    assert broken.verdict == "refuted"
    assert max(broken.epsilon_lb, broken.epsilon_lb_gdp) > broken.claims["guarantee"]


@pytest.mark.slow
def test_dpmm_tighter_audit():
    """More releases: the lower bound against the guarantee (the canary's Gaussian is 0.95 of the declared mu)."""
    res = audit(make_algorithm("dpmm"), releases=200_000, rounds=ROUNDS, jobs=2)
    assert res.verdict == "consistent"
    print(f"dpmm 2 rounds, 200000 releases: lower bound {res.epsilon_lb:.4f} (threshold), "
          f"{res.epsilon_lb_gdp:.4f} (GDP), guarantee {res.claims['guarantee']:.4f}")


class _QuarterVariance:
    """dpmm seen through a proxy whose ``shares`` is 4 times the calibrated one: each party draws a Skellam share of a
    quarter of its variance (the decoded sum's noise std halves; the declaration is unchanged)."""

    def __init__(self, algo):
        self._algo = algo

    def shares(self, n_agents):
        return 4 * self._algo.shares(n_agents)

    def __getattr__(self, name):
        return getattr(self._algo, name)


@dataclass(frozen=True)
class _BrokenSecureDPMM(DPMM):
    """dpmm under secure aggregation that declares its Skellam noise but draws half its std."""

    name: ClassVar[str] = "dpmm"

    def _secure_step(self, state, w, t, rng):
        return DPMM._secure_step(_QuarterVariance(self), state, w, t, rng)


@pytest.mark.slow
def test_secure_dpmm_with_half_its_noise_is_seen_but_not_refuted():
    """Half the noise std in the unmasked sums (one run through the masking protocol per release: about 3 minutes).

    The trade-off test sees it: ``mu_lb``-GDP's epsilon exceeds the guarantee (measured 1.34 against 1.0). It is not
    a refutation: the Skellam ledger's guarantee is RDP, with no PLD curve (``res.curve`` is None), so only the
    threshold test can refute it, and 10,000 releases bound epsilon by 0.73 only. Known gap, pinned here."""
    res = audit(_BrokenSecureDPMM(trust="secure_aggregation"), releases=10_000, rounds=ROUNDS)
    print(f"secure dpmm, half its noise std: lower bound {res.epsilon_lb:.4f} (threshold), "
          f"{res.epsilon_lb_gdp:.4f} (GDP), guarantee {res.claims['guarantee']:.4f}: {res.verdict}")
    assert res.curve is None and res.epsilon_lb_gdp > res.claims["guarantee"]
