"""Data stays with its party on a real two-node Ray cluster (issue 17).

A head node (resources ``party_0``, ``party_1``, ``coordinator``) and a worker node (``party_2``, ``party_3``) are
started by ``ray.cluster_utils.Cluster`` as separate raylets, each with its own ``PRIVDIST_TEST_PARTY_DIR``
pointing to its own temporary data directory; the driver (this process) has no such variable, so every party's
data path resolves only on that party's node. The released models must equal the simulator's on the same data,
and a party actor killed mid-run must come back and finish with the uninterrupted result.
"""

import os

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from privdist.algorithms import make_algorithm  # noqa: E402
from privdist.data.per_party import PartyDataError, clear_cache  # noqa: E402
from privdist.data import per_party  # noqa: E402
from privdist.network import ring  # noqa: E402
from privdist.privacy import privacy_report  # noqa: E402
from privdist.problems import make_loss, make_regularizer  # noqa: E402
from privdist.runtime import SimulatorBackend, run  # noqa: E402
from privdist.runtime.party import (HorizontalParties, PartyMetric, PooledDataUnavailableError,  # noqa: E402
                                   VerticalParties)
from privdist.errors import CheckpointError  # noqa: E402
from privdist.runtime.ray_backend import AgentFailedError, connect  # noqa: E402
from privdist.runtime.ray_party import PartyBackend, PlacementError  # noqa: E402
from privdist.runtime.serve import Cluster  # noqa: E402

ENV = "PRIVDIST_TEST_PARTY_DIR"
K, P, N_H, N_V, DIMS = 4, 5, 15, 30, (2, 3, 2, 3)
HEAD, WORKER = (0, 1), (2, 3)
ROUNDS = 8


def _write_data(head_dir, worker_dir):
    rng = np.random.default_rng(17)
    omega = rng.standard_normal(P)
    for k in range(K):
        X = rng.standard_normal((N_H, P)) / np.sqrt(P)
        y = X @ omega + 0.1 * rng.standard_normal(N_H)
        D = rng.standard_normal((N_V, DIMS[k]))
        d = head_dir if k in HEAD else worker_dir
        np.savez(os.path.join(d, f"h_{k}.npz"), X=X, y=y)
        np.savez(os.path.join(d, f"v_{k}.npz"), X=D)
    np.savez(os.path.join(head_dir, "labels.npz"), y=np.where(rng.standard_normal(N_V) > 0, 1.0, -1.0))


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    from ray.cluster_utils import Cluster as RayTestCluster

    assert ENV not in os.environ, f"{ENV} must not be set in the driver"
    head_dir, worker_dir = (str(tmp_path_factory.mktemp(n)) for n in ("head_node", "worker_node"))
    _write_data(head_dir, worker_dir)
    if ray.is_initialized():  # another module's local Ray: this module needs its own cluster
        ray.shutdown()
    cluster = None
    try:
        cluster = RayTestCluster(initialize_head=True, head_node_args=dict(
            num_cpus=1, resources={"party_0": 1, "party_1": 1, "coordinator": 1}, env_vars={ENV: head_dir},
            include_dashboard=False))
        cluster.add_node(num_cpus=1, resources={"party_2": 1, "party_3": 1}, env_vars={ENV: worker_dir})
        auth_mode = os.environ.get("RAY_AUTH_MODE")
        # privdist's connect: token authentication only if the cluster requires it (this one has none; turning
        # it on whenever ~/.ray/auth_token exists made the worker node's actors die before they ran)
        connect(cluster.address)
        assert os.environ.get("RAY_AUTH_MODE") == auth_mode
    except Exception as exc:  # pragma: no cover - depends on the machine
        if cluster is not None:
            cluster.shutdown()
        pytest.skip(f"cannot start a two-node Ray cluster here: {type(exc).__name__}: {exc}")
    session = Cluster(cluster.address)
    nodes = {n["Resources"].get("party_0", 0) > 0: n["NodeID"] for n in ray.nodes() if n["Alive"]}
    yield {"session": session, "head": nodes[True], "worker": nodes[False], "dirs": (head_dir, worker_dir)}
    session.close()
    ray.shutdown()
    cluster.shutdown()


