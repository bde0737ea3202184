"""Runtime: random streams, routing, backends, transcripts, checkpoints, ``run`` (the algorithm and backend
contracts are :mod:`privdist.contract`, re-exported here)."""

from ..contract import AGENT, COORDINATOR, AgentBlock, Aggregation, Algorithm, Backend, BackendBase, MessageSpec
from .party import HorizontalParties, PooledDataUnavailableError, VerticalParties
from .ray_party import PartyBackend, PlacementError
from .serve import Cluster
from .result import RunResult
from .rng import AgentStreams, data_rng, stream
from .routing import Router
from .run import BACKENDS, make_backend, run, run_many, versions
from .secure.secure_round import Dropout
from .simulator import SimulatorBackend
from .transcript import TRANSCRIPT_MODES, Transcript

__all__ = [
    "AGENT", "COORDINATOR", "AgentBlock", "Aggregation", "Algorithm", "Backend", "BackendBase", "MessageSpec",
    "RunResult", "AgentStreams", "data_rng", "stream", "Router", "BACKENDS", "make_backend", "run", "run_many",
    "versions", "SimulatorBackend", "TRANSCRIPT_MODES", "Transcript", "HorizontalParties", "VerticalParties",
    "PooledDataUnavailableError", "Cluster", "PartyBackend", "PlacementError", "Dropout",
]
