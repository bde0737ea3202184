"""Pairwise (network) DP accountant (issue 29): brute-force reference, closed forms, declared = drawn noise."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from privdist.algorithms import DPSGD
from privdist.algorithms.dpadmm import DPADMM
from privdist.algorithms.linear_models import dpadmm_protocol, dpsgd_protocol, gossip_protocol
from privdist.errors import ShapeMismatchError, UnsupportedEventError, ValidationError
from privdist.network import TimeVaryingNetwork, complete, random_regular, random_time_varying, ring
from privdist.privacy import PrivacyLedger, gaussian_release, laplace_release, privacy_report
from privdist.privacy.pairwise.linear_protocol import LinearProtocol, Messages, observer_view
from privdist.privacy.pairwise.network_dp import gdp_epsilons, noise_multipliers, pairwise_mu
from privdist.privacy.pairwise.network_report import common_neighbours
from privdist.problems import HorizontalERM, make_loss, make_regularizer
from privdist.runtime import run


# ----------------------------------------------------------------------------------------------- reference
def _reference_B(protocol: LinearProtocol, members) -> np.ndarray:
    """``B`` by forward simulation of unit impulses (rows: observed messages in round order; columns ``(s, k)``)."""
    T, N = protocol.rounds, protocol.n_agents
    cols = []
    for s in range(1, T + 1):
        for k in range(N):
            x = np.zeros(protocol.n_state)
            rows = []
            for t in range(1, T + 1):
                x = protocol.transition(t) @ x
                if t == s:
                    x = x + protocol.inputs(t).toarray()[:, k]
                msg = protocol.messages(t)
                H = msg.H.toarray()
                R = msg.receivers.toarray()
                senders = np.where(msg.senders < 0, N, msg.senders)
                keep = (R[members].sum(axis=0) > 0) & ~np.isin(senders, members)
                rows.append(H[keep] @ x)
            cols.append(np.concatenate(rows))
    return np.array(cols).T


def _reference_mu(protocol, z, observer, target) -> float:
    """sqrt of the SDP value (cvxpy) of ``max tr(M X)``, ``X >= 0``, ``X_ss <= r_s^2``, ``M = A^T G^+ A``."""
    members = np.atleast_1d(observer)
    B = _reference_B(protocol, members)
    T, N = protocol.rounds, protocol.n_agents
    sigma = (z * protocol.sensitivity).copy()
    sigma[:, members[members < N]] = 0.0
    BS = B * sigma.reshape(-1)[None, :]
    A = BS[:, target::N]
    M = A.T @ np.linalg.pinv(BS @ BS.T, rcond=1e-12, hermitian=True) @ A
    M = 0.5 * (M + M.T)
    r = 1.0 / z[:, target]
    X = cp.Variable((T, T), PSD=True)
    prob = cp.Problem(cp.Maximize(cp.trace(M @ X)), [cp.diag(X) <= r ** 2])
    prob.solve(solver=cp.SCS, eps=1e-9, max_iters=200000)
    return math.sqrt(max(prob.value, 0.0))


def _alphas(T):
    return 1.0 / np.sqrt(np.arange(1, T + 1))


# ----------------------------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("case", ["ring", "regular", "separable", "timevarying", "dpadmm"])
def test_matches_the_brute_force_semidefinite_value(case):
    """``separable``: one noise multiplier per agent on a static graph, the lag recursion's case."""
    rng = np.random.default_rng(1)
    if case == "ring":
        N, T = 6, 4
        protocol = gossip_protocol("g", ring(N), T, np.outer(_alphas(T), np.ones(N)))
    elif case == "regular":
        N, T = 8, 4
        protocol = gossip_protocol("g", random_regular(N, 3, rng), T, np.outer(_alphas(T), rng.uniform(0.5, 2, N)))
    elif case == "separable":
        N, T = 8, 4
        protocol = gossip_protocol("g", random_regular(N, 3, rng), T, np.outer(_alphas(T), rng.uniform(0.5, 2, N)))
    elif case == "timevarying":
        N, T = 6, 4
        net = TimeVaryingNetwork(random_time_varying(N, 3, rng), schedule="cyclic")
        protocol = gossip_protocol("g", net, T, np.outer(_alphas(T), np.ones(N)))
    else:
        N, T = 4, 3
        problem = HorizontalERM([(rng.standard_normal((5, 2)), rng.standard_normal(5)) for _ in range(N)],
                                make_loss("squared"), make_regularizer("l2"), 0.0)
        protocol = dpadmm_protocol(DPADMM(rho=1.3, eta0=0.7), problem, complete(N), T)
    z = np.tile(rng.uniform(0.5, 2.0, N), (T, 1)) if case == "separable" else rng.uniform(0.5, 2.0, (T, N))
    observers = [0, 2] + ([N] if protocol.has_coordinator else [])
    got = pairwise_mu(protocol, z, observers)
    for o, observer in enumerate(observers):
        for target in range(N):
            if target == observer:
                assert math.isnan(got["mu"][o, target])
                continue
            ref = _reference_mu(protocol, z, observer, target)
            mu = got["mu"][o, target]
            assert mu >= ref * (1 - 1e-4) - 1e-6  # an upper bound (SCS accuracy)
            assert mu == pytest.approx(ref, rel=2e-3, abs=1e-5)
            assert got["mu_lower"][o, target] <= mu


