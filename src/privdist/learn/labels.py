"""Class names of :class:`~privdist.learn.DistributedLogisticRegression` (issue 39): the model file names its
classes, so names read off ``y`` are preprocessing that read the data without DP, as in ``privdist fit``
(:func:`privdist.data.hints.classes_step`): ``0/1``, ``-1/+1``, ``False/True`` and ``0..C-1`` carry nothing, any
other names make the report ``guaranteed: false`` unless stated as public with ``classes=``.

The estimator had reported ``guaranteed: true`` for labels such as ``'N'/'Y'`` while ``save_model`` wrote them into
the model file, and ``privdist fit`` pointed to a ``classes=`` parameter that did not exist.
"""

from __future__ import annotations

import numpy as np

from ..data.hints import classes_step
from ..errors import ValidationError

__all__ = ["class_labels"]


def class_labels(classes, y) -> tuple[np.ndarray, np.ndarray | None, dict]:
    """``(y, stated, step)``: with public ``classes`` (two or more different values, compared as text) ``y`` as
    those values (an object array; a value outside them is a :class:`ValidationError`), ``stated`` their array and
    ``step`` the public record; without, ``y`` unchanged, ``stated`` None and ``step`` the record of the names read
    from ``y`` (public only for a canonical encoding)."""
    y = np.asarray(y)
    if classes is None:
        return y, None, classes_step([v.item() if hasattr(v, "item") else v for v in np.unique(y)])
    names = [str(c) for c in classes] if isinstance(classes, (list, tuple, np.ndarray)) else []
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValidationError(f"classes must be two or more different values (negative, positive, ...), got "
                              f"{classes!r}")
    text = y.astype(str)
    bad = np.flatnonzero(~np.isin(text, names))
    if bad.size:
        raise ValidationError(f"y holds {bad.size} value(s) outside the stated classes {names}, first "
                              f"{y[bad[0]]!r} at row {int(bad[0])}")
    stated = np.asarray(list(classes))
    index = {n: i for i, n in enumerate(names)}
    mapped = np.empty(len(y), dtype=object)
    mapped[:] = [stated[index[t]] for t in text]
    return mapped, stated, {"step": "classes_public", "private": True, "note": f"class names {names} stated as "
                                                                                 "public (classes=)"}


def record_classes(est, step: dict):
    """``est`` with the class-names ``step`` added to ``privacy_report_["preprocessing"]`` (a step that read the
    data makes the report ``guaranteed: false``, :func:`~privdist.learn._base.with_preprocessing`) and, for a
    private fit, a :class:`~privdist.learn._base.PrivacyTargetWarning` naming it."""
    import warnings

    from ._base import PrivacyTargetWarning, with_preprocessing

    if step["step"] == "classes_canonical":  # nothing read: the record stays as it was
        return est
    report = est.privacy_report_
    with_preprocessing(report, [*report.get("preprocessing", []), step])
    if not step["private"] and est.privacy_plan_.private:
        warnings.warn(f"{step['note'].replace('NOT PRIVATE: ', '')}: the model is reported guaranteed: false "
                      "(epsilon inf)", PrivacyTargetWarning, stacklevel=3)
    return est
