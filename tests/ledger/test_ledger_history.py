"""Validity intervals, as-of reads and expiry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger.expiry import set_expiry, sweep_expired
from reference.ledger.intervals import interval_contains, list_as_of
from reference.ledger.outcome import INVALID_PARAMS, REFUSED, Ok, Refused
from reference.ledger.packet import build_packet
from reference.ledger.records import LedgerState, empty_state, find_record
from reference.ledger.search import search
from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import handle
from tests.common.ledger_strategies import DAY, MODEL_EXPIRY, T0, ok, refused, result_of, saved

LOCAL = "account:local"


def as_of(state: LedgerState, at: int) -> Ok:
    new, out = handle(
        state, "memory/list_memory_records_as_of", {"scopeKey": LOCAL, "at": format_rfc3339(at)}, at
    )
    assert new is state and isinstance(out, Ok)
    return out


def ids_at(state: LedgerState, at: int) -> set[str]:
    return {r["id"] for r in result_of(as_of(state, at))["records"]}


@pytest.mark.clause("LED-INT.1", "LED-INT.3", "LED-ASOF.1")
def test_supersession_boundary_is_half_open() -> None:
    state, (a,) = saved(["v1"])
    state, b = ok(state, "memory/supersede_memory_record", {"recordId": a, "body": "v2"}, T0 + 100)
    assert ids_at(state, T0 - 1) == set()
    assert ids_at(state, T0) == {a}
    assert ids_at(state, T0 + 99) == {a}
    assert ids_at(state, T0 + 100) == {b["id"]}
    assert ids_at(state, T0 + 10**9) == {b["id"]}
    old = result_of(as_of(state, T0 + 50))["records"][0]
    assert old["status"] == "superseded" and old["body"] == "v1"
    assert old["validTo"] == b["validFrom"] == format_rfc3339(T0 + 100)


@pytest.mark.clause("LED-INT.2", "LED-ASOF.1")
def test_proposals_and_rejections_never_held() -> None:
    state, p = ok(empty_state(), "_test/propose", {"body": "maybe"}, T0)
    state, q = ok(state, "_test/propose", {"body": "maybe not"}, T0 + 1)
    state, _ = ok(state, "memory/reject_memory_record", {"recordId": q["id"]}, T0 + 2)
    for t in (T0 - 1, T0, T0 + 1, T0 + 2, T0 + 10**6):
        assert ids_at(state, t) == set()
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p["id"]}, T0 + 50)
    assert ids_at(state, T0 + 49) == set() and ids_at(state, T0 + 50) == {p["id"]}


@pytest.mark.clause("LED-ASOF.2", "LED-FORGET.3", "LED-INT.4")
def test_tombstone_in_history_is_bodiless_and_optional() -> None:
    state, (a, b) = saved(["private thing", "public thing"])
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": a}, T0 + 10)
    out = as_of(state, T0 + 5)
    by_id = {r["id"]: r for r in result_of(out)["records"]}
    assert set(by_id) == {a, b}
    assert by_id[a]["body"] == "" and by_id[a]["status"] == "deleted"
    assert out.may_omit == {a}
    assert ids_at(state, T0 + 10) == {b}


@pytest.mark.clause("LED-ASOF.3", "LED-WIRE.5")
def test_as_of_params() -> None:
    state, ids = saved([f"p{i}" for i in range(60)])
    assert len(ids_at(state, T0 + 100)) == 60  # no cap
    for bad in ("yesterday", "2026-01-01", ""):
        r = refused(state, "memory/list_memory_records_as_of", {"scopeKey": LOCAL, "at": bad}, T0)
        assert r.allowed_codes == {REFUSED, INVALID_PARAMS}
    for params in ({"scopeKey": LOCAL}, {"at": format_rfc3339(T0)}, {"scopeKey": LOCAL, "at": 5}):
        assert refused(state, "memory/list_memory_records_as_of", params, T0).allowed_codes == {
            INVALID_PARAMS
        }
    _, res = ok(
        state,
        "memory/list_memory_records_as_of",
        {"scopeKey": LOCAL, "at": "2026-01-01T01:00:00.030+01:00"},
        T0,
    )
    assert len(res["records"]) == 31


@pytest.mark.clause("LED-INT.1", "LED-INT.5", "LED-ASOF.1")
@given(
    st.lists(
        st.tuples(st.sampled_from(["save", "edit", "delete"]), st.integers(1, 1000)),
        min_size=1,
        max_size=25,
    ),
    st.data(),
)
def test_as_of_is_exactly_the_intervals_containing_the_instant(
    ops: list[tuple[str, int]], data: st.DataObject
) -> None:
    state, now = empty_state(), T0
    for op, dt in ops:
        now += dt
        active = [r.id for r in state.records if r.status == "active"]
        if op == "save" or not active:
            state, _ = ok(state, "memory/save_memory_record", {"body": f"b{now}"}, now)
        elif op == "edit":
            rid = data.draw(st.sampled_from(active))
            state, _ = ok(
                state, "memory/supersede_memory_record", {"recordId": rid, "body": "e"}, now
            )
        else:
            rid = data.draw(st.sampled_from(active))
            state, _ = ok(state, "memory/delete_memory_record", {"recordId": rid}, now)
    for t in data.draw(st.lists(st.integers(T0 - 5, now + 5), min_size=1, max_size=10)) + [now]:
        want = {
            r.id
            for r in state.records
            if r.valid_from <= t and (r.valid_to is None or t < r.valid_to)
        }
        assert {r.id for r in list_as_of(state, LOCAL, t)} == want
        assert ids_at(state, t) == want
    assert {r.id for r in list_as_of(state, LOCAL, now)} == {
        r.id for r in state.records if r.status == "active"
    }
    for r in state.records:
        assert r.valid_to is None or r.valid_from <= r.valid_to


# --- expiry ---------------------------------------------------------------------------------


@pytest.mark.clause("LED-EXP.2", "LED-EXP.3", "LED-EXP.4")
def test_sweep_boundary_is_inclusive_and_closes_at_the_expiry() -> None:
    state, (a, b, c) = saved(["expires at E", "expires after E", "never expires"])
    e = T0 + DAY
    state, _ = ok(state, MODEL_EXPIRY, {"recordId": a, "expiresAt": format_rfc3339(e)}, T0 + 10)
    state, _ = ok(state, MODEL_EXPIRY, {"recordId": b, "expiresAt": format_rfc3339(e + 1)}, T0 + 11)
    s1, res = ok(state, "_test/sweep", {"at": format_rfc3339(e - 1)}, T0 + 12)
    assert res == {"expired": []} and s1 == state
    # Swept late: still closes at the expiry, not at the sweep.
    late = e + 5 * DAY
    state, res = ok(state, "_test/sweep", {"at": format_rfc3339(e)}, late)
    assert res == {"expired": [a]}
    rec = find_record(state, a)
    assert rec is not None and rec.status == "expired" and rec.valid_to == e
    assert rec.body == "expires at E" and rec.provenance == "user_explicit"
    again, res = ok(state, "_test/sweep", {"at": format_rfc3339(e)}, late)
    assert res == {"expired": []} and again == state
    state, res = ok(state, "_test/sweep", {"at": format_rfc3339(late)}, late)
    assert res == {"expired": [b]}
    assert find_record(state, c).status == "active"  # type: ignore[union-attr]
    # History keeps the expired record inside its interval, with its body.
    inside = {r["id"]: r for r in result_of(as_of(state, e - 1))["records"]}
    assert inside[a]["body"] == "expires at E" and inside[a]["status"] == "expired"
    assert a not in ids_at(state, e)
    # It leaves listing, search and the packet; the packet names it expired.
    _, listing = ok(state, "memory/list_memory_records", {"scopeKey": LOCAL}, late)
    assert [r["id"] for r in listing["records"]] == [c]
    assert [r.id for r in search(state, "expires")] == [c]
    assert "expired" in {x.reason for x in build_packet(state, LOCAL).excluded if x.record_id == a}


@pytest.mark.clause("LED-EXP.2")
@given(st.lists(st.integers(0, 10 * DAY), min_size=1, max_size=12), st.integers(0, 10 * DAY))
def test_sweep_expires_exactly_the_due(offsets: list[int], at_off: int) -> None:
    state, ids = saved([f"r{i}" for i in range(len(offsets))])
    for rid, off in zip(ids, offsets, strict=True):
        state, answer = set_expiry(state, LOCAL, rid, T0 + 100 + off, T0 + 100)
        assert not isinstance(answer, Refused)
    state, expired = sweep_expired(state, T0 + 100 + at_off)
    assert set(expired) == {rid for rid, off in zip(ids, offsets, strict=True) if off <= at_off}
    for rid, off in zip(ids, offsets, strict=True):
        rec = find_record(state, rid)
        assert rec is not None
        assert rec.status == ("expired" if off <= at_off else "active")
        if rec.status == "expired":
            assert rec.valid_to == T0 + 100 + off
            assert not interval_contains(rec, T0 + 100 + off)


@pytest.mark.clause("LED-EXP.1", "LED-EXP.5", "LED-STATUS.3")
def test_set_expiry_rules() -> None:
    state, (a, b) = saved(["a", "b"])
    state, rec = ok(
        state, MODEL_EXPIRY, {"recordId": a, "expiresAt": format_rfc3339(T0 + DAY)}, T0 + 5
    )
    assert rec["expiresAt"] == format_rfc3339(T0 + DAY) and rec["updatedAt"] == format_rfc3339(
        T0 + 5
    )
    state, rec = ok(
        state,
        MODEL_EXPIRY,
        {"recordId": a, "expiresAt": format_rfc3339(T0 + 2 * DAY)},
        T0 + 6,
    )
    assert rec["expiresAt"] == format_rfc3339(T0 + 2 * DAY)  # a later call replaces it
    r = refused(state, MODEL_EXPIRY, {"recordId": b, "expiresAt": format_rfc3339(T0)}, T0 + 7)
    assert r.allowed_codes == {REFUSED, INVALID_PARAMS}  # b opened at T0 + 1
    state, _ = ok(state, "memory/delete_memory_record", {"recordId": b}, T0 + 8)
    r = refused(state, MODEL_EXPIRY, {"recordId": b, "expiresAt": format_rfc3339(T0 + DAY)}, T0 + 9)
    assert r.allowed_codes == {REFUSED}
    state, p = ok(state, "_test/propose", {"body": "p"}, T0 + 10)
    r = refused(
        state,
        MODEL_EXPIRY,
        {"recordId": p["id"], "expiresAt": format_rfc3339(T0 + DAY)},
        T0 + 11,
    )
    assert r.allowed_codes == {REFUSED}
    # A proposal never expires by sweep, even far in the future.
    state, res = ok(state, "_test/sweep", {"at": format_rfc3339(T0 + 100 * DAY)}, T0 + 12)
    assert res == {"expired": [a]}
    assert find_record(state, p["id"]).status == "proposed"  # type: ignore[union-attr]
