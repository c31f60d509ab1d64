"""Conflict groups: at most one active member at a time (LED-GROUP.*)."""

from __future__ import annotations

from dataclasses import replace

from reference.ledger.records import LedgerRecord, LedgerState, put_record


def active_members(state: LedgerState, scope_key: str, group: str) -> list[LedgerRecord]:
    """The group's active members in write order; at most one in a consistent state."""
    return [
        r
        for r in state.records
        if r.scope_key == scope_key and r.conflict_group == group and r.status == "active"
    ]


def close_as_superseded(
    state: LedgerState, loser: LedgerRecord, survivor_id: str, at: int
) -> LedgerState:
    """Close an active record at ``at`` and mark it superseded by ``survivor_id``.

    The single primitive behind every supersession: an edit, a merge, a correction, a group
    resolution and a group activation (LED-INT.3, LED-GROUP.2).
    """
    assert loser.status == "active"
    closed = replace(
        loser,
        status="superseded",
        valid_to=at,
        superseded_by=survivor_id,
        updated_at=at,
    )
    return put_record(state, closed)


def activate_in_group(
    state: LedgerState, survivor: LedgerRecord, at: int
) -> tuple[LedgerState, tuple[str, ...]]:
    """Before ``survivor`` becomes active at ``at``: supersede its group's active members.

    Returns the ids closed.  A survivor with no group closes nothing (LED-GROUP.2).
    """
    if survivor.conflict_group is None:
        return state, ()
    closed: list[str] = []
    for member in active_members(state, survivor.scope_key, survivor.conflict_group):
        if member.id == survivor.id:
            continue
        state = close_as_superseded(state, member, survivor.id, at)
        closed.append(member.id)
    return state, tuple(closed)
