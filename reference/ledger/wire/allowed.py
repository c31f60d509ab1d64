"""Every answer a conforming store may give to one call: the model's own first, then each open
point of ``specs/ledger.md`` that changes what the ledger holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Final

from reference.ledger.consolidation import (
    apply_batch,
    batch_alternatives,
)
from reference.ledger.credentials import CREDENTIAL_MESSAGE
from reference.ledger.lifecycle import credential_shown, narrower_reading
from reference.ledger.outcome import (
    Ok,
    Outcome,
    Refused,
    bad_value,
    invalid_params,
    refusal,
)
from reference.ledger.records import (
    SCOPE_LOCAL,
    LedgerState,
    find_in_scope,
    settings_for,
    with_settings,
)
from reference.ledger.timefmt import parse_rfc3339
from reference.ledger.wire.handle import check_params, handle, lone_surrogate_param
from reference.ledger.wire.methods import (
    LIST_STATUSES,
    METHODS,
    TEST_METHODS,
    propose_call,
    save_call,
    str_param,
    supersede_call,
)
from reference.ledger.wire.render import settings_answer

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
    results (:func:`~reference.ledger.consolidation.batch_alternatives`), with an ``expire``'s
    instant and a ``group``'s survivor as ledgers that depart from the reference
    (``LedgerState.departures``: LED-VOCAB.4, LED-VOCAB.5).
    """
    out: list[Answer] = [handle(state, method, params, now)]
    spec = METHODS.get(method) or TEST_METHODS.get(method)
    if spec is None:
        return out
    if isinstance(params, list) and len(params) <= len(spec.params):
        # JSON-RPC by-position params, filled in the order the method lists them (LED-WIRE.11)
        names = list(spec.params)[: len(params)]
        return _dedupe(out + allowed(state, method, dict(zip(names, params, strict=True)), now))
    if not isinstance(params, dict):
        return out
    if not spec.params and params == {}:
        out.append((state, invalid_params("this method takes no params")))  # LED-WIRE.12
    out += _real_protocol(state, method, params, now)
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
    if method in _BODY_METHODS:
        out = _credential_readings(state, method, params, now, out)
    return _dedupe(out)


#: A store may trim these params before reading them; a blank ``kind`` is then absent
#: (LED-WIRE.13).
_TRIMMED: Final = ("kind", "scopeKey")


def _real_protocol(
    state: LedgerState, method: str, params: dict[str, object], now: int
) -> list[Answer]:
    """The readings of a ledger built like the real one (CLARIFICATIONS, "The real ledger's
    protocol"): ``kind``/``scopeKey`` trimmed (LED-WIRE.13); a ``sessionId`` the store does not
    know refused (LED-WIRE.14) and a ``harness`` it does not offer refused (LED-WIRE.15), each
    in a ledger departing from the reference's acceptance, so the run follows the store."""
    out: list[Answer] = []
    trimmed = {k: v.strip() for k, v in params.items() if k in _TRIMMED and isinstance(v, str)}
    if any(params[k] != v for k, v in trimmed.items()):
        q = {**params, **{k: v for k, v in trimmed.items() if v or k != "kind"}}
        if trimmed.get("kind") == "":
            q.pop("kind")
        out += allowed(state, method, q, now)
    session = params.get("sessionId")
    if method == "memory/save_memory_record" and isinstance(session, str) and session.strip():
        departed = replace(state, departures=state.departures | {"LED-WIRE.14"})
        out.append((departed, refusal(f"Session '{session}' does not exist.")))
    harness = params.get("harness")
    if (
        method == "memory/update_consolidation_settings"
        and isinstance(harness, str)
        and harness.strip()
    ):
        departed = replace(state, departures=state.departures | {"LED-WIRE.15"})
        out.append((departed, refusal(f"Harness '{harness}' cannot run consolidation.")))
    return out


def _credential_refusal(outcome: Outcome) -> bool:
    """Whether ``outcome`` is a credential refusal and nothing else (LED-CRED.2)."""
    return isinstance(outcome, Refused) and outcome.allowed_messages == frozenset(
        {CREDENTIAL_MESSAGE}
    )


#: The calls that write a body the credential detector checks (LED-CRED.2).
_BODY_METHODS: Final = frozenset(
    {"memory/save_memory_record", "memory/supersede_memory_record", "_test/propose"}
)


