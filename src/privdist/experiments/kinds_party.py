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
must have as many agents as parties. Only metrics computable from released messages are offered
(``disagreement``: mean distance of the agents' released values to their average); references on pooled data
(``ne``, ``objective_gap``) are not. Run with ``--backend ray --address HEAD:PORT`` on a cluster whose nodes offer
``party_k`` (and ``coordinator`` for the vertical labels), or the custom resources that ``placement`` (a table
party id -> resource, or a JSON/TOML file) names.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from ..problems import make_loss, make_regularizer
from ..runtime.party import HorizontalParties, VerticalParties
from .build import ProblemKind, Trial, register_problem_kind
from .kinds import make_spec_network

__all__ = ["disagreement"]


def disagreement(est: np.ndarray) -> float:
    """Mean Euclidean distance of the agents' released values to their average (messages only)."""
    est = np.asarray(est, dtype=float)
    return float(np.linalg.norm(est - est.mean(axis=0), axis=1).mean())


def _params(spec) -> dict:
    if spec.data.get("kind") != "per_party":
        raise SpecError(f"[problem] kind {spec.problem.get('kind')!r} needs [data] kind = \"per_party\"")
    params = dict(spec.data.get("params", {}))
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
    return Trial(problem, _network(spec, rng, problem.n_agents), {"disagreement": disagreement})


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
    return Trial(problem, _network(spec, rng, problem.n_agents), {"disagreement": disagreement})


register_problem_kind(ProblemKind("party_horizontal", frozenset({"loss", "regularizer", "reg_weight"}),
                                  ("disagreement",), build_party_horizontal))
register_problem_kind(ProblemKind("party_vertical", frozenset({"reg_weight", "loss_scale", "bias"}),
                                  ("disagreement",), build_party_vertical))
