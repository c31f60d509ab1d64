"""Memory records on the wire: the camelCase form and reading it back (MEM-WIRE.16).

The field lists are defined here once (``RECORD_FIELDS`` always sent, ``RECORD_FIELDS_WHEN_SET``
only when the record has a value, never ``null``), as the ledger's are in
``reference.ledger.wire``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from reference.jsonvalues import is_number, js_integer
from reference.memory.records import KINDS, STATUSES, MemoryRecord

T = TypeVar("T")

#: The fields every wire record carries (MEM-WIRE.16, MEM-RECORD.1).
RECORD_FIELDS: Final = (
    "id",
    "scopeKey",
    "kind",
    "text",
    "keywords",
    "sourceThreadKey",
    "createdAt",
    "useCount",
    "status",
)
#: The fields a wire record carries only when set; an unset one is absent, never ``null``.
RECORD_FIELDS_WHEN_SET: Final = ("sourceRunId", "lastUsedAt", "confidence", "supersedes")


@dataclass(frozen=True)
class WireError:
    """A rejected value: the field it names (``None`` for the body as a whole) and why.

    ``fields`` lists every offending field found; a conforming 400 may name any of them.
    """

    field: str | None
    reason: str
    fields: tuple[str, ...] = ()
    reference_only: bool = False  # every fault breaks only a reference bound (MEM-WIRE.21)


def record_to_wire(record: MemoryRecord) -> dict[str, object]:
    """The camelCase wire form; optional fields absent, never ``null`` (MEM-WIRE.16)."""
    out: dict[str, object] = {
        "id": record.id,
        "scopeKey": record.scope_key,
        "kind": record.kind,
        "text": record.text,
        "keywords": list(record.keywords),
        "sourceThreadKey": record.source_thread_key,
        "createdAt": record.created_at,
        "useCount": record.use_count,
        "status": record.status,
    }
    if record.source_run_id is not None:
        out["sourceRunId"] = record.source_run_id
    if record.last_used_at is not None:
        out["lastUsedAt"] = record.last_used_at
    if record.confidence is not None:
        out["confidence"] = record.confidence
    if record.supersedes is not None:
        out["supersedes"] = record.supersedes
    return out


def record_from_wire(obj: object) -> MemoryRecord | WireError:
    """Read a wire record; any shape fault is a ``WireError`` naming the field (MEM-WIRE.16).

    Required: ``id`` (non-empty string), ``scopeKey``, ``kind`` (fact|summary), ``text``,
    ``keywords`` (array of strings), ``sourceThreadKey``, ``createdAt`` (integer),
    ``useCount`` (integer >= 0), ``status`` (one of the four).  Optional, and when present of
    the right type (``null`` is malformed): ``sourceRunId``, ``lastUsedAt`` (integer),
    ``confidence`` (finite number), ``supersedes``.  Unknown fields are ignored.
    """
    if not isinstance(obj, dict):
        return WireError(None, "record is not an object")
    errs: list[str] = []
    rid = _text_field(obj, "id", errs, nonempty=True)
    scope = _text_field(obj, "scopeKey", errs)
    kind = _text_field(obj, "kind", errs)
    if kind not in KINDS:
        errs.append("kind")
    text = _text_field(obj, "text", errs)
    thread = _text_field(obj, "sourceThreadKey", errs)
    status = _text_field(obj, "status", errs)
    if status not in STATUSES:
        errs.append("status")
    kws = obj.get("keywords")
    if not isinstance(kws, list) or not all(isinstance(k, str) for k in kws):
        errs.append("keywords")
        kws = []
    created = js_integer(obj.get("createdAt"))
    if created is None:
        errs.append("createdAt")
    uses = js_integer(obj.get("useCount"))
    if uses is None or uses < 0:
        errs.append("useCount")
    run_id = _optional(obj, "sourceRunId", _as_str, errs)
    last_used = _optional(obj, "lastUsedAt", js_integer, errs)
    confidence = _optional(obj, "confidence", _finite, errs)
    supersedes = _optional(obj, "supersedes", _as_str, errs)
    if errs:
        uniq = tuple(dict.fromkeys(errs))
        return WireError(uniq[0], f"malformed record: {', '.join(uniq)}", uniq)
    assert created is not None and uses is not None
    return MemoryRecord(
        id=rid,
        scope_key=scope,
        kind=kind,
        text=text,
        keywords=tuple(kws),
        source_thread_key=thread,
        source_run_id=run_id,
        created_at=created,
        last_used_at=last_used,
        use_count=uses,
        confidence=confidence,
        supersedes=supersedes,
        status=status,
    )


def _text_field(
    obj: Mapping[str, object], name: str, errs: list[str], *, nonempty: bool = False
) -> str:
    """A record's string field (non-empty when asked); a fault is noted in ``errs``
    (MEM-WIRE.16)."""
    v = obj.get(name)
    if not isinstance(v, str) or (nonempty and not v):
        errs.append(name)
        return ""
    return v


def _optional(
    obj: Mapping[str, object], name: str, read: Callable[[object], T | None], errs: list[str]
) -> T | None:
    """An optional field read with ``read``: ``None`` when absent; when present it must read
    (``null`` is malformed), else ``name`` is noted in ``errs`` (MEM-WIRE.16)."""
    if name not in obj:
        return None
    value = read(obj[name])
    if value is None:
        errs.append(name)
    return value


def _as_str(v: object) -> str | None:
    """The value when it is a string (MEM-WIRE.16)."""
    return v if isinstance(v, str) else None


def _finite(v: object) -> float | None:
    """The value as a float when it is a finite JSON number (MEM-WIRE.16: ``confidence``)."""
    if not is_number(v) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)
