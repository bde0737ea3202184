"""Without Ray: the ``ray`` backend is registered, costs nothing at import, and fails with the install command."""

import sys

import pytest

from conftest import make_dzoa_problem

from privdist.cli.main import main
from privdist.network import dzoa5
from privdist.runtime import BACKENDS, make_backend, run
from privdist.runtime.ray_backend import INSTALL_HINT, RayBackend, RayUnavailableError


def test_ray_backend_is_registered_and_lazy():
    assert "ray" in BACKENDS and isinstance(make_backend("ray"), RayBackend)
    assert "pip install 'privdist[ray]'" in INSTALL_HINT


def test_missing_ray_gives_the_install_command(monkeypatch, tmp_path, capsys):
    from privdist.algorithms import make_algorithm

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(RayUnavailableError, match=r"pip install 'privdist\[ray\]'"):
        run(make_algorithm("consensus_admm"), make_dzoa_problem(0), dzoa5(), 2, backend="ray")
    assert main(["run", "quickstart", "--backend", "ray", "--out", str(tmp_path / "q"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "pip install 'privdist[ray]'" in err
    assert not (tmp_path / "q" / "trials").exists() or not any((tmp_path / "q" / "trials").iterdir())


def test_backend_arguments_are_validated():
    with pytest.raises(TypeError):
        RayBackend(actors=1.5)
    with pytest.raises(ValueError):
        RayBackend(actors=0)
    with pytest.raises(ValueError):
        RayBackend(timeout=-1)
