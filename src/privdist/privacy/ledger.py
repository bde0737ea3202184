"""Per-agent privacy ledger: every privacy-costing release, run-length compressed (STYLE #7, DESIGN idea 3).

The runtime records, each round, the release of every agent (:meth:`PrivacyLedger.record_round`); the
accountants read :meth:`PrivacyLedger.entries`. Consecutive equal releases of an agent merge into one
``(release, count)`` entry, so a run of ``T`` identical Gaussian releases costs one entry and is composed as
``SelfComposedDpEvent(event, T)``, never by looping over rounds.

Recording is cheap: a round whose agents and releases equal the previous round's (the common case of a
fixed noise level) only increments a counter; the per-agent runs are updated when the pattern changes or
when they are read.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._checks import check_int
from ..errors import ShapeMismatchError, ValidationError
from .release import Release

__all__ = ["PrivacyLedger"]

_FORMAT = "privdist.ledger/2"


class PrivacyLedger:
    """Releases of each of ``n_agents`` agents, in order, as run-length compressed ``(release, count)`` entries.

    Args:
        n_agents: Number of agents (>= 1).

    Raises:
        TypeError / ValidationError: ``n_agents`` is not an integer >= 1.

    References:
        Spec §1.3 (the report's ``assumptions`` field); DESIGN idea 3; STYLE #6-#7.
    """

    __hash__ = None  # mutable

    def __init__(self, n_agents: int):
        self._n = check_int(n_agents, "n_agents")
        self._runs: list[list[list[Any]]] = [[] for _ in range(self._n)]
        self._assumptions: list[str] = []
        self._exposures: list[str] = []
        self._block_agents: tuple[int, ...] | None = None
        self._block_releases: tuple[Release | None, ...] | None = None
        self._block_count = 0
        self._valid_agents: tuple[int, ...] | None = None  # last agent tuple that passed validation

    # ------------------------------------------------------------------ recording
    @property
    def n_agents(self) -> int:
        """Number of agents."""
        return self._n

    def _agent(self, agent, name: str = "agent") -> int:
        if isinstance(agent, bool) or not isinstance(agent, numbers.Integral):
            raise TypeError(f"{name} must be an integer agent id, got {type(agent).__name__}")
        if not 0 <= agent < self._n:
            raise ValidationError(f"{name} must be in [0, {self._n}), got {agent}")
        return int(agent)

    @staticmethod
    def _release(release, name: str) -> Release:
        if not isinstance(release, Release):
            raise TypeError(f"{name} must be a Release, got {type(release).__name__}")
        return release

    def _append(self, agent: int, release: Release, count: int) -> None:
        runs = self._runs[agent]
        if runs and (runs[-1][0] is release or runs[-1][0] == release):
            runs[-1][1] += count
        else:
            runs.append([release, count])

    def _flush(self) -> None:
        if self._block_agents is None:
            return
        agents, releases, count = self._block_agents, self._block_releases, self._block_count
        self._block_agents = self._block_releases = None
        self._block_count = 0
        all_runs = self._runs
        for a, r in zip(agents, releases):
            if r is None:
                continue
            runs = all_runs[a]
            if runs:
                last = runs[-1]
                if last[0] is r or last[0] == r:
                    last[1] += count
                    continue
            runs.append([r, count])

    def record(self, agent: int, release: Release, count: int = 1) -> None:
        """Record ``count`` consecutive releases ``release`` of ``agent``.

        Raises:
            TypeError: ``agent``/``count`` not integers, ``release`` not a :class:`Release`.
            ValidationError: ``agent`` outside ``[0, n_agents)`` or ``count < 1``.
        """
        agent = self._agent(agent)
        release = self._release(release, "release")
        count = check_int(count, "count")
        self._flush()
        self._append(agent, release, count)

    def record_round(self, agents: Sequence[int] | np.ndarray | None, releases: Sequence[Release | None]) -> None:
        """Record one round: ``releases[j]`` is what agent ``agents[j]`` released (``None``: nothing).

        Args:
            agents: Agent ids (distinct), aligned with ``releases``; ``None`` means all agents ``0..n-1``.
            releases: One :class:`Release` or ``None`` per agent id.

        Raises:
            ShapeMismatchError: ``agents`` and ``releases`` differ in length.
            TypeError: a non-integer agent id or a release that is neither a Release nor None.
            ValidationError: an agent id out of range or repeated.
        """
        if agents is None:
            agents_t = tuple(range(self._n))
        elif isinstance(agents, np.ndarray):
            agents_t = tuple(agents.tolist())
        else:
            agents_t = tuple(agents)
        releases_t = tuple(releases)
        if (
            self._block_agents is not None
            and releases_t == self._block_releases
            and agents_t == self._block_agents
        ):
            self._block_count += 1
            return
        if len(agents_t) != len(releases_t):
            raise ShapeMismatchError(
                f"record_round got {len(agents_t)} agent ids but {len(releases_t)} releases"
            )
        if agents_t != self._valid_agents:
            agents_t = tuple(self._agent(a, f"agents[{j}]") for j, a in enumerate(agents_t))
            if len(set(agents_t)) != len(agents_t):
                raise ValidationError("record_round got a repeated agent id in agents")
            self._valid_agents = agents_t
        else:
            agents_t = self._valid_agents
        for r in {id(r): r for r in releases_t}.values():
            if r is not None and type(r) is not Release:
                self._release(r, f"releases[{releases_t.index(r)}]")
        self._flush()
        self._block_agents, self._block_releases, self._block_count = agents_t, releases_t, 1

    # ------------------------------------------------------------------ reading
    def entries(self, agent: int) -> list[tuple[Release, int]]:
        """The run-length compressed releases of ``agent``, in order, as ``(release, count)`` pairs."""
        agent = self._agent(agent)
        self._flush()
        return [(r, c) for r, c in self._runs[agent]]

    def entry_key(self, agent: int) -> tuple[tuple[Release, int], ...]:
        """:meth:`entries` as a hashable tuple (agents with equal keys have identical privacy loss)."""
        agent = self._agent(agent)
        self._flush()
        return tuple((r, c) for r, c in self._runs[agent])

    def n_releases(self, agent: int) -> int:
        """Total number of releases of ``agent`` (the sum of the entry counts)."""
        agent = self._agent(agent)
        self._flush()
        return sum(c for _, c in self._runs[agent])

    @property
    def assumptions(self) -> list[str]:
        """Caveats of the privacy analysis (deduplicated, in the order added); a copy."""
        return list(self._assumptions)

    def add_assumption(self, text: str) -> None:
        """Record a caveat such as ``"Gaussianity assumed"`` (ignored if already present)."""
        _add_unique(self._assumptions, text, "an assumption")

    @property
    def exposures(self) -> list[str]:
        """Named exposures of the protocol that no DP event covers (e.g. labels an algorithm broadcasts in the
        clear); deduplicated, in the order added; a copy."""
        return list(self._exposures)

    def add_exposure(self, text: str) -> None:
        """Record a named exposure (ignored if already present)."""
        _add_unique(self._exposures, text, "an exposure")

    # ------------------------------------------------------------------ copies, merging, equality
    def copy(self) -> PrivacyLedger:
        """An independent copy (releases are immutable and shared)."""
        self._flush()
        new = PrivacyLedger(self._n)
        new._runs = [[[r, c] for r, c in runs] for runs in self._runs]
        new._assumptions = list(self._assumptions)
        new._exposures = list(self._exposures)
        return new

    def merge(self, other: PrivacyLedger) -> PrivacyLedger:
        """A new ledger with ``other``'s releases after this one's, per agent (sequential composition).

        Raises:
            TypeError: ``other`` is not a PrivacyLedger.
            ShapeMismatchError: the ledgers have different numbers of agents.
        """
        if not isinstance(other, PrivacyLedger):
            raise TypeError(f"can only merge a PrivacyLedger, got {type(other).__name__}")
        if other.n_agents != self._n:
            raise ShapeMismatchError(f"cannot merge a ledger of {other.n_agents} agents into one of {self._n}")
        new = self.copy()
        for agent in range(self._n):
            for r, c in other.entries(agent):
                new._append(agent, r, c)
        for text in other.assumptions:
            new.add_assumption(text)
        for text in other.exposures:
            new.add_exposure(text)
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivacyLedger):
            return NotImplemented
        if self._n != other._n or self._assumptions != other._assumptions or self._exposures != other._exposures:
            return False
        self._flush()
        other._flush()
        return all(a == b for a, b in zip(self._runs, other._runs))

    def __repr__(self) -> str:
        total = sum(self.n_releases(a) for a in range(self._n))
        return f"PrivacyLedger(n_agents={self._n}, releases={total}, assumptions={len(self._assumptions)})"

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dictionary: distinct releases once, then per-agent ``[release_index, count]`` runs.

        Raises:
            UnsupportedEventError: a release's event cannot be serialised.
        """
        self._flush()
        index: dict[Release, int] = {}
        table: list[dict] = []
        runs_out = []
        for runs in self._runs:
            row = []
            for r, c in runs:
                if r not in index:
                    index[r] = len(table)
                    table.append(r.to_dict())
                row.append([index[r], c])
            runs_out.append(row)
        return {
            "format": _FORMAT,
            "n_agents": self._n,
            "releases": table,
            "runs": runs_out,
            "assumptions": list(self._assumptions),
            "exposures": list(self._exposures),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyLedger:
        """Rebuild a ledger written by :meth:`to_dict`.

        Raises:
            ValidationError: ``data`` is malformed (wrong format tag, keys, indices or counts).
            UnsupportedEventError: an event type cannot be restored.
        """
        keys = {"format", "n_agents", "releases", "runs", "assumptions", "exposures"}
        if not isinstance(data, dict) or set(data) != keys or data["format"] != _FORMAT:
            raise ValidationError(f"not a serialised privdist ledger ({_FORMAT} with keys {sorted(keys)})")
        ledger = cls(data["n_agents"])
        table = [Release.from_dict(r) for r in data["releases"]]
        runs = data["runs"]
        if not isinstance(runs, list) or len(runs) != ledger.n_agents:
            raise ValidationError(f"serialised ledger must have {ledger.n_agents} run lists")
        for agent, row in enumerate(runs):
            for item in row:
                if not (isinstance(item, list) and len(item) == 2):
                    raise ValidationError(f"malformed run {item!r} of agent {agent}")
                i, c = item
                if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(table):
                    raise ValidationError(f"release index {i!r} of agent {agent} out of range")
                ledger.record(agent, table[i], c)
        for text in _string_list(data["assumptions"]):
            ledger.add_assumption(text)
        for text in _string_list(data["exposures"]):
            ledger.add_exposure(text)
        return ledger


def _add_unique(texts: list[str], text: str, what: str) -> None:
    """Append a non-empty string to ``texts`` unless already there (assumptions, exposures)."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"{what} must be a non-empty string, got {text!r}")
    if text not in texts:
        texts.append(text)


def _string_list(values: Iterable) -> Iterable[str]:
    if not isinstance(values, list):
        raise ValidationError(f"assumptions must be a list of strings, got {type(values).__name__}")
    return values