def _horizontal(root=None):
    """The party-local problem; with ``root`` (a function of the party id) the same files by explicit path."""
    where = (lambda k: f"${ENV}") if root is None else root
    return HorizontalParties([f"{where(k)}/h_{k}.npz" for k in range(K)], make_loss("squared"),
                             make_regularizer("l2"), 1.0, n_features=P)


def _vertical(root=None):
    where = (lambda k: f"${{{ENV}}}") if root is None else root
    return VerticalParties([f"{where(k)}/v_{k}.npz" for k in range(K)], f"{where(0)}/labels.npz", dims=DIMS,
                           n_samples=N_V, reg_weight=0.1)


def _materialized(make, dirs):
    """The same problem built in this process from the files (the simulator reference on the same data)."""
    try:
        return make(lambda k: dirs[0] if k in HEAD else dirs[1]).materialize()
    finally:
        clear_cache()


def _assert_same(ref, got):
    assert sorted(ref.transcript.rounds) == sorted(got.transcript.rounds)
    for t, msgs in ref.transcript.rounds.items():
        for key, arr in msgs.items():
            np.testing.assert_allclose(got.transcript.rounds[t][key], arr, rtol=1e-12, atol=0,
                                       err_msg=f"round {t} {key}")
    np.testing.assert_allclose(got.estimates, ref.estimates, rtol=1e-12, atol=0)
    assert privacy_report(ref.ledger, 1e-3)["per_agent"] == privacy_report(got.ledger, 1e-3)["per_agent"]


def _placed_right(result, info):
    placed = result.config["ray"]["placement"]
    for k in range(K):
        assert placed[f"party_{k}"]["node_id"] == info["head" if k in HEAD else "worker"], k


@pytest.mark.parametrize("name,params", [("consensus_admm", {"rho": 1.0}),
                                         ("dpsgd", {"alpha0": 0.3, "epsilon": 0.5})])
def test_horizontal_parties_on_their_nodes_equal_the_simulator(two_nodes, name, params):
    algo, net = make_algorithm(name, **params), ring(K)
    got = run(algo, _horizontal(), net, ROUNDS, seed=3, transcript="full", backend=two_nodes["session"].backend())
    _placed_right(got, two_nodes)
    assert got.final_state is None and got.config["data"]["resolved"] == "each party's actor, on its node"
    problem = _materialized(_horizontal, two_nodes["dirs"])
    _assert_same(run(algo, problem, net, ROUNDS, seed=3, transcript="full", backend=SimulatorBackend(blocks=K)), got)
    one = run(algo, problem, net, ROUNDS, seed=3, transcript="full")  # the default single block: to 1e-9
    np.testing.assert_allclose(got.estimates, one.estimates, rtol=1e-9, atol=1e-12)


def test_admm_sharing_parties_and_coordinator_on_their_nodes_equal_the_simulator(two_nodes):
    algo, net = make_algorithm("admm_sharing", rho=1.0, epsilon=1.0, b1=5.0), ring(K)
    got = run(algo, _vertical(), net, ROUNDS, seed=4, transcript="full", backend=two_nodes["session"].backend())
    _placed_right(got, two_nodes)
    assert got.config["ray"]["placement"]["coordinator"]["node_id"] == two_nodes["head"]
    assert got.final_coordinator_state is None  # the labels never reach the driver
    ref = run(algo, _materialized(_vertical, two_nodes["dirs"]), net, ROUNDS, seed=4, transcript="full",
              backend=SimulatorBackend(blocks=K))
    _assert_same(ref, got)


def test_the_driver_cannot_resolve_any_party_data(two_nodes):
    handle = _horizontal()
    for k in range(K):
        with pytest.raises(PartyDataError, match=f"{ENV}.*not set on node"):
            handle.sources[k].resolve(k)
    with pytest.raises(PartyDataError):  # the simulator would need the data here: it cannot get them
        run(make_algorithm("consensus_admm"), handle, ring(K), 2)
    with pytest.raises(PooledDataUnavailableError, match="X"):
        handle.X  # noqa: B018  (no pooled arrays on a handle)
    run(make_algorithm("consensus_admm"), handle, ring(K), 2, backend=two_nodes["session"].backend())
    assert per_party._CACHE == {}  # nothing was ever resolved in this process
    assert handle._local == {}


