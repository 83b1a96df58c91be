"""The state every route shares: the application, its store, renderer, emulation and keys.

Imports only ``schema``, ``store``, ``render`` and ``emulate`` (the bottom of the server);
routes, generators and ``LocalService`` all depend on it, never the other way round.

Usage::

    state = ServiceState(app=app_def, store=store, renderer=renderer, emulation=emu,
                         api_key="...", utility_key="...", data_dir=Path("data"))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .emulate import Emulation
from .render import Renderer
from .schema import AppDef
from .store import Store


@dataclass
class ServiceState:
    """Everything the routes need: the app, its store, emulation knobs, keys."""

    app: AppDef
    store: Store
    renderer: Renderer
    emulation: Emulation
    api_key: str
    utility_key: str
    data_dir: Path
    users: list[dict[str, Any]] = field(default_factory=list)
    created: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    base_url: str = ""  # what asset URLs start with ("": the address served on)
