"""Fuzz the served OpenAPI document with schemathesis: no answer may be a 5xx.

Runs over real loopback HTTP against a fresh demo service; examples per operation are
bounded so the whole run stays well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc_frames.server import LocalService

EXAMPLES = 40


@pytest.fixture(scope="module")
def fuzz_service() -> Iterator[LocalService]:
    with LocalService(demo=True, records=20, rate_limit=0, seed=3) as svc:
        yield svc


def test_openapi_served(fuzz_service: LocalService) -> None:
    r = requests.get(f"{fuzz_service.base_url}/openapi.json", timeout=30)
    assert r.status_code == 200
    paths = r.json()["paths"]
    assert "/v1/objects/{object_key}/records" in paths
    assert "/v1/pages/{scene_key}/views/{view_key}/records/{record_id}" in paths


def test_no_server_errors(fuzz_service: LocalService) -> None:
    svc = fuzz_service
    schema = schemathesis.from_uri(f"{svc.base_url}/openapi.json", base_url=svc.base_url,
                                   force_schema_version="30")
    valid = {"object_key": ["object_1", "object_2", "object_3"],
             "scene_key": ["scene_1", "scene_2", "scene_3", "scene_4"],
             "view_key": [f"view_{i}" for i in range(1, 9)], "app_id": [svc.app_id]}
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(), real=st.booleans(), auth=st.booleans())
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case, real: bool, auth: bool) -> None:
            if real and case.path_parameters:
                for name in list(case.path_parameters):
                    if name in valid:
                        idx = len(str(case.path_parameters[name])) % len(valid[name])
                        case.path_parameters[name] = valid[name][idx]
            # header values with control characters are refused by the HTTP layer itself
            # (h11 answers 400 and closes, which can reset a connection still sending a
            # body): keep the fuzzing on what reaches the application
            headers = {k: v for k, v in (case.headers or {}).items()
                       if all(32 <= ord(c) < 127 or c == "\t" for c in f"{k}{v}")}
            if auth:
                headers.update(svc.headers())
            case.headers = headers
            try:
                response = case.call(timeout=30)
            except requests.ConnectionError as exc:
                failures.append(f"{case.method} {case.formatted_path} headers={case.headers} "
                                f"query={case.query} body={str(case.body)[:200]}: {exc}")
                return
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> "
                                f"{response.status_code}: {response.text[:200]}")

        check()
    assert not failures, "\n".join(failures[:10])
