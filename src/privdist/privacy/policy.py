"""A party's privacy policy (issue 38): what a data holder accepts before any of its data is read.

A party runs ``privdist party`` on its own machine with a policy file (TOML or JSON, top-level keys, every key
optional). Before it reads its data, the job's :class:`~privdist.privacy.plan.PrivacyPlan` is checked against the
policy and against the party's lifetime ledger (:func:`privdist.privacy.admission.check_job`); a job that does not
fit is refused with one sentence per broken rule.

Example ``policy.toml``::

    max_epsilon_per_job = 1.0
    lifetime_epsilon = 10.0
    lifetime_delta = 1e-5
    min_parties = 3
    min_honest_shares = 2
    trust = ["secure_aggregation", "local"]
    min_colluding_assumed = 0
    accepted_kinds = ["horizontal", "vertical"]
    seeded_allowed = false
    allow_non_private = false
    coordinators = ["consortium-hub"]
    accountant = "pld"

The defaults (:class:`PartyPolicy`) accept privdist's own default job (total epsilon 1, delta 1e-5 per party,
secure aggregation of dpmm with no colluding party assumed) among three or more parties, and at most ten such
budgets over the party's lifetime, composed tightly.
"""

from __future__ import annotations

import json
import math
import numbers
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from .._checks import shown
from ..errors import PolicyError

__all__ = ["PartyPolicy", "POLICY_TRUST", "POLICY_KINDS", "POLICY_ACCOUNTANTS"]

#: Trust models a policy may accept (those of a resolved plan).
POLICY_TRUST = ("secure_aggregation", "local")
#: Kinds of job a policy may accept.
POLICY_KINDS = ("horizontal", "vertical")
#: Accountants a party may compose its lifetime with (both through dp-accounting; Skellam releases by RDP).
POLICY_ACCOUNTANTS = ("pld", "rdp")


