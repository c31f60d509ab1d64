"""The binding's JSON shapes: records, candidates and answers in camelCase (engine-binding.md).

A memory record is the Memory Worker's wire form (``reference.memory.wire.codec``); a ledger
record is the shape below; a candidate is a record's writer-side fields.  ``None`` in the
model is an absent member on the wire (``null`` is read as absent too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.ledger.records import LedgerRecord
from reference.memory.records import MemoryCandidate, MemoryRecord
from reference.memory.wire.codec import WireError, record_from_wire, record_to_wire

JSON = Any


class ArgError(ValueError):
    """The arguments of a call do not have the binding's shape."""


def _opt(obj: Mapping[str, JSON], name: str) -> JSON:
    v = obj.get(name)
    return None if v is None else v


def memory_record(obj: JSON) -> MemoryRecord:
    if isinstance(obj, dict):
        obj = {k: v for k, v in obj.items() if v is not None}
    rec = record_from_wire(obj)
    if isinstance(rec, WireError):
        raise ArgError(rec.reason)
    return rec


def memory_records(obj: JSON) -> list[MemoryRecord]:
    if not isinstance(obj, list):
        raise ArgError("records must be an array")
    return [memory_record(o) for o in obj]


def memory_record_json(rec: MemoryRecord) -> dict[str, JSON]:
    return record_to_wire(rec)


def candidate(obj: JSON) -> MemoryCandidate:
    if not isinstance(obj, dict):
        raise ArgError("candidate must be an object")
    kws = _opt(obj, "keywords")
    conf = _opt(obj, "confidence")
    return MemoryCandidate(
        kind=str(obj.get("kind", "fact")),
        text=str(obj.get("text", "")),
        source_thread_key=str(obj.get("sourceThreadKey", "")),
        keywords=tuple(str(k) for k in kws) if isinstance(kws, list) else None,
        source_run_id=_opt(obj, "sourceRunId"),
        confidence=float(conf) if conf is not None else None,
        supersedes=_opt(obj, "supersedes"),
    )


def candidate_json(c: MemoryCandidate) -> dict[str, JSON]:
    out: dict[str, JSON] = {
        "kind": c.kind,
        "text": c.text,
        "sourceThreadKey": c.source_thread_key,
    }
    if c.keywords is not None:
        out["keywords"] = list(c.keywords)
    if c.source_run_id is not None:
        out["sourceRunId"] = c.source_run_id
    if c.confidence is not None:
        out["confidence"] = c.confidence
    if c.supersedes is not None:
        out["supersedes"] = c.supersedes
    return out


_LEDGER_OPTIONAL = (
    ("validTo", "valid_to"),
    ("confidenceBps", "confidence_bps"),
    ("expiresAt", "expires_at"),
    ("conflictGroup", "conflict_group"),
)


def ledger_record(obj: JSON, seq: int) -> LedgerRecord:
    """A ledger record; ``seq`` is its position in the call's array (its write order)."""
    if not isinstance(obj, dict):
        raise ArgError("ledger record must be an object")
    try:
        return LedgerRecord(
            id=str(obj["id"]),
            scope_key=str(obj["scopeKey"]),
            kind=str(obj["kind"]),
            body=str(obj["body"]),
            provenance=str(obj["provenance"]),
            status=str(obj["status"]),
            valid_from=int(obj["validFrom"]),
            valid_to=None if obj.get("validTo") is None else int(obj["validTo"]),
            created_at=int(obj["createdAt"]),
            updated_at=int(obj["updatedAt"]),
            seq=seq,
            confidence_bps=None if obj.get("confidenceBps") is None else int(obj["confidenceBps"]),
            expires_at=None if obj.get("expiresAt") is None else int(obj["expiresAt"]),
            conflict_group=_opt(obj, "conflictGroup"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ArgError(f"malformed ledger record: {exc}") from exc


def ledger_records(obj: JSON) -> list[LedgerRecord]:
    if not isinstance(obj, list):
        raise ArgError("records must be an array")
    return [ledger_record(o, i) for i, o in enumerate(obj)]


def ledger_record_json(rec: LedgerRecord) -> dict[str, JSON]:
    out: dict[str, JSON] = {
        "id": rec.id,
        "scopeKey": rec.scope_key,
        "kind": rec.kind,
        "body": rec.body,
        "provenance": rec.provenance,
        "status": rec.status,
        "validFrom": rec.valid_from,
        "createdAt": rec.created_at,
        "updatedAt": rec.updated_at,
    }
    for wire, attr in _LEDGER_OPTIONAL:
        v = getattr(rec, attr)
        if v is not None:
            out[wire] = v
    return out
