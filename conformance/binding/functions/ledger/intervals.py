"""Validity intervals and as-of reads (``reference/ledger/intervals.py``): intervalContains,
listAsOf.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import ledger_records
from conformance.binding.functions.base import JSON, LEDGER, Args, Fn, fn
from conformance.binding.functions.ledger.common import ledger_list, lrec
from conformance.binding.judge import Judged, ok
from reference.ledger.intervals import interval_contains, list_as_of
from reference.ledger.records import LedgerState


def _interval(a: Args) -> JSON:
    return interval_contains(ledger_records([a["record"]])[0], int(a["at"]))


def _interval_boundaries() -> list[tuple[str, Args]]:
    closed = lrec("00000001", validFrom=1000, validTo=2000)
    return [
        ("at validFrom: inside", {"record": closed, "at": 1000}),
        ("one before: outside", {"record": closed, "at": 999}),
        ("at validTo: outside (half-open)", {"record": closed, "at": 2000}),
        ("one before validTo: inside", {"record": closed, "at": 1999}),
        ("open end", {"record": lrec("00000002"), "at": 10**13}),
        ("empty interval holds nowhere", {"record": lrec("00000003", validTo=1000), "at": 1000}),
    ]


def _as_of(a: Args) -> JSON:
    state = LedgerState(records=tuple(ledger_records(a["records"])))
    return [r.id for r in list_as_of(state, a["scopeKey"], int(a["at"]))]


def _as_of_judge(a: Args) -> Judged:
    """Any order (LED-ASOF.3); a tombstone may be left out (LED-ASOF.2)."""
    ids = _as_of(a)
    recs = {r.id: r for r in ledger_records(a["records"])}
    without = [i for i in ids if recs[i].status != "deleted"]
    allowed = [ok(ids)] + ([ok(without)] if without != ids else [])
    return Judged(allowed, {"name": "unordered"})


def _as_of_boundaries() -> list[tuple[str, Args]]:
    recs = [
        lrec("00000001", validFrom=1000, validTo=2000, status="superseded"),
        lrec("00000002", validFrom=2000),
        lrec("00000003", validFrom=1500, validTo=1800, status="deleted", body=""),
        lrec("00000004", validFrom=1000, scopeKey="account:other"),
    ]
    base = {"records": recs, "scopeKey": "account:local"}
    return [
        ("seamless supersession: the old at 1999", {**base, "at": 1999}),
        ("the new at 2000", {**base, "at": 2000}),
        ("a tombstone in history: omitted or listed", {**base, "at": 1600}),
        ("before everything", {**base, "at": 999}),
        ("another scope never", {**base, "at": 5000}),
    ]


def _interval_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """An empty interval (validTo at or before validFrom): LED-INT.2; any other: LED-INT.1."""
    rec = a["record"]
    if rec.get("validTo") is not None and rec["validTo"] <= rec["validFrom"]:
        return ("LED-INT.2",)
    return ("LED-INT.1",)


def _as_of_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """The records that held, a tombstone aside: LED-ASOF.1; a difference only in tombstones:
    LED-ASOF.2."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if not isinstance(value, list) or not isinstance(want, list):
        return ()
    dead = {r["id"] for r in a["records"] if r.get("status") == "deleted"}
    if {i for i in value if i not in dead} == {i for i in want if i not in dead}:
        return ("LED-ASOF.2",)
    return ("LED-ASOF.1",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "intervalContains",
        LEDGER,
        ("LED-INT.1", "LED-INT.2"),
        "at in [validFrom, validTo)",
        _interval,
        st.builds(
            lambda at, vt: {
                "record": lrec(
                    "00000001", validFrom=1000, **({"validTo": vt} if vt is not None else {})
                ),
                "at": at,
            },
            st.integers(0, 3000),
            st.one_of(st.none(), st.integers(1000, 2500)),
        ),
        _interval_boundaries,
        blame=_interval_blame,
    ),
    fn(
        "listAsOf",
        LEDGER,
        ("LED-ASOF.1", "LED-ASOF.2", "LED-ASOF.3"),
        "the scope's records that held at an instant",
        _as_of,
        st.fixed_dictionaries(
            {
                "records": ledger_list(),
                "scopeKey": st.just("account:local"),
                "at": st.integers(0, 6).map(lambda k: k * 1000),
            }
        ),
        _as_of_boundaries,
        _as_of_judge,
        blame=_as_of_blame,
    ),
)
