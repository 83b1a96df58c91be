"""Fuzz the served OpenAPI document with schemathesis: every answer conforms to the
document (status codes, media types, body shapes; invalid input refused), none is a 5xx.

Runs over real loopback HTTP against a fresh demo service. The number of examples per
operation is ``SVC_FUZZ_EXAMPLES`` (default 15, so ``make test`` stays short; ``make fuzz``
runs a longer budget).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import DataGenerationMethod

from svc_frames.server import LocalService

EXAMPLES = int(os.environ.get("SVC_FUZZ_EXAMPLES", "15"))


@pytest.fixture(scope="module")
def fuzz_service() -> Iterator[LocalService]:
    with LocalService(demo=True, records=20, rate_limit=0, seed=3) as svc:
        yield svc


def test_openapi_served(fuzz_service: LocalService) -> None:
    r = requests.get(f"{fuzz_service.base_url}/openapi.json", timeout=30)
    assert r.status_code == 200
    doc = r.json()
    paths = doc["paths"]
    assert "/v1/objects/object_3/records" in paths
    assert "/v1/pages/scene_2/views/view_3/records/{record_id}" in paths
    # object writes refuse unknown keys: the body schema says so and lists the fields
    body = paths["/v1/objects/object_3/records"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema["additionalProperties"] is False and "field_12" in schema["properties"]
    assert "field_18" not in schema["properties"]  # an equation is computed, not taken
    answers = paths["/v1/objects/object_3/records/{record_id}"]["put"]["responses"]
    assert {"200", "400", "401", "404", "408", "413", "414", "415", "429"} <= set(answers)
    # every operation documents what the connection and the text checks may answer
    for ops in paths.values():
        for op in ops.values():
            assert {"400", "408", "414", "429"} <= set(op["responses"]), op["operationId"]
    assert "422" not in str(doc) and "HTTPValidationError" not in str(doc)
    # only the views that take writes document them
    assert "put" not in paths["/v1/pages/scene_1/views/view_1/records/{record_id}"]
    assert "post" in paths["/v1/pages/scene_2/views/view_4/records"]


@pytest.mark.slow(seconds=20)
def test_every_answer_conforms(fuzz_service: LocalService) -> None:
    svc = fuzz_service
    schema = schemathesis.from_uri(
        f"{svc.base_url}/openapi.json", base_url=svc.base_url, force_schema_version="30",
        data_generation_methods=[DataGenerationMethod.positive, DataGenerationMethod.negative])
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(), auth=st.booleans())
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case, auth: bool) -> None:
            # every header value is sent (those the HTTP layer refuses get its 400 in the
            # service's error body), but for what the HTTP client itself will not send
            headers = dict(case.headers or {})
            if auth:
                headers.update(svc.headers())
            case.headers = headers
            try:
                response = case.call(timeout=30)
            except (UnicodeEncodeError, ValueError) as exc:  # InvalidHeader is one
                if "header" not in str(exc).lower() and "latin-1" not in str(exc):
                    raise
                return  # not sendable by this client, so no answer to check
            except requests.ConnectionError as exc:
                failures.append(f"{case.method} {case.formatted_path}: {exc}")
                return
            try:
                case.validate_response(response)
            except AssertionError as exc:
                failures.append(f"{case.method} {case.formatted_path} "
                                f"{case.data_generation_method} headers={case.headers} "
                                f"query={case.query} body={str(case.body)[:200]} -> "
                                f"{response.status_code} {response.text[:200]}: "
                                f"{str(exc)[:400]}")

        check()
    log = svc.request_log
    print(f"schemathesis: {log.count()} requests answered, "
          f"{sum(1 for e in log.entries if e.status >= 500)} 5xx")  # figures (make fuzz -s)
    assert not failures, "\n".join(failures[:8])
