"""The packet: selection, order, the 4000-character cap and the line format."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger.packet import PACKET_CHAR_CAP, build_packet, packet_order_key, render_line
from reference.ledger.records import LedgerRecord, LedgerState, empty_state, record_id
from tests.common.ledger_strategies import T0, ok, saved

LOCAL = "account:local"


def rec(seq: int, **kw: object) -> LedgerRecord:
    fields: dict[str, object] = {
        "id": record_id(seq + 1),
        "scope_key": LOCAL,
        "kind": "fact",
        "body": f"body {seq}",
        "provenance": "user_explicit",
        "status": "active",
        "valid_from": T0,
        "valid_to": None,
        "created_at": T0,
        "updated_at": T0,
        "seq": seq,
    }
    fields.update(kw)
    return LedgerRecord(**fields)  # type: ignore[arg-type]


def ledger(*records: LedgerRecord) -> LedgerState:
    return LedgerState(records=tuple(records))


@pytest.mark.clause("LED-PACKET.5")
def test_line_format() -> None:
    r = rec(0, kind="preference", body="line one\r\nline two\n\n\nthree")
    assert render_line(r) == "[00000001] preference (user_explicit): line one line two three"
    state, _ = saved(["I prefer tea"])
    state, p = ok(state, "_test/propose", {"body": "uses vim", "kind": "fact"}, T0 + 5)
    state, _ = ok(state, "memory/approve_memory_record", {"recordId": p["id"]}, T0 + 6)
    _, packet = ok(state, "_test/packet", {}, T0 + 7)
    assert packet == {
        "lines": [
            "[00000001] preference (user_explicit): I prefer tea",
            "[00000002] fact (model_proposal): uses vim",
        ],
        "text": "[00000001] preference (user_explicit): I prefer tea\n"
        "[00000002] fact (model_proposal): uses vim",
    }


@pytest.mark.clause("LED-PACKET.1", "LED-EXP.3")
def test_only_active_records_each_exclusion_with_its_own_reason() -> None:
    statuses = ["active", "proposed", "rejected", "superseded", "expired", "deleted"]
    state = ledger(*(rec(i, status=s) for i, s in enumerate(statuses)))
    p = build_packet(state, LOCAL)
    assert [r.id for r in p.records] == [record_id(1)]
    assert {e.record_id: e.reason for e in p.excluded} == {
        record_id(i + 1): s for i, s in enumerate(statuses) if s != "active"
    }


@pytest.mark.clause("LED-PACKET.2")
def test_at_most_one_member_per_group_by_its_own_check() -> None:
    # A state the ledger never produces (two active members) still yields one of them.
    state = ledger(
        rec(0, conflict_group="theme", body="dark"),
        rec(1, conflict_group="theme", body="light", updated_at=T0 + 5),
        rec(2, conflict_group="editor", body="vim"),
    )
    p = build_packet(state, LOCAL)
    assert [r.body for r in p.records] == ["light", "vim"]
    assert [(e.record_id, e.reason) for e in p.excluded] == [(record_id(1), "conflict_group")]


@pytest.mark.clause("LED-PACKET.3")
def test_order_explicit_then_confidence_then_newest() -> None:
    state = ledger(
        rec(0, provenance="model_proposal", confidence_bps=9000, body="p90"),
        rec(1, provenance="model_proposal", confidence_bps=6000, body="p60", updated_at=T0 + 9),
        rec(2, provenance="model_consolidation", body="merged", updated_at=T0 + 50),
        rec(3, provenance="user_explicit", body="old pin"),
        rec(4, provenance="user_explicit", body="new pin", updated_at=T0 + 1),
        rec(
            5,
            provenance="model_proposal",
            confidence_bps=6000,
            body="p60 later-written",
            updated_at=T0 + 9,
        ),
        rec(6, provenance="user_explicit", body="same-instant pin"),
    )
    got = [r.body for r in build_packet(state, LOCAL).records]
    assert got == [
        "new pin",
        "same-instant pin",
        "old pin",
        "p90",
        "p60 later-written",
        "p60",
        "merged",
    ]


@pytest.mark.clause("LED-PACKET.4")
def test_cap_drops_whole_records_and_continues() -> None:
    prefix = len(render_line(rec(0, body="")))  # "[00000001] fact (user_explicit): "
    big = "x" * (PACKET_CHAR_CAP - prefix - 10)
    state = ledger(
        rec(0, body=big, updated_at=T0 + 3),
        rec(1, body="y" * 200, updated_at=T0 + 2),  # does not fit after big
        rec(2, body="z" * 8, updated_at=T0 + 1),  # 1 + prefix + 8 > 10 -> no
        rec(3, body="", updated_at=T0),
    )
    p = build_packet(state, LOCAL)
    assert [r.seq for r in p.records] == [0]
    assert {e.record_id for e in p.excluded if e.reason == "over_cap"} == {
        record_id(2),
        record_id(3),
        record_id(4),
    }
    # Exactly at the cap fits; one over does not.
    exact = "w" * (PACKET_CHAR_CAP - prefix)
    assert len(build_packet(ledger(rec(0, body=exact)), LOCAL).text) == PACKET_CHAR_CAP
    assert build_packet(ledger(rec(0, body=exact + "w")), LOCAL).lines == ()
    # The newline between lines counts: two lines of 2000 characters make 4001.
    half = "h" * (2000 - prefix)
    pair = ledger(rec(0, body=half, updated_at=T0 + 1), rec(1, body=half))
    assert [r.seq for r in build_packet(pair, LOCAL).records] == [0]
    shorter = ledger(rec(0, body=half, updated_at=T0 + 1), rec(1, body=half[:-1]))
    assert len(build_packet(shorter, LOCAL).text) == PACKET_CHAR_CAP
    # A later, smaller record fits where a bigger one did not.
    state = ledger(
        rec(0, body="a" * 3000, updated_at=T0 + 3),
        rec(1, body="b" * 2000, updated_at=T0 + 2),
        rec(2, body="c" * 100, updated_at=T0 + 1),
    )
    assert [r.seq for r in build_packet(state, LOCAL).records] == [0, 2]


records_strategy = st.lists(
    st.builds(
        lambda prov, conf, upd, size, group, status: (prov, conf, upd, size, group, status),
        st.sampled_from(["user_explicit", "model_proposal", "model_consolidation"]),
        st.one_of(st.none(), st.integers(0, 10_000)),
        st.integers(0, 5),
        st.integers(0, 2500),
        st.one_of(st.none(), st.sampled_from(["g1", "g2"])),
        st.sampled_from(["active"] * 4 + ["expired", "superseded", "proposed"]),
    ),
    max_size=15,
)


@pytest.mark.clause("LED-PACKET.1", "LED-PACKET.2", "LED-PACKET.3", "LED-PACKET.4", "LED-PACKET.5")
@given(records_strategy)
def test_packet_properties(specs: list[tuple[str, int | None, int, int, str | None, str]]) -> None:
    state = ledger(
        *(
            rec(
                i,
                provenance=p,
                confidence_bps=c,
                updated_at=T0 + u,
                body="q" * n,
                conflict_group=g,
                status=s,
            )
            for i, (p, c, u, n, g, s) in enumerate(specs)
        )
    )
    p = build_packet(state, LOCAL)
    assert p.text == "\n".join(p.lines) and len(p.text) <= PACKET_CHAR_CAP
    assert list(p.lines) == [render_line(r) for r in p.records]
    assert all(r.status == "active" for r in p.records)
    keys = [packet_order_key(r) for r in p.records]
    assert keys == sorted(keys)
    groups = [r.conflict_group for r in p.records if r.conflict_group]
    assert len(groups) == len(set(groups))
    # Greedy and maximal: every active record left out for size did not fit where it stood.
    chosen = {r.id for r in p.records}
    for r in sorted((r for r in state.records if r.status == "active"), key=packet_order_key):
        if r.id in chosen:
            continue
        before = [x for x in p.records if packet_order_key(x) < packet_order_key(r)]
        used = len("\n".join(render_line(x) for x in before))
        same_group = r.conflict_group is not None and any(
            x.conflict_group == r.conflict_group for x in before
        )
        assert same_group or used + (1 if before else 0) + len(render_line(r)) > PACKET_CHAR_CAP
    assert chosen | {e.record_id for e in p.excluded} == {r.id for r in state.records}


@pytest.mark.clause("LED-PACKET.1", "LED-WIRE.7")
def test_packet_control_reads_the_local_scope_only() -> None:
    state, (a,) = saved(["mine"])
    other = LedgerState(records=state.records + (rec(1, scope_key="account:other", body="theirs"),))
    _, packet = ok(other, "_test/packet", {}, T0)
    assert packet["lines"] == [f"[{a[:8]}] preference (user_explicit): mine"]
    _, empty = ok(empty_state(), "_test/packet", {}, T0)
    assert empty == {"lines": [], "text": ""}
