"""A party's personal model from a RELEASED model file and its own rows (issue 39), on the party's own machine.

:func:`privdist.learn.personal.personalize` needs the global model's coefficients and the public parameters of its
fit: the preprocessing (column maps ``bounds`` and row clipping ``row_norm``), ``alpha`` (the objective mean loss +
alpha ||w||^2), the loss, the classes, the intercept flag and a regression's ``target_bounds``. A released
``model.json`` (format ``privdist-linear-model/1``, :mod:`privdist.learn.model_io`) carries all of them (its
``objective`` field since issue 39: public parameters of the fit, as public as the coefficients).
:class:`ReleasedModel` is that file as the fitted-estimator view ``personalize`` reads, so a party that holds the
release and its own file computes exactly what ``personalize(fitted_estimator, X, y)`` computes in the fit's process
(the same numbers: JSON keeps every float64 exactly).

Refused by name: a vertical release (no released coefficients, :class:`~privdist.errors.ParameterTypeError`), a file
older than issue 39 without ``objective`` or with an ``l1`` objective (:class:`~privdist.errors.ModelFileError`,
:class:`~privdist.errors.ParameterTypeError`).

The personal model is written by :func:`save_personal` as ``privdist-personal-model/1``: the fields of a model file
(so :func:`load_personal` validates it with the same checker and it predicts the same way) plus ``owner_only`` and
``release: false`` (and ``probabilities: "softmax"`` when it is the party's multinomial alone model, three or more
classes, :mod:`privdist.learn.personal_multi`). It is NOT a release: :func:`~privdist.learn.model_io.load_model`
refuses it (another format), the file is created readable by its owner only (mode 0600), and nothing in privdist
sends it anywhere. Computing it costs no privacy: post-processing of the release and of the party's own rows (Dwork &
Roth 2014, Prop. 2.1); no event is added to any ledger.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np

from .model_io import LinearModel
from ..errors import DataFormatError, ModelFileError, ParameterTypeError, ValidationError

__all__ = ["ReleasedModel", "released_model", "personalize_release", "save_personal", "load_personal",
           "own_comparison", "PERSONAL_FORMAT", "personal_file"]

PERSONAL_FORMAT = "privdist-personal-model/1"



def personal_file(party: str) -> str:
    """The name of party ``party``'s personal model file: ``personal-model-<party>.json`` (characters outside
    ``[A-Za-z0-9._-]`` as ``_``), so that parties sharing a folder (a rehearsal on one machine, one ``--out``) never
    overwrite each other's model."""
    return "personal-model-" + re.sub(r"[^A-Za-z0-9._-]", "_", str(party)) + ".json"

_OWNER_ONLY = ("owner-only personal model: the released global model combined with this party's own rows "
               "(post-processing: no privacy spent, no ledger event); NOT a release and not covered by any guarantee "
               "about this party's rows: keep it with the party, do not publish it")


