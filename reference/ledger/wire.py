"""The ledger binding as one pure function: ``handle(state, method, params, now)``.

Covers every method of the binding (LED-WIRE.1) and the test controls (LED-WIRE.7), so a
harness drives this model and a store with the same calls.  Params and results are camelCase
JSON values; times are RFC 3339 UTC with milliseconds (LED-WIRE.5).  Checks run in this order:
the method exists (else -32601); params is an object (absent = ``{}``); no unknown param, no
missing required param, no JSON ``null``, every value of its JSON type (else -32602 only,
LED-WIRE.2); then the method's own rules, where a bad value may be answered with 1000 or
-32602 and several applicable refusals may be reported in any order (LED-WIRE.3).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from .consolidation import apply_batch, batch_alternatives, json_int, update_settings
from .expiry import set_expiry, sweep_expired
from .intervals import list_as_of
from .lifecycle import approve, delete, list_records, propose, reject, save, supersede
from .outcome import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Ok,
    Outcome,
    Refused,
    bad_value,
    invalid_params,
    refusal,
)
from .packet import build_packet
from .records import (
    MAX_SCOPE_KEY,
    SCOPE_LOCAL,
    ConsolidationSettings,
    LedgerRecord,
    LedgerState,
    empty_state,
    find_in_scope,
    held,
    settings_for,
    with_settings,
)
from .timefmt import format_rfc3339, parse_rfc3339

__all__ = [
    "INVALID_PARAMS",
    "allowed",
    "METHODS",
    "TEST_METHODS",
    "Ok",
    "Outcome",
    "Refused",
    "check_params",
    "handle",
    "record_to_wire",
    "settings_to_wire",
]

LIST_STATUSES: Final[tuple[str, ...]] = ("active", "proposed")

# JSON types of params: "string", "integer" (JavaScript sense), "boolean", "array".
_ParamSpec = dict[str, tuple[str, bool]]  # name -> (json type, required)


@dataclass(frozen=True)
class _Method:
    params: _ParamSpec
    run: Callable[[LedgerState, dict[str, object], int], tuple[LedgerState, Outcome]]
    nullable: frozenset[str] = frozenset()


# --- rendering --------------------------------------------------------------------------------

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


def _record_outcome(
    state: LedgerState, answer: tuple[LedgerState, LedgerRecord | Refused]
) -> tuple[LedgerState, Outcome]:
    new_state, result = answer
    if isinstance(result, Refused):
        return state, result
    return new_state, Ok(record_to_wire(result))


def _str(params: Mapping[str, object], name: str) -> str | None:
    v = params.get(name)
    return v if isinstance(v, str) else None


def _int(params: Mapping[str, object], name: str) -> int | None:
    return json_int(params[name]) if name in params else None


def _scope_problem(scope_key: str) -> Refused | None:
    if not 0 < len(scope_key) <= MAX_SCOPE_KEY:
        return bad_value(f"scopeKey must be 1-{MAX_SCOPE_KEY} characters.")
    return None


def _instant(params: Mapping[str, object], name: str) -> int | Refused:
    text = _str(params, name)
    assert text is not None
    ms = parse_rfc3339(text)
    if ms is None:
        return bad_value(f"{name} must be an RFC 3339 date-time.")
    return ms


# --- methods --------------------------------------------------------------------------------


def _save(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    body = _str(p, "body")
    assert body is not None
    return _record_outcome(
        state, save(state, body, now, kind=_str(p, "kind"), session_id=_str(p, "sessionId"))
    )


def _list(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    scope = _str(p, "scopeKey")
    assert scope is not None
    status = _str(p, "status")
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
    def run(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
        rid = _str(p, "recordId")
        assert rid is not None
        return _record_outcome(state, fn(state, SCOPE_LOCAL, rid, now))

    return run


def _supersede(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    rid, body = _str(p, "recordId"), _str(p, "body")
    assert rid is not None and body is not None
    return _record_outcome(
        state, supersede(state, SCOPE_LOCAL, rid, body, now, kind=_str(p, "kind"))
    )


def _as_of(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    scope = _str(p, "scopeKey")
    assert scope is not None
    problem = _scope_problem(scope)
    if problem is not None:
        return state, problem
    at = _instant(p, "at")
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
    return state, settings_answer(state, SCOPE_LOCAL)


def _update_settings(
    state: LedgerState, p: dict[str, object], now: int
) -> tuple[LedgerState, Outcome]:
    mode = _str(p, "mode")
    assert mode is not None
    allow = p.get("allowRemoval")
    new_state, result = update_settings(
        state,
        SCOPE_LOCAL,
        mode,
        now,
        harness=_str(p, "harness"),
        model=_str(p, "model"),
        max_records=_int(p, "maxRecords"),
        allow_removal=allow if isinstance(allow, bool) else None,
        debounce_seconds=_int(p, "debounceSeconds"),
    )
    if isinstance(result, Refused):
        return state, result
    return new_state, settings_answer(new_state, SCOPE_LOCAL)


def _reset(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    return empty_state(), Ok({"ok": True})


def _set_clock(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    # The clock is the server's concern; the model only echoes the instant it will be given.
    if p.get("now") is None:
        return state, Ok({"now": format_rfc3339(now)})
    at = _instant(p, "now")
    if isinstance(at, Refused):
        return state, at
    return state, Ok({"now": format_rfc3339(at)})


def _sweep(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    at = _instant(p, "at")
    if isinstance(at, Refused):
        return state, at
    new_state, ids = sweep_expired(state, at)
    return new_state, Ok({"expired": list(ids)})


def _propose(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    body = _str(p, "body")
    assert body is not None
    return _record_outcome(
        state,
        propose(
            state,
            SCOPE_LOCAL,
            body,
            now,
            kind=_str(p, "kind"),
            session_id=_str(p, "sessionId"),
            confidence_bps=_int(p, "confidenceBps"),
            rationale=_str(p, "rationale"),
            conflict_group=_str(p, "conflictGroup"),
        ),
    )


def _set_expiry(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    rid = _str(p, "recordId")
    assert rid is not None
    at = _instant(p, "expiresAt")
    if isinstance(at, Refused):
        return state, at
    return _record_outcome(state, set_expiry(state, SCOPE_LOCAL, rid, at, now))


def _consolidate(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    ops = p["operations"]
    assert isinstance(ops, list)
    new_state, report = apply_batch(state, SCOPE_LOCAL, ops, now)
    c = report.counts
    return new_state, Ok(
        {"applied": c.applied, "invalid": c.invalid, "refused": c.refused, "declined": c.declined}
    )


def _packet(state: LedgerState, p: dict[str, object], now: int) -> tuple[LedgerState, Outcome]:
    packet = build_packet(state, SCOPE_LOCAL)
    return state, Ok({"lines": list(packet.lines), "text": packet.text})


METHODS: Final[dict[str, _Method]] = {
    "memory/save_memory_record": _Method(
        {"body": ("string", True), "kind": ("string", False), "sessionId": ("string", False)},
        _save,
    ),
    "memory/list_memory_records": _Method(
        {"scopeKey": ("string", True), "status": ("string", False)}, _list
    ),
    "memory/delete_memory_record": _Method({"recordId": ("string", True)}, _by_id(delete)),
    "memory/supersede_memory_record": _Method(
        {"recordId": ("string", True), "body": ("string", True), "kind": ("string", False)},
        _supersede,
    ),
    "memory/approve_memory_record": _Method({"recordId": ("string", True)}, _by_id(approve)),
    "memory/reject_memory_record": _Method({"recordId": ("string", True)}, _by_id(reject)),
    "memory/list_memory_records_as_of": _Method(
        {"scopeKey": ("string", True), "at": ("string", True)}, _as_of
    ),
    "memory/get_consolidation_settings": _Method({}, _get_settings),
    "memory/update_consolidation_settings": _Method(
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

TEST_METHODS: Final[dict[str, _Method]] = {
    "_test/reset": _Method({}, _reset),
    "_test/set_clock": _Method({"now": ("string", True)}, _set_clock, frozenset({"now"})),
    "_test/sweep": _Method({"at": ("string", True)}, _sweep),
    "_test/propose": _Method(
        {
            "body": ("string", True),
            "kind": ("string", False),
            "sessionId": ("string", False),
            "confidenceBps": ("integer", False),
            "rationale": ("string", False),
            "conflictGroup": ("string", False),
        },
        _propose,
    ),
    "_test/set_expiry": _Method(
        {"recordId": ("string", True), "expiresAt": ("string", True)}, _set_expiry
    ),
    "_test/consolidate": _Method({"operations": ("array", True)}, _consolidate),
    "_test/packet": _Method({}, _packet),
}
"""The test controls a store serves under ``--test-control`` (LED-WIRE.7)."""


def _type_ok(value: object, json_type: str) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "integer":
        return json_int(value) is not None
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "array":
        return isinstance(value, list)
    raise AssertionError(json_type)


def _has_lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    return False


def lone_surrogate_param(params: object) -> str | None:
    """The first param whose name or value holds a lone surrogate, or None (LED-WIRE.2)."""
    if not isinstance(params, dict):
        return None
    for name, value in params.items():
        if _has_lone_surrogate(name) or _has_lone_surrogate(value):
            return str(name) if not _has_lone_surrogate(name) else "a param name"
    return None


def check_params(
    method: _Method, params: object, *, text_only: bool = True
) -> dict[str, object] | Refused:
    """Structural checks shared by every method; -32602 only (LED-WIRE.2, LED-SAVE.2).

    ``text_only``: a string holding a lone surrogate is -32602 (the model's answer; a store may
    instead handle it as any other string, :func:`allowed`)."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return invalid_params("params must be a JSON object.")
    bad_text = lone_surrogate_param(params) if text_only else None
    if bad_text is not None:
        return invalid_params(f"{bad_text} is not valid text (a lone surrogate).")
    unknown = sorted(str(k) for k in params if k not in method.params)
    if unknown:
        if "scopeKey" in unknown:
            return invalid_params("scopeKey cannot be passed here: the server chooses the scope.")
        return invalid_params(f"unknown param(s): {', '.join(unknown)}")
    for name, (json_type, required) in method.params.items():
        if name not in params:
            if required:
                return invalid_params(f"missing param: {name}")
            continue
        value = params[name]
        if value is None:
            if name in method.nullable:
                continue
            return invalid_params(f"{name} cannot be null.")
        if not _type_ok(value, json_type):
            return invalid_params(f"{name} must be a JSON {json_type}.")
    return {str(k): v for k, v in params.items()}


