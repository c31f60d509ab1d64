"""Expiry: a deterministic sweep that takes the instant as an argument (LED-EXP.*)."""

from __future__ import annotations

from dataclasses import replace

from reference.ledger.lifecycle import Result, lifecycle_refusal, unknown_record
from reference.ledger.outcome import bad_value
from reference.ledger.records import LedgerState, find_in_scope, put_record


def set_expiry(
    state: LedgerState,
    scope_key: str,
    record_id: str,
    expires_at: int,
    now: int,
    *,
    check_range: bool = True,
    touch_updated: bool = True,
) -> tuple[LedgerState, Result]:
    """Give an active record an expiry instant (LED-EXP.5).

    Only an active record takes an expiry; the instant may not precede the record's
    ``valid_from`` (its interval would close before it opened).  The record stays active until
    a sweep passes the instant.  ``check_range=False`` / ``touch_updated=False`` are the
    other allowed answers of this test control (LED-EXP.5, LED-WIRE.7): its range check and
    whether it stamps ``updated_at`` are not judged.
    """
    rec = find_in_scope(state, scope_key, record_id)
    if rec is None:
        return state, unknown_record(scope_key, record_id)
    if rec.status != "active":
        return state, lifecycle_refusal(rec, "expired")
    if check_range and expires_at < rec.valid_from:
        return state, bad_value("expiresAt cannot precede the record's validFrom.")
    new = replace(rec, expires_at=expires_at, updated_at=now if touch_updated else rec.updated_at)
    return put_record(state, new), new


def sweep_expired(state: LedgerState, now: int) -> tuple[LedgerState, tuple[str, ...]]:
    """Expire every active record whose ``expires_at`` is at or before ``now`` (LED-EXP.2,
    LED-EXP.3, LED-EXP.4).

    The boundary is inclusive; the interval closes at ``expires_at``, not at ``now``; body,
    provenance and interval survive.  Returns the ids expired, in write order.  Runs the same
    whatever the consolidation settings say.
    """
    expired: list[str] = []
    for rec in state.records:
        if rec.status == "active" and rec.expires_at is not None and rec.expires_at <= now:
            state = put_record(
                state, replace(rec, status="expired", valid_to=rec.expires_at, updated_at=now)
            )
            expired.append(rec.id)
    return state, tuple(expired)
