"""Accuracy metrics of spec §1.5 evaluated on the values agents release (AMB-X1)."""

from __future__ import annotations

import numpy as np

__all__ = ["normalized_error", "objective_gap"]


def normalized_error(B: np.ndarray, beta_c: np.ndarray) -> float:
    """``NE = sum_k ||beta_k - beta^c||^2 / ||beta^c||^2``: a **sum** over agents (spec §1.5, S1)."""
    B = np.atleast_2d(np.asarray(B, dtype=float))
    return float(((B - beta_c) ** 2).sum() / (beta_c @ beta_c))


def objective_gap(problem, B: np.ndarray, f_star: float) -> float:
    """Mean over agents of ``sum_j f_j(beta_k) - f*`` (each agent's estimate scored on the network objective)."""
    return float(np.mean([problem.objective(b) for b in np.atleast_2d(B)]) - f_star)
