"""Ledger values on the wire: records, settings and times (LED-WIRE.4, LED-WIRE.5, LED-CONS.2).

The field lists are defined here once; a time is written RFC 3339 UTC with milliseconds and
read back in any form a store may answer, compared as an instant to the precision it keeps.
"""

from __future__ import annotations

import re
from typing import Final

from reference.ledger.outcome import (
    Ok,
)
from reference.ledger.records import (
    ConsolidationSettings,
    LedgerRecord,
    LedgerState,
    held,
    settings_for,
)
from reference.ledger.timefmt import format_rfc3339, parse_rfc3339

#: Fields every record carries on the wire (LED-WIRE.4).
RECORD_FIELDS: Final = (
    "id", "scopeKey", "kind", "body", "provenance", "status", "validFrom", "createdAt",
    "updatedAt",
)  # fmt: skip
#: Fields a record carries only when set — absent, never ``null`` (LED-WIRE.4).
RECORD_FIELDS_WHEN_SET: Final = (
    "sourceSessionId", "confidenceBps", "rationale", "supersedes", "validTo", "expiresAt",
    "conflictGroup",
)  # fmt: skip
#: The record fields that are instants, RFC 3339 UTC with milliseconds (LED-WIRE.5).
TIME_FIELDS: Final = ("validFrom", "validTo", "createdAt", "updatedAt", "expiresAt")
#: The form the model writes a time in (LED-WIRE.5).
WIRE_TIME: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
#: Every form a store may answer a time in: RFC 3339, UTC (``Z`` or a zero offset), any number
#: of fraction digits up to 9 (LED-WIRE.5).
ANSWER_TIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.(\d{1,9}))?(?:[Zz]|[+-]00:00)"
)


def answer_instant(text: object) -> tuple[int, int] | None:
    """A time a store answered, as (epoch ms, precision ms), or None when it is not an allowed
    form (LED-WIRE.5).  The precision is what the text keeps: 1000 without a fraction, 100 with
    one digit, 10 with two, 1 with three or more; an instant written with precision ``p`` stands
    for any instant less than ``p`` away from it (truncated or rounded)."""
    if not isinstance(text, str):
        return None
    m = ANSWER_TIME.fullmatch(text)
    if m is None:
        return None
    ms = parse_rfc3339(text)
    if ms is None:
        return None
    digits = len(m.group(1) or "")
    return ms, 10 ** (3 - min(digits, 3))


def same_instant(model_ms: int, answered: tuple[int, int]) -> bool:
    """True when an answered time (ms, precision) can denote the model's instant
    (LED-WIRE.5: compared as instants, never finer than the precision the answer keeps)."""
    ms, precision = answered
    return abs(ms - model_ms) < precision


def record_to_wire(rec: LedgerRecord) -> dict[str, object]:
    """A record as the binding returns it (LED-WIRE.4, LED-FORGET.3).

    Always: id, scopeKey, kind, body, provenance, status, validFrom, createdAt, updatedAt.
    Only when set: sourceSessionId, confidenceBps, rationale, supersedes, validTo, expiresAt,
    conflictGroup.  A tombstone's body is the empty string.
    """
    out: dict[str, object] = {
        "id": rec.id,
        "scopeKey": rec.scope_key,
        "kind": rec.kind,
        "body": "" if rec.status == "deleted" else rec.body,
        "provenance": rec.provenance,
        "status": rec.status,
        "validFrom": format_rfc3339(rec.valid_from),
        "createdAt": format_rfc3339(rec.created_at),
        "updatedAt": format_rfc3339(rec.updated_at),
    }
    if rec.source_session_id is not None:
        out["sourceSessionId"] = rec.source_session_id
    if rec.confidence_bps is not None:
        out["confidenceBps"] = rec.confidence_bps
    if rec.rationale is not None:
        out["rationale"] = rec.rationale
    if rec.supersedes is not None:
        out["supersedes"] = rec.supersedes
    if rec.valid_to is not None:
        out["validTo"] = format_rfc3339(rec.valid_to)
    if rec.expires_at is not None:
        out["expiresAt"] = format_rfc3339(rec.expires_at)
    if rec.conflict_group is not None:
        out["conflictGroup"] = rec.conflict_group
    return out


def settings_to_wire(scope_key: str, s: ConsolidationSettings) -> dict[str, object]:
    """Settings as get/update return them; harness and model only when set (LED-CONS.2)."""
    out: dict[str, object] = {"scopeKey": scope_key, "mode": s.mode}
    if s.harness is not None:
        out["harness"] = s.harness
    if s.model is not None:
        out["model"] = s.model
    out["maxRecords"] = s.max_records
    out["allowRemoval"] = s.allow_removal
    out["debounceSeconds"] = s.debounce_seconds
    return out


def settings_answer(state: LedgerState, scope_key: str) -> Ok:
    """The settings answer; a store may add ``heldRecords``, which must then be what the scope
    holds (LED-CONS.2, LED-BUDGET.1)."""
    return Ok(
        settings_to_wire(scope_key, settings_for(state, scope_key)),
        extra_fields={"heldRecords": held(state, scope_key)},
    )
