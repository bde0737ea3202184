"""Issue 39 (new user): class names read off ``y`` are not private, as in ``privdist fit``; ``classes=`` states
them. A fit on Contraception's ``'N'/'Y'`` had reported ``guaranteed: true`` while ``save_model`` wrote the names
into the model file, and ``privdist fit``'s advice named a ``classes=`` parameter the estimator did not have."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from privdist.errors import ValidationError
from privdist.learn import DistributedLogisticRegression, PrivacyTargetWarning, ResearchModeWarning, save_model


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, "yes", "no"), rng.integers(0, 3, n)


def _fit(y_map=lambda y: y, **kw):
    X, y, groups = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResearchModeWarning)
        return DistributedLogisticRegression(rounds=5, random_state=0, **kw).fit(X, y_map(y), groups=groups)


def test_class_names_read_off_y_are_not_a_guarantee(tmp_path):
    with pytest.warns(PrivacyTargetWarning, match=r"class names \['no', 'yes'\].*classes=\('no', 'yes'\)"):
        model = _fit()
    report = model.privacy_report_
    assert report["guaranteed"] is False and report["epsilon"] == float("inf")
    assert any("classes_from_data" in r for r in report["not_guaranteed"])
    save_model(model, tmp_path / "model.json")
    assert json.loads((tmp_path / "model.json").read_text())["privacy"]["guaranteed"] is False


def test_stated_or_canonical_classes_keep_the_guarantee():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyTargetWarning)
        stated = _fit(classes=("no", "yes"))
        canonical = _fit(lambda y: (y == "yes").astype(int))
    assert stated.privacy_report_["guaranteed"] and canonical.privacy_report_["guaranteed"]
    assert stated.privacy_report_["epsilon"] == pytest.approx(1.0, abs=1e-3)
    assert list(stated.classes_) == ["no", "yes"]
    np.testing.assert_allclose(stated.coef_, canonical.coef_)  # the same fit: only the record differs
    flipped = _fit(classes=("yes", "no"))  # negative first, as stated
    assert list(flipped.classes_) == ["yes", "no"] and flipped.coef_[0] < 0


def test_stated_classes_are_checked_and_a_class_may_be_absent():
    with pytest.raises(ValidationError, match="outside the stated classes"):
        _fit(classes=("no", "maybe"))
    with pytest.raises(ValidationError, match="two or more different values"):
        _fit(classes="no,yes")
    model = _fit(classes=("no", "yes", "maybe"))  # public: a third class no row holds, fitted one-vs-rest
    assert list(model.classes_) == ["no", "yes", "maybe"] and model.coef_.shape == (3, 2)
    assert model.privacy_report_["guaranteed"]
