"""Issue 39 on the parties' own machines: after ``privdist coordinate`` + ``privdist party`` on 127.0.0.1 each party
writes its owner-only personal model (not among the release's files) equal to ``personalize`` of the in-process
estimator on its rows, and prints its own comparison; ``privdist personalize model.json --data mine.csv`` gives the
same model as ``personalize(fitted_estimator, X, y)``; bad inputs get named errors (exit 2, one line)."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdist.cli.main import main
from privdist.learn import DistributedLogisticRegression, save_model
from privdist.learn.personal import personalize
from privdist.runtime.remote.pki import rehearsal_consortium

K = 3
COLUMNS = ["age", "income", "score"]
BOUNDS = {"age": [18, 90], "income": [0, 200], "score": [-5, 5]}


def _rows(k: int):
    from conftest import job_rows

    return job_rows(k, seed=40, n=150, step=40, shift=1.0)


def _cli(*args):
    return [sys.executable, "-m", "privdist", *map(str, args)]


def _pooled():
    X = np.vstack([_rows(k)[0] for k in range(K)])
    y = np.concatenate([_rows(k)[1] for k in range(K)])
    groups = np.concatenate([np.full(len(_rows(k)[0]), k) for k in range(K)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DistributedLogisticRegression(epsilon=1.0, delta=1e-5, scale="bounds",
                                             bounds={c: tuple(b) for c, b in BOUNDS.items()}, random_state=5
                                             ).fit(pd.DataFrame(X, columns=COLUMNS), y, groups=groups)


def test_each_party_writes_its_owner_only_personal_model(tmp_path):
    """Parties 0 and 1 share one ``--out`` folder and party 2 writes beside its data (the default): three files,
    each named by its party, none overwritten."""
    from conftest import wait_until

    d = tmp_path
    rehearsal_consortium(d, [f"party{k}" for k in range(K)])
    for k in range(K):
        X, y = _rows(k)
        df = pd.DataFrame(X, columns=COLUMNS)
        df["label"] = y
        df.to_csv(d / f"party{k}.csv", index=False)
    (d / "bounds.json").write_text(json.dumps(BOUNDS))
    (d / "seeded.toml").write_text("seeded_allowed = true\n")
    out, port_file = d / "job", d / "job.port"
    coord = subprocess.Popen(_cli("coordinate", "--parties", ",".join(f"party{k}" for k in range(K)),
                                  "--key", d / "coord/coord.key", "--cert", d / "coord/coord.crt",
                                  "--ca", d / "ca/ca.crt", "--port", 0, "--port-file", port_file, "--job-id", "p1",
                                  "--epsilon", 1, "--bounds", d / "bounds.json", "--out", out, "--seed", 5,
                                  "--timeout", 120),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: port_file.exists() and port_file.read_text().strip(), timeout=120, what="the port")
    port = port_file.read_text().strip()
    parties = [subprocess.Popen(
        _cli("party", d / f"party{k}.csv", "--target", "label", "--classes", "no,yes",
             "--key", d / f"party{k}/party{k}.key", "--cert", d / f"party{k}/party{k}.crt", "--ca", d / "ca/ca.crt",
             "--coordinator", f"127.0.0.1:{port}", "--coordinator-name", "coord", "--policy", d / "seeded.toml",
             "--ledger-dir", d / f"ledger{k}", *(("--out", d / "own") if k < 2 else ()), "--timeout", 120),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(K)]
    outs = [p.communicate(timeout=600) for p in parties]
    cout, cerr = coord.communicate(timeout=600)
    assert coord.returncode == 0, cerr
    assert all(p.returncode == 0 for p in parties), [o[1][-2000:] for o in outs]
    ref = _pooled()
    release = json.loads((out / "model.json").read_text())
    np.testing.assert_allclose(release["coef"], ref.coef_, rtol=0, atol=0)  # the same released model
    released_files = {p.name for p in out.rglob("*") if p.is_file()}
    assert not any(n.startswith("personal-model") for n in released_files)
    assert "personal" not in (out / "results.json").read_text()
    eps = json.loads((out / "results.json").read_text())["privacy"]["epsilon"]
    for k in range(K):
        path = (d / "own" if k < 2 else d) / f"personal-model-party{k}.json"  # two share --out, one the default
        assert path.exists() and os.stat(path).st_mode & 0o777 == 0o600
        data = json.loads(path.read_text())
        assert data["release"] is False and "owner-only" in data["owner_only"]
        X, y = _rows(k)
        mine = personalize(ref, pd.DataFrame(X, columns=COLUMNS), y, random_state=0)
        np.testing.assert_allclose(data["coef"], mine.coef_, rtol=0, atol=1e-9)
        assert data["intercept"] == pytest.approx(mine.intercept_, abs=1e-9)
        assert data["meta"]["epsilon"] == pytest.approx(eps)  # the job's guarantee; the personal model spends none
        assert "alone" in outs[k][0] and "personal" in outs[k][0] and "held out" in outs[k][0]
        ledger = json.loads((d / f"ledger{k}" / "ledger.json").read_text())
        assert [j["status"] for j in ledger["jobs"]] == ["finished"]


# -- privdist personalize ---------------------------------------------------------------------------------------------
def _party_frame(seed: int, n: int):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.uniform(0, 10, n),
                       "region": rng.choice(["n", "s", "e"], size=n)})
    score = df["x1"] + 0.3 * (df["x2"] - 5) + (df["region"] == "s") * 1.0 + rng.normal(scale=0.5, size=n)
    df["label"] = np.where(score > 0, "hi", "lo")
    return df


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A model.json of a fit on one-hot columns of public categories, the estimator that wrote it."""
    from privdist.data import load_file

    d = tmp_path_factory.mktemp("release")
    _party_frame(1, 500).to_csv(d / "all.csv", index=False)
    categories = {"region": ["n", "s", "e"]}
    ds = load_file(d / "all.csv", "label", encode="onehot", task="classification", categories=categories,
                   classes=("lo", "hi"))
    y = np.where(ds.y > 0, "hi", "lo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DistributedLogisticRegression(n_agents=4, epsilon=1.0, random_state=2).fit(
            pd.DataFrame(ds.X, columns=ds.feature_names), y)
    save_model(est, d / "model.json", ds.feature_names)
    mine = _party_frame(9, 120)
    mine.to_csv(d / "mine.csv", index=False)
    return d, est, mine


