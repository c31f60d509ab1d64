"""Ledger records, consolidation settings, runs and the ledger state value.

The state is a frozen value; every operation in this package returns a new one.  Records are
kept in a tuple in the order they were written and are never removed (LED-REC.4); a record's
position in that tuple is its write order, which breaks ties in "newest first" orderings
(LED-LIST.2, LED-PACKET.3).  Ids come from a counter inside the state (LED-REC.3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Final, Literal

SCOPE_LOCAL: Final = "account:local"
"""The one scope the binding writes (LED-REC.5)."""

Kind = Literal["preference", "fact", "decision", "constraint"]
KINDS: Final[tuple[str, ...]] = ("preference", "fact", "decision", "constraint")
DEFAULT_KIND: Final = "preference"

Status = Literal["active", "proposed", "rejected", "superseded", "expired", "deleted"]
STATUSES: Final[tuple[str, ...]] = (
    "active",
    "proposed",
    "rejected",
    "superseded",
    "expired",
    "deleted",
)
HELD_STATUSES: Final = frozenset({"active", "proposed"})
"""What a scope's budget counts (LED-BUDGET.1)."""

Provenance = Literal["user_explicit", "model_proposal", "model_consolidation"]
PROVENANCES: Final[tuple[str, ...]] = ("user_explicit", "model_proposal", "model_consolidation")

MAX_BODY: Final = 4000
"""Longest body, in code points, after trimming (LED-REC.6)."""
LIST_LIMIT: Final = 50
MAX_SESSION_ID: Final = 200
MAX_RATIONALE: Final = 4000
MAX_GROUP: Final = 80
MAX_SCOPE_KEY: Final = 200
MAX_CONFIDENCE_BPS: Final = 10_000

DEFAULT_MAX_RECORDS: Final = 200
MAX_RECORDS_RANGE: Final = (1, 10_000)
DEFAULT_DEBOUNCE_SECONDS: Final = 600
DEBOUNCE_RANGE: Final = (30, 86_400)
MODES: Final[tuple[str, ...]] = ("off", "propose")
MAX_HARNESS: Final = 200

# Python's str.strip() set: Unicode White_Space plus U+001C..U+001F (LED-REC.6).
_TRIM_CHARS: Final = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def trim_body(body: str) -> str:
    """Strip leading and trailing whitespace as the ledger stores bodies (LED-REC.6)."""
    return body.strip(_TRIM_CHARS)


@dataclass(frozen=True)
class LedgerRecord:  # long: one field per column of the seed's memory_records row
    """One row of ``memory_records`` with every field of the seed (LED-REC.1)."""

    id: str
    scope_key: str
    kind: str
    body: str
    provenance: str
    status: str
    valid_from: int
    valid_to: int | None
    created_at: int
    updated_at: int
    seq: int
    """Write order (0-based position in ``LedgerState.records``); not a wire field."""
    source_session_id: str | None = None
    confidence_bps: int | None = None
    rationale: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    expires_at: int | None = None
    conflict_group: str | None = None


@dataclass(frozen=True)
class ConsolidationSettings:
    """A scope's consolidation settings; the defaults are a scope nobody configured (LED-CONS.1)."""

    mode: str = "off"
    harness: str | None = None
    model: str | None = None
    max_records: int = DEFAULT_MAX_RECORDS
    allow_removal: bool = False
    debounce_seconds: int = DEFAULT_DEBOUNCE_SECONDS


@dataclass(frozen=True)
class BatchCounts:
    """What one consolidation batch did (LED-GATE.9)."""

    applied: int = 0
    invalid: int = 0
    refused: int = 0
    declined: int = 0


RunPhase = Literal["pending", "running", "settled"]
RunOutcome = Literal["completed", "failed", "replaced", "cancelled", "skipped"]


@dataclass(frozen=True)
class Run:  # long: one field per column of the seed's run row, plus the claim's settings
    """A consolidation run of one scope (LED-RUN.*)."""

    id: str
    scope_key: str
    phase: str
    queued_at: int
    due_at: int
    claimed_at: int | None = None
    settled_at: int | None = None
    outcome: str | None = None
    detail: str | None = None
    model_called: bool = False
    input_ids: tuple[str, ...] = ()
    counts: BatchCounts | None = None
    tokens: int | None = None
    spend_micros: int | None = None
    settle_count: int = 0
    """How many times this run settled; the model keeps it to make LED-RUN.3 checkable."""
    harness: str | None = None
    """The harness the run was claimed on: the scope's setting at the claim (LED-RUN.7)."""
    model: str | None = None
    """The model the run was claimed on: the scope's setting at the claim (LED-RUN.7)."""
    tools: tuple[str, ...] = ()
    """The hidden session's tool scope: always empty (LED-RUN.7)."""


