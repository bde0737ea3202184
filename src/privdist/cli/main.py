"""Entry point of the ``privdist`` command.

Each sub-command lives in its own module exposing ``register(subparsers)``; the handler it installs as
``func`` takes the parsed arguments and returns the exit code. Named privdist errors are printed as one
line (``error: ...``) with exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..errors import PrivdistError

__all__ = ["main", "build_parser"]

_COMMAND_MODULES = ("list_cmd", "run_cmd", "reproduce_cmd", "account_cmd", "data_cmd", "audit_cmd")


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every sub-command registered."""
    import importlib

    parser = argparse.ArgumentParser(
        prog="privdist",
        description="Privacy-preserving distributed optimization: run, reproduce and account.",
    )
    parser.add_argument("--version", action="version", version=f"privdist {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _COMMAND_MODULES:
        importlib.import_module(f".{name}", __package__).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PrivdistError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
