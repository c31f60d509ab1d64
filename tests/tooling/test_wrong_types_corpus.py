"""Every param of every ledger method and every field of every Memory Worker body, sent with
every wrong JSON type (null, boolean, number, string, array, object): a generated corpus.

The scenarios ``conformance/corpus/<protocol>/every_wrong_json_type_*.json`` are generated from
the schemas -- the ledger binding's method table (``reference.ledger.wire.methods.METHODS`` and
``TEST_METHODS``) and the Memory Worker's OpenAPI request schemas -- so no wrong type is left to
a state machine's luck.  The model judges each answer: a refusal of the right kind passes, and
a 500 (or an acceptance) fails.  This test fails when the files differ from what the schemas
generate today (a method or param renamed, added or dropped); regenerate with::

    MEMSPEC_REGENERATE=1 .venv/bin/python -m pytest -q tests/tooling/test_wrong_types_corpus.py

(Harness tooling for LED-WIRE.2 and MEM-WIRE.10; the scenarios name those clauses.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from reference.ledger.wire.methods import METHODS, TEST_METHODS

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "conformance" / "corpus"
OPENAPI = ROOT / "specs" / "memory-worker.openapi.yaml"
PREFIX = "every_wrong_json_type_"
MAX_STEPS = 25

#: One value of each JSON type.  ``number`` is not integral, so it is wrong for an integer too.
VALUES: dict[str, Any] = {
    "null": None,
    "boolean": True,
    "number": 2.5,
    "string": "7",
    "array": [],
    "object": {},
}
TYPES = tuple(VALUES)


def wrong_types(allowed: set[str]) -> list[str]:
    """The JSON types a field of ``allowed`` types must refuse (an integer is a number; a
    field taking any number takes 2.5; ``null`` stays in even for an optional field, whose
    reading is implementation-defined)."""
    out = []
    for t in TYPES:
        if t in allowed or (t == "number" and "number" in allowed):
            continue
        out.append(t)
    return out


# ---------------------------------------------------------------- ledger (the method table)

_LEDGER_VALID = {
    "body": "typed body",
    "scopeKey": "account:local",
    "recordId": "ledger-typed-none",
    "at": "2026-01-01T00:00:00.000Z",
    "now": "2026-01-01T00:00:00.000Z",
    "expiresAt": "2026-01-01T00:00:00.000Z",
    "mode": "off",
    "operations": [],
}
_LEDGER_TYPE = {"string": {"string"}, "integer": {"integer"}, "boolean": {"boolean"}}


def _ledger_allowed(json_type: str) -> set[str]:
    return _LEDGER_TYPE.get(json_type, {json_type})


def ledger_scenarios() -> dict[str, dict[str, Any]]:
    """One scenario per method (split at 25 steps): for each param, each wrong type, the
    method called with its required params valid and that one param wrong."""
    out: dict[str, dict[str, Any]] = {}
    for table, controls in ((METHODS, False), (TEST_METHODS, True)):
        for method, spec in table.items():
            base = {n: _LEDGER_VALID[n] for n, (_, req) in spec.params.items() if req}
            steps = []
            for name, (json_type, _required) in spec.params.items():
                if "recordId" in base and name != "recordId":
                    # the only id the table can name is unknown: a second fault, a bad value
                    # (1000 or -32602, LED-WIRE.3), beside the wrong type (-32602 only)
                    continue
                for t in wrong_types(_ledger_allowed(json_type)):
                    if t == "null" and name in spec.nullable:
                        continue  # a null is a value of this param, not a wrong type
                    params = {**base, name: VALUES[t]}
                    steps.append(
                        {
                            "op": "raw",
                            "args": {"method": method, "params": params},
                            "clauses": ["LED-WIRE.2"],
                            "note": f"{name} as {t}",
                        }
                    )
            slug = method.split("/", 1)[1]
            what = "test control" if controls else "method"
            for n, chunk in enumerate(_chunks(steps), start=1):
                name = PREFIX + slug + (f"_{n}" if len(steps) > MAX_STEPS else "")
                out[name] = _scenario(
                    "ledger",
                    name,
                    f"Generated from the binding's method table: every param of the {what}"
                    f" {method}, sent with every JSON type it does not take (null, boolean,"
                    " number, string, array, object), the other params valid. Each is refused"
                    " as invalid params (LED-WIRE.2); an answer of 500 is a failure.",
                    ["LED-WIRE.2"],
                    chunk,
                    ["ledger.test_control"] if controls else [],
                )
    return out


# ---------------------------------------------------------------- memory (the OpenAPI schemas)

_ROUTES: dict[str, tuple[str, dict[str, Any]]] = {
    "retrieve": ("RetrieveRequest", {"scopeKey": "{scope:a}", "query": "typed", "limit": 5}),
    "write": (
        "WriteRequest",
        {
            "scopeKey": "{scope:a}",
            "records": [{"kind": "fact", "text": "typed record", "sourceThreadKey": "thread:1"}],
        },
    ),
    "list": ("ListRequest", {"scopeKey": "{scope:a}", "limit": 5}),
    "forget": ("ForgetRequest", {"scopeKey": "{scope:a}", "id": "mem:typed:1"}),
}


def _types_of(schema: dict[str, Any], schemas: dict[str, Any]) -> set[str]:
    """The JSON types a (sub)schema admits."""
    if "$ref" in schema:
        return _types_of(schemas[schema["$ref"].rsplit("/", 1)[1]], schemas)
    if "oneOf" in schema:
        return set().union(*(_types_of(s, schemas) for s in schema["oneOf"]))
    if "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    t = schema.get("type")
    types = set(t) if isinstance(t, list) else {t} if t else set(TYPES)
    return types | ({"number"} if "integer" in types else set())


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _integer_only(schema: dict[str, Any], schemas: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return _integer_only(schemas[schema["$ref"].rsplit("/", 1)[1]], schemas)
    t = schema.get("type")
    return "integer" in (t if isinstance(t, list) else [t])


def _field_wrongs(schema: dict[str, Any], schemas: dict[str, Any]) -> list[str]:
    allowed = _types_of(schema, schemas)
    if _integer_only(schema, schemas):
        allowed = allowed - {"number"}  # 2.5 is no integer
    return wrong_types(allowed)


def memory_scenarios() -> dict[str, dict[str, Any]]:
    """One scenario per route (split at 25 steps): each body field, and each field of a write
    record, with every JSON type it does not take."""
    schemas = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))["components"]["schemas"]
    out: dict[str, dict[str, Any]] = {}
    for op, (schema_name, base) in _ROUTES.items():
        props = schemas[schema_name]["properties"]
        steps = []
        for name, sub in props.items():
            for t in _field_wrongs(sub, schemas):
                steps.append(_memory_step(op, {**base, name: VALUES[t]}, f"{name} as {t}"))
        if op == "write":
            cand = schemas["Candidate"]["properties"]
            record = base["records"][0]
            for name, sub in cand.items():
                for t in _field_wrongs(sub, schemas):
                    rec = {**record, name: VALUES[t]}
                    note = f"records[0].{name} as {t}"
                    steps.append(_memory_step(op, {**base, "records": [rec]}, note))
            for t in _field_wrongs(cand["keywords"]["items"], schemas):
                rec = {**record, "keywords": ["typed", VALUES[t]]}
                note = f"records[0].keywords[1] as {t}"
                steps.append(_memory_step(op, {**base, "records": [rec]}, note))
        for n, chunk in enumerate(_chunks(steps), start=1):
            name = PREFIX + op + (f"_{n}" if len(steps) > MAX_STEPS else "")
            out[name] = _scenario(
                "memory",
                name,
                f"Generated from the Memory Worker's OpenAPI request schemas: every field of a"
                f" /{op} body{' and of its records' if op == 'write' else ''}, sent with every"
                " JSON type it does not take (null, boolean, number, string, array, object),"
                " the rest valid. Each is a 400 naming the field (a null for an optional field"
                " may also read as absent: MEM-WIRE.10); an answer of 500 is a failure.",
                ["MEM-WIRE.10"],
                chunk,
            )
    return out


def _memory_step(op: str, args: dict[str, Any], note: str) -> dict[str, Any]:
    return {"op": op, "args": args, "clauses": ["MEM-WIRE.10"], "note": note}


def _chunks(steps: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``steps`` in as few even parts of at most ``MAX_STEPS`` as hold them."""
    parts = max(1, -(-len(steps) // MAX_STEPS))
    size = max(1, -(-len(steps) // parts))
    return [steps[i : i + size] for i in range(0, len(steps), size)] or [[]]


def _scenario(
    protocol: str,
    name: str,
    description: str,
    clauses: list[str],
    steps: list[dict[str, Any]],
    requires: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "format": "memspec-scenario/1",
        "protocol": protocol,
        "name": name,
        "description": description,
        "clauses": clauses,
        **({"requires": requires} if requires else {}),
        "steps": steps,
        "origin": "corpus",
    }


def _generated() -> dict[Path, str]:
    files = {}
    for protocol, scenarios in (("memory", memory_scenarios()), ("ledger", ledger_scenarios())):
        for name, scenario in scenarios.items():
            if not scenario["steps"]:
                continue  # a method without params has no wrong type to send
            text = json.dumps(scenario, indent=2, ensure_ascii=False) + "\n"
            files[CORPUS / protocol / f"{name}.json"] = text
    return files


@pytest.mark.clause("LED-WIRE.2", "MEM-WIRE.10")
def test_the_wrong_type_corpus_is_what_the_schemas_generate() -> None:
    want = _generated()
    have = {
        p: p.read_text(encoding="utf-8")
        for protocol in ("memory", "ledger")
        for p in (CORPUS / protocol).glob(f"{PREFIX}*.json")
    }
    if os.environ.get("MEMSPEC_REGENERATE") == "1":
        for p in set(have) - set(want):
            p.unlink()
        for p, text in want.items():
            p.write_text(text, encoding="utf-8")
        have = want
    stale = sorted(p.name for p in set(want) | set(have) if want.get(p) != have.get(p))
    assert not stale, (
        f"the generated wrong-type scenarios differ from the schemas: {stale}; regenerate with"
        " MEMSPEC_REGENERATE=1 .venv/bin/python -m pytest -q"
        " tests/tooling/test_wrong_types_corpus.py"
    )


@pytest.mark.clause("LED-WIRE.2", "MEM-WIRE.10")
def test_every_param_of_every_method_meets_every_wrong_type() -> None:
    """The table is whole: each (method, param) of the binding and each wrong JSON type of it
    has a step (the shape one value of a class standing for all would break)."""
    sent = {
        (s["args"]["method"], s["note"]) for sc in ledger_scenarios().values() for s in sc["steps"]
    }
    for table in (METHODS, TEST_METHODS):
        for method, spec in table.items():
            for name, (json_type, _) in spec.params.items():
                if name != "recordId" and any(
                    r for n, (_, r) in spec.params.items() if n == "recordId"
                ):
                    continue  # see ledger_scenarios: a second fault would stand beside it
                for t in wrong_types(_ledger_allowed(json_type)):
                    if t == "null" and name in spec.nullable:
                        continue
                    assert (method, f"{name} as {t}") in sent
    assert len(TYPES) == 6
