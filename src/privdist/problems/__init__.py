"""Problems: losses, regularizers, horizontal ERM with per-agent local objectives, reference solutions."""

from .erm import HorizontalERM
from .losses import LOSSES, LogisticLoss, Loss, SquaredLoss, make_loss
from .metrics import normalized_error, objective_gap
from .reference import REFERENCE_METHODS, literal_reference, reference_solution
from .regularizers import L1, L2, REGULARIZERS, NoRegularizer, Regularizer, make_regularizer, soft_threshold

__all__ = [
    "HorizontalERM", "Loss", "SquaredLoss", "LogisticLoss", "make_loss", "LOSSES",
    "Regularizer", "L1", "L2", "NoRegularizer", "make_regularizer", "REGULARIZERS", "soft_threshold",
    "reference_solution", "literal_reference", "REFERENCE_METHODS", "normalized_error", "objective_gap",
]
