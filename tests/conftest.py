"""Shared fixtures: the D-ZOA paper's small ridge/lasso setups (spec §2.11) built through the public API."""

import numpy as np
import pytest

from privdist.data import dzoa_regression, horizontal_partition
from privdist.network import dzoa5
from privdist.problems import HorizontalERM, make_loss, make_regularizer


def make_dzoa_problem(seed=0, regularizer="l2", loss="squared"):
    rng = np.random.default_rng(seed)
    ds = dzoa_regression(rng)
    y = np.where(ds.y > 0, 1.0, -1.0) if loss == "logistic" else ds.y
    parts = horizontal_partition(ds.X, y, n_agents=5)
    return HorizontalERM(parts, make_loss(loss), make_regularizer(regularizer), 1.0)


@pytest.fixture
def ridge_problem():
    return make_dzoa_problem(0, "l2")


@pytest.fixture
def lasso_problem():
    return make_dzoa_problem(0, "l1")


@pytest.fixture
def net5():
    return dzoa5()