@pytest.mark.parametrize("rtol", [1e-3, 2e-2])
def test_every_pair_is_within_rtol_of_an_attained_value_and_workers_agree(rtol):
    """The certified value sits above an attained one by at most ``rtol`` (in ``mu^2``; a semidefinite pair may stop
    at the iteration cap with a larger, reported gap); forked workers give the same matrix within that gap (their
    warm starts differ), with every value above the exact one."""
    rng = np.random.default_rng(11)
    N, T = 30, 12
    protocol = gossip_protocol("g", random_regular(N, 3, rng), T, np.outer(_alphas(T), np.ones(N)))
    z = np.tile(rng.uniform(0.7, 1.5, N), (T, 1))
    observers = list(range(N))
    one = pairwise_mu(protocol, z, observers, rtol=rtol)
    two = pairwise_mu(protocol, z, observers, rtol=rtol, workers=2)
    exact = pairwise_mu(protocol, z, observers, rtol=1e-6)
    off = ~np.eye(N, dtype=bool)
    for got in (one, two):
        mu, lo = got["mu"][off], got["mu_lower"][off]
        closed = mu ** 2 - lo ** 2 <= rtol * mu ** 2 * (1 + 1e-9)
        assert np.all(lo <= mu) and np.all(closed | got["sdp"][off]) and closed.mean() > 0.95
        assert np.all(mu >= exact["mu_lower"][off] * (1 - 1e-9))  # above an attained value of the exact run
        assert np.all(np.isnan(got["mu"][~off]))
    assert np.allclose(one["mu"][off], two["mu"][off], rtol=2 * rtol)
    assert len(two["seconds"]) == N and all(v > 0 for v in two["view_rows"])
    with pytest.raises(ValidationError):
        pairwise_mu(protocol, z, [0], workers=0)


def test_view_matrix_equals_forward_simulation():
    rng = np.random.default_rng(2)
    net = random_regular(10, 3, rng)
    protocol = gossip_protocol("g", net, 5, np.ones((5, 10)))
    view = observer_view(protocol, [3, 7])
    dense = np.zeros((view.m, 5 * 10))
    for s, block in enumerate(view.blocks):
        dense[view.rows_from[s]:, s * 10:(s + 1) * 10] = block
    assert np.allclose(dense, _reference_B(protocol, np.array([3, 7])))


# ----------------------------------------------------------------------------------------------- closed forms
def test_complete_graph_gives_no_amplification():
    """W = J/n: every agent sees every release and their mean, so each contribution is seen in its own noise."""
    N, T = 7, 5
    protocol = gossip_protocol("g", complete(N), T, np.outer(_alphas(T), np.ones(N)))
    z = np.full((T, N), 2.0)
    got = pairwise_mu(protocol, z, list(range(N)))
    off = ~np.eye(N, dtype=bool)
    assert np.allclose(got["mu"][off], math.sqrt(T) / 2.0, rtol=1e-6)


def _token_ring(n: int, cycles: int) -> LinearProtocol:
    """Cyffers & Bellet (2022)'s walk on a ring: a token visits 0, 1, ..., n-1, 0, ... for ``cycles`` cycles; the
    node holding it adds its noisy input and passes it on (state: the token; round t: node (t-1) mod n)."""
    T = n * cycles
    holder = lambda t: (t - 1) % n  # noqa: E731
    links = sp.csr_array((np.ones(n), ((np.arange(n) + 1) % n, np.arange(n))), shape=(n, n))

    def inputs(t):
        return sp.csr_array((np.ones(1), ([0], [holder(t)])), shape=(1, n))

    def messages(t):
        recv = sp.csc_array((np.ones(1), ([(holder(t) + 1) % n], [0])), shape=(n, 1))
        return Messages(sp.csr_array(np.ones((1, 1))), np.array([holder(t)]), recv)

    return LinearProtocol("token", n, T, 1, lambda t: sp.identity(1, format="csr"), inputs, messages,
                          np.ones((T, n)), links)


