"""R-ADMM (spec §6.5): odd-round releases only, recycled gradient, convergence without noise."""

import numpy as np
import pytest

from conftest import make_dzoa_problem
from privdist.algorithms.radmm import RADMM
from privdist.errors import ValidationError
from privdist.privacy import privacy_report
from privdist.problems import reference_solution
from privdist.runtime import run


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_without_noise_converges(loss, net5):
    prob = make_dzoa_problem(4, "l2", loss=loss)
    w_star = reference_solution(prob)
    res = run(RADMM(rho=0.5, epsilon=None, tol=1e-12, clip=False), prob, net5, 400)  # the paper's loss itself
    assert np.abs(res.final_state.x - w_star).max() < 1e-7


def test_recycled_gradient_is_the_true_gradient_without_noise(net5):
    prob = make_dzoa_problem(4, "l2", loss="logistic")
    res = run(RADMM(rho=0.5, epsilon=None, tol=1e-13), prob, net5, 7)  # 7 is odd: g_hat from this round
    st = res.final_state
    np.testing.assert_allclose(st.g_hat, prob.local_grads(st.f), atol=1e-9)


def test_only_odd_rounds_release(ridge_problem, net5):
    alg = RADMM(rho=1.0, epsilon=1.0, budget="total_paper", iterations=9)
    assert alg.release_count(9) == 5 and alg.mechanism.epsilon == pytest.approx(0.2)
    res = run(alg, ridge_problem, net5, 9)
    assert res.ledger.n_releases(0) == 5
    rep = privacy_report(res.ledger, 1e-5)
    assert rep["per_agent"][0]["epsilon"]["paper"] == pytest.approx(1.0)
    assert alg.dp_events(res.final_state, 2) == [None] * 5


def test_bad_tau():
    with pytest.raises(ValidationError):
        RADMM(tau=0.0)
