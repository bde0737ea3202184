"""Accountants: spec §10 vectors, agreement with dp-accounting, Laplace, report shape, caching, monotonicity."""

import math

import pytest
from dp_accounting import dp_event as de
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.errors import UnknownNameError, UnsupportedEventError, ValidationError
from privdist.privacy import (
    ACCOUNTANTS,
    PrivacyLedger,
    Release,
    advanced_composition,
    agent_epsilon,
    c0,
    clear_accountant_cache,
    dzoa_epsilon,
    gaussian_release,
    laplace_release,
    moments_epsilon,
    paper_bound,
    privacy_report,
)
from privdist.privacy.accountants import _cached_epsilon


@pytest.mark.parametrize(
    "eps, delta, expected",
    [(0.15, 1e-3, 2.03755), (0.95, 1e-3, 12.90447), (0.15, 1e-6, 2.05368), (0.95, 1e-6, 13.00663)],
)
def test_dzoa_vectors(eps, delta, expected):
    assert dzoa_epsilon(eps, delta, 200) == pytest.approx(expected, abs=1e-5)
    entries = [(gaussian_release(3.0, epsilon=eps, delta=delta, composition="dzoa"), 200)]
    assert agent_epsilon(entries, 1e-5, "paper") == pytest.approx(expected, abs=1e-5)
    # split into runs of different lengths: same total
    split = [(entries[0][0], 50), (gaussian_release(3.0, epsilon=eps, delta=delta, composition="dzoa"), 150)]
    assert paper_bound(split).epsilon == pytest.approx(expected, abs=1e-5)


def test_c0_and_moments_vectors():
    assert c0(1e-5) == pytest.approx(0.990448, abs=1e-6)
    assert c0(1e-3) == pytest.approx(0.984229, abs=1e-6)
    assert moments_epsilon(0.2, 1e-5, 100) == pytest.approx(c0(1e-5) * 10 * 0.2)
    # l-AADMM (§4.7): t*l steps each eps/(c0 sqrt(tl)) compose back to eps
    t_l, eps = 1000, 1.0
    per = eps / (c0(1e-5) * math.sqrt(t_l))
    assert agent_epsilon([(gaussian_release(1.0, epsilon=per, delta=1e-5), t_l)], 1e-5, "paper") == pytest.approx(eps)


@pytest.mark.parametrize("eps, rounds, dprime, expected", [(1.0, 100, 0.01, 202.1767), (0.1, 20, 1e-5, 2.35631)])
def test_advanced_composition_vectors(eps, rounds, dprime, expected):
    assert advanced_composition(eps, rounds, dprime) == pytest.approx(expected, abs=1e-4)
    rel = gaussian_release(2.0, epsilon=eps, delta=1e-4, composition="advanced")
    bound = paper_bound([(rel, rounds)], delta_prime=dprime)
    assert bound.epsilon == pytest.approx(expected, abs=1e-4)
    assert bound.delta == pytest.approx(rounds * 1e-4 + dprime)
    # AMB-V6: delta' defaults to the releases' delta
    assert paper_bound([(rel, rounds)]).epsilon == pytest.approx(advanced_composition(eps, rounds, 1e-4))


def test_paper_not_applicable_gives_none_with_reason():
    a = gaussian_release(2.0, epsilon=0.5, delta=1e-5, composition="moments")
    b = gaussian_release(2.0, epsilon=0.5, delta=1e-5, composition="advanced")
    mixed = paper_bound([(a, 3), (b, 2)])
    assert mixed.epsilon is None and "different composition formulas" in mixed.reason
    assert agent_epsilon([(a, 3), (b, 2)], 1e-5, "paper") is None
    assert agent_epsilon([(gaussian_release(2.0), 3)], 1e-5, "paper") is None
    assert "no per-release epsilon" in paper_bound([(gaussian_release(2.0), 3)]).reason
    other_delta = gaussian_release(2.0, epsilon=0.5, delta=1e-6, composition="moments")
    assert paper_bound([(a, 1), (other_delta, 1)]).epsilon is None
    assert paper_bound([(laplace_release(2.0, composition="moments"), 4)]).epsilon is None


