"""The :class:`Dataset` container returned by every loader and generator of :mod:`privdist.data`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeMismatchError
from .preprocess import check_data

__all__ = ["Dataset"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled data matrix with its name, feature names and credit line.

    ``X`` and ``y`` are validated and converted on construction (float64; a sparse ``X`` becomes CSR). The
    dataclass is frozen, so fields cannot be rebound; equality is identity (comparing arrays element-wise is
    left to the caller).

    Attributes:
        X: Features, float64 ndarray or ``scipy.sparse`` CSR matrix of shape ``(n_samples, n_features)``.
        y: Labels (+1/-1 for classification) or responses, float64 array of shape ``(n_samples,)``.
        name: Short name of the data set (e.g. ``"adult"``).
        feature_names: One name per column, or ``None``.
        credit: Attribution to show wherever the data is used (source, authors, license).
        extras: Further data produced with the set (e.g. the true coefficients ``"omega"`` of a synthetic
            regression).

    Raises:
        ShapeMismatchError: If ``X`` is not 2-D, ``len(y)`` differs from the number of rows, or
            ``feature_names`` does not have one entry per column.
        NonFiniteDataError: If ``X`` or ``y`` contains NaN or infinity.
    """

    X: Any
    y: np.ndarray
    name: str
    feature_names: tuple[str, ...] | None = None
    credit: str = ""
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        X, y = check_data(self.X, self.y, name=self.name)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        if self.feature_names is not None:
            names = tuple(str(n) for n in self.feature_names)
            if len(names) != X.shape[1]:
                raise ShapeMismatchError(f"{self.name}: {len(names)} feature names given for {X.shape[1]} columns")
            object.__setattr__(self, "feature_names", names)

    @property
    def n_samples(self) -> int:
        """Number of rows of ``X``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    @property
    def is_sparse(self) -> bool:
        """Whether ``X`` is a sparse (CSR) matrix."""
        return sp.issparse(self.X)

    def __repr__(self) -> str:
        kind = "sparse" if self.is_sparse else "dense"
        return f"Dataset(name={self.name!r}, n_samples={self.n_samples}, n_features={self.n_features}, {kind})"
