"""Issue 40: the per-pair summaries are ordered (min <= median <= max) by construction, even where dp-accounting's
root search returns the epsilons of two ``mu`` a rounding apart in the wrong order."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privdist.privacy.pairwise.network_report import _summary, epsilon_of_mu

DELTA = 1e-5
#: two adjacent doubles whose dp-accounting epsilons come back reversed (found by a search over mu in [0.05, 3])
MU = 0.13354302987911576
MU_NEXT = float(np.nextafter(MU, np.inf))


def _ordered(stats: dict) -> bool:
    return stats["min"] <= stats["median"] <= stats["max"]


def test_the_rounding_of_issue_40_is_reproduced():
    # the cause: epsilon of the larger mu is below epsilon of the smaller one, by about 1e-15
    assert MU_NEXT > MU and epsilon_of_mu(MU_NEXT, DELTA) < epsilon_of_mu(MU, DELTA)
    assert epsilon_of_mu(MU, DELTA) - epsilon_of_mu(MU_NEXT, DELTA) < 1e-14


def test_summary_epsilons_are_ordered_where_dp_accounting_reverses_them():
    mu = np.array([MU, MU_NEXT, MU_NEXT])  # min MU, median and max MU_NEXT: the ring's case
    s = _summary(mu, np.full(3, 0.5), np.ones(3), DELTA)
    assert _ordered(s["mu"]) and _ordered(s["epsilon"]) and _ordered(s["local_epsilon"])
    # nothing moved by more than the root search's tolerance, and nothing lowered
    assert s["epsilon"]["min"] == epsilon_of_mu(MU, DELTA)
    assert abs(s["epsilon"]["median"] - epsilon_of_mu(MU_NEXT, DELTA)) < 1e-12
    assert s["epsilon"]["median"] >= epsilon_of_mu(MU_NEXT, DELTA)


def test_summary_of_no_pair_is_none_throughout():
    s = _summary(np.array([]), np.array([]), np.array([]), DELTA)
    assert s["pairs"] == 0
    assert all(v is None for key in ("mu", "epsilon", "local_epsilon", "local_over_pair_epsilon")
               for v in s[key].values())


def test_summary_keeps_inf_and_zero_in_order():
    s = _summary(np.array([0.0, 0.3, np.inf]), np.full(3, np.inf), np.array([np.inf, 2.0, 0.0]), DELTA)
    assert s["epsilon"] == {"min": 0.0, "median": epsilon_of_mu(0.3, DELTA), "max": np.inf}
    assert _ordered(s["local_epsilon"]) and _ordered(s["local_over_pair_epsilon"])


@settings(max_examples=60, derandomize=True)
@given(st.floats(0.01, 5.0), st.lists(st.integers(0, 4), min_size=1, max_size=9), st.sampled_from([1e-5, 1e-9, 0.1]))
def test_summaries_ordered_for_values_a_few_roundings_apart(base, steps, delta):
    mu = np.array([base])
    for k in steps:  # values k doubles above base: the spread of pairs that are equal in exact arithmetic
        x = base
        for _ in range(k):
            x = np.nextafter(x, np.inf)
        mu = np.append(mu, x)
    s = _summary(mu, mu[::-1].copy(), np.ones(mu.size), delta)
    assert _ordered(s["mu"]) and _ordered(s["epsilon"]) and _ordered(s["local_epsilon"])
