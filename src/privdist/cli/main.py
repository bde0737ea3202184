"""Entry point of the ``privdist`` command.

Each sub-command lives in its own module exposing ``register(subparsers)``; the handler it installs as
``func`` takes the parsed arguments and returns the exit code. Named privdist errors are printed as one
line (``error: ...``) with exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys

from .._version import __version__
from ..errors import PrivdistError

__all__ = ["main", "build_parser"]

_COMMAND_MODULES = ("list_cmd", "run_cmd", "reproduce_cmd", "account_cmd", "data_cmd", "report_cmd", "fit_cmd",
                    "audit_cmd", "serve_cmd", "pki_cmd", "party_cmd", "coordinate_cmd", "personalize_cmd")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``error: privdist run: ...``, exit 2) instead of usage + message."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every sub-command registered."""
    import importlib

    parser = _Parser(
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
    """Run the command line; return the process exit code.

    Named errors print one line ``error: ...`` and return 2; Ctrl-C at any point (start-up included) prints one
    line and returns 130, keeping the trials that finished.
    """
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except PrivdistError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"interrupted{': ' + _one_line(exc) if str(exc) else ''}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
