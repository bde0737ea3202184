"""ZOO-ADMM (spec §6.8): port of the authors' MATLAB, centralised lasso."""

import numpy as np
import pytest

from privdist.algorithms.zooadmm import ZOOADMM
from privdist.errors import ValidationError
from privdist.problems import normalized_error, reference_solution
from privdist.runtime import run


def test_zooadmm_converges_on_lasso(lasso_problem, net5):
    bc = reference_solution(lasso_problem)
    res = run(ZOOADMM(eta_c=10.0), lasso_problem, net5, 200, metrics={"ne": lambda B: normalized_error(B, bc)})
    assert res.curves["ne"][-1] < 0.1 < res.curves["ne"][5]
    cs = res.final_coordinator_state
    assert np.all(np.abs(cs.y) <= np.abs(cs.x - cs.lam / cs.problem.reg_weight) + 1e-12)  # soft-threshold shrinks


def test_bregman_scale_grows_until_valid(lasso_problem, net5):
    res = run(ZOOADMM(a=1.0, eta_c=1.0, rho=1.0), lasso_problem, net5, 1)
    assert res.final_coordinator_state.a - 1.0 >= 1.0


def test_zooadmm_bad_values():
    with pytest.raises(ValidationError):
        ZOOADMM(q=0)
    with pytest.raises(ValidationError):
        ZOOADMM(init_scale=-1)