def test_nothing_released_and_non_private():
    for name in ACCOUNTANTS:
        assert agent_epsilon([], 1e-5, name) == 0.0
        assert agent_epsilon([(Release(de.NoOpDpEvent()), 5)], 1e-5, name) == 0.0
        assert agent_epsilon([(Release(de.NonPrivateDpEvent()), 1)], 1e-5, name) == math.inf


@pytest.mark.parametrize("z, count, delta", [(5.0, 100, 1e-5), (1.0, 1, 1e-3), (20.0, 1000, 1e-6)])
def test_gaussian_matches_dp_accounting(z, count, delta):
    entries = [(gaussian_release(z), count)]
    ev = de.SelfComposedDpEvent(de.GaussianDpEvent(z), count)
    assert agent_epsilon(entries, delta, "rdp") == pytest.approx(RdpAccountant().compose(ev).get_epsilon(delta), rel=1e-9)
    assert agent_epsilon(entries, delta, "pld") == pytest.approx(PLDAccountant().compose(ev).get_epsilon(delta), abs=1e-4)


def test_heterogeneous_gaussians_merge_exactly():
    entries = [(gaussian_release(2.0), 3), (gaussian_release(4.0), 5), (gaussian_release(2.0), 1)]
    acc_r, acc_p = RdpAccountant(), PLDAccountant()
    for r, c in entries:
        acc_r.compose(r.event, c)
        acc_p.compose(r.event, c)
    assert agent_epsilon(entries, 1e-5, "rdp") == pytest.approx(acc_r.get_epsilon(1e-5), rel=1e-9)
    assert agent_epsilon(entries, 1e-5, "pld") == pytest.approx(acc_p.get_epsilon(1e-5), abs=1e-4)


def test_mixed_gaussian_laplace_matches_dp_accounting():
    entries = [(gaussian_release(3.0), 4), (laplace_release(5.0), 3)]
    acc_r, acc_p = RdpAccountant(), PLDAccountant()
    for r, c in entries:
        acc_r.compose(r.event, c)
        acc_p.compose(r.event, c)
    assert agent_epsilon(entries, 1e-5, "rdp") == pytest.approx(acc_r.get_epsilon(1e-5), rel=1e-9)
    assert agent_epsilon(entries, 1e-5, "pld") == pytest.approx(acc_p.get_epsilon(1e-5), rel=1e-6)
    assert agent_epsilon(entries, 1e-5, "paper") is None  # moments + basic


@pytest.mark.parametrize("z, count", [(2.0, 10), (10.0, 100), (1.0, 20)])
def test_laplace_basic_and_tight(z, count):
    entries = [(laplace_release(z), count)]
    basic = agent_epsilon(entries, 1e-5, "paper")
    assert basic == pytest.approx(count / z)
    assert paper_bound(entries).delta == 0.0
    for name in ("rdp", "pld"):
        assert agent_epsilon(entries, 1e-5, name) <= basic * (1 + 1e-4) + 1e-4
    ev = de.SelfComposedDpEvent(de.LaplaceDpEvent(z), count)
    assert agent_epsilon(entries, 1e-5, "pld") == pytest.approx(PLDAccountant().compose(ev).get_epsilon(1e-5))


def test_single_laplace_release():
    entries = [(laplace_release(2.0), 1)]
    assert agent_epsilon(entries, 1e-5, "paper") == 0.5
    assert agent_epsilon(entries, 1e-5, "pld") == pytest.approx(0.5, abs=1e-3)
    # RDP's conversion to (eps, delta) costs a little for a single pure-DP release
    assert 0.5 <= agent_epsilon(entries, 1e-5, "rdp") <= 0.51


