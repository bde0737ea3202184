"""``audit_pair``: audit a per-pair (network DP) epsilon with an observer that sees only what it receives (issue 29).

The per-pair accountant (:mod:`privdist.privacy.pairwise.network_dp`) claims that an observer's whole view of a run is
``mu``-GDP with respect to one target agent's data. This audit checks that claim the way :func:`privdist.audit.audit`
checks a local guarantee: neighbouring datasets ``D, D'`` differing in the target's data (:mod:`.neighbours`), many
runs of each through the algorithm's own rounds (:func:`~privdist.audit.releases.collect_releases`), and, on each
run, the observer's view: the messages of the agents it hears in every round and its own (an
:class:`~privdist.audit.releases.ObserverView`, from the protocol's own receivers). The threshold and trade-off
tests of :func:`privdist.audit.audit_outputs` then give an empirical lower bound (``mu_lb``, ``epsilon_lb``) to set
against the per-pair claim, and against the target's local-DP epsilon: a sound per-pair claim is never refuted, and
an audit at distance >= 2 whose lower bound stays below the local epsilon shows what the neighbours-only view cannot
learn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import check_int, check_probability
from ..errors import ValidationError
from ..privacy.pairwise.network_report import epsilon_of_mu, pairwise_report
from ..runtime import run
from .neighbours import neighbours
from .outputs import OutputAudit, audit_outputs
from .releases import ObserverView, collect_releases

__all__ = ["PairAudit", "audit_pair", "observer_senders"]


@dataclass
class PairAudit:
    """What :func:`audit_pair` found: the per-pair claim (``mu``, ``epsilon``), the target's local epsilon, the
    hop distance, and the tests (:class:`~privdist.audit.outputs.OutputAudit`) on the observer's view."""

    observer: int
    target: int
    distance: float
    mu: float
    epsilon: float
    local_epsilon: float
    result: OutputAudit
    view_size: int

    @property
    def verdict(self) -> str:
        return self.result.verdict

    @property
    def mu_lb(self) -> float:
        return self.result.tradeoff.mu_lb

    def to_dict(self) -> dict:
        return {"observer": self.observer, "target": self.target, "distance": self.distance, "mu": self.mu,
                "epsilon": self.epsilon, "local_epsilon": self.local_epsilon, "view_size": self.view_size,
                "mu_lb": self.mu_lb, "epsilon_lb": self.result.epsilon_lb, "verdict": self.verdict,
                "audit": self.result.to_dict()}


def observer_senders(protocol, observer: int) -> tuple:
    """The agents whose messages ``observer`` receives in each round ``1..T`` (from the protocol's receivers), and
    the observer itself: its own release tells it its own noise, which the accountant's observer knows too. The
    coordinator's messages are not in a transcript row of an agent, so an observer hearing one is refused.

    Raises:
        ValidationError: the observer receives messages from the coordinator.
    """
    out = []
    for t in range(1, protocol.rounds + 1):
        msg = protocol.messages(t)
        heard = np.asarray(msg.receivers[[observer]].toarray()).ravel() > 0
        senders = np.asarray(msg.senders)[heard]
        if np.any(senders < 0):
            raise ValidationError("audit_pair audits observers that hear agents only (no coordinator messages)")
        out.append(np.union1d(senders, [observer]))
    return tuple(out)


def audit_pair(algorithm, problem, network, *, observer: int, target: int, rounds: int, releases: int = 2000,
               canary: str = "worst", pair=None, delta: float = 1e-5, seed: int = 0, jobs: int = 1,
               confidence: float = 0.95, claim_mu: float | None = None) -> PairAudit:
    """Audit the per-pair claim of ``observer`` about ``target`` on ``algorithm``'s runs.

    Args:
        algorithm: an algorithm with ``linear_protocol`` (e.g. ``DPSGD``).
        problem, network: the data and network (``problem`` is ``D``; ``D'`` comes from ``canary``).
        observer, target: agent ids (distinct).
        rounds: rounds per run (the claim is for these rounds).
        releases: runs per dataset (half choose the tests, half evaluate them).
        canary, pair: the neighbouring datasets (:func:`privdist.audit.neighbours`).
        delta: delta of the epsilons and of the threshold test.
        seed: base seed of the replicates.
        jobs: worker processes.
        confidence: confidence of each test.
        claim_mu: audit this ``mu`` instead of the accountant's (e.g. to show that a smaller claim is refuted).

    Returns:
        :class:`PairAudit`.

    Raises:
        ValidationError: observer equal to target, an algorithm without a linear model, bad arguments.
    """
    rounds = check_int(rounds, "rounds", 1)
    delta = check_probability(delta, "delta")
    observer, target = check_int(observer, "observer", 0), check_int(target, "target", 0)
    if observer == target:
        raise ValidationError("observer and target must differ (an agent knows its own data)")
    if not hasattr(algorithm, "linear_protocol"):
        raise ValidationError(f"{algorithm.name} has no linear-Gaussian model: no per-pair claim to audit")
    algorithm = algorithm.for_rounds(rounds) if hasattr(algorithm, "for_rounds") else algorithm
    d0, d1 = neighbours(problem, canary, target, pair)
    protocol = algorithm.linear_protocol(d0, network, rounds)
    ledger = run(algorithm, d0, network, rounds, seed=seed, transcript="none").ledger
    section = pairwise_report(protocol, ledger, delta, [observer])
    mu = float(section["mu"][0][target])
    epsilon = float(section["epsilon"][0][target])
    local = float(section["local"]["epsilon"][target])
    view = ObserverView(target, observer_senders(protocol, observer))
    x0, x1, _ = collect_releases(algorithm, d0, d1, network, rounds, releases, target=target, seed=seed, jobs=jobs,
                                 view=view)
    audited = mu if claim_mu is None else float(claim_mu)
    eps_claim = epsilon if claim_mu is None else epsilon_of_mu(audited, delta)
    result = audit_outputs(x0, x1, epsilon=eps_claim, delta=delta, mu=audited, confidence=confidence)
    dist = section["distance"][0][target]
    return PairAudit(observer, target, math.inf if dist is None else float(dist), audited, eps_claim, local, result,
                     int(x0.shape[1]))

