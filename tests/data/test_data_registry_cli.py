"""Data-set registry and the ``privdist data`` command."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from privdist.cli.main import main
from privdist.data import DATA_DIR_ENV, DATASETS, load_dataset
from privdist.errors import UnknownNameError


def test_registry_names_and_loading(tmp_path):
    assert set(DATASETS) >= {"dzoa_synthetic", "adult", "a9a", "a9a.t", "gisette_synthetic"}
    assert all(isinstance(v, str) and v for v in DATASETS.values())
    ds = load_dataset("dzoa_synthetic", rng=np.random.default_rng(1), n_agents=2, samples_per_agent=3)
    assert ds.X.shape == (6, 10)
    assert load_dataset("adult", normalize=False).X.shape == (45222, 104)
    (tmp_path / "a9a").write_bytes(b"+1 1:1\n-1 123:1\n")
    assert load_dataset("a9a", data_dir=tmp_path).X.shape == (2, 123)


def test_registry_errors():
    with pytest.raises(UnknownNameError, match="unknown dataset 'mnist'; known: a9a, a9a.t, adult, dzoa_synthetic"):
        load_dataset("mnist")
    with pytest.raises(TypeError, match="rng"):
        load_dataset("dzoa_synthetic")


def test_cli_data_path(tmp_path, monkeypatch, capsys):
    assert main(["data", "path", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    assert main(["data", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "env")


def test_cli_data_list(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["data", "list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 4}
    assert set(lines) >= {"dzoa_synthetic", "adult", "a9a", "a9a.t"}
    assert "│ no " in lines["a9a"] and "privdist data fetch a9a" in lines["a9a"]
    assert "│ yes " in lines["adult"]
    (tmp_path / "a9a.gz").write_bytes(b"")
    assert main(["data", "list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("│ a9a "))
    assert "│ yes " in row and str(tmp_path / "a9a.gz") in row


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_cli_data_fetch(tmp_path, capsys):
    root = tmp_path / "srv"
    root.mkdir()
    (root / "a9a").write_bytes(b"+1 1:1\n")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        rc = main(["data", "fetch", "a9a", "--data-dir", str(tmp_path / "d"), "--base-url", url, "--timeout", "60"])
        assert rc == 0 and capsys.readouterr().out.strip() == str(tmp_path / "d" / "a9a")
        assert (tmp_path / "d" / "a9a").read_bytes() == b"+1 1:1\n"
        rc = main(["data", "fetch", "a9a.t", "--data-dir", str(tmp_path / "d"), "--base-url", url])
        assert rc == 2 and "error: could not download" in capsys.readouterr().err
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
    assert main(["data", "fetch", "adult", "--data-dir", str(tmp_path)]) == 2
    assert "unknown dataset 'adult'" in capsys.readouterr().err
