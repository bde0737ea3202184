"""Problem kind ``adult_erm``: S3's l2-regularised logistic regression on Adult over a network (spec §4.10).

The ``[data]`` dataset (``adult``: 45,222 x 104, rows normalised, labels +-1, spec §1.4) is shuffled with the
trial's data stream and split evenly over the network's agents (S3 §5; seed per trial [RES]); agent ``i`` has

    L_{D_i}(w) = (1/|D_i|) sum_j log(1 + exp(-b_ij w^T a_ij)) + lambda/(2n) ||w||^2      (S3(23))

i.e. a :class:`~privdist.problems.HorizontalERM` (its sparse-oracle subclass
:class:`~privdist.algorithms._sparse_oracle.SparseHorizontalERM`) with the logistic loss, ``R = ||w||^2`` and
``reg_weight = lambda / 2`` (``[problem].lam`` = S3's ``lambda``, AMB-H2: 1e-4). Metrics (every round, at the estimates the
algorithm scores, AMB-H11): ``empirical_risk`` = ``L_D({w_i}) = sum_i L_{D_i}(w_i)`` (S3(18)/(23)) and
``excess_risk`` = ``L_D({w_i}) - L_D(w*)``, with ``w*`` the minimiser of (1) computed by L-BFGS on the pooled
objective (kept in the trial extras with ``D = 2 ||w*||``, AMB-H4). The dataset is loaded once per process.

References:
    Spec §1.4, §1.5, §4.1, §4.10, AMB-H2, AMB-H4, AMB-H11; S3 §5.
"""

from __future__ import annotations

import functools

import numpy as np

from ..algorithms._sparse_oracle import SparseERMOracle, SparseHorizontalERM
from ..data import horizontal_partition, load_dataset
from ..errors import SpecError
from ..problems import make_loss, make_regularizer
from .problem_kinds import ProblemKind, Trial, register_problem_kind
from .kinds import make_spec_network

__all__ = ["build_adult_erm", "pooled_minimiser"]


@functools.lru_cache(maxsize=4)
def _dataset(kind: str, data_dir, params: tuple):
    return load_dataset(kind, rng=None, data_dir=data_dir, **dict(params))


def pooled_minimiser(oracle: SparseERMOracle, tol: float = 1e-10) -> np.ndarray:
    """Minimiser ``w*`` of ``sum_i L_{D_i}(w)`` (one common vector): damped Newton with the sparse oracle.

    Args:
        oracle: oracle of the whole problem (all agents).
        tol: gradient-norm tolerance.

    Returns:
        ``w*``, shape (P,).
    """
    return oracle.pooled_newton(tol=tol)


def build_adult_erm(spec, rng, data_dir) -> Trial:
    """Build one trial of an ``adult_erm`` experiment (see the module docstring).

    Raises:
        SpecError: ``[problem].lam`` negative, or a data kind other than ``adult``/``a9a``.
    """
    kind = spec.data.kind
    if kind not in ("adult", "a9a"):
        raise SpecError(f"adult_erm needs [data].kind 'adult' or 'a9a', got {kind!r}")
    dataset = _dataset(kind, data_dir, tuple(sorted(spec.data.params.items())))
    network = make_spec_network(spec, rng)
    lam = float(spec.problem.get("lam", 1e-4))
    if not lam >= 0:
        raise SpecError(f"[problem].lam must be >= 0, got {lam}")
    parts = horizontal_partition(dataset.X, dataset.y, n_agents=network.n_agents, rng=rng)
    problem = SparseHorizontalERM(parts, make_loss("logistic"), make_regularizer("l2"), lam / 2.0)
    oracle = problem.oracle
    w_star = pooled_minimiser(oracle)
    risk_star = float(oracle.values(np.broadcast_to(w_star, (oracle.K, oracle.P))).sum())

    def risk(est):
        return float(oracle.values(np.asarray(est, dtype=float)).sum())

    metrics = {"empirical_risk": risk, "excess_risk": lambda est: risk(est) - risk_star}
    extras = {"w_star": w_star, "risk_star": risk_star, "D": 2.0 * float(np.linalg.norm(w_star)),
              "dataset": dataset}
    return Trial(problem, network, metrics, extras)


register_problem_kind(ProblemKind("adult_erm", frozenset({"lam"}), ("empirical_risk", "excess_risk"),
                                  build_adult_erm))
