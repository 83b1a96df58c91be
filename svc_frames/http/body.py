"""Response bodies parsed as the client parses them: orjson when installed.

Usage: ``parse_json(resp.content)["records"]``
"""

from __future__ import annotations

import json
from typing import Any

try:  # orjson parses pages faster than json (docs/benchmarks.md): parsing is the
    # client's main CPU cost
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - optional speed-up
    _loads = json.loads  # type: ignore[assignment]


def parse_json(body: bytes | str) -> Any:
    """Parse a response body the way the client does (orjson when installed): the plain
    parser, and the fallback of a raw page that does not fit its structs.

    Usage: ``parse_json(resp.content)["records"]``"""
    return _loads(body)
