"""Consolidation: settings, the closed vocabulary, and the gate a batch passes through.

A batch is a list of JSON-shaped elements (what the consolidation model answered).  Each is
classified in order (LED-GATE.1): ``invalid`` when its shape is wrong, ``refused`` when the gate
says no (outside the vocabulary, a foreign or non-active target, not permitted, a credential),
``declined`` for a valid ``keep``, and otherwise ``applied`` against the state the earlier
elements left.  Every stamp of one batch uses the one instant ``now`` (LED-GATE.8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from reference.ledger.conflicts import active_members, close_as_superseded
from reference.ledger.credentials import credential_verdict
from reference.ledger.lifecycle import narrower_reading, replace_with, tombstone
from reference.ledger.outcome import Refused, bad_value, combine
from reference.ledger.records import (
    DEBOUNCE_RANGE,
    MAX_BODY,
    MAX_GROUP,
    MAX_HARNESS,
    MAX_RECORDS_RANGE,
    MODES,
    BatchCounts,
    ConsolidationSettings,
    LedgerRecord,
    LedgerState,
    add_record,
    find_in_scope,
    next_slot,
    put_record,
    settings_for,
    trim_body,
    with_settings,
)
from reference.ledger.timefmt import MS_PER_DAY

VOCABULARY: Final[tuple[str, ...]] = ("merge", "correct", "expire", "group", "retire", "keep")
"""The six operations a batch may name (LED-VOCAB.1)."""

ARITY: Final[dict[str, tuple[int, int]]] = {
    "merge": (2, 10),
    "correct": (1, 1),
    "expire": (1, 1),
    "group": (2, 10),
    "retire": (1, 1),
    "keep": (1, 1),
}
"""(fewest, most) targets per operation (LED-VOCAB.1, LED-VOCAB.8)."""

OP_FIELDS: Final[dict[str, frozenset[str]]] = {
    "merge": frozenset({"body"}),
    "correct": frozenset({"body"}),
    "expire": frozenset({"afterDays"}),
    "group": frozenset({"subject"}),
    "retire": frozenset(),
    "keep": frozenset(),
}
"""The fields each operation takes besides ``operation`` and ``targets`` (LED-VOCAB.8)."""

MAX_BATCH: Final = 20
MAX_TARGETS: Final = 10
AFTER_DAYS_RANGE: Final = (1, 3650)

Verdict = Literal["applied", "invalid", "refused", "declined"]


@dataclass(frozen=True)
class ElementResult:
    """How the gate classified one element, and why (model-only detail)."""

    index: int
    verdict: str
    reason: str


@dataclass(frozen=True)
class BatchReport:
    """The counts a run reports plus each element's verdict (LED-GATE.9)."""

    counts: BatchCounts
    elements: tuple[ElementResult, ...]


# --- settings -------------------------------------------------------------------------------


def update_settings(
    state: LedgerState,
    scope_key: str,
    mode: str,
    now: int,
    *,
    harness: str | None = None,
    model: str | None = None,
    max_records: int | None = None,
    allow_removal: bool | None = None,
    debounce_seconds: int | None = None,
) -> tuple[LedgerState, ConsolidationSettings | Refused]:
    """Change a scope's consolidation settings; an absent (None) field keeps its value
    (LED-CONS.1, LED-CONS.2, LED-BUDGET.4, LED-RUN.4).

    ``max_records`` may be lowered below what the scope holds: nothing is evicted.  Turning the
    mode off settles every queued run of the scope as ``cancelled`` (runs.py).
    """
    from reference.ledger.runs import cancel_pending  # runs builds on this module

    problems: list[Refused] = []
    if mode not in MODES:
        problems.append(bad_value(f"mode must be one of {', '.join(MODES)}."))
    for name, text in (("harness", harness), ("model", model)):
        if text is not None and not (0 < len(text) <= MAX_HARNESS and text.strip()):
            problems.append(bad_value(f"{name} must be 1-{MAX_HARNESS} characters."))
    lo, hi = MAX_RECORDS_RANGE
    if max_records is not None and not lo <= max_records <= hi:
        problems.append(bad_value(f"maxRecords must be {lo}-{hi}."))
    lo, hi = DEBOUNCE_RANGE
    if debounce_seconds is not None and not lo <= debounce_seconds <= hi:
        problems.append(bad_value(f"debounceSeconds must be {lo}-{hi}."))
    if problems:
        return state, combine(problems)
    old = settings_for(state, scope_key)
    new = ConsolidationSettings(
        mode=mode,
        harness=old.harness if harness is None else harness,
        model=old.model if model is None else model,
        max_records=old.max_records if max_records is None else max_records,
        allow_removal=old.allow_removal if allow_removal is None else allow_removal,
        debounce_seconds=old.debounce_seconds if debounce_seconds is None else debounce_seconds,
    )
    state = with_settings(state, scope_key, new)
    if mode == "off":
        state = cancel_pending(state, scope_key, now)
    return state, new


