"""The naive sequential loader the load benchmarks compare against, in a module of its own
that imports only what such a script would (pandas, requests): the cold benchmark runs it
in a fresh process, which must not pay for importing svc_frames or the local service.

Usage: ``df = naive_load(svc, "object_3")`` (``svc``: ``app_id``, ``api_key``, ``base_url``)
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import requests


def naive_load(svc: Any, object_key: str) -> pd.DataFrame:
    """What a first script does: one page after another, then json_normalize."""
    headers = {"X-Service-Application-Id": svc.app_id, "X-Service-REST-API-KEY": svc.api_key}
    records: list[dict[str, Any]] = []
    page = 1
    with requests.Session() as s:
        while True:
            r = s.get(f"{svc.base_url}/v1/objects/{object_key}/records",
                      params={"page": page, "rows_per_page": 1000}, headers=headers, timeout=60)
            r.raise_for_status()
            body = r.json()
            records.extend(body["records"])
            if page >= body["total_pages"]:
                break
            page += 1
    return pd.json_normalize(records)
