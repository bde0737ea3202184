"""Data layer: synthetic generators of the papers, UCI Adult (shipped), LIBSVM/svmlight files, the §1.4
normalisation, and horizontal/vertical partitioning among agents."""

from __future__ import annotations

from .adult import ADULT_CREDIT, load_adult
from .bounds import Preprocessor, clip_rows, data_bounds, scale_by_bounds
from .dataset import Dataset
from .files import FILE_FORMATS, file_dataset, load_file, load_files
from .parties import (PARTITIONS, check_groups, column_blocks, column_groups, dirichlet_groups, feature_blocks,
                      make_groups, random_groups, split_rows)
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
    "FILE_FORMATS",
    "load_file",
    "load_files",
    "file_dataset",
    "Preprocessor",
    "clip_rows",
    "scale_by_bounds",
    "data_bounds",
    "PARTITIONS",
    "random_groups",
    "column_groups",
    "dirichlet_groups",
    "make_groups",
    "check_groups",
    "split_rows",
    "column_blocks",
    "feature_blocks",
]
