"""``privdist fit --trust secure_aggregation`` (issue 27): the privacy report names the trust model and its
assumptions, the guarantee is the requested total, and the options are checked."""

import json

import numpy as np
import pandas as pd

from privdist.cli.main import main


def _csv(tmp_path, n=900):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) / 2
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["y"] = (X @ np.array([2.0, -1.0, 0.5]) > 0).astype(int)
    df.to_csv(tmp_path / "d.csv", index=False)
    return tmp_path / "d.csv"


def test_fit_with_secure_aggregation_prints_its_trust_model(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["fit", str(_csv(tmp_path)), "--target", "y", "--agents", "12", "--trust", "secure_aggregation",
               "--colluding", "1", "--dropout-tolerance", "0.1", "--scale", "none", "--epsilon", "1",
               "--delta", "1e-5", "--seed", "0", "--draws", "1", "--curve", "1", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "trust: secure_aggregation" in text and "honest-but-curious" in text
    privacy = json.loads((out / "results.json").read_text())["privacy"]
    assert privacy["trust"]["model"] == "secure_aggregation" and privacy["trust"]["colluding"] == 1
    assert privacy["trust"]["calibrated_honest_shares"] == 12 - 1 - 1
    assert privacy["guaranteed"] and all(a["guarantee_rdp"] <= 1.0 + 1e-9 for a in privacy["per_agent"])
    assert privacy["calibration"]["mechanism"]["kind"] == "skellam"


def test_trust_options_are_checked(tmp_path, capsys):
    path = str(_csv(tmp_path, 200))
    assert main(["fit", path, "--target", "y", "--trust", "local", "--colluding", "2", "--epsilon", "1",
                 "--delta", "1e-5"]) == 2
    assert "--trust secure_aggregation" in capsys.readouterr().err
    assert main(["fit", path, "--target", "y", "--algorithm", "dpsgd", "--colluding", "2", "--epsilon", "1",
                 "--delta", "1e-5"]) == 2  # auto resolves to local for dpsgd: the options do not apply
    assert main(["fit", path, "--target", "y", "--trust", "secure_aggregation", "--algorithm", "dpsgd",
                 "--epsilon", "1", "--delta", "1e-5"]) == 2
    assert "algorithm='dpmm'" in capsys.readouterr().err
    assert main(["fit", path, "--target", "y", "--vertical", "3", "--trust", "secure_aggregation",
                 "--colluding", "3", "--epsilon", "1", "--delta", "1e-5"]) == 2  # no honest party left in a sum
    assert "honest" in capsys.readouterr().err


def test_vertical_fit_with_secure_aggregation(tmp_path, capsys):
    """``--vertical N --trust secure_aggregation`` (issue 39): the shares' sum goes through secure aggregation; the
    report names the trust model, the colluding parties and the dropout tolerance, and the guarantee per party is
    the requested total (Skellam RDP)."""
    out = tmp_path / "out"
    rc = main(["fit", str(_csv(tmp_path, 300)), "--target", "y", "--vertical", "3", "--trust", "secure_aggregation",
               "--colluding", "1", "--dropout-tolerance", "0.34", "--scale", "none", "--epsilon", "1",
               "--delta", "1e-5", "--rounds", "5", "--seed", "0", "--draws", "1", "--curve", "", "--out", str(out)])
    assert rc == 0
    text = " ".join(capsys.readouterr().out.split())  # the console wraps lines
    assert "trust: secure_aggregation" in text and "at most 1 party collude" in text
    privacy = json.loads((out / "results.json").read_text())["privacy"]
    trust = privacy["trust"]
    assert trust["model"] == "secure_aggregation" and trust["colluding"] == 1
    assert trust["calibrated_honest_shares"] == 3 - 1 - 1
    assert privacy["guaranteed"] and len(privacy["per_agent"]) == 3
    assert all(a["guarantee_rdp"] <= 1.0 + 1e-9 for a in privacy["per_agent"])
    assert privacy["calibration"]["mechanism"]["kind"] == "skellam"


def test_vertical_local_trust_refuses_secure_options(tmp_path, capsys):
    """``--colluding``/``--dropout-tolerance`` with a vertical fit under local trust (the default): a named error."""
    path = str(_csv(tmp_path, 200))
    assert main(["fit", path, "--target", "y", "--vertical", "3", "--colluding", "1", "--epsilon", "1",
                 "--delta", "1e-5"]) == 2
    assert "--trust secure_aggregation" in capsys.readouterr().err


def test_fit_writes_the_plan_it_ran(tmp_path):
    """results.json holds the fit's privacy plan (issue 37): it reads back as the same plan, with the trust model and
    the secure-aggregation parameters given on the command line, and the report's ``promised`` is its wording."""
    from privdist.privacy.plan import PrivacyPlan

    out = tmp_path / "out"
    assert main(["fit", str(_csv(tmp_path)), "--target", "y", "--agents", "6", "--colluding", "1", "--epsilon", "1",
                 "--delta", "1e-5", "--seed", "0", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    plan = PrivacyPlan.from_dict(results["plan"])
    assert (plan.trust, plan.parties, plan.secure.colluding, plan.epsilon) == ("secure_aggregation", 6, 1, 1.0)
    assert results["privacy"]["promised"] == json.loads(json.dumps(plan.promised()))
