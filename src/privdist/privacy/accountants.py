"""Accountants: turn a per-agent ledger into epsilon per agent (DESIGN idea 3, STYLE #6-#7).

Three accountants, computed side by side:

* ``"paper"``: the source paper's own closed-form composition (:func:`privdist.privacy.paper.paper_bound`),
  with the per-release ``(epsilon, delta)`` and formula the releases declare (spec §1.3).
* ``"rdp"``: :class:`dp_accounting.rdp.RdpAccountant` (default orders) at the requested delta.
* ``"pld"``: :class:`dp_accounting.pld.PLDAccountant` (default discretization) at the requested delta.

Each agent's entries are composed as one event: ``SelfComposedDpEvent(event, count)`` per entry, never a loop
over counts. Gaussian entries are first merged into a single ``GaussianDpEvent`` with noise multiplier
``(sum_i count_i / z_i^2)^{-1/2}``; this is exact (a composition of Gaussian mechanisms is a Gaussian
mechanism, Dong, Roth & Su 2019, Cor. 3.3; RDP adds ``alpha/(2 z^2)`` per release) and is what dp-accounting
itself does for ``SelfComposedDpEvent`` of a Gaussian in its PLD accountant. When an agent's composition is a
single Gaussian, the ``pld`` value is computed with dp-accounting's exact Gaussian conversion
(``gaussian_mechanism.get_epsilon_gaussian``, Balle & Wang 2018), which is the PLD accountant's value without
discretization error (they agree to ~1e-8) and takes milliseconds where the discretized PLD of a 1000-fold
composition takes seconds to minutes.

Pure-DP releases (Gamma-norm, objective perturbation, d-dim Laplace: :func:`~privdist.privacy.release.pure_release`)
are ``RandomizedResponseDpEvent`` s, the dominating pair of pure DP; they are composed by :mod:`privdist.privacy.pure`
(``pld``: exactly for one repeated epsilon, Kairouz et al. 2015 Thm 3.3; by PLD otherwise) and by the RDP accountant
under its ``REPLACE_ONE`` relation (the flipped bit).

Skellam releases (distributed discrete noise of a secure sum, :mod:`privdist.privacy.skellam`, issue 27) have an RDP
bound proved at integer orders only and no published PLD: an agent whose composition holds one is composed by
:class:`~privdist.privacy.skellam.SkellamRdpAccountant` (dp-accounting's RDP accountant on integer orders, with the
other events composed by dp-accounting itself), and its ``pld`` value is that RDP value. The report names what
computed each agent's guarantee (``guarantee_accountant``: ``"pld"`` or ``"skellam_rdp"``), so that no label calls
the Skellam bound a PLD value.

Results are cached by identical entry sequences, so 1000 agents with equal releases cost one accounting.

**Guarantee and claim** (DESIGN idea 3, :mod:`privdist.privacy.release`). The ``rdp`` and ``pld`` values of an
agent are its *guarantee*: ``inf`` as soon as one of its releases is not a guarantee (an assumption privdist does
not enforce, a noise model the mechanism does not draw) or is sent in the clear (``NonPrivateDpEvent``). The
``paper`` value is the source paper's *claim* (its own formula over the declared releases). The report also gives
``claimed``: the RDP/PLD composition of the releases *as declared* (equal to the guarantee when every release is
one), so that a paper's noise model can be composed tightly and audited (``privdist audit --claim paper``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from .._checks import check_int, check_probability
from .._lazy import lazy
from ..errors import UnknownNameError, UnsupportedEventError
from .ledger import PrivacyLedger
from .paper import paper_bound
from .pure import has_randomized_response, pure_pld_epsilon
from .events import walk_events
from .release import Release

# dp-accounting is imported on first use (start-up time of the CLI and of non-private runs)
dp_event = lazy("dp_accounting.dp_event")
_pa = lazy("dp_accounting.privacy_accountant")
_pld = lazy("dp_accounting.pld")
_rdp = lazy("dp_accounting.rdp")
_gaussian = lazy("dp_accounting.gaussian_mechanism")  # dp-accounting >= 0.4.4 (pinned in pyproject)

__all__ = ["ACCOUNTANTS", "SKELLAM_RDP", "agent_epsilon", "composed_event", "guarantee_accountant", "privacy_report",
           "clear_accountant_cache"]

#: Names of the accountants, in report order.
ACCOUNTANTS: tuple[str, ...] = ("paper", "rdp", "pld")


def _check_accountant(name: str) -> str:
    if name not in ACCOUNTANTS:
        raise UnknownNameError("accountant", str(name), ACCOUNTANTS)
    return name


def _entries_tuple(entries) -> tuple[tuple[Release, int], ...]:
    out = []
    for j, item in enumerate(entries):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"entries[{j}] must be a (Release, count) pair, got {item!r}")
        release, count = item
        if not isinstance(release, Release):
            raise TypeError(f"entries[{j}] must hold a Release, got {type(release).__name__}")
        out.append((release, check_int(count, f"entries[{j}] count")))
    return tuple(out)


def composed_event(entries: Sequence[tuple[Release, int]]) -> dp_event.DpEvent | None:
    """The single dp-accounting event of a sequence of ``(release, count)`` entries.

    Gaussian entries (noise multiplier ``z_i > 0``) merge into ``GaussianDpEvent((sum count_i/z_i^2)^-1/2)``
    (exact, see the module docstring); other entries become ``SelfComposedDpEvent(event, count)``; ``NoOpDpEvent``
    entries are dropped.

    Args:
        entries: ``(release, count)`` pairs, e.g. ``PrivacyLedger.entries(agent)``.

    Returns:
        The event, or ``None`` when nothing privacy-costing was released.
    """
    inv_sq = 0.0
    others: list[dp_event.DpEvent] = []
    for release, count in entries:
        event = release.event
        if isinstance(event, dp_event.NoOpDpEvent):
            continue
        if isinstance(event, dp_event.GaussianDpEvent) and event.noise_multiplier > 0:
            inv_sq += count / event.noise_multiplier**2
        else:
            others.append(event if count == 1 else dp_event.SelfComposedDpEvent(event, count))
    events = ([dp_event.GaussianDpEvent(1.0 / math.sqrt(inv_sq))] if inv_sq > 0 else []) + others
    if not events:
        return None
    return events[0] if len(events) == 1 else dp_event.ComposedDpEvent(tuple(events))


def _has_privdist_event(event: dp_event.DpEvent) -> bool:
    return any(getattr(e, "privdist_event", False) for e in walk_events(event))


#: ``guarantee_accountant`` of an agent whose composition holds a Skellam release: its ``rdp`` and ``pld`` values are
#: both the Skellam RDP bound (no PLD is published for the mechanism).
SKELLAM_RDP = "skellam_rdp"


def guarantee_accountant(entries: Sequence[tuple[Release, int]]) -> str:
    """What computes the guarantee (the ``pld`` value) of these entries: :data:`SKELLAM_RDP` when one of them is a
    Skellam release (:class:`~privdist.privacy.skellam.SkellamRdpAccountant`), else ``"pld"`` (dp-accounting's PLD
    accountant, its exact Gaussian conversion or :mod:`privdist.privacy.pure`)."""
    event = composed_event(_entries_tuple(entries))
    return SKELLAM_RDP if event is not None and _has_privdist_event(event) else "pld"


def _tight_epsilon(event: dp_event.DpEvent, delta: float, accountant: str) -> float:
    if _has_privdist_event(event):  # Skellam releases: their RDP bound, for "rdp" and "pld" alike (module docstring)
        from .skellam import SkellamRdpAccountant

        relation = _pa.NeighboringRelation.REPLACE_ONE if has_randomized_response(event) else None
        acc = SkellamRdpAccountant(neighboring_relation=relation)
        if not acc.supports(event):
            raise UnsupportedEventError(f"the {accountant} accountant cannot compose event {event}")
        acc.compose(event)
        return float(acc.get_epsilon(delta))
    if accountant == "pld" and isinstance(event, dp_event.GaussianDpEvent):
        return float(_gaussian.get_epsilon_gaussian(event.noise_multiplier, delta))
    if has_randomized_response(event):  # pure-DP releases: the REPLACE_ONE pair (see _pure_pld_epsilon)
        if accountant == "pld":
            return pure_pld_epsilon(event, delta)
        acc = _rdp.RdpAccountant(neighboring_relation=_pa.NeighboringRelation.REPLACE_ONE)
    else:
        acc = _rdp.RdpAccountant() if accountant == "rdp" else _pld.PLDAccountant()
    if not acc.supports(event):
        raise UnsupportedEventError(f"the {accountant} accountant cannot compose event {event}")
    try:
        acc.compose(event)
    except _pa.UnsupportedEventError as exc:  # pragma: no cover - supports() checked above
        raise UnsupportedEventError(f"the {accountant} accountant cannot compose event {event}: {exc}") from exc
    return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=4096)
def _cached_epsilon(
    entries: tuple[tuple[Release, int], ...], delta: float, accountant: str, delta_prime: float | None,
    claim: bool = False,
) -> tuple[float | None, float | None]:
    """(epsilon, certified delta) of one entry sequence under one accountant (``claim``: ignore the guarantee
    flags and compose the events as declared)."""
    if accountant == "paper":
        bound = paper_bound(entries, delta_prime)
        return bound.epsilon, bound.delta
    if any(isinstance(r.event, dp_event.NonPrivateDpEvent) for r, _ in entries):
        return math.inf, delta
    if not claim and not all(r.guarantee for r, _ in entries):
        return math.inf, delta
    event = composed_event(entries)
    if event is None:
        return 0.0, delta
    return _tight_epsilon(event, delta, accountant), delta


def clear_accountant_cache() -> None:
    """Forget cached results (for benchmarks; results never go stale, entries are immutable)."""
    _cached_epsilon.cache_clear()


def agent_epsilon(
    entries: Sequence[tuple[Release, int]],
    delta: float,
    accountant: str,
    *,
    delta_prime: float | None = None,
    claim: bool = False,
) -> float | None:
    """Epsilon of one agent's releases under one accountant.

    Args:
        entries: ``(release, count)`` pairs, e.g. ``PrivacyLedger.entries(agent)``.
        delta: Target delta of the ``rdp`` and ``pld`` accountants, in (0, 1). The ``paper`` accountant
            uses the releases' own delta instead (its certified total delta is in ``privacy_report``).
        accountant: ``"paper"``, ``"rdp"`` or ``"pld"``.
        delta_prime: Slack of advanced composition for ``paper`` (default the releases' delta, AMB-V6).
        claim: for ``rdp``/``pld``, compose the releases as declared even where they are not guarantees.

    Returns:
        The epsilon; ``0.0`` when nothing privacy-costing was released; ``inf`` for a release in the clear or
        (unless ``claim``) a release that is not a guarantee; ``None`` when the paper formula does not apply (see
        ``paper_bound(entries).reason``).

    Raises:
        UnknownNameError: unknown accountant name.
        UnsupportedEventError: an event the accountant cannot compose.
        ValidationError: ``delta`` or ``delta_prime`` outside (0, 1).
        TypeError: ``entries`` are not ``(Release, int)`` pairs.

    References:
        Spec §1.3; DESIGN idea 3.
    """
    _check_accountant(accountant)
    delta = check_probability(delta, "delta")
    if delta_prime is not None:
        delta_prime = check_probability(delta_prime, "delta_prime")
    return _cached_epsilon(_entries_tuple(entries), delta, accountant, delta_prime, claim)[0]


def _paper_note(entries, eps: dict, claimed: dict) -> str | None:
    """Why the paper's claim is not a valid bound for these releases, if it is not."""
    notes = []
    paper, pld = eps.get("paper"), claimed.get("pld")
    if paper is not None and pld is not None and math.isfinite(pld) and paper < pld * (1 - 1e-9):
        notes.append(f"the paper's formula ({paper:.4g}) is below the exact PLD epsilon ({pld:.4g}) of the very "
                     "releases it composes, so it is not a valid upper bound for these parameters")
    big = [r.epsilon for r, _ in entries if isinstance(r.event, dp_event.GaussianDpEvent)
           and r.composition in ("dzoa", "moments", "advanced") and r.epsilon is not None and r.epsilon >= 1]
    if big:
        notes.append(f"the per-release epsilon {max(big):.4g} >= 1 comes from the classical Gaussian-mechanism bound "
                     "sigma = Delta sqrt(2 log(1.25/delta))/epsilon, which is proved only for epsilon < 1")
    return "; ".join(notes) or None


def privacy_report(
    ledger: PrivacyLedger,
    delta: float,
    accountants: Sequence[str] = ACCOUNTANTS,
    *,
    delta_prime: float | None = None,
    protocol=None,
    observers=None,
    pairwise_rtol: float = 1e-3,
) -> dict[str, Any]:
    """Epsilon of every agent of ``ledger``: the guarantee (RDP, PLD) beside the paper's claim.

    Args:
        ledger: The ledger of a run.
        delta: Target delta of ``rdp``/``pld``, in (0, 1).
        accountants: Accountant names to compute (default all three, in :data:`ACCOUNTANTS` order).
        delta_prime: Slack of advanced composition for ``paper`` (AMB-V6).
        protocol: the run's linear-Gaussian model (``algorithm.linear_protocol(...)``): adds ``"pairwise"``, the
            per-pair (observer x target) accounting of :func:`privdist.privacy.pairwise.network_report.pairwise_report`.
        observers: its observer sets (default: every agent, or a sample beyond 200 agents).
        pairwise_rtol: the per-pair values' relative gap (in ``mu^2``) to an attained value (``rtol`` of
            :func:`~privdist.privacy.pairwise.network_report.pairwise_report`).

    Returns:
        ``{"delta": delta, "paper_delta": <largest total delta the paper formula certifies over agents, or None>,
        "per_agent": [{"agent": k, "releases": n, "guaranteed": bool, "epsilon": {name: float | None, ...},
        "claimed": {"rdp"/"pld": float}, "paper_note": str | None, "guarantee_accountant": "pld" | "skellam_rdp"},
        ...], "not_guaranteed": [reasons],
        "exposures": [...], "assumptions": [...]}``. ``epsilon["rdp"]``/``["pld"]`` are the *guarantee* (``inf``
        where a release is not a guarantee or is in the clear); ``epsilon["paper"]`` is the paper's *claim*;
        ``claimed`` composes the declared releases with RDP/PLD regardless of the guarantee flags (equal to the
        guarantee when ``guaranteed``); ``paper_note`` says when the paper's formula is below the exact PLD value
        of the releases it composes; ``guarantee_accountant`` names what computed the ``pld`` value
        (:func:`guarantee_accountant`: ``"skellam_rdp"`` = the Skellam RDP bound, repeated in the ``rdp`` value).
        ``guaranteed`` is False for an agent with any non-guaranteed release and
        for a non-private agent; an agent that released nothing is guaranteed with epsilon 0.

    Raises:
        UnknownNameError: unknown accountant name.
        UnsupportedEventError: an event an accountant cannot compose.
        ValidationError: ``delta``/``delta_prime`` outside (0, 1).

    References:
        Spec §1.3 (``PrivacyReport`` with assumptions); DESIGN idea 3.
    """
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    names = [_check_accountant(a) for a in accountants]
    delta = check_probability(delta, "delta")
    if delta_prime is not None:
        delta_prime = check_probability(delta_prime, "delta_prime")
    groups: dict[tuple, dict] = {}
    per_agent = []
    paper_delta = None
    reasons: list[str] = []
    for agent in range(ledger.n_agents):
        key = ledger.entry_key(agent)
        if key not in groups:
            eps: dict[str, float | None] = {}
            claimed: dict[str, float | None] = {}
            certified = None
            for name in names:
                value, total_delta = _cached_epsilon(key, delta, name, delta_prime, False)
                eps[name] = value
                if name == "paper" and value is not None and key:
                    certified = total_delta
                elif name != "paper":
                    claimed[name] = _cached_epsilon(key, delta, name, delta_prime, True)[0]
            why = list(dict.fromkeys(r.reason for r, _ in key if not r.guarantee))
            groups[key] = {"eps": eps, "claimed": claimed, "certified": certified, "why": why,
                           "note": _paper_note(key, eps, claimed), "by": guarantee_accountant(key)}
        g = groups[key]
        if g["certified"] is not None:
            paper_delta = g["certified"] if paper_delta is None else max(paper_delta, g["certified"])
        reasons += [w for w in g["why"] if w not in reasons]
        per_agent.append({"agent": agent, "releases": sum(c for _, c in key), "guaranteed": not g["why"],
                          "epsilon": dict(g["eps"]), "claimed": dict(g["claimed"]), "paper_note": g["note"],
                          "guarantee_accountant": g["by"]})
    report = {"delta": delta, "paper_delta": paper_delta, "per_agent": per_agent, "not_guaranteed": reasons,
              "exposures": ledger.exposures, "assumptions": ledger.assumptions}
    if protocol is not None:
        from .pairwise.network_report import pairwise_report

        report["pairwise"] = pairwise_report(protocol, ledger, delta, observers, rtol=pairwise_rtol)
    return report