@dataclass(frozen=True)
class PartyPolicy:
    """What a party accepts (module docstring). Every field is checked at construction (:class:`PolicyError`).

    Attributes:
        max_epsilon_per_job: the most TOTAL epsilon one job may spend of this party (the plan's epsilon for this
            party, and its declared releases composed at the plan's delta). Default 1.0, privdist's default budget.
        lifetime_epsilon: the most epsilon all jobs together may ever spend of this party's data: the composition
            of every release in the lifetime ledger (not a sum of per-job epsilons), at ``lifetime_delta``, plus the
            job asked for. Default 10.0.
        lifetime_delta: the delta at which the lifetime epsilon is computed; each job's delta must be at most this.
            Default 1e-5, privdist's default delta per job.
        min_parties: the fewest parties a job may have. Default 3 (with two, each party's sum is the other's
            vector plus its own: all a sum hides is one party).
        min_honest_shares: under secure aggregation, the fewest honest parties each secure sum is calibrated for
            (``plan.secure.shares(plan.parties)``: parties minus those assumed colluding minus the dropouts
            tolerated): the coordinator sees this party's vector only mixed with at least that many honest ones.
            Default 2.
        trust: the trust models accepted (``"secure_aggregation"``: noise shares drawn by each party, summed under
            masks, against an honest-but-curious aggregator; ``"local"``: each party's release carries its whole
            noise, against everyone). Default both.
        min_colluding_assumed: under secure aggregation, the fewest colluding parties the plan must assume (its
            ``secure.colluding``); the noise is then calibrated so that this many parties pooling their shares with
            the aggregator still leave this party's guarantee. Default 0 (privdist's default plan, an
            honest-but-curious aggregator and honest parties); 1 or more for a consortium whose members you do not
            trust.
        accepted_kinds: the kinds of job accepted (``"horizontal"``: parties hold rows; ``"vertical"``: parties hold
            columns, the coordinator the labels). Default both.
        seeded_allowed: accept a research-mode plan whose noise is regenerable from a recorded seed
            (``plan.seeded``): whoever holds the seed can subtract the noise, so it is no guarantee against them.
            Default False.
        allow_non_private: accept a plan with no noise (``epsilon`` None): this party's messages then go out in the
            clear and its lifetime guarantee becomes infinite (every later private job is refused for the lifetime
            budget); for a ledger of public or test data only. Default False.
        coordinators: the coordinator names this party works with (None: any coordinator the transport
            authenticates). Default None.
        accountant: how the lifetime ledger composes releases: ``"pld"`` (privacy loss distributions, the tighter
            bound; a Gaussian composition exactly) or ``"rdp"``; Skellam releases are composed by their RDP bound
            either way. Default ``"pld"``.
    """

    max_epsilon_per_job: float = 1.0
    lifetime_epsilon: float = 10.0
    lifetime_delta: float = 1e-5
    min_parties: int = 3
    min_honest_shares: int = 2
    trust: tuple = POLICY_TRUST
    min_colluding_assumed: int = 0
    accepted_kinds: tuple = POLICY_KINDS
    seeded_allowed: bool = False
    allow_non_private: bool = False
    coordinators: tuple | None = None
    accountant: str = "pld"

    def __post_init__(self):
        put = object.__setattr__
        put(self, "max_epsilon_per_job", _positive(self.max_epsilon_per_job, "max_epsilon_per_job"))
        put(self, "lifetime_epsilon", _positive(self.lifetime_epsilon, "lifetime_epsilon"))
        if self.max_epsilon_per_job > self.lifetime_epsilon:
            raise PolicyError(f"max_epsilon_per_job ({self.max_epsilon_per_job}) is above lifetime_epsilon "
                              f"({self.lifetime_epsilon}): no job could use it")
        delta = _positive(self.lifetime_delta, "lifetime_delta")
        if not delta < 1:
            raise PolicyError(f"lifetime_delta must be in (0, 1), got {shown(self.lifetime_delta)}")
        put(self, "lifetime_delta", delta)
        put(self, "min_parties", _integer(self.min_parties, "min_parties", 1))
        put(self, "min_honest_shares", _integer(self.min_honest_shares, "min_honest_shares", 1))
        put(self, "min_colluding_assumed", _integer(self.min_colluding_assumed, "min_colluding_assumed", 0))
        put(self, "trust", _choices(self.trust, "trust", POLICY_TRUST))
        put(self, "accepted_kinds", _choices(self.accepted_kinds, "accepted_kinds", POLICY_KINDS))
        for name in ("seeded_allowed", "allow_non_private"):
            if type(getattr(self, name)) is not bool:
                raise PolicyError(f"{name} must be true or false, got {shown(getattr(self, name))}")
        if self.coordinators is not None:
            names = self.coordinators
            if isinstance(names, str) or not isinstance(names, (list, tuple)) or not names or not all(
                    isinstance(n, str) and n.strip() for n in names):
                raise PolicyError("coordinators must be a non-empty list of coordinator names (or absent: any "
                                  f"coordinator), got {shown(names)}")
            put(self, "coordinators", tuple(names))
        if self.accountant not in POLICY_ACCOUNTANTS:
            raise PolicyError(f"accountant must be one of {list(POLICY_ACCOUNTANTS)}, got {shown(self.accountant)}")

    # ------------------------------------------------------------------ files
    @classmethod
    def from_dict(cls, data: dict) -> PartyPolicy:
        """The policy of a mapping of keys to values (absent keys take their defaults).

        Raises:
            PolicyError: ``data`` is not a mapping, has an unknown key (the message lists the known ones) or a value
                outside its domain.
        """
        if not isinstance(data, dict):
            raise PolicyError(f"a policy must be a table of keys, got {type(data).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise PolicyError(f"unknown policy key(s) {unknown}; known: {known}")
        return cls(**data)

    @classmethod
    def from_file(cls, path) -> PartyPolicy:
        """Read a policy file: TOML (``.toml``) or JSON (``.json``), keys at the top level.

        Raises:
            PolicyError: another suffix, a file that cannot be read or parsed (the message names it and why), or
                the errors of :meth:`from_dict` (prefixed with the file's name).
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".toml", ".json"):
            raise PolicyError(f"policy file {path} must end in .toml or .json")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyError(f"cannot read policy file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            data = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, ValueError) as exc:
            raise PolicyError(f"policy file {path} is not valid {suffix[1:].upper()}: {exc}") from None
        try:
            return cls.from_dict(data)
        except PolicyError as exc:
            raise PolicyError(f"policy file {path}: {exc}") from None

    def to_dict(self) -> dict:
        """Every field, JSON-ready (tuples as lists); :meth:`from_dict` reads it back."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PolicyError(f"{name} must be a number, got {shown(value)}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise PolicyError(f"{name} must be a finite number > 0, got {value}")
    return value


def _integer(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PolicyError(f"{name} must be an integer, got {shown(value)}")
    if value < minimum:
        raise PolicyError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _choices(values, name: str, allowed: tuple) -> tuple:
    if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
        raise PolicyError(f"{name} must be a non-empty list drawn from {list(allowed)}, got {shown(values)}")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise PolicyError(f"{name} holds {shown(bad)}; allowed: {list(allowed)}")
    return tuple(dict.fromkeys(values))
