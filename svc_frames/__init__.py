"""svc_frames: typed pandas DataFrames from a record-data service, and a local service.

The loading path (client, loaders and what they need) is imported with the package; every
other part (parquet, caches, refresh, the whole application, write-back, assets, plots,
widgets) on first use of one of its names (PEP 562), so a fresh process that only loads
does not pay for parsing the rest: ``from svc_frames import write_back`` and
``svc_frames.write_back`` work as always.

Usage::

    import svc_frames as sf
    frames = sf.read_object(sf.Client(app_id, api_key=key), "object_1")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors
from .errors import *  # noqa: F403
from .filters import Field, all_of, any_of
from .frames import Frames, Source
from .kinds.base import FieldSpec
from .loaders import read_object, read_view
from .records import Client

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and IDEs
    from .application import App, read_app
    from .assets import create_with_asset, download, upload_file, upload_image
    from .catalog import fields, objects, views
    from .mirroring import MirrorReport, as_of, changes, mirror
    from .plot import plot_counts, plot_locations, plot_over_time
    from .refreshing import cache
    from .refreshing.policy import RefreshReport, refresh
    from .restoring import restore
    from .reviewing import PlanReview, review
    from .saved.export import export
    from .saved.parquet import read_parquet, to_parquet
    from .saved.push import push
    from .saved.reader import read_saved
    from .undoing import UndoPlan, undo
    from .writeback import Plan, Report, add_rows, diff, write_back

__version__ = "0.1.0"
__all__ = ["Frames", "Source", "FieldSpec", "errors", "cache",
           "Client", "Field", "all_of", "any_of", "read_object", "read_view",
           "objects", "views", "fields",
           "refresh", "RefreshReport",
           "read_app", "App",
           "to_parquet", "read_parquet", "read_saved", "export",
           "diff", "write_back", "push", "add_rows", "Plan", "Report", "undo",
           "UndoPlan",
           "upload_file", "upload_image", "create_with_asset", "download",
           "plot_locations", "plot_counts", "plot_over_time", "review", "PlanReview",
           "mirror", "MirrorReport", "as_of", "changes", "restore"]

_LAZY: dict[str, str] = {
    "App": "application", "read_app": "application",
    "objects": "catalog", "views": "catalog", "fields": "catalog",
    "create_with_asset": "assets", "download": "assets", "upload_file": "assets",
    "upload_image": "assets",
    "RefreshReport": "refreshing.policy", "refresh": "refreshing.policy",
    "export": "saved.export", "read_parquet": "saved.parquet", "to_parquet": "saved.parquet",
    "push": "saved.push", "read_saved": "saved.reader",
    "plot_counts": "plot", "plot_locations": "plot", "plot_over_time": "plot",
    "PlanReview": "reviewing", "review": "reviewing",
    "Plan": "writeback", "Report": "writeback", "add_rows": "writeback", "diff": "writeback",
    "write_back": "writeback",
    "undo": "undoing", "UndoPlan": "undoing",
    "mirror": "mirroring.run", "MirrorReport": "mirroring.report", "as_of": "mirroring.past",
    "changes": "mirroring.past",
    "restore": "restoring",
}
"""Public name -> the submodule that defines it, imported on the name's first use."""

_MODULES: dict[str, str] = {"cache": "refreshing.cache"}
"""Public submodules by their short name (``svc_frames.cache``), imported on first use."""


def __getattr__(name: str) -> Any:
    """A lazy public name (see ``_LAZY``) or a submodule (``svc_frames.cache``),
    imported on first use and kept, so later lookups are plain attribute reads."""
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name = _MODULES.get(name) or _LAZY.get(name, name)
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{module_name}":
            raise  # the submodule exists but something it imports is missing
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = module if name in _MODULES or name == module_name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

