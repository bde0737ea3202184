"""A total per-agent budget -> the parameters of an algorithm that spends exactly it (issue 23: budgets at the edge).

A user states the budget of the whole run: ``(epsilon, delta)`` per agent over ``rounds`` rounds. Every DP algorithm
accepts it natively (``budget="total"``): it builds its one mechanism object with the noise multiplier the PLD
accountant calibrates for the run's releases (:mod:`privdist.privacy.budget`, never rounded down), so the printed
PLD guarantee is the request to the accountant's tolerance (RDP shown as a cross-check). There is no per-round
epsilon in between (the former round trip total -> per-round epsilon -> noise multiplier is gone).
PVP and DVP use their Gaussian output/objective noise here (a guarantee with clipping for PVP). ADMM sharing
(vertical, S2) is a guarantee only in its clipped ``output`` mode, so its parameters fix ``mode="output"`` and
``clip=True`` (the public ``b1`` is the estimator's, issue 16).
"""

from __future__ import annotations

from ..errors import UnknownNameError, ValidationError

__all__ = ["TOTAL_BUDGET_ALGORITHMS", "NON_PRIVATE_ALGORITHMS", "VERTICAL_BUDGET_ALGORITHMS", "total_budget_params"]

#: Horizontal algorithms an estimator can fit at a total budget.
TOTAL_BUDGET_ALGORITHMS = ("dpmm", "ssp", "dpsgd", "dpadmm", "pvp", "dvp", "laadmm")
#: Horizontal algorithms without noise (no budget; their report is epsilon = inf).
NON_PRIVATE_ALGORITHMS = ("consensus_admm",)
#: Vertical algorithms an estimator can fit at a total budget (clipped output mode only).
VERTICAL_BUDGET_ALGORITHMS = ("admm_sharing",)


def total_budget_params(algorithm: str, epsilon, delta: float, rounds: int) -> dict:
    """Parameters that make ``algorithm`` spend ``(epsilon, delta)`` per agent over ``rounds`` rounds (PLD).

    Args:
        algorithm: A name of :data:`TOTAL_BUDGET_ALGORITHMS`, :data:`VERTICAL_BUDGET_ALGORITHMS` or
            :data:`NON_PRIVATE_ALGORITHMS`.
        epsilon: Total epsilon per agent (or one per agent), or ``None`` for the algorithm without noise.
        delta: Total delta per agent.
        rounds: Rounds of the run.

    Returns:
        The algorithm's parameters: ``epsilon``, ``delta``, ``budget="total"`` and its horizon (``rounds`` or
        ``iterations``) set to ``rounds``, plus the mode a guarantee needs.

    Raises:
        UnknownNameError: an algorithm not supported here. ValidationError: ``epsilon <= 0``.
    """
    from ..algorithms.registry import ALGORITHMS

    if algorithm in NON_PRIVATE_ALGORITHMS:
        return {}
    if algorithm not in TOTAL_BUDGET_ALGORITHMS + VERTICAL_BUDGET_ALGORITHMS:
        raise UnknownNameError("algorithm for a total budget", algorithm,
                               TOTAL_BUDGET_ALGORITHMS + NON_PRIVATE_ALGORITHMS + VERTICAL_BUDGET_ALGORITHMS)
    if epsilon is not None and not isinstance(epsilon, (list, tuple)) and not epsilon > 0:
        raise ValidationError(f"epsilon must be > 0 (or None for no noise), got {epsilon}")
    params = {"epsilon": epsilon if epsilon is None or isinstance(epsilon, (list, tuple)) else float(epsilon),
              "delta": float(delta), "budget": "total", ALGORITHMS[algorithm].horizon_field: int(rounds)}
    if algorithm in ("pvp", "dvp"):
        params["noise"] = "gaussian"
    if algorithm == "admm_sharing":
        params.update(mode="output", clip=True)
    return params