# --- element shape --------------------------------------------------------------------------


def json_int(value: object) -> int | None:
    """A JSON number that is an integer in JavaScript's sense (5.0 is 5; true is not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def shape_problem(index: int, element: object) -> str | None:
    """Why an element is invalid, or None when its shape is right (LED-VOCAB.8, LED-GATE.1,
    LED-GATE.5, LED-GATE.6).

    An operation name outside the vocabulary is not a shape problem: the gate refuses it.
    """
    if index >= MAX_BATCH:
        return f"beyond the {MAX_BATCH}-operation limit"
    if not isinstance(element, dict):
        return "not an object"
    op = element.get("operation")
    if not isinstance(op, str):
        return "operation missing or not a string"
    if op not in VOCABULARY:
        return None
    allowed = {"operation", "targets"} | OP_FIELDS[op]
    extra = sorted(str(k) for k in element if k not in allowed)
    if extra:
        return f"field(s) not taken by {op}: {', '.join(extra)}"
    targets = element.get("targets")
    if not isinstance(targets, list):
        return "targets missing or not a list"
    if not all(isinstance(t, str) and t for t in targets):
        return "targets must be non-empty strings"
    if len(set(targets)) != len(targets):
        return "duplicate targets"
    if not 1 <= len(targets) <= MAX_TARGETS:
        return f"targets must hold 1-{MAX_TARGETS} ids"
    lo, hi = ARITY[op]
    if not lo <= len(targets) <= hi:
        return f"{op} takes {lo}-{hi} targets" if lo != hi else f"{op} takes exactly {lo} target"
    if "body" in OP_FIELDS[op]:
        body = element.get("body")
        if not isinstance(body, str):
            return "body missing or not a string"
        trimmed = trim_body(body)
        if not trimmed or len(trimmed) > MAX_BODY:
            return f"body must be 1-{MAX_BODY} characters after trimming"
    if "afterDays" in OP_FIELDS[op]:
        days = json_int(element.get("afterDays"))
        lo, hi = AFTER_DAYS_RANGE
        if days is None or not lo <= days <= hi:
            return f"afterDays must be an integer {lo}-{hi}"
    if "subject" in OP_FIELDS[op]:
        subject = element.get("subject")
        if not isinstance(subject, str) or not subject.strip() or len(subject) > MAX_GROUP:
            return f"subject must be 1-{MAX_GROUP} characters and not blank"
    return None


def gate_problem(
    state: LedgerState, scope_key: str, op: str, element: dict[str, object]
) -> str | None:
    """Why the gate refuses a well-shaped element, or None (LED-GATE.2, .3, .4, LED-CRED.2)."""
    if op not in VOCABULARY:
        return f"operation '{op}' is outside the vocabulary"
    targets = element["targets"]
    assert isinstance(targets, list)
    for t in targets:
        rec = find_in_scope(state, scope_key, str(t))
        if rec is None:
            return f"target '{t}' is not a record of the scope"
        if rec.status != "active":
            return f"target '{t}' is {rec.status}, not active"
    if op == "retire" and not settings_for(state, scope_key).allow_removal:
        return "removal is not allowed by the scope's settings"
    body = element.get("body")
    if (
        isinstance(body, str)
        and credential_verdict(trim_body(body), state.credential_exempt) is not None
    ):
        return "body is credential-shaped"
    return None


# --- applying -------------------------------------------------------------------------------


def _targets(state: LedgerState, scope_key: str, element: dict[str, object]) -> list[LedgerRecord]:
    ids = element["targets"]
    assert isinstance(ids, list)
    out: list[LedgerRecord] = []
    for t in ids:
        rec = find_in_scope(state, scope_key, str(t))
        assert rec is not None
        out.append(rec)
    return out


def apply_merge(
    state: LedgerState,
    sources: list[LedgerRecord],
    body: str,
    now: int,
    *,
    group: str | None = None,
    session_id: str | None = None,
) -> LedgerState:
    """Supersede every source by one new record at ``now`` (LED-VOCAB.2).

    Kind is the sources' shared kind, else ``fact``; provenance ``model_consolidation``;
    ``supersedes`` names the first target; no conflict group; every source is closed at ``now``
    and marked superseded by the new record.  ``group``/``session_id`` are the other allowed
    answers (one target's conflict group, one target's source session; LED-GROUP.4,
    LED-VOCAB.2).
    """
    kinds = {s.kind for s in sources}
    rid, seq = next_slot(state)
    new = LedgerRecord(
        id=rid,
        scope_key=sources[0].scope_key,
        kind=kinds.pop() if len(kinds) == 1 else "fact",
        body=trim_body(body),
        provenance="model_consolidation",
        status="active",
        valid_from=now,
        valid_to=None,
        created_at=now,
        updated_at=now,
        seq=seq,
        supersedes=sources[0].id,
        conflict_group=group,
        source_session_id=session_id,
    )
    for src in sources:
        state = close_as_superseded(state, src, rid, now)
    return add_record(state, new)


def group_members(
    state: LedgerState, scope_key: str, targets: list[LedgerRecord], subject: str
) -> dict[str, LedgerRecord]:
    """The records a ``group`` element gathers: its targets and the group's active member."""
    members = {r.id: r for r in targets}
    for r in active_members(state, scope_key, subject):
        members.setdefault(r.id, r)
    return members


