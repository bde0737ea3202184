"""Issue 25/27/37: the DP range step under secure aggregation (privdist.privacy.range_plan, privdist.learn.ranges): the secure sum is exact,
the aggregate's noise is the declared central Skellam noise, a threshold audit between neighbouring datasets does
not refute the recorded release, and the estimators use it by default with the requested total."""

import math
import warnings

import numpy as np
import pytest

from privdist.learn import DistributedLogisticRegression
from types import SimpleNamespace

from privdist.learn.ranges import release_histograms
from privdist.privacy import PrivacyLedger
from privdist.privacy.range_plan import RangePlan, secure_noise_std
from privdist.privacy.accountants import agent_epsilon
from privdist.privacy.audit_stats import threshold_audit
from privdist.privacy.distributed import prior_release
from privdist.privacy.dp_ranges import bin_counts
from privdist.runtime.rng import step_generator
from privdist.runtime.secure.secagg import party_secrets
from privdist.runtime.secure.secure_once import secure_sum_once
from privdist.errors import ValidationError


def secure_ranges(blocks, z, *, shares, colluding, seed, secure):
    """The secure range step of the plan ``(z, shares, K - colluding honest)`` on ``blocks``: the summed counts, the
    sum's noise std, the recorded release (as its ``(variance, l2, l1)``) and the prior the training composes."""
    K, m = len(blocks), blocks[0].shape[1]
    plan = RangePlan(tuple(f"c{j}" for j in range(m)), m, 0.1, 0.1, "skellam", (z,), shares=shares,
                     honest=max(1, K - colluding))
    ledger = PrivacyLedger(K)
    total, _, _, noise_std = release_histograms(plan, blocks, seed, secure, ledger)
    ev = ledger.entries(0)[0][0].event
    assert all(ledger.entries(k)[0][0].event == ev for k in range(K))  # every party's ledger records the sum
    return SimpleNamespace(total=total, noise_std=noise_std, event=(ev.variance, ev.l2_sensitivity,
                                                                    ev.l1_sensitivity),
                           prior=plan.mechanism(0).prior())


def test_secure_sum_once_is_exact_and_uses_keys_of_its_own():
    v = np.random.default_rng(0).integers(-10**6, 10**6, size=(5, 40))
    np.testing.assert_array_equal(secure_sum_once(v, step="ranges", seed=3, secure=False), v.sum(axis=0))
    np.testing.assert_array_equal(secure_sum_once(v, step="ranges", seed=3, secure=True), v.sum(axis=0))
    # research-mode secrets are not the run's (no one-time pad reused between the step and training round 0)
    own = step_generator(3, "ranges/secagg", 0, False).bytes(64)
    assert own != party_secrets([0], 3, 0, False)[0]
    with pytest.raises(ValidationError):
        secure_sum_once(v[:1], step="ranges", seed=3, secure=False)
    with pytest.raises(ValidationError):
        secure_sum_once(v.astype(float), step="ranges", seed=3, secure=False)


def _blocks(rng, n=40, parties=3):
    X = np.column_stack([rng.normal(size=n * parties) * 10, rng.exponential(size=n * parties)])
    return [X[k * n:(k + 1) * n] for k in range(parties)]


def test_aggregate_noise_is_the_declared_central_skellam_noise():
    """1,000 secure sums of 3 parties' histograms (2 columns), one party assumed colluding: the summed counts minus
    the exact ones have mean 0 and variance mu K / shares in every bin (each bin within 6 standard errors, pooled
    within 2 %), and the recorded release carries the K - colluding honest shares."""
    blocks = _blocks(np.random.default_rng(0))
    z, reps, K, shares = 1.5, 1000, 3, 2
    exact = sum(bin_counts(b) for b in blocks)
    out = [secure_ranges(blocks, z, shares=shares, colluding=1, seed=s, secure=False) for s in range(reps)]
    resid = np.stack([o.total for o in out]) - exact
    mu = (z * math.sqrt(2 * 2)) ** 2
    var = mu * K / shares
    assert out[0].noise_std == pytest.approx(math.sqrt(var)) == secure_noise_std(z, 2, K, shares)
    assert np.abs(resid.mean(axis=0)).max() < 6 * math.sqrt(var / reps)
    ratio = resid.var(axis=0, ddof=1) / var
    assert np.abs(ratio - 1).max() < 6 * math.sqrt(2 / (reps - 1))
    assert abs(ratio.mean() - 1) < 0.02
    assert out[0].event == pytest.approx((mu * (K - 1) / shares, 2.0, 4.0))
    assert out[0].prior == pytest.approx((mu, 2.0, 4.0))


def test_threshold_audit_does_not_refute_the_recorded_release():
    """The aggregate on D and on D' (one row of party 0 moved to a far bin): the certified lower bound of the best
    threshold test stays below the recorded release's epsilon; the same test refutes it on noise of a tenth the
    scale (the audit has power)."""
    delta = 1e-5
    blocks = _blocks(np.random.default_rng(1), n=20)
    moved = [b.copy() for b in blocks]
    moved[0][0, 0] = 1e6
    z, n = 2.0, 3000

    def column0(bl, zz, s):
        return secure_ranges(bl, zz, shares=3, colluding=0, seed=s, secure=False).total[0]

    x0 = np.stack([column0(blocks, z, s) for s in range(n)])
    x1 = np.stack([column0(moved, z, n + s) for s in range(n)])
    event = secure_ranges(blocks, z, shares=3, colluding=0, seed=0, secure=False).event
    eps = agent_epsilon([(prior_release(event), 1)], delta, "rdp")
    test = threshold_audit(x0, x1, delta, statistics=("projection",))
    assert test.epsilon_lb() <= eps, test.bounds
    x0w = np.stack([column0(blocks, z / 10, s) for s in range(600)])
    x1w = np.stack([column0(moved, z / 10, n + s) for s in range(600)])
    assert threshold_audit(x0w, x1w, delta, statistics=("projection",)).epsilon_lb() > eps


def _fit(**kw):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=3000) * 300 + 1000, rng.normal(size=3000) * 0.01])
    y = (X[:, 0] + 3e4 * X[:, 1] > 1000).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DistributedLogisticRegression(epsilon=1.0, n_agents=5, random_state=0, **kw).fit(X, y)


def test_estimators_sum_the_range_step_securely_by_default():
    secure, local = _fit(), _fit(trust="local")
    step = next(s for s in secure.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert "secure aggregation" in step["mechanism"] and step["skellam_release"][1] == pytest.approx(2.0)
    assert 0 < step["epsilon"] < 1
    assert secure.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)  # calibrated on the composition
    local_step = next(s for s in local.privacy_report_["preprocessing"] if s["step"] == "scale_by_dp_ranges")
    assert "Gaussian noisy" in local_step["mechanism"] and "skellam_release" not in local_step
    assert local.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)
    # the central noise is sqrt(K) smaller than the parties' local noise summed
    assert step["noise_std"] == pytest.approx(secure_noise_std(step["noise_multiplier"], 2, 5, 5))
