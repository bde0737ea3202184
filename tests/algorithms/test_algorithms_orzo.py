"""OR-ZO (spec §6.7): centralised two-point zeroth-order method run by the coordinator."""

import numpy as np
import pytest

from privdist.algorithms.orzo import ORZO, global_lipschitz, global_value_diff
from privdist.errors import ValidationError
from privdist.problems import normalized_error, reference_solution
from privdist.runtime import run


def test_orzo_converges_on_lasso_and_agents_share_the_estimate(lasso_problem, net5):
    bc = reference_solution(lasso_problem)
    res = run(ORZO(alpha=5.0), lasso_problem, net5, 200, metrics={"ne": lambda B: normalized_error(B, bc)})
    assert res.curves["ne"][-1] < 0.1 < res.curves["ne"][5]
    est = res.estimates
    assert np.all(est == est[0])
    assert all(not r.guarantee and "raw data" in r.reason for r, _ in res.ledger.entries(0))  # central: not private


def test_global_value_diff_matches_objective(lasso_problem):
    rng = np.random.default_rng(0)
    A, H = rng.standard_normal((10, 4)), rng.standard_normal((10, 4))
    got = global_value_diff(lasso_problem)(A, H, 1e-4)
    want = [(lasso_problem.objective(A[:, j] + 1e-4 * H[:, j]) - lasso_problem.objective(A[:, j])) / 1e-4
            for j in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert global_lipschitz(lasso_problem, 1.0) > global_lipschitz(lasso_problem, 1.0, with_reg=False)


def test_orzo_bad_values():
    with pytest.raises(ValidationError):
        ORZO(J=0)
    with pytest.raises(ValidationError):
        ORZO(output="median")
