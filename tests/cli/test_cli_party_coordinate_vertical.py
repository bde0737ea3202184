"""Issue 38, a vertical job end to end: ``privdist coordinate --vertical`` (it holds the labels) and three
``privdist party --vertical`` processes (each holds some columns of the same rows) on 127.0.0.1 with certificates
made in the test. The coordinator's model.json holds no coefficients; each party's own block file, joined with the
others, gives SharedFeatureLogisticRegression's model on the same columns bit for bit (a seeded run); each party's
lifetime ledger holds the finished job."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdist.runtime.remote.pki import rehearsal_consortium

K = 3
N = 60
COLUMNS = [["age", "income"], ["score"], ["visits", "weight"]]
BOUNDS = {"age": [18, 90], "income": [0, 200], "score": [-5, 5], "visits": [0, 20]}  # weight: already in range


def _all():
    rng = np.random.default_rng(8)
    X = np.column_stack([rng.uniform(18, 90, N), rng.uniform(0, 200, N), rng.normal(size=N),
                         rng.integers(0, 20, N), rng.uniform(-1, 1, N)])
    y = np.where(0.03 * (X[:, 0] - 50) + X[:, 2] - X[:, 4] > 0, "yes", "no")
    return pd.DataFrame(X, columns=[c for g in COLUMNS for c in g]), y


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    rehearsal_consortium(d, [f"party{k}" for k in range(K)])
    X, y = _all()
    for k in range(K):
        X[COLUMNS[k]].to_csv(d / f"party{k}.csv", index=False)
    pd.DataFrame({"id": np.arange(N), "label": y}).to_csv(d / "labels.csv", index=False)
    (d / "bounds.json").write_text(json.dumps(BOUNDS))
    (d / "seeded.toml").write_text("seeded_allowed = true\n")
    return d


def _cli(*args):
    return [sys.executable, "-m", "privdist", *map(str, args)]


def _job(d: Path, tmp: Path, job_id: str, trust: str, timeout: float = 120, protocol: str = "auto"):
    port_file = tmp / f"{job_id}.port"
    coord = subprocess.Popen(_cli("coordinate", "--vertical", "--labels", d / "labels.csv", "--target", "label",
                                  "--parties", ",".join(f"party{k}" for k in range(K)),
                                  "--key", d / "coord/coord.key", "--cert", d / "coord/coord.crt",
                                  "--ca", d / "ca/ca.crt", "--port", 0, "--port-file", port_file, "--job-id", job_id,
                                  "--epsilon", 1, "--rounds", 6, "--trust", trust, "--bounds", d / "bounds.json",
                                  "--seed", 9, "--out", tmp / "release", "--timeout", timeout,
                                  "--vertical-protocol", protocol),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from conftest import wait_until

    wait_until(lambda: port_file.exists() and port_file.read_text().strip(), timeout=120,
               what="the coordinator's port")
    port = port_file.read_text().strip()
    parties = [subprocess.Popen(
        _cli("party", "--vertical", d / f"party{k}.csv", "--out", tmp / f"party{k}",
             "--key", d / f"party{k}/party{k}.key", "--cert", d / f"party{k}/party{k}.crt", "--ca", d / "ca/ca.crt",
             "--coordinator", f"127.0.0.1:{port}", "--coordinator-name", "coord", "--policy", d / "seeded.toml",
             "--ledger-dir", tmp / f"ledger{k}", "--timeout", timeout),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(K)]
    outs = [p.communicate(timeout=600) for p in parties]
    return coord, coord.communicate(timeout=600), parties, outs


@pytest.mark.parametrize("trust,protocol", [("local", "auto"), ("local", "admm_sharing"),
                                            ("secure_aggregation", "auto")])
def test_a_vertical_job_across_processes(pki, tmp_path, trust, protocol):
    """Local trust's default is the pool (issue 39: each party fits its own block on the coordinator's labels);
    ADMM sharing when asked and under secure aggregation."""
    import warnings

    from privdist.learn import SharedFeatureLogisticRegression
    from privdist.learn.model_io import load_model

    coord, (cout, cerr), parties, outs = _job(pki, tmp_path, f"v-{trust}", trust, protocol=protocol)
    assert coord.returncode == 0, cerr
    pooled = (trust, protocol) == ("local", "auto")
    assert ("pool: every party was given the labels" in cout) == pooled
    assert all(p.returncode == 0 for p in parties), [o[1][-2000:] for o in outs]
    release = tmp_path / "release"
    model = json.loads((release / "model.json").read_text())
    results = json.loads((release / "results.json").read_text())
    assert model["coef"] is None and not (release / "parties").exists()  # no party's block in the release
    assert results["plan"]["kind"] == "vertical" and results["plan"]["trust"] == trust
    assert results["plan"]["algorithm"] == ("pool" if pooled else "admm_sharing")
    assert results["privacy"]["guaranteed"]
    X, y = _all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = SharedFeatureLogisticRegression(epsilon=1.0, delta=1e-5, rounds=6, feature_groups=COLUMNS,
                                              scale="bounds", bounds={c: tuple(b) for c, b in BOUNDS.items()},
                                              trust=trust, random_state=9, protocol=protocol).fit(X, y)
    assert results["plan"] == ref.privacy_plan_.to_dict()
    (release / "parties").mkdir()
    for k in range(K):  # the data holders pool their blocks (owner-only files) to score
        block = tmp_path / f"party{k}" / "parties" / f"party_{k}.json"
        assert json.loads(block.read_text())["columns"] == ref.feature_groups_[k].tolist()
        shutil.copy(block, release / "parties" / block.name)
        ledger = json.loads((tmp_path / f"ledger{k}" / "ledger.json").read_text())
        assert [j["status"] for j in ledger["jobs"]] == ["finished"]
    joined = load_model(release / "model.json")
    np.testing.assert_array_equal(joined.coef, ref.coef_)
    assert joined.intercept == ref.intercept_ and joined.classes == ["no", "yes"]
