"""Guarantee vs claim in releases and reports (issue: privacy truth; DESIGN idea 3)."""

import math

import pytest
from dp_accounting import dp_event as de

from privdist.errors import ValidationError
from privdist.privacy import (PrivacyLedger, Release, agent_epsilon, claimed, gaussian_release, non_private_release,
                              privacy_report)


def test_claim_release_has_infinite_guarantee_and_finite_claim():
    rel = gaussian_release(3.0, delta=1e-5, composition="moments", reason="assumed bound not enforced")
    assert not rel.guarantee and rel.reason == "assumed bound not enforced"
    entries = [(rel, 10)]
    assert agent_epsilon(entries, 1e-5, "pld") == math.inf
    assert agent_epsilon(entries, 1e-5, "rdp") == math.inf
    honest = gaussian_release(3.0, delta=1e-5, composition="moments")
    assert agent_epsilon(entries, 1e-5, "pld", claim=True) == pytest.approx(agent_epsilon([(honest, 10)], 1e-5, "pld"))
    assert agent_epsilon(entries, 1e-5, "paper") == pytest.approx(agent_epsilon([(honest, 10)], 1e-5, "paper"))


def test_one_claim_among_guarantees_makes_the_agent_not_guaranteed():
    led = PrivacyLedger(2)
    good = gaussian_release(2.0, delta=1e-5)
    led.record(0, good, 5)
    led.record(1, good, 5)
    led.record(1, claimed(good, "pilot bound"), 1)
    rep = privacy_report(led, 1e-5)
    a0, a1 = rep["per_agent"]
    assert a0["guaranteed"] and math.isfinite(a0["epsilon"]["pld"])
    assert a0["claimed"]["pld"] == pytest.approx(a0["epsilon"]["pld"])
    assert not a1["guaranteed"] and a1["epsilon"]["pld"] == math.inf and a1["epsilon"]["rdp"] == math.inf
    assert math.isfinite(a1["claimed"]["pld"]) and a1["claimed"]["pld"] > a0["epsilon"]["pld"]
    assert rep["not_guaranteed"] == ["pilot bound"]


def test_non_private_release_is_infinite_everywhere_never_zero():
    rel = non_private_release("iterates sent without noise")
    led = PrivacyLedger(1)
    led.record(0, rel, 3)
    rep = privacy_report(led, 1e-5)
    eps = rep["per_agent"][0]["epsilon"]
    assert eps["rdp"] == eps["pld"] == eps["paper"] == math.inf
    assert rep["per_agent"][0]["claimed"] == {"rdp": math.inf, "pld": math.inf}
    assert not rep["per_agent"][0]["guaranteed"] and rep["not_guaranteed"] == ["iterates sent without noise"]
    # a bare NonPrivateDpEvent is normalised to a non-guarantee
    assert not Release(de.NonPrivateDpEvent()).guarantee


def test_release_guarantee_fields_are_checked_and_serialised():
    with pytest.raises(ValidationError):
        Release(de.GaussianDpEvent(1.0), guarantee=False)  # a claim needs a reason
    with pytest.raises(ValidationError):
        Release(de.GaussianDpEvent(1.0), reason="x")  # a guarantee has none
    with pytest.raises(TypeError):
        Release(de.GaussianDpEvent(1.0), guarantee=1, reason=None)
    rel = claimed(gaussian_release(2.0, delta=1e-3), "why")
    assert Release.from_dict(rel.to_dict()) == rel and rel != gaussian_release(2.0, delta=1e-3)


def test_paper_note_when_the_paper_formula_is_below_the_exact_value():
    led = PrivacyLedger(1)
    led.record(0, gaussian_release(5.0, delta=1e-5, composition="moments"), 100)
    rep = privacy_report(led, 1e-5)
    assert "not a valid upper bound" in rep["per_agent"][0]["paper_note"]


def test_exposures_are_reported_and_round_trip():
    led = PrivacyLedger(1)
    led.add_exposure("labels broadcast")
    assert privacy_report(led, 1e-5)["exposures"] == ["labels broadcast"]
    assert PrivacyLedger.from_dict(led.to_dict()) == led


def test_paper_note_when_the_classical_gaussian_bound_is_used_beyond_epsilon_one():
    led = PrivacyLedger(1)
    led.record(0, gaussian_release(1.0, epsilon=1.5, delta=1e-3, composition="dzoa"), 2)
    note = privacy_report(led, 1e-3)["per_agent"][0]["paper_note"]
    assert "proved only for epsilon < 1" in note
