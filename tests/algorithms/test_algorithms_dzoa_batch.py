"""Row independence of D-ZOA's inner-loop kernels (issue 14: batched trials must equal one-trial runs bit for bit).

An agent's result from :func:`moment_inner_loops` must not depend on which other agents share the call (their number,
``J_k``, data rows, positions): exact equality, not closeness; likewise :func:`squared_inner_loops` over several
chunks of pairs. (The exact kernel's row independence at D-ZOA's padded widths is tested on whole runs in
``tests/runtime/test_runtime_run_many.py``.)
Every agent gets a fresh generator from its own seed, so its draws are the same in every call.
"""

import numpy as np
import pytest

import privdist.algorithms.dzoa_moments as dzoa_moments
from privdist.algorithms.dzoa_inner import quadratic_form, squared_diff, squared_inner_loops, zo_inner_loop
from privdist.algorithms.dzoa_moments import moment_inner_loops

T = 12


def _agents(K, n, P, Js, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((K, n, P))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))  # rows of norm <= 1
    y = rng.standard_normal((K, n))
    q, v = rng.uniform(2.0, 10.0, K), rng.standard_normal((K, P))
    alphas = rng.uniform(0.01, 0.05, (K, 1)) / np.sqrt(np.arange(1, T + 1))[None]
    return {"X": X, "y": y, "counts": np.full(K, float(n)), "q": q, "v": v, "Js": np.asarray(Js), "alphas": alphas}


def _embed(small, K, n, pos, Js_other, seed):
    """``small``'s agents at rows ``pos`` of ``K`` random agents with ``n >= small``'s rows (zero-padded)."""
    P = small["X"].shape[2]
    big = _agents(K, n, P, Js_other, seed)
    for key, a in small.items():
        if key in ("X", "y"):
            big[key][pos] = 0.0
            big[key][pos, :a.shape[1]] = a
        elif key != "counts":
            big[key][pos] = a
    big["counts"][pos] = small["counts"]
    return big


def _seeds(K, pos):
    seeds = list(range(1000, 1000 + K))
    for k, p in enumerate(pos):
        seeds[p] = 100 + k
    return seeds


def _exact(d, seeds, l1w, **kw):
    gens = [np.random.default_rng(s) for s in seeds]
    return squared_inner_loops(d["X"], d["y"], d["counts"], d["q"], d["v"], l1w, d["Js"], T, d["alphas"], 1.0, gens,
                               **kw)


def _moments(d, seeds, l1w):
    gens = [np.random.default_rng(s) for s in seeds]
    return moment_inner_loops(d["X"], d["y"], d["counts"], d["q"], d["v"], l1w, d["Js"], T, d["alphas"], 1.0, gens)


def test_exact_sampler_rows_with_chunks_do_not_depend_on_the_other_agents():
    small = _agents(4, 20, 10, [5, 16, 17, 40], 5)  # J_k > chunk: several chunks per step, some agents exhausted
    ref = _exact(small, range(100, 104), 0.2, chunk=16)
    pos = [0, 9, 10, 39]
    big = _embed(small, 40, 20, pos, np.random.default_rng(6).integers(1, 60, 40), 7)
    np.testing.assert_array_equal(_exact(big, _seeds(40, pos), 0.2, chunk=16)[pos], ref)


def test_agents_with_different_j_in_one_call_follow_the_reference_loop():
    d = _agents(3, 20, 10, [3, 20, 70], 11)
    got = _exact(d, range(3), 0.2, chunk=64)
    for k in range(3):
        diff = squared_diff(d["X"][k], d["y"][k], d["q"][k], d["v"][k], 0.2)
        ref = zo_inner_loop(diff, 10, int(d["Js"][k]), T, d["alphas"][k], 1.0, np.random.default_rng(k), chunk=64)
        np.testing.assert_allclose(got[k], ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("l1w", [0.2, 0.0])
def test_moment_sampler_rows_do_not_depend_on_the_other_agents(l1w, monkeypatch):
    small = _agents(5, 20, 10, [100, 1000, 5000, 40000, 100000], 12)
    ref = _moments(small, range(100, 105), l1w)
    pos = [0, 1, 250, 400, 499]
    big = _embed(small, 500, 25, pos, np.random.default_rng(13).integers(100, 100001, 500), 14)
    np.testing.assert_array_equal(_moments(big, _seeds(500, pos), l1w)[pos], ref)
    monkeypatch.setattr(dzoa_moments, "MOMENT_BUDGET", 3 * T * 41)  # slices of 3 agents
    np.testing.assert_array_equal(_moments(small, range(100, 105), l1w), ref)


def test_quadratic_form_ignores_zero_rows_appended():
    d = _agents(4, 20, 10, [1] * 4, 15)
    H, c = quadratic_form(d["X"], d["y"], d["counts"], d["q"], d["v"])
    pad = lambda a: np.concatenate([a, np.zeros((4, 13, *a.shape[2:]))], axis=1)
    H2, c2 = quadratic_form(pad(d["X"]), pad(d["y"]), d["counts"], d["q"], d["v"])
    np.testing.assert_array_equal(H2, H)
    np.testing.assert_array_equal(c2, c)
    G = np.swapaxes(d["X"], 1, 2) @ d["X"] / 20.0
    np.testing.assert_allclose(H, G + d["q"][:, None, None] * np.eye(10), rtol=1e-12)
