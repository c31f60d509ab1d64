"""Ledger records: the wire shapes of a record and of the settings, new rows, and the session
packet built from the active records (LED-PACKET.*)."""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

from conformance.embedded.catalogue import NONE as NO_QUIRKS
from conformance.embedded.catalogue import Quirks
from conformance.embedded.ledger.params import SCOPE_KEY
from conformance.embedded.ledger.store import Row, Settings
from conformance.embedded.ledger.time import format_time


def record_to_wire(row: Row) -> dict[str, Any]:
    """A record as the binding returns it: camelCase, optional fields only when set, a
    tombstone's body empty (LED-WIRE.4, LED-WIRE.5, LED-FORGET.3)."""
    out: dict[str, Any] = {
        "id": row.id,
        "scopeKey": row.scope_key,
        "kind": row.kind,
        "body": "" if row.status == "deleted" else row.body,
        "provenance": row.provenance,
        "status": row.status,
        "validFrom": format_time(row.valid_from),
        "createdAt": format_time(row.created_at),
        "updatedAt": format_time(row.updated_at),
    }
    if row.source_session_id is not None:
        out["sourceSessionId"] = row.source_session_id
    if row.confidence_bps is not None:
        out["confidenceBps"] = row.confidence_bps
    if row.rationale is not None:
        out["rationale"] = row.rationale
    if row.supersedes is not None:
        out["supersedes"] = row.supersedes
    if row.valid_to is not None:
        out["validTo"] = format_time(row.valid_to)
    if row.expires_at is not None:
        out["expiresAt"] = format_time(row.expires_at)
    if row.conflict_group is not None:
        out["conflictGroup"] = row.conflict_group
    return out


def settings_to_wire(scope_key: str, s: Settings, held: int | None = None) -> dict[str, Any]:
    """The settings as both settings methods answer them (LED-CONS.2), with ``heldRecords``
    (how full the budget is) when ``held`` is given."""
    out: dict[str, Any] = {"scopeKey": scope_key, "mode": s.mode}
    if s.harness is not None:
        out["harness"] = s.harness
    if s.model is not None:
        out["model"] = s.model
    out["maxRecords"] = s.max_records
    out["allowRemoval"] = s.allow_removal
    out["debounceSeconds"] = s.debounce_seconds
    if held is not None:
        out["heldRecords"] = held
    return out


def opaque_group_label(subject: str) -> str:
    """A conflict group label that is an opaque key, not the subject (variant
    ``ledger-groups-opaque``, LED-GROUP.5): ``grp-`` and 12 hex digits of the subject's hash."""
    return "grp-" + hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def new_record_id() -> str:
    """32 lower-case hex digits of a random UUID: unique, and the first 8 (the packet's short
    id) are already distinctive (LED-REC.3)."""
    return uuid.uuid4().hex


def fresh_row(
    *,
    body: str,
    kind: str,
    provenance: str,
    status: str,
    at: int,
    record_id: str | None = None,
    supersedes: str | None = None,
    conflict_group: str | None = None,
    source_session_id: str | None = None,
    confidence_bps: int | None = None,
    rationale: str | None = None,
) -> Row:
    """A new row of ``account:local`` written at ``at``: open when active, empty otherwise."""
    return Row(
        id=record_id if record_id is not None else new_record_id(),
        scope_key=SCOPE_KEY,
        kind=kind,
        body=body,
        provenance=provenance,
        status=status,
        source_session_id=source_session_id,
        supersedes=supersedes,
        superseded_by=None,
        confidence_bps=confidence_bps,
        rationale=rationale,
        valid_from=at,
        valid_to=None if status == "active" else at,
        expires_at=None,
        conflict_group=conflict_group,
        created_at=at,
        updated_at=at,
    )


# ---- packet --------------------------------------------------------------------------------

PACKET_MAX_CHARS = 4000
_LINE_BREAKS = re.compile(r"[\r\n]+")


def packet_reason(row: Row, quirks: Quirks = NO_QUIRKS) -> str:
    """A line's reason label: the provenance (LED-PACKET.5); the variant labels as the real
    ledger does, ``explicit pin`` or ``approved suggestion (<N>%)``."""
    if not quirks("ledger-packet-real-labels"):
        return row.provenance
    if row.provenance == "user_explicit":
        return "explicit pin"
    if row.confidence_bps is None:
        return "approved suggestion"
    return f"approved suggestion ({row.confidence_bps // 100}%)"


def packet_line(row: Row, quirks: Quirks = NO_QUIRKS) -> str:
    """``[<first 8 of id>] <kind> (<reason>): <body>``, line breaks collapsed
    (LED-PACKET.5)."""
    reason = packet_reason(row, quirks)
    return f"[{row.id[:8]}] {row.kind} ({reason}): {_LINE_BREAKS.sub(' ', row.body)}"


def build_packet(active: list[Row], quirks: Quirks = NO_QUIRKS) -> list[str]:
    """The packet lines (LED-PACKET.1-.5): active records only; explicit pins first, then
    higher confidence (none last), then newest update, then written later; one member per
    conflict group; a line that would push the text past 4000 characters is dropped whole."""

    def order(row: Row) -> tuple[int, int, int, int]:
        explicit = 0 if row.provenance == "user_explicit" else 1
        confidence = row.confidence_bps if row.confidence_bps is not None else -1
        if quirks("led-packet-oldest-first"):  # mutant: oldest update first
            return (explicit, -confidence, row.updated_at, row.seq)
        if quirks("led-packet-unscored-first") and row.confidence_bps is None:
            confidence = 10_001  # mutant: no confidence sorts before every confidence
        return (explicit, -confidence, -row.updated_at, -row.seq)

    lines: list[str] = []
    length = 0
    groups: set[str] = set()
    for row in sorted(active, key=order):
        if row.status != "active":
            continue
        if row.conflict_group is not None and row.conflict_group in groups:
            continue
        line = packet_line(row, quirks)
        if quirks("led-packet-keeps-carriage-returns"):  # mutant: only \n is collapsed
            reason = packet_reason(row, quirks)
            line = f"[{row.id[:8]}] {row.kind} ({reason}): " + re.sub(r"\n+", " ", row.body)
        added = len(line) + (1 if lines and not quirks("led-packet-uncounted-newlines") else 0)
        if length + added > PACKET_MAX_CHARS and quirks("led-packet-cuts-entry"):
            line = line[: PACKET_MAX_CHARS - length - (1 if lines else 0)]  # mutant: cut, not drop
            added = len(line) + (1 if lines else 0)
        if length + added > PACKET_MAX_CHARS or not line:
            continue
        length += added
        lines.append(line)
        if row.conflict_group is not None:
            groups.add(row.conflict_group)
    return lines
