"""svc_frames: typed pandas DataFrames from a record-data service, and a local service."""

# cache: also registers read_object(cache=) / read_view(cache=) with the loaders
from . import cache, errors
from .application import App, read_app
from .assets import create_with_asset, download, upload_file, upload_image
from .client import Client
from .errors import *  # noqa: F403
from .filters import Field, all_of, any_of
from .frames import Frames, Source
from .incremental import RefreshReport, refresh
from .kinds.base import FieldSpec
from .loaders import read_object, read_view
from .parquet import export, read_parquet, to_parquet
from .plot import plot_counts, plot_locations, plot_over_time  # matplotlib loads on first plot
from .widgets import PlanReview, review  # ipywidgets loads on first review
from .writeback import Plan, Report, add_rows, diff, push, write_back

__version__ = "0.1.0"
__all__ = ["Frames", "Source", "FieldSpec", "errors", "cache",
           "Client", "Field", "all_of", "any_of", "read_object", "read_view",
           "refresh", "RefreshReport",
           "read_app", "App",
           "to_parquet", "read_parquet", "export",
           "diff", "write_back", "push", "add_rows", "Plan", "Report",
           "upload_file", "upload_image", "create_with_asset", "download",
           "plot_locations", "plot_counts", "plot_over_time", "review", "PlanReview"]