def test_missing_resource_is_a_named_error_before_round_one(two_nodes, monkeypatch):
    backend = two_nodes["session"].backend(placement={0: "party_0", 1: "party_1", 2: "party_2", 3: "party_9"})
    # before round one: the placement is refused before any party actor is acquired or started
    with monkeypatch.context() as m, pytest.raises(PlacementError, match=r"party_9.*party 3.*ray start --address"):
        m.setattr(PartyBackend, "_start_actors", lambda *a, **k: pytest.fail("a party actor was started"))
        run(make_algorithm("consensus_admm"), _horizontal(), ring(K), ROUNDS, backend=backend)
    pooled = lambda B: 0.0  # noqa: E731
    pooled.needs_pooled_data = True
    with pytest.raises(PooledDataUnavailableError, match="pooled"):
        run(make_algorithm("consensus_admm"), _horizontal(), ring(K), 2, backend=two_nodes["session"].backend(),
            metrics={"ne": pooled})


def test_killed_party_actor_restarts_on_its_node_and_the_run_is_unchanged(two_nodes):
    algo, net = make_algorithm("dpsgd", alpha0=0.3, epsilon=0.5), ring(K)
    be = PartyBackend(two_nodes["session"].address, checkpoint_every=3, pool=two_nodes["session"]._pool)

    def killer(B, calls=[]):  # metrics run in the driver after init and after every round
        calls.append(1)
        if len(calls) == 6:  # after round 5: kill party 2 (worker node); checkpoint at 3, replay 4..5
            ray.kill(be.actors()[2], no_restart=True)
        return float(np.linalg.norm(B))

    got = run(algo, _horizontal(), net, ROUNDS, seed=5, transcript="full", backend=be, metrics={"norm": killer})
    (restart,) = got.config["ray"]["restarts"]
    assert restart["agents"] == [2] and restart["round"] == 6 and restart["resumed_from_round"] == 3
    # ray.kill is asynchronous: the death is seen at round 6's step (replay 4..5) or, when that call got through
    # first (a loaded machine: seen once in CI), at the round's next call to the actor (replay 4..6)
    assert restart["replayed_rounds"] in (2, 3) and restart["node_id"] == two_nodes["worker"]
    whole = run(algo, _horizontal(), net, ROUNDS, seed=5, transcript="full",
                backend=two_nodes["session"].backend(), metrics={"norm": lambda B: float(np.linalg.norm(B))})
    assert whole.config["ray"]["restarts"] == []
    _assert_same(whole, got)
    np.testing.assert_array_equal(got.curves["norm"], whole.curves["norm"])

    be0 = PartyBackend(two_nodes["session"].address, max_restarts=0, pool=two_nodes["session"]._pool)

    def killer0(B, calls=[]):
        calls.append(1)
        if len(calls) == 3:
            ray.kill(be0.actors()[1], no_restart=True)
        return 0.0

    # the same asynchronous ray.kill as above: the death is seen at round 3's call or, when that call got through
    # first (seen once in CI), at round 4's
    with pytest.raises(AgentFailedError, match=r"agent 1 died in round [34] .*max_restarts=0"):
        run(algo, _horizontal(), net, ROUNDS, seed=5, backend=be0, metrics={"k": killer0})


# ---------------------------------------------------------------------------------------------- the CLI path
def _spec_toml(kind, root, algorithm, params, metrics=("disagreement",)):
    """A per-party spec; ``root(k)`` is party k's directory as written in the spec (``$VAR`` or a real path)."""
    if kind == "party_horizontal":
        data = f"n_features = {P}, parties = [{', '.join(repr(f'{root(k)}/h_{k}.npz') for k in range(K))}]"
        problem = 'loss = "squared"\nregularizer = "l2"\nreg_weight = 1.0'
    else:
        data = (f"dims = {list(DIMS)}, n_samples = {N_V}, labels = {root(0) + '/labels.npz'!r}, "
                f"parties = [{', '.join(repr(f'{root(k)}/v_{k}.npz') for k in range(K))}]")
        problem = "reg_weight = 0.1"
    pstr = ", ".join(f"{k} = {v}" for k, v in params.items())
    return (f'name = "cli_{kind}"\ntrials = 1\nrounds = {ROUNDS}\nseed = 6\nmetrics = {list(metrics)!r}\n'
            f'[data]\nkind = "per_party"\nparams = {{ {data} }}\n[network]\nkind = "ring"\nparams = {{ n = {K} }}\n'
            f'[problem]\nkind = "{kind}"\n{problem}\n'
            f'[[runs]]\nlabel = "{algorithm}"\nalgorithm = "{algorithm}"\nparams = {{ {pstr} }}\n')


