"""Consolidation settings, the six operations and the gate."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger import consolidation
from reference.ledger.consolidation import (
    MAX_BATCH,
    apply_batch,
    batch_alternatives,
    element_alternatives,
)
from reference.ledger.lifecycle import propose, save
from reference.ledger.outcome import INVALID_PARAMS, REFUSED, Refused
from reference.ledger.records import LedgerState, empty_state, find_record
from reference.ledger.timefmt import format_rfc3339
from tests.common.ledger_strategies import (
    DAY,
    MODEL_EXPIRY,
    MODEL_GROUPED_PROPOSAL,
    T0,
    ok,
    refused,
    saved,
    sentence,
)

LOCAL = "account:local"
T1 = T0 + 1000


def batch(state: LedgerState, ops: list[Any], now: int = T1) -> tuple[LedgerState, dict[str, int]]:
    return ok(state, "_test/consolidate", {"operations": ops}, now)


def allow_removal(state: LedgerState, on: bool = True) -> LedgerState:
    state, _ = ok(
        state, "memory/update_consolidation_settings", {"mode": "off", "allowRemoval": on}, T0 + 500
    )
    return state


# --- settings -------------------------------------------------------------------------------


@pytest.mark.clause("LED-CONS.1", "LED-CONS.2")
def test_settings_defaults_and_partial_update() -> None:
    state, s = ok(empty_state(), "memory/get_consolidation_settings", {}, T0)
    assert s == {
        "scopeKey": LOCAL,
        "mode": "off",
        "maxRecords": 200,
        "allowRemoval": False,
        "debounceSeconds": 600,
    }
    state, s = ok(
        state,
        "memory/update_consolidation_settings",
        {"mode": "propose", "harness": "claude-code", "model": "haiku", "debounceSeconds": 30},
        T0,
    )
    assert s == {
        "scopeKey": LOCAL,
        "mode": "propose",
        "harness": "claude-code",
        "model": "haiku",
        "maxRecords": 200,
        "allowRemoval": False,
        "debounceSeconds": 30,
    }
    state, s2 = ok(
        state, "memory/update_consolidation_settings", {"mode": "off", "allowRemoval": True}, T0
    )
    assert s2 == {**s, "mode": "off", "allowRemoval": True}
    _, got = ok(state, "memory/get_consolidation_settings", {}, T0)
    assert got == s2


@pytest.mark.clause("LED-CONS.2", "LED-WIRE.2", "LED-WIRE.3")
@pytest.mark.parametrize(
    "params, codes",
    [
        ({"mode": "on"}, {REFUSED, INVALID_PARAMS}),
        ({"mode": "off", "debounceSeconds": 29}, {REFUSED, INVALID_PARAMS}),
        ({"mode": "off", "debounceSeconds": 86401}, {REFUSED, INVALID_PARAMS}),
        ({"mode": "off", "harness": ""}, {REFUSED, INVALID_PARAMS}),
        ({"mode": "off", "model": "m" * 201}, {REFUSED, INVALID_PARAMS}),
        ({"mode": "off", "allowRemoval": "yes"}, {INVALID_PARAMS}),
        ({"mode": "off", "scopeKey": LOCAL}, {REFUSED, INVALID_PARAMS}),  # LED-SAVE.2: open
        ({}, {INVALID_PARAMS}),
    ],
)
def test_settings_bad_params(params: dict[str, Any], codes: set[int]) -> None:
    assert (
        refused(empty_state(), "memory/update_consolidation_settings", params, T0).allowed_codes
        == codes
    )


@pytest.mark.clause("LED-CONS.2", "LED-WIRE.2")
def test_get_settings_takes_no_params() -> None:
    r = refused(empty_state(), "memory/get_consolidation_settings", {"scopeKey": LOCAL}, T0)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}  # a scope is refused; the code is open


# --- the operations -------------------------------------------------------------------------


@pytest.mark.clause("LED-VOCAB.2", "LED-PROV.3", "LED-GATE.8", "LED-INT.3")
def test_merge_supersedes_every_source() -> None:
    state = empty_state()
    state, _ = ok(state, "memory/save_memory_record", {"body": "likes tea", "kind": "fact"}, T0)
    state, _ = ok(
        state, "memory/save_memory_record", {"body": "drinks tea daily", "kind": "fact"}, T0 + 1
    )
    state, _ = ok(
        state, "memory/save_memory_record", {"body": "green tea", "kind": "preference"}, T0 + 2
    )
    a, b, c = (r.id for r in state.records)
    state, counts = batch(state, [{"operation": "merge", "targets": [b, a], "body": " tea daily "}])
    assert counts == {"applied": 1, "invalid": 0, "refused": 0, "declined": 0}
    new = state.records[-1]
    assert (new.body, new.kind, new.provenance, new.status) == (
        "tea daily",
        "fact",
        "model_consolidation",
        "active",
    )
    assert new.supersedes == b and new.conflict_group is None
    assert new.valid_from == new.created_at == new.updated_at == T1
    for src in (a, b):
        rec = find_record(state, src)
        assert rec is not None and rec.status == "superseded" and rec.valid_to == T1
        assert rec.superseded_by == new.id and rec.updated_at == T1
    state, _ = batch(state, [{"operation": "merge", "targets": [new.id, c], "body": "tea"}], T1 + 1)
    assert state.records[-1].kind == "fact"  # kinds differ -> fact


@pytest.mark.clause("LED-VOCAB.3", "LED-GROUP.4")
def test_correct_keeps_kind_and_group() -> None:
    state, p = ok(
        empty_state(),
        MODEL_GROUPED_PROPOSAL,
        {"body": "uses emacs", "kind": "fact", "conflictGroup": "editor"},
        T0,
    )
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p["id"]}, T0 + 1)
    state, counts = batch(
        state, [{"operation": "correct", "targets": [p["id"]], "body": "uses vim"}]
    )
    assert counts["applied"] == 1
    new = state.records[-1]
    assert (new.body, new.kind, new.conflict_group, new.supersedes) == (
        "uses vim",
        "fact",
        "editor",
        p["id"],
    )
    assert new.provenance == "model_consolidation" and new.valid_from == T1
    old = find_record(state, p["id"])
    assert old is not None and old.status == "superseded" and old.valid_to == T1


@pytest.mark.clause("LED-VOCAB.4", "LED-EXP.2")
@pytest.mark.parametrize("days", [1, 30, 3650, 2.0])
def test_expire_sets_the_expiry_only(days: float) -> None:
    state, (a,) = saved(["temporary"])
    state, counts = batch(state, [{"operation": "expire", "targets": [a], "afterDays": days}])
    assert counts["applied"] == 1
    rec = find_record(state, a)
    assert rec is not None and rec.status == "active" and rec.valid_to is None
    assert rec.expires_at == T1 + int(days) * DAY and rec.updated_at == T1
    state, res = ok(state, "_test/sweep", {"at": format_rfc3339(T1 + int(days) * DAY)}, T1)
    assert res == {"expired": [a]}


@pytest.mark.clause("LED-VOCAB.4")
@given(
    touched=st.integers(0, 3 * DAY),
    run_after=st.integers(1, 3 * DAY),
    days=st.integers(1, 3650),
)
def test_expire_counted_from_the_records_own_instants_departs_from_the_reference(
    touched: int, run_after: int, days: int
) -> None:
    """The seed does not say where ``afterDays`` counts from: every allowed ledger of an
    ``expire`` is the reference's (the run instant, no departure) first, then one per other
    instant of the record (createdAt, validFrom, updatedAt), each departing from LED-VOCAB.4."""
    state, (a,) = saved(["temporary"])
    if touched:  # updatedAt moves away from createdAt/validFrom
        state, _ = ok(
            state,
            MODEL_EXPIRY,
            {"recordId": a, "expiresAt": format_rfc3339(T0 + 9000 * DAY)},
            T0 + touched,
        )
    rec = find_record(state, a)
    assert rec is not None
    now = rec.updated_at + run_after
    element = {"operation": "expire", "targets": [a], "afterDays": days}
    alts = element_alternatives(state, LOCAL, 0, element, now)
    assert all(v == "applied" for _s, v in alts)
    (own, _v), *others = alts
    got = find_record(own, a)
    assert got is not None and got.expires_at == now + days * DAY and not own.departures
    bases = sorted({rec.created_at, rec.valid_from, rec.updated_at} - {now})
    seen = []
    for other, _v in others:
        moved = find_record(other, a)
        assert moved is not None and other.departures == {"LED-VOCAB.4"}
        assert moved.updated_at == now and moved.status == "active"
        assert moved.expires_at is not None
        seen.append(moved.expires_at - days * DAY)
    assert sorted(seen) == bases


@pytest.mark.clause("LED-VOCAB.5", "LED-GROUP.2")
@given(n=st.integers(2, 5), touch=st.lists(st.integers(0, 4), max_size=3))
def test_group_with_another_survivor_departs_from_the_reference(n: int, touch: list[int]) -> None:
    """The seed says one member of a ``group`` survives, not which: every allowed ledger is
    the reference's (the member updated most recently survives, no departure) first, then one
    per other member surviving, each departing from LED-VOCAB.5; in every one exactly one
    member is active and the others are superseded by it."""
    state, ids = saved([f"claim {i}" for i in range(n)])
    for k, i in enumerate(touch):  # updatedAt moves for some members
        if i < n:
            state, _ = ok(
                state,
                MODEL_EXPIRY,
                {"recordId": ids[i], "expiresAt": format_rfc3339(T0 + 9000 * DAY)},
                T0 + 100 + k,
            )
    element = {"operation": "group", "targets": ids, "subject": "topic"}
    (own, _v), *others = element_alternatives(state, LOCAL, 0, element, T1)
    survivors = []
    for alt, departs in [(own, frozenset()), *((o, {"LED-VOCAB.5"}) for o, _v in others)]:
        assert alt.departures == departs
        recs = [find_record(alt, i) for i in ids]
        active = [r for r in recs if r is not None and r.status == "active"]
        assert len(active) == 1
        assert all(
            r is not None and r.superseded_by == active[0].id for r in recs if r is not active[0]
        )
        survivors.append(active[0].id)
    before = [find_record(state, i) for i in ids]
    latest = max((r for r in before if r is not None), key=lambda r: (r.updated_at, r.seq))
    assert survivors[0] == latest.id
    assert sorted(survivors) == sorted(ids)  # each member survives in exactly one ledger


def _sessions_ledger(n: int) -> tuple[LedgerState, list[str]]:
    """``n`` active records, each from a session of its own (so a merge or a correction of
    them has results that carry no session or one target's: open points of their own)."""
    state = empty_state()
    ids = []
    for i in range(n):
        state, rec = ok(state, "_test/propose", {"body": f"claim {i}", "sessionId": f"s{i}"}, T0)
        state, _ = ok(state, "memory/approve_memory_record", {"recordId": rec["id"]}, T0 + 1)
        ids.append(rec["id"])
    return state, ids


@pytest.mark.clause("LED-GATE.1", "LED-VOCAB.2", "LED-VOCAB.4", "LED-VOCAB.5")
@given(data=st.data())
def test_departing_readings_never_crowd_out_a_reading_the_reference_allows(
    data: st.DataObject,
) -> None:
    """A batch keeps at most MAX_BRANCHES end states.  The ledgers departing from a reference
    clause (an ``expire``'s instant, a ``group``'s survivor) come last: the end states that
    depart from nothing are exactly those of the same batch with no departing reading at all."""
    state, ids = _sessions_ledger(8)
    pair = st.lists(st.sampled_from(ids), min_size=2, max_size=2, unique=True)
    element = st.one_of(
        pair.map(lambda t: {"operation": "group", "targets": t, "subject": "topic"}),
        pair.map(lambda t: {"operation": "merge", "targets": t, "body": "merged"}),
        st.sampled_from(ids).map(lambda i: {"operation": "expire", "targets": [i], "afterDays": 1}),
        st.sampled_from(ids).map(
            lambda i: {"operation": "correct", "targets": [i], "body": "fixed"}
        ),
    )
    ops = data.draw(st.lists(element, min_size=1, max_size=20))
    now = T1 + DAY
    with_departures = batch_alternatives(state, LOCAL, ops, now)
    assert not with_departures[0][0].departures  # the model's own end state first
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(consolidation, "_group_departures", lambda *a: [])
        mp.setattr(consolidation, "_expiry_departures", lambda *a: [])
        without = batch_alternatives(state, LOCAL, ops, now)
    kept = [(st_, counts) for st_, counts in with_departures if not st_.departures]
    assert kept == without


@pytest.mark.clause("LED-VOCAB.5", "LED-GROUP.2", "LED-INT.3")
def test_group_survivor_is_the_most_recently_updated() -> None:
    state, (a, b, c) = saved(["tabs", "spaces", "two spaces"])
    # Touch a: now the most recently updated of the three.
    state, _ = ok(
        state,
        MODEL_EXPIRY,
        {"recordId": a, "expiresAt": format_rfc3339(T0 + 99 * DAY)},
        T0 + 50,
    )
    state, counts = batch(
        state, [{"operation": "group", "targets": [b, a, c], "subject": "indent"}]
    )
    assert counts["applied"] == 1
    survivor = find_record(state, a)
    assert (
        survivor is not None and survivor.status == "active" and survivor.conflict_group == "indent"
    )
    assert survivor.valid_from == T0 and survivor.updated_at == T1  # history not rewritten
    for loser in (b, c):
        rec = find_record(state, loser)
        assert rec is not None and rec.status == "superseded" and rec.valid_to == T1
        assert rec.superseded_by == a and rec.conflict_group == "indent"


@pytest.mark.clause("LED-VOCAB.5")
def test_group_includes_the_existing_active_member_and_breaks_ties_by_write_order() -> None:
    state, p = ok(
        empty_state(), MODEL_GROUPED_PROPOSAL, {"body": "dark", "conflictGroup": "theme"}, T0
    )
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p["id"]}, T0 + 300)
    state, (x, y) = saved(["light", "solarized"], now=T0 + 100, state=state)
    # p was updated last (approval at T0+300): it survives against x and y.
    state, _ = batch(state, [{"operation": "group", "targets": [x, y], "subject": "theme"}])
    assert find_record(state, p["id"]).status == "active"  # type: ignore[union-attr]
    assert {find_record(state, i).status for i in (x, y)} == {"superseded"}  # type: ignore[union-attr]
    # Equal updatedAt: the record written later survives.
    state2, (u,) = saved(["u"], now=T1 + 10)
    state2, w = save(state2, "w", T1 + 10)
    assert not isinstance(w, Refused)
    state2, _ = batch(
        state2, [{"operation": "group", "targets": [w.id, u], "subject": "s"}], T1 + 20
    )
    assert find_record(state2, w.id).status == "active"  # type: ignore[union-attr]
    assert find_record(state2, u).status == "superseded"  # type: ignore[union-attr]


