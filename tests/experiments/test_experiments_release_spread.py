"""The measured spread of a D-ZOA release against S1 Thm 1's declared sigma (issue 14 finding)."""

import pytest

from privdist.errors import SpecError
from privdist.experiments.catalog import load_experiment
from privdist.experiments.release_spread import main, release_spread


def _spec():
    return load_experiment("s1_fig4").with_settings(["runs.0.params.step_scale=0.3", "runs.0.params.T=20"])


def test_release_spread_is_far_below_the_declared_sigma_under_the_sum_reading(capsys):
    """Sum reading, lasso, epsilon 0.15: the replayed release moves far less than S1(17)'s sigma
    (measured 600-1000x at T = 100, round 21; this short test run only asserts > 10x)."""
    out = release_spread(_spec(), "D-ZOA eps=0.15 delta=0.001", at_round=2, replicates=4)
    assert len(out["measured"]) == len(out["declared"]) == len(out["J"]) == 5
    assert all(m > 0 for m in out["measured"]) and min(out["ratio"]) > 10
    assert main(["s1_fig4", "D-ZOA eps=0.15 delta=0.001", "--set", "runs.0.params.step_scale=0.3", "--set",
                 "runs.0.params.T=20", "--at-round", "1", "--replicates", "3"]) == 0
    assert "declared / measured" in capsys.readouterr().out


def test_release_spread_names_bad_requests():
    with pytest.raises(SpecError, match="no dzoa run"):
        release_spread(_spec(), "DPSGD eps=0.15 delta=0.001")
    with pytest.raises(SpecError, match="replicates"):
        release_spread(_spec(), "D-ZOA eps=0.15 delta=0.001", replicates=1)
