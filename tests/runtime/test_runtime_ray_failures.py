"""Ray backend failures and CLI (issue 7): killed actor, resume, unreachable address, ``--backend ray``,
``--parallel ray``. One local Ray (2 CPUs, ``ray_session`` in tests/conftest.py)
serves all Ray test modules."""

import json
import os
import signal
import socket

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from conftest import make_dzoa_problem  # noqa: E402

from privdist.algorithms import make_algorithm  # noqa: E402
from privdist.cli.main import main  # noqa: E402
from privdist.errors import ValidationError  # noqa: E402
from privdist.experiments import parse_spec, run_experiment  # noqa: E402
from privdist.network import dzoa5  # noqa: E402
from privdist.runtime import run  # noqa: E402
from privdist.experiments import ray_parallel  # noqa: E402
from privdist.runtime import ray_common  # noqa: E402
from privdist.runtime.ray_backend import AgentFailedError, RayBackend, RayConnectionError, connect  # noqa: E402

SMALL = {
    "name": "small_ray", "trials": 2, "rounds": 8, "seed": 5, "data": {"kind": "dzoa_synthetic"},
    "network": {"kind": "dzoa5"}, "problem": {"loss": "squared", "regularizer": "l2", "reg_weight": 1.0},
    "privacy": {"delta": 1e-3},
    "runs": [{"label": "admm", "algorithm": "consensus_admm", "params": {"rho": 1.0}},
             {"label": "dpsgd", "algorithm": "dpsgd", "params": {"alpha0": 0.3, "epsilon": 0.5}}],
}


