"""The subcommands registered (``SUBCOMMANDS``), the parser built from them, and ``main``,
the entry point of ``svc-frames``.

Each subcommand is a module of this package with one ``cmd_<name>(args) -> int`` function
and one ``add_<name>(sub)`` function that declares its arguments; both are registered in
``SUBCOMMANDS``. Adding a subcommand is writing that module and one line here.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import warnings_as_lines
from .export import add_export, cmd_export
from .interrupt import interrupted_line
from .mirror import add_mirror, cmd_mirror
from .push import add_push, cmd_push
from .restore import add_restore, cmd_restore
from .schema import add_schema, cmd_schema
from .serve import add_serve, cmd_serve
from .undo import add_undo, cmd_undo

Handler = Callable[[argparse.Namespace], int]

#: The first line of ``svc-frames --help``.
DESCRIPTION = "The ``svc-frames`` command line."


SUBCOMMANDS: dict[str, tuple[Callable[[Any], argparse.ArgumentParser], Handler]] = {
    "serve": (add_serve, cmd_serve),
    "export": (add_export, cmd_export),
    "schema": (add_schema, cmd_schema),
    "push": (add_push, cmd_push),
    "undo": (add_undo, cmd_undo),
    "mirror": (add_mirror, cmd_mirror),
    "restore": (add_restore, cmd_restore),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    from .. import __version__

    parser = argparse.ArgumentParser(prog="svc-frames", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (add, handler) in SUBCOMMANDS.items():
        add(sub).set_defaults(handler=handler, command=name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``svc-frames``: ``main(["serve", "--demo"])``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    try:
        with warnings_as_lines("svc-frames"):  # one line each, not the entry point's source
            code = int(args.handler(args))
        sys.stdout.flush()
    except KeyboardInterrupt as exc:
        # Ctrl-C: one line (what was done, how to go on), not a traceback; 130 as a
        # shell reports a command ended by SIGINT
        print(interrupted_line(args, exc), file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:
        # the reader went away (`svc-frames schema | head`): stop quietly, as a Unix tool
        # ended by SIGPIPE does; stdout goes to devnull so the exit's flush cannot fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return code
