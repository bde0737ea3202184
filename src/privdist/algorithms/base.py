"""Shared plumbing of algorithm factories (STYLE #1: hyperparameters in the factory, state elsewhere)."""

from __future__ import annotations

import abc
import dataclasses
import functools
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .._checks import check_int
from ..errors import ShapeMismatchError, UnknownNameError, ValidationError

if TYPE_CHECKING:  # the privacy layer is imported where a release is made (start-up time)
    from ..privacy import Mechanism, Release

__all__ = ["AlgorithmBase", "Budgeted", "PerIterationGaussian", "check_problem_network", "degrees_of", "in_the_clear"]


class AlgorithmBase:
    """Mixin for frozen-dataclass algorithm factories: ``params()``, no coordinator, no caveats by default."""

    name: str = ""
    has_coordinator: bool = False

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def assumptions(self) -> list[str]:
        return []

    def exposures(self) -> list[str]:
        """Named exposures of the protocol that no DP event covers (e.g. labels sent in the clear)."""
        return []

    def step_many(self, requests: list, t: int) -> list:
        """``step`` for several independent runs at once (``requests``: ``(state, inbox, rng)`` per run; returns
        ``(state, outbox)`` per run). One run at a time by default; algorithms bound by per-step overhead batch
        their arithmetic over the runs' agents, with each run's numbers those of ``step`` alone."""
        return [self.step(state, inbox, t, rng) for state, inbox, rng in requests]

    def for_rounds(self, rounds: int):
        """The factory to run for ``rounds`` rounds (itself; a total budget spreads over them, :class:`Budgeted`)."""
        return self

    def run_info(self, states: list) -> dict[str, Any]:
        """JSON-ready facts of a finished run worth recording beside its results (e.g. calibrated per-agent
        constants), from the final state of each agent block in agent order. None by default."""
        return {}


class Budgeted(abc.ABC):
    """Mixin of DP algorithms: the budget becomes one mechanism object, built here and nowhere else (issue 23).

    Fields a budgeted factory declares: ``epsilon`` (``None``: no noise), ``delta``, ``budget`` (``"round"``: the
    papers' per-release parameters; ``"total"``: each agent's budget for the whole run, calibrated with PLD) and the
    horizon field named by :attr:`horizon_field` (``rounds`` or ``iterations``): the number of rounds a total budget
    covers, filled in by :meth:`for_rounds` from the run when it is ``None``. Subclasses implement
    :meth:`_build_mechanism` (from :mod:`privdist.privacy.budget`) and, when they do not release one message per
    round, :meth:`release_count`.
    """

    horizon_field: ClassVar[str] = "rounds"
    #: the budget names the factory accepts, and those spread over the horizon (filled in by :meth:`for_rounds`);
    #: PVP/DVP/R-ADMM and l-AADMM add ``"total_paper"`` (:mod:`privdist.privacy.paper_budget`)
    budgets: ClassVar[tuple[str, ...]] = ("round", "total")
    total_budgets: ClassVar[tuple[str, ...]] = ("total",)

    def release_count(self, rounds: int) -> int:
        """Privacy-costing releases of each agent in ``rounds`` rounds (one per round by default)."""
        return int(rounds)

    def _check_budget(self) -> None:
        if isinstance(self.epsilon, list):  # one budget per agent: a tuple keeps the factory hashable
            object.__setattr__(self, "epsilon", tuple(self.epsilon))
        if self.budget not in self.budgets:
            raise UnknownNameError("budget", str(self.budget), self.budgets)
        horizon = getattr(self, self.horizon_field)
        if horizon is not None:
            check_int(horizon, self.horizon_field, 1)

    def _build_when_known(self) -> None:
        """Build the mechanism at construction when its horizon is known, so a bad epsilon (or an infeasible
        calibration) is a named error now rather than at the first round."""
        if self.budget not in self.total_budgets or getattr(self, self.horizon_field) is not None:
            self.mechanism  # noqa: B018

    def for_rounds(self, rounds: int):
        """The factory to run for ``rounds`` rounds: a total budget with no horizon gets ``rounds`` as its horizon.

        Raises:
            ValidationError: a total budget calibrated for fewer rounds than the run has (the run would spend more
                than the budget it was given).
        """
        if self.budget not in self.total_budgets:
            return self
        horizon = getattr(self, self.horizon_field)
        if horizon is None:
            return dataclasses.replace(self, **{self.horizon_field: int(rounds)})
        if rounds > horizon:
            raise ValidationError(f"{self.name}: the total budget epsilon={self.epsilon} is spread over "
                                  f"{self.horizon_field}={horizon}, but the run has {rounds} rounds; set "
                                  f"{self.horizon_field}={rounds} (or leave it unset: the run fills it in)")
        return self

    @functools.cached_property
    def mechanism(self) -> Mechanism:
        """The one mechanism every release of this factory goes through (cached; the factory is frozen)."""
        if self.budget in self.total_budgets and self.epsilon is not None and getattr(self, self.horizon_field) is None:
            raise ValidationError(f"{self.name}: a total budget needs the run's rounds ({self.horizon_field}=...); "
                                  "run() fills it in through for_rounds()")
        return self._build_mechanism()

    @abc.abstractmethod
    def _build_mechanism(self) -> Mechanism:
        """The mechanism of this factory's budget (from :mod:`privdist.privacy.budget`)."""

    def mechanism_info(self) -> dict[str, Any]:
        """The mechanism as recorded with results (its kind and noise multiplier per release)."""
        return {"budget": self.budget, **self.mechanism.to_dict()}


