"""A rule-based state machine over the whole ledger model, with invariants that can fail.

Local-scope calls go through the binding (``wire.handle``); a second scope, ``account:other``,
is driven through the model's functions so foreign targets and per-scope budgets get
exercised.  Time only moves forward; every mutating rule moves it by at least 1 ms, so the
state after each step is the ledger "as of" that step's instant and is snapshotted.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from reference.ledger import runs
from reference.ledger.consolidation import BatchReport, apply_batch, update_settings
from reference.ledger.intervals import interval_contains, list_as_of
from reference.ledger.lifecycle import LEGAL_TRANSITIONS, approve, delete, propose, reject
from reference.ledger.outcome import Ok, Refused
from reference.ledger.packet import PACKET_CHAR_CAP, build_packet
from reference.ledger.records import (
    LedgerRecord,
    LedgerState,
    Run,
    empty_state,
    find_record,
    held,
    settings_for,
)
from reference.ledger.search import search, searchable
from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import handle
from tests.common.ledger_strategies import (
    DAY,
    MODEL_EXPIRY,
    MODEL_GROUPED_PROPOSAL,
    SECRETS,
    T0,
    model_handle,
    result_of,
    sentence,
)

LOCAL = "account:local"
OTHER = "account:other"
SCOPES = (LOCAL, OTHER)
BOGUS = "ffffffff-0000-4000-8000-0000ffffffff"
TERMINAL = frozenset({"rejected", "superseded", "expired", "deleted"})
GROUPS = ("theme", "editor", "lang")

_bad_bodies = st.one_of(
    st.sampled_from(["", "   ", "\t\n"]),
    st.integers(4001, 4100).map(lambda n: "x" * n),
    st.sampled_from(list(SECRETS.values())).flatmap(lambda s: s),
)
bodies = st.one_of(*([sentence] * 6), sentence.map(lambda s: f"  {s}\n"), _bad_bodies)
kinds = st.one_of(
    st.none(), st.sampled_from(["preference", "fact", "decision", "constraint", "vibe"])
)
ticks = st.integers(1, DAY // 2)

# The clause ids TestLedgerMachine covers (a marker cannot sit on a generated TestCase class).
CLAUSES_TestLedgerMachine = (
    "LED-REC.1",
    "LED-REC.3",
    "LED-REC.4",
    "LED-REC.5",
    "LED-STATUS.2",
    "LED-STATUS.3",
    "LED-STATUS.4",
    "LED-SAVE.1",
    "LED-FORGET.1",
    "LED-FORGET.3",
    "LED-EDIT.1",
    "LED-EDIT.3",
    "LED-REVIEW.2",
    "LED-INT.1",
    "LED-INT.2",
    "LED-INT.3",
    "LED-INT.4",
    "LED-INT.5",
    "LED-ASOF.1",
    "LED-ASOF.2",
    "LED-EXP.2",
    "LED-GROUP.1",
    "LED-GROUP.2",
    "LED-GROUP.3",
    "LED-BUDGET.2",
    "LED-BUDGET.3",
    "LED-BUDGET.4",
    "LED-BUDGET.5",
    "LED-GATE.1",
    "LED-GATE.3",
    "LED-GATE.6",
    "LED-GATE.9",
    "LED-RUN.2",
    "LED-RUN.3",
    "LED-PACKET.1",
    "LED-PACKET.2",
    "LED-PACKET.4",
    "LED-FTS.1",
    "LED-LIST.2",
    "LED-RUN.5",
    "LED-WIRE.8",
)


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state: LedgerState = empty_state()
        self.now = T0
        self.snapshots: list[tuple[int, dict[str, frozenset[str]]]] = []
        self.deleted_bodies: dict[str, str] = {}

    # --- plumbing -----------------------------------------------------------------------

    def ids(self) -> list[str]:
        return [r.id for r in self.state.records] + [BOGUS]

    def step(self, after: LedgerState, outcome: object) -> None:
        """Check one transition against the per-step properties, then adopt it."""
        before = self.state
        if isinstance(outcome, Refused):
            assert after == before, "a refused call changed the ledger"
        assert len(after.records) >= len(before.records), "a record disappeared"
        for old, new in zip(before.records, after.records, strict=False):
            assert (new.id, new.scope_key, new.created_at, new.provenance, new.seq, new.kind) == (
                old.id,
                old.scope_key,
                old.created_at,
                old.provenance,
                old.seq,
                old.kind,
            )
            if old.status in TERMINAL:
                assert new == old, f"a {old.status} record changed"
            if new.status != old.status:
                assert (old.status, new.status) in LEGAL_TRANSITIONS
            if new.status == "deleted" and old.status != "deleted":
                self.deleted_bodies[old.id] = old.body
            elif new.status != "deleted":
                assert new.body == old.body
        known = {r.id for r in before.records}
        for rec in after.records[len(before.records) :]:
            assert rec.id not in known
            assert rec.status in ("active", "proposed")
        for scope in SCOPES:
            h0, h1 = held(before, scope), held(after, scope)
            if h1 > h0:
                assert h1 <= settings_for(after, scope).max_records, "growth past the budget"
        self.state = after
        self.snapshots.append(
            (
                self.now,
                {
                    s: frozenset(
                        r.id for r in after.records if r.scope_key == s and r.status == "active"
                    )
                    for s in SCOPES
                },
            )
        )

    def wire(self, method: str, params: dict[str, Any]) -> Ok | Refused:
        after, outcome = model_handle(self.state, method, params, self.now)
        event(f"{method}: {'ok' if isinstance(outcome, Ok) else outcome.code}")
        self.step(after, outcome)
        return outcome

    def pick(self, data: st.DataObject, *statuses: str) -> LedgerRecord | None:
        """Mostly a record in one of ``statuses``; sometimes any id, or one nothing has."""
        liked = [r.id for r in self.state.records if r.status in statuses]
        if liked and data.draw(st.integers(0, 3)) > 0:
            rid = data.draw(st.sampled_from(liked))
        else:
            rid = data.draw(st.sampled_from(self.ids()))
        return find_record(self.state, rid)

    # --- rules --------------------------------------------------------------------------

    @initialize(
        pins=st.lists(sentence, min_size=2, max_size=6),
        proposals=st.lists(
            st.tuples(st.sampled_from(SCOPES), sentence, st.sampled_from(GROUPS)), max_size=5
        ),
    )
    def seed(self, pins: list[str], proposals: list[tuple[str, str, str]]) -> None:
        """Start from a populated ledger so every run reaches edits, groups and merges."""
        for body in pins:
            self.now += 1
            assert isinstance(self.wire("memory/save_memory_record", {"body": body}), Ok)
        for scope, body, group in proposals:
            self.now += 1
            after, out = propose(self.state, scope, body, self.now, conflict_group=group)
            self.step(after, out)

    @rule(dt=ticks, body=bodies, kind=kinds)
    def save(self, dt: int, body: str, kind: str | None) -> None:
        self.now += dt
        params: dict[str, Any] = {"body": body}
        if kind is not None:
            params["kind"] = kind
        out = self.wire("memory/save_memory_record", params)
        if isinstance(out, Ok):
            assert result_of(out)["scopeKey"] == LOCAL and result_of(out)["status"] == "active"

    @rule(
        dt=ticks,
        scope=st.sampled_from(SCOPES),
        body=bodies,
        group=st.one_of(st.none(), st.sampled_from(GROUPS)),
        conf=st.one_of(st.none(), st.integers(0, 10_000)),
    )
    def propose(self, dt: int, scope: str, body: str, group: str | None, conf: int | None) -> None:
        self.now += dt
        if scope == LOCAL:
            params: dict[str, Any] = {"body": body}
            if group is not None:
                params["conflictGroup"] = group
            if conf is not None:
                params["confidenceBps"] = conf
            self.wire(MODEL_GROUPED_PROPOSAL if group is not None else "_test/propose", params)
        else:
            after, out = propose(
                self.state, scope, body, self.now, conflict_group=group, confidence_bps=conf
            )
            self.step(after, out)

    @rule(dt=ticks, data=st.data(), body=bodies, kind=kinds)
    def supersede(self, dt: int, data: st.DataObject, body: str, kind: str | None) -> None:
        self.now += dt
        rec = self.pick(data, "active")
        rid = rec.id if rec is not None else BOGUS
        params: dict[str, Any] = {"recordId": rid, "body": body}
        if kind is not None:
            params["kind"] = kind
        out = self.wire("memory/supersede_memory_record", params)
        if rec is not None and rec.scope_key == OTHER:
            assert isinstance(out, Refused), "the binding edited a foreign record"

    @rule(dt=ticks, data=st.data(), action=st.sampled_from(["delete", "approve", "reject"]))
    def decide(self, dt: int, data: st.DataObject, action: str) -> None:
        self.now += dt
        rec = self.pick(data, *(("active",) if action == "delete" else ("proposed",)))
        via_wire = rec is None or rec.scope_key == LOCAL or data.draw(st.booleans())
        if via_wire:
            rid = rec.id if rec is not None else BOGUS
            out = self.wire(f"memory/{action}_memory_record", {"recordId": rid})
            if rec is not None and rec.scope_key == OTHER:
                assert isinstance(out, Refused), "the binding touched a foreign record"
        else:
            assert rec is not None
            fn = {"delete": delete, "approve": approve, "reject": reject}[action]
            after, res = fn(self.state, OTHER, rec.id, self.now)
            self.step(after, res)

    @rule(dt=ticks, data=st.data(), offset=st.integers(-2 * DAY, 3 * DAY))
    def set_expiry(self, dt: int, data: st.DataObject, offset: int) -> None:
        self.now += dt
        rec = self.pick(data, "active")
        rid = rec.id if rec is not None else BOGUS
        self.wire(MODEL_EXPIRY, {"recordId": rid, "expiresAt": format_rfc3339(self.now + offset)})

    @rule(delta=st.integers(1, 5 * DAY), data=st.data())
    def sweep(self, delta: int, data: st.DataObject) -> None:
        pending = sorted(
            r.expires_at
            for r in self.state.records
            if r.status == "active" and r.expires_at is not None and r.expires_at > self.now
        )
        if len(pending) > 0 and data.draw(st.booleans()):
            self.now = data.draw(st.sampled_from(pending))  # exactly on an expiry instant
        else:
            self.now += delta
        before = self.state
        out = self.wire("_test/sweep", {"at": format_rfc3339(self.now)})
        assert isinstance(out, Ok)
        expired = set(result_of(out)["expired"])
        for rec in before.records:
            due = (
                rec.status == "active" and rec.expires_at is not None and rec.expires_at <= self.now
            )
            assert (rec.id in expired) == due
            if due:
                assert self.state.records[rec.seq].valid_to == rec.expires_at

    @rule(dt=ticks, data=st.data(), scope=st.sampled_from(SCOPES))
    def consolidate(self, dt: int, data: st.DataObject, scope: str) -> None:
        self.now += dt
        batch, expected_invalid, expected_refused, shaped = self.draw_batch(data, scope)
        counts: dict[str, int]
        if scope == LOCAL:
            out = self.wire("_test/consolidate", {"operations": batch})
            assert isinstance(out, Ok)
            counts = result_of(out)
        else:
            after, report = apply_batch(self.state, scope, batch, self.now)
            self.step(after, report)
            c = report.counts
            counts = {
                "applied": c.applied,
                "invalid": c.invalid,
                "refused": c.refused,
                "declined": c.declined,
            }
        event(f"batch applied={min(counts['applied'], 3)} declined={min(counts['declined'], 1)}")
        assert sum(counts.values()) == len(batch)
        assert counts["invalid"] == expected_invalid
        assert counts["refused"] >= expected_refused
        assert (
            counts["applied"] + counts["declined"] + counts["refused"] == expected_refused + shaped
        )

    @rule(
        dt=ticks,
        scope=st.sampled_from(SCOPES),
        mode=st.sampled_from(["off", "propose"]),
        max_records=st.one_of(st.none(), st.integers(1, 12), st.just(-1)),
        allow=st.one_of(st.none(), st.booleans()),
    )
    def settings(
        self, dt: int, scope: str, mode: str, max_records: int | None, allow: bool | None
    ) -> None:
        self.now += dt
        if max_records == -1:  # exactly what the scope holds: the next growth must be refused
            max_records = max(1, held(self.state, scope))
        if scope == LOCAL:
            params: dict[str, Any] = {"mode": mode}
            if max_records is not None:
                params["maxRecords"] = max_records
            if allow is not None:
                params["allowRemoval"] = allow
            out = self.wire("memory/update_consolidation_settings", params)
            assert isinstance(out, Ok)
        else:
            after, res = update_settings(
                self.state, scope, mode, self.now, max_records=max_records, allow_removal=allow
            )
            self.step(after, res)
        if mode == "off":
            assert runs.pending_run(self.state, scope) is None

    @rule(dt=ticks, scope=st.sampled_from(SCOPES))
    def turn_ends(self, dt: int, scope: str) -> None:
        self.now += dt
        old = runs.pending_run(self.state, scope)
        after, run = runs.schedule_run(self.state, scope, self.now)
        self.step(after, run)
        if old is not None and run is not None:
            replaced = runs.find_run(self.state, old.id)
            assert replaced is not None and replaced.outcome == "replaced"

    @rule(dt=ticks, scope=st.sampled_from(SCOPES), squeeze=st.booleans())
    def run_at_the_ceiling(self, dt: int, scope: str, squeeze: bool) -> None:
        """Turn consolidation on (budget = what is held, when squeezing), let a turn end, and
        claim once the debounce has passed."""
        self.now += dt
        h = held(self.state, scope)
        budget = max(1, h) if squeeze else h + 1
        if scope == LOCAL:
            params = {"mode": "propose", "maxRecords": budget, "debounceSeconds": 30}
            assert isinstance(self.wire("memory/update_consolidation_settings", params), Ok)
        else:
            after, res = update_settings(
                self.state, scope, "propose", self.now, max_records=budget, debounce_seconds=30
            )
            self.step(after, res)
        self.now += 1
        after, run = runs.schedule_run(self.state, scope, self.now)
        self.step(after, run)
        self.claim(30_000)

    @rule(delta=st.integers(1, 2 * DAY))
    def claim(self, delta: int) -> None:
        self.now += delta
        before = self.state
        after, started = runs.claim_due(self.state, self.now)
        self.step(after, started)
        due = [r for r in before.runs if r.phase == "pending" and r.due_at <= self.now]
        for r in due:
            full = held(before, r.scope_key) >= settings_for(before, r.scope_key).max_records
            now_r = runs.find_run(after, r.id)
            assert now_r is not None
            event(f"claim: {'full' if full else 'room'}")
            assert (now_r.outcome == "skipped") == full, "budget decides skip vs claim"
            assert now_r.phase == ("settled" if full else "running")
        for r in started:
            assert r.input_ids == tuple(
                x.id for x in before.records if x.scope_key == r.scope_key and x.status == "active"
            )
        for r in after.runs:
            if r.outcome == "skipped":
                assert r.detail == "budget_exhausted" and not r.model_called

    @rule(dt=ticks, data=st.data(), fail=st.booleans())
    def finish(self, dt: int, data: st.DataObject, fail: bool) -> None:
        self.now += dt
        candidates = [r.id for r in self.state.runs] or ["run-0"]
        run_id = data.draw(st.sampled_from(candidates))
        before = runs.find_run(self.state, run_id)
        res: Run | BatchReport | Refused
        if fail:
            after, res = runs.fail_run(self.state, run_id, "no usable output", self.now, tokens=5)
            self.step(after, res)
        else:
            scope = before.scope_key if before is not None else LOCAL
            batch, *_ = self.draw_batch(data, scope)
            after, report = runs.complete_run(self.state, run_id, batch, self.now, tokens=9)
            self.step(after, report)
            res = report
        if before is None or before.phase != "running":
            assert isinstance(res, Refused), "a run that was not running settled"

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data())
    def history_read(self, data: st.DataObject) -> None:
        t, _snap = data.draw(st.sampled_from(self.snapshots))
        scope = data.draw(st.sampled_from(SCOPES))
        after, out = handle(
            self.state,
            "memory/list_memory_records_as_of",
            {"scopeKey": scope, "at": format_rfc3339(t)},
            self.now,
        )
        assert after is self.state and isinstance(out, Ok)
        for rec in result_of(out)["records"]:
            if rec["id"] in self.deleted_bodies:
                assert rec["body"] == "", "a tombstoned body was handed back"
                assert rec["id"] in out.may_omit

    # --- batch generation ---------------------------------------------------------------

    def draw_batch(self, data: st.DataObject, scope: str) -> tuple[list[object], int, int, int]:
        """A batch, and what its shape alone decides: (batch, invalid, refused, well-shaped).

        Targets are mostly the scope's active records, sometimes anything at all."""
        active = [r.id for r in self.state.records if r.scope_key == scope and r.status == "active"]
        ids = active if len(active) >= 2 and data.draw(st.integers(0, 3)) > 0 else self.ids()
        n = data.draw(st.integers(0, 24))
        batch: list[object] = []
        invalid = refused = shaped = 0
        for i in range(n):
            kind = data.draw(
                st.sampled_from(
                    ["good"] * 5 + ["junk", "extra", "arity", "dup", "range", "unknown"]
                )
            )
            op = data.draw(
                st.sampled_from(["merge", "correct", "expire", "group", "retire", "keep"])
            )
            lo, hi = {"merge": (2, 4), "group": (2, 4)}.get(op, (1, 1))
            if len(ids) < lo:
                kind = "junk"
            element: object
            if kind == "junk":
                element = data.draw(st.sampled_from([5, "merge", None, [], {"operation": 7}]))
            elif kind == "unknown":
                element = {"operation": "obliterate", "targets": [ids[0]], "status": "active"}
            else:
                targets = data.draw(
                    st.lists(st.sampled_from(ids), min_size=lo, max_size=hi, unique=True)
                )
                el: dict[str, object] = {"operation": op, "targets": targets}
                if op in ("merge", "correct"):
                    el["body"] = data.draw(st.one_of(sentence, sentence, SECRETS["jwt"]))
                elif op == "expire":
                    el["afterDays"] = data.draw(st.sampled_from([1, 2, 30, 3650, 7.0]))
                elif op == "group":
                    el["subject"] = data.draw(st.sampled_from(GROUPS))
                if kind == "extra":
                    extras = ["status", "provenance", "scopeKey", "expiresAt", "validTo"]
                    if op not in ("merge", "correct"):
                        extras.append("body")
                    el[data.draw(st.sampled_from(extras))] = "x"
                elif kind == "arity":
                    if op in ("merge", "group"):
                        el["targets"] = targets[:1]
                    else:
                        el["targets"] = [] if len(ids) < 2 else ids[:2]
                elif kind == "dup":
                    el["targets"] = [targets[0], targets[0]]
                elif kind == "range":
                    bad = data.draw(st.sampled_from([0, 3651, 2.5, True, "3"]))
                    el = {"operation": "expire", "targets": [targets[0]], "afterDays": bad}
                element = el
            if i >= 20 or kind in ("junk", "extra", "arity", "dup", "range"):
                invalid += 1
            elif kind == "unknown":
                refused += 1
            else:
                shaped += 1
            batch.append(element)
        return batch, invalid, refused, shaped

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def intervals_are_well_formed(self) -> None:
        for r in self.state.records:
            if r.status == "active":
                assert r.valid_to is None
            elif r.status in ("proposed", "rejected"):
                assert r.valid_to == r.valid_from
            else:
                assert r.valid_to is not None
            if r.valid_to is not None:
                assert r.valid_from <= r.valid_to

    @invariant()
    def supersession_is_seamless(self) -> None:
        for r in self.state.records:
            if r.superseded_by is not None:
                assert r.status == "superseded"
                s = find_record(self.state, r.superseded_by)
                assert s is not None and s.scope_key == r.scope_key
                assert r.valid_to is not None and s.valid_from <= r.valid_to
                # Only a group resolution lets an already-active survivor predate the close.
                assert s.valid_from == r.valid_to or r.conflict_group is not None
            if r.supersedes is not None:
                p = find_record(self.state, r.supersedes)
                assert p is not None and p.superseded_by == r.id
                assert p.valid_to == r.valid_from

    @invariant()
    def listing_is_newest_update_first(self) -> None:
        for status in ("active", "proposed"):
            _, out = handle(
                self.state,
                "memory/list_memory_records",
                {"scopeKey": LOCAL, "status": status},
                self.now,
            )
            assert isinstance(out, Ok)
            rows = sorted(
                (r for r in self.state.records if r.scope_key == LOCAL and r.status == status),
                key=lambda r: (r.updated_at, r.seq),
                reverse=True,
            )
            assert [r["id"] for r in result_of(out)["records"]] == [r.id for r in rows[:50]]

    @invariant()
    def one_active_member_per_group(self) -> None:
        seen: set[tuple[str, str]] = set()
        for r in self.state.records:
            if r.status == "active" and r.conflict_group is not None:
                key = (r.scope_key, r.conflict_group)
                assert key not in seen, f"two active members of {key}"
                seen.add(key)

    @invariant()
    def as_of_now_is_the_active_set(self) -> None:
        for scope in SCOPES:
            got = {r.id for r in list_as_of(self.state, scope, self.now)}
            want = {
                r.id for r in self.state.records if r.scope_key == scope and r.status == "active"
            }
            assert got == want

    @invariant()
    def history_is_stable(self) -> None:
        """What held at a past instant still reads as holding then — except records a sweep
        expired retroactively (their interval closes at their expiry, LED-EXP.2)."""
        late_expired: dict[str, int] = {
            r.id: r.valid_to
            for r in self.state.records
            if r.status == "expired" and r.valid_to is not None
        }
        for t, snap in self.snapshots:
            for scope in SCOPES:
                got = {r.id for r in list_as_of(self.state, scope, t)}
                want = {i for i in snap[scope] if not (i in late_expired and late_expired[i] <= t)}
                assert got == want, (t, scope)
                for r in list_as_of(self.state, scope, t):
                    assert interval_contains(r, t)

    @invariant()
    def tombstones_keep_no_body(self) -> None:
        for rid in self.deleted_bodies:
            rec = find_record(self.state, rid)
            assert rec is not None and rec.status == "deleted" and rec.body == ""

    @invariant()
    def index_holds_active_bodies_only(self) -> None:
        active = {r.id for r in self.state.records if r.status == "active"}
        assert {r.id for r in searchable(self.state)} == active
        for r in self.state.records[-5:]:
            for hit in search(self.state, r.body):
                assert hit.status == "active"

    @invariant()
    def packets_are_sound(self) -> None:
        for scope in SCOPES:
            p = build_packet(self.state, scope)
            assert len(p.text) <= PACKET_CHAR_CAP
            groups = [r.conflict_group for r in p.records if r.conflict_group is not None]
            assert len(groups) == len(set(groups))
            assert all(r.status == "active" for r in p.records)
            reasons = {e.record_id: e.reason for e in p.excluded}
            for r in self.state.records:
                if r.scope_key == scope and r.status == "expired":
                    assert reasons[r.id] == "expired"

    @invariant()
    def runs_settle_once(self) -> None:
        pending: set[str] = set()
        for r in self.state.runs:
            assert r.settle_count == (1 if r.phase == "settled" else 0)
            if r.phase == "pending":
                assert r.scope_key not in pending, "two pending runs for one scope"
                pending.add(r.scope_key)


LedgerMachine.TestCase.settings = settings(stateful_step_count=40, deadline=None)
TestLedgerMachine = LedgerMachine.TestCase