@pytest.mark.clause("LED-VOCAB.6", "LED-GATE.4", "LED-FORGET.3")
def test_retire_needs_allow_removal() -> None:
    state, (a,) = saved(["old habit"])
    s1, counts = batch(state, [{"operation": "retire", "targets": [a]}])
    assert counts == {"applied": 0, "invalid": 0, "refused": 1, "declined": 0} and s1 == state
    state = allow_removal(state)
    state, counts = batch(state, [{"operation": "retire", "targets": [a]}])
    assert counts["applied"] == 1
    rec = find_record(state, a)
    assert rec is not None and rec.status == "deleted" and rec.body == "" and rec.valid_to == T1


@pytest.mark.clause("LED-VOCAB.7", "LED-GATE.9")
def test_keep_is_declined_and_changes_nothing() -> None:
    state, (a,) = saved(["fine as is"])
    s1, counts = batch(state, [{"operation": "keep", "targets": [a]}])
    assert counts == {"applied": 0, "invalid": 0, "refused": 0, "declined": 1} and s1 == state


# --- invalid vs refused ---------------------------------------------------------------------

A, B = "00000001-0000-4000-8000-000000000001", "00000002-0000-4000-8000-000000000002"
INVALID_ELEMENTS = [
    5,
    "merge",
    None,
    [],
    {},
    {"operation": 3, "targets": [A]},
    {"targets": [A]},
    {"operation": "keep"},
    {"operation": "keep", "targets": A},
    {"operation": "keep", "targets": []},
    {"operation": "keep", "targets": [""]},
    {"operation": "keep", "targets": [7]},
    {"operation": "keep", "targets": [A, B]},
    {"operation": "keep", "targets": [A], "body": "why"},
    {"operation": "merge", "targets": [A], "body": "x"},
    {"operation": "merge", "targets": [A, A], "body": "x"},
    {"operation": "merge", "targets": [A, B] + [f"id{i}" for i in range(9)], "body": "x"},
    {"operation": "merge", "targets": [A, B]},
    {"operation": "merge", "targets": [A, B], "body": "   "},
    {"operation": "merge", "targets": [A, B], "body": "x" * 4001},
    {"operation": "merge", "targets": [A, B], "body": 7},
    {"operation": "correct", "targets": [A, B], "body": "x"},
    {"operation": "correct", "targets": [A], "body": "x", "status": "active"},
    {"operation": "correct", "targets": [A], "body": "x", "provenance": "user_explicit"},
    {"operation": "correct", "targets": [A], "body": "x", "scopeKey": "account:other"},
    {"operation": "correct", "targets": [A], "body": "x", "validFrom": "2026-01-01T00:00:00Z"},
    {"operation": "correct", "targets": [A], "body": "x", "kind": "fact"},
    {"operation": "expire", "targets": [A]},
    {"operation": "expire", "targets": [A], "afterDays": 0},
    {"operation": "expire", "targets": [A], "afterDays": 3651},
    {"operation": "expire", "targets": [A], "afterDays": 1.5},
    {"operation": "expire", "targets": [A], "afterDays": True},
    {"operation": "expire", "targets": [A], "afterDays": "3"},
    {"operation": "expire", "targets": [A], "afterDays": 3, "expiresAt": "2027-01-01T00:00:00Z"},
    {"operation": "group", "targets": [A, B]},
    {"operation": "group", "targets": [A, B], "subject": ""},
    {"operation": "group", "targets": [A, B], "subject": "  "},
    {"operation": "group", "targets": [A, B], "subject": "s" * 81},
    {"operation": "group", "targets": [A], "subject": "s"},
    {"operation": "retire", "targets": [A], "body": "bye"},
    {"operation": "retire", "targets": [A, B]},
]