class PerIterationGaussian(Budgeted):
    """Mixin for algorithms whose every round releases one Gaussian per agent. With ``budget="round"`` the noise
    multiplier is ``sigma_t / Delta_t = sqrt(C log(1.25/delta)) / epsilon`` (C = ``gaussian_constant``: 2.1 in the
    D-ZOA comparison mode, S1(20), AMB-X2; 2 native); with ``budget="total"`` it is PLD-calibrated so that each
    agent's whole run is ``(epsilon, delta)``-DP. Needs fields ``epsilon``, ``delta``, ``c1``, ``gaussian_constant``,
    ``budget`` and ``rounds``."""

    def _check_gaussian_privacy(self) -> None:
        from .._checks import check_positive, check_probability

        check_positive(self.c1, "c1")
        check_probability(self.delta, "delta")
        if self.gaussian_constant not in (2.0, 2.1):
            raise ValidationError(f"gaussian_constant must be 2 or 2.1, got {self.gaussian_constant}")
        self._check_budget()
        self._build_when_known()

    def unenforced(self) -> str | None:
        """Why the releases are only the paper's claim (``clip=False``: the c1 bound is assumed), else None."""
        if getattr(self, "clip", True):
            return None
        return (f"{self.name}: per-sample gradient norm <= c1={self.c1} is assumed, not enforced (clip=false); the "
                "squared loss violates it (AMB-D8/AMB-B6), so the sensitivity and the epsilon are not guaranteed")

    def _build_mechanism(self) -> Mechanism:
        from ..privacy import gaussian_mechanism

        return gaussian_mechanism(self.epsilon, self.delta, budget=self.budget,
                                  releases=self.release_count(getattr(self, self.horizon_field) or 1),
                                  constant=self.gaussian_constant, reason=self.unenforced(),
                                  clear=f"{self.name}: iterates sent without noise (not private)")


def check_problem_network(problem, network, needs_degrees: bool = True) -> None:
    """Validate that an ERM problem and an undirected network fit together."""
    if not hasattr(problem, "prox_solve"):
        raise ValidationError(f"this algorithm needs a horizontal ERM problem, got {type(problem).__name__}")
    if needs_degrees and getattr(network, "degrees", None) is None:
        raise ValidationError("this algorithm needs a static undirected Network (with degrees)")
    if network.n_agents != problem.n_agents_total:
        raise ShapeMismatchError(f"network has {network.n_agents} agents, problem has {problem.n_agents_total}")


def degrees_of(block) -> np.ndarray:
    """Degrees ``d_k`` of the block's agents as floats."""
    return np.asarray(block.degrees, dtype=float)


def in_the_clear(name: str, what: str = "iterates") -> Release:
    """The release of a data-dependent message sent without noise (epsilon = inf, DESIGN idea 3)."""
    from ..privacy import non_private_release

    return non_private_release(f"{name}: {what} sent without noise (not private)")
