"""Benchmark ``sharing_a9a``: ADMM sharing (S2) seconds per epoch and time to the scikit-learn test log loss.

For a9a (66 + bias / 57 features, from ``$PRIVDIST_DATA_DIR``; skipped when absent; rho = 1, lambda = 1e-3, sum
loss, as the catalog) and the synthetic gisette-shaped problem (2000 + bias / 2000 / 1000; mean loss, lambda = 1e-3,
rho = 1e-6, as the catalog's gisette entries): non-private ADMM sharing on the simulator, timed per epoch
(excluding metric evaluation), and the wall time (setup included: Gram matrices, Cholesky factors) from which on
its test log loss STAYS within 1e-3 of scikit-learn's ``LogisticRegression`` on all features with the same
loss-to-penalty ratio (``C = 1/lambda`` for the sum loss, ``1/(N lambda)`` for the mean) - a transient dip below
the target (the gisette stand-in's ADMM test loss dips at epoch 2, then rises) does not count - beside
scikit-learn's own fit time in the same process. Target (issue 4): at most 3x. scikit-learn solves a slightly
different objective (AMB-V8: unregularised intercept, lambda/2), which ADMM does not converge to; so the time to
stay within 1e-3 of the exact centralized solve's test log loss is reported as well.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from privdist.algorithms import make_algorithm
from privdist.data import load_dataset, vertical_partition
from privdist.errors import DataFileNotFoundError
from privdist.network import complete
from privdist.problems.vertical import VerticalProblem, log_loss
from privdist.runtime import run


def _sklearn(Xtr, ytr, Xte, yte, lam):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=1 / lam, max_iter=1000).fit(Xtr, ytr)
    return time.perf_counter() - t0, log_loss(model.decision_function(Xte), np.where(yte > 0, 1.0, -1.0))


def _case(train, test, blocks, epochs: int, lam: float = 1e-3, loss_scale: str = "sum", rho: float = 1.0,
          tol: float = 1e-3) -> dict:
    problem = VerticalProblem(vertical_partition(train.X, blocks), train.y, lam, loss_scale)
    fit_s, target = _sklearn(train.X, train.y, test.X, test.y, lam / problem.loss_weight)
    Xte = test.X
    Xte = sp.hstack([np.ones((Xte.shape[0], 1)), Xte], format="csr") if sp.issparse(Xte) else \
        np.hstack([np.ones((Xte.shape[0], 1)), Xte])
    yte = np.where(test.y > 0, 1.0, -1.0)
    exact = log_loss(np.asarray(Xte @ problem.centralized_solution()).ravel(), yte)
    problem = VerticalProblem(vertical_partition(train.X, blocks), train.y, lam, loss_scale)  # fresh: no cached Grams
    t0 = time.perf_counter()
    stamps, spent = [], [0.0]

    def metric(est):  # records (algorithm time so far, test loss); its own cost is excluded
        t_in = time.perf_counter()
        val = log_loss(np.asarray(Xte @ est.sum(axis=0)).ravel(), yte)
        stamps.append((t_in - t0 - spent[0], val))
        spent[0] += time.perf_counter() - t_in
        return val

    res = run(make_algorithm("admm_sharing", rho=rho), problem, complete(problem.n_agents), epochs,
              transcript="none", metrics={"test": metric})
    t_setup = stamps[0][0]
    per_epoch = (stamps[-1][0] - t_setup) / epochs

    def first(goal):  # first epoch from which the test loss STAYS within tol of goal (not a transient dip)
        ok = [v <= goal + tol for _, v in stamps]
        if not ok[-1]:
            return None, None
        e = len(ok) - 1
        while e > 1 and ok[e - 1]:
            e -= 1
        return e, stamps[e][0]

    e_sk, t_sk = first(target)
    e_ex, t_ex = first(exact)
    return {"sklearn_fit_seconds": fit_s, "sklearn_test_log_loss": target, "centralized_test_log_loss": exact,
            "admm_setup_seconds": t_setup, "admm_seconds_per_epoch": per_epoch,
            "admm_final_test_log_loss": float(res.curves["test"][-1]),
            "admm_epochs_to_target": e_sk, "admm_seconds_to_target": t_sk,
            "ratio_to_sklearn": None if t_sk is None else t_sk / fit_s,
            "meets_target_3x": t_sk is not None and t_sk <= 3 * fit_s,
            "admm_epochs_to_centralized": e_ex, "admm_seconds_to_centralized": t_ex}


def run_benchmark(epochs: int = 100) -> dict:
    out = {"name": "sharing_a9a", "epochs": epochs, "tolerance": 1e-3}
    try:
        a9a = _case(load_dataset("a9a"), load_dataset("a9a.t"), [66, 57], epochs)
        out.update({f"a9a_{k}": v for k, v in a9a.items()})
    except DataFileNotFoundError as exc:
        out["a9a_skipped"] = str(exc).splitlines()[0]
    rng = np.random.default_rng(0)
    rng_test = np.random.default_rng(0)
    gis = _case(load_dataset("gisette_synthetic", rng=rng, split="train"),
                load_dataset("gisette_synthetic", rng=rng_test, split="test"), [2000, 2000, 1000], epochs,
                loss_scale="mean", rho=1e-6)
    out.update({f"gisette_synthetic_{k}": v for k, v in gis.items()})
    return out


if __name__ == "__main__":
    for k, v in run_benchmark().items():
        print(f"{k:45s} {v}")
