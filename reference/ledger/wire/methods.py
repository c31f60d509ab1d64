"""The binding's methods and test controls: their params, and each one's model answer.

``METHODS`` (LED-WIRE.1, LED-WIRE.2) and ``TEST_METHODS`` (LED-WIRE.7) map a method name to
its param specification and the function that answers it from the ledger model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from reference.ledger.consolidation import (
    apply_batch,
    json_int,
    update_settings,
)
from reference.ledger.expiry import sweep_expired
from reference.ledger.intervals import list_as_of
from reference.ledger.lifecycle import (
    approve,
    delete,
    list_records,
    propose,
    reject,
    save,
    supersede,
)
from reference.ledger.outcome import (
    Ok,
    Outcome,
    Refused,
    bad_value,
)
from reference.ledger.packet import build_packet
from reference.ledger.records import (
    MAX_SCOPE_KEY,
    SCOPE_LOCAL,
    LedgerRecord,
    LedgerState,
    empty_state,
)
from reference.ledger.timefmt import format_rfc3339, parse_rfc3339
from reference.ledger.wire.render import record_to_wire, settings_answer

LIST_STATUSES: Final[tuple[str, ...]] = ("active", "proposed")

# JSON types of params: "string", "integer" (JavaScript sense), "boolean", "array".
ParamSpec = dict[str, tuple[str, bool]]  # name -> (json type, required)


@dataclass(frozen=True)
class Method:
    """A method's params (name -> JSON type, required), its model answer, and the params that
    may be ``null`` (LED-WIRE.2)."""

    params: ParamSpec
    run: Callable[[LedgerState, dict[str, object], int], tuple[LedgerState, Outcome]]
    nullable: frozenset[str] = frozenset()


def record_outcome(
    state: LedgerState, answer: tuple[LedgerState, LedgerRecord | Refused]
) -> tuple[LedgerState, Outcome]:
    """A lifecycle answer as a binding outcome: the record on the wire, or the refusal with the
    state unchanged (LED-WIRE.3, LED-WIRE.4)."""
    new_state, result = answer
    if isinstance(result, Refused):
        return state, result
    return new_state, Ok(record_to_wire(result))


def str_param(params: Mapping[str, object], name: str) -> str | None:
    """A string param (``None`` when absent)."""
    v = params.get(name)
    return v if isinstance(v, str) else None


def int_param(params: Mapping[str, object], name: str) -> int | None:
    """An integer param in JavaScript's sense (``None`` when absent) (LED-WIRE.2)."""
    return json_int(params[name]) if name in params else None


def _scope_problem(scope_key: str) -> Refused | None:
    """A scope key of the wrong length (LED-LIST.3)."""
    if not 0 < len(scope_key) <= MAX_SCOPE_KEY:
        return bad_value(f"scopeKey must be 1-{MAX_SCOPE_KEY} characters.")
    return None


def instant_param(params: Mapping[str, object], name: str) -> int | Refused:
    """An RFC 3339 param as epoch ms, or the refusal (LED-WIRE.5)."""
    text = str_param(params, name)
    assert text is not None
    ms = parse_rfc3339(text)
    if ms is None:
        return bad_value(f"{name} must be an RFC 3339 date-time.")
    return ms


def save_call(
    state: LedgerState, p: dict[str, object], now: int, *, lenient_credentials: bool = False
) -> tuple[LedgerState, Outcome]:
    """``memory/save_memory_record`` (LED-SAVE.1); ``lenient_credentials``: a body only a broad
    credential form matches is stored (LED-CRED.4)."""
    body = str_param(p, "body")
    assert body is not None
    return record_outcome(
        state,
        save(
            state,
            body,
            now,
            kind=str_param(p, "kind"),
            session_id=str_param(p, "sessionId"),
            lenient_credentials=lenient_credentials,
        ),
    )


