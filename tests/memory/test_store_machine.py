"""A Hypothesis state machine over the in-process store model (MEM-STORE, MEM-WRITE, MEM-CAP).

Random interleavings of writes (dedup, supersede, small caps), retrieves, lists and forgets over
several scopes, with time moving forward.  Every rule checks the answer it got against the state
before it; the invariants check what must hold after every step.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from reference.memory.engine import normalize_text
from reference.memory.judge import eviction_allowed, is_allowed_ranking
from reference.memory.records import MemoryCandidate, MemoryRecord
from reference.memory.scoring import keyword_match, tokenize
from reference.memory.store import (
    StoreState,
    active_records,
    all_records,
    empty_store,
    store_forget,
    store_list,
    store_retrieve,
    store_write,
)
from tests.common.memory_strategies import DAY, T0

SCOPES = ["org:acme", "user:slack:U1", "channel:slack:C1"]
TEXTS = [
    "deploy with make",
    "Deploy  WITH make",
    "use just to deploy",
    "ci runs on push",
    "db is postgres",
    "x",
    "alpha beta",
    "a <b> & c",
]
QUERIES = ["deploy", "make deploy", "ci push", "postgres", "x", "a", "alpha", "nothing", "", "b c"]


def provenance(r: MemoryRecord) -> tuple[Any, ...]:
    return (
        r.scope_key,
        r.kind,
        r.text,
        r.keywords,
        r.source_thread_key,
        r.source_run_id,
        r.confidence,
        r.supersedes,
        r.created_at,
    )


class StoreMachine(RuleBasedStateMachine):
    state: StoreState

    @initialize()
    def start(self) -> None:
        self.state = empty_store()
        self.now = T0
        self.seen: dict[str, tuple[Any, ...]] = {}  # id -> provenance at minting
        self.dead: dict[str, str] = {}  # id -> the dead status it reached
        self.uses: dict[str, int] = {}  # id -> last seen use_count
        self.cap: dict[str, int] = {}  # scope -> cap of its last write
        self.count: dict[str, int] = {}  # scope -> records ever minted

    # ------------------------------------------------------------------ helpers

    def by_id(self, state: StoreState) -> dict[str, MemoryRecord]:
        return {r.id: r for s in SCOPES for r in all_records(state, s)}

    def assert_other_scopes_untouched(self, before: StoreState, scope: str) -> None:
        for s in SCOPES:
            if s != scope:
                assert all_records(self.state, s) == all_records(before, s)

    # ------------------------------------------------------------------ rules

    @rule(dt=st.integers(0, 3 * DAY))
    def tick(self, dt: int) -> None:
        self.now += dt

    @rule(scope=st.sampled_from(SCOPES), cap=st.sampled_from([1, 2, 3, 5, 500]), data=st.data())
    def write(self, scope: str, cap: int, data: st.DataObject) -> None:
        known = sorted(self.seen)
        sup_st = st.one_of(
            st.none(),
            st.none(),
            st.just(""),
            st.just("mem:org:acme:999"),
            st.sampled_from(known) if known else st.none(),
        )
        cands = data.draw(
            st.lists(
                st.builds(
                    MemoryCandidate,
                    kind=st.sampled_from(["fact", "summary"]),
                    text=st.sampled_from(TEXTS),
                    source_thread_key=st.sampled_from(["slack:C1:1", "slack:C1:2"]),
                    keywords=st.one_of(st.none(), st.just(("deploy",)), st.just(())),
                    source_run_id=st.one_of(st.none(), st.just("run-1")),
                    supersedes=sup_st,
                ),
                max_size=4,
            ),
            label="candidates",
        )
        before = self.state
        old = self.by_id(before)
        before_active = {r.id for r in active_records(before, scope)}
        self.state, res = store_write(before, scope, cands, self.now, cap)
        if not cands:
            # the validation table's "empty batch no-op", whatever the cap (MEM-CAP.1)
            assert self.state == before and (
                res.inserted,
                res.deduped,
                res.superseded,
                res.evicted,
            ) == (0, 0, 0, 0)
            return
        new = self.by_id(self.state)

        # counts add up
        assert res.inserted + res.deduped == len(cands)
        minted = [i for i in new if i not in old]
        assert len(minted) == res.inserted
        assert res.superseded <= res.inserted
        flips = {i: new[i].status for i in old if old[i].status != new[i].status}
        assert all(old[i].status == "active" for i in flips)  # only live records change status
        assert sum(1 for s in flips.values() if s == "superseded") == res.superseded
        assert set(flips.values()) <= {"superseded", "evicted"}
        evicted_now = [
            i
            for i in new
            if new[i].status == "evicted" and (i in minted or old[i].status != "evicted")
        ]
        assert len(evicted_now) == res.evicted

        # minted records: fresh unique ids of this scope, one creation time
        for i in minted:
            r = new[i]
            assert i not in self.seen and i.startswith(f"mem:{scope}:")
            assert r.scope_key == scope and r.created_at == self.now
            assert r.last_used_at is None
            assert r.status in ("active", "evicted")

        # dedup bumps: exactly one per dedup, never on a dead record, never moving last_used_at
        bumps = {i: new[i].use_count - (old[i].use_count if i in old else 0) for i in new}
        assert all(b >= 0 for b in bumps.values())
        assert sum(bumps.values()) == res.deduped
        for i, b in bumps.items():
            if b and i in old:
                assert i in before_active
            if i in old:
                assert new[i].last_used_at == old[i].last_used_at

        # eviction: legal LRU choice over the pre-eviction active set, cap respected
        evicted_ids = [i for i in evicted_now]
        pre_evict = [
            dataclasses.replace(new[i], status="active")
            for i in new
            if new[i].scope_key == scope and (new[i].status == "active" or i in evicted_ids)
        ]
        assert eviction_allowed(pre_evict, cap, evicted_ids)
        assert len(active_records(self.state, scope)) <= cap
        self.assert_other_scopes_untouched(before, scope)

        # the normalized text of every inserted no-supersede candidate was not live before it
        if not any(c.supersedes for c in cands) and len(cands) == 1 and res.inserted == 1:
            norms = {normalize_text(old[i].text) for i in before_active}
            assert normalize_text(cands[0].text) not in norms

        for name, n in (
            ("dedup", res.deduped),
            ("supersede", res.superseded),
            ("evict", res.evicted),
        ):
            if n:
                event(f"write with {name}")
        self.cap[scope] = cap
        self.count[scope] = self.count.get(scope, 0) + len(minted)
        for i in minted:
            self.seen[i] = provenance(new[i])

    @rule(scope=st.sampled_from(SCOPES), query=st.sampled_from(QUERIES), limit=st.integers(1, 5))
    def retrieve(self, scope: str, query: str, limit: int) -> None:
        before = self.state
        active = active_records(before, scope)
        self.state, got = store_retrieve(before, scope, query, limit, self.now)
        assert is_allowed_ranking(active, query, limit, self.now, [r.id for r in got])
        assert all(keyword_match(query, r) > 0 for r in got)
        if not tokenize(query):
            assert got == []
        event(f"retrieve returned {min(len(got), 2)}+")
        returned = {r.id for r in got}
        old, new = self.by_id(before), self.by_id(self.state)
        for i, r in new.items():
            if i in returned:
                assert old[i].status == "active"
                assert (r.last_used_at, r.use_count) == (self.now, old[i].use_count + 1)
                assert r.last_used_at is not None  # narrows: it equals self.now
                assert r.last_used_at >= r.created_at
            else:
                assert r == old[i]

    @rule(
        scope=st.sampled_from(SCOPES),
        query=st.one_of(st.none(), st.sampled_from(QUERIES)),
        limit=st.integers(1, 6),
    )
    def list_(self, scope: str, query: str | None, limit: int) -> None:
        before = self.state
        got = store_list(before, scope, limit, query)
        assert self.state is before  # listing is a pure read
        active = active_records(before, scope)
        assert all(r.status == "active" and r.scope_key == scope for r in got)
        positions = [next(k for k, a in enumerate(active) if a.id == r.id) for r in got]
        assert positions == sorted(positions, reverse=True)  # newest first
        if query is not None:
            assert all(keyword_match(query, r) > 0 for r in got)
            pool = [r for r in active if tokenize(query) and keyword_match(query, r) > 0]
        else:
            pool = active
        assert len(got) == min(limit, len(pool))

    @precondition(lambda self: bool(self.seen))
    @rule(scope=st.sampled_from(SCOPES), data=st.data())
    def forget(self, scope: str, data: st.DataObject) -> None:
        rid = data.draw(
            st.one_of(st.sampled_from(sorted(self.seen)), st.just("mem:org:acme:999")), label="id"
        )
        before = self.state
        live = {r.id for r in active_records(before, scope)}
        self.state, ok = store_forget(before, scope, rid)
        event(f"forget -> {ok}")
        assert ok == (rid in live)
        old, new = self.by_id(before), self.by_id(self.state)
        for i, r in new.items():
            if ok and i == rid:
                assert r == dataclasses.replace(old[i], status="forgotten")
            else:
                assert r == old[i]

    # ------------------------------------------------------------------ invariants

    @invariant()
    def nothing_disappears_and_provenance_is_fixed(self) -> None:
        now = self.by_id(self.state)
        assert set(self.seen) <= set(now)
        for i, prov in self.seen.items():
            assert provenance(now[i]) == prov
        for s in SCOPES:
            assert len(all_records(self.state, s)) == self.count.get(s, 0)

    @invariant()
    def ids_are_unique_and_scoped(self) -> None:
        every = [r for s in SCOPES for r in all_records(self.state, s)]
        assert len({r.id for r in every}) == len(every)
        for s in SCOPES:
            assert all(
                r.scope_key == s and r.id.startswith(f"mem:{s}:")
                for r in all_records(self.state, s)
            )

    @invariant()
    def dead_stays_dead_and_usage_only_grows(self) -> None:
        for i, r in self.by_id(self.state).items():
            if i in self.dead:
                assert r.status == self.dead[i]
            elif r.status != "active":
                self.dead[i] = r.status
            assert r.use_count >= self.uses.get(i, 0)
            self.uses[i] = r.use_count

    @invariant()
    def cap_holds(self) -> None:
        for s, cap in self.cap.items():
            assert len(active_records(self.state, s)) <= cap


TestStoreMachine = StoreMachine.TestCase
# The clause ids TestStoreMachine covers (a marker cannot sit on a generated TestCase class).
CLAUSES_TestStoreMachine = (
    "MEM-STORE.1",
    "MEM-STORE.2",
    "MEM-STORE.3",
    "MEM-STORE.4",
    "MEM-STORE.7",
    "MEM-STORE.8",
    "MEM-STORE.9",
    "MEM-STORE.10",
    "MEM-RECORD.2",
    "MEM-RECORD.3",
    "MEM-WRITE.1",
    "MEM-WRITE.6",
    "MEM-WRITE.7",
    "MEM-WRITE.8",
    "MEM-SCOPE.5",
    "MEM-CAP.1",
    "MEM-CAP.2",
    "MEM-CAP.3",
    "MEM-CAP.4",
    "MEM-STORE.11",
)
