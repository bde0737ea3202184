"""A privacy-costing message of one agent in one round, declared as data (DESIGN idea 3, STYLE #6).

An algorithm never computes its own reported epsilon. For every message that costs privacy it declares a
:class:`Release`: the dp-accounting event that the tight accountants (RDP, PLD) compose, plus the per-release
``(epsilon, delta)`` guarantee its source paper states and the name of the paper formula that composes it.
The ledger (:mod:`privdist.privacy.ledger`) collects releases per agent; the accountants
(:mod:`privdist.privacy.accountants`) turn them into epsilon.

**Guarantee or claim** (DESIGN idea 3). A release is a *guarantee* (``guarantee=True``) only when privdist
enforces every assumption its sensitivity rests on (clipping, norm and label bounds, public parameters) and the
noise really drawn is the noise declared. Otherwise it is the source paper's *claim*: the event still says what
the paper models (so the paper's formula and a "claimed" RDP/PLD value can be shown, labelled as such), but the
guaranteed epsilon of every agent that made it is infinite, and ``reason`` says why. A data-dependent message
sent without any noise is :func:`non_private_release` (``NonPrivateDpEvent``): epsilon = inf, never 0.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .._checks import check_nonnegative, check_positive, check_probability
from .._lazy import lazy
from ..errors import UnknownNameError, ValidationError
from .events import event_from_dict, event_to_dict, freeze_event, walk_events

dp_event = lazy("dp_accounting.dp_event")  # imported on first use (start-up time)

__all__ = [
    "COMPOSITIONS",
    "Release",
    "claimed",
    "non_private_release",
    "gaussian_release",
    "laplace_release",
    "pure_release",
    "randomized_response_parameter",
    "gaussian_sigma",
    "gaussian_epsilon",
]

#: Paper composition formulas a release can name (spec §1.3): ``"dzoa"`` = S1(25) (§1.3-1), ``"moments"`` =
#: the moments-accountant bound with constant 2 (§1.3-2), ``"advanced"`` = S2 Cor. 1 (§1.3-3),
#: ``"basic"`` = the sum of S4 Thm 1 (§1.3-4).
COMPOSITIONS: tuple[str, ...] = ("dzoa", "moments", "advanced", "basic")


_SIMPLE_EVENTS: tuple = ()  # (GaussianDpEvent, LaplaceDpEvent), filled on the first release


def _simple_events() -> tuple:
    global _SIMPLE_EVENTS
    if not _SIMPLE_EVENTS:
        _SIMPLE_EVENTS = (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent)
    return _SIMPLE_EVENTS


def _nonnegative(v: float) -> bool:
    return v >= 0


def _positive(v: float) -> bool:
    return v > 0


def _probability(v: float) -> bool:
    return 0 < v < 1


_CHECKS = {_nonnegative: check_nonnegative, _positive: check_positive, _probability: check_probability}


def _fast(ok, value, name: str) -> float:
    """``float(value)`` if it is a finite float/int accepted by ``ok``; else the named error of ``_checks``."""
    if type(value) in (float, int) and math.isfinite(value) and ok(value):
        return float(value)
    return _CHECKS[ok](value, name)


@dataclass(frozen=True, eq=False)
class Release:
    """One privacy-costing message of one agent in one round.

    Attributes:
        event: What the tight accountants compose, e.g. ``GaussianDpEvent(noise_multiplier)`` with
            ``noise_multiplier = sigma / l2_sensitivity`` or ``LaplaceDpEvent(scale / l1_sensitivity)``. Lists
            inside composed events are stored as tuples so that the release is hashable.
        epsilon: The per-release epsilon the source paper states (``None`` if it states none).
        delta: The per-release delta the source paper states (``0`` for pure DP, ``None`` if none).
        composition: The paper formula that composes this release (one of :data:`COMPOSITIONS`), or ``None``.
        guarantee: ``True`` when privdist enforces every assumption of ``event`` (see the module docstring);
            ``False`` makes the release the paper's claim only (guaranteed epsilon = inf).
        reason: Why the release is not a guarantee (required when ``guarantee`` is False, else ``None``).

    Raises:
        TypeError: ``event`` is not a dp-accounting ``DpEvent``.
        UnsupportedEventError: ``event`` is ``UnsupportedDpEvent`` or foreign to dp-accounting.
        ValidationError: ``epsilon <= 0``, ``delta`` outside ``[0, 1)``, a negative noise multiplier.
        UnknownNameError: ``composition`` is not one of :data:`COMPOSITIONS`.

    References:
        Spec §1.3 (paper formulas); DESIGN idea 3; STYLE #6.
    """

    event: dp_event.DpEvent
    epsilon: float | None = None
    delta: float | None = None
    composition: str | None = None
    guarantee: bool = True
    reason: str | None = None

    def __post_init__(self) -> None:
        event = self.event
        if type(event) in (_SIMPLE_EVENTS or _simple_events()):  # fast path: called for every agent of every round
            z = event.noise_multiplier
            if not (type(z) in (float, int) and math.isfinite(z) and z >= 0):
                check_nonnegative(z, f"{type(event).__name__}.noise_multiplier")
        else:
            event = freeze_event(event)
            for sub in walk_events(event):
                z = getattr(sub, "noise_multiplier", None)
                if z is not None:
                    check_nonnegative(z, f"{type(sub).__name__}.noise_multiplier")
                p = getattr(sub, "noise_parameter", None)
                if p is not None and not (check_nonnegative(p, f"{type(sub).__name__}.noise_parameter") <= 1):
                    raise ValidationError(f"{type(sub).__name__}.noise_parameter must be in [0, 1], got {p}")
        eps = None if self.epsilon is None else _fast(_positive, self.epsilon, "release epsilon")
        delta = self.delta
        if delta is not None:
            delta = _fast(_nonnegative, delta, "release delta")
            if delta >= 1:
                raise ValidationError(f"release delta must be in [0, 1), got {delta}")
        if self.composition is not None and self.composition not in COMPOSITIONS:
            raise UnknownNameError("composition", str(self.composition), COMPOSITIONS)
        if type(self.guarantee) is not bool:
            raise TypeError(f"release guarantee must be a bool, got {type(self.guarantee).__name__}")
        guarantee, reason = self.guarantee, self.reason
        if isinstance(event, dp_event.NonPrivateDpEvent) and guarantee:  # never a guarantee
            guarantee, reason = False, reason or "a data-dependent message released without noise"
        if guarantee != (reason is None):
            raise ValidationError("a release that is not a guarantee needs a reason, and only such a release has one")
        if reason is not None and (not isinstance(reason, str) or not reason.strip()):
            raise ValidationError(f"release reason must be a non-empty string, got {reason!r}")
        # Frozen: write the normalised values (and the cached hash; releases are hashed for every agent and
        # round by the ledger and the accountants' cache) straight into the instance dict.
        self.__dict__.update(event=event, epsilon=eps, delta=delta, guarantee=guarantee, reason=reason,
                             _hash=hash((event, eps, delta, self.composition, guarantee, reason)))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        return self._hash == other._hash and self._key() == other._key()

    def _key(self) -> tuple:
        return (self.event, self.epsilon, self.delta, self.composition, self.guarantee, self.reason)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # Rebuild through __init__ so that the cached hash is recomputed (str hashes differ between processes).
        return (type(self), self._key())

    def to_dict(self) -> dict:
        """Return a JSON-safe dictionary (the event serialised by :func:`~privdist.privacy.events.event_to_dict`)."""
        return {
            "event": event_to_dict(self.event),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "composition": self.composition,
            "guarantee": self.guarantee,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Release:
        """Rebuild a release written by :meth:`to_dict`.

        Raises:
            ValidationError: ``data`` is malformed.
            UnsupportedEventError: the event type cannot be restored.
        """
        keys = {"event", "epsilon", "delta", "composition", "guarantee", "reason"}
        if not isinstance(data, dict) or set(data) != keys:
            raise ValidationError(f"a serialised release must be a dict with keys {sorted(keys)}, got {data!r}")
        return cls(event_from_dict(data["event"]), data["epsilon"], data["delta"], data["composition"],
                   data["guarantee"], data["reason"])


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, constant: float = 2.0) -> float:
    """Noise std of the classical Gaussian mechanism, ``sensitivity * sqrt(constant * log(1.25/delta)) / epsilon``.

    Args:
        sensitivity: The l2 sensitivity (>= 0).
        epsilon: The per-release epsilon (> 0; the classical bound is proved for epsilon < 1).
        delta: The per-release delta, in (0, 1).
        constant: 2 for the classical mechanism; D-ZOA uses 2.1 (S1(20)).

    Returns:
        The standard deviation sigma.

    Raises:
        ValidationError: a value outside its domain (the message names it).

    References:
        Spec §1.2; Dwork & Roth, Thm A.1; S1(20).
    """
    sensitivity = check_nonnegative(sensitivity, "sensitivity")
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    constant = check_positive(constant, "constant")
    return sensitivity * math.sqrt(constant * math.log(1.25 / delta)) / epsilon


def gaussian_epsilon(noise_multiplier: float, delta: float, constant: float = 2.0) -> float:
    """Inverse of :func:`gaussian_sigma`: ``sqrt(constant * log(1.25/delta)) / noise_multiplier``.

    Args:
        noise_multiplier: sigma / l2 sensitivity (> 0).
        delta: The per-release delta, in (0, 1).
        constant: 2 (classical) or 2.1 (D-ZOA, S1(20)).

    Returns:
        The per-release epsilon the classical Gaussian-mechanism bound certifies.

    Raises:
        ValidationError: a value outside its domain.

    References:
        Spec §1.2, §2.7.
    """
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    delta = check_probability(delta, "delta")
    constant = check_positive(constant, "constant")
    return math.sqrt(constant * math.log(1.25 / delta)) / noise_multiplier


def gaussian_release(
    noise_multiplier: float,
    epsilon: float | None = None,
    delta: float | None = None,
    composition: str | None = "moments",
    *,
    reason: str | None = None,
) -> Release:
    """A Gaussian-mechanism release with noise ``sigma = noise_multiplier * l2_sensitivity``.

    When ``delta`` is given but ``epsilon`` is not, the per-release epsilon is filled in with
    :func:`gaussian_epsilon` (constant 2.1 for ``composition="dzoa"``, S1(20); 2 otherwise), so that the paper
    accountant can compose it.

    Args:
        noise_multiplier: sigma / l2 sensitivity (>= 0; 0 means the message is released in the clear).
        epsilon: Per-release epsilon stated by the paper (> 0), if any.
        delta: Per-release delta stated by the paper, in (0, 1), if any.
        composition: Paper formula that composes this release (default ``"moments"``, spec §1.3-2).
        reason: Set when privdist does not enforce the release's assumptions: the release is then the paper's
            claim, not a guarantee.

    Returns:
        The release, with event ``GaussianDpEvent(noise_multiplier)``.

    Raises:
        ValidationError: negative noise multiplier, ``epsilon <= 0``, ``delta`` outside (0, 1).
        UnknownNameError: unknown composition name.

    References:
        Spec §1.2, §1.3, §2.7, §4.7.
    """
    args = (noise_multiplier, epsilon, delta, composition, reason)
    try:
        return _gaussian_release(*args)
    except TypeError:  # an unhashable argument (e.g. a list): validated uncached, for its named error
        return _gaussian_release.__wrapped__(*args)


@functools.lru_cache(maxsize=4096, typed=True)
def _gaussian_release(noise_multiplier, epsilon, delta, composition, reason) -> Release:
    """:func:`gaussian_release`, cached: releases are immutable and algorithms declare the same one for every agent
    and round (it was ~8 % of a baseline's round in the full-mode reproduction, issue 14). Invalid arguments raise
    every time (exceptions are not cached); ``typed`` keeps e.g. ``True`` and ``1.0`` apart."""
    z = _fast(_nonnegative, noise_multiplier, "noise_multiplier")
    if delta is not None:
        delta = _fast(_probability, delta, "delta")
    if epsilon is not None:
        epsilon = _fast(_positive, epsilon, "epsilon")
    elif delta is not None and z > 0:
        epsilon = math.sqrt((2.1 if composition == "dzoa" else 2.0) * math.log(1.25 / delta)) / z
    return Release(dp_event.GaussianDpEvent(z), epsilon, delta, composition, reason is None, reason)


def laplace_release(noise_multiplier: float, composition: str | None = "basic", *,
                    reason: str | None = None) -> Release:
    """A Laplace-mechanism release: scale ``b = noise_multiplier * l1_sensitivity``, pure ``(1/noise_multiplier)``-DP.

    Args:
        noise_multiplier: scale / l1 sensitivity (> 0).
        composition: Paper formula that composes this release (default ``"basic"``, S4 Thm 1, spec §1.3-4).
        reason: Set when privdist does not enforce the release's assumptions (a claim, not a guarantee).

    Returns:
        The release, with event ``LaplaceDpEvent(noise_multiplier)``, epsilon ``1/noise_multiplier`` and delta 0.

    Raises:
        ValidationError: ``noise_multiplier <= 0``.
        UnknownNameError: unknown composition name.

    References:
        Spec §1.2, §5.6-§5.7.
    """
    z = check_positive(noise_multiplier, "noise_multiplier")
    return Release(dp_event.LaplaceDpEvent(z), 1.0 / z, 0.0, composition, reason is None, reason)


def randomized_response_parameter(epsilon: float) -> float:
    """The noise parameter ``p = 2 / (1 + e^epsilon)`` of binary randomized response with ratio exactly ``e^epsilon``.

    dp-accounting's ``RandomizedResponseDpEvent(p, 2)`` outputs the input bit with probability ``1 - p/2`` and
    the other with ``p/2``: the pair ``([1 - p/2, p/2], [p/2, 1 - p/2])``, whose likelihood ratio is
    ``(2 - p) / p = e^epsilon``. Computed as ``2 e^-eps / (1 + e^-eps)`` (no overflow for a large epsilon).

    Raises:
        ValidationError: ``epsilon <= 0`` or not finite.
    """
    eps = check_positive(epsilon, "epsilon")
    return 2.0 * math.exp(-eps) / (1.0 + math.exp(-eps))


def pure_release(epsilon: float, composition: str | None = "basic", *, uses: int = 1,
                 reason: str | None = None) -> Release:
    """A release of any pure ``epsilon``-DP mechanism, declared through the dominating pair of pure DP.

    Every ``epsilon``-DP mechanism is post-processing-dominated by binary randomized response with ratio
    ``e^epsilon`` (Kairouz, Oh & Viswanath 2015, "The composition theorem for differential privacy", Thm 2.4 and the
    optimal composition Thm 3.3): composing these pairs is the worst case of composing ``epsilon``-DP releases, so
    the accountants' value is a proven bound for the Gamma-norm mechanism, objective perturbation and the
    d-dimensional Laplace mechanism (whose 1-D Laplace stand-in was an unproven assumption, issue 24). The event is
    ``RandomizedResponseDpEvent(randomized_response_parameter(epsilon), 2)``; ``uses > 1`` composes ``uses`` such
    releases into one message as ``SelfComposedDpEvent(..., uses)`` (never one event of ``uses * epsilon``).

    Args:
        epsilon: The pure epsilon of one use (> 0).
        composition: Paper formula that composes the release (default ``"basic"``, spec §1.3-4).
        uses: Number of ``epsilon``-DP uses composed into this message (>= 1).
        reason: Set when privdist does not enforce the release's assumptions (a claim, not a guarantee).

    Returns:
        The release, with per-release (paper) epsilon ``uses * epsilon`` (basic composition of the uses) and delta 0.

    Raises:
        ValidationError: ``epsilon <= 0``, ``uses < 1``.
        UnknownNameError: unknown composition name.

    References:
        Spec §1.2-§1.3; Kairouz, Oh & Viswanath (ICML 2015 / IEEE T-IT 2017).
    """
    args = (epsilon, composition, uses, reason)
    try:
        return _pure_release(*args)
    except TypeError:  # an unhashable argument: validated uncached, for its named error
        return _pure_release.__wrapped__(*args)


@functools.lru_cache(maxsize=4096, typed=True)
def _pure_release(epsilon, composition, uses, reason) -> Release:
    eps = _fast(_positive, epsilon, "epsilon")
    if type(uses) is not int or uses < 1:
        raise ValidationError(f"uses must be an int >= 1, got {uses!r}")
    event = dp_event.RandomizedResponseDpEvent(randomized_response_parameter(eps), 2)
    if uses > 1:
        event = dp_event.SelfComposedDpEvent(event, uses)
    return Release(event, eps * uses, 0.0, composition, reason is None, reason)


def non_private_release(reason: str) -> Release:
    """A data-dependent message sent without noise: ``NonPrivateDpEvent``, epsilon = inf under every accountant.

    Args:
        reason: What is released in the clear, e.g. ``"consensus ADMM: iterates sent without noise"``.

    Raises:
        ValidationError: ``reason`` is empty.
    """
    return Release(dp_event.NonPrivateDpEvent(), None, None, None, False, reason)


def claimed(release: Release, reason: str) -> Release:
    """``release`` as the paper's claim only: same event and paper epsilon, ``guarantee=False`` with ``reason``.

    Args:
        release: A release (a guarantee or already a claim).
        reason: Why privdist does not enforce its assumptions.
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a Release, got {type(release).__name__}")
    return Release(release.event, release.epsilon, release.delta, release.composition, False, reason)
