"""svmlight files: data directory, loading, missing-file errors, and fetch against a local HTTP server."""

from __future__ import annotations

import bz2
import functools
import gzip
import os
import socket
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from privdist.data import DATA_DIR_ENV, LIBSVM_FILES, data_dir, fetch, find_file, load_dataset, load_svmlight
from privdist.errors import DataFileNotFoundError, DownloadError, UnknownNameError, ValidationError

TINY = b"+1 1:0.5 3:1\n-1 2:2\n+1 123:1\n"


def _shared_libsvm_dir() -> Path | None:
    """A folder holding the real a9a files, if this machine has one (tests using it skip otherwise)."""
    candidates = [os.environ.get(DATA_DIR_ENV, ""), Path(__file__).resolve().parents[3] / "shared/datasets/libsvm"]
    for c in candidates:
        if c and (Path(c) / "a9a.gz").is_file() and (Path(c) / "a9a.t.gz").is_file():
            return Path(c)
    return None


# ---------------------------------------------------------------- data directory and loading


def test_data_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    assert data_dir(tmp_path / "explicit") == tmp_path / "explicit"
    assert data_dir() == tmp_path / "env"
    monkeypatch.delenv(DATA_DIR_ENV)
    default = data_dir()
    assert default.name == "data" and "privdist" in str(default)


def test_known_files_table():
    assert set(LIBSVM_FILES) == {"a9a", "a9a.t"}
    assert LIBSVM_FILES["a9a"].n_features == 123 and LIBSVM_FILES["a9a.t"].n_features == 123
    assert LIBSVM_FILES["a9a"].url == "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a"
    assert LIBSVM_FILES["a9a.t"].url == "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a.t"


def test_load_small_file_by_path_and_by_name(tmp_path):
    path = tmp_path / "tiny.svm"
    path.write_bytes(b"1 1:0.5 3:1\n-1 2:2\n")
    ds = load_svmlight(path)
    assert sp.issparse(ds.X) and ds.X.shape == (2, 3) and ds.name == "tiny.svm"
    np.testing.assert_array_equal(ds.X.toarray(), [[0.5, 0, 1], [0, 2, 0]])
    np.testing.assert_array_equal(ds.y, [1, -1])
    assert load_svmlight(str(path), n_features=5).X.shape == (2, 5)
    (tmp_path / "mine.gz").write_bytes(gzip.compress(path.read_bytes()))
    by_name = load_svmlight("mine", data_dir=tmp_path)
    assert by_name.name == "mine" and by_name.extras["path"] == str(tmp_path / "mine.gz")
    np.testing.assert_array_equal(by_name.X.toarray(), ds.X.toarray())


def test_known_name_is_padded_to_known_width(tmp_path):
    (tmp_path / "a9a.t.bz2").write_bytes(bz2.compress(b"-1 3:1 5:1\n+1 1:1\n"))
    ds = load_svmlight("a9a.t", data_dir=tmp_path)
    assert ds.X.shape == (2, 123) and ds.name == "a9a.t"
    assert ds.X[0, 2] == 1 and ds.X[1, 0] == 1  # one-based indices
    assert "LIBSVM" in ds.credit


def test_malformed_file_is_a_validation_error(tmp_path):
    bad = tmp_path / "bad.svm"
    bad.write_text("this is not svmlight\n")
    with pytest.raises(ValidationError, match="cannot read svmlight file .*bad.svm"):
        load_svmlight(bad)
    wide = tmp_path / "wide.svm"
    wide.write_bytes(b"1 9:1\n")
    with pytest.raises(ValidationError, match="wide.svm"):
        load_svmlight(wide, n_features=3)  # more columns in the file than asked for


def test_missing_file_message_names_paths_and_remedies(tmp_path):
    with pytest.raises(DataFileNotFoundError) as info:
        find_file("a9a", tmp_path)
    msg = str(info.value)
    for suffix in ("a9a", "a9a.gz", "a9a.bz2"):
        assert str(tmp_path / suffix) in msg
    assert "privdist data fetch a9a" in msg
    assert LIBSVM_FILES["a9a"].url in msg
    assert DATA_DIR_ENV in msg and "--data-dir" in msg
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(DataFileNotFoundError, match="privdist data fetch a9a.t"):
        load_dataset("a9a.t", data_dir=tmp_path)
    with pytest.raises(DataFileNotFoundError, match=str(tmp_path / "nothing.bz2")):
        load_svmlight("nothing", data_dir=tmp_path)


def test_env_var_is_used_for_lookup(tmp_path, monkeypatch):
    (tmp_path / "a9a").write_bytes(TINY)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert find_file("a9a") == tmp_path / "a9a"
    assert load_svmlight("a9a").X.shape == (3, 123)