def test_errors():
    with pytest.raises(UnknownNameError, match="unknown accountant 'zcdp'; known: paper, pld, rdp"):
        agent_epsilon([], 1e-5, "zcdp")
    led = PrivacyLedger(1)
    with pytest.raises(UnknownNameError):
        privacy_report(led, 1e-5, ("rdp", "moments"))
    with pytest.raises(ValidationError):
        agent_epsilon([], 0.0, "rdp")
    tree = Release(de.SingleEpochTreeAggregationDpEvent(1.0, 4))
    for name in ("rdp", "pld"):
        with pytest.raises(UnsupportedEventError):
            agent_epsilon([(tree, 1)], 1e-5, name)
    with pytest.raises(TypeError):
        agent_epsilon([gaussian_release(1.0)], 1e-5, "rdp")


def test_privacy_report_shape_and_cache():
    led = PrivacyLedger(60)
    rels = [gaussian_release(4.0 if k % 2 else 8.0, delta=1e-5) for k in range(60)]
    for _ in range(30):
        led.record_round(range(60), rels)
    led.record(59, laplace_release(1.0), 2)
    led.add_assumption("Gaussianity assumed")
    clear_accountant_cache()
    report = privacy_report(led, 1e-5)
    assert set(report) == {"delta", "paper_delta", "per_agent", "not_guaranteed", "exposures", "assumptions"}
    assert report["delta"] == 1e-5 and report["paper_delta"] == 1e-5
    assert report["assumptions"] == ["Gaussianity assumed"]
    first = report["per_agent"][0]
    tight = {"rdp": pytest.approx(agent_epsilon([(rels[0], 30)], 1e-5, "rdp")),
             "pld": pytest.approx(agent_epsilon([(rels[0], 30)], 1e-5, "pld"))}
    assert first == {"agent": 0, "releases": 30, "guaranteed": True, "paper_note": None, "claimed": tight,
                     "guarantee_accountant": "pld",
                     "epsilon": {"paper": pytest.approx(agent_epsilon([(rels[0], 30)], 1e-5, "paper")), **tight}}
    assert report["per_agent"][59]["releases"] == 32 and report["per_agent"][59]["epsilon"]["paper"] is None
    # three distinct entry sequences x (three accountants + two claimed): fifteen accountings for 60 agents
    assert _cached_epsilon.cache_info().misses == 15
    only = privacy_report(led, 1e-5, ("rdp",))
    assert set(only["per_agent"][3]["epsilon"]) == {"rdp"} and only["paper_delta"] is None


def test_report_paper_delta_is_largest_certified():
    led = PrivacyLedger(2)
    rel = gaussian_release(3.0, delta=1e-6, composition="advanced")
    led.record(0, rel, 10)
    led.record(1, rel, 20)
    report = privacy_report(led, 1e-5, delta_prime=1e-7)
    assert report["paper_delta"] == pytest.approx(20 * 1e-6 + 1e-7)


_release = st.one_of(
    st.builds(lambda z: gaussian_release(z, delta=1e-5), st.floats(0.5, 50.0)),
    st.builds(lambda z: gaussian_release(z, delta=1e-5, composition="dzoa"), st.floats(0.5, 50.0)),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_release, st.integers(1, 500)), min_size=0, max_size=4), _release, st.integers(1, 100),
       st.sampled_from(ACCOUNTANTS))
def test_more_releases_never_decrease_epsilon(entries, extra, count, accountant):
    before = agent_epsilon(entries, 1e-5, accountant)
    after = agent_epsilon([*entries, (extra, count)], 1e-5, accountant)
    if before is None or after is None:  # paper formula with mixed compositions
        assert accountant == "paper"
        return
    assert after >= before - 1e-9 * max(1.0, before)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.5, 20.0), st.integers(1, 30), st.integers(1, 30), st.sampled_from(ACCOUNTANTS))
def test_laplace_more_releases_never_decrease_epsilon(z, n, extra, accountant):
    rel = laplace_release(z)
    assert agent_epsilon([(rel, n + extra)], 1e-5, accountant) >= agent_epsilon([(rel, n)], 1e-5, accountant) - 1e-9
