"""The local service: the whole interface over real HTTP on SQLite, with a demo app.

Usage::

    from svc_frames.server import LocalService
    with LocalService(demo=True, records=300) as svc:
        print(svc.base_url, svc.app_id, svc.api_key, svc.users)
"""

from .activity import Activity, ActivityLog, ActivityRunner
from .emulate import Emulation, RequestLog
from .pages import AppPages
from .schema import AppDef
from .service import LocalService, open_state
from .state import ServiceState

__all__ = ["LocalService", "Emulation", "RequestLog", "AppDef", "ServiceState", "open_state",
           "Activity", "ActivityLog", "ActivityRunner", "AppPages"]