@pytest.mark.clause("LED-GATE.1", "LED-GATE.5", "LED-VOCAB.1", "LED-VOCAB.8")
@pytest.mark.parametrize("element", INVALID_ELEMENTS)
def test_shape_problems_are_invalid(element: object) -> None:
    state, (a, b) = saved(["a", "b"])
    assert (a, b) == (A, B)
    state = allow_removal(state)
    s1, counts = batch(state, [element])
    assert counts == {"applied": 0, "invalid": 1, "refused": 0, "declined": 0}
    assert s1 == state


@pytest.mark.clause("LED-GATE.1", "LED-GATE.2", "LED-GATE.3", "LED-CRED.2")
@pytest.mark.parametrize(
    "element",
    [
        {"operation": "delete", "targets": [A]},
        {"operation": "Merge", "targets": [A, B], "body": "x"},
        {"operation": "obliterate", "status": "deleted", "whatever": 1},
        {"operation": "keep", "targets": ["no-such-id"]},
        {"operation": "correct", "targets": ["no-such-id"], "body": "x"},
        {"operation": "merge", "targets": [A, "no-such-id"], "body": "x"},
        {"operation": "correct", "targets": [A], "body": "token: abcdefghijklmnop"},
        {"operation": "merge", "targets": [A, B], "body": "sk-ant-api03-abcdefghijklmnopqrstu"},
    ],
)
def test_gate_refusals(element: object) -> None:
    state, (a, b) = saved(["a", "b"])
    s1, counts = batch(state, [element])
    assert counts == {"applied": 0, "invalid": 0, "refused": 1, "declined": 0}
    assert s1 == state


