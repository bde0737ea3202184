"""Problem kinds whose data stay with their parties (issue 17): ``[data] kind = "per_party"``.

``[problem] kind = "party_horizontal"`` (or ``"party_vertical"``) with one source per party in ``[data.params]``:

```toml
[data]
kind = "per_party"
params = { n_features = 10, parties = ["$PARTY_DATA/part_0.npz", "$PARTY_DATA/part_1.npz"] }
# vertical: params = { dims = [3, 4], n_samples = 500, labels = "$PARTY_DATA/labels.npz", parties = [...] }
[problem]
kind = "party_horizontal"      # loss, regularizer, reg_weight as horizontal_erm
```

A party entry is a path (environment variables expanded on the party's node), or a table ``{loader = ...,
params = {...}}`` / ``{call = "pkg.mod:fn", ...}`` (see :func:`privdist.data.per_party.as_source`). The network
must have as many agents as parties. Metrics: ``disagreement`` (mean distance of the agents' released values to
their average; driver, from messages) and ``objective`` (computed at the parties, :class:`PartyMetric`:
horizontal ``sum_k f_k(beta_k)``, each party's local objective at its own released model; vertical ADMM sharing
``w sum_i l(Y_i, s_i) + lambda sum_m ||x_m||^2``, each party its regularizer, the coordinator its loss at the sum it
received). ``objective`` is opt-in (listed in ``metrics``): a party's value is a noise-free function of its data,
recorded as an exposure of the privacy report. References on pooled data (``ne``, ``objective_gap``) are
unavailable (a named spec error), unless a user metric declares an evaluator that holds such data. Run with ``--backend ray --address HEAD:PORT`` on a cluster whose nodes offer
``party_k`` (and ``coordinator`` for the vertical labels), or the custom resources that ``placement`` (a table
party id -> resource, or a JSON/TOML file) names.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from ..problems import make_loss, make_regularizer
from ..runtime.party import HorizontalParties, MetricUnavailableError, PartyMetric, VerticalParties
from .problem_kinds import ProblemKind, Trial, register_problem_kind
from .kinds import make_spec_network

__all__ = ["disagreement", "horizontal_objective", "vertical_objective"]

POOLED = ("needs every party's data in one place (a centralized reference), which a per_party run never has; "
          "declare an evaluator that holds such data with a metric function of your own")
UNAVAILABLE = {"ne": POOLED, "objective_gap": POOLED, "test_log_loss": POOLED, "train_log_loss": POOLED}


def disagreement(est: np.ndarray) -> float:
    """Mean Euclidean distance of the agents' released values to their average (messages only)."""
    est = np.asarray(est, dtype=float)
    return float(np.linalg.norm(est - est.mean(axis=0), axis=1).mean())


def _horizontal_part(local, rows) -> float:
    """Party k: ``f_k(beta_k)`` (its weighted loss plus ``reg_weight / K * R``) at its own released model."""
    return float(local.local_values(rows).sum())


def _vertical_party_part(local, rows) -> float:
    """Party m: ``lambda ||x_m||^2`` (its regularizer, S2 (2); rows hold ``x_m`` embedded in ``beta``)."""
    return float(local.reg_weight * np.sum(np.asarray(rows) ** 2))


def _vertical_coordinator_part(cstate) -> float:
    """The label holder: ``w sum_i log(1 + exp(-Y_i s_i))`` at the sum ``s = sum_m Q_m`` it received (S2 (2); equal
    to ``sum_m D_m x_m`` when no noise is added)."""
    if not all(hasattr(cstate, a) for a in ("s", "labels", "loss_weight")):
        raise MetricUnavailableError(f"metric 'objective' needs the coordinator's received sum s and labels; the "
                                     f"coordinator state {type(cstate).__name__} has none (an ADMM-sharing metric)")
    return float(cstate.loss_weight * np.logaddexp(0.0, -cstate.labels * cstate.s).sum())


def horizontal_objective() -> PartyMetric:
    """``sum_k f_k(beta_k)``: each party's local objective at its own released model, computed at the party."""
    return PartyMetric("objective", _horizontal_part)


def vertical_objective() -> PartyMetric:
    """ADMM sharing's objective ``w sum_i l(Y_i, s_i) + lambda sum_m ||x_m||^2``: parties add their regularizers,
    the coordinator (label holder) its loss at the received sum."""
    return PartyMetric("objective", _vertical_party_part, _vertical_coordinator_part)


def _params(spec) -> dict:
    if spec.data.kind != "per_party":
        raise SpecError(f"[problem] kind {spec.problem['kind']!r} needs [data] kind = \"per_party\"")
    params = dict(spec.data.params)
    if not params.get("parties"):
        raise SpecError("[data.params].parties must list one source per party")
    return params


def _network(spec, rng, n_parties):
    network = make_spec_network(spec, rng)
    if network.n_agents != n_parties:
        raise SpecError(f"[network] has {network.n_agents} agents but [data.params].parties lists {n_parties}")
    return network


def build_party_horizontal(spec, rng, data_dir) -> Trial:
    params, prob = _params(spec), spec.problem
    if "n_features" not in params:
        raise SpecError("[data.params].n_features (public) is required for party_horizontal")
    problem = HorizontalParties(params["parties"], make_loss(prob.get("loss", "squared")),
                                make_regularizer(prob.get("regularizer", "l2")), prob.get("reg_weight", 0.0),
                                n_features=params["n_features"], public=params.get("public"))
    problem.placement = params.get("placement")
    metrics = {"disagreement": disagreement, "objective": horizontal_objective()}
    return Trial(problem, _network(spec, rng, problem.n_agents), metrics)


def build_party_vertical(spec, rng, data_dir) -> Trial:
    params, prob = _params(spec), spec.problem
    missing = [k for k in ("labels", "dims", "n_samples") if k not in params]
    if missing:
        raise SpecError(f"[data.params] needs {missing} for party_vertical")
    problem = VerticalParties(params["parties"], params["labels"], dims=params["dims"],
                              n_samples=params["n_samples"], reg_weight=prob.get("reg_weight", 1e-3),
                              loss_scale=prob.get("loss_scale", "sum"), bias=prob.get("bias", True),
                              public=params.get("public"))
    problem.placement = params.get("placement")
    metrics = {"disagreement": disagreement, "objective": vertical_objective()}
    return Trial(problem, _network(spec, rng, problem.n_agents), metrics)


register_problem_kind(ProblemKind("party_horizontal", frozenset({"loss", "regularizer", "reg_weight"}),
                                  ("disagreement", "objective"), build_party_horizontal, UNAVAILABLE))
register_problem_kind(ProblemKind("party_vertical", frozenset({"reg_weight", "loss_scale", "bias"}),
                                  ("disagreement", "objective"), build_party_vertical, UNAVAILABLE))
