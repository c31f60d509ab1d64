"""The OpenAPI document of the Memory Worker protocol, checked against the running bundled
store with schemathesis: every response of generated valid and invalid requests must be a
documented status with a body matching its schema, and invalid requests must be refused."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from tests.common.memory_store import AUTH, ROOT, Store

SPEC = ROOT / "specs" / "memory-worker.openapi.yaml"
BUDGET_S = 20.0  # the whole module, across operations and modes

POSITIVE_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
NEGATIVE_CHECKS = [*POSITIVE_CHECKS, negative_data_rejection]


def _operations() -> list[Any]:
    schema = schemathesis.openapi.from_path(SPEC)
    operations = []
    for r in schema.get_all_operations():
        assert isinstance(r, Ok), r.err()
        operations.append(r.ok())
    return operations


OPERATIONS = _operations()


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.8")
def test_the_document_is_valid_openapi_3_1() -> None:
    import yaml

    doc = yaml.safe_load(Path(SPEC).read_text())
    assert doc["openapi"].startswith("3.1")
    assert {op.label for op in OPERATIONS} == {
        "GET /healthz",
        "POST /retrieve",
        "POST /write",
        "POST /list",
        "POST /forget",
    }
    # every data route documents the whole error family
    for path in ("/retrieve", "/write", "/list", "/forget"):
        assert set(doc["paths"][path]["post"]["responses"]) == {"200", "400", "401", "411", "413"}


CASES = [
    pytest.param(op, mode, id=f"{op.label}-{mode}")
    for op in OPERATIONS
    for mode in ("positive", "negative")
    if not (mode == "negative" and op.label == "GET /healthz")  # no input to get wrong
]


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.8", "MEM-WIRE.10", "MEM-WIRE.16")
@pytest.mark.parametrize(("op", "mode"), CASES)
def test_responses_conform_to_the_openapi_document(store: Store, op: Any, mode: str) -> None:
    generation = schemathesis.GenerationMode(mode)
    checks = NEGATIVE_CHECKS if mode == "negative" else POSITIVE_CHECKS
    deadline = time.monotonic() + BUDGET_S / len(CASES)
    calls = {"n": 0}
    # Seed the store so /retrieve, /list and /forget have records to answer with.
    store.ok(
        "/write",
        {
            "scopeKey": "a",
            "records": [
                {"kind": "fact", "text": t, "sourceThreadKey": "t"}
                for t in ("0", "a", "x y", "deploy")
            ],
        },
    )

    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=op.as_strategy(generation_mode=generation))
    def run(case: Any) -> None:
        if calls["n"] and time.monotonic() > deadline:  # at least one call, even under load
            return
        calls["n"] += 1
        case.call_and_validate(base_url=store.url, headers=dict(AUTH), checks=checks)

    run()
    assert calls["n"] > 0


@pytest.mark.clause("MEM-WIRE.3")
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_unauthenticated_generated_requests_are_401(store: Store, data: st.DataObject) -> None:
    op = data.draw(st.sampled_from([o for o in OPERATIONS if o.label != "GET /healthz"]))
    case = data.draw(op.as_strategy())
    response = case.call(base_url=store.url, headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    op.validate_response(response)
