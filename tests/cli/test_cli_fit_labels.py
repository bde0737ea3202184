"""Issue 37, labels that say what was computed: ``privdist fit``'s hints, tables and exposures name what the fit did
(the class names found in the file, a curve that spends nothing beyond the release, the Skellam RDP bound of a secure
aggregation fit, the composition of the noise draws' actual releases)."""

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


def _two_class_csv(tmp_path, n=300):
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(n, 2)) / 2, columns=["a", "b"])
    df["y"] = (df["a"] - df["b"] > 0).astype(int)
    df.to_csv(tmp_path / "two.csv", index=False)
    return str(tmp_path / "two.csv")


def test_skellam_fit_names_the_skellam_rdp_bound(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["fit", _two_class_csv(tmp_path), "--target", "y", "--agents", "3", "--curve", "", "--evaluation",
            *FAST, "--draws", "2", "--out", str(out)]  # dpmm: secure aggregation by default
    assert main(args) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "guarantee (Skellam RDP)" in text and "guarantee (PLD)" not in text
    assert "(Skellam RDP, delta 1e-05)" in text
    privacy = json.loads((out / "results.json").read_text())["privacy"]
    assert privacy["trust"]["model"] == "secure_aggregation"
    assert privacy["guarantee_accountant"] == "skellam_rdp" and privacy["accountant"].startswith("skellam_rdp")
    assert "pld (dp-accounting" not in privacy["accountant"]
    assert all(a["guarantee_accountant"] == "skellam_rdp" and a["guarantee_pld"] == a["guarantee_rdp"]
               for a in privacy["per_agent"])
    spread = next(e for e in privacy["exposures"] if "spread" in e)
    assert "Skellam RDP bound of the 2 fits' releases" in spread and "Gaussian" not in spread


def test_local_fit_keeps_the_pld_labels(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["fit", _two_class_csv(tmp_path), "--target", "y", "--agents", "3", "--trust", "local",
                 "--curve", "", "--evaluation", *FAST, "--draws", "2", "--out", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "guarantee (PLD)" in text and "Skellam" not in text
    privacy = json.loads((out / "results.json").read_text())["privacy"]
    assert privacy["guarantee_accountant"] == "pld" and privacy["accountant"].startswith("pld")
    assert "the PLD of the 2 fits' releases" in next(e for e in privacy["exposures"] if "spread" in e)


@pytest.mark.filterwarnings("ignore:random_state is set")
@pytest.mark.parametrize("trust", ["secure_aggregation", "local"])
def test_draws_spend_composes_the_fits_actual_releases(trust):
    from privdist.cli.fit_release import draws_spend
    from privdist.learn import DistributedLogisticRegression
    from privdist.privacy import agent_epsilon
    from privdist.privacy.split import gaussian_mu
    from dp_accounting import gaussian_mechanism

    rng = np.random.default_rng(2)
    X = rng.normal(size=(240, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    fits = [DistributedLogisticRegression(epsilon=1.0, delta=1e-5, n_agents=3, rounds=3, scale="none",
                                          trust=trust, random_state=seed).fit(X, y) for seed in (0, 1, 2)]
    spend = draws_spend([f.ledger_ for f in fits], 1e-5)
    entries = [e for f in fits for e in f.ledger_.entries(0)]
    assert spend["fits"] == 3 and spend["guaranteed"]
    assert spend["epsilon"] == pytest.approx(agent_epsilon(entries, 1e-5, "pld"), rel=1e-9)
    gaussian = gaussian_mechanism.get_epsilon_gaussian(1.0 / (gaussian_mu(1.0, 1e-5) * np.sqrt(3)), 1e-5)
    if trust == "local":  # Gaussian releases: the exact composition of three (1, 1e-5) Gaussian fits
        assert spend["accountant"] == "pld" and spend["epsilon"] == pytest.approx(gaussian, rel=1e-3)
    else:  # the Skellam sums' RDP bound, not a Gaussian formula
        assert spend["accountant"] == "skellam_rdp" and spend["epsilon"] != pytest.approx(gaussian, rel=1e-4)


def _results(by: str) -> dict:
    agent = {"agent": 0, "guaranteed": True, "epsilon": {"paper": None, "rdp": 1.0, "pld": 1.0},
             "claimed": {"rdp": 1.0, "pld": 1.0}, "paper_note": None, "guarantee_accountant": by}
    return {"title": "t", "trials": 1, "claims": [], "figures": [],
            "runs": [{"label": "secure dpmm", "metrics": {}, "params": {}, "seconds": 1.0,
                      "privacy": {"delta": 1e-5, "per_agent": [agent]}}]}


@pytest.mark.parametrize("by", ["skellam_rdp", "pld"])
def test_run_tables_mark_the_skellam_rdp_bound(by):
    from rich.console import Console

    from privdist.cli.report import print_results
    from privdist.experiments.summary import per_agent_lines, results_table

    console = Console(width=300, record=True)
    print_results(_results(by), "out", console=console)
    text = console.export_text()
    table = "\n".join(results_table(_results(by), None) + per_agent_lines(_results(by)))
    if by == "skellam_rdp":
        assert "guarantee eps PLD or Skellam RDP" in text and "1 (Skellam RDP)" in text
        assert "guarantee eps (PLD or Skellam RDP)" in table and "| 1 (Skellam RDP) |" in table
        assert "1 / 1 (Skellam RDP)" in table
    else:
        assert "Skellam" not in text and "Skellam" not in table and "guarantee eps (PLD)" in table


def test_an_unseeded_fit_splits_the_same_way_every_run(tmp_path):
    """Issue 39: the parties and the train/test split come from --split-seed (default: --seed, else 0), the noise
    from fresh OS entropy: two unseeded runs score every party alone on the same held-out rows (those scores are
    noise-free), and another --split-seed gives another split."""
    import json

    import numpy as np
    import pandas as pd

    from privdist.cli.main import main

    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(600, 3)), columns=["a", "b", "c"])
    df["y"] = (df["a"] - df["b"] > 0).astype(int)
    df.to_csv(tmp_path / "d.csv", index=False)

    def local(out, *extra):
        assert main(["fit", str(tmp_path / "d.csv"), "--target", "y", "--agents", "4", "--epsilon", "1",
                     "--delta", "1e-5", "--evaluation", "--draws", "1", "--curve", "", "--out", str(tmp_path / out), *extra]) == 0
        return json.loads((tmp_path / out / "evaluation.json").read_text())["local_only"]

    first, second = local("r1"), local("r2")
    assert first == second
    assert local("r3", "--split-seed", "5") != first


def test_tiny_natural_parties_get_no_agents_advice():
    """Issue 39: with the data's own groups (a party column, one file each) the tiny-parties warning never suggests
    --agents (it would throw the groups away); with a random split it still does."""
    import numpy as np

    from privdist.cli.fit_diagnose import data_warnings

    X = np.random.default_rng(0).normal(size=(60, 8))
    sizes = np.array([20, 20, 20])
    natural = " ".join(data_warnings(X, "dp", 1.0, sizes, None, natural=True))
    random = " ".join(data_warnings(X, "dp", 1.0, sizes, None))
    assert "tiny parties" in natural and "--agents" not in natural and "own groups" in natural
    assert "--agents" in random


def test_a_voided_guarantee_names_the_flags_and_values_to_state(tmp_path, capsys):
    """Issue 39: --onehot alone reads category lists (and class names) off the data, so the guarantee is void; the
    console names the cure with the file's own values: the --categories and --classes flags to state them."""
    import numpy as np
    import pandas as pd

    from privdist.cli.main import main

    rng = np.random.default_rng(4)
    df = pd.DataFrame({"x": rng.normal(size=300), "city": rng.choice(["Rome", "New York", "Oslo"], 300)})
    df["label"] = np.where(df["x"] > 0, "yes", "no")
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "label", "--onehot", "--agents", "3", "--epsilon", "1",
                 "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    assert "guaranteed = False" in out
    assert "--categories 'city=New York,Oslo,Rome'" in " ".join(out.split()) and "--classes no,yes" in out


def test_stated_classes_keep_the_guarantee_of_a_three_class_fit(tmp_path, capsys):
    """Issue 39: the estimator records class names read off its labels; the fit hands it each row's class index
    (0.0, 1.0, 2.0 as floats), which must count as a canonical encoding, not as names read from the data."""
    out = tmp_path / "out"
    assert main(["fit", _csv(tmp_path, ["red", "green", "blue"]), "--target", "kind", "--agents", "2", "--trust",
                 "local", "--curve", "", *FAST, "--classes", "blue,green,red", "--out", str(out)]) == 0
    privacy = json.loads((out / "results.json").read_text())["privacy"]
    assert privacy["guaranteed"] and not privacy["not_guaranteed"], privacy["not_guaranteed"]
    assert [s["step"] for s in privacy["preprocessing"]].count("classes_public") == 1


def test_stated_lists_that_miss_the_data_are_warned_about(tmp_path):
    """Issue 39 (new user): ``--categories livch=a,b`` for a column holding 0, 1, 2, 3+ encoded every row as zeros
    and ``--classes`` naming a class no row holds fitted it, both without a word."""
    from privdist.cli.fit_diagnose import stated_warnings
    from privdist.data import load_file

    path = _csv(tmp_path, ["red", "green", "blue"])
    df = pd.read_csv(path)
    df["city"] = np.where(np.arange(len(df)) % 4 == 0, "Lyon", "Paris")
    df.to_csv(path, index=False)
    ds = load_file(path, "kind", encode="onehot", task="classification", categories={"city": ["paris", "Lyon"]},
                   classes=("red", "green", "blue", "violet"))
    notes = stated_warnings(ds)
    assert any("outside the stated --categories" in n and "city (90 of 120 rows)" in n for n in notes), notes
    assert any("--classes names violet, which no row holds" in n for n in notes), notes
    ds = load_file(path, "kind", encode="onehot", task="classification", categories={"city": ["Paris", "Lyon"]},
                   classes=("red", "green", "blue"))
    assert stated_warnings(ds) == []