@pytest.mark.clause("LED-GATE.3")
def test_foreign_and_non_active_targets_refused() -> None:
    state, (a, b) = saved(["a", "b"])
    state, foreign = propose(state, "account:other", "theirs", T0 + 5)
    assert not isinstance(foreign, Refused)
    state, prop = ok(state, "_test/propose", {"body": "pending"}, T0 + 6)
    for targets in ([foreign.id], [prop["id"]]):
        s1, counts = batch(state, [{"operation": "keep", "targets": targets}])
        assert counts["refused"] == 1 and s1 == state
    # An earlier element of the same batch superseded the target: refused.
    state, counts = batch(
        state,
        [
            {"operation": "correct", "targets": [a], "body": "a2"},
            {"operation": "correct", "targets": [a], "body": "a3"},
            {"operation": "merge", "targets": [a, b], "body": "ab"},
        ],
    )
    assert counts == {"applied": 1, "invalid": 0, "refused": 2, "declined": 0}
    # The model-level gate refuses a local target when run for the other scope.
    s2, report = apply_batch(state, "account:other", [{"operation": "keep", "targets": [b]}], T1)
    assert report.counts.refused == 1 and s2 == state


@pytest.mark.clause("LED-GATE.1", "LED-GATE.9")
def test_rest_of_the_batch_still_applies() -> None:
    state, (a, b) = saved(["a", "b"])
    state, counts = batch(
        state,
        [
            {"operation": "nope"},
            {"operation": "correct", "targets": [a], "body": "a2"},
            42,
            {"operation": "keep", "targets": [b]},
            {"operation": "expire", "targets": [b], "afterDays": 2},
        ],
    )
    assert counts == {"applied": 2, "invalid": 1, "refused": 1, "declined": 1}


