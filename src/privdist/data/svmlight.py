"""svmlight/LIBSVM files: the data directory, loading, and downloading the known LIBSVM sets.

Files that are not shipped with the package (LIBSVM ``a9a``/``a9a.t``, or any svmlight file of the user's) live
in a *data directory*, resolved by :func:`data_dir`: an explicit argument, else the environment variable
``PRIVDIST_DATA_DIR``, else ``<user cache dir>/privdist/data`` (``platformdirs``).
"""

from __future__ import annotations

import os
import socket
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .._checks import check_int, check_positive
from ..errors import DataFileNotFoundError, DownloadError, UnknownNameError, ValidationError
from .dataset import Dataset

__all__ = [
    "LibsvmFile",
    "LIBSVM_FILES",
    "LIBSVM_BASE_URL",
    "DATA_DIR_ENV",
    "data_dir",
    "find_file",
    "load_svmlight",
    "fetch",
]

DATA_DIR_ENV = "PRIVDIST_DATA_DIR"
LIBSVM_BASE_URL = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary"
_LIBSVM_CREDIT = (
    "LIBSVM data sets (Chang & Lin), binary 'a9a': UCI Adult (Becker & Kohavi, 1996, CC BY 4.0) "
    "binarised as in Platt (1998)"
)
_SUFFIXES = ("", ".gz", ".bz2")
_CHUNK = 1 << 16


@dataclass(frozen=True)
class LibsvmFile:
    """A LIBSVM data file privdist knows how to find, load and download.

    Attributes:
        name: File name on the LIBSVM page (and in the data directory).
        n_features: Number of features (columns) of the set; used to align train and test files.
        url: Download address of the (uncompressed) file.
        description: One line shown by ``privdist data list``.
    """

    name: str
    n_features: int
    url: str
    description: str


LIBSVM_FILES: dict[str, LibsvmFile] = {
    "a9a": LibsvmFile("a9a", 123, f"{LIBSVM_BASE_URL}/a9a", "LIBSVM a9a (binarised Adult), train: 32,561 x 123"),
    "a9a.t": LibsvmFile("a9a.t", 123, f"{LIBSVM_BASE_URL}/a9a.t", "LIBSVM a9a.t (binarised Adult), test: 16,281 x 123"),
}


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """Resolve the data directory (it is not created here).

    Args:
        path: Explicit directory; wins over everything else.

    Returns:
        ``path`` if given, else ``$PRIVDIST_DATA_DIR`` if set and non-empty, else
        ``platformdirs.user_cache_dir("privdist") / "data"``; with ``~`` expanded.
    """
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get(DATA_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("privdist")) / "data"


