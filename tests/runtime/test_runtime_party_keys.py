"""One secret per party (issue 23): in secure mode nothing the driver holds and no other party's state regenerates a
party's noise, on the simulator, on Ray actors and on party actors; in research mode the seed still regenerates it.

A party's noise is read from the released messages: DPSGD updates only from released values, so the noise agent
``k`` added in round ``t`` is ``q_k(t) - x_k(t)`` with ``x_k(t)`` the noise-free update of the released ``q(t-1)``.
The test plays an omniscient observer: a backend subclass records, when the run ends, every key (from the
simulator, or from inside each actor with Ray's ``__ray_call__``) and everything the backend holds, so it can show
that agent ``k``'s own key does regenerate its noise (the test would see a leak) while nothing else does.
"""

import pickle
import sys
import types
from dataclasses import replace

import numpy as np
import pytest

from conftest import make_dzoa_problem, wait_until

from privdist.algorithms import DPSGD, make_algorithm
from privdist.contract import AgentBlock
from privdist.network import dzoa5, ring
from privdist.runtime import AgentStreams, Router, SimulatorBackend, run, run_many
from privdist.runtime.rng import AGENT_DOMAIN, COORDINATOR_DOMAIN, KEY_BITS, party_keys

try:
    import ray
except ImportError:  # the Ray tests skip (ray_session in tests/conftest.py); the simulator's run
    ray = None

ROUNDS, SEED, TRIAL, PARTY = 3, 7, 1, 2
ALGO = DPSGD(alpha0=0.3, epsilon=0.5, delta=1e-3)


# ------------------------------------------------------------------------------------------------ the observer
def released_noise(result, problem, net, algo=ALGO):
    """``(noise[t-1, k] = q_k(t) - x_k(t) for t = 1..T, per-sample weights)`` from the released messages."""
    clean, q = replace(algo, epsilon=None), result.transcript.messages("agent", "q")
    K = q.shape[1]
    router = Router(algo.messages(problem, net), net)
    state, _ = clean.init(problem, net, AgentBlock(np.arange(K), K), None)
    out = []
    for t in range(1, q.shape[0]):
        state = replace(state, q=q[t - 1])
        _, x = clean.step(state, router.agent_inbox({"q": q[t - 1]}, None, t), t, None)
        out.append(q[t] - x["q"])
    return np.stack(out), state.weights


def regenerates(noise, weights, root, agent, domain=AGENT_DOMAIN, as_agent=None, algo=ALGO) -> bool:
    """Whether the stream rooted at ``root`` (a seed or a key), at coordinates (TRIAL, domain, as_agent, t), is
    agent ``agent``'s noise in every round."""
    as_agent = agent if as_agent is None else as_agent
    for t in range(1, len(noise) + 1):
        sigma = 2.0 * algo.alpha0 / np.sqrt(t) * algo.c1 * weights[agent] * algo.mechanism.noise_multiplier
        z = AgentStreams(0, TRIAL, [as_agent], t, domain, keys=[root]).normal((noise.shape[2],))[0]
        if not np.allclose(sigma * z, noise[t - 1, agent], rtol=1e-9, atol=1e-12):
            return False
    return True


class _Blob(pickle.Pickler):
    """Pickles what the driver holds; Ray handles and modules become their names (no out-of-band references)."""

    def persistent_id(self, obj):
        if isinstance(obj, types.ModuleType) or type(obj).__module__.split(".")[0] == "ray":
            return repr(obj)
        return None


