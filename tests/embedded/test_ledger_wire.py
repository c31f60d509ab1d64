"""The bundled store's ledger binding, method by method, directly and over HTTP.

Every test runs twice (``ledger`` is parametrized): against ``LedgerService`` itself and
through the real server (``start_server(test_control=True)`` + httpx), so the HTTP mapping of
codes to statuses (400 / 409 / 404) is checked with every behaviour.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.common.ledger_store import (
    BUDGET_MSG,
    CREDENTIAL_MSG,
    DAY,
    SCOPE,
    SEC,
    T0,
    Ledger,
    check_record_shape,
    iso,
    ledger,
    ledger_http_client,
)

__all__ = ["ledger", "ledger_http_client"]  # fixtures

SAVE = "memory/save_memory_record"
LIST = "memory/list_memory_records"
DELETE = "memory/delete_memory_record"
SUPERSEDE = "memory/supersede_memory_record"
APPROVE = "memory/approve_memory_record"
REJECT = "memory/reject_memory_record"
AS_OF = "memory/list_memory_records_as_of"
GET_SETTINGS = "memory/get_consolidation_settings"
UPDATE_SETTINGS = "memory/update_consolidation_settings"


def assert_invalid(reply: Any) -> None:
    assert (reply.status, reply.code) == (400, -32602), reply
    assert isinstance(reply.message, str) and reply.message


def assert_refused(reply: Any, message: str | None = None) -> None:
    assert (reply.status, reply.code) == (409, 1000), reply
    assert isinstance(reply.message, str) and reply.message
    if message is not None:
        assert reply.message == message


def assert_bad_value(reply: Any) -> None:
    """LED-WIRE.3: a well-typed value outside its domain is 1000 or -32602."""
    assert (reply.status, reply.code) in ((400, -32602), (409, 1000)), reply


# ---- save -----------------------------------------------------------------------------------


@pytest.mark.clause(
    "LED-SAVE.1",
    "LED-PROV.1",
    "LED-REC.1",
    "LED-REC.5",
    "LED-REC.6",
    "LED-STATUS.1",
    "LED-WIRE.4",
    "LED-WIRE.5",
    "LED-WIRE.6",
    "LED-EXP.1",
)
def test_save_answers_an_active_explicit_pin(ledger: Ledger) -> None:
    ledger.at(T0 + 123)
    rec = ledger.save("  \n prefers dark mode\tin every editor  \n")
    check_record_shape(rec)
    assert set(rec) == {
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
    assert rec["body"] == "prefers dark mode\tin every editor"
    assert rec["kind"] == "preference"
    assert (rec["status"], rec["provenance"], rec["scopeKey"]) == (
        "active",
        "user_explicit",
        SCOPE,
    )
    assert rec["validFrom"] == rec["createdAt"] == rec["updatedAt"] == iso(T0 + 123)
    assert ledger.listing() == [rec]


@pytest.mark.clause("LED-REC.2", "LED-SAVE.1")
@pytest.mark.parametrize("kind", ["preference", "fact", "decision", "constraint"])
def test_save_keeps_kind_and_session(ledger: Ledger, kind: str) -> None:
    rec = ledger.save("uses vim", kind=kind, sessionId="sess 1")
    check_record_shape(rec)
    assert (rec["kind"], rec["sourceSessionId"]) == (kind, "sess 1")


@pytest.mark.clause("LED-REC.2", "LED-WIRE.3", "LED-WIRE.8")
@pytest.mark.parametrize("kind", ["Preference", "note", "", "facts"])
def test_unknown_kind_is_a_bad_value(ledger: Ledger, kind: str) -> None:
    assert_bad_value(ledger.call(SAVE, {"body": "x", "kind": kind}))
    assert ledger.listing() == []


@pytest.mark.clause("LED-SAVE.2", "LED-REC.5", "LED-WIRE.8")
@pytest.mark.parametrize("scope", ["account:local", "workspace:1", "", None, 7])
def test_save_with_a_scope_key_is_invalid_params(ledger: Ledger, scope: Any) -> None:
    assert_invalid(ledger.call(SAVE, {"body": "tea", "scopeKey": scope}))
    assert ledger.listing() == []


@pytest.mark.clause("LED-REC.6", "LED-SAVE.3")
def test_body_limit_counts_code_points_after_trimming(ledger: Ledger) -> None:
    exact = "é" * 3999 + "😀"  # 4000 code points (4001 UTF-16 units, 8003 UTF-8 bytes)
    rec = ledger.save("\u3000 " + exact + "\n\x1c")
    assert rec["body"] == exact
    assert_bad_value(ledger.call(SAVE, {"body": "x" * 4001}))
    assert_bad_value(ledger.call(SUPERSEDE, {"recordId": rec["id"], "body": "y" * 4001}))
    assert_bad_value(ledger.control("propose", {"body": "z" * 4001}))
    assert ledger.ids() == [rec["id"]] and ledger.ids("proposed") == []


@pytest.mark.clause("LED-SAVE.3", "LED-REC.6", "LED-WIRE.8")
@pytest.mark.parametrize("body", ["", " ", "\n\t\r ", "\u3000\u00a0", "\x1c\x1f\x85"])
def test_empty_and_blank_bodies_are_refused(ledger: Ledger, body: str) -> None:
    target = ledger.save("keep me")
    assert_bad_value(ledger.call(SAVE, {"body": body}))
    assert_bad_value(ledger.call(SUPERSEDE, {"recordId": target["id"], "body": body}))
    assert_bad_value(ledger.control("propose", {"body": body}))
    assert ledger.listing() == [target] and ledger.listing("proposed") == []


# ---- structural errors ---------------------------------------------------------------------

_STRUCTURAL: list[tuple[str, dict[str, Any]]] = [
    (SAVE, {}),
    (SAVE, {"body": None}),
    (SAVE, {"body": 5}),
    (SAVE, {"body": ["x"]}),
    (SAVE, {"body": "x", "kind": None}),
    (SAVE, {"body": "x", "kind": 1}),
    (SAVE, {"body": "x", "sessionId": 12}),
    (SAVE, {"body": "x", "sessionId": None}),
    (SAVE, {"body": "x", "extra": 1}),
    (SAVE, {"body": "x", "Body": "x"}),
    (LIST, {}),
    (LIST, {"scopeKey": None}),
    (LIST, {"scopeKey": 1}),
    (LIST, {"scopeKey": SCOPE, "status": None}),
    (LIST, {"scopeKey": SCOPE, "status": 3}),
    (LIST, {"scopeKey": SCOPE, "limit": 5}),
    (DELETE, {}),
    (DELETE, {"recordId": 1}),
    (DELETE, {"recordId": None}),
    (DELETE, {"id": "x"}),
    (SUPERSEDE, {"recordId": "x"}),
    (SUPERSEDE, {"body": "x"}),
    (SUPERSEDE, {"recordId": "x", "body": "y", "sessionId": "s"}),
    (APPROVE, {}),
    (APPROVE, {"recordId": True}),
    (REJECT, {"recordId": "x", "reason": "no"}),
    (AS_OF, {"scopeKey": SCOPE}),
    (AS_OF, {"at": "2026-01-01T00:00:00Z"}),
    (AS_OF, {"scopeKey": SCOPE, "at": 1767225600000}),
    (GET_SETTINGS, {"scopeKey": SCOPE}),
    (UPDATE_SETTINGS, {}),
    (UPDATE_SETTINGS, {"mode": None}),
    (UPDATE_SETTINGS, {"mode": "off", "scopeKey": SCOPE}),
    (UPDATE_SETTINGS, {"mode": "off", "maxRecords": "5"}),
    (UPDATE_SETTINGS, {"mode": "off", "maxRecords": 5.5}),
    (UPDATE_SETTINGS, {"mode": "off", "maxRecords": True}),
    (UPDATE_SETTINGS, {"mode": "off", "maxRecords": None}),
    (UPDATE_SETTINGS, {"mode": "off", "allowRemoval": 1}),
    (UPDATE_SETTINGS, {"mode": "off", "allowRemoval": "true"}),
    (UPDATE_SETTINGS, {"mode": "off", "harness": None}),
    (UPDATE_SETTINGS, {"mode": "off", "harness": 3}),
    (UPDATE_SETTINGS, {"mode": "off", "debounceSeconds": 60.5}),
    (UPDATE_SETTINGS, {"mode": 1}),
    ("_test/propose", {"body": "x", "confidenceBps": "5"}),
    ("_test/propose", {"body": "x", "confidenceBps": 0.5}),
    ("_test/propose", {"body": "x", "status": "active"}),
    ("_test/propose", {"body": "x", "conflictGroup": "g"}),  # a proposal carries no group
    ("_test/sweep", {}),
    ("_test/sweep", {"at": None}),
    ("_test/consolidate", {}),
    ("_test/consolidate", {"operations": {"operation": "keep"}}),
    ("_test/consolidate", {"operations": None}),
    ("_test/set_clock", {}),
    ("_test/set_clock", {"now": 5}),
    ("_test/reset", {"hard": True}),
    ("_test/packet", {"scopeKey": SCOPE}),
]


@pytest.mark.clause("LED-WIRE.2", "LED-WIRE.8", "LED-CONS.2")
@pytest.mark.parametrize(("method", "params"), _STRUCTURAL)
def test_structural_param_errors_are_invalid_params(
    ledger: Ledger, method: str, params: dict[str, Any]
) -> None:
    ledger.save("already here")
    before = ledger.snapshot()
    assert_invalid(ledger.call(method, params))
    assert ledger.snapshot() == before


@pytest.mark.clause("LED-WIRE.2", "LED-WIRE.12")
@pytest.mark.parametrize("raw", [b"[]", b'"x"', b"3", b"null", b"{", b"not json", b"\xff\xfe"])
@pytest.mark.parametrize("method", [SAVE, LIST, GET_SETTINGS, "_test/packet"])
def test_params_must_be_a_json_object(ledger: Ledger, method: str, raw: bytes) -> None:
    if raw == b"null" and method in (GET_SETTINGS, "_test/packet"):
        # a method without params reads null params as absent ones (LED-WIRE.12)
        assert ledger.send(method, raw).status == 200
    else:
        assert_invalid(ledger.send(method, raw))
    assert ledger.listing() == []


@pytest.mark.clause("LED-WIRE.2", "LED-CONS.2")
def test_integers_follow_javascript(ledger: Ledger) -> None:
    assert ledger.configure(maxRecords=7.0, debounceSeconds=60.0)["maxRecords"] == 7
    rec = ledger.propose("p", confidenceBps=1234.0)
    assert rec["confidenceBps"] == 1234 and type(rec["confidenceBps"]) is int


@pytest.mark.clause("LED-WIRE.1")
@pytest.mark.parametrize(
    "method",
    ["memory/nope", "memory/save_memory_records", "save_memory_record", "memory/", "x/y/z"],
)
def test_unknown_method_is_method_not_found(ledger: Ledger, method: str) -> None:
    reply = ledger.call(method, {"body": "x"})
    assert (reply.status, reply.code) == (404, -32601)
    assert ledger.listing() == []


@pytest.mark.clause("LED-WIRE.1", "LED-WIRE.6")
def test_an_empty_body_means_no_params(ledger: Ledger) -> None:
    reply = ledger.send(GET_SETTINGS, b"")
    assert reply.status == 200 and reply.body["mode"] == "off"
    assert_invalid(ledger.send(SAVE, b""))


@pytest.mark.clause("LED-REC.3")
def test_ids_are_unique_with_distinct_short_ids(ledger: Ledger) -> None:
    first = ledger.save("one")
    edited = ledger.supersede(first["id"], "one, edited")
    proposal = ledger.propose("two")
    others = [ledger.save(f"n{i}")["id"] for i in range(30)]
    ids = [first["id"], edited["id"], proposal["id"], *others]
    assert len(set(ids)) == len(ids)
    assert len({i[:8] for i in ids}) == len(ids)
    assert all(isinstance(i, str) and i for i in ids)


# ---- credentials ---------------------------------------------------------------------------

SECRETS = [
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "my pat github_pat_" + "A1b2C3d4E5" * 3,
    "ghp_" + "a" * 36,
    "gho_abcdefghijklmnopqrstuvwxyz",
    "xoxb-1234567890-abcdef",
    "use sk-ant-api03-" + "x" * 40,
    "sk-" + "Z" * 48,
    "sk-proj-" + "a1" * 12,
    "notion secret_" + "a" * 43,
    "AKIAIOSFODNN7EXAMPLE",
    "ASIA" + "Q" * 16,
    "Authorization: Bearer abcdefghijklmnop1234",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "OPENAI_API_KEY=abcdefghijkl1234",
    "db_password: hunter2hunter2hunter2",
    'export GITHUB_TOKEN="abcdefghijklmnop"',
]
LOOKALIKES = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "see https://example.com/search?q=memory&page=2&sort=desc",
    "TOKEN=development",
    "const token = getTokenFromStore();",
    "let secret_name = config.secret_name;",
    "I keep my keys in a drawer",
]


@pytest.mark.clause("LED-CRED.1", "LED-CRED.2", "LED-REVIEW.4", "LED-WIRE.8")
@pytest.mark.parametrize("secret", SECRETS)
def test_credential_shaped_bodies_are_refused_everywhere(ledger: Ledger, secret: str) -> None:
    pin = ledger.save("a safe pin")
    before = ledger.snapshot()
    assert_refused(ledger.call(SAVE, {"body": secret}), CREDENTIAL_MSG)
    assert_refused(ledger.call(SUPERSEDE, {"recordId": pin["id"], "body": secret}), CREDENTIAL_MSG)
    assert_refused(ledger.control("propose", {"body": "  " + secret}), CREDENTIAL_MSG)
    counts = ledger.consolidate(
        {"operation": "correct", "targets": [pin["id"]], "body": secret},
    )
    assert counts == {"applied": 0, "invalid": 0, "refused": 1, "declined": 0}
    assert ledger.snapshot() == before


@pytest.mark.clause("LED-CRED.3", "LED-CRED.4")
@pytest.mark.parametrize("body", LOOKALIKES)
def test_lookalikes_are_stored(ledger: Ledger, body: str) -> None:
    assert ledger.save(body)["body"] == body


@pytest.mark.clause("LED-CRED.4")
def test_credential_thresholds(ledger: Ledger) -> None:
    assert_refused(ledger.call(SAVE, {"body": "ghp_" + "a" * 20}), CREDENTIAL_MSG)
    assert ledger.save("ghp_" + "a" * 19)["status"] == "active"
    assert_refused(ledger.call(SAVE, {"body": "Bearer " + "b" * 16}), CREDENTIAL_MSG)
    assert ledger.save("Bearer " + "b" * 15)["status"] == "active"


# ---- listing -------------------------------------------------------------------------------


@pytest.mark.clause("LED-LIST.1", "LED-LIST.3", "LED-WIRE.3")
def test_listing_scope_and_status_rules(ledger: Ledger) -> None:
    ledger.save("mine")
    other = ledger.ok(LIST, {"scopeKey": "workspace:42"})
    assert other == {"scopeKey": "workspace:42", "records": []}
    assert ledger.ok(LIST, {"scopeKey": "x" * 200})["records"] == []
    assert_bad_value(ledger.call(LIST, {"scopeKey": ""}))
    assert_bad_value(ledger.call(LIST, {"scopeKey": "x" * 201}))
    for status in ("deleted", "superseded", "expired", "rejected", "ACTIVE", ""):
        assert_bad_value(ledger.call(LIST, {"scopeKey": SCOPE, "status": status}))
    assert len(ledger.listing("active")) == 1


@pytest.mark.clause("LED-LIST.2")
def test_listing_is_newest_update_first_and_capped_at_50(ledger: Ledger) -> None:
    ids = []
    for i in range(53):
        ledger.at(T0 + i * SEC)
        ids.append(ledger.save(f"pin {i}")["id"])
    # Touch an old record: its update moves it to the front.
    ledger.at(T0 + 100 * SEC)
    ledger.batch({"operation": "expire", "targets": [ids[0]], "afterDays": 10})
    listed = ledger.ids()
    assert len(listed) == 50
    assert listed == [ids[0], *reversed(ids[4:])]


@pytest.mark.clause("LED-LIST.2")
def test_equal_update_instants_list_later_writes_first(ledger: Ledger) -> None:
    ids = [ledger.save(f"same instant {i}")["id"] for i in range(5)]
    assert ledger.ids() == list(reversed(ids))


@pytest.mark.clause("LED-LIST.1", "LED-STATUS.4")
def test_proposals_are_listed_only_by_status(ledger: Ledger) -> None:
    pin = ledger.save("pin")
    ledger.at(T0 + SEC)
    prop = ledger.propose("proposal")
    assert ledger.listing() == [pin]
    assert ledger.listing("proposed") == [prop]


# ---- forgetting ----------------------------------------------------------------------------


@pytest.mark.clause(
    "LED-FORGET.1", "LED-FORGET.3", "LED-INT.4", "LED-STATUS.2", "LED-ASOF.2", "LED-REC.4"
)
def test_delete_is_a_bodiless_tombstone(ledger: Ledger) -> None:
    rec = ledger.save("forget me please")
    ledger.at(T0 + 5 * SEC)
    dead = ledger.delete(rec["id"])
    check_record_shape(dead)
    assert dead["status"] == "deleted" and dead["body"] == ""
    assert dead["validTo"] == dead["updatedAt"] == iso(T0 + 5 * SEC)
    assert dead["validFrom"] == rec["validFrom"] and dead["id"] == rec["id"]
    assert ledger.listing() == []
    # History: inside the tombstone's interval the record may be left out, but never with
    # its body.
    for t in (T0, T0 + 4 * SEC, T0 + 5 * SEC):
        hit = ledger.as_of(t).get(rec["id"])
        assert hit is None or hit["body"] == ""
    assert "forget me" not in json.dumps(ledger.snapshot())


@pytest.mark.clause("LED-FORGET.2", "LED-STATUS.3", "LED-WIRE.3", "LED-WIRE.8")
def test_only_an_active_record_can_be_forgotten(ledger: Ledger) -> None:
    dead = ledger.save("dead")
    ledger.delete(dead["id"])
    old = ledger.save("old")
    ledger.supersede(old["id"], "new")
    prop = ledger.propose("proposal")
    rejected = ledger.propose("nope")
    ledger.reject(rejected["id"])
    before = ledger.snapshot()
    for rid in (dead["id"], old["id"], prop["id"], rejected["id"]):
        assert_refused(ledger.call(DELETE, {"recordId": rid}))
    assert_bad_value(ledger.call(DELETE, {"recordId": "no-such-record"}))
    assert_bad_value(ledger.call(DELETE, {"recordId": ""}))
    assert ledger.snapshot() == before


# ---- editing -------------------------------------------------------------------------------


@pytest.mark.clause("LED-EDIT.1", "LED-INT.3", "LED-PROV.1", "LED-WIRE.6", "LED-REC.4")
def test_an_edit_supersedes_seamlessly(ledger: Ledger) -> None:
    old = ledger.save("likes tea", kind="fact", sessionId="s1")
    ledger.at(T0 + 7 * SEC)
    new = ledger.supersede(old["id"], "  likes coffee  ")
    check_record_shape(new)
    assert new["id"] != old["id"]
    assert (new["body"], new["kind"], new["provenance"], new["status"]) == (
        "likes coffee",
        "fact",
        "user_explicit",
        "active",
    )
    assert new["supersedes"] == old["id"]
    assert "sourceSessionId" not in new and "validTo" not in new
    assert new["validFrom"] == new["createdAt"] == iso(T0 + 7 * SEC)
    assert ledger.listing() == [new]
    before, boundary = ledger.as_of(T0 + 7 * SEC - 1), ledger.as_of(T0 + 7 * SEC)
    assert list(before) == [old["id"]] and list(boundary) == [new["id"]]
    closed = before[old["id"]]
    assert closed["status"] == "superseded" and closed["validTo"] == new["validFrom"]
    assert closed["body"] == "likes tea" and closed["sourceSessionId"] == "s1"


@pytest.mark.clause("LED-EDIT.1", "LED-REC.2", "LED-GROUP.4")
def test_an_edit_keeps_kind_unless_given_and_keeps_the_group(ledger: Ledger) -> None:
    ledger.save("spaces", kind="decision")
    active = ledger.save("tabs", kind="decision")
    ledger.at(T0 + SEC)
    ledger.group("indent", ledger.ids()[1], active["id"])
    same_kind = ledger.supersede(active["id"], "two spaces")
    assert (same_kind["kind"], same_kind["conflictGroup"]) == ("decision", "indent")
    other_kind = ledger.supersede(same_kind["id"], "four spaces", kind="constraint")
    assert (other_kind["kind"], other_kind["conflictGroup"]) == ("constraint", "indent")
    assert [r["id"] for r in ledger.listing()] == [other_kind["id"]]


@pytest.mark.clause("LED-EDIT.2", "LED-STATUS.3", "LED-WIRE.8")
def test_only_an_active_record_can_be_edited(ledger: Ledger) -> None:
    old = ledger.save("old")
    ledger.supersede(old["id"], "newer")
    prop = ledger.propose("p")
    dead = ledger.save("dead")
    ledger.delete(dead["id"])
    before = ledger.snapshot()
    for rid in (old["id"], prop["id"], dead["id"]):
        assert_refused(ledger.call(SUPERSEDE, {"recordId": rid, "body": "x"}))
    assert_bad_value(ledger.call(SUPERSEDE, {"recordId": "missing", "body": "x"}))
    assert_bad_value(ledger.call(SUPERSEDE, {"recordId": old["id"], "body": "x", "kind": "k"}))
    assert ledger.snapshot() == before


@pytest.mark.clause("LED-EDIT.3", "LED-BUDGET.3")
def test_an_edit_works_at_the_budget(ledger: Ledger) -> None:
    ledger.configure(maxRecords=2)
    a = ledger.save("a")
    ledger.save("b")
    assert_refused(ledger.call(SAVE, {"body": "c"}), BUDGET_MSG.format(held=2, budget=2))
    edited = ledger.supersede(a["id"], "a, edited")
    assert edited["status"] == "active" and len(ledger.listing()) == 2


# ---- proposals and review ------------------------------------------------------------------


@pytest.mark.clause("LED-REVIEW.1", "LED-INT.2", "LED-PROV.2", "LED-STATUS.1")
def test_a_proposal_has_an_empty_interval(ledger: Ledger) -> None:
    ledger.at(T0 + 3 * SEC)
    rec = ledger.propose(
        " likes rust ",
        kind="fact",
        sessionId="s-9",
        confidenceBps=8100,
        rationale="said so twice",
    )
    check_record_shape(rec)
    assert (rec["status"], rec["provenance"], rec["body"]) == (
        "proposed",
        "model_proposal",
        "likes rust",
    )
    assert rec["validFrom"] == rec["validTo"] == rec["createdAt"] == iso(T0 + 3 * SEC)
    assert (rec["confidenceBps"], rec["rationale"]) == (8100, "said so twice")
    assert "conflictGroup" not in rec
    assert rec["sourceSessionId"] == "s-9" and rec["kind"] == "fact"
    assert ledger.propose("bare")["kind"] == "preference"
    for t in (T0, T0 + 3 * SEC, T0 + 4 * SEC):
        assert rec["id"] not in ledger.as_of(t)


@pytest.mark.clause("LED-REVIEW.1", "LED-WIRE.3", "LED-WIRE.8")
@pytest.mark.parametrize(
    "extra",
    [
        {"confidenceBps": -1},
        {"confidenceBps": 10001},
        {"rationale": ""},
        {"rationale": "r" * 4001},
        {"sessionId": ""},
        {"sessionId": "s" * 201},
        {"kind": "opinion"},
    ],
)
def test_proposal_field_domains(ledger: Ledger, extra: dict[str, Any]) -> None:
    assert_bad_value(ledger.control("propose", {"body": "p", **extra}))
    assert ledger.listing("proposed") == []


@pytest.mark.clause("LED-REVIEW.1")
def test_proposal_field_bounds_are_inclusive(ledger: Ledger) -> None:
    rec = ledger.propose(
        "p",
        confidenceBps=10000,
        rationale="r" * 4000,
        sessionId="s" * 200,
    )
    assert rec["rationale"] == "r" * 4000
    assert ledger.propose("q", confidenceBps=0)["confidenceBps"] == 0


@pytest.mark.clause("LED-REVIEW.2", "LED-STATUS.2", "LED-PROV.2", "LED-WIRE.6")
def test_approval_opens_the_interval_at_the_approval_instant(ledger: Ledger) -> None:
    prop = ledger.propose("likes go", confidenceBps=7000, rationale="r", sessionId="s")
    ledger.at(T0 + 9 * SEC)
    live = ledger.approve(prop["id"])
    check_record_shape(live)
    assert live["status"] == "active" and "validTo" not in live
    assert live["validFrom"] == live["updatedAt"] == iso(T0 + 9 * SEC)
    assert live["createdAt"] == prop["createdAt"]
    for name in ("body", "kind", "provenance", "confidenceBps", "rationale", "sourceSessionId"):
        assert live[name] == prop[name]
    assert "supersedes" not in live
    assert ledger.listing() == [live] and ledger.listing("proposed") == []
    assert prop["id"] not in ledger.as_of(T0 + 9 * SEC - 1)
    assert prop["id"] in ledger.as_of(T0 + 9 * SEC)


@pytest.mark.clause("LED-REVIEW.3", "LED-INT.2", "LED-STATUS.2")
def test_rejection_keeps_the_empty_interval(ledger: Ledger) -> None:
    prop = ledger.propose("likes java")
    ledger.at(T0 + 2 * SEC)
    dead = ledger.reject(prop["id"])
    assert dead["status"] == "rejected" and dead["updatedAt"] == iso(T0 + 2 * SEC)
    assert dead["validFrom"] == dead["validTo"] == prop["validFrom"]
    assert dead["body"] == "likes java"
    assert ledger.listing("proposed") == [] and ledger.listing() == []
    for t in (T0, T0 + SEC, T0 + 2 * SEC):
        assert prop["id"] not in ledger.as_of(t)


@pytest.mark.clause("LED-STATUS.3", "LED-REVIEW.2", "LED-REVIEW.3", "LED-WIRE.8")
def test_only_a_proposal_can_be_approved_or_rejected(ledger: Ledger) -> None:
    active = ledger.save("active")
    approved = ledger.approve(ledger.propose("approved")["id"])
    rejected = ledger.reject(ledger.propose("rejected")["id"])
    before = ledger.snapshot()
    for rid in (active["id"], approved["id"], rejected["id"]):
        assert_refused(ledger.call(APPROVE, {"recordId": rid}))
        assert_refused(ledger.call(REJECT, {"recordId": rid}))
    assert_bad_value(ledger.call(APPROVE, {"recordId": "nope"}))
    assert_bad_value(ledger.call(REJECT, {"recordId": "nope"}))
    assert ledger.snapshot() == before


@pytest.mark.clause("LED-GROUP.1", "LED-GROUP.2", "LED-INT.3", "LED-PACKET.2", "LED-BUDGET.3")
def test_grouping_supersedes_the_other_member_at_the_run_instant(ledger: Ledger) -> None:
    first = ledger.save("deploys on friday")
    ledger.at(T0 + SEC)
    rival = ledger.save("never deploys on friday")
    ledger.configure(maxRecords=2)  # at the budget: grouping is not growth
    ledger.at(T0 + 4 * SEC)
    assert ledger.group("deploy-day", first["id"], rival["id"])["applied"] == 1
    [live] = ledger.listing()
    assert live["id"] == rival["id"] and live["validFrom"] == iso(T0 + SEC)
    loser = ledger.as_of(T0 + 4 * SEC - 1)[first["id"]]
    assert loser["status"] == "superseded" and loser["validTo"] == iso(T0 + 4 * SEC)
    assert set(ledger.as_of(T0 + 4 * SEC)) == {live["id"]}
    lines = ledger.packet()["lines"]
    assert len(lines) == 1 and lines[0].startswith(f"[{live['id'][:8]}]")


@pytest.mark.clause("LED-GROUP.3")
def test_a_group_with_no_active_member_is_legal(ledger: Ledger) -> None:
    b = ledger.save("b")
    ledger.at(T0 + SEC)
    a = ledger.save("a")
    ledger.group("g", a["id"], b["id"])
    ledger.expire_at(a["id"], T0 + DAY)
    assert ledger.sweep(T0 + DAY) == [a["id"]]
    assert ledger.listing() == [] and ledger.packet() == {"lines": [], "text": ""}
    # New members can form the group again; nothing was revived.
    ledger.at(T0 + DAY + SEC)
    d = ledger.save("d")
    ledger.at(T0 + DAY + 2 * SEC)
    c = ledger.save("c")
    assert ledger.group("g", d["id"], c["id"])["applied"] == 1
    assert ledger.ids() == [c["id"]]


@pytest.mark.clause("LED-REVIEW.4", "LED-BUDGET.1", "LED-BUDGET.2", "LED-WIRE.8")
def test_proposals_are_growth_and_count_as_held(ledger: Ledger) -> None:
    ledger.configure(maxRecords=3)
    ledger.save("a")
    ledger.propose("b")
    ledger.propose("c")
    before = ledger.snapshot()
    msg = BUDGET_MSG.format(held=3, budget=3)
    assert_refused(ledger.control("propose", {"body": "d"}), msg)
    assert_refused(ledger.call(SAVE, {"body": "d"}), msg)
    assert ledger.snapshot() == before
    ledger.reject(ledger.listing("proposed")[0]["id"])  # held drops to 2
    assert ledger.save("d")["status"] == "active"


# ---- intervals and history -----------------------------------------------------------------


@pytest.mark.clause("LED-ASOF.1", "LED-INT.1", "LED-INT.3", "LED-WIRE.6")
def test_history_reads_use_half_open_intervals(ledger: Ledger) -> None:
    a = ledger.save("v1")
    ledger.at(T0 + 10)
    b = ledger.supersede(a["id"], "v2")
    ledger.at(T0 + 20)
    c = ledger.supersede(b["id"], "v3")
    expected = {
        T0 - 1: set(),
        T0: {a["id"]},
        T0 + 9: {a["id"]},
        T0 + 10: {b["id"]},
        T0 + 19: {b["id"]},
        T0 + 20: {c["id"]},
        T0 + 10 * DAY: {c["id"]},
    }
    for t, ids in expected.items():
        assert set(ledger.as_of(t)) == ids, t


@pytest.mark.clause("LED-ASOF.1", "LED-STATUS.4")
def test_as_of_now_is_the_active_set(ledger: Ledger) -> None:
    kept = ledger.save("kept")
    gone = ledger.save("gone")
    ledger.at(T0 + SEC)
    ledger.delete(gone["id"])
    edited = ledger.supersede(kept["id"], "kept, edited")
    live = ledger.approve(ledger.propose("approved")["id"])
    ledger.propose("pending")
    now = ledger.as_of(T0 + SEC)
    assert set(now) == {r["id"] for r in ledger.listing()} == {edited["id"], live["id"]}
    assert all(r["status"] == "active" for r in now.values())


@pytest.mark.clause("LED-ASOF.3")
def test_history_reads_are_not_capped(ledger: Ledger) -> None:
    for i in range(60):
        ledger.save(f"pin {i}")
    assert len(ledger.listing()) == 50
    assert len(ledger.as_of(T0)) == 60


@pytest.mark.clause("LED-WIRE.5", "LED-ASOF.3")
@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-01-01T00:00:00Z", T0),
        ("2026-01-01t00:00:00.0005z", T0),
        ("2026-01-01 00:00:00.001Z", T0 + 1),
        ("2026-01-01T01:00:00.0019999+01:00", T0 + 1),
        ("2025-12-31T23:30:00.000-00:30", T0),
        ("2025-12-31T23:59:60Z", T0 - 1),
    ],
)
def test_client_instants_are_any_rfc3339(ledger: Ledger, text: str, ms: int) -> None:
    rec = ledger.save("x")
    ledger.at(T0 + 1)
    ledger.supersede(rec["id"], "y")
    hits = ledger.ok(AS_OF, {"scopeKey": SCOPE, "at": text})["records"]
    expected = ledger.as_of(ms)
    assert {r["id"] for r in hits} == set(expected)


@pytest.mark.clause("LED-WIRE.5", "LED-ASOF.3", "LED-WIRE.3")
@pytest.mark.parametrize(
    "text",
    [
        "",
        "2026-01-01",
        "2026-01-01T00:00:00",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00.1234567890Z",
        "2026-01-01T00:00:00+24:00",
        "0000-01-01T00:00:00Z",
        "1767225600000",
        "2026-01-01T00:00:00Z ",
    ],
)
def test_malformed_instants_are_bad_values(ledger: Ledger, text: str) -> None:
    rec = ledger.save("x")
    assert_bad_value(ledger.call(AS_OF, {"scopeKey": SCOPE, "at": text}))
    assert_bad_value(ledger.control("sweep", {"at": text}))
    assert_bad_value(ledger.control("set_clock", {"now": text}))
    assert ledger.listing() == [rec]


# ---- expiry --------------------------------------------------------------------------------


@pytest.mark.clause("LED-EXP.2", "LED-EXP.3", "LED-PACKET.1", "LED-STATUS.2")
def test_the_sweep_boundary_is_inclusive_and_closes_at_the_expiry(ledger: Ledger) -> None:
    due = ledger.save("due")
    later = ledger.save("later")
    ledger.expire_at(due["id"], T0 + DAY)
    ledger.expire_at(later["id"], T0 + DAY + 1)
    assert ledger.sweep(T0 + DAY - 1) == []
    assert ledger.sweep(T0 + DAY) == [due["id"]]
    assert ledger.sweep(T0 + 2 * DAY) == [later["id"]]  # long after its expiry
    assert ledger.sweep(T0 + 5 * DAY) == []
    assert ledger.listing() == [] and ledger.packet()["lines"] == []
    hist = ledger.as_of(T0 + DAY - 1)
    assert hist[due["id"]]["status"] == "expired"
    assert hist[due["id"]]["validTo"] == iso(T0 + DAY)  # the expiry, not the sweep
    assert hist[due["id"]]["body"] == "due" and hist[due["id"]]["provenance"] == "user_explicit"
    assert hist[later["id"]]["validTo"] == iso(T0 + DAY + 1)  # the expiry, not the sweep
    assert hist[later["id"]]["updatedAt"] == iso(T0 + 2 * DAY)
    assert due["id"] not in ledger.as_of(T0 + DAY)
    assert later["id"] in ledger.as_of(T0 + DAY)


@pytest.mark.clause("LED-EXP.2")
def test_a_record_expiring_exactly_at_the_sweep_instant_expires(ledger: Ledger) -> None:
    rec = ledger.save("x")
    ledger.expire_at(rec["id"], T0 + 1000)
    ledger.at(T0 + 5 * DAY)  # the store's clock does not matter, only the sweep's argument
    assert ledger.sweep(T0 + 999) == []
    assert ledger.sweep(T0 + 1000) == [rec["id"]]
    assert ledger.sweep(T0 + 1000) == []
    expired = ledger.as_of(T0)[rec["id"]]
    assert expired["updatedAt"] == iso(T0 + 1000) and expired["validTo"] == iso(T0 + 1000)


@pytest.mark.clause("LED-EXP.1", "LED-EXP.4")
def test_no_expiry_never_expires_and_the_sweep_ignores_the_mode(ledger: Ledger) -> None:
    forever = ledger.save("forever")
    assert "expiresAt" not in forever
    timed = ledger.save("timed")
    ledger.expire_at(timed["id"], T0 + DAY)
    assert ledger.settings()["mode"] == "off"
    assert ledger.sweep(T0 + 3650 * DAY) == [timed["id"]]
    assert ledger.ids() == [forever["id"]]


@pytest.mark.clause("LED-EXP.5", "LED-VOCAB.4", "LED-GATE.3", "LED-WIRE.8")
def test_expire_rules(ledger: Ledger) -> None:
    """An expiry is set the seed's way, ``expire``: on an active record (a later one replaces
    the earlier), never on a proposal or a missing record (refused by the gate)."""
    ledger.at(T0 + DAY)
    rec = ledger.save("x")
    ledger.at(T0 + DAY + 5)
    assert (
        ledger.batch({"operation": "expire", "targets": [rec["id"]], "afterDays": 3})["applied"]
        == 1
    )
    first = ledger.listing()[0]
    assert first["expiresAt"] == iso(T0 + 4 * DAY + 5) and first["updatedAt"] == iso(T0 + DAY + 5)
    ledger.batch({"operation": "expire", "targets": [rec["id"]], "afterDays": 1})
    assert ledger.listing()[0]["expiresAt"] == iso(T0 + 2 * DAY + 5)
    prop = ledger.propose("p")
    before = ledger.snapshot()
    for target in (prop["id"], "missing"):
        counts = ledger.batch({"operation": "expire", "targets": [target], "afterDays": 9})
        assert (counts["applied"], counts["refused"]) == (0, 1)
    assert ledger.snapshot() == before


# ---- budget --------------------------------------------------------------------------------


@pytest.mark.clause(
    "LED-BUDGET.1", "LED-BUDGET.2", "LED-BUDGET.5", "LED-WIRE.8", "LED-WIRE.3", "LED-CONS.1"
)
def test_a_save_at_the_budget_is_refused_with_the_exact_message(ledger: Ledger) -> None:
    assert ledger.settings()["maxRecords"] == 200
    ledger.configure(maxRecords=3)
    for i in range(3):
        ledger.save(f"pin {i}")
    before = ledger.snapshot()
    reply = ledger.call(SAVE, {"body": "one too many"})
    assert_refused(reply, BUDGET_MSG.format(held=3, budget=3))
    assert "\n" not in (reply.message or "")
    assert ledger.snapshot() == before


@pytest.mark.clause("LED-BUDGET.4", "LED-BUDGET.5")
def test_lowering_the_budget_below_held_evicts_nothing(ledger: Ledger) -> None:
    ids = [ledger.save(f"pin {i}")["id"] for i in range(5)]
    assert ledger.configure(maxRecords=2)["maxRecords"] == 2
    assert sorted(ledger.ids()) == sorted(ids)
    assert_refused(ledger.call(SAVE, {"body": "x"}), BUDGET_MSG.format(held=5, budget=2))
    edited = ledger.supersede(ids[0], "pin 0, edited")
    ledger.delete(ids[1])
    ledger.delete(ids[2])
    assert_refused(ledger.call(SAVE, {"body": "x"}), BUDGET_MSG.format(held=3, budget=2))
    ledger.delete(ids[3])
    assert_refused(ledger.call(SAVE, {"body": "x"}), BUDGET_MSG.format(held=2, budget=2))
    ledger.delete(edited["id"])
    assert ledger.save("fits again")["status"] == "active"


@pytest.mark.clause("LED-BUDGET.3", "LED-BUDGET.5")
def test_replacements_are_never_refused_for_budget(ledger: Ledger) -> None:
    ledger.configure(maxRecords=4, allowRemoval=True)
    a, b, c = (ledger.save(x) for x in ("a", "b", "c"))
    p = ledger.propose("p")
    assert_refused(ledger.call(SAVE, {"body": "no room"}))
    counts = ledger.consolidate(
        {"operation": "merge", "targets": [a["id"], b["id"]], "body": "a and b"},
        {"operation": "correct", "targets": [c["id"]], "body": "c, corrected"},
    )
    assert counts["applied"] == 2
    ledger.approve(p["id"])
    assert len(ledger.listing()) == 3


# ---- settings ------------------------------------------------------------------------------


@pytest.mark.clause("LED-CONS.1", "LED-CONS.2", "LED-WIRE.6")
def test_settings_defaults_and_partial_updates(ledger: Ledger) -> None:
    defaults = {
        "scopeKey": SCOPE,
        "mode": "off",
        "maxRecords": 200,
        "allowRemoval": False,
        "debounceSeconds": 600,
        "heldRecords": 0,  # how full the budget is (the bundled store reports it)
    }
    assert ledger.settings() == defaults
    full = ledger.configure(
        "propose",
        harness="claude-code",
        model="haiku",
        maxRecords=10000,
        allowRemoval=True,
        debounceSeconds=30,
    )
    assert full == {
        "scopeKey": SCOPE,
        "mode": "propose",
        "harness": "claude-code",
        "model": "haiku",
        "maxRecords": 10000,
        "allowRemoval": True,
        "debounceSeconds": 30,
        "heldRecords": 0,
    }
    assert ledger.settings() == full
    partial = ledger.configure("off", debounceSeconds=86400)
    assert partial == {**full, "mode": "off", "debounceSeconds": 86400}
    assert ledger.settings() == partial
    ledger.ctl("reset")
    assert ledger.settings() == defaults


@pytest.mark.clause("LED-CONS.1", "LED-CONS.2", "LED-WIRE.3", "LED-WIRE.8")
@pytest.mark.parametrize(
    "fields",
    [
        {"mode": "on"},
        {"mode": "Propose"},
        {"mode": ""},
        {"mode": "off", "maxRecords": 0},
        {"mode": "off", "maxRecords": 10001},
        {"mode": "off", "debounceSeconds": 29},
        {"mode": "off", "debounceSeconds": 86401},
        {"mode": "off", "harness": ""},
        {"mode": "off", "harness": "  "},
        {"mode": "off", "model": "m" * 201},
        {"mode": "propose", "maxRecords": 1, "debounceSeconds": 10},
    ],
)
def test_out_of_range_settings_change_nothing(ledger: Ledger, fields: dict[str, Any]) -> None:
    ledger.configure("propose", maxRecords=9)
    before = ledger.settings()
    assert_bad_value(ledger.call(UPDATE_SETTINGS, fields))
    assert ledger.settings() == before


# ---- consolidation -------------------------------------------------------------------------


def _counts(
    applied: int = 0, invalid: int = 0, refused: int = 0, declined: int = 0
) -> dict[str, int]:
    return {"applied": applied, "invalid": invalid, "refused": refused, "declined": declined}


@pytest.mark.clause(
    "LED-VOCAB.2", "LED-PROV.3", "LED-GATE.8", "LED-INT.3", "LED-GROUP.4", "LED-GATE.9"
)
def test_merge_supersedes_every_target_at_the_run_instant(ledger: Ledger) -> None:
    a = ledger.save("likes tea", kind="fact")
    ledger.at(T0 + SEC)
    ledger.save("likes black tea", kind="fact")
    b = ledger.save("likes green tea", kind="fact")
    ledger.group("drink", ledger.ids()[1], b["id"])
    b = ledger.listing()[0]
    ledger.at(T0 + 2 * SEC)
    c = ledger.save("prefers mornings", kind="preference")
    ledger.at(T0 + 9 * SEC)
    counts = ledger.consolidate(
        {"operation": "merge", "targets": [b["id"], a["id"]], "body": "  likes (green) tea "},
        {"operation": "merge", "targets": [c["id"], "nope"], "body": "x"},
    )
    assert counts == _counts(applied=1, refused=1)
    (merged,) = [r for r in ledger.listing() if r["id"] not in (a["id"], b["id"], c["id"])]
    assert (merged["body"], merged["kind"], merged["provenance"]) == (
        "likes (green) tea",
        "fact",
        "model_consolidation",
    )
    assert merged["supersedes"] == b["id"] and "conflictGroup" not in merged
    assert merged["validFrom"] == merged["createdAt"] == merged["updatedAt"] == iso(T0 + 9 * SEC)
    hist = ledger.as_of(T0 + 9 * SEC - 1)
    for src in (a, b):
        assert hist[src["id"]]["status"] == "superseded"
        assert hist[src["id"]]["validTo"] == iso(T0 + 9 * SEC)
        assert hist[src["id"]]["updatedAt"] == iso(T0 + 9 * SEC)
    assert set(ledger.as_of(T0 + 9 * SEC)) == {merged["id"], c["id"]}


@pytest.mark.clause("LED-VOCAB.2")
def test_merge_of_mixed_kinds_is_a_fact(ledger: Ledger) -> None:
    a = ledger.save("a", kind="decision")
    b = ledger.save("b", kind="constraint")
    assert ledger.consolidate(
        {"operation": "merge", "targets": [a["id"], b["id"]], "body": "a+b"}
    ) == _counts(applied=1)
    assert [r["kind"] for r in ledger.listing()] == ["fact"]


@pytest.mark.clause("LED-VOCAB.3", "LED-GROUP.4", "LED-PROV.3", "LED-INT.3")
def test_correct_replaces_one_record_keeping_kind_and_group(ledger: Ledger) -> None:
    old = ledger.save("uses two spaces", kind="decision")
    ledger.at(T0 + SEC)
    rec = ledger.save("uses tabs", kind="decision")
    ledger.at(T0 + 2 * SEC)
    ledger.group("indent", old["id"], rec["id"])
    ledger.at(T0 + 3 * SEC)
    assert ledger.consolidate(
        {"operation": "correct", "targets": [rec["id"]], "body": "uses spaces\n"}
    ) == _counts(applied=1)
    (new,) = ledger.listing()
    assert (new["body"], new["kind"], new["conflictGroup"], new["provenance"]) == (
        "uses spaces",
        "decision",
        "indent",
        "model_consolidation",
    )
    assert new["supersedes"] == rec["id"] and new["validFrom"] == iso(T0 + 3 * SEC)
    assert ledger.as_of(T0 + SEC)[rec["id"]]["validTo"] == new["validFrom"]


@pytest.mark.clause("LED-VOCAB.4", "LED-GATE.8")
def test_expire_sets_the_expiry_from_the_run_instant(ledger: Ledger) -> None:
    rec = ledger.save("temporary")
    ledger.at(T0 + 7)
    assert ledger.consolidate(
        {"operation": "expire", "targets": [rec["id"]], "afterDays": 3.0}
    ) == _counts(applied=1)
    (live,) = ledger.listing()
    assert live["status"] == "active"
    assert live["expiresAt"] == iso(T0 + 7 + 3 * DAY) and live["updatedAt"] == iso(T0 + 7)
    assert ledger.sweep(T0 + 7 + 3 * DAY - 1) == []
    assert ledger.sweep(T0 + 7 + 3 * DAY) == [rec["id"]]


@pytest.mark.clause("LED-VOCAB.4", "LED-WIRE.5")
def test_an_expiry_past_year_9999_is_refused_not_stored(ledger: Ledger) -> None:
    ledger.ctl("set_clock", {"now": "9999-12-30T00:00:00Z"})
    rec = ledger.save("end of time")
    before = ledger.snapshot()
    assert ledger.consolidate(
        {"operation": "expire", "targets": [rec["id"]], "afterDays": 2}
    ) == _counts(refused=1)
    assert ledger.snapshot() == before
    assert ledger.consolidate(
        {"operation": "expire", "targets": [rec["id"]], "afterDays": 1}
    ) == _counts(applied=1)
    assert ledger.listing()[0]["expiresAt"] == "9999-12-31T00:00:00.000Z"


@pytest.mark.clause("LED-VOCAB.5", "LED-GROUP.1", "LED-GROUP.2", "LED-INT.3", "LED-PACKET.2")
def test_group_keeps_the_latest_update_and_supersedes_the_rest(ledger: Ledger) -> None:
    other = ledger.save("ships yearly")
    old_member = ledger.save("ships weekly")  # written later: it survives the tie
    ledger.group("cadence", other["id"], old_member["id"])
    ledger.at(T0 + SEC)
    a = ledger.save("ships daily")
    ledger.at(T0 + 2 * SEC)
    b = ledger.save("ships hourly")
    ledger.at(T0 + 3 * SEC)
    c = ledger.save("ships monthly")
    # Touch ``a`` so it is the most recently updated member.
    ledger.at(T0 + 4 * SEC)
    ledger.expire_at(a["id"], T0 + 99 * DAY)
    ledger.at(T0 + 10 * SEC)
    assert ledger.consolidate(
        {"operation": "group", "targets": [b["id"], a["id"]], "subject": "cadence"}
    ) == _counts(applied=1)
    listed = {r["id"]: r for r in ledger.listing()}
    assert set(listed) == {a["id"], c["id"]}
    survivor = listed[a["id"]]
    assert survivor["conflictGroup"] == "cadence"
    assert survivor["validFrom"] == a["validFrom"]  # history is not rewritten
    assert survivor["updatedAt"] == iso(T0 + 10 * SEC)
    hist = ledger.as_of(T0 + 10 * SEC - 1)
    for loser in (old_member, b):
        assert hist[loser["id"]]["status"] == "superseded"
        assert hist[loser["id"]]["validTo"] == iso(T0 + 10 * SEC)
        assert hist[loser["id"]]["conflictGroup"] == "cadence"
    assert set(ledger.as_of(T0 + 10 * SEC)) == {a["id"], c["id"]}


@pytest.mark.clause("LED-VOCAB.5")
def test_group_ties_go_to_the_record_written_later(ledger: Ledger) -> None:
    a = ledger.save("a")
    b = ledger.save("b")  # same instant as a
    ledger.at(T0 + SEC)
    ledger.consolidate({"operation": "group", "targets": [b["id"], a["id"]], "subject": "s"})
    assert ledger.ids() == [b["id"]]


@pytest.mark.clause("LED-VOCAB.6", "LED-GATE.4", "LED-FORGET.3", "LED-INT.4")
def test_retire_needs_allow_removal(ledger: Ledger) -> None:
    rec = ledger.save("retire me")
    assert ledger.consolidate({"operation": "retire", "targets": [rec["id"]]}) == _counts(refused=1)
    assert ledger.ids() == [rec["id"]]
    ledger.configure(allowRemoval=True)
    ledger.at(T0 + SEC)
    assert ledger.consolidate({"operation": "retire", "targets": [rec["id"]]}) == _counts(applied=1)
    assert ledger.listing() == []
    hit = ledger.as_of(T0).get(rec["id"])
    assert hit is None or (hit["body"] == "" and hit["status"] == "deleted")
    assert "retire me" not in json.dumps(ledger.snapshot())


@pytest.mark.clause("LED-VOCAB.7", "LED-GATE.9")
def test_keep_is_declined_and_changes_nothing(ledger: Ledger) -> None:
    rec = ledger.save("keep")
    before = ledger.snapshot()
    ledger.at(T0 + SEC)
    assert ledger.consolidate({"operation": "keep", "targets": [rec["id"]]}) == _counts(declined=1)
    assert ledger.snapshot() == before


_INVALID_ELEMENTS: list[Any] = [
    "merge",
    None,
    7,
    ["keep"],
    {},
    {"targets": ["$a"]},
    {"operation": None, "targets": ["$a"]},
    {"operation": 5, "targets": ["$a"]},
    {"operation": "keep"},
    {"operation": "keep", "targets": "$a"},
    {"operation": "keep", "targets": []},
    {"operation": "keep", "targets": [""]},
    {"operation": "keep", "targets": [1]},
    {"operation": "keep", "targets": ["$a", "$b"]},
    {"operation": "keep", "targets": ["$a"], "body": "x"},
    {"operation": "keep", "targets": ["$a"], "reason": "x"},
    {"operation": "retire", "targets": ["$a"], "status": "deleted"},
    {"operation": "correct", "targets": ["$a"], "body": "x", "provenance": "user_explicit"},
    {"operation": "correct", "targets": ["$a"], "body": "x", "scopeKey": "account:local"},
    {"operation": "correct", "targets": ["$a"], "body": "x", "validFrom": "2026-01-01T00:00:00Z"},
    {"operation": "expire", "targets": ["$a"], "afterDays": 1, "expiresAt": "2027-01-01T00:00Z"},
    {"operation": "correct", "targets": ["$a"]},
    {"operation": "correct", "targets": ["$a"], "body": ""},
    {"operation": "correct", "targets": ["$a"], "body": "   "},
    {"operation": "correct", "targets": ["$a"], "body": 5},
    {"operation": "correct", "targets": ["$a"], "body": "x" * 4001},
    {"operation": "correct", "targets": ["$a", "$b"], "body": "x"},
    {"operation": "merge", "targets": ["$a"], "body": "x"},
    {"operation": "merge", "targets": ["$a", "$a"], "body": "x"},
    {"operation": "merge", "targets": ["$a", "$b"]},
    {"operation": "merge", "targets": ["$a", "$b"], "body": "x", "subject": "s"},
    {"operation": "merge", "targets": [f"id{i}" for i in range(11)], "body": "x"},
    {"operation": "expire", "targets": ["$a"]},
    {"operation": "expire", "targets": ["$a"], "afterDays": 0},
    {"operation": "expire", "targets": ["$a"], "afterDays": 3651},
    {"operation": "expire", "targets": ["$a"], "afterDays": 1.5},
    {"operation": "expire", "targets": ["$a"], "afterDays": True},
    {"operation": "expire", "targets": ["$a"], "afterDays": "3"},
    {"operation": "group", "targets": ["$a", "$b"]},
    {"operation": "group", "targets": ["$a"], "subject": "s"},
    {"operation": "group", "targets": ["$a", "$b"], "subject": ""},
    {"operation": "group", "targets": ["$a", "$b"], "subject": "  "},
    {"operation": "group", "targets": ["$a", "$b"], "subject": "s" * 81},
    {"operation": "group", "targets": ["$a", "$b"], "subject": 3},
    {"operation": "retire", "targets": ["$a", "$b"]},
    # Shape is judged before the gate: a malformed element aimed at a bad target is invalid.
    {"operation": "correct", "targets": ["no-such-id"], "body": ""},
]


def _bind(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_bind(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _bind(v, ids) for k, v in value.items()}
    return value


@pytest.mark.clause("LED-VOCAB.8", "LED-VOCAB.1", "LED-GATE.1", "LED-GATE.5", "LED-WIRE.8")
@pytest.mark.parametrize("element", _INVALID_ELEMENTS)
def test_malformed_elements_are_invalid(ledger: Ledger, element: Any) -> None:
    ids = {"$a": ledger.save("a")["id"], "$b": ledger.save("b")["id"]}
    ledger.configure(allowRemoval=True)
    before = ledger.snapshot()
    ledger.at(T0 + SEC)
    assert ledger.consolidate(_bind(element, ids)) == _counts(invalid=1)
    assert ledger.snapshot() == before


@pytest.mark.clause("LED-GATE.2", "LED-GATE.3", "LED-GATE.1", "LED-CRED.2", "LED-WIRE.8")
def test_gate_refusals(ledger: Ledger) -> None:
    a = ledger.save("a")
    b = ledger.save("b")
    prop = ledger.propose("p")
    old = ledger.save("old")
    ledger.supersede(old["id"], "new")
    before = ledger.snapshot()
    ledger.at(T0 + SEC)
    counts = ledger.consolidate(
        {"operation": "summarize", "targets": [a["id"]]},
        {"operation": "forget", "anything": [1, 2], "status": "deleted"},
        {"operation": "MERGE", "targets": [a["id"], b["id"]], "body": "x"},
        {"operation": "keep", "targets": ["no-such-id"]},
        {"operation": "correct", "targets": [prop["id"]], "body": "x"},
        {"operation": "expire", "targets": [old["id"]], "afterDays": 2},
        {"operation": "merge", "targets": [a["id"], prop["id"]], "body": "x"},
        {"operation": "merge", "targets": [a["id"], b["id"]], "body": "AKIAIOSFODNN7EXAMPLE"},
        {"operation": "retire", "targets": [a["id"]]},
    )
    assert counts == _counts(refused=9)
    assert ledger.snapshot() == before


@pytest.mark.clause("LED-GATE.1", "LED-GATE.3", "LED-GATE.9")
def test_elements_see_what_earlier_elements_did(ledger: Ledger) -> None:
    a, b, c = (ledger.save(x) for x in ("a", "b", "c"))
    ledger.at(T0 + SEC)
    counts = ledger.consolidate(
        {"operation": "correct", "targets": [a["id"]], "body": "a2"},
        {"operation": "correct", "targets": [a["id"]], "body": "a3"},  # a is superseded now
        {"operation": "keep", "targets": [b["id"]]},
        {"operation": "expire", "targets": [b["id"]], "afterDays": 1},
        {"operation": "merge", "targets": [b["id"], c["id"]], "body": "b+c"},
        {"operation": "expire", "targets": [c["id"]], "afterDays": 1},  # c is superseded now
        "junk",
    )
    assert counts == _counts(applied=3, refused=2, declined=1, invalid=1)
    assert sorted(r["body"] for r in ledger.listing()) == ["a2", "b+c"]


@pytest.mark.clause("LED-GATE.6", "LED-GATE.9")
def test_elements_past_the_twentieth_are_invalid_and_never_applied(ledger: Ledger) -> None:
    recs = [ledger.save(f"r{i}") for i in range(25)]
    ledger.at(T0 + SEC)
    ops = [{"operation": "expire", "targets": [r["id"]], "afterDays": 1} for r in recs]
    assert ledger.consolidate(*ops) == _counts(applied=20, invalid=5)
    expiring = {r["id"] for r in ledger.listing() if "expiresAt" in r}
    assert expiring == {r["id"] for r in recs[:20]}


@pytest.mark.clause("LED-GATE.7")
@pytest.mark.parametrize("mode", ["off", "propose"])
def test_the_gate_does_not_read_the_mode(ledger: Ledger, mode: str) -> None:
    a = ledger.save("a")
    ledger.configure(mode)
    assert ledger.consolidate(
        {"operation": "correct", "targets": [a["id"]], "body": "a2"}
    ) == _counts(applied=1)


@pytest.mark.clause("LED-GATE.9", "LED-WIRE.7")
def test_an_empty_batch_counts_nothing(ledger: Ledger) -> None:
    assert ledger.consolidate() == _counts()


# ---- packet --------------------------------------------------------------------------------


@pytest.mark.clause("LED-PACKET.3", "LED-PACKET.5", "LED-PACKET.1", "LED-STATUS.4")
def test_packet_order_and_lines(ledger: Ledger) -> None:
    explicit_old = ledger.save("explicit old", kind="fact")
    ledger.at(T0 + SEC)
    explicit_new = ledger.save("explicit\r\n\nnew\rline", kind="decision")
    low = ledger.approve(ledger.propose("low", confidenceBps=100)["id"])
    ledger.at(T0 + 2 * SEC)
    none_old = ledger.approve(ledger.propose("no confidence old")["id"])
    ledger.at(T0 + 3 * SEC)
    high = ledger.approve(ledger.propose("high", confidenceBps=9000, kind="constraint")["id"])
    none_new = ledger.approve(ledger.propose("no confidence new")["id"])
    zero = ledger.approve(ledger.propose("zero", confidenceBps=0)["id"])
    high_tie = ledger.approve(ledger.propose("high tie", confidenceBps=9000)["id"])
    ledger.propose("pending proposal")
    gone = ledger.save("deleted")
    ledger.delete(gone["id"])
    packet = ledger.packet()
    order = [explicit_new, explicit_old, high_tie, high, low, zero, none_new, none_old]
    expected = [
        f"[{r['id'][:8]}] {r['kind']} ({r['provenance']}): {r['body']}".replace(
            "explicit\r\n\nnew\rline", "explicit new line"
        )
        for r in order
    ]
    assert packet["lines"] == expected
    assert packet["text"] == "\n".join(expected)
    assert expected[0] == f"[{explicit_new['id'][:8]}] decision (user_explicit): explicit new line"


@pytest.mark.clause("LED-PACKET.4")
def test_packet_drops_whole_lines_past_4000_characters(ledger: Ledger) -> None:
    prefix = len("[12345678] fact (user_explicit): ")
    big = ledger.save("b" * (2500 - prefix), kind="fact")  # a 2500-char line
    ledger.at(T0 + SEC)
    bigger = ledger.save("B" * (3000 - prefix), kind="fact")  # 3000: first in order
    ledger.at(T0 + 2 * SEC)
    older_small = ledger.save("s" * (999 - prefix), kind="fact")
    ledger.at(T0 + 3 * SEC)
    tiny = ledger.save("tt", kind="fact")
    # Order: tiny (35), older_small (999), bigger (3000), big (2500).  With the newlines,
    # tiny + older_small + bigger = 4036 > 4000: bigger is dropped whole, and the later, smaller
    # big still fits (35 + 1 + 999 + 1 + 2500 = 3536).
    packet = ledger.packet()
    ids = [line[1:9] for line in packet["lines"]]
    assert ids == [tiny["id"][:8], older_small["id"][:8], big["id"][:8]]
    assert bigger["id"][:8] not in ids
    assert len(packet["text"]) == 3536


@pytest.mark.clause("LED-PACKET.4")
def test_packet_text_may_be_exactly_4000_characters(ledger: Ledger) -> None:
    prefix = len("[12345678] fact (user_explicit): ")
    ledger.save("a" * (2000 - prefix), kind="fact")
    ledger.at(T0 + SEC)
    ledger.save("b" * (1999 - prefix), kind="fact")  # 2000 + 1 + 1999 = 4000
    assert len(ledger.packet()["text"]) == 4000
    ledger.at(T0 + 2 * SEC)
    ledger.save("c", kind="fact")  # newest: first; now the 2000-char line no longer fits
    packet = ledger.packet()
    assert len(packet["lines"]) == 2 and len(packet["text"]) <= 4000
    assert packet["lines"][0].endswith(": c") and packet["lines"][1].endswith("b")


@pytest.mark.clause("LED-PACKET.4")
def test_the_newlines_between_lines_count_toward_the_cap(ledger: Ledger) -> None:
    prefix = len("[12345678] fact (user_explicit): ")
    ledger.save("a" * (2000 - prefix), kind="fact")
    ledger.at(T0 + SEC)
    newer = ledger.save("b" * (2000 - prefix), kind="fact")
    # 2000 + 2000 = 4000 characters of lines, but 4001 with the newline: one line only.
    packet = ledger.packet()
    assert [line[1:9] for line in packet["lines"]] == [newer["id"][:8]]
    assert len(packet["text"]) == 2000


@pytest.mark.clause("LED-PACKET.1", "LED-EXP.3")
def test_expired_superseded_and_proposed_records_never_reach_the_packet(ledger: Ledger) -> None:
    a = ledger.save("expiring")
    b = ledger.save("edited away")
    ledger.supersede(b["id"], "edited")
    ledger.propose("proposal")
    ledger.expire_at(a["id"], T0 + DAY)
    assert len(ledger.packet()["lines"]) == 2
    ledger.sweep(T0 + DAY)
    assert [line.split(": ", 1)[1] for line in ledger.packet()["lines"]] == ["edited"]


# ---- test controls -------------------------------------------------------------------------


@pytest.mark.clause("LED-WIRE.7", "LED-REC.3")
def test_reset_empties_the_ledger(ledger: Ledger) -> None:
    rec = ledger.save("x")
    ledger.configure("propose", maxRecords=5)
    assert ledger.ctl("reset") == {"ok": True}
    assert ledger.listing() == [] and ledger.settings()["maxRecords"] == 200
    assert ledger.as_of(T0) == {}
    assert ledger.save("y")["id"] != rec["id"]


@pytest.mark.clause("LED-WIRE.7", "LED-WIRE.5")
def test_set_clock_freezes_and_null_restores_the_real_clock(ledger: Ledger) -> None:
    assert ledger.ctl("set_clock", {"now": "2030-05-06T07:08:09.0107+02:00"}) == {
        "now": "2030-05-06T05:08:09.010Z"
    }
    assert ledger.save("x")["createdAt"] == "2030-05-06T05:08:09.010Z"
    real = ledger.ctl("set_clock", {"now": None})["now"]
    import time

    assert abs(_ms(real) - time.time() * 1000) < 60_000
    assert abs(_ms(ledger.save("y")["createdAt"]) - time.time() * 1000) < 60_000


def _ms(text: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.mark.clause("LED-WIRE.5", "LED-WIRE.7")
@pytest.mark.parametrize(
    ("sent", "answered"),
    [
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"),
        ("0196-01-10T16:13:52-16:37", "0196-01-11T08:50:52.000Z"),
        ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
        ("9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59.999Z"),
    ],
)
def test_answered_times_always_have_four_digit_years(
    ledger: Ledger, sent: str, answered: str
) -> None:
    assert ledger.ctl("set_clock", {"now": sent}) == {"now": answered}
    rec = ledger.save("x")
    assert rec["validFrom"] == rec["createdAt"] == rec["updatedAt"] == answered


@pytest.mark.clause("LED-WIRE.5")
@pytest.mark.parametrize("sent", ["0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"])
def test_instants_outside_years_1_to_9999_are_bad_values(ledger: Ledger, sent: str) -> None:
    assert_bad_value(ledger.control("set_clock", {"now": sent}))


@pytest.mark.clause("LED-WIRE.7")
@pytest.mark.parametrize("name", ["unknown", "resets", ""])
def test_unknown_test_controls_are_not_found(ledger: Ledger, name: str) -> None:
    reply = ledger.control(name, {})
    assert reply.status == 404 and reply.code == -32601
