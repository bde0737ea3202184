"""Data layer: synthetic generators of the papers, UCI Adult (shipped), LIBSVM/svmlight files, the §1.4
normalisation, and horizontal/vertical partitioning among agents."""

from __future__ import annotations

from .adult import ADULT_CREDIT, load_adult
from .dataset import Dataset
from .partition import horizontal_partition, vertical_partition
from .preprocess import check_data, normalize_columns_rows
from .registry import DATASETS, load_dataset
from .svmlight import DATA_DIR_ENV, LIBSVM_FILES, LibsvmFile, data_dir, fetch, find_file, load_svmlight
from .synthetic import dzoa_regression

__all__ = [
    "Dataset",
    "check_data",
    "normalize_columns_rows",
    "dzoa_regression",
    "load_adult",
    "ADULT_CREDIT",
    "data_dir",
    "find_file",
    "load_svmlight",
    "fetch",
    "LIBSVM_FILES",
    "LibsvmFile",
    "DATA_DIR_ENV",
    "horizontal_partition",
    "vertical_partition",
    "load_dataset",
    "DATASETS",
]
