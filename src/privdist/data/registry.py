"""Data sets by name: one entry point for the experiment layer and the CLI."""

from __future__ import annotations

import os

import numpy as np

from ..errors import UnknownNameError
from .adult import load_adult
from .dataset import Dataset
from .files import file_dataset
from .svmlight import LIBSVM_FILES, load_svmlight
from .synthetic import dzoa_regression

__all__ = ["DATASETS", "load_dataset"]

#: Every data set :func:`load_dataset` knows, with a one-line description.
DATASETS: dict[str, str] = {
    "dzoa_synthetic": "D-ZOA synthetic regression (S1 §VI): 100 x 10, seeded",
    "adult": "UCI Adult, one-hot (S3 §5.2): 45,222 x 104, labels +1/-1",
    "gisette_synthetic": "synthetic gisette-shaped stand-in (S2): 6,000 + 1,000 x 5,000, seeded (not the real data)",
    **{name: info.description for name, info in LIBSVM_FILES.items()},
    "file": "your own file: CSV, Parquet, svmlight, .npy/.npz (params: path, target, encode, party_column, ...)",
}


def load_dataset(
    name: str,
    rng: np.random.Generator | None = None,
    data_dir: str | os.PathLike | None = None,
    **params,
) -> Dataset:
    """Load or generate the data set called ``name``.

    Args:
        name: A key of :data:`DATASETS`: ``"dzoa_synthetic"``, ``"adult"``, ``"a9a"``, ``"a9a.t"``, or ``"file"``
            (a user's file: ``path=``, ``target=`` and the options of :func:`privdist.data.files.file_dataset`).
        rng: Generator for synthetic data sets (required for ``"dzoa_synthetic"``, ignored otherwise).
        data_dir: Data directory for files that are not shipped (``"a9a"``, ``"a9a.t"``); see
            :func:`privdist.data.svmlight.data_dir`.
        **params: Passed to the loader: :func:`dzoa_regression` (``n_agents``, ``samples_per_agent``,
            ``n_features``, ``noise_var``, ``normalize``), :func:`load_adult` (``normalize``) or
            :func:`load_svmlight` (``n_features``).

    Returns:
        The :class:`Dataset`.

    Raises:
        UnknownNameError: If ``name`` is not registered (the message lists the known names).
        TypeError: If ``"dzoa_synthetic"`` is asked for without a generator, or a parameter is not accepted by
            the loader.
        DataFileNotFoundError: If a LIBSVM file is not in the data directory.
    """
    if name == "dzoa_synthetic":
        if rng is None:
            raise TypeError("dataset 'dzoa_synthetic' is generated at random: pass rng=numpy.random.Generator")
        return dzoa_regression(rng, **params)
    if name == "adult":
        return load_adult(**params)
    if name == "file":
        if "path" not in params:
            raise TypeError("dataset 'file' needs params path=... (and target=... for tables)")
        return file_dataset(**params)
    if name in LIBSVM_FILES:
        return load_svmlight(name, data_dir=data_dir, **params)
    if name == "gisette_synthetic":  # S2 stand-in for gisette (issue 4)
        if rng is None:
            raise TypeError("dataset 'gisette_synthetic' is generated at random: pass rng=numpy.random.Generator")
        from .gisette import gisette_synthetic

        return gisette_synthetic(rng, **params)
    raise UnknownNameError("dataset", name, list(DATASETS))
