"""Shared fixtures: the D-ZOA paper's small ridge/lasso setups (spec §2.11) built through the public API."""

import time

from dataclasses import dataclass

import numpy as np
import pytest

from privdist.data import dzoa_regression, horizontal_partition
from privdist.network import dzoa5
from privdist.problems import HorizontalERM, make_loss, make_regularizer


try:  # no per-example time limit for property tests (hypothesis' default deadline is a wall-time assertion)
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("privdist", deadline=None)
    _hypothesis_settings.load_profile("privdist")
except ImportError:  # pragma: no cover - the test extra installs hypothesis
    pass


def wait_until(condition, timeout=60.0, interval=0.05, what="the condition"):
    """Poll ``condition()`` until it is true and return its value; fail the test if it is still false after
    ``timeout`` seconds. The deadline is generous on purpose: a test waits for an event, never for a duration, and
    a loaded machine only makes it wait longer (issue 37)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)  # the poll interval of this helper (allowed in tests/test_no_flaky_timing.py)


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


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray (2 CPUs, no dashboard) shared by every Ray test of the session; skips without Ray."""
    import logging

    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)
    yield ray
    if started:
        ray.shutdown()


def make_vertical_problem(seed=0, n_parties=5, n_samples=120, reg_weight=0.1):
    """Small vertically partitioned logistic problem (S2 shape: parties hold columns, labels +/-1)."""
    from privdist.data import dzoa_regression
    from privdist.problems.vertical import VerticalProblem

    ds = dzoa_regression(np.random.default_rng(seed), n_agents=1, samples_per_agent=n_samples, n_features=10)
    X, y = np.asarray(ds.X), np.where(ds.y > 0, 1.0, -1.0)
    return VerticalProblem(np.array_split(X, n_parties, axis=1), y, reg_weight=reg_weight)


def make_logistic_problem(K, n=20, d=3):
    """``K`` parties of ``n`` rows each, ``d`` Gaussian features, labels of a random hyperplane; logistic + l2."""
    import math

    rng = np.random.default_rng(0)
    X = rng.normal(size=(K * n, d)) / math.sqrt(d)
    y = np.where(X @ rng.normal(size=d) > 0, 1.0, -1.0)
    return HorizontalERM([(X[k * n:(k + 1) * n], y[k * n:(k + 1) * n]) for k in range(K)], make_loss("logistic"),
                         make_regularizer("l2"), 1e-3)


def assert_secure_ledger(algo, problem, res, rounds, agents, K, report):
    """Each agent's recorded releases of a secure-aggregation run are the events of its rounds, each at the parties
    present in it (``rounds``: the run's round records with their ``absent`` parties), and the report's RDP epsilon
    composes exactly those."""
    from privdist.privacy import agent_epsilon

    for agent in agents:
        releases = []
        for r in rounds:
            present = np.ones(K, dtype=bool)
            present[r["absent"]] = False
            event = algo.secure_events(r["round"], present, problem)[agent]
            if event is not None:
                releases.append((event, 1))
        assert len(releases) == sum(c for _, c in res.ledger.entries(agent))
        assert report["per_agent"][agent]["epsilon"]["rdp"] == pytest.approx(agent_epsilon(releases, 1e-5, "rdp"))


@dataclass(frozen=True)
class HalfNoiseStreams:
    """Agent streams whose draws have half the requested scale (a broken sampler for the audits: the mechanism's
    unit normals, drawn through ``draw``, come out halved)."""

    rng: object

    def draw(self, fn):
        return self.rng.draw(fn) * 0.5

    def __getattr__(self, name):
        return getattr(self.rng, name)


def job_rows(k: int, *, seed: int, n: int, step: int, shift: float = 0.0):
    """Party ``k``'s rows of the job tests (columns age, income, score; labels "yes"/"no"): ``n + step k`` rows
    from the stream ``seed + k``; the parties' labels differ by their own shift ``shift (k - 1)`` (natural silos)."""
    rng = np.random.default_rng(seed + k)
    n = n + step * k
    X = np.column_stack([rng.uniform(18, 90, n), rng.uniform(0, 200, n), rng.normal(size=n)])
    y = np.where(0.03 * (X[:, 0] - 50) + 0.01 * (X[:, 1] - 100) + X[:, 2] + shift * (k - 1) > 0, "yes", "no")
    return X, y
