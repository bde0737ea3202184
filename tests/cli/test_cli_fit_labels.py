"""Issue 37, labels that say what was computed: ``privdist fit``'s hints and exposures name what the fit did (the
class names found in the file, a curve that spends nothing beyond the release)."""

import json

import numpy as np
import pandas as pd
import pytest

from privdist.cli.fit_release import release_boundary
from privdist.cli.main import main

FAST = ["--epsilon", "1", "--delta", "1e-5", "--rounds", "3", "--draws", "1", "--scale", "none", "--seed", "0"]


def _csv(tmp_path, labels, n=120):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=n) / 2, "x2": rng.normal(size=n) / 2})
    df["kind"] = [labels[i % len(labels)] for i in range(n)]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("labels, option", [(["red", "green", "blue"], "--classes blue,green,red"),
                                            (["no", "yes"], "--classes no,yes"),
                                            (["big cat", "dog", "eel"], "--classes 'big cat,dog,eel'")])
def test_class_names_hint_names_every_class_of_the_file(tmp_path, capsys, labels, option):
    out = tmp_path / "out"
    assert main(["fit", _csv(tmp_path, labels), "--target", "kind", "--agents", "2", "--trust", "local",
                 "--curve", "", *FAST, "--out", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert option in text and "NEG,POS" not in text
    privacy = json.loads((out / "results.json").read_text())["privacy"]
    assert not privacy["guaranteed"]
    reason = next(r for r in privacy["not_guaranteed"] if "classes_from_data" in r)
    assert option in reason and "NEG,POS" not in reason
    assert ("one-vs-rest" in reason) == (len(labels) > 2)


def test_vertical_error_of_three_classes_names_them(tmp_path, capsys):
    assert main(["fit", _csv(tmp_path, ["red", "green", "blue"], 60), "--target", "kind", "--vertical", "2",
                 "--curve", "", *FAST]) == 2
    assert "--classes blue,green,red" in capsys.readouterr().err


def test_curve_at_the_requested_epsilon_spends_nothing_more():
    _, exposures = release_boundary(vertical=False, n_parties=3, evaluation=True, curve=[1.0], epsilon=1.0,
                                    delta=1e-5)
    png = next(e for e in exposures if "privacy_utility.png" in e)
    assert "spends up to" not in png and "nothing beyond" in png
    _, exposures = release_boundary(vertical=False, n_parties=3, evaluation=True, curve=[1.0 + 1e-12], epsilon=1.0)
    assert "spends up to" not in next(e for e in exposures if "privacy_utility.png" in e)
    _, exposures = release_boundary(vertical=False, n_parties=3, evaluation=True, curve=[0.5, 1.0, 2.0],
                                    epsilon=1.0, delta=1e-5)
    png = next(e for e in exposures if "privacy_utility.png" in e)
    assert "spends up to 3.5 per party and delta 3e-05" in png and "2 refits" in png
    assert "more than the requested 1" in png


def test_curve_of_the_requested_epsilon_through_the_cli(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["fit", _csv(tmp_path, [0, 1]), "--target", "kind", "--agents", "2", "--trust", "local",
                 "--curve", "1", *FAST, "--out", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "spends up to 1 per party, not 1" not in text and "nothing beyond" in text
    results = json.loads((out / "results.json").read_text())
    assert not any("spends up to" in e for e in results["privacy"]["exposures"] if "privacy_utility" in e)