def apply_group(
    state: LedgerState,
    scope_key: str,
    targets: list[LedgerRecord],
    subject: str,
    now: int,
    survivor_id: str | None = None,
) -> LedgerState:
    """Put the targets (and the group's active member) in group ``subject``; the member
    updated most recently survives, the others are superseded by it at ``now`` (LED-VOCAB.5).

    Ties on ``updated_at`` go to the record written later.  The survivor keeps its
    ``valid_from`` and its ``updated_at`` becomes ``now``.  ``survivor_id``: another member
    survives instead (a reading the seed allows, :func:`_group_departures`).
    """
    members = group_members(state, scope_key, targets, subject)
    survivor = max(members.values(), key=lambda r: (r.updated_at, r.seq))
    if survivor_id is not None:
        survivor = members[survivor_id]
    for m in members.values():
        if m.id != survivor.id:
            state = close_as_superseded(state, replace(m, conflict_group=subject), survivor.id, now)
    return put_record(state, replace(survivor, conflict_group=subject, updated_at=now))


def apply_element(
    state: LedgerState, scope_key: str, op: str, element: dict[str, object], now: int
) -> LedgerState:
    """Apply one element the gate let through (LED-VOCAB.2-.6)."""
    targets = _targets(state, scope_key, element)
    if op == "merge":
        body = element["body"]
        assert isinstance(body, str)
        return apply_merge(state, targets, body, now)
    if op == "correct":
        body = element["body"]
        assert isinstance(body, str)
        old = targets[0]
        state, _new = replace_with(
            state, old, now, body=trim_body(body), kind=old.kind, provenance="model_consolidation"
        )
        return state
    if op == "expire":
        days = json_int(element["afterDays"])
        assert days is not None
        rec = targets[0]
        return put_record(state, replace(rec, expires_at=now + days * MS_PER_DAY, updated_at=now))
    if op == "group":
        subject = element["subject"]
        assert isinstance(subject, str)
        return apply_group(state, scope_key, targets, subject, now)
    if op == "retire":
        state, _dead = tombstone(state, targets[0], now)
        return state
    raise AssertionError(f"not an applying operation: {op}")


def apply_batch(
    state: LedgerState, scope_key: str, operations: Sequence[object], now: int
) -> tuple[LedgerState, BatchReport]:
    """Run a batch through the gate, in order, at the one instant ``now`` (LED-GATE.1-.9).

    Invalid and refused elements change nothing; the rest apply.  The mode does not matter:
    scheduling and the gate are separate (LED-GATE.7).  Nothing here is growth (LED-BUDGET.3).
    """
    counts = {"applied": 0, "invalid": 0, "refused": 0, "declined": 0}
    results: list[ElementResult] = []
    for i, element in enumerate(operations):
        problem = shape_problem(i, element)
        if problem is not None:
            verdict, reason = "invalid", problem
        else:
            assert isinstance(element, dict)
            op = str(element["operation"])
            refusal_reason = gate_problem(state, scope_key, op, element)
            if refusal_reason is not None:
                verdict, reason = "refused", refusal_reason
            elif op == "keep":
                verdict, reason = "declined", "keep changes nothing"
            else:
                state = apply_element(state, scope_key, op, element, now)
                verdict, reason = "applied", op
        counts[verdict] += 1
        results.append(ElementResult(i, verdict, reason))
    return state, BatchReport(BatchCounts(**counts), tuple(results))


