"""MEM-RECORD.1-2: the record shape and statuses of the model."""

from __future__ import annotations

import dataclasses
import re

import pytest

from reference.memory.records import KINDS, STATUSES, MemoryCandidate, MemoryRecord, is_active
from tests.common.memory_strategies import make_record

WIRE_FIELDS = [
    "id",
    "scopeKey",
    "kind",
    "text",
    "keywords",
    "sourceThreadKey",
    "sourceRunId",
    "createdAt",
    "lastUsedAt",
    "useCount",
    "confidence",
    "supersedes",
    "status",
]
OPTIONAL = {"sourceRunId", "lastUsedAt", "confidence", "supersedes"}


def snake(name: str) -> str:
    return re.sub("([A-Z])", lambda m: "_" + m.group(1).lower(), name)


@pytest.mark.clause("MEM-RECORD.1")
def test_record_fields_are_the_wire_fields_in_snake_case() -> None:
    fields = {f.name: f for f in dataclasses.fields(MemoryRecord)}
    assert list(fields) == [snake(n) for n in WIRE_FIELDS]
    # exactly the optional wire fields admit None (absent on the wire)
    for wire in WIRE_FIELDS:
        assert ("None" in str(fields[snake(wire)].type)) == (wire in OPTIONAL)
    assert KINDS == ("fact", "summary")
    cand = {f.name for f in dataclasses.fields(MemoryCandidate)}
    assert cand == {
        "kind",
        "text",
        "source_thread_key",
        "keywords",
        "source_run_id",
        "confidence",
        "supersedes",
    }


@pytest.mark.clause("MEM-RECORD.1", "MEM-RECORD.2")
def test_records_are_frozen_and_only_active_is_live() -> None:
    r = make_record("mem:org:acme:1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.text = "changed"  # type: ignore[misc]
    assert STATUSES == ("active", "superseded", "forgotten", "evicted")
    assert [is_active(dataclasses.replace(r, status=s)) for s in STATUSES] == [
        True,
        False,
        False,
        False,
    ]