@dataclass(frozen=True)
class LedgerState:
    """The whole ledger: every record ever written, per-scope settings, runs, id counters."""

    records: tuple[LedgerRecord, ...] = ()
    settings: tuple[tuple[str, ConsolidationSettings], ...] = ()
    runs: tuple[Run, ...] = ()
    next_run: int = 1
    departures: frozenset[str] = frozenset()
    """The reference clauses this ledger departs from: it is one the seed allows but the
    reference would not hold (an ``expire`` counted from another instant, LED-VOCAB.4).  The
    model's own ledger never departs; :func:`~reference.ledger.wire.allowed.allowed` offers the
    others, and a harness that follows one reports a deviation."""
    credential_exempt: frozenset[str] = frozenset()
    """Detectors (``reference.ledger.credentials`` names) this ledger's store has shown it
    leaves out: a narrower credential detector, a departure from LED-CRED.1 (LED-CRED.6)."""
    credential_shown: frozenset[str] = frozenset()
    """Detectors this ledger's store has shown it applies (a refusal only that detector
    explains): it must then apply them everywhere a body enters (LED-CRED.2, LED-CRED.6)."""


def empty_state() -> LedgerState:
    """A ledger with no records, default settings everywhere and no runs."""
    return LedgerState()


# Ids look like UUIDs; the first 8 characters (the packet's short id) are the counter in hex,
# so they are unique up to 2**32 records (LED-REC.3, LED-PACKET.5).
_ID = re.compile(r"([0-9a-f]{8})-0000-4000-8000-([0-9a-f]{12})")


def record_id(n: int) -> str:
    """The id of the n-th record ever written (n from 1) (LED-REC.3)."""
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def find_record(state: LedgerState, record_id_: str) -> LedgerRecord | None:
    """The record with this id, in any scope, or None."""
    m = _ID.fullmatch(record_id_)
    if m is None or int(m.group(1), 16) != int(m.group(2), 16):
        return None
    seq = int(m.group(1), 16) - 1
    if 0 <= seq < len(state.records):
        rec = state.records[seq]
        if rec.id == record_id_:
            return rec
    return None


def find_in_scope(state: LedgerState, scope_key: str, record_id_: str) -> LedgerRecord | None:
    """The record with this id if it belongs to ``scope_key`` (a foreign id reads as unknown)."""
    rec = find_record(state, record_id_)
    return rec if rec is not None and rec.scope_key == scope_key else None


def records_in_scope(state: LedgerState, scope_key: str) -> list[LedgerRecord]:
    """Every record of the scope, in write order."""
    return [r for r in state.records if r.scope_key == scope_key]


def active_records(state: LedgerState, scope_key: str) -> list[LedgerRecord]:
    """The scope's active records, in write order (LED-STATUS.4)."""
    return [r for r in state.records if r.scope_key == scope_key and r.status == "active"]


def held(state: LedgerState, scope_key: str) -> int:
    """Active records plus proposals awaiting a decision (LED-BUDGET.1)."""
    return sum(1 for r in state.records if r.scope_key == scope_key and r.status in HELD_STATUSES)


def settings_for(state: LedgerState, scope_key: str) -> ConsolidationSettings:
    """The scope's settings, defaults when never updated (LED-CONS.1)."""
    for key, s in state.settings:
        if key == scope_key:
            return s
    return ConsolidationSettings()


def with_settings(
    state: LedgerState, scope_key: str, settings: ConsolidationSettings
) -> LedgerState:
    """The state with the scope's settings replaced."""
    rest = tuple((k, s) for k, s in state.settings if k != scope_key)
    return replace(state, settings=rest + ((scope_key, settings),))


def next_slot(state: LedgerState) -> tuple[str, int]:
    """The id and write position the next new record gets (LED-REC.3)."""
    seq = len(state.records)
    return record_id(seq + 1), seq


def add_record(state: LedgerState, rec: LedgerRecord) -> LedgerState:
    """The state with ``rec`` (built from ``next_slot``) appended."""
    assert rec.seq == len(state.records) and rec.id == record_id(rec.seq + 1)
    return replace(state, records=state.records + (rec,))


def put_record(state: LedgerState, rec: LedgerRecord) -> LedgerState:
    """The state with the record at ``rec.seq`` replaced by ``rec`` (rows are never removed)."""
    assert state.records[rec.seq].id == rec.id
    records = state.records[: rec.seq] + (rec,) + state.records[rec.seq + 1 :]
    return replace(state, records=records)
