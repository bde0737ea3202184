"""PrivacyLedger: run-length compression, record_round, JSON round trip, merge/copy, bad inputs."""

import json
import pickle

import numpy as np
import pytest
from dp_accounting import dp_event as de

from privdist.errors import ShapeMismatchError, UnsupportedEventError, ValidationError
from privdist.privacy import PrivacyLedger, Release, gaussian_release, laplace_release

G1 = gaussian_release(1.0, delta=1e-5)
G2 = gaussian_release(2.0, delta=1e-5)
L1 = laplace_release(3.0)


def test_record_round_run_length_compresses():
    led = PrivacyLedger(3)
    for _ in range(5):
        led.record_round([0, 1, 2], [G1, G2, None])
    led.record_round(np.arange(3), [G1, G1, L1])  # numpy ids, agent 1 changes
    led.record_round([0, 1, 2], [gaussian_release(1.0, delta=1e-5), None, L1])  # equal, not identical
    assert led.entries(0) == [(G1, 7)]
    assert led.entries(1) == [(G2, 5), (G1, 1)]
    assert led.entries(2) == [(L1, 2)]
    assert [led.n_releases(a) for a in range(3)] == [7, 6, 2]


def test_record_round_subsets_and_all_agents():
    led = PrivacyLedger(4)
    led.record_round([2, 0], [G1, L1])
    led.record_round(None, [G1] * 4)
    led.record(3, G2, count=10)
    led.record_round(None, [G1] * 4)
    assert led.entries(0) == [(L1, 1), (G1, 2)]
    assert led.entries(1) == [(G1, 2)]
    assert led.entries(2) == [(G1, 3)]
    assert led.entries(3) == [(G1, 1), (G2, 10), (G1, 1)]


def test_gaps_of_none_merge_equal_releases():
    led = PrivacyLedger(1)
    for rel in (G1, None, G1, None, G2):
        led.record_round([0], [rel])
    assert led.entries(0) == [(G1, 2), (G2, 1)]


def test_json_round_trip_and_equality():
    led = PrivacyLedger(3)
    composed = Release(de.ComposedDpEvent([de.GaussianDpEvent(1.0), de.LaplaceDpEvent(2.0)]), 1.0, 1e-6, "basic")
    selfc = Release(de.SelfComposedDpEvent(de.GaussianDpEvent(4.0), 3))
    for _ in range(4):
        led.record_round([0, 1, 2], [G1, composed, Release(de.NoOpDpEvent())])
    led.record(1, selfc, 2)
    led.record(2, Release(de.NonPrivateDpEvent()))
    led.add_assumption("Gaussianity assumed")
    led.add_assumption("variance upper bound used as the variance")
    led.add_assumption("Gaussianity assumed")
    assert led.assumptions == ["Gaussianity assumed", "variance upper bound used as the variance"]
    data = json.loads(json.dumps(led.to_dict()))
    back = PrivacyLedger.from_dict(data)
    assert back == led
    assert back.entries(1) == [(composed, 4), (selfc, 2)]
    assert len(data["releases"]) == 5  # distinct releases stored once
    assert pickle.loads(pickle.dumps(led)) == led
    other = led.copy()
    other.record(0, G2)
    assert other != led and led.entries(0) == [(G1, 4)]


def test_from_dict_rejects_malformed():
    good = PrivacyLedger(1)
    good.record(0, G1)
    data = good.to_dict()
    with pytest.raises(ValidationError):
        PrivacyLedger.from_dict({**data, "format": "other"})
    with pytest.raises(ValidationError):
        PrivacyLedger.from_dict({**data, "runs": [[[5, 1]]]})
    with pytest.raises(ValidationError):
        PrivacyLedger.from_dict({**data, "runs": [[[0, 0]]]})
    bad_event = json.loads(json.dumps(data))
    bad_event["releases"][0]["event"] = {"type": "UnsupportedDpEvent"}
    with pytest.raises(UnsupportedEventError):
        PrivacyLedger.from_dict(bad_event)


def test_merge_appends_sequentially():
    a, b = PrivacyLedger(2), PrivacyLedger(2)
    a.record_round([0, 1], [G1, G2])
    a.add_assumption("x")
    b.record_round([0, 1], [G1, L1])
    b.add_assumption("y")
    m = a.merge(b)
    assert m.entries(0) == [(G1, 2)] and m.entries(1) == [(G2, 1), (L1, 1)]
    assert m.assumptions == ["x", "y"]
    assert a.entries(0) == [(G1, 1)]  # inputs untouched
    with pytest.raises(ShapeMismatchError):
        a.merge(PrivacyLedger(3))


def test_bad_inputs():
    led = PrivacyLedger(2)
    with pytest.raises(ValidationError, match=r"agent must be in \[0, 2\), got 2"):
        led.record(2, G1)
    with pytest.raises(ValidationError, match="count must be >= 1, got 0"):
        led.record(0, G1, count=0)
    with pytest.raises(TypeError):
        led.record(0, "gaussian")
    with pytest.raises(ShapeMismatchError):
        led.record_round([0, 1], [G1])
    with pytest.raises(ValidationError, match="repeated"):
        led.record_round([0, 0], [G1, G1])
    with pytest.raises(TypeError, match=r"releases\[1\] must be a Release"):
        led.record_round([0, 1], [G1, 3.0])
    with pytest.raises(ValidationError):
        led.record_round([0, -1], [G1, G1])
    with pytest.raises(ValidationError):
        PrivacyLedger(0)
    with pytest.raises(ValidationError):
        led.add_assumption("")
    assert led.entries(0) == [] and led.n_releases(1) == 0