def test_real_a9a_if_available():
    folder = _shared_libsvm_dir()
    if folder is None:
        pytest.skip("real a9a files not available (set PRIVDIST_DATA_DIR to a folder holding a9a.gz, a9a.t.gz)")
    train = load_dataset("a9a", data_dir=folder)
    test = load_dataset("a9a.t", data_dir=folder)
    assert train.X.shape == (32561, 123) and test.X.shape == (16281, 123)
    assert set(np.unique(train.y)) == {-1.0, 1.0}
    assert int((train.y == 1).sum()) == 7841  # >50K in the original 32,561 training rows
    assert set(np.unique(train.X.data)) == {1.0}  # binary features


# ---------------------------------------------------------------- fetch against a local server


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass

    release = threading.Event()  # set by the server fixture when its test is done

    def do_GET(self):
        if "slow" in self.path:  # answers only once the test is over: any client timeout fires first
            self.release.wait()
        return super().do_GET()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client that timed out closes early
        pass


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "srv"
    root.mkdir()
    handler = type("_FixtureHandler", (_Handler,), {"release": threading.Event()})
    httpd = _Server(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        handler.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_fetch_downloads_atomically_and_skips_present_file(server, tmp_path):
    root, url = server
    (root / "a9a").write_bytes(TINY)
    target = tmp_path / "data"
    path = fetch("a9a", data_dir=target, base_url=url)
    assert path == target / "a9a" and path.read_bytes() == TINY
    assert sorted(os.listdir(target)) == ["a9a"]  # no temporary file left
    assert load_svmlight("a9a", data_dir=target).X.shape == (3, 123)

    (root / "a9a").write_bytes(b"-1 1:1\n")
    assert fetch("a9a", data_dir=target, base_url=url + "/") == path
    assert path.read_bytes() == TINY  # present: not downloaded again
    fetch("a9a", data_dir=target, base_url=url, overwrite=True)
    assert path.read_bytes() == b"-1 1:1\n"


def test_fetch_gzip_response_is_stored_compressed(server, tmp_path):
    root, url = server
    (root / "a9a.t").write_bytes(gzip.compress(TINY))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a9a.t").write_bytes(b"+1 1:1\n")  # an older plain copy is replaced
    path = fetch("a9a.t", data_dir=tmp_path / "data", base_url=url, overwrite=True)
    assert path.name == "a9a.t.gz"
    assert sorted(os.listdir(tmp_path / "data")) == ["a9a.t.gz"]
    assert load_svmlight("a9a.t", data_dir=tmp_path / "data").X.shape == (3, 123)


def test_fetch_404_is_download_error_and_leaves_nothing(server, tmp_path):
    _, url = server
    with pytest.raises(DownloadError) as info:
        fetch("a9a", data_dir=tmp_path / "data", base_url=url)
    assert f"{url}/a9a" in str(info.value) and "404" in str(info.value)
    assert os.listdir(tmp_path / "data") == []


def test_fetch_rejects_non_svmlight_content(server, tmp_path):
    root, url = server
    (root / "a9a").write_bytes(b"<html><body>maintenance</body></html>\n")
    with pytest.raises(DownloadError, match="not a valid svmlight file"):
        fetch("a9a", data_dir=tmp_path / "data", base_url=url)
    assert os.listdir(tmp_path / "data") == []


def test_fetch_timeout(server, tmp_path):
    root, url = server
    (root / "slow").mkdir()
    (root / "slow" / "a9a").write_bytes(TINY)
    with pytest.raises(DownloadError, match="timed out"):
        fetch("a9a", data_dir=tmp_path / "data", base_url=url + "/slow", timeout=0.2)
    assert os.listdir(tmp_path / "data") == []


def test_fetch_unreachable_host(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError, match=f"127.0.0.1:{port}/a9a"):
        fetch("a9a", data_dir=tmp_path, base_url=f"http://127.0.0.1:{port}", timeout=2)


def test_fetch_argument_errors(tmp_path):
    with pytest.raises(UnknownNameError, match="unknown dataset 'gisette'; known: a9a, a9a.t"):
        fetch("gisette", data_dir=tmp_path)
    with pytest.raises(ValidationError, match="timeout must be > 0"):
        fetch("a9a", data_dir=tmp_path, timeout=0)


def test_path_object_of_known_name_uses_known_width(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file called a9a in the working directory
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "a9a").write_bytes(b"+1 1:1\n")
    assert load_svmlight(Path("a9a"), data_dir=tmp_path / "store").X.shape == (1, 123)
