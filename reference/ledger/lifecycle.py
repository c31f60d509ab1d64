"""Statuses, their legal transitions, and the user's and the extractor's writes.

``save``, ``supersede`` (an edit), ``delete`` (a tombstone), ``propose`` (the extractor's path),
``approve`` and ``reject``, plus ``list_records``.  Every function takes ``now`` and returns the
new state with the record written, or the unchanged state with a ``Refused`` (LED-STATUS.3).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from reference.ledger.budget import check_growth
from reference.ledger.conflicts import activate_in_group, close_as_superseded
from reference.ledger.credentials import (
    CREDENTIAL_MESSAGE,
    credential_verdict,
    exemptible,
    matching_detectors,
)
from reference.ledger.outcome import REFUSED, Refused, bad_value, combine, refusal
from reference.ledger.records import (
    DEFAULT_KIND,
    KINDS,
    LIST_LIMIT,
    MAX_BODY,
    MAX_CONFIDENCE_BPS,
    MAX_GROUP,
    MAX_RATIONALE,
    MAX_SESSION_ID,
    SCOPE_LOCAL,
    LedgerRecord,
    LedgerState,
    add_record,
    find_in_scope,
    next_slot,
    put_record,
    trim_body,
)

LEGAL_TRANSITIONS: Final[frozenset[tuple[str, str]]] = frozenset(
    {
        ("proposed", "active"),
        ("proposed", "rejected"),
        ("active", "superseded"),
        ("active", "deleted"),
        ("active", "expired"),
    }
)
"""Exactly the status changes the ledger ever makes (LED-STATUS.2)."""

_VERB: Final = {
    "superseded": "edited",
    "deleted": "forgotten",
    "expired": "expired",
    "active": "approved",
    "rejected": "rejected",
}
_SOURCE: Final = {
    "superseded": "an active",
    "deleted": "an active",
    "expired": "an active",
    "active": "a proposed",
    "rejected": "a proposed",
}

Result = LedgerRecord | Refused


def lifecycle_refusal(rec: LedgerRecord, target_status: str) -> Refused:
    """Refuse moving ``rec`` to ``target_status``: code 1000, a sentence for a person.

    The text is the model's; a store's wording is implementation-defined (LED-STATUS.3).
    """
    return refusal(
        f"Memory record '{rec.id}' is {rec.status}; only {_SOURCE[target_status]} record can be "
        f"{_VERB[target_status]}. Nothing was changed."
    )


def unknown_record(scope_key: str, record_id: str) -> Refused:
    """An id that names no record of the scope: a bad value, 1000 or -32602 (LED-WIRE.3)."""
    return bad_value(
        f"No memory record '{record_id}' in scope '{scope_key}'. Nothing was changed.",
        code=REFUSED,
    )


def check_body(
    body: str, *, lenient_credentials: bool = False, exempt: frozenset[str] = frozenset()
) -> tuple[str, list[Refused]]:
    """Trim a body and list what is wrong with it (LED-SAVE.3, LED-REC.6, LED-CRED.2).

    ``lenient_credentials``: the other allowed answer where the seed gives no threshold
    (LED-CRED.4) -- a body only a broad detector form matches is stored, not refused.
    ``exempt``: the detectors a narrower detector leaves out (LED-CRED.6).
    """
    trimmed = trim_body(body)
    problems: list[Refused] = []
    if not trimmed:
        problems.append(
            bad_value("A memory body cannot be empty. Nothing was saved.", code=REFUSED)
        )
    elif len(trimmed) > MAX_BODY:
        problems.append(
            bad_value(
                f"A memory body can hold at most {MAX_BODY} characters. Nothing was saved.",
                code=REFUSED,
            )
        )
    verdict = credential_verdict(trimmed, exempt)
    if verdict == "refuse" or (verdict == "either" and not lenient_credentials):
        problems.append(refusal(CREDENTIAL_MESSAGE, exact=True))
    return trimmed, problems


def check_kind(kind: str | None) -> list[Refused]:
    """A kind outside the four is a bad value (LED-REC.2)."""
    if kind is None or kind in KINDS:
        return []
    return [bad_value(f"Unknown memory kind '{kind}'; use one of {', '.join(KINDS)}.")]


def check_group_name(name: str, what: str) -> list[Refused]:
    """A conflict group name is 1–80 code points and not blank (LED-GROUP.5)."""
    if not name.strip() or len(name) > MAX_GROUP:
        return [bad_value(f"{what} must be 1-{MAX_GROUP} characters and not blank.")]
    return []


def _check_optional_text(value: str | None, limit: int, what: str) -> list[Refused]:
    if value is None or (0 < len(value) <= limit):
        return []
    return [bad_value(f"{what} must be 1-{limit} characters.")]


def save(
    state: LedgerState,
    body: str,
    now: int,
    *,
    kind: str | None = None,
    session_id: str | None = None,
    lenient_credentials: bool = False,
) -> tuple[LedgerState, Result]:
    """Pin an explicit memory in ``account:local`` (LED-SAVE.1, LED-SAVE.3, LED-CRED.2,
    LED-BUDGET.2, LED-PROV.1, LED-REC.5, LED-EXP.1).

    The record is active, ``user_explicit``, open from ``now``, without expiry.  There is no
    scope parameter: the scope is always ``account:local``.
    """
    trimmed, problems = check_body(
        body, lenient_credentials=lenient_credentials, exempt=state.credential_exempt
    )
    problems += check_kind(kind)
    problems += _check_optional_text(session_id, MAX_SESSION_ID, "sessionId")
    over = check_growth(state, SCOPE_LOCAL)
    if over is not None:
        problems.append(over)
    if problems:
        return state, combine(problems)
    rid, seq = next_slot(state)
    rec = LedgerRecord(
        id=rid,
        scope_key=SCOPE_LOCAL,
        kind=kind or DEFAULT_KIND,
        body=trimmed,
        provenance="user_explicit",
        status="active",
        valid_from=now,
        valid_to=None,
        created_at=now,
        updated_at=now,
        seq=seq,
        source_session_id=session_id,
    )
    return add_record(state, rec), rec


def propose(
    state: LedgerState,
    scope_key: str,
    body: str,
    now: int,
    *,
    kind: str | None = None,
    session_id: str | None = None,
    confidence_bps: int | None = None,
    rationale: str | None = None,
    conflict_group: str | None = None,
    lenient_credentials: bool = False,
    check_ranges: bool = True,
) -> tuple[LedgerState, Result]:
    """The extractor's path: store a proposal awaiting a decision (LED-REVIEW.1, LED-REVIEW.4,
    LED-PROV.2, LED-INT.2, LED-BUDGET.2, LED-CRED.2).

    A proposal holds an empty interval at ``now`` and counts against the budget; one that
    would exceed it, or carries a credential, is refused before anything is stored.
    ``check_ranges=False`` is the other allowed answer of a test control (LED-WIRE.7): the
    ranges of ``confidenceBps``, ``rationale`` and ``conflictGroup`` are not judged.
    """
    trimmed, problems = check_body(
        body, lenient_credentials=lenient_credentials, exempt=state.credential_exempt
    )
    problems += check_kind(kind)
    problems += _check_optional_text(session_id, MAX_SESSION_ID, "sessionId")
    if check_ranges:
        problems += _check_optional_text(rationale, MAX_RATIONALE, "rationale")
        if confidence_bps is not None and not 0 <= confidence_bps <= MAX_CONFIDENCE_BPS:
            problems.append(bad_value(f"confidenceBps must be 0-{MAX_CONFIDENCE_BPS}."))
        if conflict_group is not None:
            problems += check_group_name(conflict_group, "conflictGroup")
    over = check_growth(state, scope_key)
    if over is not None:
        problems.append(over)
    if problems:
        return state, combine(problems)
    rid, seq = next_slot(state)
    rec = LedgerRecord(
        id=rid,
        scope_key=scope_key,
        kind=kind or DEFAULT_KIND,
        body=trimmed,
        provenance="model_proposal",
        status="proposed",
        valid_from=now,
        valid_to=now,
        created_at=now,
        updated_at=now,
        seq=seq,
        source_session_id=session_id,
        confidence_bps=confidence_bps,
        rationale=rationale,
        conflict_group=conflict_group,
    )
    return add_record(state, rec), rec


def supersede(
    state: LedgerState,
    scope_key: str,
    record_id: str,
    body: str,
    now: int,
    *,
    kind: str | None = None,
    lenient_credentials: bool = False,
    carry_session: bool = False,
) -> tuple[LedgerState, Result]:
    """Edit an active record: a new active record replaces it at ``now`` (LED-EDIT.1,
    LED-EDIT.2, LED-EDIT.3, LED-INT.3, LED-GROUP.4, LED-PROV.1).

    The successor keeps the predecessor's kind (unless one is given) and conflict group; the
    predecessor is closed at exactly the instant the successor opens.  Not growth.
    ``carry_session`` is the other allowed answer: the successor keeps the predecessor's
    ``source_session_id`` (LED-EDIT.1).
    """
    trimmed, problems = check_body(
        body, lenient_credentials=lenient_credentials, exempt=state.credential_exempt
    )
    problems += check_kind(kind)
    old = find_in_scope(state, scope_key, record_id)
    if old is None:
        problems.insert(0, unknown_record(scope_key, record_id))
    elif old.status != "active":
        problems.insert(0, lifecycle_refusal(old, "superseded"))
    if problems:
        return state, combine(problems)
    assert old is not None
    return replace_with(
        state,
        old,
        now,
        body=trimmed,
        kind=kind or old.kind,
        provenance="user_explicit",
        session_id=old.source_session_id if carry_session else None,
    )


def replace_with(
    state: LedgerState,
    old: LedgerRecord,
    now: int,
    *,
    body: str,
    kind: str,
    provenance: str,
    session_id: str | None = None,
) -> tuple[LedgerState, LedgerRecord]:
    """Supersede one active record by a new one at ``now`` (an edit or a correction)."""
    rid, seq = next_slot(state)
    new = LedgerRecord(
        id=rid,
        scope_key=old.scope_key,
        kind=kind,
        body=body,
        provenance=provenance,
        status="active",
        valid_from=now,
        valid_to=None,
        created_at=now,
        updated_at=now,
        seq=seq,
        supersedes=old.id,
        conflict_group=old.conflict_group,
        source_session_id=session_id,
    )
    state = close_as_superseded(state, old, rid, now)
    return add_record(state, new), new


def tombstone(state: LedgerState, rec: LedgerRecord, now: int) -> tuple[LedgerState, LedgerRecord]:
    """Mark an active record deleted at ``now``; its body is forgotten (LED-FORGET.1, .3)."""
    assert rec.status == "active"
    dead = replace(rec, status="deleted", valid_to=now, updated_at=now, body="")
    return put_record(state, dead), dead


def delete(
    state: LedgerState, scope_key: str, record_id: str, now: int
) -> tuple[LedgerState, Result]:
    """Forget an active record by tombstone (LED-FORGET.1, LED-FORGET.2, LED-INT.4)."""
    rec = find_in_scope(state, scope_key, record_id)
    if rec is None:
        return state, unknown_record(scope_key, record_id)
    if rec.status != "active":
        return state, lifecycle_refusal(rec, "deleted")
    return tombstone(state, rec, now)


def approve(
    state: LedgerState, scope_key: str, record_id: str, now: int
) -> tuple[LedgerState, Result]:
    """Accept a proposal: it becomes active from ``now`` (LED-REVIEW.2, LED-GROUP.2,
    LED-BUDGET.3).

    Not growth (a proposal is already held).  If it belongs to a conflict group, the group's
    active member is superseded by it at ``now``.
    """
    rec = find_in_scope(state, scope_key, record_id)
    if rec is None:
        return state, unknown_record(scope_key, record_id)
    if rec.status != "proposed":
        return state, lifecycle_refusal(rec, "active")
    live = replace(rec, status="active", valid_from=now, valid_to=None, updated_at=now)
    state, _closed = activate_in_group(state, live, now)
    return put_record(state, live), live


def reject(
    state: LedgerState, scope_key: str, record_id: str, now: int
) -> tuple[LedgerState, Result]:
    """Decline a proposal: it stays with its empty interval (LED-REVIEW.3, LED-INT.2)."""
    rec = find_in_scope(state, scope_key, record_id)
    if rec is None:
        return state, unknown_record(scope_key, record_id)
    if rec.status != "proposed":
        return state, lifecycle_refusal(rec, "rejected")
    dead = replace(rec, status="rejected", updated_at=now)
    return put_record(state, dead), dead


def listing_order(state: LedgerState, scope_key: str, status: str = "active") -> list[LedgerRecord]:
    """Every record of the scope with ``status``, newest update first; equal ``updated_at``:
    the record written later first (the model's pick; a store may order such ties any way and
    keep any members of the tie the 50 cut falls into, LED-LIST.2)."""
    rows = [r for r in state.records if r.scope_key == scope_key and r.status == status]
    rows.sort(key=lambda r: (r.updated_at, r.seq), reverse=True)
    return rows


def list_records(state: LedgerState, scope_key: str, status: str = "active") -> list[LedgerRecord]:
    """A scope's records of one status, newest update first, at most 50 (LED-LIST.1, .2, .3)."""
    return listing_order(state, scope_key, status)[:LIST_LIMIT]


def narrower_reading(state: LedgerState, body: object) -> LedgerState | None:
    """The ledger of a store whose credential detector leaves out every shape ``body`` holds
    (a deviation from LED-CRED.1, LED-CRED.6), or None when none may be left out: a core shape
    held whole, a shape the store has shown it applies (LED-CRED.2), or no shape at all."""
    if not isinstance(body, str):
        return None
    left_out = exemptible(trim_body(body), state.credential_exempt)
    if not left_out or left_out & state.credential_shown:
        return None
    return replace(
        state,
        credential_exempt=state.credential_exempt | left_out,
        departures=state.departures | {"LED-CRED.1"},
    )


def credential_shown(state: LedgerState, body: object) -> LedgerState:
    """The ledger after its store refused ``body`` as a credential: when one detector alone
    explains the refusal, the store has shown it applies it (LED-CRED.2, LED-CRED.6)."""
    if not isinstance(body, str):
        return state
    names = matching_detectors(trim_body(body)) - state.credential_exempt
    if len(names) != 1 or names <= state.credential_shown:
        return state
    return replace(state, credential_shown=state.credential_shown | names)