def blob(obj) -> bytes:
    import io

    buf = io.BytesIO()
    _Blob(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def assert_secret(noise, weights, keys, coord_keys, held, k=PARTY):
    """Agent ``k``'s key is not in ``held`` (bytes in either order, decimal, hex); neither the seed, the trial, the
    other agents' keys nor the coordinator's, at any agent's coordinates, regenerates its noise; its own key does."""
    key = keys[k]
    assert 0 <= key < 2 ** KEY_BITS and len(set(keys) | set(coord_keys)) == len(keys) + len(coord_keys)
    data = blob(held)
    raw = key.to_bytes(max(1, (key.bit_length() + 7) // 8), "little")
    forms = (raw, raw[::-1], str(key).encode(), f"{key:x}".encode(), f"{key:X}".encode())
    assert not any(form in data for form in forms), f"agent {k}'s key is in what the driver or the others hold"
    others = [SEED, TRIAL] + [c for j, c in enumerate(keys) if j != k] + list(coord_keys)
    for root in others:
        for domain in (AGENT_DOMAIN, COORDINATOR_DOMAIN):
            for j in range(len(keys)):
                assert not regenerates(noise, weights, root, k, domain, j), (root, domain, j)
    assert regenerates(noise, weights, key, k)  # sanity: the test detects the noise when it has the key
    assert all(regenerates(noise, weights, c, j) for j, c in enumerate(keys))  # each party's noise: its own key


def minus_key(held: dict, k=PARTY) -> dict:
    """A backend's attributes without agent ``k``'s key (the simulator keeps one key per agent in ``_keys``)."""
    return {**held, "_keys": [None if j == k else c for j, c in enumerate(held["_keys"])]}


class WatchedSimulator(SimulatorBackend):
    """Records, as the run ends, everything this backend holds (``held``) and the keys."""

    def close(self):
        self.held = dict(vars(self))
        self.seen_keys, self.seen_coord = list(self._keys or []), list(self._coord_key or [])
        super().close()


# ------------------------------------------------------------------------------------------------ simulator
def test_party_keys_and_keyed_streams():
    keys = party_keys(40)
    assert len(set(keys)) == 40 and all(0 <= k < 2 ** KEY_BITS for k in keys) and party_keys(0) == []
    s = AgentStreams(5, 1, np.arange(40), 3, keys=keys)
    assert s.entropies()[7] == [keys[7], 1, AGENT_DOMAIN, 7, 3]
    mine = [np.random.Generator(np.random.PCG64(np.random.SeedSequence(e))) for e in s.entropies()]
    np.testing.assert_array_equal(s.normal((4,)), np.stack([g.standard_normal(4) for g in mine]))  # vectorised
    assert AgentStreams(5, 1, [3], 2).entropies() == [[5, 1, AGENT_DOMAIN, 3, 2]]  # research mode: the seed
    with pytest.raises(ValueError, match="one non-negative integer per agent"):
        AgentStreams(5, 1, [0, 1], 2, keys=[1])


def test_simulator_secure_noise_is_regenerated_by_nothing_but_the_partys_key():
    problem, net = make_dzoa_problem(0), dzoa5()
    be = WatchedSimulator(blocks=2)
    res = run(ALGO, problem, net, ROUNDS, seed=SEED, trial=TRIAL, transcript="full", backend=be, secure=True,
              keep_iterates=True)
    noise, weights = released_noise(res, problem, net)
    keys = be.seen_keys
    assert len(keys) == 5 and be.seen_coord == [] and be._keys is None  # forgotten at the end of the run
    assert_secret(noise, weights, keys, [], (res, res.config, minus_key(be.held)))  # the backend minus k's key
    assert res.config["noise"]["mode"] == "secure" and res.config["noise"]["keys"] == "one per party"


def test_simulator_coordinator_draws_its_own_key():
    be = WatchedSimulator()
    run(make_algorithm("dpadmm"), make_dzoa_problem(0), dzoa5(), 2, seed=SEED, backend=be, secure=True)
    assert len(be.seen_coord) == 1 and len(set(be.seen_keys + be.seen_coord)) == 6


def test_run_many_gives_every_trial_and_agent_its_own_key(monkeypatch):
    import importlib

    run_module = importlib.import_module("privdist.runtime.run")  # the module (the package exports the function)
    made = []
    monkeypatch.setattr(run_module, "SimulatorBackend", lambda: made.append(WatchedSimulator()) or made[-1])
    problem, net = make_dzoa_problem(0), dzoa5()
    results = run_many(ALGO, [problem] * 2, [net] * 2, ROUNDS, seed=SEED, trials=[TRIAL, TRIAL], transcript="full",
                       secure=True)
    assert len({c for be in made for c in be.seen_keys}) == 10  # 2 trials x 5 agents
    for res, be, other in zip(results, made, made[::-1]):
        noise, weights = released_noise(res, problem, net)
        assert_secret(noise, weights, be.seen_keys, other.seen_keys, (res, minus_key(be.held), other.held))
    single = run(ALGO, problem, net, ROUNDS, seed=SEED, trial=TRIAL, transcript="full", secure=True)
    assert not np.allclose(single.estimates, results[0].estimates)


def test_research_mode_noise_is_the_seeds_stream_and_unchanged():
    problem, net = make_dzoa_problem(0), dzoa5()
    res = run(ALGO, problem, net, ROUNDS, seed=SEED, trial=TRIAL, transcript="full")
    noise, weights = released_noise(res, problem, net)
    assert all(regenerates(noise, weights, SEED, k) for k in range(5))  # anyone with the seed: not for release
    again = run(ALGO, problem, net, ROUNDS, seed=SEED, trial=TRIAL, backend=SimulatorBackend(blocks=5))
    assert again.transcript.digest == res.transcript.digest


# ------------------------------------------------------------------------------------------------ Ray
def _inside(worker):
    """Runs inside an actor (the observer's access): what the actor holds."""
    return dict(vars(worker))


def _lose_files(worker, token):
    """Runs inside a party's actor: its node loses the run's files (key and checkpoints)."""
    import shutil

    from privdist.runtime.ray_actors import _ckpt_path

    shutil.rmtree(_ckpt_path(token, "x").parent)


def _observe(actors):
    return ray.get([a.__ray_call__.remote(_inside) for a in actors])


def _kill(actor):
    """Kill an actor and wait until it is dead (``ray.kill`` is asynchronous)."""
    ray.kill(actor, no_restart=True)

    def dead() -> bool:
        try:
            ray.get(actor.pid.remote(), timeout=10)
        except ray.exceptions.GetTimeoutError:
            return False  # no answer yet (a loaded machine), which is not an answer that the actor is gone
        except Exception:
            return True
        return False

    wait_until(dead, timeout=120, what="the killed actor to be gone")


@pytest.fixture(scope="module")
def local_ray(ray_session):  # one local Ray for all Ray test modules (tests/conftest.py)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # _inside runs in the actors
    yield ray_session


def _watched_ray(**kw):
    from privdist.runtime.ray_backend import RayBackend

    class WatchedRay(RayBackend):
        def close(self):
            self.held = dict(vars(self))
            self.inside = _observe(self._actors + ([self._coord] if self._coord is not None else []))
            super().close()

    return WatchedRay(**kw)


def test_ray_secure_noise_is_regenerated_by_nothing_but_the_partys_key(local_ray):
    problem, net = make_dzoa_problem(0), dzoa5()
    be = _watched_ray(actors=5)  # one actor per agent
    res = run(ALGO, problem, net, ROUNDS, seed=SEED, trial=TRIAL, transcript="full", backend=be, secure=True)
    noise, weights = released_noise(res, problem, net)
    keys = [w["_keys"][0] for w in be.inside]
    others = [w for j, w in enumerate(be.inside) if j != PARTY]  # every other party's whole actor state
    assert_secret(noise, weights, keys, [], (res, res.config, be.held, others))
    for actor in be.held["_actors"]:  # kept idle and reset (or killed beyond the idle pool): no key is left
        try:
            assert "_keys" not in _observe([actor])[0]
        except ray.exceptions.RayActorError:
            pass


def test_ray_coordinator_actor_draws_its_own_key(local_ray):
    be = _watched_ray(actors=2)
    run(make_algorithm("dpadmm"), make_dzoa_problem(0), dzoa5(), 2, seed=SEED, backend=be, secure=True)
    keys = [k for w in be.inside for k in w["_keys"]]
    assert len(keys) == 6 and len(set(keys)) == 6 and len(be.inside[-1]["_keys"]) == 1


def test_ray_research_mode_is_the_simulators_run(local_ray):
    problem, net = make_dzoa_problem(0), dzoa5()
    for algo in (ALGO, make_algorithm("dpadmm")):
        sim = run(algo, problem, net, ROUNDS, seed=SEED, trial=TRIAL, backend=SimulatorBackend(blocks=2))
        got = run(algo, problem, net, ROUNDS, seed=SEED, trial=TRIAL, backend=_watched_ray(actors=2))
        assert got.transcript.digest == sim.transcript.digest


# ------------------------------------------------------------------------------------------------ party actors
K_PARTIES, P = 4, 5


@pytest.fixture
def parties(tmp_path):
    """A party-local problem whose files this machine's actors resolve (no placement: one local node)."""
    from privdist.data.per_party import clear_cache
    from privdist.problems import make_loss, make_regularizer
    from privdist.runtime.party import HorizontalParties

    rng = np.random.default_rng(3)
    for k in range(K_PARTIES):
        X = rng.standard_normal((12, P)) / np.sqrt(P)
        np.savez(tmp_path / f"h_{k}.npz", X=X, y=X @ np.ones(P) + 0.1 * rng.standard_normal(12))
    handle = HorizontalParties([str(tmp_path / f"h_{k}.npz") for k in range(K_PARTIES)], make_loss("squared"),
                               make_regularizer("l2"), 1.0, n_features=P)
    problem = handle.materialize()
    clear_cache()
    yield handle, problem, ring(K_PARTIES)
    clear_cache()


def _watched_parties(**kw):
    from privdist.runtime.ray_party import PartyBackend

    class WatchedParties(PartyBackend):
        def close(self):
            if self._slots:
                self.held = dict(vars(self))
                self.inside = _observe([s.actor for s in self._all()])
            super().close()

    return WatchedParties(placement=False, **kw)


def test_party_actors_keep_their_keys_and_a_replacement_repeats_the_noise(local_ray, parties):
    handle, problem, net = parties
    be = _watched_parties(checkpoint_every=3)

    def killer(B, calls=[]):  # metrics run in the driver after init and after every round
        calls.append(1)
        if len(calls) == 3:  # after round 2: party 2 dies before any node checkpoint (its key file only)
            _kill(be.actors()[PARTY])
        if len(calls) == 5:  # after round 4: party 1 dies; its node checkpoint of round 3 holds its key
            _kill(be.actors()[1])
        return 0.0

    res = run(ALGO, handle, net, 6, seed=SEED, trial=TRIAL, transcript="full", backend=be, secure=True,
              metrics={"k": killer})
    first, second = res.config["ray"]["restarts"]
    assert (first["agents"], first["resumed_from_round"], first["replayed_rounds"]) == ([PARTY], 0, 2)
    assert (second["agents"], second["resumed_from_round"], second["replayed_rounds"]) == ([1], 3, 1)
    noise, weights = released_noise(res, problem, net)
    keys = [w["_keys"][0] for w in be.inside]
    for k in (PARTY, 1):
        assert be.inside[k]["_key_origin"] == "node"  # the replacement read the dead actor's key on its node
        others = [w for j, w in enumerate(be.inside) if j != k]
        # every round, before and after the replacement, carries the one key's noise: no round released twice
        assert_secret(noise, weights, keys, [], (res, res.config, be.held, others), k=k)


def test_a_replacement_without_its_key_is_refused_in_secure_mode(local_ray, parties):
    from privdist.runtime import ray_party

    handle, problem, net = parties
    be = _watched_parties(checkpoint_every=3)

    def killer(B, calls=[]):
        calls.append(1)
        if len(calls) == 3:  # after round 2: the node loses the party's files, then the actor dies
            ray.get(be.actors()[PARTY].__ray_call__.remote(_lose_files, be._token))
            _kill(be.actors()[PARTY])
        return 0.0

    with pytest.raises(ray_party.SecureReplayError, match=f"agent {PARTY} died .*secure mode: its replacement"):
        run(ALGO, handle, net, 6, seed=SEED, backend=be, secure=True, metrics={"k": killer})


def test_a_resumed_party_local_secure_run_repeats_its_rounds(local_ray, parties, tmp_path):
    handle, problem, net = parties
    ckpt = tmp_path / "run.ckpt"

    def stopper(B, calls=[]):
        calls.append(1)
        if len(calls) == 5:  # after round 4; the driver checkpoint of round 2 is on disk
            raise KeyboardInterrupt("stop")
        return 0.0

    with pytest.raises(KeyboardInterrupt):
        run(ALGO, handle, net, 6, seed=SEED, trial=TRIAL, transcript="full", backend=_watched_parties(),
            metrics={"s": stopper}, checkpoint=ckpt, checkpoint_every=2, secure=True)
    be = _watched_parties()
    res = run(ALGO, handle, net, 6, seed=SEED, trial=TRIAL, transcript="full", backend=be, checkpoint=ckpt,
              checkpoint_every=2, resume=True, secure=True)
    noise, weights = released_noise(res, problem, net)
    keys = [w["_keys"][0] for w in be.inside]
    # rounds 1-2 come from the first run's checkpoint, 3-6 from the resumed actors: one key per party throughout
    assert_secret(noise, weights, keys, [], (res, be.held, ckpt.read_bytes()))
