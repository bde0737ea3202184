"""Issue 39, three or more classes: the party's exact multinomial alone model (party_eval's "alone") is a candidate of
the personal model, chosen on the same folds, so that personal >= alone holds at least as often as with the
one-vs-rest personal model alone; when chosen it IS scikit-learn's model (predictions and softmax probabilities)."""

import warnings

import numpy as np
import pytest

from privdist.learn import DistributedLogisticRegression, evaluate_parties
from privdist.learn import personal_multi
from privdist.learn.party_eval import alone_model
from privdist.learn.personal import personalize

K, ROWS, TRAIN = 6, 120, 80


def _silos(seed: int):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(K), ROWS)
    X = rng.normal(size=(g.size, 4))
    shift = rng.normal(scale=0.7, size=(K, 3))  # each party's own class shifts
    scores = X[:, :3] * [1.5, 1.0, -1.0] + shift[g] + rng.gumbel(size=(g.size, 3))
    y = np.array(["a", "b", "c"])[np.argmax(scores, axis=1)]
    test = (np.arange(g.size) % ROWS) >= TRAIN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DistributedLogisticRegression(epsilon=1.0, random_state=seed).fit(X[~test], y[~test],
                                                                                  groups=g[~test])
    return model, X, y, g, test


def test_personal_at_least_alone_as_often_as_before(monkeypatch):
    model, X, y, g, test = _silos(1)
    args = (X[~test], y[~test], g[~test], X[test], y[test], g[test])
    monkeypatch.setattr(personal_multi, "CONSIDER_MULTINOMIAL", False)
    before = evaluate_parties(model, *args, min_test_rows=1)["summary"]["all"]
    monkeypatch.setattr(personal_multi, "CONSIDER_MULTINOMIAL", True)
    after = evaluate_parties(model, *args, min_test_rows=1)["summary"]["all"]
    # measured (seed 1): 4 of 6 parties before, 6 of 6 after
    assert after["personal_gains"] >= before["personal_gains"] and after["parties"] == before["parties"] == K
    assert after["personal_gains"] == K


def test_a_chosen_multinomial_alone_is_scikit_learns_model(tmp_path):
    from privdist.learn import save_model
    from privdist.learn.personal_release import load_personal, personalize_release, save_personal

    model, X, y, g, test = _silos(1)
    rows = (g == 0) & ~test
    personal = personalize(model, X[rows], y[rows])
    assert getattr(personal, "multinomial_", False), personal.multinomial_note_
    Z = model.preprocessor_.transform(X[rows])
    idx = np.searchsorted(["a", "b", "c"], y[rows])
    sk = alone_model("classification", model.alpha, int(rows.sum())).fit(Z, idx)
    Zt = model.preprocessor_.transform(X[test])
    np.testing.assert_array_equal(personal.predict(X[test]), np.array(["a", "b", "c"])[sk.predict(Zt)])
    np.testing.assert_allclose(personal.predict_proba(X[test]), sk.predict_proba(Zt), atol=1e-10)
    np.testing.assert_array_equal(personal.strength_, [0.0, 0.0, 0.0])
    save_model(model, tmp_path / "model.json")
    again = personalize_release(tmp_path / "model.json", X[rows], y[rows])
    np.testing.assert_allclose(again.coef_, personal.coef_, atol=1e-12)
    path = save_personal(again, tmp_path / "model.json", tmp_path / "personal.json")
    back = load_personal(path)
    np.testing.assert_allclose(back.predict_proba(X[test]), sk.predict_proba(Zt), atol=1e-10)


def test_a_party_missing_a_class_keeps_the_one_vs_rest_model():
    model, X, y, g, test = _silos(0)
    rows = (g == 1) & ~test & (y != "c")
    personal = personalize(model, X[rows], y[rows])
    assert not getattr(personal, "multinomial_", False) and "miss a class" in personal.multinomial_note_
    assert personal.coef_.shape == (3, 4)


@pytest.mark.parametrize("seed", [0])
def test_the_switch_off_is_the_one_vs_rest_model(monkeypatch, seed):
    model, X, y, g, test = _silos(seed)
    rows = (g == 2) & ~test
    monkeypatch.setattr(personal_multi, "CONSIDER_MULTINOMIAL", False)
    ovr = personalize(model, X[rows], y[rows])
    assert not getattr(ovr, "multinomial_", False) and not hasattr(ovr, "multinomial_note_")
