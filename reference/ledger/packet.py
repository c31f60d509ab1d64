"""The packet: which pins reach the model, in what order, in what form (LED-PACKET.*)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from reference.ledger.records import LedgerRecord, LedgerState

PACKET_CHAR_CAP: Final = 4000
"""Longest packet text (lines joined by newlines), in code points (LED-PACKET.4)."""

_LINE_BREAKS = re.compile(r"[\r\n]+")


@dataclass(frozen=True)
class Exclusion:
    """A record of the scope that is not in the packet, and the packet's own reason code."""

    record_id: str
    reason: str
    """The record's status when not active (``expired``, ``superseded``, ``deleted``,
    ``proposed``, ``rejected``), ``conflict_group`` for a second member of a group, or
    ``over_cap`` for an active record that did not fit."""


@dataclass(frozen=True)
class Packet:
    """The records selected, their lines, the text, and every exclusion with its reason."""

    records: tuple[LedgerRecord, ...]
    lines: tuple[str, ...]
    text: str
    excluded: tuple[Exclusion, ...]


def packet_order_key(rec: LedgerRecord) -> tuple[int, int, int, int]:
    """Sort key: explicit pins first, then higher confidence (none ranks lowest), then newest
    update, then the record written later (LED-PACKET.3)."""
    explicit = 0 if rec.provenance == "user_explicit" else 1
    confidence = -rec.confidence_bps if rec.confidence_bps is not None else 1
    return (explicit, confidence, -rec.updated_at, -rec.seq)


def packet_rank(rec: LedgerRecord) -> tuple[int, int, int]:
    """What the packet order fixes (LED-PACKET.3): records equal on this rank may come in any
    order -- :func:`packet_order_key` adds only the model's own tie-break."""
    explicit, confidence, newest, _seq = packet_order_key(rec)
    return (explicit, confidence, newest)


def reason_key(rec: LedgerRecord) -> tuple[str, int | None]:
    """What a line's reason label may depend on: the record's provenance and confidence (the
    reference's label is the provenance; the real ledger's names the confidence too,
    LED-PACKET.5)."""
    return (rec.provenance, rec.confidence_bps)


Reason = Callable[[LedgerRecord], str]
"""A packet line's reason label for a record (LED-PACKET.5)."""


def provenance_reason(rec: LedgerRecord) -> str:
    """The reference's reason label: the record's provenance (LED-PACKET.5)."""
    return rec.provenance


def collapsed_body(rec: LedgerRecord) -> str:
    """The body as a packet line carries it: each run of line breaks one space (LED-PACKET.5)."""
    return _LINE_BREAKS.sub(" ", rec.body)


def render_line(rec: LedgerRecord, reason: Reason = provenance_reason) -> str:
    """``[<first 8 chars of id>] <kind> (<reason>): <body>``, each run of line breaks in the
    body collapsed to one space (LED-PACKET.5); the reason is the provenance unless another
    labelling is given (a store's own labels, LED-PACKET.6)."""
    return f"[{rec.id[:8]}] {rec.kind} ({reason(rec)}): {collapsed_body(rec)}"


def build_packet(state: LedgerState, scope_key: str, reason: Reason = provenance_reason) -> Packet:
    """Select and render the scope's packet (LED-PACKET.1-.5, LED-EXP.3, LED-GROUP.1).

    Only active records; an expired one is excluded with reason ``expired``; at most one
    member per conflict group; ordered by ``packet_order_key``; a record whose line would push
    the text past 4000 characters is dropped whole and later ones may still fit.  ``reason``:
    the labelling of the lines (the reference's by default; a store's own labels change which
    lines fit, LED-PACKET.6).
    """
    excluded: list[Exclusion] = []
    candidates: list[LedgerRecord] = []
    for rec in state.records:
        if rec.scope_key != scope_key:
            continue
        if rec.status != "active":
            excluded.append(Exclusion(rec.id, rec.status))
        else:
            candidates.append(rec)
    candidates.sort(key=packet_order_key)
    chosen: list[LedgerRecord] = []
    lines: list[str] = []
    groups: set[str] = set()
    length = 0
    for rec in candidates:
        if rec.conflict_group is not None and rec.conflict_group in groups:
            excluded.append(Exclusion(rec.id, "conflict_group"))
            continue
        line = render_line(rec, reason)
        added = len(line) + (1 if lines else 0)
        if length + added > PACKET_CHAR_CAP:
            excluded.append(Exclusion(rec.id, "over_cap"))
            continue
        length += added
        lines.append(line)
        chosen.append(rec)
        if rec.conflict_group is not None:
            groups.add(rec.conflict_group)
    return Packet(tuple(chosen), tuple(lines), "\n".join(lines), tuple(excluded))