def test_ring_token_walk_closed_form():
    """Between two visits node v learns the sum of the n - 1 other contributions of a cycle (Cyffers & Bellet
    2022, the ring): for u > v, cycles 1..K-1 seen through n - 1 noises each (u's last contribution is after v's
    last visit); for u < v, also its first contribution within the first v inputs."""
    n, K, zval = 7, 4, 1.5
    protocol = _token_ring(n, K)
    z = np.full((n * K, n), zval)
    v = 3
    got = pairwise_mu(protocol, z, [v])["mu"][0]
    r2 = 1.0 / zval ** 2
    for u in range(n):
        if u == v:
            continue
        expected = (K - 1) * r2 / (n - 1) + (r2 / v if u < v else 0.0)
        assert got[u] == pytest.approx(math.sqrt(expected), rel=1e-6)


def test_dpadmm_coordinator_sees_local_dp_and_agents_see_a_mean():
    rng = np.random.default_rng(3)
    N = 6
    problem = HorizontalERM([(rng.standard_normal((4, 2)), rng.standard_normal(4)) for _ in range(N)],
                            make_loss("squared"), make_regularizer("l2"), 0.0)
    protocol = dpadmm_protocol(DPADMM(), problem, complete(N), 1)
    z = np.full((1, N), 1.0)
    got = pairwise_mu(protocol, z, [N, 0])
    assert np.allclose(got["mu"][0], 1.0)  # the coordinator gathers every release: local DP
    # round 1: z(1) = mean of the releases; agent 0 knows its own, so each other release hides in N - 2 others
    assert np.allclose(got["mu"][1, 1:], math.sqrt(1.0 / (N - 1)), rtol=1e-6)


def test_colluding_observers_learn_at_least_as_much_and_never_more_than_local():
    rng = np.random.default_rng(4)
    N, T = 12, 6
    protocol = gossip_protocol("g", random_regular(N, 3, rng), T, np.outer(_alphas(T), np.ones(N)))
    z = np.full((T, N), 1.0)
    got = pairwise_mu(protocol, z, [0, 5, [0, 5]])
    mu = got["mu"]
    others = np.setdiff1d(np.arange(N), [0, 5])
    assert np.all(mu[2, others] >= np.maximum(mu[0, others], mu[1, others]) * (1 - 1e-6))
    assert np.all(mu[:, others] <= got["local_mu"][others] * (1 + 1e-9))


def test_a_noiseless_release_in_view_is_infinite():
    N, T = 5, 3
    protocol = gossip_protocol("g", ring(N), T, np.ones((T, N)))
    z = np.ones((T, N))
    z[1, 2] = 0.0  # agent 2 sends round 2 in the clear
    mu = pairwise_mu(protocol, z, [0])["mu"][0]
    assert math.isinf(mu[2]) and np.all(np.isfinite(mu[[1, 3, 4]]))


# ----------------------------------------------------------------------------------------------- declared = drawn
def _whitened_sample_covariance(protocol, sigma, observer, draws) -> np.ndarray:
    """Sample covariance of an observer's views (``draws``: rows in the view's order) whitened by the model."""
    view = observer_view(protocol, observer)
    T, N = protocol.rounds, protocol.n_agents
    B = np.hstack([np.vstack([np.zeros((view.rows_from[s], N)), view.blocks[s]]) * sigma[s] for s in range(T)])
    L = np.linalg.cholesky(B @ B.T)
    W = np.linalg.solve(L, draws.T).T
    return W.T @ W / len(W)