def test_personalize_cli_equals_personalize_of_the_estimator(release, capsys):
    d, est, mine = release
    assert main(["personalize", str(d / "model.json"), "--data", str(d / "mine.csv"), "--target", "label",
                 "--categories", "region=n,s,e", "--out", str(d / "personal.json")]) == 0
    printed = capsys.readouterr().out
    assert "owner-only" in printed and "alone" in printed and "global" in printed
    X = pd.get_dummies(mine["region"]).reindex(columns=["n", "s", "e"], fill_value=0).astype(float)
    X.columns = [f"region={c}" for c in X.columns]
    X = pd.concat([mine[["x1", "x2"]], X], axis=1)
    ref = personalize(est, X, mine["label"].to_numpy(), random_state=0)
    data = json.loads((d / "personal.json").read_text())
    np.testing.assert_allclose(data["coef"], ref.coef_, rtol=0, atol=1e-12)
    assert data["intercept"] == pytest.approx(ref.intercept_, abs=1e-12)
    assert os.stat(d / "personal.json").st_mode & 0o777 == 0o600


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_personalize_cli_bad_inputs_are_named(release, capsys, tmp_path):
    d, est, mine = release
    base = ["--data", str(d / "mine.csv"), "--target", "label", "--categories", "region=n,s,e"]
    out = ["--out", str(tmp_path / "p.json")]
    assert "not numeric" in _error(capsys, ["personalize", str(d / "model.json"), *base[:4], *out])  # no onehot
    assert "lacks the model's column" in _error(capsys, ["personalize", str(d / "model.json"), *base[:4], "--drop",
                                                         "region", *out])
    mine.assign(extra=1.0).to_csv(tmp_path / "extra.csv", index=False)
    assert "not the model's" in _error(capsys, ["personalize", str(d / "model.json"), "--data",
                                                str(tmp_path / "extra.csv"), *base[2:], *out])
    mine.rename(columns={"x2": "other"}).to_csv(tmp_path / "renamed.csv", index=False)
    err = _error(capsys, ["personalize", str(d / "model.json"), "--data", str(tmp_path / "renamed.csv"),
                          *base[2:], *out])
    assert "other" in err or "x2" in err
    old = json.loads((d / "model.json").read_text())
    old.pop("objective")
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert "without objective" in _error(capsys, ["personalize", str(tmp_path / "old.json"), *base, *out])
    noclass = json.loads((d / "model.json").read_text())
    noclass.pop("classes")
    (tmp_path / "noclass.json").write_text(json.dumps(noclass))
    assert "classes" in _error(capsys, ["personalize", str(tmp_path / "noclass.json"), *base, *out])
    assert "model.json" in _error(capsys, ["personalize", str(d / "model.json"), *base,
                                           "--out", str(tmp_path / "model.json")])
    mine.assign(label=np.where(mine["label"] == "hi", "high", "lo")).to_csv(tmp_path / "labels.csv", index=False)
    assert "outside the stated classes" in _error(capsys, ["personalize", str(d / "model.json"), "--data",
                                                           str(tmp_path / "labels.csv"), *base[2:], *out])
    assert not (tmp_path / "p.json").exists()


