"""scikit-learn style estimators over privdist's private distributed algorithms (DESIGN "estimators"): horizontal
(parties hold rows) and vertical (:class:`SharedFeatureLogisticRegression`, parties hold columns, ADMM sharing).

``epsilon`` and ``delta`` are the TOTAL per-agent budget of the whole fit; the per-round noise is calibrated with
the PLD accountant (:mod:`privdist.learn.budget`). Noise comes from fresh OS entropy unless ``random_state`` is set
(research mode, warned).

A party's own use of the release (issue 39, owner-only, no privacy spent): :func:`personalize` (its personal model,
the release regularised towards on its own rows) and :func:`evaluate_parties` (each party's own test rows scored by
its model alone, the global model and its personal model).
"""

from __future__ import annotations

from ._base import PrivacyTargetWarning, ResearchModeWarning, UtilityWarning
from .budget import NON_PRIVATE_ALGORITHMS, TOTAL_BUDGET_ALGORITHMS, VERTICAL_BUDGET_ALGORITHMS, total_budget_params
from .linear import DistributedLasso, DistributedLogisticRegression, DistributedRidge
from .vertical import SharedFeatureLogisticRegression
from .model_io import MODEL_FORMAT, LinearModel, load_model, save_model
from .personal import PersonalModel, personalize
from .party_eval import evaluate_parties

__all__ = [
    "DistributedLogisticRegression",
    "DistributedRidge",
    "DistributedLasso",
    "SharedFeatureLogisticRegression",
    "load_model",
    "save_model",
    "LinearModel",
    "MODEL_FORMAT",
    "personalize",
    "PersonalModel",
    "evaluate_parties",
    "total_budget_params",
    "TOTAL_BUDGET_ALGORITHMS",
    "NON_PRIVATE_ALGORITHMS",
    "VERTICAL_BUDGET_ALGORITHMS",
    "UtilityWarning",
    "ResearchModeWarning",
    "PrivacyTargetWarning",
]
