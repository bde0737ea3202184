"""Privacy layer: mechanisms and budgets, noise samplers, releases, the ledger, accountants and calibration.

A mechanism (:mod:`.mechanisms`) draws the noise and declares the release from one object; :mod:`.budget` turns a
budget (per round or total) into one.

Algorithms declare each privacy-costing message as a :class:`Release` (a dp-accounting event plus the paper's
per-release guarantee); a :class:`PrivacyLedger` collects them per agent; :func:`privacy_report` turns the ledger
into epsilon per agent under the ``paper``, ``rdp`` and ``pld`` accountants; :func:`calibrate` finds the smallest
noise that meets a budget (DESIGN idea 3; spec §1.2-§1.3).
"""

from __future__ import annotations

from .accountants import ACCOUNTANTS, agent_epsilon, clear_accountant_cache, composed_event, privacy_report
from .budget import BUDGETS, check_budget, gamma_norm_mechanism, gaussian_mechanism, laplace_mechanism
from .calibration import MECHANISMS, calibrate, default_composition, mechanism_release
from .events import event_from_dict, event_to_dict, freeze_event
from .ledger import PrivacyLedger
from .mechanisms import (GammaNormMechanism, GaussianMechanism, Identity, LaplaceMechanism, Mechanism,
                         mechanism_from_dict)
from .objective_perturbation import ObjectivePerturbationMechanism
from .paper import PaperBound, advanced_composition, c0, dzoa_epsilon, moments_epsilon, paper_bound
from .release import (COMPOSITIONS, Release, claimed, gaussian_epsilon, gaussian_release, gaussian_sigma,
                      laplace_release, non_private_release, pure_release)
from .samplers import gamma_norm, gaussian, laplace

__all__ = [
    "BUDGETS",
    "GammaNormMechanism",
    "GaussianMechanism",
    "Identity",
    "LaplaceMechanism",
    "Mechanism",
    "ObjectivePerturbationMechanism",
    "check_budget",
    "gamma_norm_mechanism",
    "gaussian_mechanism",
    "laplace_mechanism",
    "mechanism_from_dict",
    "ACCOUNTANTS",
    "COMPOSITIONS",
    "MECHANISMS",
    "PaperBound",
    "PrivacyLedger",
    "Release",
    "advanced_composition",
    "agent_epsilon",
    "c0",
    "calibrate",
    "claimed",
    "clear_accountant_cache",
    "composed_event",
    "default_composition",
    "dzoa_epsilon",
    "event_from_dict",
    "event_to_dict",
    "freeze_event",
    "gamma_norm",
    "gaussian",
    "gaussian_epsilon",
    "gaussian_release",
    "gaussian_sigma",
    "laplace",
    "laplace_release",
    "mechanism_release",
    "moments_epsilon",
    "non_private_release",
    "paper_bound",
    "pure_release",
    "privacy_report",
]
