"""The binding as a pure function: methods, param rules, codes, record shape, test controls."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger.outcome import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REFUSED,
    Ok,
    Refused,
    combine,
)
from reference.ledger.records import empty_state
from reference.ledger.search import search, searchable
from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import (
    METHODS,
    RECORD_FIELDS,
    RECORD_FIELDS_WHEN_SET,
    TEST_METHODS,
    TIME_FIELDS,
    WIRE_TIME,
    handle,
    slash_command,
)
from tests.common.ledger_strategies import (
    DAY,
    MODEL_EXPIRY,
    MODEL_GROUPED_PROPOSAL,
    T0,
    ok,
    refused,
    result_of,
    saved,
    sentence,
)

LOCAL = "account:local"
ALWAYS = set(RECORD_FIELDS)
OPTIONAL = set(RECORD_FIELDS_WHEN_SET)
TIMES = set(TIME_FIELDS)

# A valid params object for every method, to mutate.
VALID: dict[str, dict[str, Any]] = {
    "memory/save_memory_record": {"body": "x"},
    "memory/list_memory_records": {"scopeKey": LOCAL},
    "memory/delete_memory_record": {"recordId": "r"},
    "memory/supersede_memory_record": {"recordId": "r", "body": "x"},
    "memory/approve_memory_record": {"recordId": "r"},
    "memory/reject_memory_record": {"recordId": "r"},
    "memory/list_memory_records_as_of": {"scopeKey": LOCAL, "at": "2026-01-01T00:00:00.000Z"},
    "memory/get_consolidation_settings": {},
    "memory/update_consolidation_settings": {"mode": "off"},
    "_test/reset": {},
    "_test/set_clock": {"now": "2026-01-01T00:00:00.000Z"},
    "_test/sweep": {"at": "2026-01-01T00:00:00.000Z"},
    "_test/propose": {"body": "x"},
    "_test/consolidate": {"operations": []},
    "_test/packet": {},
}


@pytest.mark.clause("LED-WIRE.1", "LED-WIRE.7")
def test_method_table() -> None:
    assert set(METHODS) == {m for m in VALID if m.startswith("memory/")}
    assert set(TEST_METHODS) == {m for m in VALID if m.startswith("_test/")}
    for method in (
        "memory/search",
        "memory/save_memory_records",
        "_test/nope",
        "",
        "save_memory_record",
    ):
        new, out = handle(empty_state(), method, {}, T0)
        assert (
            isinstance(out, Refused)
            and out.allowed_codes == {METHOD_NOT_FOUND}
            and new == empty_state()
        )


@pytest.mark.clause("LED-WIRE.2")
@pytest.mark.parametrize("method", list(VALID))
def test_structural_param_errors_are_invalid_params(method: str) -> None:
    state, _ = saved(["a"])
    spec = (METHODS | TEST_METHODS)[method]
    cases: list[Any] = [[], "params", 5, {**VALID[method], "extraParam": 1}]
    for name, (json_type, required) in spec.params.items():
        if required:
            cases.append({k: v for k, v in VALID[method].items() if k != name})
        wrong = {"string": 5, "integer": "5", "boolean": 1, "array": {}}[json_type]
        cases.append({**VALID[method], name: wrong})
        if name not in spec.nullable:
            cases.append({**VALID[method], name: None})
    for params in cases:
        r = refused(state, method, params, T0 + 5)
        # params neither object nor array: JSON-RPC 2.0 calls the request invalid, so -32600 is
        # allowed beside -32602; an array (by position) and an object are params, -32602 only
        scalar = not isinstance(params, dict | list)
        want = {INVALID_PARAMS, INVALID_REQUEST} if scalar else {INVALID_PARAMS}
        assert r.allowed_codes == want, (params, r)


@pytest.mark.clause("LED-WIRE.2")
def test_absent_params_read_as_an_empty_object() -> None:
    _, out = handle(empty_state(), "memory/get_consolidation_settings", None, T0)
    assert isinstance(out, Ok)
    _, out = handle(empty_state(), "memory/save_memory_record", None, T0)
    assert isinstance(out, Refused) and out.allowed_codes == {INVALID_PARAMS}


@pytest.mark.clause("LED-WIRE.2")
@pytest.mark.parametrize(
    "value, valid", [(9000, True), (9000.0, True), (90.5, False), (True, False), ("9000", False)]
)
def test_integers_follow_javascript(value: object, valid: bool) -> None:
    new, out = handle(empty_state(), "_test/propose", {"body": "x", "confidenceBps": value}, T0)
    if valid:
        assert isinstance(out, Ok) and result_of(out)["confidenceBps"] == 9000
        assert type(result_of(out)["confidenceBps"]) is int
    else:
        assert (
            isinstance(out, Refused)
            and out.allowed_codes == {INVALID_PARAMS}
            and new == empty_state()
        )


@pytest.mark.clause("LED-WIRE.3")
def test_refused_admits_exactly_what_it_allows() -> None:
    lifecycle = Refused(REFUSED, "m", frozenset({REFUSED}))
    assert (
        lifecycle.admits(REFUSED)
        and lifecycle.admits(REFUSED, "any text")
        and not lifecycle.admits(INVALID_PARAMS)
    )
    exact = Refused(REFUSED, "m", frozenset({REFUSED}), frozenset({"m"}))
    assert exact.admits(REFUSED, "m") and not exact.admits(REFUSED, "n") and exact.admits(REFUSED)
    both = combine([exact, Refused(INVALID_PARAMS, "v", frozenset({REFUSED, INVALID_PARAMS}))])
    assert both.allowed_codes == {REFUSED, INVALID_PARAMS} and both.allowed_messages is None
    two_exact = combine([exact, Refused(REFUSED, "k", frozenset({REFUSED}), frozenset({"k"}))])
    assert two_exact.allowed_messages == frozenset({"m", "k"})
    assert (two_exact.code, two_exact.message) == (REFUSED, "m")
    with pytest.raises(ValueError):
        combine([])


@pytest.mark.clause("LED-WIRE.4", "LED-WIRE.5", "LED-WIRE.6")
@given(
    st.lists(
        st.sampled_from(
            ["save", "propose", "approve", "reject", "edit", "delete", "expire", "sweep"]
        ),
        max_size=20,
    )
)
def test_every_record_answer_has_the_wire_shape(ops: list[str]) -> None:
    state, now = empty_state(), T0
    answers: list[dict[str, Any]] = []
    for op in ops:
        now += 1000
        active = [r.id for r in state.records if r.status == "active"]
        proposed = [r.id for r in state.records if r.status == "proposed"]
        params: dict[str, Any]
        method, params = "memory/save_memory_record", {"body": f"b{now}", "sessionId": "s"}
        if op == "propose":
            method, params = (
                MODEL_GROUPED_PROPOSAL,
                {"body": "p", "confidenceBps": 5, "rationale": "r", "conflictGroup": "g"},
            )
        elif op in ("approve", "reject") and proposed:
            method, params = f"memory/{op}_memory_record", {"recordId": proposed[0]}
        elif op in ("edit", "delete", "expire") and active:
            method, params = {
                "edit": ("memory/supersede_memory_record", {"recordId": active[0], "body": "e"}),
                "delete": ("memory/delete_memory_record", {"recordId": active[0]}),
                "expire": (
                    MODEL_EXPIRY,
                    {"recordId": active[0], "expiresAt": format_rfc3339(now + DAY)},
                ),
            }[op]
        elif op == "sweep":
            state, _ = ok(state, "_test/sweep", {"at": format_rfc3339(now + 2 * DAY)}, now)
            continue
        state, out = handle(state, method, params, now)
        if isinstance(out, Ok):
            answers.append(result_of(out))
    for scope_read in (
        ("memory/list_memory_records", {"scopeKey": LOCAL}),
        ("memory/list_memory_records", {"scopeKey": LOCAL, "status": "proposed"}),
        ("memory/list_memory_records_as_of", {"scopeKey": LOCAL, "at": format_rfc3339(now)}),
    ):
        _, res = ok(state, scope_read[0], scope_read[1], now)
        assert set(res) == {"scopeKey", "records"} and res["scopeKey"] == LOCAL
        answers.extend(res["records"])
    for rec in answers:
        assert ALWAYS <= set(rec) <= ALWAYS | OPTIONAL, rec
        assert None not in rec.values()
        for k in TIMES & set(rec):
            assert WIRE_TIME.fullmatch(rec[k]), (k, rec[k])
        assert ("validTo" in rec) == (rec["status"] != "active")
        if rec["status"] == "deleted":
            assert rec["body"] == ""


@pytest.mark.clause("LED-WIRE.7")
def test_reset_and_clock_controls() -> None:
    state, _ = saved(["a", "b"])
    state, res = ok(state, "_test/reset", {}, T0 + 5)
    assert res == {"ok": True} and state == empty_state()
    _, res = ok(state, "_test/set_clock", {"now": "2026-01-01T01:00:00+01:00"}, T0 + 99)
    assert res == {"now": format_rfc3339(T0)}
    _, res = ok(state, "_test/set_clock", {"now": None}, T0 + 99)
    assert res == {"now": format_rfc3339(T0 + 99)}
    r = refused(state, "_test/set_clock", {"now": "soon"}, T0)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}


@pytest.mark.clause("LED-WIRE.8")
@given(
    st.sampled_from(list(VALID)),
    st.dictionaries(
        st.sampled_from(["body", "recordId", "scopeKey", "at", "mode", "zzz"]),
        st.one_of(st.none(), st.integers(), sentence),
    ),
)
def test_any_refusal_leaves_the_state_as_it_was(method: str, params: dict[str, Any]) -> None:
    state, _ = saved(["a", "b"])
    new, out = handle(state, method, params, T0 + 5)
    if isinstance(out, Refused):
        assert new is state


# --- search ---------------------------------------------------------------------------------


@pytest.mark.clause("LED-FTS.1", "LED-STATUS.4")
def test_search_finds_active_bodies_only() -> None:
    state, (a, b) = saved(["Deploy on Friday", "Deploy never on Monday"])
    assert {r.id for r in search(state, "deploy")} == {a, b}
    state, new = ok(
        state, "memory/supersede_memory_record", {"recordId": a, "body": "Ship on Thursday"}, T0 + 5
    )
    assert [r.id for r in search(state, "friday")] == []
    assert [r.id for r in search(state, "thursday SHIP")] == [new["id"]]
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": b}, T0 + 6)
    assert search(state, "monday") == [] and search(state, "deploy") == []
    state, p = ok(state, "_test/propose", {"body": "Prefers tabs"}, T0 + 7)
    assert search(state, "tabs") == []
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p["id"]}, T0 + 8)
    assert [r.id for r in search(state, "tabs")] == [p["id"]]
    state, _ = ok(
        state,
        MODEL_EXPIRY,
        {"recordId": p["id"], "expiresAt": format_rfc3339(T0 + 9)},
        T0 + 8,
    )
    state, _ = ok(state, "_test/sweep", {"at": format_rfc3339(T0 + 9)}, T0 + 9)
    assert search(state, "tabs") == [] and search(state, "") == []
    assert {r.id for r in searchable(state)} == {new["id"]}


def _slash(text: str) -> tuple[str, dict[str, object]]:
    call = slash_command(text)
    assert isinstance(call, tuple), (text, call)
    return call


@pytest.mark.clause("LED-WIRE.9")
@given(body=sentence)
def test_slash_pin_commands_are_the_save_list_and_delete_calls(body: str) -> None:
    call = _slash(f"/pin {body}")
    assert call == ("memory/save_memory_record", {"body": body.strip()})
    state, rec = ok(empty_state(), *call, T0)
    assert rec["body"] == body.strip() and rec["scopeKey"] == LOCAL
    listing = _slash("/pins")
    assert listing == ("memory/list_memory_records", {"scopeKey": LOCAL})
    _, listed = ok(state, *listing, T0 + 1)
    assert [r["id"] for r in listed["records"]] == [rec["id"]]
    unpin = _slash(f"/unpin {rec['id']}")
    assert unpin == ("memory/delete_memory_record", {"recordId": rec["id"]})
    _, gone = ok(state, *unpin, T0 + 2)
    assert gone["status"] == "deleted"


@pytest.mark.clause("LED-WIRE.9")
@pytest.mark.parametrize("text", ["/memory", "/memory add x", "/pinned x", "pin x", "/PIN x", ""])
def test_other_commands_are_not_ledger_commands(text: str) -> None:
    assert slash_command(text) is None


@pytest.mark.clause("LED-WIRE.9")
@pytest.mark.parametrize("text", ["/pins all", "/unpin", "/unpin a b"])
def test_a_pin_command_with_wrong_arguments_is_refused(text: str) -> None:
    assert isinstance(slash_command(text), Refused)


@pytest.mark.clause("LED-WIRE.9", "LED-SAVE.3")
def test_a_bare_pin_is_a_blank_save_and_is_refused() -> None:
    call = _slash("/pin")
    assert call == ("memory/save_memory_record", {"body": ""})
    refused(empty_state(), *call, T0)
