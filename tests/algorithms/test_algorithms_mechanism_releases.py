"""Issue 23: for every DP algorithm, the releases in the run's ledger are exactly those its mechanism produced.

Every ``Mechanism.privatize`` call of a run is recorded by a spy (round, agent, mechanism, sensitivity, noise drawn).
For each agent and round the ledger must hold ``mechanism.releases([agent], uses=u)`` of the mechanism that drew
in that round (``u`` its number of calls for the agent in the round), nothing in a round without a draw, and the
noise really drawn, divided by its sensitivity, must have the spread the declared release implies (Gaussian: std
``z``; Laplace: mean absolute value ``b``; Gamma-norm: mean norm ``dim / epsilon``). The count, the sensitivity and
the noise scale are thereby checked against the declaration on a real run (not formula against formula).
The non-private variants go through :class:`Identity` (no noise, releases in the clear) and the noise levels
without a sensitivity analysis through :class:`~privdist.privacy.declared.Perturbation` (std as given, releases in
the clear): the spy records those calls too.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from privdist.algorithms.dpadmm import DPADMM
from privdist.algorithms.dpdonc import DPDONC
from privdist.algorithms.dpsgd import DPSGD
from privdist.algorithms.dzoa_gauss import DZOAGauss
from privdist.algorithms.fdml import FDMLSGD
from privdist.algorithms.sharing import ADMMSharing
from privdist.network import TimeVaryingNetwork, complete, s4_matrices
from privdist.privacy import declared as declared_mod
from privdist.privacy import mechanisms as mech_mod
from privdist.problems.online import make_localization
from privdist.problems.vertical import VerticalProblem
from privdist.runtime import run
from release_harness import make_parts, problem_of

K, N, P, ROUNDS = 6, 15, 40, 12
THETA = 4.030198506277327  # S4's public theta (AMB-O3)


def _erm(loss="logistic"):
    return problem_of(make_parts(K, N, P, loss), loss), complete(K)


def _squared():
    return _erm("squared")


def _online(horizon=60):
    return make_localization(np.random.default_rng(0), horizon), TimeVaryingNetwork(s4_matrices())


def _vertical(n=40, dims=(4, 3, 5)):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, sum(dims))) / np.sqrt(sum(dims))
    labels = np.where(X @ rng.normal(size=sum(dims)) > 0, 1.0, -1.0)
    blocks = np.split(X, np.cumsum(dims)[:-1], axis=1)
    return VerticalProblem(blocks, labels, reg_weight=0.1, bias=False), complete(len(dims))


def _sharing(**kw):
    return ADMMSharing(rho=1.0, mode="output", delta=1e-5, b1=1.0, **kw)


#: name -> (factory of the DP algorithm, factory of (problem, network), rounds). Budgets of both kinds.
CASES = {
    "dpsgd": (lambda: DPSGD(alpha0=0.5, epsilon=0.5, delta=1e-5, gaussian_constant=2.0), _erm, ROUNDS),
    "dpsgd_total": (lambda: DPSGD(alpha0=0.5, epsilon=1.0, delta=1e-5, budget="total"), _erm, ROUNDS),
    "dpsgd_per_party": (lambda: DPSGD(alpha0=0.5, epsilon=(0.5, 1.0, 2.0, 0.5, 1.0, 2.0), delta=1e-5,
                                      budget="total"), _erm, ROUNDS),
    "dpadmm": (lambda: DPADMM(rho=0.5, eta0=0.8, epsilon=0.4, delta=1e-4), _erm, ROUNDS),
    "dpadmm_total": (lambda: DPADMM(rho=0.5, eta0=0.8, epsilon=1.0, delta=1e-5, budget="total"), _erm, ROUNDS),
    "dpadmm_clear": (lambda: DPADMM(rho=0.5, eta0=0.8, epsilon=None), _erm, ROUNDS),
    # DPDO-NC (S4, Laplace): per-step pure epsilon, a total budget (PLD, needs delta), per-node totals, no DP
    "dpdonc": (lambda: DPDONC(theta=THETA, epsilon=1.0), _online, 40),
    "dpdonc_total": (lambda: DPDONC(theta=THETA, epsilon=1.0, delta=1e-5, budget="total"), _online, 40),
    "dpdonc_per_party": (lambda: DPDONC(theta=THETA, epsilon=(0.5, 1.0, 2.0, 0.5, 1.0, 2.0), delta=1e-5,
                                        budget="total"), _online, 40),
    "dpdonc_clear": (lambda: DPDONC(theta=THETA, epsilon=None), _online, 40),
    # D-ZOA + Gaussian: exact and classical per-release calibration, a total budget, no privacy target
    "dzoa_gauss": (lambda: DZOAGauss(epsilon=0.5, delta=1e-5, local_solver="exact"), _squared, ROUNDS),
    "dzoa_gauss_classical": (lambda: DZOAGauss(epsilon=0.5, delta=1e-5, calibration="classical", T=10, J=4),
                             _squared, ROUNDS),
    "dzoa_gauss_total": (lambda: DZOAGauss(epsilon=1.0, delta=1e-5, budget="total", local_solver="exact"),
                         _squared, ROUNDS),
    "dzoa_gauss_clear": (lambda: DZOAGauss(epsilon=None, local_solver="exact"), _squared, ROUNDS),
    # ADMM sharing (S2): the guaranteed clipped output mode (round, total, per party), a claim mode, no noise, and a
    # noise level without a sensitivity analysis (Perturbation); FDML's noise likewise
    "sharing": (lambda: _sharing(epsilon=1.0), _vertical, ROUNDS),
    "sharing_total": (lambda: _sharing(epsilon=1.0, budget="total"), _vertical, ROUNDS),
    "sharing_per_party": (lambda: _sharing(epsilon=(0.5, 1.0, 2.0), budget="total"), _vertical, ROUNDS),
    "sharing_claim": (lambda: ADMMSharing(mode="variable_isotropic", epsilon=1.0, delta=1e-5, b1=1.0), _vertical,
                      30),
    "sharing_clear": (lambda: ADMMSharing(mode="output"), _vertical, ROUNDS),
    "sharing_noise_std": (lambda: ADMMSharing(mode="output", noise_std=0.3), _vertical, ROUNDS),
    "fdml_noise_std": (lambda: FDMLSGD(lr=0.1, batch_size=20, noise_std=0.2), _vertical, ROUNDS),
}


@pytest.fixture
def spy(monkeypatch):
    """Record every privatize (and Perturbation.perturb) call: (round, agent, mechanism, sensitivity, noise row)."""
    calls = []

    def record(self, values, sensitivity, rng, out):
        values = np.asarray(values, dtype=float)
        sens = np.broadcast_to(np.asarray(sensitivity, dtype=float), (values.shape[0],))
        for i, agent in enumerate(np.asarray(rng.agents)):
            calls.append((int(rng.round), int(agent), self, float(sens[i]), (out[i] - values[i]).ravel()))

    for cls in (mech_mod.GaussianMechanism, mech_mod.LaplaceMechanism, mech_mod.GammaNormMechanism,
                mech_mod.Identity):
        original = cls.privatize

        def recording(self, values, sensitivity, rng, _original=original):
            out = _original(self, values, sensitivity, rng)
            record(self, values, sensitivity, rng, out)
            return out

        monkeypatch.setattr(cls, "privatize", recording)
    perturb = declared_mod.Perturbation.perturb

    def perturbing(self, values, rng):
        out = perturb(self, values, rng)
        record(self, values, 1.0, rng, out)
        return out

    monkeypatch.setattr(declared_mod.Perturbation, "perturb", perturbing)
    return calls


def _expected_ledger(calls, rounds):
    """Per agent: the release list the mechanisms' draws imply, round by round (rounds 1..T)."""
    uses = defaultdict(list)
    for rnd, agent, mech, _, _ in calls:
        if rnd >= 1:  # round-0 outboxes are data-free (e.g. DPDO-NC's noisy public start): no release
            uses[(agent, rnd)].append(mech)
    expected = defaultdict(list)
    for (agent, rnd), mechs in sorted(uses.items()):
        assert all(m is mechs[0] for m in mechs), "one mechanism per agent and round"
        assert rnd <= rounds
        expected[agent].append(mechs[0].releases([agent], uses=len(mechs))[0])
    return expected