def _list(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    """``memory/list_memory_records`` (LED-LIST.1, LED-LIST.2)."""
    scope = str_param(p, "scopeKey")
    assert scope is not None
    status = str_param(p, "status")
    if status is None:
        status = "active"
    problems = _scope_problem(scope)
    if problems is not None:
        return state, problems
    if status not in LIST_STATUSES:
        return state, bad_value("status must be 'active' or 'proposed'.")
    records = [record_to_wire(r) for r in list_records(state, scope, status)]
    return state, Ok({"scopeKey": scope, "records": records})


def _by_id(
    fn: Callable[[LedgerState, str, str, int], tuple[LedgerState, LedgerRecord | Refused]],
) -> Callable[[LedgerState, dict[str, object], int], tuple[LedgerState, Outcome]]:
    """A method that acts on one record of the local scope by ``recordId`` (LED-FORGET.1,
    LED-REVIEW.2, LED-REVIEW.3)."""

    def run(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
        """``fn`` on the record ``recordId`` of the local scope."""
        rid = str_param(p, "recordId")
        assert rid is not None
        return record_outcome(state, fn(state, SCOPE_LOCAL, rid, now))

    return run


def supersede_call(
    state: LedgerState,
    p: dict[str, object],
    now: int,
    *,
    lenient_credentials: bool = False,
    carry_session: bool = False,
) -> tuple[LedgerState, Outcome]:
    """``memory/supersede_memory_record`` (LED-EDIT.1); the open choices: a broad credential
    form stored (LED-CRED.4), the predecessor's source session kept (LED-EDIT.1)."""
    rid, body = str_param(p, "recordId"), str_param(p, "body")
    assert rid is not None and body is not None
    return record_outcome(
        state,
        supersede(
            state,
            SCOPE_LOCAL,
            rid,
            body,
            now,
            kind=str_param(p, "kind"),
            lenient_credentials=lenient_credentials,
            carry_session=carry_session,
        ),
    )


def _as_of(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    """``memory/list_memory_records_as_of`` (LED-ASOF.1, LED-ASOF.2)."""
    scope = str_param(p, "scopeKey")
    assert scope is not None
    problem = _scope_problem(scope)
    if problem is not None:
        return state, problem
    at = instant_param(p, "at")
    if isinstance(at, Refused):
        return state, at
    hits = list_as_of(state, scope, at)
    tombstones = frozenset(r.id for r in hits if r.status == "deleted")
    return state, Ok(
        {"scopeKey": scope, "records": [record_to_wire(r) for r in hits]}, may_omit=tombstones
    )


def _get_settings(
    state: LedgerState, p: dict[str, object], now: int
) -> tuple[LedgerState, Outcome]:
    """``memory/get_consolidation_settings`` (LED-CONS.1, LED-CONS.2)."""
    return state, settings_answer(state, SCOPE_LOCAL)


def _update_settings(
    state: LedgerState, p: dict[str, object], now: int
) -> tuple[LedgerState, Outcome]:
    """``memory/update_consolidation_settings`` (LED-CONS.2)."""
    mode = str_param(p, "mode")
    assert mode is not None
    allow = p.get("allowRemoval")
    new_state, result = update_settings(
        state,
        SCOPE_LOCAL,
        mode,
        now,
        harness=str_param(p, "harness"),
        model=str_param(p, "model"),
        max_records=int_param(p, "maxRecords"),
        allow_removal=allow if isinstance(allow, bool) else None,
        debounce_seconds=int_param(p, "debounceSeconds"),
    )
    if isinstance(result, Refused):
        return state, result
    return new_state, settings_answer(new_state, SCOPE_LOCAL)


def _reset(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    """``_test/reset``: an empty ledger (LED-WIRE.7)."""
    return empty_state(), Ok({"ok": True})


def _set_clock(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    """``_test/set_clock``: the instant the server will be given (LED-WIRE.7)."""
    # The clock is the server's concern; the model only echoes the instant it will be given.
    if p.get("now") is None:
        return state, Ok({"now": format_rfc3339(now)})
    at = instant_param(p, "now")
    if isinstance(at, Refused):
        return state, at
    return state, Ok({"now": format_rfc3339(at)})


def _sweep(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    """``_test/sweep``: expire what is due at ``at`` (LED-EXP.2)."""
    at = instant_param(p, "at")
    if isinstance(at, Refused):
        return state, at
    new_state, ids = sweep_expired(state, at)
    return new_state, Ok({"expired": list(ids)})


def propose_call(
    state: LedgerState,
    p: dict[str, object],
    now: int,
    *,
    lenient_credentials: bool = False,
    check_ranges: bool = True,
) -> tuple[LedgerState, Outcome]:
    """``_test/propose`` (LED-REVIEW.1, LED-WIRE.7): exactly what an extractor proposal
    carries -- body, kind, confidence, rationale, session -- never a group; the open choices: a
    broad credential form stored (LED-CRED.4), the ranges left unchecked (LED-WIRE.7)."""
    body = str_param(p, "body")
    assert body is not None
    return record_outcome(
        state,
        propose(
            state,
            SCOPE_LOCAL,
            body,
            now,
            kind=str_param(p, "kind"),
            session_id=str_param(p, "sessionId"),
            confidence_bps=int_param(p, "confidenceBps"),
            rationale=str_param(p, "rationale"),
            lenient_credentials=lenient_credentials,
            check_ranges=check_ranges,
        ),
    )


def _consolidate(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    """``_test/consolidate``: apply one batch (LED-GATE.9, LED-GATE.1)."""
    ops = p["operations"]
    assert isinstance(ops, list)
    new_state, report = apply_batch(state, SCOPE_LOCAL, ops, now)
    c = report.counts
    return new_state, Ok(
        {"applied": c.applied, "invalid": c.invalid, "refused": c.refused, "declined": c.declined}
    )


def _packet(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    """``_test/packet``: the pinned-memory packet (LED-PACKET.1, LED-PACKET.5)."""
    packet = build_packet(state, SCOPE_LOCAL)
    return state, Ok({"lines": list(packet.lines), "text": packet.text})


METHODS: Final[dict[str, Method]] = {
    "memory/save_memory_record": Method(
        {"body": ("string", True), "kind": ("string", False), "sessionId": ("string", False)},
        save_call,
    ),
    "memory/list_memory_records": Method(
        {"scopeKey": ("string", True), "status": ("string", False)}, _list
    ),
    "memory/delete_memory_record": Method({"recordId": ("string", True)}, _by_id(delete)),
    "memory/supersede_memory_record": Method(
        {"recordId": ("string", True), "body": ("string", True), "kind": ("string", False)},
        supersede_call,
    ),
    "memory/approve_memory_record": Method({"recordId": ("string", True)}, _by_id(approve)),
    "memory/reject_memory_record": Method({"recordId": ("string", True)}, _by_id(reject)),
    "memory/list_memory_records_as_of": Method(
        {"scopeKey": ("string", True), "at": ("string", True)}, _as_of
    ),
    "memory/get_consolidation_settings": Method({}, _get_settings),
    "memory/update_consolidation_settings": Method(
        {
            "mode": ("string", True),
            "harness": ("string", False),
            "model": ("string", False),
            "maxRecords": ("integer", False),
            "allowRemoval": ("boolean", False),
            "debounceSeconds": ("integer", False),
        },
        _update_settings,
    ),
}
"""The binding's methods and their params (LED-WIRE.1, LED-WIRE.2)."""

TEST_METHODS: Final[dict[str, Method]] = {
    "_test/reset": Method({}, _reset),
    "_test/set_clock": Method({"now": ("string", True)}, _set_clock, frozenset({"now"})),
    "_test/sweep": Method({"at": ("string", True)}, _sweep),
    "_test/propose": Method(
        {
            "body": ("string", True),
            "kind": ("string", False),
            "sessionId": ("string", False),
            "confidenceBps": ("integer", False),
            "rationale": ("string", False),
        },
        propose_call,
    ),
    "_test/consolidate": Method({"operations": ("array", True)}, _consolidate),
    "_test/packet": Method({}, _packet),
}
"""The test controls a store serves under ``--test-control`` (LED-WIRE.7)."""
