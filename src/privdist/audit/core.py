"""``audit``: an empirical lower bound on an algorithm's epsilon, beside what it claims (DESIGN "audit").

1. Neighbouring datasets ``D, D'`` from a canary (:mod:`.neighbours`) on a small problem of the kind the
   algorithm accepts (found by trying its ``init``, never by its name).
2. ``n`` releases of each through :func:`privdist.runtime.run` (:mod:`.releases`).
3. Two tests, each chosen on one half of the releases and evaluated once on the other:

   * the **threshold test** at one delta (:mod:`privdist.privacy.audit_stats`): Clopper-Pearson bounds give
     ``epsilon_lb`` at the audited delta, a lower bound on the epsilon of any ``(epsilon, delta)`` claim
     (Jagielski, Ullman and Oprea 2020);
   * the **trade-off test** (:mod:`privdist.privacy.audit_tradeoff`, Dong, Roth and Su 2019; Nasr et al. 2023):
     ``mu_lb`` refutes every ``mu``-GDP claim with ``mu < mu_lb``, reported as ``epsilon_lb_gdp`` (the epsilon of
     ``mu_lb``-GDP at delta; a lower bound on a *Gaussian* claim's epsilon). The verdict checks the evaluated
     point against the claimed trade-off curve itself: ``mu``-GDP for a Gaussian ledger (exact: composed Gaussian
     releases of total multiplier ``z`` are ``1/z``-GDP), dp-accounting's PLD curve of the composed event otherwise,
     the ``(epsilon, delta)`` region for the paper's claim.
4. The claims: the same run's ledger through :func:`privdist.privacy.privacy_report`, for the target agent and
   the same number of rounds: the guarantee (PLD; inf when not guaranteed), the paper's claim and the tight
   ``claimed`` composition of the declared events.
5. Verdict: ``refuted`` when EITHER test refutes the audited claim (``claim="guarantee"`` or ``"paper"``). Each
   test holds at ``confidence``; by the union bound a correct claim is reported refuted with probability at most
   ``2 (1 - confidence)``.

With more than one round the audited release is, by default, the target's whole transcript (``view="all"``):
that is what the composed guarantee is about; ``view="last"`` audits the final round's outbox only. For an algorithm
with secure-sum messages (``trust="secure_aggregation"``) the release is what the aggregator unmasks, the sums
(:mod:`.aggregate`), audited run by run.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_estimate, check_int, check_probability
from ..errors import PrivdistError, UnknownNameError, ValidationError
from ..privacy import privacy_report
from ..privacy.audit_stats import threshold_audit
from ..privacy.audit_tradeoff import ClaimCurve, TradeoffTest, tradeoff_audit
from ..runtime import AgentBlock, AgentStreams, run
from .aggregate import aggregate_view
from .neighbours import KINDS, neighbours, problem_kind
from .releases import collect_releases, default_view

__all__ = ["CLAIMS", "AuditResult", "audit", "audit_estimate", "small_problem", "problem_for"]

CLAIMS = ("guarantee", "paper")

#: Upper-end seconds of one release of one round: one run per release (the mode for algorithms whose copies cannot
#: be vectorised) took 0.14 to 0.93 ms per release and round (dpsgd, dpadmm, pvp; 400 releases, 1 and 5 rounds;
#: issue 26); the vectorised mode 0.02 to 0.34 ms.
SECONDS_PER_RELEASE_ROUND = 1e-3


def audit_estimate(releases: int, rounds: int, view: str, dim: int = 10, n_agents: int = 2) -> tuple[float, float]:
    """``(bytes, seconds)`` an audit needs, from public sizes only: ``2 releases`` runs of ``rounds`` rounds of
    ``n_agents`` agents (the cost above is for the default 2), and the releases kept in memory (``dim`` values per
    round; every round's with ``view="all"``), four times over (the two data sets, the copies' tiles and the tests'
    sorted copies)."""
    per_release = dim * (rounds if view == "all" else 1)
    agents = max(1.0, n_agents / 2.0)
    return (4.0 * 2 * releases * per_release * 8 + 8.0 * 20 * dim * n_agents,
            2.0 * releases * rounds * agents * SECONDS_PER_RELEASE_ROUND)


def small_problem(kind: str, seed: int = 0, horizon: int = 1000, n_agents: int = 5):
    """The small default problem and network of a kind (D-ZOA's setting, spec §2.11).

    horizontal: D-ZOA's ridge regression (``n_agents`` x 20 rows, 10 features, rows of norm <= 1); vertical: a
    logistic problem of 120 samples and 10 features split over ``n_agents`` parties (S2's shape); online: S4's
    localisation with ``n_agents`` sensors on a circle (``layout="distinct"``) over ``horizon`` steps. On D-ZOA's
    5-agent graph for 5 agents, else a path.
    """
    from ..data import dzoa_regression, horizontal_partition
    from ..network import Network, dzoa5

    n_agents = check_int(n_agents, "n_agents", 2)
    rng = np.random.default_rng(seed)
    if kind == "horizontal":
        from ..problems import HorizontalERM, make_loss, make_regularizer

        ds = dzoa_regression(rng, n_agents=n_agents)
        problem = HorizontalERM(horizontal_partition(ds.X, ds.y, n_agents=n_agents), make_loss("squared"),
                                make_regularizer("l2"), 1.0)
    elif kind == "vertical":
        from ..problems.vertical import VerticalProblem

        ds = dzoa_regression(rng, n_agents=1, samples_per_agent=120, n_features=10)
        y = np.where(np.asarray(ds.y) > 0, 1.0, -1.0)
        problem = VerticalProblem(np.array_split(np.asarray(ds.X), n_agents, axis=1), y, reg_weight=0.1)
    elif kind == "online":
        from ..problems.online import make_localization

        problem = make_localization(rng, horizon, n_agents=n_agents, layout="distinct")
    else:
        raise UnknownNameError("problem kind", str(kind), KINDS)
    network = dzoa5() if n_agents == 5 else Network.from_edges(n_agents, [(k, k + 1) for k in range(n_agents - 1)])
    return problem, network


def _accepts(algorithm, problem, network) -> bool:
    try:
        block = AgentBlock(np.arange(network.n_agents), network.n_agents, getattr(network, "degrees", None))
        algorithm.init(problem, network, block, AgentStreams(0, 0, block.agents, 0))
        if algorithm.has_coordinator:
            algorithm.init_coordinator(problem, network, AgentStreams(0, 0, [0], 0))
        return True
    except (PrivdistError, AttributeError, TypeError, ValueError):
        return False


def first_releasing_rounds(algorithm, max_rounds: int = 3) -> int | None:
    """The fewest rounds (1 .. ``max_rounds``) in which agent 0's run on the audit's small problem declares a
    guaranteed release; ``None``: none does (nothing to audit). dpmm and ssp need 2: their last round only
    delivers the model."""
    for rounds in range(1, max_rounds + 1):
        problem, network = problem_for(algorithm, rounds)
        entry = privacy_report(run(algorithm, problem, network, rounds).ledger, 1e-3)["per_agent"][0]
        if not entry["guaranteed"]:
            return None
        if entry["releases"] > 0:
            return rounds
    return None


def problem_for(algorithm, rounds: int = 1, seed: int = 0, n_agents: int = 2):
    """The first small problem of ``n_agents`` agents (online, vertical, horizontal: the most specific first) whose kind
    ``algorithm.init`` accepts; returns ``(problem, network)``.

    Raises:
        ValidationError: the algorithm accepts none of them.
    """
    for kind in ("online", "vertical", "horizontal"):
        problem, network = small_problem(kind, seed, horizon=max(rounds + 1, 2), n_agents=n_agents)
        if _accepts(algorithm, problem, network):
            return problem, network
    raise ValidationError(f"{algorithm.name} accepts none of the audit's small problems ({', '.join(KINDS)}); "
                          "pass problem= and network=")


@dataclass
class AuditResult:
    """What :func:`audit` found (``to_dict`` is JSON-ready; ``inf`` stays a float)."""

    algorithm: str
    params: dict
    kind: str
    canary: str
    rounds: int
    releases: int
    delta: float
    claim: str
    claims: dict
    test: Any = field(repr=False)
    tradeoff: TradeoffTest | None = field(default=None, repr=False)
    curve: ClaimCurve | None = field(default=None, repr=False)
    view: str = "last"
    refuted_by: list = field(default_factory=list)
    epsilon_lb: float = 0.0
    epsilon_lb_paper: float | None = None
    verdict: str = "consistent"
    declared_refuted: bool = False
    mode: str = "runs"
    seconds: float = 0.0
    reasons: list = field(default_factory=list)

    @property
    def audited_claim(self) -> float | None:
        return self.claims["paper"] if self.claim == "paper" else self.claims["guarantee"]

    @property
    def epsilon_lb_gdp(self) -> float | None:
        """The epsilon of ``mu_lb``-GDP at the audited delta (a lower bound on a Gaussian claim's epsilon)."""
        return None if self.tradeoff is None else self.tradeoff.epsilon_lb_gdp(self.delta)

    def to_dict(self) -> dict:
        t = self.test
        audited = self.audited_claim
        gdp = self.epsilon_lb_gdp
        tradeoff = None if self.tradeoff is None else self.tradeoff.to_dict(self.delta, self.curve)
        if tradeoff is not None:
            ok = audited is not None and math.isfinite(audited) and audited > 0
            tradeoff["ratio_to_claim"] = gdp / audited if ok else None
        return {
            "algorithm": self.algorithm, "params": _jsonable(self.params), "problem_kind": self.kind,
            "canary": self.canary, "rounds": self.rounds, "releases_per_dataset": self.releases,
            "delta": self.delta, "claim": self.claim, "claims": self.claims, "audited_claim": self.audited_claim,
            "epsilon_lb": self.epsilon_lb, "epsilon_lb_at_paper_delta": self.epsilon_lb_paper,
            "confidence": t.bounds[t.deltas[0]]["confidence"], "verdict": self.verdict,
            "declared_model_refuted": self.declared_refuted,
            "test": {"statistic": t.statistic, "threshold": t.threshold, "sign": t.sign,
                     "n_select": list(t.n_select), "n_eval": list(t.n_eval),
                     "bounds": {str(d): b for d, b in t.bounds.items()}, "selection": t.selection,
                     "hockey_stick_estimate": t.hockey_stick},
            "tradeoff": tradeoff, "view": self.view, "refuted_by": list(self.refuted_by),
            "mode": self.mode, "seconds": self.seconds, "not_guaranteed": self.reasons,
        }


def _jsonable(params: dict) -> dict:
    out = {}
    for k, v in params.items():
        if isinstance(v, (str, int, float, bool)) or v is None:
            out[k] = v
        elif isinstance(v, (tuple, list)):
            out[k] = list(v)
        else:
            out[k] = repr(v)
    return out


def _claims(algorithm, problem, network, rounds: int, delta: float, target: int) -> tuple[dict, list, dict]:
    res = run(algorithm, problem, network, rounds, seed=0, transcript="none")
    rep = privacy_report(res.ledger, delta)
    a = rep["per_agent"][target]
    claims = {"guaranteed": a["guaranteed"], "guarantee": a["epsilon"].get("pld"), "guarantee_rdp": a["epsilon"].get("rdp"),
              "paper": a["epsilon"].get("paper"), "paper_delta": rep["paper_delta"],
              "claimed": a["claimed"].get("pld"), "releases": a["releases"], "paper_note": a["paper_note"]}
    entries = res.ledger.entries(target)
    curves = {"declared": _curve(entries)}
    curves["guarantee"] = curves["declared"] if a["guaranteed"] else None
    pd, paper = claims["paper_delta"], claims["paper"]
    ok = paper is not None and math.isfinite(paper) and pd is not None and 0 <= pd < 1
    curves["paper"] = ClaimCurve.from_epsilon(paper, pd) if ok else None
    return claims, rep["not_guaranteed"], curves


def _curve(entries) -> ClaimCurve | None:
    """The claimed trade-off curve of a target's ledger entries as declared (None: a release in the clear, or an
    event the PLD accountant cannot compose, so no curve to check)."""
    from ..errors import UnsupportedEventError
    from ..privacy.accountants import composed_event

    try:
        return ClaimCurve.from_event(composed_event(entries))
    except UnsupportedEventError:
        return None


def _records(algorithm, problem, canary: str):
    """The replace-one pair of records an algorithm declares as attaining its sensitivities jointly
    (``audit_records(n_features, loss)``, e.g. :meth:`privdist.algorithms.dpmm.DPMM.audit_records`), for the
    ``worst`` canary of a horizontal problem; ``None``: the generic worst records (:mod:`.neighbours`)."""
    hook = getattr(algorithm, "audit_records", None)
    if canary != "worst" or hook is None or problem_kind(problem) != "horizontal":
        return None
    return hook(problem.n_features, problem.loss)


def audit(algorithm, problem=None, network=None, *, releases: int = 1000, rounds: int = 1, canary: str = "worst",
          pair=None, delta: float | None = None, claim: str = "guarantee", target: int = 0, seed: int = 0,
          jobs: int = 1, secure: bool = False, vectorise="auto", confidence: float = 0.95,
          n_agents: int = 2, parallel: str = "process", address: str | None = None,
          view: str | None = None, allow_large: bool = False) -> AuditResult:
    """Audit ``algorithm`` on neighbouring datasets: epsilon lower bound, claims, verdict.

    Args:
        algorithm: an algorithm object (e.g. ``make_algorithm("dpsgd")``).
        problem, network: the data and network (default: :func:`problem_for` with ``n_agents`` agents); with
            ``canary="pair"`` the network only (the problems come in ``pair``).
        releases: releases per dataset (half choose the test, half evaluate it).
        rounds: rounds per run; the claims compose the same ``rounds`` rounds.
        view: what is audited: ``"last"`` (the target's outbox of the last round: one round's release, or the
            final released model) or ``"all"`` (its outboxes of all rounds concatenated: the whole transcript the
            composed guarantee is about). Default: ``"last"`` for one round, ``"all"`` for more.
        canary: ``"worst"``, ``"extreme"`` or ``"pair"`` (:mod:`.neighbours`).
        pair: ``(D, D')`` for ``canary="pair"``.
        delta: delta of the bound and of the guarantee (default: the algorithm's ``delta`` parameter, else 1e-5).
        claim: the claim the verdict is about: ``"guarantee"`` (PLD of guaranteed releases) or ``"paper"``.
        target: the agent whose data differ.
        seed: base seed of the replicates (replicate ``i`` uses trial ``i``).
        jobs: worker processes for the releases.
        secure: fresh OS-entropy noise in every replicate.
        vectorise: ``"auto"``, ``True`` or ``False`` (see :mod:`.releases`).
        confidence: joint Clopper-Pearson confidence of each test (the verdict: ``1 - 2 (1 - confidence)``).
        n_agents: agents of the default problem (2: one edge, the cheapest network on which every registered
            algorithm runs; the per-agent claims do not depend on it, the cost per release does).
        parallel: ``"process"`` (``jobs`` worker processes) or ``"ray"`` (replicate batches as Ray tasks).
        address: Ray cluster address for ``parallel="ray"``.
        allow_large: run even if :func:`audit_estimate` is above the limits (:func:`privdist._checks.check_estimate`).

    Returns:
        :class:`AuditResult`.

    Raises:
        ValidationError / UnknownNameError: bad arguments (named).
        ResourceLimitError: the estimated memory or time is above the limits and ``allow_large`` is false.
    """
    t0 = time.perf_counter()
    releases = check_int(releases, "releases", 8)
    rounds = check_int(rounds, "rounds", 1)
    view = default_view(view, rounds)
    agents = network.n_agents if network is not None else check_int(n_agents, "n_agents", 1)
    check_estimate("this audit", *audit_estimate(releases, rounds, view, getattr(problem, "n_features", None) or 10,
                                                 agents),
                   allow_large, f"{releases} releases per data set x {rounds} rounds, {agents} agents, view {view!r}")
    if hasattr(algorithm, "for_rounds"):  # a total budget (issue 23) is spread over the audited run's rounds
        algorithm = algorithm.for_rounds(rounds)
    jobs = check_int(jobs, "jobs", 1)
    if parallel not in ("process", "ray"):
        raise ValidationError(f"parallel must be 'process' or 'ray', got {parallel!r}")
    if claim not in CLAIMS:
        raise UnknownNameError("claim", str(claim), CLAIMS)
    if delta is None:
        d = algorithm.params().get("delta")
        delta = float(d) if isinstance(d, (int, float)) and 0 < d < 1 else 1e-5
    delta = check_probability(delta, "delta")
    if canary == "pair":
        d0, d1 = neighbours(None, "pair", pair=pair)
        if network is None:
            raise ValidationError("canary 'pair' needs the network")
    else:
        if problem is None:
            problem, net = problem_for(algorithm, rounds, seed=0, n_agents=n_agents)
            network = network or net
        elif network is None:
            raise ValidationError("a problem needs its network")
        d0, d1 = neighbours(problem, canary, target, records=_records(algorithm, problem, canary))
    kind = problem_kind(d0)
    if not hasattr(view, "rows"):  # under secure aggregation the release is the sum the aggregator unmasks
        agg = aggregate_view(algorithm, d0, network, target, view)
        if agg is not None:
            view, vectorise = agg, False
    claims, reasons, curves = _claims(algorithm, d0, network, rounds, delta, target)
    x0, x1, info = collect_releases(algorithm, d0, d1, network, rounds, releases, target=target, seed=seed,
                                    jobs=jobs, secure=secure, vectorise=vectorise, parallel=parallel,
                                    address=address, view=view)
    pd = claims["paper_delta"]
    deltas = [delta] + ([pd] if pd is not None and 0 <= pd < 1 and pd != delta else [])
    test = threshold_audit(x0, x1, deltas, confidence=confidence)
    tradeoff = tradeoff_audit(x0, x1, confidence=confidence)
    lb = test.epsilon_lb(delta)
    lb_paper = test.epsilon_lb(deltas[-1]) if len(deltas) > 1 else lb
    audited = claims["paper"] if claim == "paper" else claims["guarantee"]
    curve = curves[claim]
    refuted_by = []
    if audited is None or not math.isfinite(audited):
        verdict = "no claim" if audited is None else "not guaranteed" if claim == "guarantee" else "no claim"
    else:
        if (lb_paper if claim == "paper" else lb) > audited:
            refuted_by.append("threshold")
        if tradeoff.refutes(curve):
            refuted_by.append("tradeoff")
        verdict = "refuted" if refuted_by else "consistent"
    declared = claims["claimed"]
    declared_refuted = bool(declared is not None and math.isfinite(declared)
                            and (lb > declared or tradeoff.refutes(curves["declared"])))
    return AuditResult(algorithm.name, algorithm.params(), kind, canary, rounds, releases, delta, claim, claims,
                       test, tradeoff, curve, view, refuted_by, lb, lb_paper, verdict, declared_refuted,
                       info["mode"], time.perf_counter() - t0, reasons)