def _normalised_spread(calls):
    """Per mechanism kind: the noise divided by sensitivity x declared level, pooled over calls."""
    pooled = defaultdict(list)
    for rnd, agent, mech, sens, noise in calls:
        if isinstance(mech, mech_mod.Identity):  # in the clear: nothing added
            assert not np.any(noise)
            continue
        if sens == 0:
            continue
        if isinstance(mech, declared_mod.Perturbation):  # a std without a sensitivity (not a DP mechanism)
            pooled["perturbation"].append(noise / mech.std)
        elif isinstance(mech, mech_mod.GaussianMechanism):
            z = mech.noise_multiplier[agent] if isinstance(mech.noise_multiplier, tuple) else mech.noise_multiplier
            pooled["gaussian"].append(noise / (sens * z))
        elif isinstance(mech, mech_mod.LaplaceMechanism):
            b = mech.noise_multiplier[agent] if isinstance(mech.noise_multiplier, tuple) else mech.noise_multiplier
            pooled["laplace"].append(noise / (sens * b))
        else:
            eps = mech.epsilon[agent] if isinstance(mech.epsilon, tuple) else mech.epsilon
            pooled["gamma_norm"].append(np.array([np.linalg.norm(noise) * eps / (sens * noise.size)]))
    return {k: np.concatenate(v) for k, v in pooled.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_declared_releases_are_the_mechanisms_draws(name, spy):
    make_algo, make_problem, rounds = CASES[name]
    problem, network = make_problem()
    result = run(make_algo(), problem, network, rounds, seed=3)
    expected = _expected_ledger(spy, rounds)
    assert expected, "the algorithm drew no noise through a mechanism"
    for agent in range(network.n_agents):
        declared = [rel for rel, count in result.ledger.entries(agent) for _ in range(count)]
        assert declared == expected[agent], f"agent {agent}: declared releases differ from the mechanism's draws"
    for kind, z in _normalised_spread(spy).items():
        assert z.size >= 300
        if kind in ("gaussian", "perturbation"):  # std 1 (se ~ 1/sqrt(2n))
            assert z.std() == pytest.approx(1.0, abs=5 / np.sqrt(2 * z.size))
        elif kind == "laplace":  # E|x| = 1 for unit scale
            assert np.abs(z).mean() == pytest.approx(1.0, abs=5 / np.sqrt(z.size))
        else:  # E||w|| = dim / zeta
            assert z.mean() == pytest.approx(1.0, rel=0.15)


def test_total_budget_guarantee_equals_request():
    """A total budget of epsilon 1 over the run: the PLD guarantee is within 1 % below the request."""
    from privdist.privacy import privacy_report

    problem, network = _erm()
    result = run(DPSGD(alpha0=0.5, epsilon=1.0, delta=1e-5, budget="total"), problem, network, 50, seed=0)
    report = privacy_report(result.ledger, 1e-5, accountants=("pld",))
    for agent in report["per_agent"]:
        assert agent["guaranteed"] and 0.99 <= agent["epsilon"]["pld"] <= 1.0