# --- every allowed answer ---------------------------------------------------------------------

#: How many alternative (state, counts) branches one batch may keep; past it the first ones are
#: kept (a batch needs several independent hidden choices to get there).
MAX_BRANCHES: Final = 64

Counts = tuple[int, int, int, int]  # applied, invalid, refused, declined
_SLOT: Final = {"applied": 0, "invalid": 1, "refused": 2, "declined": 3}


def _well_formed_targets(element: dict[str, object]) -> bool:
    targets = element.get("targets")
    return (
        isinstance(targets, list)
        and all(isinstance(t, str) and t for t in targets)
        and len(set(targets)) == len(targets)
        and 1 <= len(targets) <= MAX_TARGETS
    )


def _has_integral_float(element: dict[str, object]) -> bool:
    days = element.get("afterDays")
    return isinstance(days, float) and days.is_integer()


def element_alternatives(
    state: LedgerState, scope_key: str, index: int, element: object, now: int
) -> list[tuple[LedgerState, str | None]]:
    """Every allowed (state, verdict) for one element; the model's own pick first.

    A verdict of None means "not counted" (allowed past the 20th element only).  The open
    points (LED-GATE.1, LED-GATE.2, LED-GATE.5, LED-GATE.6, LED-VOCAB.8, LED-GROUP.4,
    LED-VOCAB.2, LED-VOCAB.3, LED-CRED.4): a shape problem, a field the gate derives included, is
    invalid or refused; an unknown operation that is also malformed is refused or invalid; an
    element past the 20th is invalid, refused or not counted; an integral ``afterDays`` such as
    ``7.0`` is an integer or a shape problem; a body only a broad credential form matches is
    refused or applied; a merge result carries no group or one target's, and a merge's or
    correction's result no session or one target's.  Two more readings leave a ledger that
    departs from a reference clause: an ``expire`` counted from one of the record's own
    instants (LED-VOCAB.4) and a ``group`` with another survivor (LED-VOCAB.5).
    """
    if index >= MAX_BATCH:
        return [(state, "invalid"), (state, "refused"), (state, None)]
    problem = shape_problem(index, element)
    if problem is not None:
        return [(state, "invalid"), (state, "refused")]
    assert isinstance(element, dict)
    op = str(element["operation"])
    if op not in VOCABULARY:
        malformed = any(k not in ("operation", "targets") for k in element) or not (
            _well_formed_targets(element)
        )
        alts: list[tuple[LedgerState, str | None]] = [(state, "refused")]
        return alts + ([(state, "invalid")] if malformed else [])
    out = _applied_alternatives(state, scope_key, element, now)
    if _has_integral_float(element):
        out += [(state, "invalid"), (state, "refused")]
    return out


def _applied_alternatives(
    state: LedgerState, scope_key: str, element: dict[str, object], now: int
) -> list[tuple[LedgerState, str | None]]:
    """A well-shaped element through the gate: refused, declined or applied (with every
    allowed form of what it writes)."""
    op = str(element.get("operation"))
    body = element.get("body")
    refusal_reason = gate_problem(state, scope_key, op, element)
    if refusal_reason is not None:
        out: list[tuple[LedgerState, str | None]] = [(state, "refused")]
        only_credential = gate_problem(state, scope_key, op, {**element, "body": "x"}) is None
        lenient_ok = (
            only_credential
            and isinstance(body, str)
            and credential_verdict(trim_body(body), state.credential_exempt) == "either"
        )
        narrower = narrower_reading(state, body) if only_credential else None
        if narrower is not None and not lenient_ok:
            # a store whose detector leaves this shape out applies it (LED-CRED.6)
            return out + _applied_alternatives(narrower, scope_key, element, now)
        if not lenient_ok:
            return out
    else:
        out = []
    if op == "keep":
        return out + [(state, "declined")]
    targets = _targets(state, scope_key, element)
    if op == "merge":
        assert isinstance(body, str)
        groups = [None] + sorted({t.conflict_group for t in targets if t.conflict_group})
        sessions = [None] + sorted({t.source_session_id for t in targets if t.source_session_id})
        for g in groups:
            for sid in sessions:
                merged = apply_merge(state, targets, body, now, group=g, session_id=sid)
                out.append((merged, "applied"))
        return out
    if op == "correct":
        assert isinstance(body, str)
        old = targets[0]
        for sid in dict.fromkeys([None, old.source_session_id]):
            new_state, _new = replace_with(
                state,
                old,
                now,
                body=trim_body(body),
                kind=old.kind,
                provenance="model_consolidation",
                session_id=sid,
            )
            out.append((new_state, "applied"))
        return out
    applied = apply_element(state, scope_key, op, element, now)
    if op == "expire":
        return out + [(applied, "applied"), *_expiry_departures(state, targets[0], element, now)]
    if op == "group":
        subject = element["subject"]
        assert isinstance(subject, str)
        return out + [(applied, "applied"), *_group_departures(state, targets, subject, now)]
    return out + [(applied, "applied")]