def _cli_run(tmp_path, name, text, *extra):
    import json

    from privdist.cli.main import main

    spec = tmp_path / f"{name}.toml"
    spec.write_text(text)
    out = tmp_path / name
    assert main(["run", str(spec), "--out", str(out), "--no-progress", *extra]) == 0
    run = json.loads((out / "results.json").read_text())["runs"][0]
    # per-party data are a user's data: metrics and run info are owner-only evaluation (issue 24 release boundary)
    owner = json.loads((out / "owner_only" / "metrics.json").read_text())["runs"][0]
    return {**run, "metrics": owner["metrics"], "info": owner["info"]}


@pytest.mark.parametrize("kind,algorithm,params", [
    ("party_horizontal", "consensus_admm", {"rho": 1.0}),
    ("party_vertical", "admm_sharing", {"rho": 1.0, "epsilon": 1.0, "b1": 5.0})])
def test_cli_run_per_party_spec_on_the_cluster_equals_the_simulator(two_nodes, tmp_path, kind, algorithm, params):
    """``privdist run SPEC.toml --backend ray --address A`` with ``[data] kind = "per_party"``: every party's data
    path resolves only on its node; the curves equal those of ``--backend simulate`` on the same files."""
    dirs = two_nodes["dirs"]
    metrics = ("disagreement", "objective")
    got = _cli_run(tmp_path, "ray", _spec_toml(kind, lambda k: f"${ENV}", algorithm, params, metrics),
                   "--backend", "ray", "--address", two_nodes["session"].address)
    assert per_party._CACHE == {}  # the driver never resolved a party's data
    try:  # the reference: the same files by explicit path, resolved in this process
        ref = _cli_run(tmp_path, "sim", _spec_toml(kind, lambda k: dirs[0] if k in HEAD else dirs[1], algorithm,
                                                   params, metrics))
    finally:
        clear_cache()
    (info,), (ref_info,) = got["info"], ref["info"]
    assert info["data"]["resolved"] == "each party's actor, on its node"
    assert ref_info["data"]["resolved"] == "driver (materialized)"
    assert info["metrics_where"]["disagreement"].startswith("driver")
    assert info["metrics_where"]["objective"].startswith("at the parties")  # only scalars left the parties
    assert ref_info["metrics_where"]["objective"].startswith("driver, on the materialized problem")
    placed = info["ray"]["placement"]
    assert {placed[f"party_{k}"]["node_id"] for k in WORKER} == {two_nodes["worker"]}
    for m, curve in ref["metrics"].items():
        np.testing.assert_allclose(got["metrics"][m]["curve_mean"], curve["curve_mean"], rtol=1e-9, atol=1e-12)
    assert got["privacy"]["per_agent"] == ref["privacy"]["per_agent"]
    assert [e for e in got["privacy"]["exposures"] if e not in ref["privacy"]["exposures"]] == [
        PartyMetric("objective", None).exposure()]  # the party-computed objective is recorded as released


