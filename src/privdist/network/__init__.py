"""Communication networks: static undirected graphs, time-varying directed weights, generators and checks.

See spec §0.3, §2.2, §5 and §6.6. ``Network`` and ``TimeVaryingNetwork`` are validated once at construction and
immutable afterwards (STYLE #12).
"""

from __future__ import annotations

from .checks import (
    as_weight_matrix,
    check_b_strongly_connected,
    check_doubly_stochastic,
    is_strongly_connected,
)
from .generators import (
    NETWORK_KINDS,
    complete,
    default_rgg_radius,
    dzoa5,
    erdos_renyi,
    make_network,
    random_geometric,
    random_regular,
    ring,
    star,
)
from .graph import Network
from .timevarying import SCHEDULES, TimeVaryingNetwork, random_time_varying, s4_matrices

__all__ = [
    "Network",
    "TimeVaryingNetwork",
    "SCHEDULES",
    "NETWORK_KINDS",
    "make_network",
    "dzoa5",
    "ring",
    "complete",
    "star",
    "erdos_renyi",
    "random_geometric",
    "random_regular",
    "default_rgg_radius",
    "s4_matrices",
    "random_time_varying",
    "as_weight_matrix",
    "check_doubly_stochastic",
    "is_strongly_connected",
    "check_b_strongly_connected",
]
