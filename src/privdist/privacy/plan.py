"""The privacy plan (issue 37): every fact a private fit rests on, decided once, as one immutable, serialisable value.

A fit's privacy is decided by a handful of facts: the trust model; the total budget ``(epsilon, delta)`` per party
and how it is split (the DP range step, training, one-vs-rest classes); each release's mechanism and calibration;
the public bounds its sensitivities rest on; the rounds; the colluding and dropout assumptions. :class:`PrivacyPlan`
holds all of them. It is built and validated once at the edge (the estimators, ``privdist fit``:
:func:`privdist.learn.plan.horizontal_plan`, :func:`privdist.learn.plan.vertical_plan`) from the user's request and
public facts (row count, columns, parties, classes) before any data is read, and everything below consumes it: the
range step draws the noise of :attr:`PrivacyPlan.range` (:class:`~privdist.privacy.range_plan.RangePlan`), each
training run gets the parameters of :meth:`PrivacyPlan.training_params`, and the privacy report prints
:meth:`PrivacyPlan.promised` as "what was promised". A non-private plan (``epsilon=None``) is a plan with no
mechanism: no range noise, no training noise.

It is also the job description a party can read, check against its own policy and refuse before its data is
touched (:meth:`to_json`, :meth:`from_json`; the declared events of :func:`privdist.learn.plan.declared_ledger`
equal the ledger of the fit it describes, tested for every estimator and trust model).

The trust model is resolved here and nowhere else (:func:`resolve_trust`): ``"auto"`` is secure aggregation for
``dpmm`` with noise and local otherwise (also for the vertical ``admm_sharing``: on Adult with 3 parties, total epsilon
1, 3 draws, secure 0.835 against local 0.836, since hiding a party's own share doubles the sensitivity).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .._checks import shown
from ..errors import ParameterTypeError, UnknownNameError, ValidationError
from .range_plan import RangePlan
from .secure_params import SECURE_FIELDS, SecureAggregation

__all__ = ["PrivacyPlan", "TrainingPlan", "TRUST_CHOICES", "SECURE_TRUST_ALGORITHMS", "PLAN_KEYS", "resolve_trust",
           "PLAN_VERSION", "secure_section", "check_plan_keys"]

PLAN_VERSION = 1

#: What a user may ask for; ``"auto"`` resolves by :func:`resolve_trust`.
TRUST_CHOICES = ("auto", "local", "secure_aggregation")
#: The algorithms whose sums go through secure aggregation in an estimator (horizontal dpmm and ssp, vertical ADMM
#: sharing).
SECURE_TRUST_ALGORITHMS = ("dpmm", "ssp", "admm_sharing")
#: Algorithm parameters the plan decides: an estimator's ``algorithm_params`` may not set them (the secure-aggregation
#: ones are taken into the plan's ``secure`` section instead).
PLAN_KEYS = ("epsilon", "delta", "budget", "rounds", "iterations", "trust", "prior", "runs")


def resolve_trust(algorithm: str, trust, epsilon) -> str:
    """The trust model of a fit: ``trust`` checked (named errors) and ``"auto"`` resolved: secure aggregation for
    ``dpmm`` and ``ssp`` with noise, local otherwise. A non-private fit (``epsilon=None``) runs locally whatever
    was asked: its vectors are in the clear anyway.

    Raises:
        UnknownNameError: ``trust`` not one of :data:`TRUST_CHOICES`. ValidationError: secure aggregation asked of
            an algorithm without a secure sum.
    """
    if not isinstance(trust, str) or trust not in TRUST_CHOICES:
        raise UnknownNameError("trust", str(trust), TRUST_CHOICES)
    if trust == "secure_aggregation" and algorithm not in SECURE_TRUST_ALGORITHMS:
        raise ValidationError(f"trust='secure_aggregation' is available with algorithm='dpmm' or 'ssp' (their sums "
                              f"are what secure aggregation adds up) and the vertical admm_sharing, got "
                              f"algorithm={algorithm!r}")
    if epsilon is None:
        return "local"
    if trust == "auto":
        return "secure_aggregation" if algorithm in ("dpmm", "ssp") else "local"
    return trust


@dataclass(frozen=True)
class TrainingPlan:
    """One training run's budget (one per class of a one-vs-rest fit): ``epsilon`` (a float, one per party, or None:
    no noise), ``delta``, the releases made before it that its calibration composes (``prior``: Gaussian noise
    multipliers or Skellam triples) and ``runs`` (secure aggregation: runs calibrated jointly)."""

    epsilon: object
    delta: float
    prior: tuple = ()
    runs: int = 1

    def to_dict(self) -> dict:
        return {"epsilon": list(self.epsilon) if isinstance(self.epsilon, tuple) else self.epsilon,
                "delta": self.delta, "prior": [list(p) if isinstance(p, tuple) else p for p in self.prior],
                "runs": self.runs}

    @classmethod
    def from_dict(cls, data: dict) -> TrainingPlan:
        eps = data["epsilon"]
        return cls(tuple(eps) if isinstance(eps, list) else eps, float(data["delta"]),
                   tuple(tuple(p) if isinstance(p, list) else p for p in data.get("prior", ())), int(data["runs"]))


@dataclass(frozen=True)
class PrivacyPlan:
    """Every privacy fact of one fit (module docstring).

    Attributes:
        kind: ``"horizontal"`` (parties hold rows) or ``"vertical"`` (parties hold columns).
        algorithm: the training algorithm (a registry name).
        epsilon, delta: the requested TOTAL budget per party for the whole job (``epsilon`` None: no noise).
        trust: ``"local"`` or ``"secure_aggregation"`` (resolved).
        secure: the secure-aggregation parameters (None under local trust).
        parties, rows, columns, classes, rounds: public facts (``classes``: binary fits, 1 unless one-vs-rest).
        range: the DP range step (None: no step; its ``width`` 0: decided not to run, nothing spent).
        training: one :class:`TrainingPlan` per binary fit.
        class_rule: how the classes share the budget (``"single"``, ``"gaussian_mu2_shares"``,
            ``"skellam_joint_rdp"``, ``"basic_composition"``, ``"none (no noise)"``).
        public: the public bounds the sensitivities rest on (row norm, clip bounds, named column bounds, target
            bounds), as stated by the user.
        seeded: research mode (noise from a recorded seed) instead of fresh OS entropy.
    """

    kind: str
    algorithm: str
    epsilon: object
    delta: float
    trust: str
    secure: SecureAggregation | None
    parties: int
    rows: int
    columns: int
    classes: int
    rounds: int
    range: RangePlan | None
    training: tuple
    class_rule: str = "single"
    public: dict = field(default_factory=dict)
    seeded: bool = False
    version: int = PLAN_VERSION

    def __post_init__(self):
        if self.kind not in ("horizontal", "vertical"):
            raise UnknownNameError("plan kind", str(self.kind), ("horizontal", "vertical"))
        if self.trust not in TRUST_CHOICES[1:]:
            raise UnknownNameError("plan trust", str(self.trust), TRUST_CHOICES[1:])
        if (self.secure is not None) != (self.trust == "secure_aggregation"):
            raise ValidationError("a plan holds secure-aggregation parameters exactly when its trust is "
                                  "secure_aggregation")
        if self.secure is not None:
            self.secure.check()
            self.secure.shares(self.parties)  # honest parties left in every sum, or a named error
        if len(self.training) != self.classes:
            raise ValidationError(f"a plan of {self.classes} binary fit(s) needs as many training budgets, got "
                                  f"{len(self.training)}")

    # ------------------------------------------------------------------ reading
    @property
    def private(self) -> bool:
        """Whether the plan has a mechanism (``epsilon`` set)."""
        return self.epsilon is not None

    def training_params(self, index: int = 0) -> dict:
        """The privacy parameters of binary fit ``index``'s algorithm factory: its budget (``epsilon``, ``delta``,
        ``budget="total"``; the horizon is the runtime's ``rounds``), the trust model and, under secure aggregation,
        the five :class:`SecureAggregation` fields, the prior releases and joint runs. Nothing else decides them."""
        t = self.training[index]
        if not self.private:
            return {}
        out = {"epsilon": t.epsilon, "delta": t.delta, "budget": "total"}
        if self.trust == "secure_aggregation":
            out.update(trust="secure_aggregation", **self.secure.to_dict())
            if t.prior:
                out["prior"] = t.prior
            if t.runs > 1:
                out["runs"] = t.runs
        return out

    def promised(self) -> dict:
        """The privacy report's "what was promised": the plan in words and numbers (JSON-ready)."""
        out = {"budget": {"epsilon": self.epsilon, "delta": self.delta,
                          "scope": f"total per party, whole job ({self.kind})"},
               "trust": self.trust, "parties": self.parties, "rounds": self.rounds, "algorithm": self.algorithm,
               "noise": "seeded (research: regenerable from the seed)" if self.seeded else
                        "fresh OS entropy, drawn where each party runs, never recorded"}
        if self.secure is not None:
            out["secure_aggregation"] = {**self.secure.to_dict(), "honest_shares": self.secure.shares(self.parties)}
        if self.range is not None:
            out["range_step"] = self.range.describe()
        out["training"] = [t.to_dict() for t in self.training]
        if self.classes > 1:
            out["classes"] = {"binary_fits": self.classes, "rule": self.class_rule}
        if self.public:
            out["public"] = self.public
        return out

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        out = {f: getattr(self, f) for f in ("version", "kind", "algorithm", "delta", "trust", "parties", "rows",
                                             "columns", "classes", "rounds", "class_rule", "public", "seeded")}
        out["epsilon"] = list(self.epsilon) if isinstance(self.epsilon, tuple) else self.epsilon
        out["secure"] = None if self.secure is None else self.secure.to_dict()
        out["range"] = None if self.range is None else self.range.to_dict()
        out["training"] = [t.to_dict() for t in self.training]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict) -> PrivacyPlan:
        """The plan of :meth:`to_dict` (validated again: a plan read from a file is checked like a new one).

        Raises:
            ValidationError: a missing field, an unknown version, or values that do not make a plan.
        """
        if not isinstance(data, dict) or data.get("version") != PLAN_VERSION:
            raise ValidationError(f"not a privacy plan of version {PLAN_VERSION}: {shown(data)}")
        try:
            eps = data["epsilon"]
            return cls(kind=data["kind"], algorithm=data["algorithm"],
                       epsilon=tuple(eps) if isinstance(eps, list) else eps, delta=float(data["delta"]),
                       trust=data["trust"],
                       secure=None if data["secure"] is None else SecureAggregation.from_dict(data["secure"]),
                       parties=int(data["parties"]), rows=int(data["rows"]), columns=int(data["columns"]),
                       classes=int(data["classes"]), rounds=int(data["rounds"]),
                       range=None if data["range"] is None else RangePlan.from_dict(data["range"]),
                       training=tuple(TrainingPlan.from_dict(t) for t in data["training"]),
                       class_rule=data["class_rule"], public=dict(data["public"]), seeded=bool(data["seeded"]))
        except KeyError as exc:
            raise ValidationError(f"a privacy plan needs the field {exc.args[0]!r}") from None

    @classmethod
    def from_json(cls, text: str) -> PrivacyPlan:
        return cls.from_dict(json.loads(text))


