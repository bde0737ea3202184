"""Issue 23: every backend implements the declared interface :class:`privdist.contract.Backend`.

``run()`` calls the declared members only (no ``hasattr``/``getattr`` probes): a backend that lacks one is refused
by name before anything runs, and each shipped backend has every member with the declared parameters.
"""

import inspect

import pytest

from conftest import make_dzoa_problem

from privdist.algorithms import make_algorithm
from privdist.contract import BACKEND_MEMBERS, Backend, BackendBase
from privdist.network import dzoa5
from privdist.runtime import SimulatorBackend, run
from privdist.runtime.ray_backend import RayBackend
from privdist.runtime.ray_party import PartyBackend
from privdist.runtime.run import BACKENDS, make_backend

# constructing a backend connects to nothing (Ray is imported when a run starts), so this needs no Ray
BACKEND_CLASSES = [SimulatorBackend, RayBackend, PartyBackend]


@pytest.mark.parametrize("cls", BACKEND_CLASSES, ids=lambda c: c.__name__)
def test_backend_has_every_declared_member_with_the_declared_parameters(cls):
    backend = cls()
    assert isinstance(backend, Backend) and isinstance(backend, BackendBase)
    assert isinstance(backend.name, str) and isinstance(backend.party_local, bool)
    for name in BACKEND_MEMBERS:
        declared = getattr(Backend, name, None)
        member = getattr(backend, name)  # AttributeError here names the missing member
        if callable(declared):
            want = [(p.name, p.kind, p.default) for p in inspect.signature(declared).parameters.values()][1:]
            got = [(p.name, p.kind, p.default) for p in inspect.signature(member).parameters.values()]
            assert got == want, (cls.__name__, name)  # names, keyword-only (start's secure) and defaults


def test_the_members_cover_what_run_uses():
    assert {"name", "party_local", "for_problem", "start", "step_agents", "step_coordinator", "dp_events",
            "estimate", "coordinator_state", "party_values", "snapshot", "durable_snapshot", "restore", "report",
            "close"} == set(BACKEND_MEMBERS)


def test_every_backend_name_makes_a_backend():
    for name in BACKENDS:
        assert isinstance(make_backend(name), Backend)


def test_an_object_without_the_interface_is_refused_by_name():
    class Partial:
        name = "partial"

        def start(self, algorithm, problem, network, seed, trial, *, secure=False):
            raise AssertionError("must not start")

    with pytest.raises(TypeError, match=r"lacks \['close', 'coordinator_state'"):
        run(make_algorithm("consensus_admm"), make_dzoa_problem(0), dzoa5(), 2, backend=Partial())


def test_a_subclass_of_the_base_gets_the_defaults_and_runs():
    class Wrapped(BackendBase):
        """The simulator behind the declared interface, with only the required members written out."""

        name = "wrapped"

        def __init__(self):
            self.inner = SimulatorBackend()

        def __getattr__(self, attr):  # start, step_agents, ... delegated
            return getattr(self.inner, attr)

    backend = Wrapped()
    assert backend.party_local is False and backend.report() == {} and backend.for_problem(None) is backend
    res = run(make_algorithm("consensus_admm"), make_dzoa_problem(0), dzoa5(), 3, backend=backend)
    ref = run(make_algorithm("consensus_admm"), make_dzoa_problem(0), dzoa5(), 3)
    assert res.config["backend"] == "wrapped" and res.transcript.digest == ref.transcript.digest


def test_run_passes_secure_through_the_declared_start_in_both_modes():
    class Recording(SimulatorBackend):
        def start(self, algorithm, problem, network, seed, trial, *, secure=False):
            self.secure_seen = secure
            return super().start(algorithm, problem, network, seed, trial, secure=secure)

    for secure in (False, True):
        backend = Recording()
        res = run(make_algorithm("consensus_admm"), make_dzoa_problem(0), dzoa5(), 2, backend=backend, secure=secure)
        assert backend.secure_seen is secure and res.config["noise"]["mode"] == ("secure" if secure else "seeded")
