"""``python -m svc_frames.cli``: the ``svc-frames`` command."""

from __future__ import annotations

import sys

from .registry import main

if __name__ == "__main__":
    sys.exit(main())
