"""The packet (``reference/ledger/packet.py``): buildPacket."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import strategies as st

from conformance.binding.codec import ledger_records
from conformance.binding.functions.base import JSON, LEDGER, Args, Fn, fn
from conformance.binding.functions.ledger.common import ledger_list, lrec
from conformance.binding.judge import Judged, ok
from reference.ledger.packet import build_packet, packet_rank
from reference.ledger.records import LedgerState


def _packet(a: Args) -> JSON:
    state = LedgerState(records=tuple(ledger_records(a["records"])))
    p = build_packet(state, a["scopeKey"])
    return {"ids": [r.id for r in p.records], "text": p.text}


def _packet_judge(a: Args) -> Judged:
    """Records equal on (explicit, confidence, updatedAt) in any order (LED-PACKET.3): every
    order of each tie class, up to 720 orders, each then cut to 4000 characters."""
    recs = ledger_records(a["records"])
    classes: dict[tuple[int, int, int], list[int]] = {}
    for i, r in enumerate(recs):
        classes.setdefault(packet_rank(r), []).append(i)
    tied = [c for c in classes.values() if len(c) > 1]
    perms = [list(itertools.permutations(c)) for c in tied]
    allowed: list[JSON] = []
    for count, choice in enumerate(itertools.product(*perms)):
        if count >= 720:
            break
        order = list(range(len(recs)))
        for cls, perm in zip(tied, choice, strict=True):
            # within a class the record placed later in write order is taken first
            for pos, idx in zip(sorted(cls), perm, strict=True):
                order[pos] = idx
        seqs = {idx: pos for pos, idx in enumerate(order)}
        state = LedgerState(records=tuple(replace(r, seq=seqs[i]) for i, r in enumerate(recs)))
        p = build_packet(state, a["scopeKey"])
        out = ok({"ids": [r.id for r in p.records], "text": p.text})
        if out not in allowed:
            allowed.append(out)
    return Judged(allowed)


def _packet_boundaries() -> list[tuple[str, Args]]:
    long = "z" * 3970
    return [
        (
            "explicit first, then confidence, then newest",
            {
                "scopeKey": "account:local",
                "records": [
                    lrec("00000001", provenance="model_proposal", confidenceBps=9000),
                    lrec("00000002", confidenceBps=5000),
                    lrec("00000003"),
                    lrec("00000004", updatedAt=5000),
                ],
            },
        ),
        (
            "full tie: any order",
            {"scopeKey": "account:local", "records": [lrec("00000001"), lrec("00000002")]},
        ),
        (
            "one member per conflict group",
            {
                "scopeKey": "account:local",
                "records": [
                    lrec("00000001", conflictGroup="g"),
                    lrec("00000002", conflictGroup="g", updatedAt=2000),
                ],
            },
        ),
        (
            "dropped whole at the cap, a later one still fits",
            {
                "scopeKey": "account:local",
                "records": [
                    lrec("00000001", body=long, updatedAt=3000),
                    lrec("00000002", body="y" * 100, updatedAt=2000),
                    lrec("00000003", body="ok"),
                ],
            },
        ),
        (
            "line breaks collapse; only active records",
            {
                "scopeKey": "account:local",
                "records": [
                    lrec("00000001", body="a\r\n\nb"),
                    lrec("00000002", status="expired"),
                ],
            },
        ),
    ]


def _packet_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """A record not active: LED-PACKET.1; two of one conflict group: LED-PACKET.2; the right
    records in another order: LED-PACKET.3; the right records and order in another form:
    LED-PACKET.5; else which records fit: LED-PACKET.4."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if not isinstance(value, dict) or not isinstance(want, dict):
        return ()
    ids, wanted = value.get("ids"), want["ids"]
    if not isinstance(ids, list):
        return ()
    recs = {r["id"]: r for r in a["records"]}
    if any(recs.get(i, {}).get("status") != "active" for i in ids):
        return ("LED-PACKET.1",)
    groups = [recs[i].get("conflictGroup") for i in ids if recs[i].get("conflictGroup")]
    if len(groups) != len(set(groups)):
        return ("LED-PACKET.2",)
    if ids == wanted:
        return ("LED-PACKET.5",)
    if sorted(ids) == sorted(wanted):
        return ("LED-PACKET.3",)
    return ("LED-PACKET.4",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "buildPacket",
        LEDGER,
        ("LED-PACKET.1", "LED-PACKET.2", "LED-PACKET.3", "LED-PACKET.4", "LED-PACKET.5"),
        "which pins reach the model, in what order and form",
        _packet,
        st.fixed_dictionaries({"records": ledger_list(), "scopeKey": st.just("account:local")}),
        _packet_boundaries,
        _packet_judge,
        blame=_packet_blame,
    ),
)