def test_interrupted_party_local_run_resumes_from_the_driver_checkpoint(two_nodes, tmp_path):
    """run(checkpoint=..., resume=True): the driver's file holds messages, ledger and a token, each party's state
    stays on its node; a resumed run (new actors) continues with the uninterrupted transcript."""

    algo, net, ckpt = make_algorithm("admm_sharing", rho=1.0, epsilon=1.0, b1=5.0), ring(K), tmp_path / "run.ckpt"
    session = two_nodes["session"]

    def stopper(B, calls=[]):
        calls.append(1)
        if len(calls) == 6:  # after round 5; the driver checkpoint of round 4 is on disk
            raise KeyboardInterrupt("stop")
        return float(np.linalg.norm(B))

    with pytest.raises(KeyboardInterrupt):
        run(algo, _vertical(), net, ROUNDS, seed=8, transcript="full", backend=session.backend(),
            metrics={"norm": stopper}, checkpoint=ckpt, checkpoint_every=2)
    import pickle

    payload = pickle.loads(ckpt.read_bytes())
    assert payload["round"] == 4 and payload["snapshot"]["state"] is None  # no party state in the driver's file
    norm = lambda B: float(np.linalg.norm(B))  # noqa: E731
    got = run(algo, _vertical(), net, ROUNDS, seed=8, transcript="full", backend=session.backend(),
              metrics={"norm": norm}, checkpoint=ckpt, checkpoint_every=2, resume=True)
    whole = run(algo, _vertical(), net, ROUNDS, seed=8, transcript="full", backend=session.backend(),
                metrics={"norm": norm})
    _assert_same(whole, got)
    np.testing.assert_array_equal(got.curves["norm"], whole.curves["norm"])
    payload["snapshot"]["token"] = "driver-missing"
    ckpt.write_bytes(pickle.dumps(payload))
    with pytest.raises(CheckpointError, match="node checkpoints of party_0 .*none"):
        run(algo, _vertical(), net, ROUNDS, seed=8, backend=session.backend(), checkpoint=ckpt, resume=True)


def test_served_cluster_keeps_warm_actors_across_drivers_one_run_at_a_time(two_nodes, tmp_path, monkeypatch):
    """privdist serve's keeper (issue 17): a run in another process (the CLI) takes the prewarmed actors; while a
    run holds them a second one queues and, past its wait, gets ServeBusyError; --stop removes them."""
    import json
    import subprocess
    import sys

    from privdist.runtime import serve

    warm = ["party_0", "party_1", "party_2", "party_3", "coordinator"]
    keeper = serve.start_keeper(ray, {"address": two_nodes["session"].address}, warm)
    try:
        with pytest.raises(serve.ServeError, match="already served"):
            serve.start_keeper(ray, {}, [])
        spec = tmp_path / "served.toml"
        spec.write_text(_spec_toml("party_horizontal", lambda k: f"${ENV}", "consensus_admm", {"rho": 1.0}))
        first = run(make_algorithm("consensus_admm"), _horizontal(), ring(K), 2, backend="ray")  # this driver
        assert first.config["ray"]["served"] is True
        env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
        subprocess.run([sys.executable, "-m", "privdist", "run", str(spec), "--backend", "ray", "--address",
                        two_nodes["session"].address, "--out", str(tmp_path / "other"), "--no-progress"],
                       check=True, env=env, timeout=300, capture_output=True)  # another driver process
        (info,) = json.loads((tmp_path / "other" / "owner_only" / "metrics.json").read_text())["runs"][0]["info"]
        assert info["ray"]["served"] is True
        pids = [{n: p["pid"] for n, p in placed.items()} for placed in (first.config["ray"]["placement"],
                                                                          info["ray"]["placement"])]
        assert pids[0] == pids[1]  # the other driver ran on the same (warm) actor processes
        status = ray.get(keeper.status.remote())
        assert status["runs"] == 2 and status["busy"] is None and status["idle"]["party_3"] == 1

        holder = serve.served_pool(ray, wait=0)
        held = holder.acquire(ray, ["party_0"])  # another run holds the served actors
        monkeypatch.setenv("PRIVDIST_SERVE_WAIT", "0")
        with pytest.raises(serve.ServeBusyError, match="in use by another run"):
            run(make_algorithm("consensus_admm"), _horizontal(), ring(K), 2, backend="ray")
        with pytest.raises(serve.ServeBusyError, match="is using the served actors"):
            serve.stop_keeper(ray)
        holder.release(ray, held, ["party_0"], set())
        res = run(make_algorithm("consensus_admm"), _horizontal(), ring(K), 2, backend="ray")
        assert res.config["ray"]["served"] is True
    finally:
        out = serve.stop_keeper(ray, force=True)
    assert out["killed"] == 5 and serve.find_keeper(ray) is None