def secure_section(trust: str, params, private: bool = True) -> SecureAggregation | None:
    """The plan's ``secure`` section from ``params`` (an estimator's ``secure_aggregation``: None, a dict of the
    :data:`~privdist.privacy.secure_params.SECURE_FIELDS` or a :class:`SecureAggregation`), checked: the section
    under secure aggregation; None under local trust (a parameter that differs from its default is then a named
    error: it describes nothing that runs) and for a non-private plan (``private`` false: no noise, nothing to
    aggregate securely; the parameters are ignored).

    Raises:
        ParameterTypeError: ``params`` of another type. ValidationError: an unknown key or a bad value.
    """
    if isinstance(params, SecureAggregation):
        params = params.to_dict()
    if params is not None and not isinstance(params, dict):
        raise ParameterTypeError(f"secure_aggregation must be None, a dict of {list(SECURE_FIELDS)} or a "
                                 f"SecureAggregation, got {type(params).__name__} {shown(params)}")
    given = dict(params or {})
    unknown = sorted(str(k) for k in given if k not in SECURE_FIELDS)
    if unknown:
        raise ValidationError(f"unknown secure_aggregation parameter(s) {unknown}; known: {list(SECURE_FIELDS)}")
    if not private:
        return None
    if trust != "secure_aggregation":
        if any(v != getattr(SecureAggregation(), k) for k, v in given.items()):
            raise ValidationError(f"{sorted(given)} describe secure aggregation, but the fit's trust is {trust!r} "
                                  "(trust='secure_aggregation', CLI --trust secure_aggregation, or the default 'auto' "
                             "with algorithm='dpmm')")
        return None
    return SecureAggregation.from_dict(given)


def check_plan_keys(params: dict | None) -> dict:
    """An estimator's ``algorithm_params``, checked: the keys the plan decides (:data:`PLAN_KEYS` and the
    secure-aggregation fields) are a named error, so that no merge order can change the budget or the trust
    assumptions an algorithm receives."""
    params = dict(params or {})
    owned = sorted(k for k in params if k in PLAN_KEYS)
    if owned:
        raise ValidationError(f"algorithm_params may not set {owned}: the privacy plan decides them (give epsilon, "
                              "delta, rounds and trust to the estimator itself)")
    secure = sorted(k for k in params if k in SECURE_FIELDS)
    if secure:
        raise ValidationError(f"algorithm_params may not set {secure}: the privacy plan decides them (give them "
                              f"as secure_aggregation={{{', '.join(repr(k) + ': ...' for k in secure)}}})")
    return params
