"""Transport probes: the one-step cases that need no state, run once each, reported apart.

Authentication, methods, unknown paths, bodies that are not JSON, ``Content-Length`` fences
(memory) and raw JSON-RPC bodies (ledger) do not depend on what the store holds, so a state
machine gains nothing by drawing them at random — and a transport difference (an edge that
rewrites a header, a runtime that answers a malformed request itself) would be the first,
one-step divergence of every exploration, found again and again.  They are a small fixed set
of one-step scenarios instead, run through the same driver and oracle as everything else and
reported as results of kind ``probe`` (``<protocol>-probe:<name>``), next to — never instead
of — what the machines find.

A probe the target cannot take (``raw_http`` absent for a fence, say) is skipped with the
reason, like any scenario.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.drivers.base import Driver
from conformance.runner import ScenarioResult, run_scenario
from conformance.scenario import Scenario, Step
from conformance.vocabulary import StepOutcome

#: name -> (clauses, raw step args)
MEMORY_PROBES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "retrieve-without-bearer": (
        ("MEM-WIRE.3",),
        {
            "method": "POST",
            "path": "/retrieve",
            "auth": False,
            "body": {"scopeKey": "{scope:a}", "query": "x", "limit": 1},
        },
    ),
    "write-wrong-token": (
        ("MEM-WIRE.3",),
        {
            "method": "POST",
            "path": "/write",
            "auth": "wrong",
            "body": {"scopeKey": "{scope:a}", "records": []},
        },
    ),
    "list-basic-scheme": (
        ("MEM-WIRE.3",),
        {
            "method": "POST",
            "path": "/list",
            "auth": "scheme",
            "body": {"scopeKey": "{scope:a}", "limit": 1},
        },
    ),
    "forget-empty-bearer": (  # "Bearer " and nothing: a prefix compare lets it in
        ("MEM-WIRE.3",),
        {
            "method": "POST",
            "path": "/forget",
            "auth": "empty",
            "body": {"scopeKey": "{scope:a}", "id": "nope"},
        },
    ),
    "get-retrieve": (("MEM-WIRE.2",), {"method": "GET", "path": "/retrieve"}),
    # the order of the checks: 405 before 401, 401 before 411
    "get-write-without-bearer": (
        ("MEM-WIRE.4", "MEM-WIRE.2"),
        {"method": "GET", "path": "/write", "auth": False},
    ),
    "hex-length-without-bearer": (
        ("MEM-WIRE.4", "MEM-WIRE.3"),
        {
            "method": "POST",
            "path": "/write",
            "auth": False,
            "headers": {"Content-Length": "0x8"},
            "body": "not json",
        },
    ),
    "post-healthz": (
        ("MEM-WIRE.1", "MEM-WIRE.2"),
        {"method": "POST", "path": "/healthz", "auth": False},
    ),
    "unknown-path": (("MEM-WIRE.1",), {"method": "POST", "path": "/nope", "body": {}}),
    "body-not-json": (("MEM-WIRE.7",), {"method": "POST", "path": "/write", "body": "{not json"}),
    "body-an-array": (("MEM-WIRE.7",), {"method": "POST", "path": "/write", "body": "[1, 2]"}),
    "no-content-length": (
        ("MEM-WIRE.5",),
        {"method": "POST", "path": "/write", "headers": {"Content-Length": None}, "body": ""},
    ),
    # the body is exactly as long as the hex number says: a store that parses hex reads it
    # and answers (400) instead of hanging for bytes that never come
    "hex-content-length": (
        ("MEM-WIRE.5",),
        {
            "method": "POST",
            "path": "/list",
            "headers": {"Content-Length": "0x7"},
            "body": '{"x":1}',
        },
    ),
    "oversized-content-length": (
        ("MEM-WIRE.6",),
        {
            "method": "POST",
            "path": "/retrieve",
            "headers": {"Content-Length": "600000"},
            "body": "",
        },
    ),
    # the size fence at its edge: 524288 bytes pass, 524289 do not (bodies sent in full)
    "exactly-512-kib": (
        ("MEM-WIRE.6",),
        {
            "method": "POST",
            "path": "/retrieve",
            "body": {"scopeKey": "{scope:a}", "query": "deploy", "limit": 1},
            "pad_to": 524288,
        },
    ),
    "one-byte-over-512-kib": (
        ("MEM-WIRE.6",),
        {
            "method": "POST",
            "path": "/retrieve",
            "body": {"scopeKey": "{scope:a}", "query": "deploy", "limit": 1},
            "pad_to": 524289,
        },
    ),
}

LEDGER_PROBES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "params-an-array": (
        ("LED-WIRE.1", "LED-WIRE.2"),
        {"method": "memory/save_memory_record", "params": ["not", "an", "object"]},
    ),
    "params-a-string": (
        ("LED-WIRE.1", "LED-WIRE.2"),
        {"method": "memory/list_memory_records", "params": "account:local"},
    ),
    "truncated-json": (
        ("LED-WIRE.1",),
        {"method": "memory/save_memory_record", "text": '{"body": '},
    ),
    "unknown-method": (("LED-WIRE.1",), {"method": "memory/forget_everything", "params": {}}),
    "empty-body": (("LED-WIRE.1",), {"method": "memory/get_consolidation_settings", "text": ""}),
}

PROBES: dict[str, dict[str, tuple[tuple[str, ...], dict[str, Any]]]] = {
    "memory": MEMORY_PROBES,
    "ledger": LEDGER_PROBES,
}


def probe_scenarios(protocol: str) -> list[Scenario]:
    """The protocol's probes, each a one-step scenario named ``<protocol>-probe:<name>``."""
    return [
        Scenario(
            protocol=protocol,  # type: ignore[arg-type]
            name=f"{protocol}-probe:{name}",
            description=f"transport probe {name}",
            clauses=list(clauses),
            steps=[Step(op="raw", args=args)],
        )
        for name, (clauses, args) in PROBES.get(protocol, {}).items()
    ]


def run_probes(
    protocol: str,
    driver: Driver,
    *,
    on_step: Callable[[ScenarioResult, StepOutcome], None] | None = None,
) -> list[ScenarioResult]:
    """Run every probe of ``protocol`` once; each result has kind ``probe``."""
    results = []
    for scenario in probe_scenarios(protocol):
        result = run_scenario(driver, scenario, on_step=on_step)
        result.kind = "probe"
        results.append(result)
    return results
