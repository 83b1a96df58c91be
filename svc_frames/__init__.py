"""svc_frames: typed pandas DataFrames from a record-data service, and a local service."""

from . import errors
from .errors import *  # noqa: F403
from .frames import Frames, Source
from .kinds.base import FieldSpec

__version__ = "0.1.0"
__all__ = ["Frames", "Source", "FieldSpec", "errors"]
