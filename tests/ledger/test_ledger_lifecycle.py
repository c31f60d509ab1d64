"""Records, provenance, statuses and their transitions; save, list, forget, edit, review."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger.consolidation import apply_batch
from reference.ledger.expiry import sweep_expired
from reference.ledger.lifecycle import LEGAL_TRANSITIONS, list_records, save
from reference.ledger.outcome import INVALID_PARAMS, REFUSED, Refused
from reference.ledger.records import STATUSES, LedgerState, empty_state, find_record
from reference.ledger.timefmt import format_rfc3339
from tests.common.ledger_strategies import (
    MODEL_EXPIRY,
    MODEL_GROUPED_PROPOSAL,
    T0,
    model_handle,
    ok,
    refused,
    saved,
    sentence,
)

ALWAYS = {
    "id",
    "scopeKey",
    "kind",
    "body",
    "provenance",
    "status",
    "validFrom",
    "createdAt",
    "updatedAt",
}
LOCAL = "account:local"


def fmt(ms: int) -> str:
    return format_rfc3339(ms)


# --- save -----------------------------------------------------------------------------------


@pytest.mark.clause("LED-SAVE.1", "LED-REC.1", "LED-REC.5", "LED-REC.6", "LED-PROV.1", "LED-EXP.1")
def test_save_answers_the_pinned_record() -> None:
    _, rec = ok(empty_state(), "memory/save_memory_record", {"body": "  I prefer tea\n\n"}, T0)
    assert rec == {
        "id": rec["id"],
        "scopeKey": "account:local",
        "kind": "preference",
        "body": "I prefer tea",
        "provenance": "user_explicit",
        "status": "active",
        "validFrom": fmt(T0),
        "createdAt": fmt(T0),
        "updatedAt": fmt(T0),
    }
    _, rec = ok(
        empty_state(),
        "memory/save_memory_record",
        {"body": "Ships on Fridays", "kind": "decision", "sessionId": "sess-1"},
        T0,
    )
    assert (rec["kind"], rec["sourceSessionId"]) == ("decision", "sess-1")
    assert "expiresAt" not in rec and "validTo" not in rec and "conflictGroup" not in rec


@pytest.mark.clause("LED-REC.2")
@pytest.mark.parametrize("kind", ["preference", "fact", "decision", "constraint"])
def test_the_four_kinds(kind: str) -> None:
    _, rec = ok(empty_state(), "memory/save_memory_record", {"body": "x y", "kind": kind}, T0)
    assert rec["kind"] == kind


@pytest.mark.clause("LED-REC.2", "LED-WIRE.3")
@pytest.mark.parametrize("kind", ["", "Preference", "note", "facts"])
def test_unknown_kind_is_a_bad_value(kind: str) -> None:
    r = refused(empty_state(), "memory/save_memory_record", {"body": "x", "kind": kind}, T0)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}


@pytest.mark.clause("LED-SAVE.2", "LED-WIRE.2")
@pytest.mark.parametrize("scope", ["account:local", "workspace:1", "", None])
def test_save_rejects_a_scope_param(scope: object) -> None:
    """The seed: "The client cannot pass a scope on save" -- refused, nothing written; which
    code says so is not the seed's (-32602, the model's, or 1000)."""
    r = refused(empty_state(), "memory/save_memory_record", {"body": "x", "scopeKey": scope}, T0)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}


@pytest.mark.clause("LED-SAVE.3", "LED-REC.6", "LED-WIRE.3")
@pytest.mark.parametrize("body", ["", " ", "\t\n \u3000", "x" * 4001, " " + "y" * 4001 + " "])
def test_blank_and_overlong_bodies_refused(body: str) -> None:
    state, _ = saved(["keep me"])
    for method, params in (
        ("memory/save_memory_record", {"body": body}),
        ("_test/propose", {"body": body}),
        ("memory/supersede_memory_record", {"recordId": state.records[0].id, "body": body}),
    ):
        r = refused(state, method, params, T0 + 5)
        assert r.allowed_codes == {REFUSED, INVALID_PARAMS}


@pytest.mark.clause("LED-REC.6")
def test_length_is_measured_after_trimming_in_code_points() -> None:
    _, rec = ok(empty_state(), "memory/save_memory_record", {"body": "  " + "z" * 4000 + "\n"}, T0)
    assert rec["body"] == "z" * 4000
    _, rec = ok(empty_state(), "memory/save_memory_record", {"body": "\U0001f600" * 4000}, T0)
    assert len(rec["body"]) == 4000
    _, rec = ok(empty_state(), "memory/save_memory_record", {"body": " a \n b "}, T0)
    assert rec["body"] == "a \n b"


# --- list -----------------------------------------------------------------------------------


@pytest.mark.clause("LED-LIST.1", "LED-LIST.3", "LED-STATUS.4")
def test_list_by_status() -> None:
    state, ids = saved(["one", "two"])
    state, prop = ok(state, "_test/propose", {"body": "three"}, T0 + 10)
    _, res = ok(state, "memory/list_memory_records", {"scopeKey": LOCAL}, T0 + 11)
    assert res["scopeKey"] == LOCAL and [r["id"] for r in res["records"]] == ids[::-1]
    _, res = ok(state, "memory/list_memory_records", {"scopeKey": LOCAL, "status": "proposed"}, T0)
    assert [r["id"] for r in res["records"]] == [prop["id"]]
    _, res = ok(state, "memory/list_memory_records", {"scopeKey": "workspace:9"}, T0)
    assert res == {"scopeKey": "workspace:9", "records": []}
    for bad in ("deleted", "superseded", "all", ""):
        r = refused(state, "memory/list_memory_records", {"scopeKey": LOCAL, "status": bad}, T0)
        assert r.allowed_codes == {REFUSED, INVALID_PARAMS}
    for scope in ("", "s" * 201):
        r = refused(state, "memory/list_memory_records", {"scopeKey": scope}, T0)
        assert r.allowed_codes == {REFUSED, INVALID_PARAMS}
    r = refused(state, "memory/list_memory_records", {}, T0)
    assert r.allowed_codes == {INVALID_PARAMS}


@pytest.mark.clause("LED-LIST.2")
def test_list_caps_at_50_newest_update_first() -> None:
    state, ids = saved([f"pin {i}" for i in range(55)])
    # Touch an old record: its update makes it the newest.
    state, _ = ok(state, MODEL_EXPIRY, {"recordId": ids[0], "expiresAt": fmt(T0 + 10**9)}, T0 + 100)
    _, res = ok(state, "memory/list_memory_records", {"scopeKey": LOCAL}, T0 + 101)
    got = [r["id"] for r in res["records"]]
    assert len(got) == 50
    assert got == [ids[0]] + ids[:5:-1][:49]


@pytest.mark.clause("LED-LIST.2")
@given(st.lists(st.integers(0, 3), min_size=1, max_size=20))
def test_list_ties_go_to_the_later_written(offsets: list[int]) -> None:
    state = empty_state()
    for i, off in enumerate(offsets):
        state, rec = save(state, f"pin {i}", T0 + off)
        assert not isinstance(rec, Refused)
    got = list_records(state, LOCAL)
    keys = [(r.updated_at, r.seq) for r in got]
    assert keys == sorted(keys, reverse=True)


# --- forget ---------------------------------------------------------------------------------


@pytest.mark.clause("LED-FORGET.1", "LED-FORGET.3", "LED-INT.4")
def test_forget_is_a_tombstone_without_its_body() -> None:
    state, (rid,) = saved(["my secret hobby is knitting"])
    state, rec = ok(state, "memory/delete_memory_record", {"recordId": rid}, T0 + 50)
    assert rec["status"] == "deleted" and rec["body"] == ""
    assert rec["validFrom"] == fmt(T0) and rec["validTo"] == fmt(T0 + 50)
    assert rec["updatedAt"] == fmt(T0 + 50)
    stored = find_record(state, rid)
    assert stored is not None and stored.body == "" and stored.status == "deleted"
    _, res = ok(state, "memory/list_memory_records", {"scopeKey": LOCAL}, T0 + 51)
    assert res["records"] == []


@pytest.mark.clause("LED-FORGET.2", "LED-STATUS.3")
def test_forget_only_an_active_record() -> None:
    state, (rid,) = saved(["x"])
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": rid}, T0 + 1)
    r = refused(state, "memory/delete_memory_record", {"recordId": rid}, T0 + 2)
    assert r.allowed_codes == {REFUSED}
    assert r.message == (
        f"Memory record '{rid}' is deleted; only an active record can be forgotten. "
        "Nothing was changed."
    )
    state, prop = ok(state, "_test/propose", {"body": "p"}, T0 + 3)
    assert refused(
        state, "memory/delete_memory_record", {"recordId": prop["id"]}, T0 + 4
    ).allowed_codes == {REFUSED}
    r = refused(state, "memory/delete_memory_record", {"recordId": "no-such-id"}, T0 + 5)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}


# --- edit -----------------------------------------------------------------------------------


@pytest.mark.clause("LED-EDIT.1", "LED-INT.3", "LED-GROUP.4", "LED-PROV.1")
def test_edit_supersedes_by_a_new_record() -> None:
    state = empty_state()
    state, prop = ok(
        state,
        MODEL_GROUPED_PROPOSAL,
        {
            "body": "likes dark mode",
            "kind": "fact",
            "conflictGroup": "theme",
            "confidenceBps": 9000,
        },
        T0,
    )
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": prop["id"]}, T0 + 10)
    state, new = ok(
        state,
        "memory/supersede_memory_record",
        {"recordId": prop["id"], "body": " likes light mode "},
        T0 + 20,
    )
    assert new["body"] == "likes light mode" and new["kind"] == "fact"
    assert new["provenance"] == "user_explicit" and new["supersedes"] == prop["id"]
    assert new["conflictGroup"] == "theme" and new["validFrom"] == fmt(T0 + 20)
    assert "confidenceBps" not in new and "expiresAt" not in new
    old = find_record(state, prop["id"])
    assert old is not None and old.status == "superseded" and old.valid_to == T0 + 20
    assert old.superseded_by == new["id"]
    state, newer = ok(
        state,
        "memory/supersede_memory_record",
        {"recordId": new["id"], "body": "b", "kind": "constraint"},
        T0 + 30,
    )
    assert newer["kind"] == "constraint"


@pytest.mark.clause("LED-EDIT.2", "LED-STATUS.3")
def test_edit_only_an_active_record() -> None:
    state, (a,) = saved(["a"])
    state, _ = ok(state, "memory/supersede_memory_record", {"recordId": a, "body": "b"}, T0 + 1)
    r = refused(state, "memory/supersede_memory_record", {"recordId": a, "body": "c"}, T0 + 2)
    assert r.allowed_codes == {REFUSED}
    r = refused(state, "memory/supersede_memory_record", {"recordId": "nope", "body": "c"}, T0 + 2)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}


@pytest.mark.clause("LED-EDIT.3", "LED-BUDGET.3")
def test_edit_works_at_the_ceiling() -> None:
    state, (a,) = saved(["a"])
    state, _ = ok(
        state, "memory/update_consolidation_settings", {"mode": "off", "maxRecords": 1}, T0 + 1
    )
    refused(state, "memory/save_memory_record", {"body": "b"}, T0 + 2)
    state, new = ok(state, "memory/supersede_memory_record", {"recordId": a, "body": "b"}, T0 + 3)
    assert new["status"] == "active"


# --- review ---------------------------------------------------------------------------------


@pytest.mark.clause("LED-REVIEW.1", "LED-PROV.2", "LED-INT.2")
def test_proposal_fields() -> None:
    _, rec = ok(
        empty_state(),
        MODEL_GROUPED_PROPOSAL,
        {
            "body": " uses vim ",
            "kind": "fact",
            "sessionId": "s-9",
            "confidenceBps": 8100,
            "rationale": "said so twice",
            "conflictGroup": "editor",
        },
        T0,
    )
    assert rec == {
        "id": rec["id"],
        "scopeKey": LOCAL,
        "kind": "fact",
        "body": "uses vim",
        "provenance": "model_proposal",
        "status": "proposed",
        "validFrom": fmt(T0),
        "validTo": fmt(T0),
        "createdAt": fmt(T0),
        "updatedAt": fmt(T0),
        "sourceSessionId": "s-9",
        "confidenceBps": 8100,
        "rationale": "said so twice",
        "conflictGroup": "editor",
    }
    _, plain = ok(empty_state(), "_test/propose", {"body": "x"}, T0)
    assert plain["kind"] == "preference"


@pytest.mark.clause("LED-REVIEW.1", "LED-WIRE.3")
@pytest.mark.parametrize(
    "params",
    [
        {"confidenceBps": -1},
        {"confidenceBps": 10001},
        {"rationale": ""},
        {"rationale": "r" * 4001},
        {"sessionId": ""},
        {"sessionId": "s" * 201},
    ],
)
def test_proposal_bad_values(params: dict[str, Any]) -> None:
    r = refused(empty_state(), "_test/propose", {"body": "x", **params}, T0)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}


@pytest.mark.clause("LED-REVIEW.1", "LED-WIRE.7", "LED-WIRE.2")
def test_a_proposal_never_carries_a_group() -> None:
    """The extractor's element carries body, kind, confidence, rationale and the session only:
    a conflict group is an unknown param (a record joins a group only through ``group``)."""
    r = refused(empty_state(), "_test/propose", {"body": "x", "conflictGroup": "g"}, T0)
    assert r.allowed_codes == {INVALID_PARAMS}


@pytest.mark.clause("LED-REVIEW.2", "LED-PROV.2")
def test_approve_opens_the_interval_at_approval() -> None:
    state, prop = ok(empty_state(), "_test/propose", {"body": "x", "confidenceBps": 7000}, T0)
    state, rec = ok(state, "memory/approve_memory_record", {"recordId": prop["id"]}, T0 + 99)
    assert rec["status"] == "active" and rec["validFrom"] == fmt(T0 + 99) and "validTo" not in rec
    assert rec["provenance"] == "model_proposal" and rec["confidenceBps"] == 7000
    assert rec["createdAt"] == fmt(T0) and rec["updatedAt"] == fmt(T0 + 99)


@pytest.mark.clause("LED-REVIEW.3", "LED-INT.2")
def test_reject_keeps_the_empty_interval() -> None:
    state, prop = ok(empty_state(), "_test/propose", {"body": "x"}, T0)
    state, rec = ok(state, "memory/reject_memory_record", {"recordId": prop["id"]}, T0 + 99)
    assert rec["status"] == "rejected" and rec["validFrom"] == rec["validTo"] == fmt(T0)
    assert rec["updatedAt"] == fmt(T0 + 99)


@pytest.mark.clause("LED-PROV.3")
def test_consolidation_output_provenance() -> None:
    state, (a, b, c) = saved(["a", "b", "c"])
    state, _ = apply_batch(
        state,
        LOCAL,
        [
            {"operation": "merge", "targets": [a, b], "body": "a and b"},
            {"operation": "correct", "targets": [c], "body": "c fixed"},
        ],
        T0 + 10,
    )
    new = state.records[3:]
    assert [r.provenance for r in new] == ["model_consolidation", "model_consolidation"]
    assert [r.provenance for r in state.records[:3]] == ["user_explicit"] * 3


# --- the transition table -------------------------------------------------------------------


def _in_status(status: str) -> tuple[LedgerState, str]:
    """A ledger holding one local record in ``status`` (and its id)."""
    state, (a,) = saved(["subject"])
    if status == "active":
        return state, a
    if status == "superseded":
        state, _ = ok(state, "memory/supersede_memory_record", {"recordId": a, "body": "b"}, T0 + 1)
        return state, a
    if status == "deleted":
        state, _ = ok(state, "memory/delete_memory_record", {"recordId": a}, T0 + 1)
        return state, a
    if status == "expired":
        state, _ = ok(state, MODEL_EXPIRY, {"recordId": a, "expiresAt": fmt(T0 + 1)}, T0 + 1)
        state, _ = sweep_expired(state, T0 + 2)
        return state, a
    state, prop = ok(state, "_test/propose", {"body": "p"}, T0 + 1)
    if status == "rejected":
        state, _ = ok(state, "memory/reject_memory_record", {"recordId": prop["id"]}, T0 + 2)
    return state, prop["id"]


_ACTIONS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "delete": ("deleted", "memory/delete_memory_record", {}),
    "supersede": ("superseded", "memory/supersede_memory_record", {"body": "new"}),
    "approve": ("active", "memory/approve_memory_record", {}),
    "reject": ("rejected", "memory/reject_memory_record", {}),
    "set_expiry": ("expired", MODEL_EXPIRY, {"expiresAt": fmt(T0 + 10**8)}),
}


@pytest.mark.clause("LED-STATUS.1", "LED-STATUS.2", "LED-STATUS.3", "LED-WIRE.8")
@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("action", list(_ACTIONS))
def test_transition_table(status: str, action: str) -> None:
    state, rid = _in_status(status)
    rec = find_record(state, rid)
    assert rec is not None and rec.status == status
    target, method, extra = _ACTIONS[action]
    legal = (status, target) in LEGAL_TRANSITIONS
    new, outcome = model_handle(state, method, {"recordId": rid, **extra}, T0 + 1000)
    if legal:
        assert not isinstance(outcome, Refused)
        after = find_record(new, rid)
        assert after is not None
        # set_expiry keeps the record active until a sweep; the others move it now.
        assert after.status == (status if action == "set_expiry" else target)
    else:
        assert isinstance(outcome, Refused) and outcome.allowed_codes == {REFUSED}
        assert new == state


@pytest.mark.clause("LED-STATUS.2")
def test_exactly_five_legal_edges() -> None:
    assert LEGAL_TRANSITIONS == {
        ("proposed", "active"),
        ("proposed", "rejected"),
        ("active", "superseded"),
        ("active", "deleted"),
        ("active", "expired"),
    }


# --- ids ------------------------------------------------------------------------------------


@pytest.mark.clause("LED-REC.3", "LED-REC.4")
@given(st.lists(sentence, min_size=1, max_size=30))
def test_ids_unique_and_rows_never_removed(bodies: list[str]) -> None:
    state, ids = saved(bodies)
    for i, rid in enumerate(ids):
        if i % 3 == 0:
            state, _ = ok(state, "memory/delete_memory_record", {"recordId": rid}, T0 + 100 + i)
        elif i % 3 == 1:
            state, _ = ok(
                state,
                "memory/supersede_memory_record",
                {"recordId": rid, "body": "e"},
                T0 + 100 + i,
            )
    all_ids = [r.id for r in state.records]
    assert len(all_ids) == len(set(all_ids)) == len(bodies) + len(range(1, len(bodies), 3))
    assert len({i[:8] for i in all_ids}) == len(all_ids)
    assert set(ids) <= set(all_ids)
