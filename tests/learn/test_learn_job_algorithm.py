"""Issue 39: a job's plan carries its optimiser (dpmm, the default, or ssp). Every party builds the optimiser the plan
names and refuses an offer whose plan and settings disagree, before it reads data; an unknown or unsupported
optimiser is a named error."""

import numpy as np
import pandas as pd
import pytest

from privdist.errors import UnknownNameError, ValidationError
from privdist.learn import DistributedLogisticRegression
from privdist.learn.job import JOB_ALGORITHMS, JobRefusedError, JobRequest, PartyJob, coordinate
from privdist.runtime.remote import LocalLink

from conftest import job_rows

K = 3
COLUMNS = ["age", "income", "score"]
BOUNDS = {"age": (18, 90), "income": (0, 200), "score": (-5, 5)}


def _rows(k: int):
    return job_rows(k, seed=30, n=100, step=20)


def _party(k: int):
    X, y = _rows(k)
    reads = []

    def load():
        reads.append(1)
        return X, y, COLUMNS

    job = PartyJob(f"party{k}", load, {"rows": len(X), "columns": COLUMNS, "classes": sorted(set(y))})
    job.reads = reads
    return job


@pytest.mark.parametrize("algorithm", JOB_ALGORITHMS)
def test_a_job_runs_the_optimiser_its_plan_names(algorithm):
    """Seeded: the job's model, plan and ledgers equal the estimator's with the same ``algorithm``."""
    model = coordinate(JobRequest(epsilon=1.0, delta=1e-5, scale="bounds", bounds=BOUNDS, seed=7, algorithm=algorithm),
                       [LocalLink(_party(k)) for k in range(K)])
    X = np.vstack([_rows(k)[0] for k in range(K)])
    y = np.concatenate([_rows(k)[1] for k in range(K)])
    groups = np.concatenate([np.full(len(_rows(k)[0]), k) for k in range(K)])
    with pytest.warns(Warning):
        ref = DistributedLogisticRegression(algorithm=algorithm, epsilon=1.0, delta=1e-5, scale="bounds",
                                            bounds=BOUNDS, random_state=7).fit(pd.DataFrame(X, columns=COLUMNS), y,
                                                                               groups=groups)
    assert model.privacy_plan_.algorithm == algorithm and model.privacy_plan_ == ref.privacy_plan_
    assert model._algo.name == algorithm
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    assert all(model.ledger_.entries(k) == ref.ledger_.entries(k) for k in range(K))
    assert model.privacy_report_["guaranteed"] and model.privacy_report_["epsilon"] == pytest.approx(1.0, rel=1e-3)


def test_an_unknown_or_unsupported_optimiser_is_a_named_error():
    with pytest.raises(UnknownNameError, match="nosuch"):
        JobRequest(algorithm="nosuch")
    with pytest.raises(ValidationError, match="dpsgd"):
        JobRequest(algorithm="dpsgd")
    assert JobRequest().algorithm == "dpmm"


def test_a_party_refuses_a_plan_that_names_another_optimiser_than_the_settings():
    """A coordinator that offers an ssp plan with dpmm settings (or the reverse) is refused before any data is read."""

    class Swapped:  # a link that rewrites the offer's settings in transit
        def __init__(self, party):
            self.party, self.link = party, LocalLink(party)

        def call(self, method, args):
            if method == "offer":
                args = {**args, "settings": {**args["settings"], "algorithm": "dpmm"}}
            return self.link.call(method, args)

    parties = [_party(k) for k in range(K)]
    links = [Swapped(parties[0])] + [LocalLink(p) for p in parties[1:]]
    with pytest.raises(JobRefusedError, match="party0.*optimiser 'ssp'"):
        coordinate(JobRequest(epsilon=1.0, delta=1e-5, scale="bounds", bounds=BOUNDS, seed=7, algorithm="ssp"), links)
    assert parties[0].reads == [] and all(p.closed for p in parties)


def test_the_cli_offers_the_job_optimisers():
    import argparse

    from privdist.cli.coordinate_cmd import register

    sub = argparse.ArgumentParser().add_subparsers()
    register(sub)
    action = next(a for a in sub.choices["coordinate"]._actions if a.dest == "algorithm")
    assert tuple(action.choices) == JOB_ALGORITHMS
