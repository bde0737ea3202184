"""Pilot-run default of the sharing bound b1 (spec §3.6, AMB-V4)."""

import numpy as np
import pytest

from conftest import make_vertical_problem
from privdist.algorithms import make_algorithm
from privdist.algorithms.sharing import pilot_b1
from privdist.errors import ValidationError
from privdist.network import complete
from privdist.privacy import privacy_report
from privdist.privacy.sharing_calibration import sharing_noise_multiplier, sharing_sensitivity
from privdist.runtime import run


def _problem():
    return make_vertical_problem(2, n_parties=2, n_samples=50, reg_weight=0.1)


def test_pilot_b1_is_the_largest_norm_of_a_nonprivate_run():
    p = _problem()
    res = run(make_algorithm("admm_sharing", rho=0.5), p, complete(2), 20, transcript="none", keep_iterates=True)
    # coordinator iterates are not kept per round: recompute them from the transcript of a full run
    full = run(make_algorithm("admm_sharing", rho=0.5), p, complete(2), 20, transcript="full")
    Q, r, y = (full.transcript.messages(role, name) for role, name in
               (("agent", "Q"), ("coordinator", "r"), ("coordinator", "y")))
    norms = [max(np.linalg.norm(res.iterates[t].sum(axis=0)), np.linalg.norm(y[t]),
                 np.linalg.norm(Q[t].sum(axis=0) - r[t])) for t in range(1, 21)]
    assert pilot_b1(p, rho=0.5, rounds=20) == pytest.approx(max(norms), rel=1e-12)
    assert ("admm_sharing_pilot_b1", 0.5, 20) in p.memo  # cached per problem
    p.memo[("admm_sharing_pilot_b1", 0.5, 20)] = 123.0
    assert pilot_b1(p, rho=0.5, rounds=20) == 123.0


def test_pilot_b1_calibrates_sigma_and_is_recorded_as_data_dependent():
    p = _problem()
    with pytest.warns(UserWarning, match="data-dependent"):
        algo = make_algorithm("admm_sharing", mode="output", epsilon=1.0, delta=0.01, b1="pilot", b1_safety=2.0,
                              pilot_rounds=15)
    res = run(algo, p, complete(2), 3, transcript="none")
    b1 = 2.0 * pilot_b1(p, 1.0, 15)
    expected = [sharing_noise_multiplier(1.0, 0.01) * sharing_sensitivity(d, 1.0, 0.1, 2.0, b1, 2) for d in p.dims]
    np.testing.assert_allclose(res.final_state.sigma, expected)
    rep = privacy_report(res.ledger, 0.01)
    assert any(f"b1={b1:.6g} (pilot" in a for a in rep["assumptions"])
    assert any("DATA-DEPENDENT" in a for a in rep["assumptions"])
    assert rep["per_agent"][0]["epsilon"]["paper"] > 0  # the events are those of the explicit-b1 run


def test_explicit_b1_still_works_and_bad_values_are_named():
    p = _problem()
    algo = make_algorithm("admm_sharing", mode="output", epsilon=1.0, b1=10.0, clip=False)  # paper's C (a claim)
    res = run(algo, p, complete(2), 2, transcript="none")
    assert res.final_state.sigma[0] == pytest.approx(sharing_noise_multiplier(1.0, 0.01)
                                                     * sharing_sensitivity(p.dims[0], 1.0, 0.1, 2.0, 10.0, 2))
    clipped = run(make_algorithm("admm_sharing", mode="output", epsilon=1.0, b1=10.0), p, complete(2), 2,
                  transcript="none")  # default clip=True: the enforced C = (1 + M rho) b1 / rho
    assert clipped.final_state.sigma[0] == pytest.approx(sharing_noise_multiplier(1.0, 0.01) * 30.0)
    assert not any("pilot" in a for a in res.ledger.assumptions)
    for params, match in [({"b1": "auto"}, "pilot"), ({"b1": "pilot", "b1_safety": 0.5}, "b1_safety"),
                          ({"b1": 1.0, "pilot_rounds": 0}, "pilot_rounds")]:
        with pytest.raises(ValidationError, match=match):
            make_algorithm("admm_sharing", mode="output", epsilon=1.0, **params)
    with pytest.raises(ValidationError, match="VerticalProblem"):
        pilot_b1(object())
