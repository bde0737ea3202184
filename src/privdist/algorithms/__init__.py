"""Algorithms: each a factory of ``init``/``step`` pure functions over a block of agents (DESIGN, STYLE #1)."""

from .consensus_admm import ConsensusADMM
from .dpsgd import DPSGD
from .registry import ALGORITHMS, make_algorithm

__all__ = ["ConsensusADMM", "DPSGD", "ALGORITHMS", "make_algorithm"]
