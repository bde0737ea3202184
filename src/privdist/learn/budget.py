"""A total per-agent budget -> the per-round parameters of an algorithm (PLD calibration, RDP cross-check).

The papers parameterise privacy per release (``epsilon`` of one round). A user states the budget of the whole
run: ``(epsilon, delta)`` per agent over ``rounds`` rounds. For an algorithm whose every round releases one
Gaussian mechanism with noise multiplier ``z = sqrt(C log(1.25/delta)) / epsilon_round`` (DPSGD, DP-ADMM, PVP and
DVP in their Gaussian variant, C = 2), :func:`total_budget_params` finds the smallest ``z`` with
``calibrate(epsilon, delta, rounds, accountant="pld")`` (never rounded down, STYLE #8) and sets
``epsilon_round = sqrt(2 log(1.25/delta)) / z``, so the PLD value of the run's ledger is the request to the
accountant's tolerance. l-AADMM takes a total natively (``budget="total"``, PLD, ``iterations=rounds``).
ADMM sharing (vertical, S2) releases one Gaussian share per party and round; only its clipped ``output`` mode is a
guarantee, so the parameters returned for it fix ``mode="output"`` and ``clip=True`` (the public ``b1`` is the
estimator's, issue 16).
"""

from __future__ import annotations

from ..errors import UnknownNameError, ValidationError

__all__ = ["TOTAL_BUDGET_ALGORITHMS", "NON_PRIVATE_ALGORITHMS", "VERTICAL_BUDGET_ALGORITHMS", "total_budget_params"]

#: Horizontal algorithms whose per-round noise :func:`total_budget_params` calibrates to a total budget.
TOTAL_BUDGET_ALGORITHMS = ("dpsgd", "dpadmm", "pvp", "dvp", "laadmm")
#: Horizontal algorithms without noise (no budget; their report is epsilon = inf).
NON_PRIVATE_ALGORITHMS = ("consensus_admm",)
#: Vertical algorithms whose per-round noise :func:`total_budget_params` calibrates (clipped output mode only).
VERTICAL_BUDGET_ALGORITHMS = ("admm_sharing",)


def total_budget_params(algorithm: str, epsilon: float | None, delta: float, rounds: int) -> dict:
    """Parameters that make ``algorithm`` spend ``(epsilon, delta)`` per agent over ``rounds`` rounds (PLD).

    Args:
        algorithm: A name of :data:`TOTAL_BUDGET_ALGORITHMS` or :data:`NON_PRIVATE_ALGORITHMS`.
        epsilon: Total epsilon per agent, or ``None`` for the algorithm without noise.
        delta: Total delta per agent.
        rounds: Rounds of the run (one release per agent and round).

    Returns:
        ``{"params": {...}, "noise_multiplier": z or None, "epsilon_per_round": float or None}``.

    Raises:
        UnknownNameError: an algorithm not supported here.
    """
    from ..privacy import calibrate, gaussian_epsilon

    if algorithm in NON_PRIVATE_ALGORITHMS:
        return {"params": {}, "noise_multiplier": None, "epsilon_per_round": None}
    if algorithm not in TOTAL_BUDGET_ALGORITHMS + VERTICAL_BUDGET_ALGORITHMS:
        raise UnknownNameError("algorithm for a total budget", algorithm,
                               TOTAL_BUDGET_ALGORITHMS + NON_PRIVATE_ALGORITHMS + VERTICAL_BUDGET_ALGORITHMS)
    if algorithm == "admm_sharing" and epsilon is None:
        return {"params": {"mode": "output", "epsilon": None}, "noise_multiplier": None, "epsilon_per_round": None}
    if epsilon is None:
        params = {"epsilon": None}
        if algorithm == "laadmm":
            params["iterations"] = rounds
        return {"params": params, "noise_multiplier": None, "epsilon_per_round": None}
    if not epsilon > 0:
        raise ValidationError(f"epsilon must be > 0 (or None for no noise), got {epsilon}")
    if algorithm == "laadmm":
        return {"params": {"epsilon": float(epsilon), "delta": float(delta), "iterations": int(rounds),
                           "budget": "total"}, "noise_multiplier": None, "epsilon_per_round": None}
    z = calibrate(float(epsilon), float(delta), int(rounds), "gaussian", "pld")
    eps_round = gaussian_epsilon(z, delta, 2.0)
    params = {"epsilon": eps_round, "delta": float(delta), "gaussian_constant": 2.0}
    if algorithm in ("pvp", "dvp"):
        params.update(noise="gaussian", budget="round")
    if algorithm == "admm_sharing":  # sigma = sqrt(2 log(1.25/delta)) C / eps_round = z C (S2 Thm 3)
        params = {"mode": "output", "clip": True, "epsilon": eps_round, "delta": float(delta)}
    return {"params": params, "noise_multiplier": z, "epsilon_per_round": eps_round}