def _group_departures(
    state: LedgerState, targets: list[LedgerRecord], subject: str, now: int
) -> list[tuple[LedgerState, str | None]]:
    """``group`` with another member surviving (LED-VOCAB.5).  The seed says that one member
    survives and the others are superseded by it, not which: the reference keeps the one
    updated most recently, so each other member surviving is a ledger that departs from
    LED-VOCAB.5."""
    scope_key = targets[0].scope_key
    members = group_members(state, scope_key, targets, subject)
    own = max(members.values(), key=lambda r: (r.updated_at, r.seq))
    departed = replace(state, departures=state.departures | {"LED-VOCAB.5"})
    return [
        (apply_group(departed, scope_key, targets, subject, now, survivor_id=rid), "applied")
        for rid in members
        if rid != own.id
    ]


def _expiry_departures(
    state: LedgerState, rec: LedgerRecord, element: dict[str, object], now: int
) -> list[tuple[LedgerState, str | None]]:
    """``expire`` counted from one of the record's own instants (its ``createdAt``,
    ``validFrom`` or ``updatedAt``) instead of the run instant (LED-VOCAB.4).  The seed does
    not say where ``afterDays`` counts from and the reference counts from the run instant, so
    each other reading is a ledger that departs from LED-VOCAB.4."""
    days = json_int(element["afterDays"])
    assert days is not None
    out: list[tuple[LedgerState, str | None]] = []
    for base in dict.fromkeys((rec.created_at, rec.valid_from, rec.updated_at)):
        if base == now:
            continue  # the reference's own expiry
        moved = replace(rec, expires_at=base + days * MS_PER_DAY, updated_at=now)
        departed = replace(state, departures=state.departures | {"LED-VOCAB.4"})
        out.append((put_record(departed, moved), "applied"))
    return out


def batch_alternatives(
    state: LedgerState, scope_key: str, operations: Sequence[object], now: int
) -> list[tuple[LedgerState, list[Counts]]]:
    """Every allowed end state of a batch with the counts it may report in it; the model's own
    (``apply_batch``) state first, with its own counts first.

    Verdicts that change nothing (invalid, refused, not counted) only widen the counts; choices
    that write differently are separate states.  At most :data:`MAX_BRANCHES` states are kept,
    those departing from fewer reference clauses first (``LedgerState.departures``), so a
    departing reading never crowds out one the reference allows.
    """
    branches: dict[LedgerState, dict[Counts, None]] = {state: {(0, 0, 0, 0): None}}
    for i, element in enumerate(operations):
        candidates = [
            (new_state, verdict, counts_seen)
            for st, counts_seen in branches.items()
            for new_state, verdict in element_alternatives(st, scope_key, i, element, now)
        ]
        candidates.sort(key=lambda c: len(c[0].departures))  # stable: the model's own first
        nxt: dict[LedgerState, dict[Counts, None]] = {}
        for new_state, verdict, counts_seen in candidates:
            if len(nxt) >= MAX_BRANCHES and new_state not in nxt:
                continue
            bucket = nxt.setdefault(new_state, {})
            for counts in counts_seen:
                c = list(counts)
                if verdict is not None:
                    c[_SLOT[verdict]] += 1
                bucket.setdefault((c[0], c[1], c[2], c[3]), None)
        branches = nxt
    return [(st, list(counts)) for st, counts in branches.items()]