@pytest.mark.clause("LED-GATE.6")
def test_elements_past_twenty_are_invalid_and_never_applied() -> None:
    state, ids = saved([f"r{i}" for i in range(22)])
    ops: list[object] = [{"operation": "keep", "targets": [ids[i]]} for i in range(MAX_BATCH)]
    ops.append({"operation": "correct", "targets": [ids[20]], "body": "changed"})
    ops.append({"operation": "keep", "targets": [ids[21]]})
    s1, counts = batch(state, ops)
    assert counts == {"applied": 0, "invalid": 2, "refused": 0, "declined": 20}
    assert s1 == state


@pytest.mark.clause("LED-GATE.7")
@given(st.lists(sentence, min_size=3, max_size=6), st.data())
def test_the_gate_ignores_the_mode(bodies: list[str], data: st.DataObject) -> None:
    state, ids = saved(bodies)
    ops = [
        {"operation": "merge", "targets": ids[:2], "body": "merged"},
        {"operation": "expire", "targets": [ids[2]], "afterDays": data.draw(st.integers(1, 3650))},
    ]
    results = []
    for mode in ("off", "propose"):
        s, _ = ok(state, "memory/update_consolidation_settings", {"mode": mode}, T0 + 100)
        s, counts = batch(s, ops)
        assert counts["applied"] == 2
        results.append(s.records)
    assert results[0] == results[1]