def handle(
    state: LedgerState, method: str, params: object, now: int, *, text_only: bool = True
) -> tuple[LedgerState, Outcome]:
    """Answer one binding call at instant ``now`` (LED-WIRE.1-.8).

    Returns the new state and ``Ok(result)`` or ``Refused``; on a refusal the state is the one
    passed in, unchanged.
    """
    spec = METHODS.get(method) or TEST_METHODS.get(method)
    if spec is None:
        return state, Refused(
            METHOD_NOT_FOUND, f"Method not found: {method}", frozenset({METHOD_NOT_FOUND})
        )
    checked = check_params(spec, params, text_only=text_only)
    if isinstance(checked, Refused):
        return state, checked
    new_state, outcome = spec.run(state, checked, now)
    if isinstance(outcome, Refused):
        assert new_state is state
    return new_state, outcome


# --- every allowed answer --------------------------------------------------------------------

Answer = tuple[LedgerState, Outcome]


def allowed(state: LedgerState, method: str, params: object, now: int) -> list[Answer]:
    """Every (state, answer) a conforming store may give to this call, the model's own
    (:func:`handle`) first.

    Where the spec leaves a choice that changes what the ledger then holds, each choice is its
    own pair; the harness keeps the pairs the store's answer agrees with.  The open points
    (each stated in its clause of ``specs/ledger.md``): a JSON ``null`` for an optional param is
    ``-32602`` or the param absent (LED-WIRE.2); an integral number such as ``7.0`` is an
    integer or refused (LED-WIRE.2); a scope other than ``account:local`` lists empty or is
    refused (LED-LIST.3, LED-ASOF.3); the delete answer may carry the forgotten body
    (LED-FORGET.3); an edit's successor may keep the predecessor's source session (LED-EDIT.1);
    a body only a broad credential form matches is stored or refused (LED-CRED.4); the
    settings' omitted or ``""`` harness/model and ``propose`` without them (LED-CONS.2); the test
    controls' range checks and stamps (LED-WIRE.7); a batch's open element verdicts and merge
    results (:func:`~reference.ledger.consolidation.batch_alternatives`).
    """
    out: list[Answer] = [handle(state, method, params, now)]
    spec = METHODS.get(method) or TEST_METHODS.get(method)
    if spec is None or not isinstance(params, dict):
        return out
    if lone_surrogate_param(params) is not None:
        return _dedupe(out + _as_any_string(state, method, params, now))
    nulls = [
        k
        for k, v in params.items()
        if v is None and k in spec.params and not spec.params[k][1] and k not in spec.nullable
    ]
    if nulls:
        out += allowed(state, method, {k: v for k, v in params.items() if k not in nulls}, now)
    checked = check_params(spec, params)
    if isinstance(checked, Refused):
        return _dedupe(out)
    floats = [
        k
        for k, (t, _req) in spec.params.items()
        if t == "integer" and isinstance(checked.get(k), float)
    ]
    if floats:
        out.append((state, bad_value(f"{floats[0]} must be an integer.")))
    more = _OPEN.get(method)
    if more is not None:
        extra = more(state, checked, now)
        if method == "_test/consolidate":
            out = extra + out[1:]  # the same first state, with every count it may report
        else:
            out += extra
    return _dedupe(out)