def _credential_readings(
    state: LedgerState, method: str, params: dict[str, object], now: int, out: list[Answer]
) -> list[Answer]:
    """A credential refusal that one detector alone explains shows the store applies that
    detector (its ledger remembers it, LED-CRED.2); a store whose detector is narrower may
    store the body instead, in a ledger departing from LED-CRED.1 (LED-CRED.6)."""
    if not _credential_refusal(out[0][1]):
        return out
    body = params.get("body")
    out = [(credential_shown(st, body) if _credential_refusal(o) else st, o) for st, o in out]
    narrower = narrower_reading(state, body)
    if narrower is not None:
        out += allowed(narrower, method, params, now)
    return out


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
    """The answers without repeats (same state, same outcome), in order."""
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
    """A body only a broad credential form matches may be stored (LED-CRED.4)."""
    return [save_call(state, p, now, lenient_credentials=True)]


def _foreign_scope(
    state: LedgerState, p: dict[str, object], listing: Callable[[], Outcome | None]
) -> list[Answer]:
    """A scope the binding never writes lists empty or is refused (LED-LIST.3, LED-ASOF.3)."""
    scope = str_param(p, "scopeKey")
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
    """A scope other than ``account:local`` lists empty or is refused (LED-LIST.3)."""
    status = str_param(p, "status") or "active"

    def empty() -> Outcome | None:
        """The empty listing of the foreign scope, when the call is otherwise valid."""
        if status not in LIST_STATUSES:
            return None
        return Ok({"scopeKey": str_param(p, "scopeKey"), "records": []})

    return _foreign_scope(state, p, empty)


def _open_as_of(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    """A scope other than ``account:local`` reads empty or is refused (LED-ASOF.3)."""
    at = str_param(p, "at")

    def empty() -> Outcome | None:
        """The empty listing of the foreign scope, when the call is otherwise valid."""
        if at is None or parse_rfc3339(at) is None:
            return None
        return Ok({"scopeKey": str_param(p, "scopeKey"), "records": []})

    return _foreign_scope(state, p, empty)


def _open_delete(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    """The delete answer may carry the body it forgot; later reads never do (LED-FORGET.3)."""
    rid = str_param(p, "recordId")
    assert rid is not None
    before = find_in_scope(state, SCOPE_LOCAL, rid)
    new_state, outcome = handle(state, "memory/delete_memory_record", p, now)
    if before is None or not isinstance(outcome, Ok) or not isinstance(outcome.result, dict):
        return []
    return [(new_state, Ok({**outcome.result, "body": before.body}))]


def _open_supersede(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    """The successor may keep the predecessor's source session (LED-EDIT.1), a broad credential
    form may be stored (LED-CRED.4)."""
    out: list[Answer] = []
    for carry in (False, True):
        for lenient in (False, True):
            if carry or lenient:
                out.append(
                    supersede_call(state, p, now, lenient_credentials=lenient, carry_session=carry)
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
    """A broad credential form may be stored (LED-CRED.4), the ranges left unchecked
    (LED-WIRE.7)."""
    out: list[Answer] = []
    for lenient in (False, True):
        for ranges in (True, False):
            if lenient or not ranges:
                out.append(
                    propose_call(state, p, now, lenient_credentials=lenient, check_ranges=ranges)
                )
    return out


def _open_consolidate(state: LedgerState, p: dict[str, object], now: int) -> list[Answer]:
    """Every count a batch may report, with the ledger each leaves (LED-GATE.1, LED-GATE.6)."""
    ops = p["operations"]
    assert isinstance(ops, list)
    _state, report = apply_batch(state, SCOPE_LOCAL, ops, now)  # the model's own pick, and why
    why = tuple((r.verdict, r.reason) for r in report.elements)
    out: list[Answer] = []
    for st, counts in batch_alternatives(state, SCOPE_LOCAL, ops, now):
        results = tuple(
            {"applied": c[0], "invalid": c[1], "refused": c[2], "declined": c[3]} for c in counts
        )
        out.append((st, Ok(results[0], one_of=results, elements=why)))
    return out


_OPEN: Final[dict[str, Callable[[LedgerState, dict[str, object], int], list[Answer]]]] = {
    "memory/save_memory_record": _open_save,
    "memory/list_memory_records": _open_list,
    "memory/list_memory_records_as_of": _open_as_of,
    "memory/delete_memory_record": _open_delete,
    "memory/supersede_memory_record": _open_supersede,
    "memory/update_consolidation_settings": _open_settings,
    "_test/propose": _open_propose,
    "_test/consolidate": _open_consolidate,
}
"""Per method, the allowed answers besides the model's own (each an open point of the spec)."""