@pytest.mark.parametrize("kind", ["static", "timevarying", "dpadmm"])
def test_observed_messages_have_the_modelled_covariance(kind):
    """Runs on data whose gradients vanish: the observer's view is pure propagated noise, and whitening it with
    the model's covariance (from the declared noise multiplier; unconditional, the observer's own noise varies
    across draws too) must give identity covariance: timing, receivers and noise of the model are the simulator's."""
    N, T, P, n = 6, 4, 2, 3000
    problem = HorizontalERM([(np.zeros((3, P)), np.zeros(3)) for _ in range(N)], make_loss("squared"),
                            make_regularizer("l2"), 0.0)
    observer = 0
    if kind == "dpadmm":
        net, alg = complete(N), DPADMM(rho=1.3, eta0=0.7, epsilon=1.0, delta=1e-5)
        protocol = dpadmm_protocol(alg, problem, net, T)

        def rows(res, t):  # agent 0 receives the broadcast z and its own lambda
            return np.stack([np.asarray(res.transcript.rounds[t][("coordinator", "z")]),
                             np.asarray(res.transcript.rounds[t][("coordinator", "lam")])[observer]])
    else:
        net = ring(N) if kind == "static" else TimeVaryingNetwork(random_time_varying(N, 3, np.random.default_rng(8)))
        alg = DPSGD(alpha0=0.5, epsilon=1.0, delta=1e-5)
        protocol = dpsgd_protocol(alg, problem, net, T)
        heard = {t: protocol.messages(t).receivers[[observer]].toarray().ravel() > 0 for t in range(1, T + 1)}

        def rows(res, t):
            return np.asarray(res.transcript.rounds[t][("agent", "q")])[heard[t]]
    sigma = alg.mechanism.to_dict()["noise_multiplier"] * protocol.sensitivity
    samples = []
    for trial in range(n // P):
        res = run(alg, problem, net, T, seed=7, trial=trial, transcript="full")
        samples.append(np.concatenate([rows(res, t) for t in range(1, T + 1)]))  # (m, P): rows in round order
    C = _whitened_sample_covariance(protocol, sigma, observer, np.concatenate(samples, axis=1).T)
    # each entry of a sample covariance of n unit normals has sd 1/sqrt(n); 5 sd over at most 64 entries
    assert np.abs(C - np.eye(len(C))).max() < 5 / math.sqrt(n)


# ----------------------------------------------------------------------------------------------- conversions
def test_gdp_epsilons_agree_with_dp_accounting():
    from dp_accounting import gaussian_mechanism

    mus = np.concatenate([np.geomspace(1e-3, 20, 40), [0.0, np.inf, np.nan]])
    for delta in (1e-5, 1e-3):
        got = gdp_epsilons(mus, delta)
        for m, e in zip(mus[:40], got[:40]):
            ref = gaussian_mechanism.get_epsilon_gaussian(1.0 / m, delta)
            assert e == pytest.approx(ref, rel=1e-7, abs=1e-9)
        assert got[40] == 0.0 and math.isinf(got[41]) and math.isnan(got[42])


def test_noise_multipliers_read_the_ledger_and_reject_other_events():
    ledger = PrivacyLedger(2)
    ledger.record(0, gaussian_release(1.0, 1e-5, composition="moments"), 3)
    ledger.record(1, gaussian_release(2.0, 1e-5, composition="moments"), 3)
    z = noise_multipliers(ledger, 3)
    assert z.shape == (3, 2) and np.all(z[:, 0] < z[:, 1])
    with pytest.raises(UnsupportedEventError):
        noise_multipliers(ledger, 4)
    bad = PrivacyLedger(1)
    bad.record(0, laplace_release(1.0), 2)
    with pytest.raises(UnsupportedEventError):
        noise_multipliers(bad, 2)


def test_bad_inputs_are_named_errors():
    protocol = gossip_protocol("g", ring(4), 2, np.ones((2, 4)))
    with pytest.raises(ValidationError):
        pairwise_mu(protocol, np.ones((2, 4)), [7])
    with pytest.raises(ValidationError):
        pairwise_mu(protocol, np.ones((2, 4)), [[]])
    with pytest.raises(ShapeMismatchError):
        pairwise_mu(protocol, np.ones((3, 4)), [0])
    with pytest.raises(ShapeMismatchError):
        gossip_protocol("g", ring(4), 2, np.ones((3, 4)))
    with pytest.raises(ValidationError):
        gossip_protocol("g", ring(4), 2, np.zeros((2, 4)))


# ----------------------------------------------------------------------------------------------- report
def test_privacy_report_gains_the_pairwise_section():
    rng = np.random.default_rng(5)
    N, T = 12, 5
    net = random_regular(N, 3, rng)
    problem = HorizontalERM([(rng.standard_normal((4, 3)) / 3, rng.standard_normal(4)) for _ in range(N)],
                            make_loss("squared"), make_regularizer("l2"), 0.1)
    alg = DPSGD(alpha0=0.3, epsilon=1.0, delta=1e-5, budget="total", gaussian_constant=2.0)
    res = run(alg, problem, net, T, seed=0)
    rep = privacy_report(res.ledger, 1e-5, ("pld",), protocol=alg.for_rounds(T).linear_protocol(problem, net, T))
    pw = rep["pairwise"]
    assert pw["status"] == "model" and pw["model"] == "dpsgd" and len(pw["mu"]) == N
    local = [a["epsilon"]["pld"] for a in rep["per_agent"]]
    assert np.allclose(pw["local"]["epsilon"], local, rtol=1e-6)
    eps = np.array([[np.nan if e is None else e for e in row] for row in pw["epsilon"]])
    assert np.all(np.isnan(np.diag(eps)))
    off = ~np.eye(N, dtype=bool)
    assert np.all(eps[off] <= np.array(local)[None, :].repeat(N, 0)[off] * (1 + 1e-6))
    dist = [d["distance"] for d in pw["by_distance"]]
    assert dist == sorted(dist) and dist[0] == 1
    assert sum(d["pairs"] for d in pw["by_distance"]) == N * (N - 1) == pw["summary"]["pairs"]
    medians = [d["epsilon"]["median"] for d in pw["by_distance"]]
    assert medians[0] > medians[-1]  # farther observers learn less
    _profile_is_consistent(pw)


def _profile_is_consistent(pw):
    """Every distance's pairs split over its common-neighbour groups, with the same extremes."""
    groups = pw["by_distance_common"]
    for d in pw["by_distance"]:
        sub = [g for g in groups if g["distance"] == d["distance"]]
        assert sum(g["pairs"] for g in sub) == d["pairs"]
        assert min(g["epsilon"]["min"] for g in sub) == d["epsilon"]["min"]
        assert max(g["epsilon"]["max"] for g in sub) == d["epsilon"]["max"]
        for g in sub:
            assert g["epsilon"]["min"] <= g["epsilon"]["median"] <= g["epsilon"]["max"]
            assert (g["common_neighbours"] == 0) or d["distance"] <= 2  # a common neighbour is a 2-path


def test_the_profile_by_common_neighbours_explains_distance_two():
    """Issue 29: the spread at distance 2 comes from the number of common neighbours (2-paths): on a random
    4-regular graph with DPSGD, pairs with two common neighbours are less private than pairs with one."""
    rng = np.random.default_rng(0)
    N, T = 40, 12
    net = random_regular(N, 4, rng)
    problem = HorizontalERM([(rng.standard_normal((4, 3)) / 3, rng.standard_normal(4)) for _ in range(N)],
                            make_loss("squared"), make_regularizer("l2"), 0.1)
    alg = DPSGD(alpha0=0.3, epsilon=1.0, delta=1e-5, budget="total", gaussian_constant=2.0).for_rounds(T)
    res = run(alg, problem, net, T, seed=0)
    protocol = alg.linear_protocol(problem, net, T)
    pw = privacy_report(res.ledger, 1e-5, ("pld",), protocol=protocol)["pairwise"]
    _profile_is_consistent(pw)
    adj = (net.metropolis_weights().toarray() > 0).astype(int)
    np.fill_diagonal(adj, 0)
    common = common_neighbours(protocol, [np.array([o]) for o in range(N)])
    off = ~np.eye(N, dtype=bool)
    assert np.array_equal(common[off], (adj @ adj)[off])  # for one observer: the paths of length 2
    two = {g["common_neighbours"]: g for g in pw["by_distance_common"] if g["distance"] == 2}
    assert {1, 2} <= set(two)
    assert two[2]["local_over_pair_epsilon"]["max"] < two[1]["local_over_pair_epsilon"]["median"]


def test_the_report_records_its_tolerance_and_specs_pass_it():
    from privdist.experiments.schema import PrivacySpec

    rng = np.random.default_rng(9)
    N, T = 10, 4
    protocol = gossip_protocol("g", random_regular(N, 3, rng), T, np.ones((T, N)))
    ledger = PrivacyLedger(N)
    for k in range(N):
        ledger.record(k, gaussian_release(1.5, 1e-5, composition="moments"), T)
    loose = privacy_report(ledger, 1e-5, protocol=protocol, pairwise_rtol=0.05)["pairwise"]
    tight = privacy_report(ledger, 1e-5, protocol=protocol)["pairwise"]
    assert loose["bound"]["rtol"] == 0.05 and tight["bound"]["rtol"] == 1e-3
    assert tight["bound"]["max_relative_gap"] <= 1e-3 and loose["bound"]["max_relative_gap"] <= 0.05
    mu_l, mu_t = (np.array(s["mu"], dtype=float) for s in (loose, tight))
    off = ~np.eye(N, dtype=bool)
    assert np.all(mu_l[off] >= mu_t[off] * (1 - 1e-3))  # both certified upper bounds
    assert PrivacySpec().pairwise_rtol == 1e-3
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError
        PrivacySpec(pairwise_rtol=0)
