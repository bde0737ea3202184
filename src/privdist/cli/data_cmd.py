"""``privdist data``: list the known data sets, download LIBSVM files, show the data directory."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``data`` command (with ``list``, ``fetch`` and ``path``) to the ``privdist`` parser."""
    parser = subparsers.add_parser(
        "data",
        help="list, download and locate data sets",
        description="List the known data sets, download LIBSVM files, show the data directory.",
    )
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION")
    sub.required = True

    p_list = sub.add_parser("list", help="table of the known data sets and whether they are present locally")
    _add_data_dir(p_list)
    p_list.set_defaults(func=_list)

    p_fetch = sub.add_parser("fetch", help="download a LIBSVM file (a9a, a9a.t) into the data directory")
    p_fetch.add_argument("name", metavar="NAME", help="file to download: a9a or a9a.t")
    _add_data_dir(p_fetch)
    p_fetch.add_argument("--base-url", default=None, help="directory URL to download from (a mirror)")
    p_fetch.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the server (default 30)")
    p_fetch.add_argument("--overwrite", action="store_true", help="download again even if the file is present")
    p_fetch.set_defaults(func=_fetch)

    p_path = sub.add_parser("path", help="print the resolved data directory")
    _add_data_dir(p_path)
    p_path.set_defaults(func=_path)


def _add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        default=None,
        metavar="DIR",
        help="data directory (default: $PRIVDIST_DATA_DIR, else the user cache directory)",
    )


def _list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..data import DATASETS, LIBSVM_FILES, data_dir, find_file
    from ..errors import DataFileNotFoundError

    folder = data_dir(args.data_dir)
    table = Table(title=f"privdist data sets (data directory: {folder})")
    for column in ("name", "description", "present", "path"):
        table.add_column(column, overflow="fold")
    for name, description in DATASETS.items():
        if name in LIBSVM_FILES:
            try:
                present, where = "yes", str(find_file(name, folder))
            except DataFileNotFoundError:
                present, where = "no", f"`privdist data fetch {name}`"
        elif name == "adult":
            present, where = "yes", "shipped with privdist"
        else:
            present, where = "yes", "generated from a seed"
        table.add_row(name, description, present, where)
    Console().print(table)
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from ..data import fetch

    path = fetch(
        args.name, data_dir=args.data_dir, base_url=args.base_url, timeout=args.timeout, overwrite=args.overwrite
    )
    print(path)
    return 0


def _path(args: argparse.Namespace) -> int:
    from ..data import data_dir

    print(data_dir(args.data_dir))
    return 0
