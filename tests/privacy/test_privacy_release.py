"""Releases: construction, validation, hashing, the Gaussian-mechanism helpers, serialisation."""

import math
import pickle

import pytest
from dp_accounting import dp_event as de

from privdist.errors import UnknownNameError, UnsupportedEventError, ValidationError
from privdist.privacy import (
    Release,
    event_from_dict,
    event_to_dict,
    gaussian_epsilon,
    gaussian_release,
    gaussian_sigma,
    laplace_release,
)


def test_gaussian_sigma_and_inverse():
    # spec §1.2: sigma = Delta sqrt(2 log(1.25/delta)) / eps
    assert gaussian_sigma(1.0, 1.0, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)))
    assert gaussian_sigma(0.5, 0.3, 1e-3, constant=2.1) == pytest.approx(0.5 * math.sqrt(2.1 * math.log(1250)) / 0.3)
    s = gaussian_sigma(2.0, 0.7, 1e-4, constant=2.1)
    assert gaussian_epsilon(s / 2.0, 1e-4, constant=2.1) == pytest.approx(0.7)


def test_gaussian_release_fills_epsilon_from_delta():
    r = gaussian_release(5.0, delta=1e-5)
    assert r.event == de.GaussianDpEvent(5.0)
    assert r.epsilon == pytest.approx(gaussian_epsilon(5.0, 1e-5))
    assert r.composition == "moments"
    d = gaussian_release(5.0, delta=1e-5, composition="dzoa")
    assert d.epsilon == pytest.approx(gaussian_epsilon(5.0, 1e-5, 2.1))
    explicit = gaussian_release(5.0, epsilon=0.3, delta=1e-5)
    assert explicit.epsilon == 0.3
    bare = gaussian_release(5.0)
    assert bare.epsilon is None and bare.delta is None


def test_laplace_release():
    r = laplace_release(4.0)
    assert r.event == de.LaplaceDpEvent(4.0)
    assert (r.epsilon, r.delta, r.composition) == (0.25, 0.0, "basic")


def test_releases_are_hashable_and_equal_by_value():
    a = gaussian_release(2.0, delta=1e-5)
    b = Release(de.GaussianDpEvent(2.0), a.epsilon, 1e-5, "moments")  # built separately: equal by value
    assert a == b and hash(a) == hash(b) and a is not b
    assert gaussian_release(2.0, delta=1e-5) is a  # immutable, so the constructor caches it (issue 14)
    assert gaussian_release(2, delta=1e-5) is not a and gaussian_release(2, delta=1e-5) == a  # typed cache
    assert len({a, b, gaussian_release(3.0, delta=1e-5)}) == 2
    assert a != gaussian_release(2.0, delta=1e-5, composition="advanced")
    composed = Release(de.ComposedDpEvent([de.GaussianDpEvent(1.0), de.LaplaceDpEvent(2.0)]))
    assert isinstance(composed.event.events, tuple)
    assert hash(composed) == hash(Release(de.ComposedDpEvent((de.GaussianDpEvent(1.0), de.LaplaceDpEvent(2.0)))))


def test_release_pickles_and_serialises():
    r = Release(de.SelfComposedDpEvent(de.ComposedDpEvent([de.GaussianDpEvent(1.5), de.NoOpDpEvent()]), 3), 0.5, 1e-6,
                "advanced")
    for back in (pickle.loads(pickle.dumps(r)), Release.from_dict(r.to_dict())):
        assert back == r and hash(back) == hash(r)


def test_event_dict_round_trip_and_errors():
    ev = de.ComposedDpEvent([de.GaussianDpEvent(1.0), de.SelfComposedDpEvent(de.LaplaceDpEvent(2.0), 4),
                             de.NonPrivateDpEvent(), de.NoOpDpEvent()])
    d = event_to_dict(ev)
    assert d["type"] == "ComposedDpEvent" and d["events"][0] == {"type": "GaussianDpEvent", "noise_multiplier": 1.0}
    assert event_from_dict(d) == Release(ev).event
    with pytest.raises(UnsupportedEventError):
        event_from_dict({"type": "UnsupportedDpEvent"})
    with pytest.raises(UnsupportedEventError):
        event_from_dict({"type": "NoSuchEvent"})
    with pytest.raises(ValidationError):
        event_from_dict({"type": "GaussianDpEvent", "sigma": 1.0})
    with pytest.raises(UnsupportedEventError):
        event_to_dict(de.UnsupportedDpEvent())


def test_bad_release_inputs():
    with pytest.raises(ValidationError, match="epsilon must be > 0, got 0.0"):
        gaussian_release(1.0, epsilon=0.0, delta=1e-5)
    with pytest.raises(ValidationError, match="epsilon must be > 0, got -1.0"):
        Release(de.GaussianDpEvent(1.0), epsilon=-1.0)
    for bad in (0.0, 1.0, 1.5, -1e-3):
        with pytest.raises(ValidationError, match="delta must be in"):
            gaussian_release(1.0, delta=bad)
        with pytest.raises(ValidationError, match="delta must be in"):
            gaussian_sigma(1.0, 1.0, bad)
    with pytest.raises(ValidationError, match="release delta must be in"):
        Release(de.GaussianDpEvent(1.0), 1.0, 1.0)
    with pytest.raises(ValidationError, match="noise_multiplier must be >= 0, got -2.0"):
        gaussian_release(-2.0)
    with pytest.raises(ValidationError, match="noise_multiplier must be >= 0"):
        Release(de.SelfComposedDpEvent(de.GaussianDpEvent(-1.0), 2))
    with pytest.raises(ValidationError, match="noise_multiplier must be > 0"):
        laplace_release(0.0)
    with pytest.raises(ValidationError, match="epsilon must be > 0"):
        gaussian_sigma(1.0, -0.5, 1e-5)
    with pytest.raises(UnknownNameError, match="unknown composition 'sum'"):
        gaussian_release(1.0, composition="sum")
    with pytest.raises(TypeError):
        Release("gaussian")
    with pytest.raises(UnsupportedEventError):
        Release(de.UnsupportedDpEvent())
