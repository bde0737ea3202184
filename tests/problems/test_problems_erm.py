import numpy as np
import pytest

from privdist.errors import NonFiniteDataError, ShapeMismatchError, ValidationError
from privdist.problems import HorizontalERM, L1, L2, LogisticLoss, SquaredLoss


def _parts(rng, sizes=(20, 20, 15, 20, 25), P=6, logistic=False):
    parts = []
    for n in sizes:
        X = rng.standard_normal((n, P)) / np.sqrt(P)
        y = np.sign(rng.standard_normal(n)) if logistic else rng.standard_normal(n)
        parts.append((X, y))
    return parts


def test_local_values_match_direct_formula_with_unequal_sizes():
    rng = np.random.default_rng(1)
    parts = _parts(rng)
    prob = HorizontalERM(parts, SquaredLoss(), L1(), reg_weight=2.0)
    B = rng.standard_normal((5, 6))
    direct = [np.mean((X @ b - y) ** 2) + 2.0 / 5 * np.abs(b).sum() for (X, y), b in zip(parts, B)]
    np.testing.assert_allclose(prob.local_values(B), direct, rtol=1e-12)
    many = rng.standard_normal((5, 6, 7))
    batched = prob.local_values(many)
    for j in range(7):
        np.testing.assert_allclose(batched[:, j], prob.local_values(many[:, :, j]), rtol=1e-12)


def test_logistic_padding_is_masked_and_gradients_match():
    rng = np.random.default_rng(2)
    parts = _parts(rng, logistic=True)
    prob = HorizontalERM(parts, LogisticLoss(), L2(), reg_weight=0.5)
    B = rng.standard_normal((5, 6))
    direct = [np.mean(np.log1p(np.exp(-y * (X @ b)))) + 0.1 * b @ b for (X, y), b in zip(parts, B)]
    np.testing.assert_allclose(prob.local_values(B), direct, rtol=1e-12)
    h, G = 1e-6, prob.local_grads(B)
    for i in range(6):
        E = np.zeros_like(B)
        E[:, i] = h
        num = (prob.local_values(B + E) - prob.local_values(B - E)) / (2 * h)
        np.testing.assert_allclose(G[:, i], num, rtol=1e-6, atol=1e-9)


def test_clipped_gradients_have_bounded_per_sample_norm():
    rng = np.random.default_rng(3)
    prob = HorizontalERM(_parts(rng), SquaredLoss(), L2(), 0.0)
    B = 10 * rng.standard_normal((5, 6))
    G = prob.per_sample_grads(B)
    assert np.linalg.norm(G, axis=2).max() > 1.0
    clipped = prob.loss_grads(B, clip=1.0)
    assert np.all(np.linalg.norm(clipped, axis=1) <= 1.0 + 1e-12)


@pytest.mark.parametrize("loss,reg", [(SquaredLoss(), L2()), (SquaredLoss(), L1()), (LogisticLoss(), L2()),
                                      (LogisticLoss(), L1())])
def test_prox_solve_is_optimal(loss, reg):
    rng = np.random.default_rng(4)
    prob = HorizontalERM(_parts(rng, logistic=loss.name == "logistic"), loss, reg, reg_weight=0.7)
    q = rng.uniform(0.5, 5, size=5)
    v = rng.standard_normal((5, 6))
    B = prob.prox_solve(q, v, tol=1e-12)

    def F(B):
        return prob.local_values(B) + q * (B * B).sum(1) - (v * B).sum(1)

    base = F(B)
    for _ in range(20):
        assert np.all(base <= F(B + 1e-4 * rng.standard_normal(B.shape)) + 1e-13)


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()])
def test_prox_solve_without_strong_convexity(loss):
    """Issue 26: l1 with q = 0 and fewer rows than features (a singular Gram matrix; the logistic loss has no
    curvature bound below) is solved by FISTA with Nesterov's momentum, to the optimum cvxpy finds."""
    import cvxpy as cp

    rng = np.random.default_rng(5)
    X = rng.standard_normal((5, 10))
    y = np.where(rng.random(5) > 0.5, 1.0, -1.0) if loss.name == "logistic" else rng.standard_normal(5)
    prob = HorizontalERM([(X, y)], loss, L1(), reg_weight=0.3)
    v = 0.1 * rng.standard_normal((1, 10))
    B = prob.prox_solve(0.0, v, tol=1e-12, max_iter=200000)

    b = cp.Variable(10)
    fit = cp.sum_squares(X @ b - y) if loss.name == "squared" else cp.sum(cp.logistic(-cp.multiply(y, X @ b)))
    objective = fit / 5 + 0.3 * cp.norm1(b) - v[0] @ b
    cp.Problem(cp.Minimize(objective)).solve()
    mine = prob.local_values(B)[0] - float(v[0] @ B[0])
    assert mine == pytest.approx(objective.value, abs=1e-5) and mine <= objective.value + 1e-6


def test_subset_keeps_regularizer_split():
    rng = np.random.default_rng(5)
    prob = HorizontalERM(_parts(rng), SquaredLoss(), L2(), reg_weight=1.0)
    sub = prob.subset([1, 3])
    B = rng.standard_normal((2, 6))
    np.testing.assert_allclose(sub.local_values(B), prob.local_values(np.stack([B[0], B[0], B[0], B[1], B[1]]))[[1, 3]])
    assert list(sub.agent_ids) == [1, 3]


def test_bad_input_errors():
    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((5, 3)), rng.standard_normal(5)
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(NonFiniteDataError, match="X of agent 1"):
        HorizontalERM([(X, y), (Xn, y)], SquaredLoss(), L2())
    with pytest.raises(ShapeMismatchError, match="agent 0: X has 5 rows but y has 4"):
        HorizontalERM([(X, y[:4])], SquaredLoss(), L2())
    with pytest.raises(ShapeMismatchError, match="features"):
        HorizontalERM([(X, y), (X[:, :2], y)], SquaredLoss(), L2())
    with pytest.raises(ValidationError, match="reg_weight must be >= 0"):
        HorizontalERM([(X, y)], SquaredLoss(), L2(), reg_weight=-1.0)
    with pytest.raises(ValidationError, match="no samples"):
        HorizontalERM([(X, y), (X[:0], y[:0])], SquaredLoss(), L2())