def _as_any_string(state: LedgerState, method: str, params: object, now: int) -> list[Answer]:
    """The answers of a store that handles a lone surrogate as any other string (LED-WIRE.2)."""
    first = handle(state, method, params, now, text_only=False)
    spec = METHODS.get(method) or TEST_METHODS.get(method)
    assert spec is not None and isinstance(params, dict)
    checked = check_params(spec, params, text_only=False)
    more = _OPEN.get(method)
    if isinstance(checked, Refused) or more is None:
        return [first]
    extra = more(state, checked, now)
    return extra if method == "_test/consolidate" else [first, *extra]


def _dedupe(answers: list[Answer]) -> list[Answer]:
    seen: set[tuple[LedgerState, str]] = set()
    out: list[Answer] = []
    for st, outcome in answers:
        key = (st, repr(outcome))
        if key in seen:
            continue
        seen.add(key)
        out.append((st, outcome))
    return out


def _open_save(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    body = _str(p, "body")
    assert body is not None
    kind, sid = _str(p, "kind"), _str(p, "sessionId")
    return [
        _record_outcome(
            state, save(state, body, now, kind=kind, session_id=sid, lenient_credentials=True)
        )
    ]


def _foreign_scope(
    state: LedgerState, p: dict[str, object], listing: Callable[[], Outcome | None]
) -> list[Answer]:
    """A scope the binding never writes lists empty or is refused (LED-LIST.3, LED-ASOF.3)."""
    scope = _str(p, "scopeKey")
    if scope is None or scope == SCOPE_LOCAL:
        return []
    out: list[Answer] = [
        (state, bad_value(f"scopeKey must be '{SCOPE_LOCAL}': no other scope is served."))
    ]
    empty = listing()
    if empty is not None:
        out.append((state, empty))
    return out


def _open_list(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    status = _str(p, "status") or "active"

    def empty() -> Outcome | None:
        if status not in LIST_STATUSES:
            return None
        return Ok({"scopeKey": _str(p, "scopeKey"), "records": []})

    return _foreign_scope(state, p, empty)


def _open_as_of(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    at = _str(p, "at")

    def empty() -> Outcome | None:
        if at is None or parse_rfc3339(at) is None:
            return None
        return Ok({"scopeKey": _str(p, "scopeKey"), "records": []})

    return _foreign_scope(state, p, empty)


def _open_delete(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    """The delete answer may carry the body it forgot; later reads never do (LED-FORGET.3)."""
    rid = _str(p, "recordId")
    assert rid is not None
    before = find_in_scope(state, SCOPE_LOCAL, rid)
    new_state, outcome = handle(state, "memory/delete_memory_record", p, now)
    if before is None or not isinstance(outcome, Ok) or not isinstance(outcome.result, dict):
        return []
    return [(new_state, Ok({**outcome.result, "body": before.body}))]


def _open_supersede(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    rid, body = _str(p, "recordId"), _str(p, "body")
    assert rid is not None and body is not None
    out: list[Answer] = []
    for carry in (False, True):
        for lenient in (False, True):
            if carry or lenient:
                out.append(
                    _record_outcome(
                        state,
                        supersede(
                            state,
                            SCOPE_LOCAL,
                            rid,
                            body,
                            now,
                            kind=_str(p, "kind"),
                            lenient_credentials=lenient,
                            carry_session=carry,
                        ),
                    )
                )
    return out


def _open_settings(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    """An omitted harness/model kept or cleared, ``""`` refused or unset, ``propose`` without
    a harness or model accepted or refused (LED-CONS.2)."""
    method = "memory/update_consolidation_settings"
    omitted = [n for n in ("harness", "model") if n not in p]
    blank = [n for n in ("harness", "model") if p.get(n) == ""]
    out: list[Answer] = []
    for clear_omitted in (False, True) if omitted else (False,):
        for blank_unsets in (False, True) if blank else (False,):
            for propose_needs in (False, True):
                if not (clear_omitted or blank_unsets or propose_needs):
                    continue
                q = {k: v for k, v in p.items() if not (blank_unsets and k in blank)}
                clear = (omitted if clear_omitted else []) + (blank if blank_unsets else [])
                st, outcome = handle(state, method, q, now)
                if isinstance(outcome, Ok) and clear:
                    s = settings_for(st, SCOPE_LOCAL)
                    s = replace(
                        s,
                        harness=None if "harness" in clear else s.harness,
                        model=None if "model" in clear else s.model,
                    )
                    st = with_settings(st, SCOPE_LOCAL, s)
                    outcome = settings_answer(st, SCOPE_LOCAL)
                if propose_needs:
                    s = settings_for(st, SCOPE_LOCAL)
                    if not isinstance(outcome, Ok) or s.mode != "propose":
                        continue
                    if s.harness is not None and s.model is not None:
                        continue
                    st, outcome = (
                        state,
                        bad_value(
                            "Consolidation needs a harness and a model before it can propose."
                        ),
                    )
                out.append((st, outcome))
    return out


def _open_propose(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    body = _str(p, "body")
    assert body is not None
    out: list[Answer] = []
    for lenient in (False, True):
        for ranges in (True, False):
            if lenient or not ranges:
                out.append(
                    _record_outcome(
                        state,
                        propose(
                            state,
                            SCOPE_LOCAL,
                            body,
                            now,
                            kind=_str(p, "kind"),
                            session_id=_str(p, "sessionId"),
                            confidence_bps=_int(p, "confidenceBps"),
                            rationale=_str(p, "rationale"),
                            conflict_group=_str(p, "conflictGroup"),
                            lenient_credentials=lenient,
                            check_ranges=ranges,
                        ),
                    )
                )
    return out


def _open_set_expiry(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    rid = _str(p, "recordId")
    assert rid is not None
    at = _instant(p, "expiresAt")
    if isinstance(at, Refused):
        return []
    out: list[Answer] = []
    for check in (True, False):
        for touch in (True, False):
            if check and touch:
                continue
            out.append(
                _record_outcome(
                    state,
                    set_expiry(
                        state, SCOPE_LOCAL, rid, at, now, check_range=check, touch_updated=touch
                    ),
                )
            )
    return out


def _open_consolidate(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    ops = p["operations"]
    assert isinstance(ops, list)
    out: list[Answer] = []
    for st, counts in batch_alternatives(state, SCOPE_LOCAL, ops, now):
        results = tuple(
            {"applied": c[0], "invalid": c[1], "refused": c[2], "declined": c[3]} for c in counts
        )
        out.append((st, Ok(results[0], one_of=results)))
    return out


_OPEN: Final[dict[str, Callable[[LedgerState, dict[str, object], int], list[Answer]]]] = {
    "memory/save_memory_record": _open_save,
    "memory/list_memory_records": _open_list,
    "memory/list_memory_records_as_of": _open_as_of,
    "memory/delete_memory_record": _open_delete,
    "memory/supersede_memory_record": _open_supersede,
    "memory/update_consolidation_settings": _open_settings,
    "_test/propose": _open_propose,
    "_test/set_expiry": _open_set_expiry,
    "_test/consolidate": _open_consolidate,
}
"""Per method, the allowed answers besides the model's own (each an open point of the spec)."""


_SLASH: Final = re.compile(r"(\S+)(?:\s+(.*))?", re.DOTALL)


def slash_command(text: str) -> tuple[str, dict[str, object]] | Refused | None:
    """The Bridge's pin commands as binding calls (LED-WIRE.9).

    ``/pin <text>`` is a save of ``<text>``, ``/pins`` the listing of ``account:local`` and
    ``/unpin <id>`` the tombstone of ``<id>``.  Anything else -- Claude's ``/memory``
    included -- is not a ledger command and answers ``None`` (left to the harness); a pin
    command with the wrong arguments is refused with a usage line.  Either way nothing here
    picks or switches a harness: the answer is a ledger call or nothing.
    """
    m = _SLASH.fullmatch(text.strip())
    if m is None:
        return None
    word, rest = m.group(1), m.group(2) or ""
    if word == "/pin":
        return "memory/save_memory_record", {"body": rest}
    if word == "/pins":
        if rest:
            return refusal("Usage: /pins (it takes no arguments).")
        return "memory/list_memory_records", {"scopeKey": SCOPE_LOCAL}
    if word == "/unpin":
        if not rest or any(ch.isspace() for ch in rest):
            return refusal("Usage: /unpin <id>.")
        return "memory/delete_memory_record", {"recordId": rest}
    return None
