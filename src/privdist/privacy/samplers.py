"""Noise samplers of the privacy mechanisms (spec §1.2).

Every sampler takes an explicit :class:`numpy.random.Generator` (STYLE #3) and never re-seeds it. Noise
levels may be scalars or arrays broadcastable against the requested shape (e.g. one sigma per agent with
shape ``(n_agents, 1)`` against ``size=(n_agents, dim)``). A noise level of zero gives exact zeros, which
makes the non-private limit of a mechanism the identity (STYLE #5) while consuming the same random stream.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._checks import check_finite, check_int
from ..errors import ShapeMismatchError, ValidationError

__all__ = ["gaussian", "laplace", "gamma_norm"]

Size = int | tuple[int, ...] | None


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _shape(size: Size, name: str) -> tuple[int, ...] | None:
    if size is None:
        return None
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return (check_int(size, name, minimum=0),)
    if isinstance(size, tuple):
        return tuple(check_int(s, f"{name}[{i}]", minimum=0) for i, s in enumerate(size))
    raise TypeError(f"{name} must be an int, a tuple of ints or None, got {type(size).__name__}")


def _level(value, name: str, shape: tuple[int, ...] | None, *, positive: bool = False) -> tuple[np.ndarray, tuple]:
    """Validate a noise level (scalar or array) and the output shape it broadcasts to."""
    level = check_finite(value, name)
    bad = level <= 0 if positive else level < 0
    if np.any(bad):
        first = level[bad].flat[0] if level.ndim else float(level)
        raise ValidationError(f"{name} must be {'> 0' if positive else '>= 0'}, got {float(first)}")
    if shape is None:
        return level, level.shape
    try:
        out = np.broadcast_shapes(level.shape, shape)
    except ValueError:
        out = None
    if out != shape:
        raise ShapeMismatchError(f"{name} of shape {level.shape} does not broadcast to size {shape}")
    return level, shape


def gaussian(rng: np.random.Generator, sigma, size: Size = None) -> np.ndarray:
    """Draw i.i.d. Gaussian noise ``N(0, sigma^2)``.

    Args:
        rng: The random generator to draw from.
        sigma: Standard deviation (>= 0), a scalar or an array broadcastable to ``size``.
        size: Output shape (int or tuple); ``None`` gives the shape of ``sigma``.

    Returns:
        A float array of shape ``size`` (exact zeros where ``sigma == 0``).

    Raises:
        TypeError: ``rng`` is not a Generator, or ``size`` is not an int/tuple.
        ValidationError: a negative sigma (NonFiniteDataError for NaN/inf).
        ShapeMismatchError: ``sigma`` does not broadcast to ``size``.

    References:
        Spec §1.2 (Gaussian mechanism).
    """
    _check_rng(rng)
    sigma, shape = _level(sigma, "sigma", _shape(size, "size"))
    return rng.standard_normal(shape) * sigma + 0.0  # + 0.0 turns -0.0 into +0.0


def laplace(rng: np.random.Generator, scale, size: Size = None) -> np.ndarray:
    """Draw i.i.d. Laplace noise with density ``exp(-|x|/b) / (2b)`` (so ``E|x| = b``).

    Args:
        rng: The random generator to draw from.
        scale: The scale ``b`` (>= 0), a scalar or an array broadcastable to ``size``.
        size: Output shape (int or tuple); ``None`` gives the shape of ``scale``.

    Returns:
        A float array of shape ``size`` (exact zeros where ``scale == 0``).

    Raises:
        TypeError: ``rng`` is not a Generator, or ``size`` is not an int/tuple.
        ValidationError: a negative scale.
        ShapeMismatchError: ``scale`` does not broadcast to ``size``.

    References:
        Spec §0.3 (Lap(b)), §1.2 (per-coordinate Laplace, S4).
    """
    _check_rng(rng)
    scale, shape = _level(scale, "scale", _shape(size, "size"))
    return rng.laplace(0.0, 1.0, shape) * scale + 0.0


def gamma_norm(rng: np.random.Generator, zeta, dim: int, size: Size = None) -> np.ndarray:
    """Draw vectors with density proportional to ``exp(-zeta * ||v||)`` on ``R^dim``.

    The direction is ``g / ||g||`` with ``g ~ N(0, I_dim)`` (uniform on the sphere) and the radius is
    ``Gamma(shape=dim, scale=1/zeta)``, so ``E||v|| = dim / zeta``.

    Args:
        rng: The random generator to draw from.
        zeta: The rate (> 0), a scalar or an array broadcastable to ``size`` (one rate per vector).
        dim: Dimension of each vector (>= 1).
        size: Number of vectors (int) or their batch shape (tuple); ``None`` draws a single vector.

    Returns:
        An array of shape ``(dim,)`` if ``size`` is None, else ``(*size, dim)``.

    Raises:
        TypeError: ``rng`` is not a Generator; ``dim`` or ``size`` not integers.
        ValidationError: ``zeta <= 0`` or ``dim < 1``.
        ShapeMismatchError: ``zeta`` does not broadcast to ``size``.

    References:
        Spec §1.2 ("gamma-norm" noise of PVP/DVP/R-ADMM, §6.3-§6.5).
    """
    _check_rng(rng)
    dim = check_int(dim, "dim")
    batch = _shape(size, "size")
    zeta, batch_shape = _level(zeta, "zeta", batch if batch is not None else (), positive=True)
    g = rng.standard_normal((*batch_shape, dim))
    norm = np.linalg.norm(g, axis=-1, keepdims=True)
    radius = rng.gamma(shape=dim, scale=1.0, size=batch_shape) / zeta
    return g / norm * np.asarray(radius)[..., None]