class ReleasedModel:
    """A released horizontal model (a checked ``model.json`` dict) as the fitted-estimator view of
    :func:`~privdist.learn.personal.personalize` and :func:`~privdist.learn.party_eval.evaluate_parties`:
    ``coef_``, ``intercept_``, ``classes_``, ``preprocessor_``, ``alpha``, ``_loss``, ``_regularizer``,
    ``fit_intercept``, ``target_bounds_``, ``n_features_in_``, ``feature_names_in_``; ``predict`` and
    ``decision_function`` as the file's (:class:`~privdist.learn.model_io.LinearModel`)."""

    def __init__(self, linear, source="model file"):
        from ..data.bounds import Preprocessor

        data, objective = linear.data, linear.objective
        if data.get("vertical") is not None or data.get("coef") is None:
            raise ParameterTypeError(f"{source}: a vertical model (parties hold columns) has no released coefficients "
                                     "to personalise; a personal model needs a horizontal release")
        if objective is None:
            raise ModelFileError(f"{source}: a model file without objective (written before issue 39): it lacks the "
                                 "fit's alpha, loss and intercept flag that a personal model needs; re-fit (or "
                                 "re-run the job) with this privdist")
        if objective["regularizer"] != "l2":
            raise ParameterTypeError(f"{source}: a personal model needs an l2 model (logistic or ridge), this one is "
                                     f"{objective['regularizer']}")
        self.linear, self.source = linear, str(source)
        self.coef_ = np.array(linear.coef, dtype=float)
        self.intercept_ = (np.array(linear.intercept, dtype=float) if np.ndim(linear.intercept)
                           else float(linear.intercept))
        self.classes_ = None if linear.classes is None else np.asarray(linear.classes)
        self.alpha, self._loss, self._regularizer = objective["alpha"], objective["loss"], objective["regularizer"]
        self.fit_intercept = objective["fit_intercept"]
        self.target_bounds_ = linear.target_bounds
        self.preprocessor_ = Preprocessor(scale="none" if linear.bounds is None else "bounds",
                                          row_norm=linear.row_norm, bounds_=linear.bounds,
                                          record=list(data["preprocessing"].get("steps") or []))
        self.n_features_in_ = int(self.coef_.shape[-1])
        names = data.get("feature_names")
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.privacy_report_ = data.get("privacy")

    def decision_function(self, X):
        return self.linear.decision_function(self._rows(X))

    def predict(self, X):
        pred = self.linear.predict(self._rows(X))
        return pred if self.classes_ is None else np.asarray(list(pred))

    def _rows(self, X):
        from .personal import check_features

        return check_features(self, X)


def released_model(source) -> ReleasedModel:
    """The release at ``source`` (a path to ``model.json``, a :class:`~privdist.learn.model_io.LinearModel`, or a
    model-file dict) as a :class:`ReleasedModel`; every field checked (:mod:`privdist.learn.model_check`)."""
    from .model_io import MODEL_FORMAT, load_model
    from .model_check import check_model_dict

    if isinstance(source, ReleasedModel):
        return source
    if isinstance(source, LinearModel):
        return ReleasedModel(source)
    if isinstance(source, dict):
        if source.get("format") != MODEL_FORMAT:
            raise DataFormatError(f"the release is not a {MODEL_FORMAT} model, got format {source.get('format')!r}")
        if source.get("coef") is None:
            raise ParameterTypeError("a vertical model (parties hold columns) has no released coefficients to "
                                     "personalise; a personal model needs a horizontal release")
        c = check_model_dict("the release", source)
        linear = LinearModel(c["kind"], c["coef"], c["intercept"], c["classes"], c["bounds"], c["row_norm"], source,
                             c["target_bounds"], c["objective"])
        return ReleasedModel(linear, "the release")
    return ReleasedModel(load_model(source), source)


def personalize_release(source, X, y, **kwargs):
    """:func:`~privdist.learn.personal.personalize` of the release at ``source`` (:func:`released_model`) on the
    party's own rows ``X, y`` (the model's columns, by name for a DataFrame; labels as in the file's ``classes``)."""
    from .personal import personalize

    return personalize(released_model(source), X, y, **kwargs)


def _strength(value):
    values = [float(v) for v in np.atleast_1d(np.asarray(value, dtype=float))]
    return values[0] if np.ndim(value) == 0 else values


def personal_dict(personal, released: ReleasedModel, meta: dict | None = None) -> dict:
    """The JSON-ready personal model file (module docstring): the release's fields with the personal
    coefficients, its selection and the owner-only marks."""
    data = released.linear.data
    multi = np.ndim(personal.coef_) == 2
    cv = personal.cv_ if isinstance(personal.cv_, list) else [personal.cv_]
    return {
        "format": PERSONAL_FORMAT,
        "kind": data["kind"],
        "coef": np.asarray(personal.coef_, dtype=float).tolist(),
        "intercept": (np.asarray(personal.intercept_, dtype=float).tolist() if multi
                      else float(personal.intercept_)),
        "classes": data.get("classes"),
        "feature_names": data.get("feature_names"),
        "preprocessing": {**data["preprocessing"],
                          "target_bounds": (None if personal.target_bounds_ is None
                                            else [float(v) for v in personal.target_bounds_])},
        "objective": data["objective"],
        **({"probabilities": "softmax"} if getattr(personal, "multinomial_", False) else {}),
        "owner_only": _OWNER_ONLY,
        "release": False,
        "personal": {"strength": _strength(personal.strength_), "fallback": personal.fallback_,
                     "rows": int(personal.n_rows_),
                     "cv": [{str(lam): float(v) for lam, v in c.items()} for c in cv],
                     "global_coef": np.asarray(personal.global_coef_, dtype=float).tolist(),
                     "global_intercept": np.asarray(personal.global_intercept_, dtype=float).tolist()},
        "meta": dict(meta or {}),
    }