def test_personalize_cli_refuses_a_vertical_model(capsys, tmp_path):
    from privdist.learn import SharedFeatureLogisticRegression

    df = _party_frame(3, 120)[["x1", "x2", "label"]]
    df.to_csv(tmp_path / "mine.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SharedFeatureLogisticRegression(n_parties=2, rounds=3, epsilon=1.0, random_state=0, scale="bounds",
                                              bounds={"x1": (-4.0, 4.0), "x2": (0.0, 10.0)}).fit(
            df[["x1", "x2"]], df["label"])
    save_model(est, tmp_path / "model.json", ["x1", "x2"])
    assert "vertical" in _error(capsys, ["personalize", str(tmp_path / "model.json"), "--data",
                                         str(tmp_path / "mine.csv"), "--target", "label", "--out",
                                         str(tmp_path / "p.json")])
    assert not Path(tmp_path / "p.json").exists()


def test_comparison_line_names_the_global_coefficients_of_a_holdout():
    """Issue 39 (new user): ``privdist personalize`` on a Bangladesh district whose held-out comparison chose the
    global coefficients (strength ``"global coefficients"`` from party_eval) ended in a ValueError traceback."""
    from privdist.cli.party_cmd import comparison_line

    comp = {"method": "holdout", "metric": "accuracy", "train_rows": 82, "test_rows": 35, "alone": 0.6,
            "global": 0.7, "personal": 0.7, "strength": "global coefficients"}
    line = comparison_line(comp)
    assert "strength global;" in line and "held out (35 of 117)" in line
    assert "strength global, 0.5;" in comparison_line({**comp, "strength": ["global coefficients", 0.5]})


def test_personalize_takes_the_category_lists_of_the_release(release, capsys, tmp_path):
    """Issue 39 (new user): a London school whose file holds one value of a text column, personalised with --onehot
    and no --categories, was refused ("lacks the model's column(s)"): the lists came from its own rows, not from
    the model.json that names them."""
    d, est, mine = release
    mine[mine["region"] == "s"].to_csv(tmp_path / "south.csv", index=False)
    assert main(["personalize", str(d / "model.json"), "--data", str(tmp_path / "south.csv"), "--target", "label",
                 "--onehot", "--out", str(tmp_path / "p.json")]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "p.json").read_text())["feature_names"] == ["x1", "x2", "region=n", "region=s",
                                                                                "region=e"]


def test_personalize_does_not_replace_an_existing_file_without_overwrite(release, capsys, tmp_path):
    """--out naming an existing file (another model, anything) was replaced without a word."""
    d, _, _ = release
    argv = ["personalize", str(d / "model.json"), "--data", str(d / "mine.csv"), "--target", "label",
            "--categories", "region=n,s,e", "--out", str(tmp_path / "kept.json")]
    (tmp_path / "kept.json").write_text('{"mine": 1}')
    assert "kept.json exists" in _error(capsys, argv) and (tmp_path / "kept.json").read_text() == '{"mine": 1}'
    assert main(argv + ["--overwrite"]) == 0
    assert json.loads((tmp_path / "kept.json").read_text())["format"] == "privdist-personal-model/1"
