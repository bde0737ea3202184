"""A fitted linear model on disk: ``model.json`` (format ``privdist-linear-model/1``), readable without privdist.

Fields: ``format``, ``kind`` (``"logistic"`` or ``"regression"``), ``coef`` (list, one per feature),
``intercept``, ``classes`` (logistic: ``[negative, positive]``), ``feature_names``, ``preprocessing``
(``bounds``: ``[[lower...], [upper...]]`` or null; ``row_norm``, null = rows not clipped), ``privacy`` (the privacy
report: the guarantee of THIS file, ``guaranteed: false`` with the reason when anything in it was read from the data
without DP) and ``meta``. To predict by hand: map each column with the bounds into [-1, 1]
(``2 (x - lower) / (upper - lower) - 1``, clipped), scale the row to Euclidean norm <= ``row_norm``, then
``score = row . coef + intercept``; logistic: ``P(classes[1]) = 1 / (1 + exp(-score))``. Kind ``"logistic_ovr"``
(three or more classes, one-vs-rest): ``coef`` is one list per class and ``intercept`` one number per class (in the
order of ``classes``); the predicted class is that of the largest score, and the probabilities are the classes'
sigmoids divided by their sum (scikit-learn's one-vs-rest convention). A regression model with
``preprocessing.target_bounds`` (public) clips its predictions to them. ``objective`` (issue 39; public parameters
of the fit, absent from older files): ``loss`` (``"logistic"`` or ``"squared"``), ``regularizer`` (``"l2"``,
``"l1"``), ``alpha`` (the weight of the objective mean loss + alpha ||w||^2) and ``fit_intercept``: what a party
needs to fit its personal model from this file and its own rows (:mod:`privdist.learn.personal_release`).

**Release boundary** (issue 24). A model file is a release: everything in it is a function of released (noisy)
values and public parameters. A horizontal model's ``coef`` is the average of the agents' released models. A
VERTICAL model (parties hold columns) has no such release: each party's block ``x_m`` is computed without noise from
its own columns and the transcript, so ``model.json`` holds ``coef: null`` and ``vertical.parties`` (which columns
each party holds, and the name of its block file), and party ``m``'s block goes to its own file
``parties/party_<m>.json`` (format ``privdist-party-block/1``), owner-only for party ``m``, never part of the
release. :func:`load_model` joins the blocks when their files are present (the data holders' combined model).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import check_complete, read_json, write_json
from .._checks import shown
from ..errors import DataFormatError, ModelFileError, ShapeMismatchError

__all__ = ["MODEL_FORMAT", "PARTY_FORMAT", "model_to_dict", "party_block_dict", "party_block_dicts", "save_model",
           "load_model", "LinearModel"]

MODEL_FORMAT = "privdist-linear-model/1"
PARTY_FORMAT = "privdist-party-block/1"


def _party_file(m: int) -> str:
    return f"parties/party_{m}.json"


def model_to_dict(est, feature_names=None, meta: dict | None = None, classes=None) -> dict:
    """The JSON-ready description of a fitted estimator of :mod:`privdist.learn` (``classes``: the original
    label values when the estimator was fitted on encoded labels)."""
    pre = est.preprocessor_  # vertical models: row_norm None (per-column maps only)
    kind = "logistic" if hasattr(est, "classes_") else "regression"
    vertical = hasattr(est, "feature_groups_")
    ovr = not vertical and np.ndim(est.coef_) == 2  # one-vs-rest: one row of coefficients per class
    if ovr:
        kind = "logistic_ovr"
    return {
        "format": MODEL_FORMAT,
        "kind": kind,
        "coef": None if vertical else (np.asarray(est.coef_, dtype=float).tolist() if ovr
                                       else [float(c) for c in np.ravel(est.coef_)]),
        "intercept": None if vertical else ([float(b) for b in est.intercept_] if ovr else float(est.intercept_)),
        "classes": ([c.item() if hasattr(c, "item") else c for c in (est.classes_ if classes is None else classes)]
                    if kind != "regression" else None),
        "feature_names": None if feature_names is None else [str(n) for n in feature_names],
        "preprocessing": {"bounds": None if pre.bounds_ is None else pre.bounds_.tolist(),
                          "row_norm": None if pre.row_norm is None else float(pre.row_norm), "steps": pre.record,
                          "target_bounds": (None if getattr(est, "target_bounds_", None) is None
                                            else [float(v) for v in est.target_bounds_])},
        **({"vertical": {"parties": [{"party": m, "columns": [int(j) for j in g], "block_file": _party_file(m)}
                                     for m, g in enumerate(est.feature_groups_)],
                         "note": "each party's coefficient block stays with that party (owner-only file "
                                 "block_file); this file holds no coefficients"}}
           if vertical else {}),
        "objective": None if vertical else _objective(est),
        "privacy": est.privacy_report_,
        "meta": dict(meta or {}),
    }


def _objective(est) -> dict:
    """The public parameters of the fit's objective (issue 39): what a personal model needs from a release."""
    return {"loss": str(getattr(est, "_loss", "logistic")), "regularizer": str(getattr(est, "_regularizer", "l2")),
            "alpha": float(est.alpha), "fit_intercept": bool(getattr(est, "fit_intercept", True))}