def save_personal(personal, released, path, meta: dict | None = None) -> Path:
    """Write ``personal`` (made from ``released``) to ``path`` atomically, readable by its owner only (0600)."""
    from .._io import _clean, atomic_write_bytes
    import json

    path = Path(path)
    data = personal_dict(personal, released_model(released), meta)
    atomic_write_bytes(path, json.dumps(_clean(data), indent=1).encode())
    os.chmod(path, 0o600)
    return path


def load_personal(path):
    """Read a personal model file back as a :class:`~privdist.learn.model_io.LinearModel` (same checks as a model
    file; :class:`~privdist.errors.DataFormatError` for any other file, a release included)."""
    from .model_io import _read_model_json
    from .model_check import check_model_dict

    path = Path(path)
    data = _read_model_json(path, "personal model file")
    if not isinstance(data, dict) or data.get("format") != PERSONAL_FORMAT:
        raise DataFormatError(f"{path}: not a {PERSONAL_FORMAT} file (a personal model)")
    c = check_model_dict(path, data)
    cls = _SoftmaxModel if data.get("probabilities") == "softmax" and c["kind"] == "logistic_ovr" else LinearModel
    return cls(c["kind"], c["coef"], c["intercept"], c["classes"], c["bounds"], c["row_norm"], data,
               c["target_bounds"], c["objective"])


class _SoftmaxModel(LinearModel):
    """A personal file holding the party's multinomial alone model (``probabilities: "softmax"``,
    :mod:`privdist.learn.personal_multi`): the class of the largest score, softmax probabilities."""

    def predict_proba(self, X):
        from .personal_multi import softmax

        return softmax(self.decision_function(X))


def own_comparison(released, X, y, personal, *, holdout: float = 0.3, seed: int = 0) -> dict:
    """The party's own-rows comparison of alone / global / personal (owner-only, nothing released).

    ``holdout > 0``: its rows split once (seeded, stratified when every class has two rows), the personal model and
    "alone" fitted on the first part, the three scored on the held-out part by
    :func:`~privdist.learn.party_eval.evaluate_parties` (accuracy or RMSE). ``holdout = 0``, or too few rows for a
    split: the cross-validated losses of ``personal``'s own selection (``cv_``: log loss or squared error per row at
    lam = 0 "alone", inf "global" and the chosen lam; a mean over the classes for one-vs-rest), optimistic for the
    chosen lam (it is selected on them).
    """
    from .party_eval import evaluate_parties
    from .personal import MIN_ROWS

    released = released_model(released)
    if not 0 <= holdout < 1:
        raise ValidationError(f"holdout must be in [0, 1), got {holdout!r}")
    y = np.asarray(y)
    n = len(y)
    n_test = int(round(holdout * n))
    if holdout > 0 and n_test >= 1 and n - n_test >= MIN_ROWS:
        from sklearn.model_selection import train_test_split

        strat = None
        if released._loss == "logistic":
            _, counts = np.unique(y, return_counts=True)
            strat = y if counts.min() >= 2 and n_test >= len(counts) else None
        tr, te = train_test_split(np.arange(n), test_size=n_test, random_state=seed, stratify=strat)
        rows = X.iloc if hasattr(X, "iloc") else X
        ev = evaluate_parties(released, rows[tr], y[tr], np.zeros(len(tr), int), rows[te], y[te],
                              np.zeros(len(te), int), random_state=seed, min_test_rows=1)
        row = ev["parties"][0]
        return {"method": "holdout", "metric": ev["metric"], "train_rows": row["train_rows"],
                "test_rows": row["test_rows"], "alone": row["alone"], "global": row["global"],
                "personal": row["personal"], "strength": row["personal_strength"]}
    cvs = personal.cv_ if isinstance(personal.cv_, list) else [personal.cv_]
    lams = np.atleast_1d(np.asarray(personal.strength_, dtype=float))
    if not cvs or not all(cvs):
        return {"method": "none", "reason": personal.fallback_ or "no cross-validation", "metric": None,
                "alone": None, "global": None, "personal": None}
    mean = lambda key: float(np.mean([c[key(i)] for i, c in enumerate(cvs)]))  # noqa: E731
    out = {"method": "cv", "metric": "log_loss" if released._loss == "logistic" else "squared_error",
           "train_rows": n, "test_rows": 0, "alone": mean(lambda i: 0.0), "global": mean(lambda i: math.inf),
           "personal": mean(lambda i: float(lams[i])), "strength": _strength(personal.strength_)}
    if getattr(personal, "multinomial_", False):  # its folds' losses are multi-class ones: not on this scale
        out.update(personal=None, note="personal = the party's multinomial alone model (chosen over the one-vs-rest "
                                       "personal model on multi-class log loss)")
    return out


