"""Party-local problems (issue 17): a problem handle that holds sources and public facts, never raw data.

:class:`HorizontalParties` and :class:`VerticalParties` stand where a :class:`privdist.problems.HorizontalERM` or
:class:`privdist.problems.vertical.VerticalProblem` stands in ``run(algorithm, problem, network, ...)``. The handle
carries one :class:`privdist.data.per_party.PartySource` per party (and one for the coordinator's labels in the
vertical case) plus what is declared public: the number of parties, the feature count (vertical: each party's
column count and the sample count), and the problem's hyperparameters (loss, regularizer, weights).

An algorithm's ``init`` asks the problem for its block's data with ``problem.subset(block.agents)`` (and the
coordinator for ``problem.coordinator_data()``): the handle resolves exactly those sources *in the calling
process*. With the Ray backend that is the party's actor on the party's node, so the driver never holds a party's
arrays; with the simulator, :func:`privdist.run` first calls :meth:`materialize` (all sources resolved in this
process, for single-machine runs and reference results). Anything that needs every party's data at once (a
centralized reference, a pilot run on pooled data) raises :class:`PooledDataUnavailableError` on a handle.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._checks import check_int, check_nonnegative
from ..data.per_party import PartyDataError, PartySource, as_source
from ..errors import PrivdistError, ShapeMismatchError, ValidationError

__all__ = ["HorizontalParties", "VerticalParties", "PooledDataUnavailableError", "is_party_local", "PartyMetric",
           "MetricUnavailableError"]


class PooledDataUnavailableError(PrivdistError, AttributeError):
    """Something asked for every party's data at once, which a party-local problem never has in one place.

    Subclasses :class:`AttributeError`, so ``hasattr`` checks of a problem's kind still answer False.
    """


def is_party_local(problem) -> bool:
    """True for a problem handle whose data stay with the parties."""
    return bool(getattr(type(problem), "party_local", False))


class _PartyProblemBase:
    party_local = True
    _pooled_note = "needs every party's data in one process"

    def __init__(self, sources, public: dict | None):
        sources = [as_source(s) for s in sources]
        if not sources:
            raise ValidationError("a party-local problem needs at least one party source")
        self.sources: tuple[PartySource, ...] = tuple(sources)
        self.public = dict(public or {})
        self._local: dict = {}  # agents -> resolved block problem (per process; not pickled)

    def __getstate__(self):  # travels to actors as its description: never with resolved data
        state = dict(self.__dict__)
        state["_local"] = {}
        return state

    @property
    def n_agents(self) -> int:
        return len(self.sources)

    @property
    def n_agents_total(self) -> int:
        return len(self.sources)

    def __getattr__(self, name: str) -> Any:  # only reached for attributes the handle does not have
        if name.startswith("_"):
            raise AttributeError(name)
        raise PooledDataUnavailableError(
            f"{type(self).__name__}.{name}: not available on a party-local problem (data stay with their parties; "
            f"{self._pooled_note}); declare the value public or run on the materialized problem")

    def describe(self) -> dict:
        """Public description for results: parties, their source descriptions (unexpanded), declared facts."""
        return {"kind": self.kind, "parties": self.n_agents, "sources": [s.describe() for s in self.sources],
                "public": dict(self.public)}

    def _agents(self, agents) -> np.ndarray:
        agents = np.asarray(agents, dtype=int).ravel()
        if agents.size and (agents.min() < 0 or agents.max() >= self.n_agents):
            raise ValidationError(f"party ids must be in [0, {self.n_agents}), got {agents.tolist()}")
        return agents


class HorizontalParties(_PartyProblemBase):
    """Horizontal ERM whose party ``k`` holds ``(X_k, y_k)`` from ``sources[k]`` (see :class:`HorizontalERM`).

    Args:
        sources: one source per party (a :class:`PartySource`, a path, or a mapping, see :func:`as_source`).
        loss, regularizer, reg_weight: as :class:`privdist.problems.HorizontalERM`.
        n_features: the public feature count ``P`` (every party's ``X_k`` must have it).
        public: further declared-public facts, recorded with results.

    Raises:
        ValidationError: no sources, ``n_features < 1``, negative ``reg_weight``.
    """

    kind = "horizontal"

    def __init__(self, sources: Sequence, loss, regularizer, reg_weight: float = 0.0, *, n_features: int,
                 public: dict | None = None):
        super().__init__(sources, public)
        self.loss, self.regularizer = loss, regularizer
        self.reg_weight = check_nonnegative(reg_weight, "reg_weight")
        self.n_features = check_int(n_features, "n_features", 1)
        self.local_reg = self.reg_weight / self.n_agents

    def prox_solve(self, *args, **kwargs):  # the ERM marker algorithms check; solving needs a block's data
        raise PooledDataUnavailableError("prox_solve on a party-local problem: call it on problem.subset(agents)")

    def _parts(self, agents):
        parts = []
        for k in agents:
            X, y = self.sources[k].resolve(int(k))
            if y is None:
                raise PartyDataError(f"party {int(k)}: its source {self.sources[k].describe()!r} has no labels")
            if X.shape[1] != self.n_features:
                raise ShapeMismatchError(f"party {int(k)} holds {X.shape[1]} features, the problem declares "
                                         f"n_features={self.n_features}")
            parts.append((X, y))
        return parts

    def subset(self, agents):
        """The :class:`HorizontalERM` of ``agents``, resolved from their sources in this process (cached)."""
        from ..problems import HorizontalERM

        agents = self._agents(agents)
        key = tuple(agents.tolist())
        if key not in self._local:
            self._local[key] = HorizontalERM(self._parts(agents), self.loss, self.regularizer, self.reg_weight,
                                             n_agents_total=self.n_agents, agent_ids=agents)
        return self._local[key]

    def materialize(self):
        """The whole :class:`HorizontalERM`, every source resolved in this process (simulator, references)."""
        from ..problems import HorizontalERM

        return HorizontalERM(self._parts(range(self.n_agents)), self.loss, self.regularizer, self.reg_weight)


class VerticalParties(_PartyProblemBase):
    """Vertical logistic regression: party ``m`` holds columns ``D_m`` from ``sources[m]``, the coordinator holds
    the labels from ``labels`` (see :class:`privdist.problems.vertical.VerticalProblem`).

    Args:
        sources: one source per party (its ``X`` is ``D_m``, ``N x d_m``; a ``y`` in it is ignored).
        labels: the coordinator's source (its ``y``, or its ``X`` flattened when it has no ``y``).
        dims: the public column count ``d_m`` of every party (before the bias column).
        n_samples: the public sample count ``N``.
        reg_weight, loss_scale, bias: as :class:`VerticalProblem`.
        public: further declared-public facts.

    Raises:
        ValidationError: ``len(dims) != len(sources)``, bad counts, unknown ``loss_scale``.
    """

    kind = "vertical"

    def __init__(self, sources: Sequence, labels, *, dims: Sequence[int], n_samples: int, reg_weight: float = 1e-3,
                 loss_scale: str = "sum", bias: bool = True, public: dict | None = None):
        from ..problems.vertical import LOSS_SCALES

        super().__init__(sources, public)
        self.labels_source = as_source(labels)
        if len(dims) != self.n_agents:
            raise ValidationError(f"dims has {len(dims)} entries for {self.n_agents} parties")
        self.raw_dims = tuple(check_int(d, "dims[m]", 1) for d in dims)
        self.n_samples = check_int(n_samples, "n_samples", 1)
        self.reg_weight = check_nonnegative(reg_weight, "reg_weight")
        if loss_scale not in LOSS_SCALES:
            raise ValidationError(f"loss_scale must be one of {LOSS_SCALES}, got {loss_scale!r}")
        self.loss_scale, self.bias = loss_scale, bool(bias)
        self.dims = tuple(d + (1 if (m == 0 and self.bias) else 0) for m, d in enumerate(self.raw_dims))
        self.offsets = tuple(int(o) for o in np.concatenate([[0], np.cumsum(self.dims)[:-1]]))
        self.n_features = int(sum(self.dims))
        self.loss_weight = 1.0 if loss_scale == "sum" else 1.0 / self.n_samples
        self.memo = None  # no memo: a pilot run on pooled data is not possible (PooledDataUnavailableError)

    def describe(self) -> dict:
        return {**super().describe(), "labels": self.labels_source.describe()}

    def _block(self, m: int):
        from ..problems.vertical import _as_block

        D, _ = self.sources[m].resolve(m)
        if D.shape != (self.n_samples, self.raw_dims[m]):
            raise ShapeMismatchError(f"party {m} holds a {D.shape[0]} x {D.shape[1]} block, the problem declares "
                                     f"{self.n_samples} x {self.raw_dims[m]}")
        D = _as_block(D, m)
        return np.hstack([np.ones((self.n_samples, 1)), D]) if (m == 0 and self.bias) else D

    def subset(self, agents):
        """:class:`PartyData` of ``agents`` (their own blocks only), resolved in this process (cached)."""
        from ..problems.vertical import PartyData

        agents = self._agents(agents)
        key = tuple(agents.tolist())
        if key not in self._local:
            self._local[key] = PartyData(agents, tuple(self._block(int(m)) for m in agents),
                                         tuple(self.offsets[m] for m in agents), self.n_features, self.n_samples,
                                         self.reg_weight, self.n_agents, {})
        return self._local[key]

    def _labels(self) -> np.ndarray:
        from ..problems.vertical import to_pm1

        X, y = self.labels_source.resolve("coordinator")
        y = to_pm1(X if y is None else y, "the coordinator's labels")
        if y.shape[0] != self.n_samples:
            raise ShapeMismatchError(f"the coordinator holds {y.shape[0]} labels, the problem declares "
                                     f"n_samples={self.n_samples}")
        return y

    def coordinator_data(self):
        """The labels and loss weight, resolved in this process (the coordinator's node)."""
        from ..problems.vertical import CoordinatorData

        return CoordinatorData(self._labels(), self.loss_weight, self.n_agents)

    def materialize(self):
        """The whole :class:`VerticalProblem`, every source resolved in this process."""
        from ..problems.vertical import VerticalProblem

        blocks = [self.sources[m].resolve(m)[0] for m in range(self.n_agents)]
        return VerticalProblem(blocks, self._labels(), self.reg_weight, self.loss_scale, self.bias)


class MetricUnavailableError(PrivdistError, LookupError):
    """A metric cannot be computed in this mode (e.g. it needs a coordinator state this algorithm does not keep)."""


class PartyMetric:
    """A metric that each party evaluates on its own data; only the scalar leaves the party (issue 17).

    ``party(local, rows)`` is party ``k``'s part: ``local`` is its own block problem (``problem.subset([k])``),
    ``rows`` its released/local model (its rows of the estimate, shape ``(1, P)``). ``coordinator(cstate)`` (optional)
    is the part the coordinator evaluates on its own state (e.g. the loss at the labels it holds). The driver sums
    the parts. In a party-local run each part is computed in that party's actor on its node; on a materialized
    problem (simulator) the same parts are computed in this process, so both modes give the same value.

    A part is a data-dependent scalar released without noise: :func:`privdist.run` records it as an exposure of
    the privacy report whenever a party-local run computes it (the metric is computed only when a spec lists it).

    Args:
        name: metric name (for messages).
        party: ``(local, rows) -> float``.
        coordinator: ``(cstate) -> float`` or None.
        where: what results record about where the value was computed.
    """

    def __init__(self, name: str, party, coordinator=None, where: str = ""):
        self.name, self.party, self.coordinator = name, party, coordinator
        self.where = where or ("at the parties: each party evaluates its own part on its own data and only the "
                               "scalar leaves it" + ("; the coordinator adds its part" if coordinator else "")
                               + "; the driver sums them")
        self.party_metric = self
        self.value = None

    def exposure(self) -> str:
        return (f"metric {self.name!r}: each party's own part of it (a scalar computed from the party's raw data, "
                "without noise) leaves the party every round; not covered by the DP guarantee (opt-in: computed "
                "only when the metric is requested)")

    def pooled(self, problem, est, cstate) -> float:
        """The same sum computed in this process on a materialized problem (``cstate``: the coordinator's)."""
        est = np.asarray(est)
        total = sum(float(self.party(problem.subset([k]), est[[k]])) for k in range(est.shape[0]))
        return total + (float(self.coordinator(cstate)) if self.coordinator is not None else 0.0)

    def __call__(self, est, *t) -> float:  # run() sets ``value`` (from the parties, or :meth:`pooled`) first
        if self.value is None:
            raise MetricUnavailableError(f"metric {self.name!r} is computed by the parties inside privdist.run; "
                                         "it cannot be called on estimates alone")
        value, self.value = self.value, None
        return value
