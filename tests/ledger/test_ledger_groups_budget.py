"""Conflict groups and the per-scope budget."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger.budget import budget_message
from reference.ledger.credentials import CREDENTIAL_MESSAGE
from reference.ledger.expiry import sweep_expired
from reference.ledger.lifecycle import propose
from reference.ledger.outcome import INVALID_PARAMS, REFUSED, Refused
from reference.ledger.records import empty_state, find_record, held
from reference.ledger.timefmt import format_rfc3339
from tests.common.ledger_strategies import (
    DAY,
    MODEL_EXPIRY,
    MODEL_GROUPED_PROPOSAL,
    T0,
    ok,
    refused,
    saved,
)

LOCAL = "account:local"


def settings(state: Any, now: int, **params: Any) -> Any:
    state, _ = ok(state, "memory/update_consolidation_settings", {"mode": "off", **params}, now)
    return state


# --- conflict groups ------------------------------------------------------------------------


@pytest.mark.clause("LED-GROUP.1", "LED-GROUP.2", "LED-REVIEW.2")
def test_approving_a_member_supersedes_the_active_one() -> None:
    state = empty_state()
    state, p1 = ok(
        state, MODEL_GROUPED_PROPOSAL, {"body": "dark mode", "conflictGroup": "theme"}, T0
    )
    state, p2 = ok(
        state, MODEL_GROUPED_PROPOSAL, {"body": "light mode", "conflictGroup": "theme"}, T0 + 1
    )
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p1["id"]}, T0 + 10)
    state, a2 = ok(state, "memory/approve_memory_record", {"recordId": p2["id"]}, T0 + 20)
    loser = find_record(state, p1["id"])
    assert loser is not None and loser.status == "superseded"
    assert loser.valid_to == T0 + 20 and loser.superseded_by == p2["id"]
    assert a2["validFrom"] == format_rfc3339(T0 + 20)
    _, listing = ok(state, "memory/list_memory_records", {"scopeKey": LOCAL}, T0 + 21)
    assert [r["id"] for r in listing["records"]] == [p2["id"]]


@pytest.mark.clause("LED-GROUP.3")
def test_a_group_with_no_active_member_is_legal() -> None:
    state = empty_state()
    state, p1 = ok(state, MODEL_GROUPED_PROPOSAL, {"body": "tabs", "conflictGroup": "indent"}, T0)
    state, p2 = ok(
        state, MODEL_GROUPED_PROPOSAL, {"body": "spaces", "conflictGroup": "indent"}, T0 + 1
    )
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p1["id"]}, T0 + 2)
    state, _ = ok(state, "memory/reject_memory_record", {"recordId": p2["id"]}, T0 + 3)
    state, _ = ok(
        state,
        MODEL_EXPIRY,
        {"recordId": p1["id"], "expiresAt": format_rfc3339(T0 + DAY)},
        T0 + 4,
    )
    state, expired = sweep_expired(state, T0 + DAY)
    assert expired == (p1["id"],)
    assert not [r for r in state.records if r.conflict_group == "indent" and r.status == "active"]
    _, packet = ok(state, "_test/packet", {}, T0 + DAY)
    assert packet == {"lines": [], "text": ""}
    # ...and a new member can still be approved into it.
    state, p3 = ok(
        state,
        MODEL_GROUPED_PROPOSAL,
        {"body": "tabs again", "conflictGroup": "indent"},
        T0 + DAY + 1,
    )
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p3["id"]}, T0 + DAY + 2)
    assert find_record(state, p1["id"]).status == "expired"  # type: ignore[union-attr]


@pytest.mark.clause("LED-GROUP.1")
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.booleans()), min_size=1, max_size=15))
def test_approvals_keep_one_active_member(plan: list[tuple[str, bool]]) -> None:
    state, now = empty_state(), T0
    for group, approve in plan:
        now += 1
        state, rec = propose(state, LOCAL, f"claim {now}", now, conflict_group=group)
        assert not isinstance(rec, Refused)
        if approve:
            now += 1
            state, _ = ok(state, "memory/approve_memory_record", {"recordId": rec.id}, now)
        for g in ("a", "b"):
            assert (
                len([r for r in state.records if r.conflict_group == g and r.status == "active"])
                <= 1
            )


# --- budget ---------------------------------------------------------------------------------


@pytest.mark.clause("LED-BUDGET.1", "LED-CONS.1")
def test_default_budget_is_200_and_counts_proposals() -> None:
    _, s = ok(empty_state(), "memory/get_consolidation_settings", {}, T0)
    assert s["maxRecords"] == 200
    state, _ = saved(["a", "b"])
    state, _ = ok(state, "_test/propose", {"body": "c"}, T0 + 5)
    state, p = ok(state, "_test/propose", {"body": "d"}, T0 + 6)
    state, _ = ok(state, "memory/reject_memory_record", {"recordId": p["id"]}, T0 + 7)
    assert held(state, LOCAL) == 3


@pytest.mark.clause("LED-BUDGET.2", "LED-BUDGET.5", "LED-REVIEW.4", "LED-WIRE.8")
def test_growth_at_the_ceiling_refused_with_the_exact_message() -> None:
    state, _ = saved([f"pin {i}" for i in range(199)])
    state, _ = ok(state, "_test/propose", {"body": "proposal"}, T0 + 500)
    msg = (
        "Memory scope 'account:local' holds 200 of 200 records and nothing was written. "
        "Forget or consolidate a record to make room."
    )
    assert budget_message(LOCAL, 200, 200) == msg
    for method in ("memory/save_memory_record", "_test/propose"):
        r = refused(state, method, {"body": "one more"}, T0 + 501)
        assert r.code == REFUSED and r.message == msg
        assert (
            r.admits(REFUSED, msg)
            and not r.admits(REFUSED, "other")
            and not r.admits(INVALID_PARAMS)
        )
    assert len(state.records) == 200


@pytest.mark.clause("LED-BUDGET.3", "LED-EDIT.3")
def test_replacements_work_at_the_ceiling() -> None:
    state, (a, b, c) = saved(["a", "b", "c"])
    state, p = ok(state, "_test/propose", {"body": "p"}, T0 + 5)
    state = settings(state, T0 + 6, maxRecords=4)
    refused(state, "memory/save_memory_record", {"body": "x"}, T0 + 7)
    state, _ = ok(state, "memory/supersede_memory_record", {"recordId": a, "body": "a2"}, T0 + 8)
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p["id"]}, T0 + 9)
    state, _ = ok(
        state,
        "_test/consolidate",
        {"operations": [{"operation": "correct", "targets": [b], "body": "b2"}]},
        T0 + 10,
    )
    assert held(state, LOCAL) == 4
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": c}, T0 + 11)
    state, _ = ok(state, "memory/save_memory_record", {"body": "fits now"}, T0 + 12)


@pytest.mark.clause("LED-BUDGET.4", "LED-BUDGET.5")
def test_lowering_below_held_is_accepted_and_evicts_nothing() -> None:
    state, ids = saved(["a", "b", "c", "d", "e"])
    state, s = ok(
        state, "memory/update_consolidation_settings", {"mode": "off", "maxRecords": 3}, T0 + 10
    )
    assert s["maxRecords"] == 3
    assert [r.status for r in state.records] == ["active"] * 5
    r = refused(state, "memory/save_memory_record", {"body": "x"}, T0 + 11)
    assert r.message == budget_message(LOCAL, 5, 3)
    state, _ = ok(
        state, "memory/supersede_memory_record", {"recordId": ids[0], "body": "a2"}, T0 + 12
    )
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": ids[1]}, T0 + 13)
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": ids[2]}, T0 + 14)
    assert refused(
        state, "memory/save_memory_record", {"body": "x"}, T0 + 15
    ).message == budget_message(LOCAL, 3, 3)
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": ids[3]}, T0 + 16)
    state, _ = ok(state, "memory/save_memory_record", {"body": "x"}, T0 + 17)
    assert held(state, LOCAL) == 3


@pytest.mark.clause("LED-BUDGET.1", "LED-CONS.2", "LED-WIRE.2", "LED-WIRE.3")
@pytest.mark.parametrize(
    "value, codes",
    [
        (0, {REFUSED, INVALID_PARAMS}),
        (10001, {REFUSED, INVALID_PARAMS}),
        (-5, {REFUSED, INVALID_PARAMS}),
        (5.5, {INVALID_PARAMS}),
        (True, {INVALID_PARAMS}),
        ("5", {INVALID_PARAMS}),
        (None, {INVALID_PARAMS}),
    ],
)
def test_max_records_domain(value: object, codes: set[int]) -> None:
    r = refused(
        empty_state(),
        "memory/update_consolidation_settings",
        {"mode": "off", "maxRecords": value},
        T0,
    )
    assert r.allowed_codes == codes


@pytest.mark.clause("LED-BUDGET.1", "LED-WIRE.2")
@pytest.mark.parametrize("value", [1, 10000, 7.0])
def test_max_records_accepts_integers_in_range(value: object) -> None:
    _, s = ok(
        empty_state(),
        "memory/update_consolidation_settings",
        {"mode": "off", "maxRecords": value},
        T0,
    )
    assert s["maxRecords"] == int(value)  # type: ignore[call-overload]


@pytest.mark.clause("LED-BUDGET.2", "LED-CRED.2", "LED-WIRE.3")
def test_several_refusals_any_may_be_reported() -> None:
    state, _ = saved(["a"])
    state = settings(state, T0 + 1, maxRecords=1)
    r = refused(state, "memory/save_memory_record", {"body": "AKIAIOSFODNN7EXAMPLE"}, T0 + 2)
    assert r.admits(REFUSED, CREDENTIAL_MESSAGE) and r.admits(REFUSED, budget_message(LOCAL, 1, 1))
    assert not r.admits(REFUSED, "Something else.") and not r.admits(INVALID_PARAMS)
    r = refused(state, "memory/save_memory_record", {"body": "   "}, T0 + 2)
    assert r.admits(INVALID_PARAMS) and r.admits(REFUSED, budget_message(LOCAL, 1, 1))
