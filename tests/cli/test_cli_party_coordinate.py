"""Issue 38 end to end: ``privdist coordinate`` and three ``privdist party`` processes on 127.0.0.1 with certificates
made in the test. The model equals the estimator's on the same per-party split (a seeded run), each party's lifetime
ledger holds its releases, a second job over a party's lifetime budget is refused before it reads data, and a party
whose certificate the CA did not sign is refused."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdist.runtime.remote.pki import init_ca, make_request, rehearsal_consortium, sign_request

K = 3
COLUMNS = ["age", "income", "score"]
BOUNDS = {"age": [18, 90], "income": [0, 200], "score": [-5, 5]}


def _rows(k: int):
    from conftest import job_rows

    return job_rows(k, seed=20, n=150, step=40)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    rehearsal_consortium(d, [f"party{k}" for k in range(K)])
    init_ca(d / "rogue", "rogue")  # a CA the consortium does not know
    make_request("party2", d / "rogue2")
    sign_request(d / "rogue2" / "party2.csr", d / "rogue", d / "rogue2" / "party2.crt")
    for k in range(K):
        X, y = _rows(k)
        df = pd.DataFrame(X, columns=COLUMNS)
        df["label"] = y
        df.to_csv(d / f"party{k}.csv", index=False)
    (d / "bounds.json").write_text(json.dumps(BOUNDS))
    (d / "seeded.toml").write_text("seeded_allowed = true\nlifetime_epsilon = 1.2\n")
    return d


def _cli(*args):
    return [sys.executable, "-m", "privdist", *map(str, args)]


def _start(d: Path, out: Path, job_id: str, *, seed=None, rogue: bool = False, timeout: float = 120,
           rounds=None, ledgers: str = "ledger", algorithm=None):
    """Start the coordinator and the K parties; returns the processes (the parties' ledgers in ``d/<ledgers>k``)."""
    port_file = out.parent / f"{out.name}.port"
    coord = subprocess.Popen(_cli("coordinate", "--parties", ",".join(f"party{k}" for k in range(K)),
                                  "--key", d / "coord/coord.key", "--cert", d / "coord/coord.crt",
                                  "--ca", d / "ca/ca.crt", "--port", 0, "--port-file", port_file, "--job-id", job_id,
                                  "--epsilon", 1, "--bounds", d / "bounds.json", "--out", out, "--timeout", timeout,
                                  *(["--seed", seed] if seed is not None else []),
                                  *(["--rounds", rounds] if rounds is not None else []),
                                  *(["--algorithm", algorithm] if algorithm is not None else [])),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from conftest import wait_until

    wait_until(lambda: port_file.exists() and port_file.read_text().strip(), timeout=120,
               what="the coordinator's port")
    port = port_file.read_text().strip()
    parties = []
    for k in range(K):
        home = d / ("rogue2" if rogue and k == 2 else f"party{k}")
        parties.append(subprocess.Popen(
            _cli("party", d / f"party{k}.csv", "--target", "label", "--classes", "no,yes",
                 "--key", home / f"party{k}.key", "--cert", home / f"party{k}.crt", "--ca", d / "ca/ca.crt",
                 "--coordinator", f"127.0.0.1:{port}", "--coordinator-name", "coord", "--policy", d / "seeded.toml",
                 "--ledger-dir", d / f"{ledgers}{k}", "--timeout", timeout,
                 "--overwrite"),  # the module's jobs share each party's data folder: each replaces the last's model
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return coord, parties


def _job(d: Path, out: Path, job_id: str, **kw):
    coord, parties = _start(d, out, job_id, **kw)
    outs = [p.communicate(timeout=600) for p in parties]
    coord_out = coord.communicate(timeout=600)
    return coord, coord_out, parties, outs


def _pooled(algorithm="dpmm", seed=5):
    from privdist.learn import DistributedLogisticRegression

    X = np.vstack([_rows(k)[0] for k in range(K)])
    y = np.concatenate([_rows(k)[1] for k in range(K)])
    groups = np.concatenate([np.full(len(_rows(k)[0]), k) for k in range(K)])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DistributedLogisticRegression(algorithm=algorithm, epsilon=1.0, delta=1e-5, scale="bounds",
                                             bounds={c: tuple(b) for c, b in BOUNDS.items()}, random_state=seed
                                             ).fit(pd.DataFrame(X, columns=COLUMNS), y, groups=groups)


def test_a_job_across_processes_then_a_job_over_budget(pki, tmp_path):
    coord, (cout, cerr), parties, outs = _job(pki, tmp_path / "job1", "job1", seed=5)
    assert coord.returncode == 0, cerr
    assert all(p.returncode == 0 for p in parties), [o[1][-2000:] for o in outs]
    results = json.loads((tmp_path / "job1" / "results.json").read_text())
    model = json.loads((tmp_path / "job1" / "model.json").read_text())
    ref = _pooled()
    np.testing.assert_allclose(model["coef"], ref.coef_, rtol=0, atol=0)
    assert results["plan"]["trust"] == "secure_aggregation" and results["privacy"]["guaranteed"]
    for k in range(K):
        ledger = json.loads((pki / f"ledger{k}" / "ledger.json").read_text())
        assert [j["status"] for j in ledger["jobs"]] == ["finished"]
    shown = subprocess.run(_cli("party", "--ledger", "--ledger-dir", pki / "ledger0", "--policy",
                                pki / "seeded.toml"), capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and "job1" in shown.stdout and "coord" in shown.stdout, shown.stderr
    # a second job: 1 + 1 composes to about 1.45 > the policy's lifetime 1.2: refused before any data is read
    coord, (cout, cerr), parties, outs = _job(pki, tmp_path / "job2", "job2", seed=6)
    assert coord.returncode != 0 and "lifetime_epsilon" in cerr
    assert all(p.returncode == 3 for p in parties) and "no data read" in outs[0][0]


def test_a_job_with_the_ssp_optimiser_across_processes(pki, tmp_path):
    """Issue 39: ``--algorithm ssp``; the plan names it, each party builds it: the estimator's model (seeded)."""
    coord, (cout, cerr), parties, outs = _job(pki, tmp_path / "ssp", "ssp1", seed=9, algorithm="ssp",
                                              ledgers="ssp_ledger")
    assert coord.returncode == 0, cerr
    assert all(p.returncode == 0 for p in parties), [o[1][-2000:] for o in outs]
    results = json.loads((tmp_path / "ssp" / "results.json").read_text())
    model = json.loads((tmp_path / "ssp" / "model.json").read_text())
    assert results["plan"]["algorithm"] == "ssp" and results["privacy"]["guaranteed"]
    np.testing.assert_allclose(model["coef"], _pooled("ssp", 9).coef_, rtol=0, atol=0)


def test_a_party_the_consortium_did_not_sign_is_refused(pki, tmp_path):
    coord, (cout, cerr), parties, outs = _job(pki, tmp_path / "job3", "job3", seed=7, rogue=True, timeout=20)
    assert parties[2].returncode != 0
    assert coord.returncode != 0 and "party2" in cerr  # it never joined
    assert not (tmp_path / "job3" / "model.json").exists()
    for k in (0, 1):  # they joined and waited; the coordinator gave up before any plan: nothing in their ledgers
        assert parties[k].returncode == 1 and "before it offered the plan" in outs[k][0], outs[k]
        assert "aborted" not in outs[k][0] and _rounds_recorded(pki, f"ledger{k}", "job3") == 0
        ledger = pki / f"ledger{k}" / "ledger.json"
        assert not ledger.exists() or "job3" not in ledger.read_text()



def _rounds_recorded(d: Path, name: str, job_id: str) -> int:
    path = d / name / "ledger.json"
    if not path.exists():
        return 0
    from privdist.privacy.lifetime import LifetimeLedger

    jobs = [j for j in LifetimeLedger(d / name).jobs() if j.job == job_id]
    return max(jobs[0].rounds, default=0) if jobs else 0


def test_a_killed_party_is_a_dropout_and_a_killed_coordinator_leaves_consistent_ledgers(pki, tmp_path):
    """kill -9 of party 2 after it recorded round 3: the job finishes with the other two (a dropout of the secure
    sums) and party 2's ledger holds the rounds it released (write-ahead: at most one more than the coordinator saw).
    Then kill -9 of the coordinator mid-run: every party ends its job aborted with the rounds it released recorded; a
    rerun is a new job that the ledgers charge beside the aborted one."""
    import signal

    from conftest import wait_until
    from privdist.privacy.lifetime import LifetimeLedger

    coord, parties = _start(pki, tmp_path / "kill1", "kill1", seed=8, rounds=400, ledgers="kledger")
    wait_until(lambda: _rounds_recorded(pki, "kledger2", "kill1") >= 3, timeout=300, what="party 2's round 3")
    parties[2].send_signal(signal.SIGKILL)
    outs = [p.communicate(timeout=600) for p in parties]
    cout, cerr = coord.communicate(timeout=600)
    assert coord.returncode == 0, cerr
    assert [p.returncode for p in parties[:2]] == [0, 0] and parties[2].returncode == -signal.SIGKILL, outs
    results = json.loads((tmp_path / "kill1" / "results.json").read_text())
    lost_round = results["remote"]["lost_parties"]["2"]
    seen = sum(1 for r in results["remote"]["secure_aggregation"]["rounds"] if 2 not in r["absent"]
               and not r.get("silent"))
    (job,) = LifetimeLedger(pki / "kledger2").jobs()
    assert job.status == "running" and seen <= len(job.rounds) <= seen + 1 and lost_round >= 3
    # the coordinator killed mid-run
    coord, parties = _start(pki, tmp_path / "kill2", "kill2", seed=9, rounds=400, ledgers="cledger")
    wait_until(lambda: all(_rounds_recorded(pki, f"cledger{k}", "kill2") >= 3 for k in range(K)), timeout=300,
               what="every party's round 3")
    coord.send_signal(signal.SIGKILL)
    coord.communicate(timeout=60)
    outs = [p.communicate(timeout=600) for p in parties]
    assert all(p.returncode == 1 for p in parties), outs
    spent_before = []
    for k in range(K):
        (job,) = LifetimeLedger(pki / f"cledger{k}").jobs()
        assert job.status == "aborted" and len(job.rounds) >= 3
        spent_before.append(LifetimeLedger(pki / f"cledger{k}").spent(1e-5).epsilon)
    coord, (cout, cerr), parties, outs = _job(pki, tmp_path / "kill3", "kill2-rerun", seed=10, rounds=20,
                                              ledgers="cledger")
    assert coord.returncode == 0, cerr
    for k in range(K):
        ledger = LifetimeLedger(pki / f"cledger{k}")
        assert [j.status for j in ledger.jobs()] == ["aborted", "finished"]
        assert ledger.spent(1e-5).epsilon > spent_before[k]


def test_a_partys_stated_columns_are_those_it_reads(tmp_path):
    """The facts a party states before reading its data (header, line count, public categories) are the columns and
    rows its loader reads after accepting, one-hot columns of public categories included."""
    from privdist.cli.party_cmd import _facts, _loader

    df = pd.DataFrame({"age": [30, 40, 50, 60], "region": ["n", "s", "n", "e"], "x": [0.1, 0.2, 0.3, 0.4],
                       "label": ["no", "yes", "yes", "no"]})
    df.to_csv(tmp_path / "p.csv", index=False)
    categories = {"region": ["n", "s", "e", "w"]}
    facts = _facts(str(tmp_path / "p.csv"), "label", ["no", "yes"], categories)
    X, y, names = _loader(str(tmp_path / "p.csv"), "label", ["no", "yes"], categories)()
    assert names == facts["columns"] and X.shape == (facts["rows"], len(names))
    assert list(y) == ["no", "yes", "yes", "no"] and X[:, names.index("region=w")].sum() == 0


def test_ctrl_c_of_a_party_ends_its_job_aborted_and_the_others_finish_without_it(pki, tmp_path):
    """SIGINT (Ctrl-C) of party 2 after it recorded round 3: it printed 'interrupted' and left the job 'running' in
    its ledger for ever (its whole reservation committed); it now ends it aborted (what it released stays charged)
    and says so. The others finish without it, and the coordinator names it as lost (it said 'finished with 3
    parties')."""
    import signal

    from conftest import wait_until
    from privdist.privacy.lifetime import LifetimeLedger

    coord, parties = _start(pki, tmp_path / "int1", "int1", seed=8, rounds=400, ledgers="iledger")
    wait_until(lambda: _rounds_recorded(pki, "iledger2", "int1") >= 3, timeout=300, what="party 2's round 3")
    parties[2].send_signal(signal.SIGINT)
    outs = [p.communicate(timeout=600) for p in parties]
    cout, cerr = coord.communicate(timeout=600)
    assert coord.returncode == 0 and [p.returncode for p in parties] == [0, 0, 130], (cerr, outs)
    assert "job 'int1' is aborted in this party's ledger" in " ".join(outs[2][1].split())
    (job,) = LifetimeLedger(pki / "iledger2").jobs()
    assert job.status == "aborted" and len(job.rounds) >= 3
    assert "(1 lost during the rounds: party2)" in " ".join(cout.split())
