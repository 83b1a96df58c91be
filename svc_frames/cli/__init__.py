"""The ``svc-frames`` command line: one module per subcommand.

``serve``, ``export``, ``schema``, ``push``, ``undo`` and ``mirror`` each live in the module
of their name (``add_<name>`` declares the arguments, ``cmd_<name>`` runs them);
``common`` holds what the client subcommands share (credential flags, the client they
make, errors as one line), ``interrupt`` the line a Ctrl-C prints, and ``registry`` the
subcommands registered, the parser and ``main``.

Usage::

    svc-frames serve --demo --records 1000 --port 8765
    python -m svc_frames.cli serve --data ./data --rate-limit 10
"""

from __future__ import annotations

from .registry import SUBCOMMANDS, build_parser, main

__all__ = ["SUBCOMMANDS", "build_parser", "main"]
