"""The DP range step of a job across organisations (issue 38): the plan's range step with each party in its own
process.

:class:`RangeHistograms` is the plan's range step (:class:`~privdist.privacy.range_plan.RangePlan`) as a one-round
protocol of the parties, run by :func:`privdist.run` on the coordinator's
:class:`~privdist.runtime.remote.backend.RemoteBackend` like the training: each party bins its own rows of the step's
columns on the public grid and its :class:`~privdist.privacy.range_plan.HistogramNoise` draws the noise, from the
same stream as the in-process step (:func:`~privdist.runtime.rng.step_generator` ``(seed, "ranges", k)``, fresh OS
entropy in secure mode), and declares the release. Under secure aggregation the noisy integer counts are a
``SECURE_SUM`` message (masked where the party runs, only the sum reaches the coordinator); under local trust each
party's noisy counts are gathered in the clear (each is a DP release). The coordinator adds them up, in party order as
the in-process step does, so a seeded job's bounds are the estimator's to the bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..algorithms.base import AlgorithmBase
from ..contract import Aggregation, MessageSpec

__all__ = ["RangeHistograms", "RangeRows", "range_total"]


class RangeRows:
    """The problem of :class:`RangeHistograms`: a party holds its rows of the step's columns (``rows``, its own
    process) or nothing (the coordinator: public facts only)."""

    party_local = True
    kind = "range_step"

    def __init__(self, n_parties: int, n_rows: int, party: int | None = None, rows=None):
        self.n_agents = self.n_agents_total = int(n_parties)
        self.n_rows, self.party, self.rows = int(n_rows), party, rows
        self.public = {"rows": int(n_rows)}

    def subset(self, agents):
        agents = [int(a) for a in np.asarray(agents).ravel()]
        if agents != [self.party] or self.rows is None:
            from ..runtime.party import PooledDataUnavailableError

            raise PooledDataUnavailableError(f"party {self.party} holds only its own rows, not those of {agents}")
        return self.rows

    def describe(self) -> dict:
        return {"kind": self.kind, "parties": self.n_agents, "public": dict(self.public)}


@dataclass(frozen=True)
class RangeHistograms(AlgorithmBase):
    """The range step ``plan`` (a :class:`~privdist.privacy.range_plan.RangePlan`) as one round of the parties;
    ``colluding``: parties assumed to collude with the aggregator (secure aggregation)."""

    plan: object
    colluding: int = 0
    name: ClassVar[str] = "range_histograms"
    has_coordinator: ClassVar[bool] = True

    @property
    def secure(self) -> bool:
        return self.plan.kind == "skellam"

    def _dim(self) -> int:
        from ..privacy.dp_ranges import GRID

        return self.plan.width * (GRID.size - 1)

    def messages(self, problem, network):
        if not self.secure:
            return (MessageSpec("counts", (self._dim(),), Aggregation.GATHER),)
        from ..privacy.secure_params import MAX_BITS

        mech = self.plan.mechanism(0)
        need = problem.n_rows + 40.0 * math.sqrt(mech.variance * problem.n_agents / self.plan.shares)
        bits = int(min(MAX_BITS, max(32, math.ceil(math.log2(max(need, 1.0))) + 2)))
        return (MessageSpec("counts", (self._dim(),), Aggregation.SECURE_SUM, bits),)

    def init(self, problem, network, block, rng):
        from ..privacy.dp_ranges import GRID, bin_counts

        rows = problem.subset(block.agents)
        counts = bin_counts(rows, GRID)
        return {"counts": counts, "party": int(block.agents[0])}, {"counts": self._silent(block.size)}

    def _silent(self, n: int):
        return np.zeros((n, self._dim()), dtype=np.int64 if self.secure else float)

    def step(self, state, inbox, t, rng):
        from ..runtime.rng import step_generator

        if t != 1:
            return state, {"counts": self._silent(1)}
        k = state["party"]
        mech = self.plan.mechanism(k)
        counts = state["counts"] if mech.kind == "gaussian" else state["counts"].astype(np.int64).ravel()
        noisy = mech.privatize(counts, step_generator(rng.seed, "ranges", k, rng.secure))
        return state, {"counts": np.asarray(noisy).reshape(1, -1)}

    def dp_events(self, state, t):
        return [self.plan.mechanism(state["party"]).release() if t == 1 else None]

    def _honest(self, present) -> int:
        return max(1, int(np.asarray(present, dtype=bool).sum()) - self.colluding)

    def weaker_sum(self, present) -> bool:
        """Whether a sum of the parties ``present`` holds fewer honest shares than the plan's release assumes."""
        return self._honest(present) < int(self.plan.mechanism(0).honest)

    def secure_events(self, t: int, present, problem) -> list:
        from dataclasses import replace

        present = np.asarray(present, dtype=bool)
        if t != 1:
            return [None] * present.size
        release = replace(self.plan.mechanism(0), honest=self._honest(present)).release()
        return [release if p else None for p in present]

    def estimate(self, state):
        return np.zeros((1, 1))

    def init_coordinator(self, problem, network, rng):
        return {"total": None}, {}

    def step_coordinator(self, cstate, inbox, t, rng):
        if t == 1:
            counts = np.asarray(inbox["counts"])
            if self.secure:
                total = counts.astype(float)
            else:  # party by party, as the in-process step adds them (the same float sum)
                total = 0
                for row in counts:
                    total = total + row
            cstate = {"total": np.asarray(total, dtype=float).reshape(self.plan.width, -1)}
        return cstate, {}


def range_total(plan, total, n_rows: int, n_parties: int):
    """``(bounds, fallback, noise_std)`` from the summed noisy counts (post-processing, public noise std)."""
    noise_std = plan.sum_noise_std(range(n_parties), n_parties)
    bounds, fallback = plan.bounds_from(total, n_rows, noise_std)
    return bounds, fallback, noise_std
