"""Issue 23: for every DP algorithm, the releases in the run's ledger are exactly those its mechanism produced.

Every ``Mechanism.privatize`` call of a run is recorded by a spy (round, agent, mechanism, sensitivity, noise drawn).
For each agent and round the ledger must hold ``mechanism.releases([agent], uses=u)`` of the mechanism that drew
in that round (``u`` its number of calls for the agent in the round), nothing in a round without a draw, and the
noise really drawn, divided by its sensitivity, must have the spread the declared release implies (Gaussian: std
``z``; Laplace: mean absolute value ``b``; Gamma-norm: mean norm ``dim / epsilon``; objective perturbation: mean
norm ``dim / eps'`` at the rate ``eps' <= epsilon`` that Chaudhuri et al.'s Alg. 2 derives from the declared pure
``epsilon``, the log-determinant paying the rest). The count, the sensitivity and the noise scale are thereby checked
against the declaration on a real run (not formula against formula).
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
from privdist.algorithms.dvp import DVP
from privdist.algorithms.dzoa_gauss import DZOAGauss
from privdist.algorithms.fdml import FDMLSGD
from privdist.algorithms.laadmm import LAADMM
from privdist.algorithms.pvp import PVP
from privdist.algorithms.radmm import RADMM
from privdist.algorithms.sharing import ADMMSharing
from privdist.network import TimeVaryingNetwork, complete, s4_matrices
from privdist.privacy import declared as declared_mod
from privdist.privacy import mechanisms as mech_mod
from privdist.privacy import privacy_report
from privdist.privacy.objective_perturbation import ObjectivePerturbationMechanism
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
    # PVP/DVP/R-ADMM (Gamma-norm cases run longer: one norm per agent and release for the spread check)
    "pvp_gamma": (lambda: PVP(rho=0.5, epsilon=0.8), _erm, 60),
    "pvp_gamma_total": (lambda: PVP(rho=0.5, epsilon=2.0, delta=1e-5, budget="total"), _erm, 60),
    "pvp_gaussian_total_paper": (lambda: PVP(rho=0.5, epsilon=2.0, delta=1e-5, noise="gaussian",
                                             budget="total_paper"), _erm, ROUNDS),
    "pvp_gaussian_total": (lambda: PVP(rho=0.5, epsilon=1.0, delta=1e-5, noise="gaussian", budget="total"), _erm,
                           ROUNDS),
    "dvp_gamma": (lambda: DVP(rho=0.5, epsilon=0.8), _erm, 60),
    "dvp_gamma_ridge": (lambda: DVP(rho=0.01, epsilon=0.05), _erm, 60),  # eps' <= 0: Phi_p > 0, eps' = eps/2
    "dvp_gamma_total": (lambda: DVP(rho=0.5, epsilon=2.0, delta=1e-5, budget="total"), _erm, 60),
    "dvp_gamma_per_party": (lambda: DVP(rho=0.5, epsilon=(0.5, 1.0, 2.0, 0.5, 1.0, 2.0), delta=1e-5,
                                        budget="total"), _erm, 60),
    "dvp_gaussian": (lambda: DVP(rho=0.5, epsilon=0.8, noise="gaussian", gaussian_constant=2.0), _erm, ROUNDS),
    "radmm_gamma": (lambda: RADMM(rho=0.5, epsilon=0.8), _erm, 120),
    "radmm_gamma_total_paper": (lambda: RADMM(rho=0.5, epsilon=30.0, budget="total_paper"), _erm, 120),
    "radmm_gaussian_total": (lambda: RADMM(rho=0.5, epsilon=1.0, delta=1e-5, noise="gaussian", budget="total"),
                             _erm, ROUNDS),
    # l-AADMM: l calls per round, one release for l uses
    "laadmm": (lambda: LAADMM(rho=0.1, epsilon=1.0, delta=1e-5, l=3, D=2.0), _erm, ROUNDS),
    "laadmm_total": (lambda: LAADMM(rho=0.1, epsilon=1.0, delta=1e-5, l=3, D=2.0, budget="total"), _erm, ROUNDS),
    "laadmm_round": (lambda: LAADMM(rho=0.1, epsilon=0.5, delta=1e-5, l=2, D=2.0, budget="round"), _erm, ROUNDS),
    "laadmm_per_party": (lambda: LAADMM(rho=0.1, epsilon=(0.5, 1.0, 2.0, 0.5, 1.0, 2.0), delta=1e-5, l=3, D=2.0),
                         _erm, ROUNDS),
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


#: name -> the same algorithm without noise (epsilon None: the Identity mechanism).
NON_PRIVATE = {
    "dpsgd": lambda: DPSGD(alpha0=0.5, epsilon=None),
    "dpadmm": lambda: DPADMM(rho=0.5, eta0=0.8, epsilon=None),
    "pvp": lambda: PVP(rho=0.5, epsilon=None),
    "dvp": lambda: DVP(rho=0.5, epsilon=None),
    "radmm": lambda: RADMM(rho=0.5, epsilon=None, budget="total"),
    "laadmm": lambda: LAADMM(rho=0.1, epsilon=None, l=3, D=2.0),
}


@pytest.fixture
def spy(monkeypatch):
    """Record every privatize (and Perturbation.perturb) call: (round, agent, mechanism, sensitivity, noise row)."""
    calls = []

    def record(self, values, sensitivity, rng, out, eps_prime=None):
        values = np.asarray(values, dtype=float)
        n = values.shape[0]
        sens = np.broadcast_to(np.asarray(sensitivity, dtype=float).reshape(-1), (n,))
        rate = np.full(n, np.nan) if eps_prime is None else np.asarray(eps_prime, dtype=float)
        for i, agent in enumerate(np.asarray(rng.agents)):
            calls.append((int(rng.round), int(agent), self, float(sens[i]), (out[i] - values[i]).ravel(),
                          float(rate[i])))

    for cls in (mech_mod.GaussianMechanism, mech_mod.LaplaceMechanism, mech_mod.GammaNormMechanism,
                mech_mod.Identity, ObjectivePerturbationMechanism):
        original = cls.privatize

        def recording(self, values, sensitivity, rng, _original=original, **kw):
            out = _original(self, values, sensitivity, rng, **kw)
            record(self, values, sensitivity, rng, out, kw.get("eps_prime"))
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
    for rnd, agent, mech, *_ in calls:
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
    for rnd, agent, mech, sens, noise, rate in calls:
        if isinstance(mech, mech_mod.Identity):  # in the clear: nothing added
            assert not np.any(noise)
            continue
        if sens == 0:
            continue
        if isinstance(mech, ObjectivePerturbationMechanism):  # the rate of Alg. 2, never above the declared pure eps
            eps = mech.epsilon[agent] if isinstance(mech.epsilon, tuple) else mech.epsilon
            assert 0 < rate <= eps
            pooled["gamma_norm"].append(np.array([np.linalg.norm(noise) * rate / (sens * noise.size)]))
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


@pytest.mark.parametrize("name", sorted(NON_PRIVATE))
def test_non_private_variant_declares_identity_releases(name, spy):
    """epsilon=None: the same code with the Identity mechanism; every release is in the clear (epsilon inf)."""
    algo = NON_PRIVATE[name]()
    problem, network = _erm()
    result = run(algo, problem, network, 6, seed=3)
    assert all(isinstance(c[2], mech_mod.Identity) and not np.any(c[4]) for c in spy), "no noise without a budget"
    identity = result.config["mechanism"]
    assert identity["kind"] == "identity"
    expected_count = algo.for_rounds(6).release_count(6)
    for agent in range(network.n_agents):
        declared = [rel for rel, count in result.ledger.entries(agent) for _ in range(count)]
        assert len(declared) == expected_count
        assert all(rel == mech_mod.Identity(identity["reason"]).releases([agent])[0] for rel in declared)
        assert all(not rel.guarantee and rel.epsilon is None for rel in declared)
    report = privacy_report(result.ledger, 1e-5, accountants=("pld",))
    assert all(a["epsilon"]["pld"] == float("inf") for a in report["per_agent"])


def _unit_erm(loss="logistic"):
    return problem_of(make_parts(K, N, 10, loss), loss), complete(K)


#: The total-budget acceptance of issue 23 for the ADMM baselines: epsilon 1 over 200 rounds.
TOTAL_200 = {
    "pvp_gamma": lambda: PVP(rho=0.5, epsilon=1.0, delta=1e-5, budget="total"),
    "pvp_gaussian": lambda: PVP(rho=0.5, epsilon=1.0, delta=1e-5, noise="gaussian", budget="total"),
    "dvp_gamma": lambda: DVP(rho=0.5, epsilon=1.0, delta=1e-5, budget="total"),  # unit-norm rows (make_parts)
    "radmm_gamma": lambda: RADMM(rho=0.5, epsilon=1.0, delta=1e-5, budget="total"),
    "laadmm": lambda: LAADMM(rho=0.1, epsilon=1.0, delta=1e-5, l=2, D=2.0, budget="total"),
}


@pytest.mark.parametrize("name", sorted(TOTAL_200))
def test_total_budget_over_200_rounds(name):
    """A total budget of epsilon 1 over 200 rounds (horizon filled in by run): PLD within 1 % below 1."""
    from privdist.privacy import privacy_report

    problem, network = _unit_erm()
    result = run(TOTAL_200[name](), problem, network, 200, seed=0)
    report = privacy_report(result.ledger, 1e-5, accountants=("pld",))
    for agent in report["per_agent"]:
        assert agent["guaranteed"] and 0.99 <= agent["epsilon"]["pld"] <= 1.0, agent