def test_unreachable_address_fails_fast_with_a_clear_error(monkeypatch):
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("ray.init must not be reached"))
    attempts, real = [], socket.create_connection

    def spy(address, timeout):  # fast by construction: one connection attempt, bounded by the caller's timeout
        attempts.append((address, timeout))
        return real(address, timeout=timeout)

    monkeypatch.setattr(socket, "create_connection", spy)
    with pytest.raises(RayConnectionError, match="cannot reach the Ray cluster at '127.0.0.1:1'"):
        connect("127.0.0.1:1", timeout=1.0)  # refused
    with pytest.raises(RayConnectionError, match="HOST:PORT"):
        connect("no-port-here", timeout=0.5)  # refused before any connection attempt
    assert attempts == [(("127.0.0.1", 1), 1.0)]

    def silent(address, timeout):  # a host that never answers: the socket's own timeout fires
        raise socket.timeout("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(RayConnectionError, match=r"within 0.5 s .*ray start --head"):
        connect("10.255.255.1:6379", timeout=0.5)


def test_address_that_is_not_a_ray_cluster_is_a_named_error(monkeypatch):
    def refuse(address=None, **kwargs):  # what ray.init raises once its bounded GCS retry gives up
        raise ConnectionError(f"Failed to connect to Ray cluster at {address}")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # leave this process's Ray authentication mode alone
    monkeypatch.setattr(ray_common, "_check_reachable", lambda address, timeout: None)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(RayConnectionError, match="cannot connect to the Ray cluster at '10.0.0.9:6379'"):
        connect("10.0.0.9:6379")


@pytest.fixture
def local_ray(ray_session):  # one local Ray for all Ray test modules (tests/conftest.py)
    return ray_session


def test_killed_actor_names_agent_and_round(local_ray):
    problem, net = make_dzoa_problem(0), dzoa5()
    be = RayBackend(actors=5)  # one actor per agent

    def killer(B, calls=[]):  # metrics run in the driver after init (call 0) and after every round
        calls.append(1)
        if len(calls) == 3:  # after round 2: kill agent 3's process
            os.kill(be.actor_pids()[3], signal.SIGKILL)
        return 0.0

    with pytest.raises(AgentFailedError, match=r"agent 3 died in round 3") as info:
        run(make_algorithm("consensus_admm"), problem, net, 6, backend=be, metrics={"kill": killer})
    assert info.value.agents == [3] and info.value.round == 3 and info.value.role == "agent"
    # the dead actor is not reused: the same backend object runs again, correctly
    again = run(make_algorithm("consensus_admm"), problem, net, 6, backend=be)
    ref = run(make_algorithm("consensus_admm"), problem, net, 6)
    np.testing.assert_allclose(again.estimates, ref.estimates, rtol=1e-9)


def test_killed_actor_keeps_finished_trials_and_resume_completes(local_ray, tmp_path, monkeypatch):
    spec = parse_spec(SMALL)
    original = RayBackend.step_agents

    def step_and_die(self, t, inbox):  # trial 1, round 4: the first agent actor is killed
        if self.trial == 1 and t == 4:
            os.kill(self.actor_pids()[0], signal.SIGKILL)
        return original(self, t, inbox)

    monkeypatch.setattr(RayBackend, "step_agents", step_and_die)
    with pytest.raises(AgentFailedError, match=r"agents \[0, 1, 2\] died in round 4"):
        run_experiment(spec, tmp_path / "ray", progress=False, backend="ray")
    kept = list((tmp_path / "ray" / "trials").glob("trial_*.json"))
    assert [json.loads(f.read_text())["trial"] for f in kept] == [0]  # the finished trial stayed on disk
    monkeypatch.setattr(RayBackend, "step_agents", original)
    resumed = run_experiment(spec, tmp_path / "ray", progress=False, backend="ray", resume=True)
    sim = run_experiment(spec, tmp_path / "sim", progress=False)
    assert resumed["complete"] and resumed["trials"] == 2
    for a, b in zip(resumed["runs"], sim["runs"]):
        np.testing.assert_allclose(a["metrics"]["ne"]["curve_mean"], b["metrics"]["ne"]["curve_mean"], rtol=1e-9)


def _finals(path):
    data = json.loads((path / "results.json").read_text())
    return {r["label"]: r["metrics"]["ne"]["final_mean"] for r in data["runs"]}, data


def test_cli_backend_ray_and_parallel_ray_match_the_simulator(local_ray, tmp_path, capsys):
    spec_file = tmp_path / "small.toml"
    spec_file.write_text(_toml(SMALL))
    base = ["run", str(spec_file), "--no-progress", "--out"]
    assert main(base + [str(tmp_path / "sim")]) == 0
    sim_table = capsys.readouterr().out
    assert main(base + [str(tmp_path / "ray"), "--backend", "ray"]) == 0
    ray_table = capsys.readouterr().out
    assert main(base + [str(tmp_path / "par"), "--parallel", "ray"]) == 0
    sim, _ = _finals(tmp_path / "sim")
    for other in ("ray", "par"):
        got, data = _finals(tmp_path / other)
        assert data["complete"] and data["trials"] == 2
        assert got.keys() == sim.keys()
        for label in sim:
            assert got[label] == pytest.approx(sim[label], rel=1e-9)
    # the printed table is the simulator's, except the seconds column
    strip = [line.rsplit("│", 2)[0] for line in sim_table.splitlines() if "±" in line]
    assert strip == [line.rsplit("│", 2)[0] for line in ray_table.splitlines() if "±" in line]


def test_cli_rejects_inconsistent_ray_options(local_ray, tmp_path, capsys):
    spec_file = tmp_path / "small.toml"
    spec_file.write_text(_toml(SMALL))
    assert main(["run", str(spec_file), "--ray-address", "auto", "--out", str(tmp_path / "a")]) == 2
    assert "--ray-address) needs --backend ray" in capsys.readouterr().err
    assert main(["run", str(spec_file), "--backend", "ray", "--jobs", "2", "--out", str(tmp_path / "b")]) == 2
    assert "--parallel ray" in capsys.readouterr().err
    with pytest.raises(ValidationError):
        ray_parallel.check_cli_options("ray", "process", 2, None)


def _toml(d: dict) -> str:
    """Minimal TOML writer for the flat SMALL spec (tables and arrays of tables of scalars)."""
    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + "}"
        return json.dumps(v)

    lines = [f"{k} = {val(v)}" for k, v in d.items() if not isinstance(v, (dict, list))]
    for k, v in d.items():
        if isinstance(v, dict):
            lines += [f"[{k}]"] + [f"{kk} = {val(x)}" for kk, x in v.items()]
    for entry in d["runs"]:
        lines += ["[[runs]]"] + [f"{kk} = {val(x)}" for kk, x in entry.items()]
    return "\n".join(lines) + "\n"


def test_token_authentication_only_when_the_cluster_requires_it(monkeypatch):
    """Issue 17: connect() used to turn on Ray token authentication whenever ~/.ray/auth_token existed, which broke
    clusters started without tokens (their worker node's actors died). Now: RAY_AUTH_MODE (explicit) is Ray's; else
    only a cluster that refuses a token-less client gets the token, and a missing token is a named error."""
    from ray._private.authentication import authentication_token_setup as auth

    enabled = []
    monkeypatch.setattr(auth, "maybe_enable_token_auth_if_token_available",
                        lambda **k: enabled.append(1) or bool(have_token))
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    have_token = True
    monkeypatch.setattr(ray_common, "cluster_requires_token", lambda a: False)
    ray_common._token_auth_if_required("127.0.0.1:1")
    assert enabled == []  # a cluster without tokens is joined without
    monkeypatch.setattr(ray_common, "cluster_requires_token", lambda a: True)
    ray_common._token_auth_if_required("127.0.0.1:1")
    assert enabled == [1]
    have_token = False
    with pytest.raises(RayConnectionError, match="requires token authentication"):
        ray_common._token_auth_if_required("127.0.0.1:1")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the user's explicit choice: not asked, left to Ray
    monkeypatch.setattr(ray_common, "cluster_requires_token", lambda a: pytest.fail("must not probe"))
    ray_common._token_auth_if_required("127.0.0.1:1")


def test_a_ray_client_address_is_not_probed_for_tokens():
    assert ray_common.cluster_requires_token("ray://127.0.0.1:10001") is False