def party_block_dict(m: int, columns, coef, intercept: float) -> dict:
    """Party ``m``'s block file (``columns``: its column indices in the model's order; owner-only for party ``m``).
    """
    return {"format": PARTY_FORMAT, "party": int(m), "columns": [int(j) for j in columns],
            "coef": [float(c) for c in np.ravel(coef)], "intercept": float(intercept),
            "owner_only": f"party {m}'s coefficient block, computed without noise from its own columns: it stays with "
                          f"party {m}; not a release, not covered by the printed guarantee"}


def party_block_dicts(est) -> list[dict]:
    """A vertical model's blocks, one JSON-ready dict per party (owner-only for that party; see the module doc)."""
    shares = getattr(est, "intercept_blocks_", None)  # the pool's per-party intercept shares (learn.vertical_pool)
    return [party_block_dict(m, g, np.ravel(est.coef_)[g], float(shares[m]) if shares is not None else
                             float(est.intercept_) if m == 0 else 0.0)
            for m, g in enumerate(est.feature_groups_)]


def save_model(est, path, feature_names=None, meta: dict | None = None, classes=None,
               party_blocks: bool = True) -> list[Path]:
    """Write ``est`` to ``path`` as JSON, atomically; a vertical model's party blocks go to
    ``parties/party_<m>.json`` beside it (owner-only; ``party_blocks=False`` leaves them out). Returns the files."""
    from .._io import _clean, _restore
    from .model_check import check_model_dict

    path = Path(path)
    data = model_to_dict(est, feature_names, meta, classes)
    if data["coef"] is not None:  # never write a file load_model refuses (vertical: blocks checked when joined)
        check_model_dict(path, _restore(_clean(data)))
    write_json(path, data)
    written = [path]
    if party_blocks and hasattr(est, "feature_groups_"):
        for m, block in enumerate(party_block_dicts(est)):
            target = path.parent / _party_file(m)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_json(target, block)
            written.append(target)
    return written


@dataclass(frozen=True)
class LinearModel:
    """A model read back by :func:`load_model`: ``decision_function``, ``predict`` and ``predict_proba``."""

    kind: str
    coef: np.ndarray
    intercept: float | np.ndarray
    classes: list | None
    bounds: np.ndarray | None
    row_norm: float | None
    data: dict
    target_bounds: tuple | None = None
    objective: dict | None = None  # ``loss``, ``regularizer``, ``alpha``, ``fit_intercept``; None in older files

    def decision_function(self, X) -> np.ndarray:
        from ..data.bounds import clip_rows, scale_by_bounds

        X = self._rows(X)
        if self.bounds is not None:
            X = scale_by_bounds(X, self.bounds)
        if self.row_norm is not None:
            X = clip_rows(X, self.row_norm)
        return X @ (self.coef.T if self.coef.ndim == 2 else self.coef) + self.intercept

    def _rows(self, X) -> np.ndarray:
        """``X`` as a float matrix of this model's columns (named errors: other columns, text, NaN or inf)."""
        from .._checks import check_finite

        try:
            X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        except (TypeError, ValueError):
            raise DataFormatError("rows to predict must be numbers (a matrix of the model's columns)") from None
        n = self.coef.shape[-1]
        if X.ndim not in (1, 2) or X.shape[-1] != n:  # 1-D: one row, scored as before
            raise ShapeMismatchError(f"rows to predict have shape {X.shape}; this model takes {n} column(s)"
                                     + (f" ({', '.join(self.data['feature_names'])})"
                                        if self.data.get("feature_names") and n <= 20 else ""))
        return check_finite(X, "rows to predict")

    def predict_proba(self, X) -> np.ndarray:
        from scipy.special import expit

        if self.kind == "logistic_ovr":
            from .multiclass import ovr_proba

            return ovr_proba(self.decision_function(X))
        p = expit(self.decision_function(X))
        return np.column_stack([1 - p, p])

    def predict(self, X) -> np.ndarray:
        s = self.decision_function(X)
        if self.kind == "logistic_ovr":
            return np.asarray(self.classes, dtype=object)[np.argmax(s, axis=1)]
        if self.kind == "logistic":
            return np.asarray(self.classes, dtype=object)[(s > 0).astype(int)]
        if self.target_bounds is not None:
            s = np.clip(s, *self.target_bounds)
        return s


