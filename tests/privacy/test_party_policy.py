"""Issue 38: a party's policy file: defaults, TOML and JSON, named errors for unknown keys and bad values."""

import json

import pytest

from privdist.errors import PolicyError
from privdist.privacy.policy import PartyPolicy


def test_defaults_are_documented_and_sensible():
    p = PartyPolicy()
    assert (p.max_epsilon_per_job, p.lifetime_epsilon, p.lifetime_delta) == (1.0, 10.0, 1e-5)
    assert (p.min_parties, p.min_honest_shares, p.min_colluding_assumed) == (3, 2, 0)
    assert p.trust == ("secure_aggregation", "local") and p.accepted_kinds == ("horizontal", "vertical")
    assert p.seeded_allowed is False and p.allow_non_private is False and p.coordinators is None
    assert p.accountant == "pld"
    for name in p.to_dict():  # every field is documented
        assert f"{name}:" in PartyPolicy.__doc__


def test_toml_and_json_files(tmp_path):
    toml = tmp_path / "policy.toml"
    toml.write_text('max_epsilon_per_job = 2\nlifetime_epsilon = 6.5\nmin_parties = 5\ntrust = ["local"]\n'
                    'coordinators = ["hub"]\nseeded_allowed = true\n')
    p = PartyPolicy.from_file(toml)
    assert (p.max_epsilon_per_job, p.lifetime_epsilon, p.min_parties) == (2.0, 6.5, 5)
    assert p.trust == ("local",) and p.coordinators == ("hub",) and p.seeded_allowed is True
    js = tmp_path / "policy.json"
    js.write_text(json.dumps(p.to_dict()))
    assert PartyPolicy.from_file(js) == p
    assert PartyPolicy.from_dict(p.to_dict()) == p


@pytest.mark.parametrize("data,match", [
    ({"max_epsilon": 1}, r"unknown policy key\(s\) \['max_epsilon'\]; known: \['max_epsilon_per_job'"),
    ({"max_epsilon_per_job": 0}, "max_epsilon_per_job must be a finite number > 0, got 0"),
    ({"max_epsilon_per_job": "1"}, "max_epsilon_per_job must be a number, got '1'"),
    ({"lifetime_epsilon": float("inf")}, "lifetime_epsilon must be a finite number > 0"),
    ({"lifetime_epsilon": 0.5}, r"max_epsilon_per_job \(1.0\) is above lifetime_epsilon \(0.5\)"),
    ({"lifetime_delta": 1}, r"lifetime_delta must be in \(0, 1\)"),
    ({"min_parties": 2.5}, "min_parties must be an integer, got 2.5"),
    ({"min_parties": 0}, "min_parties must be >= 1, got 0"),
    ({"min_honest_shares": True}, "min_honest_shares must be an integer"),
    ({"min_colluding_assumed": -1}, "min_colluding_assumed must be >= 0"),
    ({"trust": ["auto"]}, r"trust holds \['auto'\]; allowed"),
    ({"trust": "local"}, "trust must be a non-empty list"),
    ({"accepted_kinds": []}, "accepted_kinds must be a non-empty list"),
    ({"seeded_allowed": "no"}, "seeded_allowed must be true or false"),
    ({"allow_non_private": 1}, "allow_non_private must be true or false"),
    ({"coordinators": []}, "coordinators must be a non-empty list"),
    ({"coordinators": ["hub", ""]}, "coordinators must be a non-empty list"),
    ({"accountant": "paper"}, r"accountant must be one of \['pld', 'rdp'\]"),
])
def test_bad_policies_are_named(data, match):
    with pytest.raises(PolicyError, match=match):
        PartyPolicy.from_dict(data)


def test_bad_files_are_named(tmp_path):
    bad = tmp_path / "policy.toml"
    bad.write_text("max_epsilon_per_job = = 1")
    with pytest.raises(PolicyError, match="not valid TOML"):
        PartyPolicy.from_file(bad)
    bad.write_text("epsilon = 1")
    with pytest.raises(PolicyError, match=r"policy file .*policy.toml: unknown policy key"):
        PartyPolicy.from_file(bad)
    with pytest.raises(PolicyError, match="must end in .toml or .json"):
        PartyPolicy.from_file(tmp_path / "policy.yaml")
    with pytest.raises(PolicyError, match="cannot read policy file"):
        PartyPolicy.from_file(tmp_path / "missing.toml")
    js = tmp_path / "policy.json"
    js.write_text("[1, 2]")
    with pytest.raises(PolicyError, match="must be a table of keys"):
        PartyPolicy.from_file(js)
