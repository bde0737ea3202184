"""A vertical job across organisations (issue 38): parties hold COLUMNS of the same rows, the coordinator holds the
labels, and the fit is DP ADMM sharing (:mod:`privdist.algorithms.sharing`) or the pool
(:mod:`privdist.learn.vertical_pool`; the default of a private job under local trust, issue 39), each party in its
own process.

**The pool** (plan algorithm ``"pool"``): after every party accepted the plan, the coordinator sends each one the
labels (``pool``; the pool's named exposure); each party computes their prior log-odds and the public weight
``1/sqrt(M)`` itself, fits its expert on its own block, keeps it (its block file holds the pooled block and its
intercept share) and answers only that it has; ``close`` ends its job finished. Its ledger records the job with no
release: nothing computed from its columns leaves it. A party that had not fitted when the job stopped ends it
called off.

The rows are aligned by position: every party's file has the same number of rows, in the same order (the
consortium aligned them before the job; the coordinator checks the counts it is told, not the order). Each party
states its public facts, its row count and its column names (no labels: it holds none), and
:func:`coordinate_vertical` builds the job's privacy plan from them with :func:`privdist.learn.plan.vertical_plan`,
the builder of :class:`~privdist.learn.SharedFeatureLogisticRegression`. Each party checks the plan against its
policy and lifetime ledger before it reads its data (:class:`VerticalPartyJob`, the pieces of
:mod:`privdist.learn.job`), then builds its ADMM sharing factory from the plan itself (:func:`sharing_algorithm`, as
the estimator's ``fit`` does) and its own block from its own file; the other parties' sources are never resolved in
its process. The coordinator runs its role (the labels' prox step) over
:class:`~privdist.runtime.remote.backend.RemoteBackend` on a handle whose labels it read itself.

**What the coordinator writes, what stays with the parties.** A vertical fit has no released model: party ``m``'s
coefficient block ``x_m`` is computed without noise from its own columns and the transcript. So a party's block
never leaves it (its :class:`~privdist.runtime.remote.party_side.RemoteParty` keeps its estimate, and a party writes
its own owner-only block file ``parties/party_<m>.json``, :func:`~privdist.learn.model_io.party_block_dict`); the
coordinator's release is what :func:`~privdist.learn.model_io.save_model` writes for a vertical model: ``model.json``
with ``coef: null``, which columns each party holds and its block file's name, the public preprocessing, the
classes and the privacy report (each party's guarantee from the run's ledger, the label exposure, the public clip
bounds), and ``results.json`` with the plan. The counts of clipped rounds and the training objective need the
parties' blocks: the coordinator has neither. The data holders who pool their block files get the combined model
(:func:`join_party_blocks`, or :func:`~privdist.learn.model_io.load_model` beside the block files).

Scope of this version: binary labels; public per-column bounds (``scale="bounds"``; a column the bounds do not name
is taken as already in [-1, 1]) or ``scale="none"``: no DP range step across processes. Trust ``local`` (the
vertical default) or ``secure_aggregation`` (the sum of the shares through secure aggregation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import ValidationError
from ..runtime.party import VerticalParties
from .job import _CALLED_OFF, JobRefusedError, PartyJob, _amender

__all__ = ["VerticalJobRequest", "VerticalPartyJob", "coordinate_vertical", "vertical_job_estimator",
           "sharing_algorithm", "join_party_blocks"]


@dataclass(frozen=True)
class VerticalJobRequest:
    """What the coordinator's operator asks for in a vertical job: the budget, the trust model and the public
    settings (the meaning of :class:`~privdist.learn.SharedFeatureLogisticRegression`'s parameters)."""

    epsilon: float | None = 1.0
    delta: float = 1e-5
    trust: str = "auto"
    secure_aggregation: dict | None = None
    protocol: str = "auto"
    rounds: int = 50
    rho: float = 1.0
    b1: float = 1.0
    alpha: float = 1e-3
    fit_intercept: bool = True
    scale: str = "bounds"
    bounds: object = None
    job_id: str = "job"
    seed: int | None = None

    def settings(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(self).items()}


def vertical_job_estimator(settings: dict, parties: int):
    """The (never fitted) estimator both sides build from the job's public settings: its parameters feed
    :func:`~privdist.learn.plan.vertical_plan` and its report, as in a one-process fit."""
    from .vertical import SharedFeatureLogisticRegression

    if settings.get("scale") not in ("bounds", "none"):
        raise ValidationError("a vertical job across organisations takes public bounds (scale='bounds') or columns "
                              f"already in range (scale='none'); got scale={settings.get('scale')!r} (the DP range "
                              "step is not available across processes yet)")
    est = SharedFeatureLogisticRegression(
        epsilon=settings["epsilon"], delta=settings["delta"], n_parties=parties, rounds=settings["rounds"],
        rho=settings["rho"], b1=settings["b1"], alpha=settings["alpha"], fit_intercept=settings["fit_intercept"],
        scale=settings["scale"], bounds=_bounds(settings["bounds"]), secure=settings["seed"] is None,
        random_state=settings["seed"], trust=settings["trust"], secure_aggregation=settings["secure_aggregation"],
        protocol=settings["protocol"])
    est._check_params()
    return est


def _bounds(bounds):
    """Bounds as the settings carry them (JSON: a mapping's pairs are lists) in the estimator's form."""
    if isinstance(bounds, Mapping):
        return {str(k): tuple(float(x) for x in v) for k, v in bounds.items()}
    return bounds


def sharing_algorithm(plan, settings: dict):
    """The ADMM sharing factory of ``plan`` (as :meth:`SharedFeatureLogisticRegression.fit` builds it): the total
    budget's parameters, the plan's training parameters (trust, secure aggregation), the public ``b1`` of the plan
    and ``rho``. Each party builds it with its installed privdist; no number of it is received but the plan's."""
    from ..algorithms.sharing import ADMMSharing
    from .budget import total_budget_params

    training = plan.training[0]
    params = {**total_budget_params("admm_sharing", training.epsilon, training.delta, plan.rounds),
              **plan.training_params(0)}
    if plan.private:
        params["b1"] = float(plan.public["b1"])
    return ADMMSharing(rho=float(settings["rho"]), average=plan.private, **params)  # as the estimator


def _plan(est, rows: int, names: list[str], parties: int, seeded: bool):
    from .plan import vertical_plan

    return vertical_plan(est, rows=rows, columns=len(names), dp_columns=(), party_columns=((),) * parties,
                         seeded=seeded)


class _CoordinatorHandle(VerticalParties):
    """The coordinator's handle: the labels it read itself in its own process (``held_labels``), no party's block."""

    def _labels(self) -> np.ndarray:
        return self.held_labels.copy()


def _handle(settings: dict, dims, rows: int, sources, labels=None):
    """The job's :class:`~privdist.runtime.party.VerticalParties`; on the coordinator, ``labels`` (-1/+1) are the
    ones it read itself (its ``labels`` source is never resolved)."""
    handle = (VerticalParties if labels is None else _CoordinatorHandle)(
        sources, "held-by-the-coordinator", dims=list(dims), n_samples=int(rows), reg_weight=float(settings["alpha"]),
        loss_scale="sum", bias=bool(settings["fit_intercept"]), public={"rows": int(rows)})
    if labels is not None:
        handle.held_labels = np.asarray(labels, dtype=float)
    return handle


def _preprocessor(scale: str, bounds, names, columns=None):
    """The job's public per-column maps fitted from the column names alone (no row is read; rows are not clipped:
    no party holds a whole row). ``columns``: the global indices of ``names`` (a party's own columns), to pick its
    part of bounds given per column."""
    from ..data.bounds import Preprocessor

    names = [str(n) for n in names]
    if columns is not None and bounds is not None:
        if isinstance(bounds, Mapping):
            bounds = {k: v for k, v in bounds.items() if str(k) in names}
        elif np.ndim(bounds) == 2:
            bounds = np.asarray(bounds, dtype=float)[:, list(columns)]
    return Preprocessor(scale=scale, bounds=bounds, row_norm=None).fit(np.zeros((1, len(names))), names)


class VerticalPartyJob(PartyJob):
    """A party's side of a vertical job (module docstring).

    Args:
        name: the party's name (its certificate's, on the wire).
        load: ``load() -> (X, feature_names)``, the party's own columns of every row; called only once it has
            accepted the plan.
        facts: the party's public facts ``{"rows", "columns"}`` (from its file's line count and header).
        gate: its admission and records (:class:`~privdist.learn.job.LifetimeGate`), or None.
        out: the party's folder for its owner-only coefficient block, written when the job closes as
            ``out/parties/party_<m>.json`` (the name the coordinator's ``model.json`` gives it); None: kept in
            :attr:`block` only.
    """

    awaits_release = False  # a vertical job has no released coefficients: the job ends at close

    def __init__(self, name: str, load, facts: dict, *, gate=None, out=None):
        super().__init__(name, load, facts, gate=gate)
        self.out, self.block, self.block_file = out, None, None
        self._layout = None

    def handle(self, method: str, args: dict):
        if self.phase in ("pool", "pooled") and method in ("pool", "close"):
            return self._pool_step(method, args)
        if method == "close" and self.party is not None and self.party.estimate_ is not None and self.block is None:
            self._keep_block()
        return super().handle(method, args)

    def _pool_step(self, method: str, args: dict):
        """The pool (plan algorithm ``"pool"``, :mod:`privdist.learn.vertical_pool`): ``pool`` brings the
        coordinator's labels (its named exposure); the party computes their prior log-odds and the public weight
        ``1/sqrt(M)`` of the plan's ``M`` parties itself, fits its expert on its own block and keeps it
        (:func:`~privdist.learn.vertical_pool.pool_block`). It sends nothing
        computed from its columns, and its ledger records no release. ``close`` ends the job: finished after the
        fit, called off before it."""
        from ..runtime.remote import RemoteCallError
        from .vertical_pool import pool_block, pool_weight, prior_log_odds

        if method == "close":
            pooled = self.phase == "pooled"
            self.called_off = not pooled
            self._end(pooled, None if pooled else _CALLED_OFF)
            self.closed, self.phase = True, "closed"
            return None
        if self.phase == "pooled":
            raise RemoteCallError(f"{self.name}: 'pool' twice in one job")
        k, columns, Z, settings, parties = self._pool
        y_pm = np.asarray(args["labels"], dtype=float)
        if y_pm.shape != (Z.shape[0],) or not np.all(np.isin(y_pm, (-1.0, 1.0))) or np.unique(y_pm).size != 2:
            raise RemoteCallError(f"{self.name}: the pool's labels must be {Z.shape[0]} values of -1 and +1, both "
                                  "present")
        intercept = bool(settings["fit_intercept"])  # the weight and the prior: the public rule, computed here
        coef, share = pool_block(Z, y_pm, float(settings["alpha"]), intercept, pool_weight(parties),
                                 prior_log_odds(y_pm, intercept), k == 0)
        self.trained, self.phase = True, "pooled"
        self._write_block(k, columns, coef, share)
        return {"fitted": True}

    def _keep_block(self) -> None:
        """Party ``k``'s block of its last estimate (its columns, and the intercept for party 0), kept here and in
        its block file: it never crosses the wire."""
        from .model_io import party_block_dict

        k, offset, columns, bias = self._layout
        x = np.asarray(self.party.estimate_).ravel()
        lead = 1 if bias else 0
        self._write_block(k, columns, x[offset + lead:offset + lead + len(columns)], float(x[0]) if bias else 0.0)

    def _write_block(self, k: int, columns, coef, intercept: float) -> None:
        from .model_io import party_block_dict

        self.block = party_block_dict(k, columns, coef, intercept)
        if self.out is not None:
            from pathlib import Path

            from .._io import write_json
            from .model_io import _party_file

            self.block_file = Path(self.out) / _party_file(k)
            self.block_file.parent.mkdir(parents=True, exist_ok=True)
            write_json(self.block_file, self.block)

    def _offer(self, args):
        from ..network import complete
        from ..privacy.plan import PrivacyPlan
        from ..runtime.remote import RemoteParty
        from .plan import declared_ledger

        plan = PrivacyPlan.from_dict(args["plan"])
        settings, k = dict(args["settings"]), int(args["party"])
        if plan.kind != "vertical":
            raise JobRefusedError(f"{self.name}: a vertical party was offered a {plan.kind} plan")
        dims, columns = [int(d) for d in args["dims"]], [int(j) for j in args["columns"]]
        if dims[k] != len(self.facts["columns"]) or len(columns) != dims[k] or plan.rows != int(self.facts["rows"]):
            raise JobRefusedError(f"{self.name}: the offer does not match the facts it stated ({dims[k]} columns of "
                                  f"{plan.rows} rows offered, {len(self.facts['columns'])} of {self.facts['rows']} "
                                  "stated)")
        pooled = plan.algorithm == "pool"  # no rounds: the party fits its own block (handle "pool")
        algo = None if pooled else sharing_algorithm(plan, settings)
        declared = declared_ledger(plan, [] if pooled else [algo],
                                   {"blocks": dims, "bias": bool(settings["fit_intercept"])}).entries(k)
        accepted, reasons = (plan.private, [] if plan.private else ["the plan adds no noise"]) \
            if self.gate is None else self.gate.admit(plan, declared, str(settings["job_id"]), k)
        self.decision = (bool(accepted), list(reasons))
        if not accepted:
            return {"accepted": False, "reasons": list(reasons)}
        try:
            X, names = self.load()  # only now: the plan fits the party's policy
            if list(map(str, names)) != list(map(str, self.facts["columns"])) or X.shape[0] != plan.rows:
                raise JobRefusedError(f"{self.name}: the data read do not match the facts it stated ({X.shape[0]} "
                                      f"rows, columns {list(map(str, names))}; stated {plan.rows} rows, columns "
                                      f"{list(map(str, self.facts['columns']))})")
        except Exception as exc:  # noqa: BLE001 - its text describes the party's data: it never leaves this machine
            return self._unreadable(exc)
        self.data_read = True
        Z = _preprocessor(settings["scale"], _bounds(settings["bounds"]), names, columns).transform(X)
        if pooled:
            self.phase, self._pool = "pool", (k, columns, Z, settings, plan.parties)
            return {"accepted": True, "reasons": []}
        handle = _handle(settings, dims, plan.rows, [f"held-by-party-{j}" for j in range(plan.parties)])
        handle._local[(k,)] = _own_block(handle, k, Z)  # its own block; no other source is ever resolved
        self._layout = (k, handle.offsets[k], columns, k == 0 and handle.bias)
        self.party = RemoteParty(algo, handle, complete(plan.parties), k, share_estimate=False,
                                 on_release=None if self.gate is None else self.gate.record,
                                 on_amend=_amender(self.gate, lambda t: t))
        return {"accepted": True, "reasons": []}


def _own_block(handle, k: int, Z):
    """Party ``k``'s :class:`~privdist.problems.vertical.PartyData` from its own (mapped) columns, as
    :meth:`VerticalParties.subset` builds it from a source."""
    from ..problems.vertical import PartyData, _as_block

    D = _as_block(Z, k)
    if D.shape != (handle.n_samples, handle.raw_dims[k]):
        raise JobRefusedError(f"party {k} holds a {D.shape[0]} x {D.shape[1]} block, the job declares "
                              f"{handle.n_samples} x {handle.raw_dims[k]}")
    if k == 0 and handle.bias:
        D = np.hstack([np.ones((handle.n_samples, 1)), D])
    return PartyData(np.array([k]), (D,), (handle.offsets[k],), handle.n_features, handle.n_samples,
                     handle.reg_weight, handle.n_agents, {})


def coordinate_vertical(request: VerticalJobRequest, links, labels):
    """Run the vertical job ``request`` with the parties behind ``links`` and the coordinator's ``labels`` (one per
    row, two classes, rows in the parties' order). Returns a fitted-shell
    :class:`~privdist.learn.SharedFeatureLogisticRegression`: ``classes_``, ``feature_names_in_``,
    ``feature_groups_`` (the global columns of each party, in party order), ``preprocessor_``,
    ``privacy_report_``, ``privacy_plan_``, ``ledger_`` and ``remote_``, but no coefficients (they stay with the
    parties; :func:`join_party_blocks` joins their block files). :func:`~privdist.learn.model_io.save_model` with
    ``party_blocks=False`` writes its release.

    Raises:
        JobRefusedError: parties whose row counts differ from each other or from the labels, a column named by two
            parties, a party that refused the plan.
        ValidationError: labels that are not two classes, a setting out of the job's scope.
    """
    from ..network import complete
    from ..privacy import PrivacyLedger
    from ..runtime import run
    from ..runtime.remote import RemoteBackend
    from .vertical import vertical_report

    settings = request.settings()
    facts = [link.call("hello", {}) for link in links]
    K, y = len(links), np.asarray(labels).ravel()
    rows = [int(f["rows"]) for f in facts]
    if any(r != y.shape[0] for r in rows):
        raise JobRefusedError(f"a vertical job needs the same rows everywhere: the coordinator holds {y.shape[0]} "
                              f"labels, the parties state {dict(zip([f['name'] for f in facts], rows))} rows")
    names = [str(c) for f in facts for c in f["columns"]]
    if len(set(names)) != len(names):
        raise JobRefusedError(f"the parties state overlapping columns: {[f['columns'] for f in facts]}")
    classes = np.unique(y)
    if classes.size != 2:
        raise ValidationError(f"a vertical job fits two classes; the coordinator's labels hold {classes.tolist()}")
    y_pm = np.where(y == classes[1], 1.0, -1.0)
    est = vertical_job_estimator(settings, K)
    pre = _preprocessor(est.scale, est.bounds, names)  # every bound names a stated column (named error if not)
    dims = [len(f["columns"]) for f in facts]
    starts = np.concatenate([[0], np.cumsum(dims)]).astype(int)
    groups = [np.arange(starts[m], starts[m + 1]) for m in range(K)]
    seed = int(np.random.SeedSequence().generate_state(1)[0]) if request.seed is None else int(request.seed)
    plan = _plan(est, y.shape[0], names, K, request.seed is not None)
    offer = {"plan": plan.to_dict(), "settings": settings, "dims": dims}
    answers = [link.call("offer", {**offer, "party": m, "columns": groups[m].tolist()})
               for m, link in enumerate(links)]
    refused = {facts[m]["name"]: a["reasons"] for m, a in enumerate(answers) if not a["accepted"]}
    if refused:
        for link in links:  # the job is off: every party forgets it
            link.call("close", {})
        raise JobRefusedError(f"refused by {sorted(refused)}: {refused}")
    est.classes_, est.n_features_in_, est.feature_names_in_ = classes, len(names), np.array(names, dtype=object)
    est.preprocessor_, est.feature_groups_, est.n_parties_, est.protocol_ = pre, groups, K, plan.algorithm
    if plan.algorithm == "pool":
        return _coordinate_pool(est, plan, links, facts, y_pm)
    handle = _handle(settings, dims, y.shape[0], [f"held-by-{f['name']}" for f in facts], labels=y_pm)
    algo = sharing_algorithm(plan, settings)
    result = run(algo, handle, complete(K), plan.rounds, seed=seed % 2**63, secure=request.seed is None,
                 ledger=PrivacyLedger(K), backend=RemoteBackend(links))
    est.ledger_, est.privacy_plan_ = result.ledger, plan
    est.history_ = {"rounds": plan.rounds, "note": "no training objective: it needs the parties' blocks, which stay "
                                                   "with them"}
    clip = ({"clip_bound_y": float(plan.public["b1"]), "clip_bound_v": K * float(plan.public["b1"])}
            if plan.private else {})  # public; the counts of clipped rounds stay with the parties
    est.privacy_report_ = vertical_report(est, plan, algo, result.ledger, result.config.get("noise"), clip)
    est.remote_ = {**result.config.get("remote", {}), "names": [f["name"] for f in facts], "rows": y.shape[0],
                   "columns": {f["name"]: list(f["columns"]) for f in facts},
                   "secure_aggregation": result.config.get("secure_aggregation"),
                   "party_blocks": "each party keeps its coefficient block (parties/party_<m>.json on its machine)"}
    return est


def _coordinate_pool(est, plan, links, facts, y_pm):
    """The pool across processes (:mod:`privdist.learn.vertical_pool`): the coordinator sends every party the labels
    (the pool's named exposure); each party computes the prior log-odds and the public weight ``1/sqrt(M)``, fits its
    expert on its own block and keeps it; nothing computed from a party's columns comes back. The ledger holds no
    release (no range step across processes), the report says so."""
    from ..privacy import PrivacyLedger
    from .vertical import pool_report
    from .vertical_pool import POOL_SCOPE, pool_weight

    weight = pool_weight(len(links))
    try:
        for link in links:
            link.call("pool", {"labels": y_pm.tolist()})
    except BaseException:
        for link in links:  # the job is off: called off for the parties that had not fitted
            try:
                link.call("close", {})
            except Exception:  # noqa: BLE001 - a party already gone; the first error is the one to raise
                pass
        raise
    for link in links:  # each party's job ends finished
        link.call("close", {})
    est.ledger_, est.privacy_plan_ = PrivacyLedger(len(links)), plan
    est.history_ = {"rounds": 0, "pool_weight": weight, "note": "pool: no rounds; each party fitted its own block"}
    est.privacy_report_ = pool_report(est, plan, est.ledger_, POOL_SCOPE, weight, stacklevel=4)
    est.remote_ = {"names": [f["name"] for f in facts], "rows": int(y_pm.size),
                   "columns": {f["name"]: list(f["columns"]) for f in facts}, "secure_aggregation": None,
                   "party_blocks": "each party keeps its coefficient block and intercept share "
                                   "(parties/party_<m>.json on its machine)"}
    return est


def join_party_blocks(model, blocks):
    """The data holders' combined model: ``model`` (from :func:`coordinate_vertical`) with ``coef_``,
    ``intercept_`` and ``coef_blocks_`` from the parties' block dicts (their ``parties/party_<m>.json``), joined
    in this process. Not a release (module docstring). Returns ``model``."""
    coef, intercept = np.zeros(model.n_features_in_), 0.0
    for block in sorted(blocks, key=lambda b: int(b["party"])):
        m = int(block["party"])
        if list(block["columns"]) != model.feature_groups_[m].tolist():
            raise ValidationError(f"party {m}'s block holds columns {block['columns']}, the job gave it "
                                  f"{model.feature_groups_[m].tolist()}")
        coef[model.feature_groups_[m]] = block["coef"]
        intercept += float(block["intercept"])
    model.coef_, model.intercept_ = coef, intercept
    model.coef_blocks_ = [coef[g].copy() for g in model.feature_groups_]
    return model