def load_model(path) -> LinearModel:
    """Read a ``model.json`` written by :func:`save_model` (or ``privdist fit``), validated as a whole by
    :func:`privdist.learn.model_check.check_model_dict` (issue 40): a file this returns always predicts.

    Raises:
        DataFileNotFoundError: no such file.
        DataFormatError: not a privdist model file (a directory, not JSON, another format).
        ModelFileError (a DataFormatError): a field missing, of the wrong type or shape, non-finite or beyond the
            magnitude limit (named); a vertical model whose party block files are missing or malformed.
        IncompleteOutputError: the file is in a ``privdist fit --out`` directory that the fit did not finish.
    """
    from .model_check import check_model_dict

    path = Path(path)
    data = _read_model_json(path, "model file")
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise DataFormatError(f"{path}: not a {MODEL_FORMAT} file")
    check_complete(path.parent)  # a fit's --out directory: refused when the fit was interrupted
    coef = intercept = None
    if data.get("coef", 0) is None:  # vertical: join the parties' owner-only blocks
        coef, intercept = _join_blocks(path, data)
    checked = check_model_dict(path, data, coef, intercept)
    return LinearModel(checked["kind"], checked["coef"], checked["intercept"], checked["classes"], checked["bounds"],
                       checked["row_norm"], data, checked["target_bounds"], checked["objective"])


def _read_model_json(path: Path, what: str):
    from ..errors import DataFileNotFoundError

    if path.is_dir():
        raise DataFormatError(f"{what} {path} is a directory (give its model.json)")
    if not path.is_file():
        raise DataFileNotFoundError(f"{what} {path} not found")
    try:
        return read_json(path)
    except (ValueError, OSError) as exc:
        raise DataFormatError(f"{path}: not a privdist model file (cannot be read as JSON: {exc})") from None


def _join_blocks(path: Path, data: dict) -> tuple[list, float]:
    from .model_check import check_block

    vertical = data.get("vertical")
    parties = vertical.get("parties") if isinstance(vertical, dict) else None
    if not isinstance(parties, list) or not parties or not all(isinstance(p, dict) for p in parties):
        raise ModelFileError(f"{path}: a malformed model file: coef is null but vertical.parties does not list the "
                             "parties' blocks")
    columns = []
    for p in parties:
        cols = p.get("columns")
        if (not isinstance(cols, list) or not cols
                or not all(isinstance(j, int) and not isinstance(j, bool) for j in cols)
                or not isinstance(p.get("block_file"), str)):
            raise ModelFileError(f"{path}: a malformed model file: vertical.parties entry {shown(p)} needs columns "
                                 "(a list of column indices) and block_file")
        if Path(p["block_file"]).is_absolute() or ".." in Path(p["block_file"]).parts:
            raise ModelFileError(f"{path}: a malformed model file: block_file {p['block_file']!r} leaves the model's "
                                 "directory")
        columns += cols
    n = len(columns)
    if sorted(columns) != list(range(n)):
        raise ModelFileError(f"{path}: a malformed model file: the columns of vertical.parties are not each of "
                             f"0..{n - 1} exactly once")
    coef, intercept = np.zeros(n), 0.0
    for p in parties:
        block_path = path.parent / p["block_file"]
        if not block_path.is_file():
            raise ModelFileError(f"{path}: a vertical model; party {p.get('party')}'s coefficient block "
                                 f"{p['block_file']} is not beside it (each party holds its own block; scoring a "
                                 "row needs all of them)")
        block = _read_model_json(block_path, "party block")
        if not isinstance(block, dict) or block.get("format") != PARTY_FORMAT or block.get("columns") != p["columns"]:
            raise ModelFileError(f"{block_path}: not party {p.get('party')}'s block of this model")
        block_coef, block_intercept = check_block(block_path, block, p["columns"])
        coef[p["columns"]] = block_coef
        intercept += block_intercept
    return coef.tolist(), intercept
