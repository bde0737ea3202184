"""Synthetic data generators of the papers (seeded, reproducible)."""

from __future__ import annotations

import numpy as np

from .._checks import check_int, check_nonnegative
from .dataset import Dataset
from .preprocess import normalize_columns_rows

__all__ = ["dzoa_regression"]


def dzoa_regression(
    rng: np.random.Generator,
    n_agents: int = 5,
    samples_per_agent: int = 20,
    n_features: int = 10,
    noise_var: float = 0.1,
    normalize: bool = True,
) -> Dataset:
    """Linear-regression data of the D-ZOA experiments (S0/S1 §VI).

    With ``N = n_agents * samples_per_agent`` and ``P = n_features``:

    * ``X`` in R^{N x P} with i.i.d. N(0, 1) entries,
    * ``omega ~ N(0, I_P)``,
    * ``psi ~ N(0, noise_var * I_N)`` (spec [AMB-D17]: psi lives in R^N, variance 0.1),
    * ``y = X omega + psi``, computed **before** ``X`` is normalised;
    * then, if ``normalize``, ``X`` is normalised by :func:`normalize_columns_rows` (spec §1.4, [AMB-D7]);
      the responses ``y`` are not rescaled.

    The draws are taken from ``rng`` in this fixed order: ``X`` (``rng.standard_normal((N, P))``, row-major),
    then ``omega`` (``rng.standard_normal(P)``), then ``psi`` (``sqrt(noise_var) * rng.standard_normal(N)``).
    Rows ``k * samples_per_agent`` to ``(k + 1) * samples_per_agent - 1`` are agent ``k``'s local data, so
    ``horizontal_partition(X, y, n_agents)`` (no shuffle) recovers the papers' ``X_k in R^{20 x 10}``.

    Args:
        rng: Source of randomness (one trial's generator).
        n_agents: Number of agents ``K`` (5 in the papers).
        samples_per_agent: Samples per agent ``N_k`` (20 in the papers).
        n_features: Dimension ``P`` (10 in the papers).
        noise_var: Variance of the additive noise ``psi`` (0.1 in the papers); 0 gives noise-free responses.
        normalize: Apply the §1.4 normalisation to ``X``.

    Returns:
        A dense :class:`Dataset` named ``"dzoa_synthetic"`` with ``extras["omega"]`` (the true coefficients),
        ``extras["n_agents"]`` and ``extras["samples_per_agent"]``.

    Raises:
        TypeError: If ``rng`` is not a ``numpy.random.Generator`` or a size is not an integer.
        ValidationError: If a size is < 1 or ``noise_var`` < 0.

    References:
        Spec §2.11 (data), §1.4; S1 §VI and S0 §V (same data).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n_agents = check_int(n_agents, "n_agents")
    samples_per_agent = check_int(samples_per_agent, "samples_per_agent")
    n_features = check_int(n_features, "n_features")
    noise_var = check_nonnegative(noise_var, "noise_var")
    n = n_agents * samples_per_agent

    X = rng.standard_normal((n, n_features))
    omega = rng.standard_normal(n_features)
    psi = np.sqrt(noise_var) * rng.standard_normal(n)
    y = X @ omega + psi
    if normalize:
        X = normalize_columns_rows(X)
    return Dataset(
        X=X,
        y=y,
        name="dzoa_synthetic",
        feature_names=None,
        credit="Synthetic linear-regression data of Gratton et al. (D-ZOA), generated with a seed",
        extras={"omega": omega, "n_agents": n_agents, "samples_per_agent": samples_per_agent},
    )