def party_personal(job, path, *, holdout: float = 0.3, seed: int = 0) -> tuple[Path, dict]:
    """A party's personal model after a job across organisations (:class:`~privdist.learn.job.PartyJob` that
    received the coordinator's release): checked against the job it took part in (:func:`check_release_matches`),
    fitted on its own rows, written owner-only to ``path`` (:func:`save_personal`); returns ``(path, comparison)``
    (:func:`own_comparison`). Nothing is sent and nothing is added to its ledger."""
    import pandas as pd

    from .personal import personalize

    if job.release_ is None or job.own_ is None:
        raise ModelFileError(f"{job.name}: the coordinator sent no release after the rounds: no personal model (an "
                             "older coordinator? personalise later with privdist personalize model.json)")
    released = released_model(job.release_)
    X, y, names = job.own_
    settings = job._job[1]
    pre = job.preprocessor_
    check_release_matches(released, names, getattr(job, "job_classes_", None), settings["alpha"],
                          settings["fit_intercept"], pre.bounds_, pre.row_norm)
    frame = pd.DataFrame(X, columns=list(names))
    personal = personalize(released, frame, y, random_state=seed)
    comparison = own_comparison(released, frame, y, personal, holdout=holdout, seed=seed)
    meta = {"job": str(settings.get("job_id")), "party": job.name, "comparison": comparison,
            "epsilon": (released.privacy_report_ or {}).get("epsilon")}
    return save_personal(personal, released, path, meta), comparison


def check_release_matches(released: ReleasedModel, names, classes, alpha: float, fit_intercept: bool,
                          bounds=None, row_norm=None) -> None:
    """The release a party received is the job it took part in: its columns, classes, objective and (when given)
    the column maps it trained with; else :class:`ModelFileError`."""
    problems = []
    if list(getattr(released, "feature_names_in_", [])) != [str(n) for n in names]:
        problems.append("its columns differ from the party's")
    if classes is not None and [str(c) for c in released.classes_] != [str(c) for c in classes]:
        problems.append(f"its classes {list(released.classes_)} differ from the job's {list(classes)}")
    if released.alpha != float(alpha) or released.fit_intercept != bool(fit_intercept):
        problems.append("its objective (alpha, intercept) differs from the job's settings")
    ours = bounds is not None
    theirs = released.preprocessor_.bounds_ is not None
    if ours != theirs or (ours and (np.shape(bounds) != np.shape(released.preprocessor_.bounds_)
                                    or not np.allclose(bounds, released.preprocessor_.bounds_, rtol=1e-12))):
        problems.append("its column maps differ from those the party trained with")
    if row_norm is not None and released.preprocessor_.row_norm != float(row_norm):
        problems.append("its row clipping differs from the party's")
    if problems:
        raise ModelFileError("the coordinator's release does not match the job this party took part in: "
                             + "; ".join(problems))