@pytest.mark.clause("LED-GATE.8")
@given(
    st.lists(
        st.sampled_from(["merge", "correct", "expire", "group", "retire"]), min_size=1, max_size=8
    )
)
def test_one_batch_one_instant(ops: list[str]) -> None:
    state, ids = saved([f"r{i}" for i in range(20)])
    state = allow_removal(state)
    before = state.records
    elements: list[object] = []
    for i, op in enumerate(ops):
        pair = [ids[2 * i], ids[2 * i + 1]]
        element: dict[str, object] = {
            "operation": op,
            "targets": pair if op in ("merge", "group") else pair[:1],
        }
        if op in ("merge", "correct"):
            element["body"] = f"new {i}"
        if op == "expire":
            element["afterDays"] = 3
        if op == "group":
            element["subject"] = f"g{i}"
        elements.append(element)
    state, counts = batch(state, elements)
    assert counts["applied"] == len(ops)
    for old, new in zip(before, state.records, strict=False):
        if new != old:
            assert new.updated_at == T1
            assert new.valid_to in (None, T1)
    for new in state.records[len(before) :]:
        assert new.valid_from == new.created_at == new.updated_at == T1
    for r in state.records:
        if r.expires_at is not None:
            assert r.expires_at == T1 + 3 * DAY


@pytest.mark.clause("LED-GATE.9", "LED-WIRE.7")
def test_consolidate_params() -> None:
    for params in (
        {},
        {"operations": {"operation": "keep"}},
        {"operations": None},
        {"operations": [], "x": 1},
    ):
        assert refused(empty_state(), "_test/consolidate", params, T0).allowed_codes == {
            INVALID_PARAMS
        }
    _, counts = batch(empty_state(), [])
    assert counts == {"applied": 0, "invalid": 0, "refused": 0, "declined": 0}
