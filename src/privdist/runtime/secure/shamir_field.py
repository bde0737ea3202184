"""Shamir secret sharing of many 16-byte seeds at once, vectorised with numpy (issue 41).

Shamir ("How to share a secret", CACM 1979) over the prime field ``GF(p)``, ``p = 2^31 - 1``: a 16-byte seed is
cut into eight 16-bit limbs, each limb ``s`` is the constant term of its own random polynomial ``f`` of degree
``t - 1`` with coefficients uniform in ``GF(p)``, and the share of the party with evaluation point ``x`` (its global id
plus one) is ``f(x)`` per limb. Any ``t`` shares rebuild ``s = sum_j lambda_j f(x_j)`` with the Lagrange weights at
zero ``lambda_j = prod_{m != j} x_m / (x_m - x_j)``; fewer reveal nothing about ``s`` (each limb is shared
independently, so the secrecy is per limb and exact). Products of two field elements stay below ``2^62``, so the
arithmetic is exact in uint64. A share is eight uint32 (32 bytes) per seed.

Unlike pycryptodome's ``Shamir`` (used by :mod:`privdist.runtime.secure.secagg_threshold`, one secret per call in
pure Python), the coefficients come from a generator the caller passes: the party's own stream in research mode (the
transcript repeats with the seed), OS entropy in secure mode.
"""

from __future__ import annotations

import numpy as np

from ...errors import ReconstructionError, ValidationError

__all__ = ["PRIME", "LIMBS", "SHARE_BYTES", "split_many", "combine_many", "matmul_mod"]

PRIME = (1 << 31) - 1
LIMBS = 8  # 16-bit limbs of a 16-byte seed
SHARE_BYTES = 4 * LIMBS
_P = np.uint64(PRIME)


def _limbs(seeds) -> np.ndarray:
    seeds = np.ascontiguousarray(seeds, dtype=np.uint8)
    if seeds.shape[-1] != 2 * LIMBS:
        raise ValidationError(f"Shamir sharing here splits 16-byte seeds, got {seeds.shape[-1]} bytes")
    return seeds.view("<u2").astype(np.uint64)


def split_many(seeds, points, threshold: int, coefficients) -> np.ndarray:
    """Shares of ``N`` seeds: ``seeds`` (N, 16) uint8, ``points`` (N, k) evaluation points in ``1..p-1`` (the share
    holders' ids plus one), ``coefficients`` (N, threshold - 1, 8) uint64 uniform in ``[0, p)`` (drawn by the
    caller). Returns (N, k, 32) uint8: the share of seed ``i`` for the holder of ``points[i, j]``."""
    limbs = _limbs(seeds)  # (N, 8)
    x = np.asarray(points, dtype=np.uint64) % _P
    coefficients = np.asarray(coefficients, dtype=np.uint64)
    if coefficients.shape != (limbs.shape[0], threshold - 1, LIMBS):
        raise ValidationError(f"coefficients must be (N, threshold - 1, {LIMBS}), got {coefficients.shape}")
    points, where = np.unique(x, return_inverse=True)  # the Vandermonde rows x^0 .. x^(t-1) of each distinct point
    powers = np.empty((points.size, threshold), dtype=np.uint64)
    powers[:, 0] = 1
    for j in range(1, threshold):
        powers[:, j] = (powers[:, j - 1] * points) % _P
    high, low = _halves(powers)
    where = where.reshape(x.shape)
    acc = _matmul_halves(high[where], low[where], np.concatenate([limbs[:, None, :], coefficients], axis=1))
    return np.ascontiguousarray(acc.astype("<u4")).view(np.uint8)  # f(x) = s + sum_j a_j x^j per limb


def _halves(a) -> tuple[np.ndarray, np.ndarray]:
    """``a = a1 2^16 + a0`` (uint64 below ``2^32``) as two float64 arrays, exact."""
    a = np.asarray(a, dtype=np.uint64)
    return (a >> np.uint64(16)).astype(np.float64), (a & np.uint64(0xFFFF)).astype(np.float64)


def _matmul_halves(a1, a0, b) -> np.ndarray:
    """``(a1 2^16 + a0) @ b mod p`` (see :func:`matmul_mod`)."""
    if a1.shape[-1] >= 1 << 22:
        raise ValidationError(f"matmul_mod sums at most 2^22 products exactly, got {a1.shape[-1]}")
    b1, b0 = _halves(b)

    def part(u, v):
        return (u @ v).astype(np.uint64) % _P

    high, mid, low = part(a1, b1), (part(a1, b0) + part(a0, b1)) % _P, part(a0, b0)
    return (high * np.uint64(2) + (mid << np.uint64(16)) + low) % _P


def matmul_mod(a, b) -> np.ndarray:
    """``a @ b mod p`` for stacked uint64 matrices with entries in ``[0, p)``, exact: each operand is cut into 16-bit
    halves (``a = a1 2^16 + a0``), whose products (below ``2^31``) are summed by BLAS in float64, exactly while the
    inner dimension is below ``2^22``; ``2^32 = 2 mod p`` recombines them."""
    return _matmul_halves(*_halves(a), b)


def _inverse(a: np.ndarray) -> np.ndarray:
    """``a^(p-2) mod p`` elementwise (Fermat), ``a`` in ``1..p-1``."""
    out, base, e = np.ones_like(a), a % _P, PRIME - 2
    while e:
        if e & 1:
            out = (out * base) % _P
        base = (base * base) % _P
        e >>= 1
    return out


def combine_many(shares, points) -> np.ndarray:
    """The seeds of ``N`` sets of ``t`` shares: ``shares`` (N, t, 32) uint8, ``points`` (N, t) their distinct
    evaluation points. Returns (N, 16) uint8.

    Raises:
        ReconstructionError: a rebuilt limb outside 16 bits (shares of different sharings, or altered).
    """
    values = np.ascontiguousarray(shares, dtype=np.uint8).view("<u4").astype(np.uint64)  # (N, t, 8)
    x = np.asarray(points, dtype=np.uint64) % _P
    n, t = x.shape
    num, den = np.ones((n, t), np.uint64), np.ones((n, t), np.uint64)
    for m in range(t):
        other = x[:, m:m + 1]
        mask = np.arange(t) != m
        num = np.where(mask, (num * other) % _P, num)
        den = np.where(mask, (den * ((other + _P - x) % _P)) % _P, den)
    if (den == 0).any():
        raise ReconstructionError("Shamir shares with repeated evaluation points cannot be combined")
    weights = (num * _inverse(den)) % _P
    limbs = matmul_mod(weights[:, None, :], values)[:, 0, :]
    if (limbs >= (1 << 16)).any():
        raise ReconstructionError("rebuilt Shamir limbs outside 16 bits: the shares belong to different sharings")
    return np.ascontiguousarray(limbs.astype("<u2")).view(np.uint8)