def find_file(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Return the path of ``name``, ``name.gz`` or ``name.bz2`` (first found) in the data directory.

    Args:
        name: File name, e.g. ``"a9a"``.
        data_dir: Data directory (default: :func:`data_dir` resolution).

    Returns:
        Path of the existing file.

    Raises:
        DataFileNotFoundError: If none of the candidates exists; the message lists every path searched and how
            to obtain the file.
    """
    folder = _resolve(data_dir)
    candidates = [folder / f"{name}{suffix}" for suffix in _SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(c) for c in candidates)
    if name in LIBSVM_FILES:
        how = (
            f"run `privdist data fetch {name}` (add --data-dir DIR to choose the folder), or download "
            f"{LIBSVM_FILES[name].url} and put it in {folder}"
        )
    else:
        how = f"put the svmlight file {name!r} in {folder}"
    raise DataFileNotFoundError(
        f"data file {name!r} not found (searched {searched}); to get it, {how}; or point to another "
        f"directory with the environment variable {DATA_DIR_ENV} or --data-dir"
    )


def load_svmlight(
    name_or_path: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    n_features: int | None = None,
) -> Dataset:
    """Load an svmlight/LIBSVM file (plain, ``.gz`` or ``.bz2``) as a sparse :class:`Dataset`.

    Resolution: a known LIBSVM name (``"a9a"``, ``"a9a.t"``) is looked up in the data directory; otherwise an
    existing file path is read directly; any other string is looked up in the data directory as a file name.
    Parsing is scikit-learn's ``load_svmlight_file`` (one-based indices for the known LIBSVM files, automatic
    detection otherwise).

    Args:
        name_or_path: Known name, file name in the data directory, or path to any svmlight file.
        data_dir: Data directory (default: :func:`data_dir` resolution).
        n_features: Number of columns; defaults to the known count for known names (123 for a9a and a9a.t, so
            that the test file, whose last column is empty, is zero-padded to the training width) and to the
            largest index in the file otherwise.

    Returns:
        A :class:`Dataset` with a CSR ``X``; ``extras["path"]`` is the file read.

    Raises:
        DataFileNotFoundError: If the file cannot be found (message says where it looked and how to get it).
        ValidationError: If the file is not valid svmlight or has more columns than ``n_features``.

    References:
        Spec §3.9 (a9a: 123 features, test columns aligned to train by zero-padding, as in the S2 authors' code).
    """
    from sklearn.datasets import load_svmlight_file  # lazy: importing scikit-learn takes about a second

    key = os.fspath(name_or_path)
    known = LIBSVM_FILES.get(key)
    if known is not None and isinstance(name_or_path, str):
        path = find_file(key, data_dir)
    elif Path(key).expanduser().is_file():
        path, known = Path(key).expanduser(), None
    else:
        path = find_file(key, data_dir)
    if n_features is None and known is not None:
        n_features = known.n_features
    if n_features is not None:
        n_features = check_int(n_features, "n_features")
    try:
        X, y = load_svmlight_file(str(path), n_features=n_features, dtype=float, zero_based=False if known else "auto")
    except (ValueError, OSError, EOFError) as exc:
        raise ValidationError(f"cannot read svmlight file {path}: {exc}") from None
    name = known.name if known else _strip_suffix(path.name)
    return Dataset(
        X=X,
        y=y,
        name=name,
        credit=_LIBSVM_CREDIT if known else f"svmlight file {path.name}",
        extras={"path": str(path)},
    )


def fetch(
    name: str,
    data_dir: str | os.PathLike | None = None,
    base_url: str | None = None,
    timeout: float = 30.0,
    overwrite: bool = False,
) -> Path:
    """Download a known LIBSVM file into the data directory; return its path.

    The download goes to a temporary file in the target directory, is checked to parse as svmlight (with the
    known number of features), and only then is moved into place with ``os.replace``; a failed or interrupted
    download leaves no file behind. A gzip or bzip2 response is stored as ``name.gz`` / ``name.bz2``.

    Args:
        name: A key of :data:`LIBSVM_FILES` (``"a9a"`` or ``"a9a.t"``).
        data_dir: Target directory (default: :func:`data_dir` resolution); created if missing.
        base_url: Replaces the LIBSVM directory URL (mirrors, tests); the file URL is ``base_url/name``.
        timeout: Seconds to wait for the server (connection and each read).
        overwrite: Download even if the file is already present.

    Returns:
        Path of the file in the data directory (the existing one if present and ``overwrite`` is false).

    Raises:
        UnknownNameError: If ``name`` is not a known LIBSVM file.
        DownloadError: On HTTP error, timeout, unreachable host, or if the response is not valid svmlight
            (the message names the URL and the reason).
        ValidationError: If ``timeout`` is not > 0.
    """
    from sklearn.datasets import load_svmlight_file

    if name not in LIBSVM_FILES:
        raise UnknownNameError("dataset", name, list(LIBSVM_FILES))
    timeout = check_positive(timeout, "timeout")
    info = LIBSVM_FILES[name]
    folder = _resolve(data_dir)
    if not overwrite:
        try:
            return find_file(name, folder)
        except DataFileNotFoundError:
            pass
    url = info.url if base_url is None else f"{base_url.rstrip('/')}/{name}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot create data directory {folder}: {exc}") from None

    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            first = _download(url, out, timeout)
        suffix = ".gz" if first.startswith(b"\x1f\x8b") else ".bz2" if first.startswith(b"BZh") else ""
        checked = tmp.with_name(tmp.name + suffix)  # the loader picks the decompressor from the extension
        os.replace(tmp, checked)
        tmp = checked
        try:
            load_svmlight_file(str(tmp), n_features=info.n_features, zero_based=False)
        except (ValueError, OSError, EOFError) as exc:
            raise DownloadError(f"download of {url} is not a valid svmlight file for {name!r}: {exc}") from None
        target = folder / f"{name}{suffix}"
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    for other in _SUFFIXES:  # an older copy in another compression would shadow or duplicate the new one
        stale = folder / f"{name}{other}"
        if other != suffix and stale.is_file():
            stale.unlink()
    return target


def _download(url: str, out, timeout: float) -> bytes:
    """Stream ``url`` into the open file ``out``; return its first bytes (for format sniffing)."""
    request = urllib.request.Request(url, headers={"User-Agent": "privdist"})
    first = b""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            while chunk := response.read(_CHUNK):
                if not first:
                    first = chunk[:4]
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"could not download {url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            raise DownloadError(f"could not download {url}: timed out after {timeout:g} s") from None
        raise DownloadError(f"could not download {url}: {reason}") from None
    except (socket.timeout, TimeoutError):
        raise DownloadError(f"could not download {url}: timed out after {timeout:g} s") from None
    except (OSError, ValueError) as exc:  # connection reset mid-transfer, malformed URL, ...
        raise DownloadError(f"could not download {url}: {exc}") from None
    if not first:
        raise DownloadError(f"could not download {url}: the server returned an empty file")
    return first


def _resolve(folder: str | os.PathLike | None) -> Path:
    return data_dir(folder)


def _strip_suffix(filename: str) -> str:
    for suffix in (".gz", ".bz2"):
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename
