"""Synthetic linearizable memory histories, for the checker's tests and its benchmark.

Clients run a plan of :mod:`conformance.concurrent.workload` (the shape of ``memspec run
--clients``) in simulated time against the reference store: every operation gets an invocation
time, a duration and a linearization point inside its interval, and its answer is what the
reference answers at that point.  So the history is linearizable, and a checker must find an
order that explains it.

The store is kept incrementally (:class:`_Scope`: the records in insertion order plus indexes
of the active ones by normalized text and by token), so building a history is linear in its
length -- a 100k-operation history for the benchmark.  Every decision is still the reference
engine's own pure function, called on exactly the records it reads: ``plan_write`` on the
candidate's pool (the same-norm actives and the supersede target, in insertion order),
``rank_records`` on the actives some query token hits, in
insertion order (it gates on those anyway), the list filter ``list_matches`` on the same;
``plan_eviction`` on the ``excess`` least recently used actives, kept in a heap by its key.
``synthetic_history(..., incremental=False)`` answers with the reference store functions
(``store_write`` & co., quadratic in a scope's size); a test checks both give the same history.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from conformance.concurrent.driver import Event, MemoryClient
from conformance.concurrent.workload import PlannedOp, generate_plan
from conformance.vocabulary import Exchange
from reference.memory.engine import (
    DEFAULT_SCOPE_CAP,
    Dedup,
    eviction_key,
    mint_record,
    normalize_text,
    plan_eviction,
    plan_write,
    rank_records,
)
from reference.memory.records import ACTIVE, EVICTED, FORGOTTEN, SUPERSEDED, MemoryRecord
from reference.memory.scoring import record_tokens, tokenize
from reference.memory.store import (
    StoreState,
    WriteResult,
    list_matches,
    parse_record_id,
    record_id,
    store_forget,
    store_list,
    store_retrieve,
    store_write,
)
from reference.memory.wire import WriteBody, record_to_wire, validate_write, write_response


def _answer(
    state: StoreState, scope: str, route: str, body: dict[str, Any], now: int
) -> tuple[StoreState, Any]:
    """The reference store's answer (whole-scope functions: quadratic over a history)."""
    if route == "/write":
        parsed = validate_write(body)
        assert isinstance(parsed, WriteBody)
        cap = DEFAULT_SCOPE_CAP if parsed.cap is None else parsed.cap
        state, res = store_write(state, scope, parsed.candidates, now, cap)
        return state, write_response(res)
    if route == "/retrieve":
        state, recs = store_retrieve(state, scope, body["query"], body["limit"], now)
        return state, {"records": [record_to_wire(r) for r in recs]}
    if route == "/list":
        recs = store_list(state, scope, body["limit"], body.get("query"))
        return state, {"records": [record_to_wire(r) for r in recs]}
    state, forgotten = store_forget(state, scope, body["id"])
    return state, {"ok": True, "forgotten": forgotten}


class _Scope:
    """One scope of the reference store, kept incrementally: the records in insertion order
    (position ``p`` holds ``mem:<scope>:<p+1>``), the active positions in insertion order, and
    indexes from a normalized text and from a token to positions (active ones for the norm;
    every position ever for a token, filtered on use)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.recs: list[MemoryRecord] = []
        self.active: dict[int, None] = {}  # insertion order = position order
        self.by_norm: dict[str, dict[int, None]] = {}
        self.by_token: dict[str, list[int]] = {}
        #: (eviction_key, position) of active records, lazily: an entry whose key is no longer
        #: its record's, or whose record is no longer active, is skipped when it surfaces.
        self.lru: list[tuple[tuple[int, int], int]] = []

    def _set(self, p: int, r: MemoryRecord) -> None:
        old = self.recs[p]
        self.recs[p] = r
        if old.status == ACTIVE and r.status != ACTIVE:
            del self.active[p]
            del self.by_norm[normalize_text(r.text)][p]
        elif r.status == ACTIVE and eviction_key(r) != eviction_key(old):
            heapq.heappush(self.lru, (eviction_key(r), p))

    def _least_recently_used(self, n: int) -> list[MemoryRecord]:
        """The ``n`` active records first in ``plan_eviction``'s order (its key, then
        insertion order), taken off the heap."""
        out: list[MemoryRecord] = []
        while len(out) < n:
            key, p = heapq.heappop(self.lru)
            r = self.recs[p]
            if r.status == ACTIVE and eviction_key(r) == key:
                out.append(r)
        return out

    def _position(self, rid: str) -> int | None:
        parsed = parse_record_id(rid)
        if parsed is None or parsed[0] != self.key:
            return None
        p = int(parsed[1]) - 1
        return p if 0 <= p < len(self.recs) and self.recs[p].id == rid else None

    def _hit(self, query: str) -> list[int]:
        """Active positions holding some token of ``query`` (a superset of what the
        retrieval gate and the list filter keep), in insertion order."""
        found: set[int] = set()
        for tok in set(tokenize(query)):
            found.update(p for p in self.by_token.get(tok, ()) if p in self.active)
        return sorted(found)

    def write(self, body: WriteBody, now: int) -> WriteResult:
        """``store_write``: each candidate planned against its pool, then the eviction."""
        inserted = deduped = superseded = 0
        for cand in body.candidates:
            norm = normalize_text(cand.text)
            pool = list(self.by_norm.get(norm, ()))
            if cand.supersedes:
                t = self._position(cand.supersedes)
                if t is not None and t in self.active and t not in pool:
                    pool = sorted([*pool, t])
            plan = plan_write([self.recs[p] for p in pool], cand)
            if isinstance(plan, Dedup):
                p = self._position(plan.target_id)
                assert p is not None
                self._set(p, replace(self.recs[p], use_count=self.recs[p].use_count + 1))
                deduped += 1
                continue
            if plan.supersede_id is not None:
                p = self._position(plan.supersede_id)
                assert p is not None
                self._set(p, replace(self.recs[p], status=SUPERSEDED))
                superseded += 1
            p = len(self.recs)
            rec = mint_record(cand, self.key, record_id(self.key, p + 1), now)
            self.recs.append(rec)
            self.active[p] = None
            heapq.heappush(self.lru, (eviction_key(rec), p))
            self.by_norm.setdefault(norm, {})[p] = None
            for tok in record_tokens(rec):
                self.by_token.setdefault(tok, []).append(p)
            inserted += 1
        cap = DEFAULT_SCOPE_CAP if body.cap is None else body.cap
        evicted = 0
        excess = len(self.active) - max(cap, 0) if body.candidates else 0
        if excess > 0:
            # plan_eviction over every active record evicts exactly these ``excess``.
            lru = self._least_recently_used(excess)
            for rid in plan_eviction(lru, len(lru) - excess):
                p = self._position(rid)
                assert p is not None
                self._set(p, replace(self.recs[p], status=EVICTED))
                evicted += 1
        return WriteResult(inserted, deduped, superseded, evicted)

    def retrieve(self, query: str, limit: int, now: int) -> list[MemoryRecord]:
        """``store_retrieve``: rank the actives the query hits, bump the returned ones."""
        ranked = rank_records([self.recs[p] for p in self._hit(query)], query, limit, now)
        out = []
        for r in ranked:
            p = self._position(r.id)
            assert p is not None
            bumped = replace(r, last_used_at=now, use_count=r.use_count + 1)
            self._set(p, bumped)
            out.append(bumped)
        return out

    def list(self, limit: int, query: str | None) -> list[MemoryRecord]:
        """``store_list``: actives newest first, optionally filtered, cut to ``limit``."""
        if limit <= 0:
            return []
        out: list[MemoryRecord] = []
        if query is None:
            for p in reversed(self.active):
                if len(out) == limit:
                    break
                out.append(self.recs[p])
            return out
        for p in reversed(self._hit(query)):
            if len(out) == limit:
                break
            if list_matches(query, self.recs[p]):
                out.append(self.recs[p])
        return out

    def forget(self, rid: str) -> bool:
        """``store_forget``: flip one active record to forgotten."""
        p = self._position(rid)
        if p is None or p not in self.active:
            return False
        self._set(p, replace(self.recs[p], status=FORGOTTEN))
        return True

    def answer(self, route: str, body: dict[str, Any], now: int) -> Any:
        if route == "/write":
            parsed = validate_write(body)
            assert isinstance(parsed, WriteBody)
            return write_response(self.write(parsed, now))
        if route == "/retrieve":
            recs = self.retrieve(body["query"], body["limit"], now)
            return {"records": [record_to_wire(r) for r in recs]}
        if route == "/list":
            recs = self.list(body["limit"], body.get("query"))
            return {"records": [record_to_wire(r) for r in recs]}
        return {"ok": True, "forgotten": self.forget(body["id"])}


def synthetic_history(
    total_ops: int, scopes: int, clients: int = 8, seed: int = 1, *, incremental: bool = True
) -> list[Event]:
    """A linearizable history of about ``total_ops`` operations: ``clients`` clients, each
    picking a scope per operation, in simulated time (seconds).  ``incremental=False``: the
    answers from the reference store functions (slow; the same history)."""
    rng = random.Random(seed)
    per_client = max(1, total_ops // clients)
    plan = generate_plan(seed, clients, per_client, scopes)
    keys = [f"org:memspec-bench-{s}" for s in range(scopes)]
    return _run(plan, keys, rng, incremental=incremental)


def independent_scopes_history(
    scopes: int, per_scope: int, clients: int = 2, seed: int = 1
) -> list[Event]:
    """``scopes`` scopes, each with its own ``clients`` clients running ``per_scope``
    operations on it alone (each scope's history drawn alike, from its own seed), all at
    once: the history of ``scopes`` is ``scopes`` times the work of one, so checking it
    should cost ``scopes`` times as much (the benchmark's scope-scaling case)."""
    events: list[Event] = []
    for s in range(scopes):
        rng = random.Random(f"{seed}:{s}")
        plan = generate_plan(seed * 1000 + s, clients, max(1, per_scope // clients), 1)
        for e in _run(plan, [f"org:memspec-bench-{s}"], rng, incremental=True):
            e.id = len(events)
            e.client += s * clients
            events.append(e)
    events.sort(key=lambda e: (e.invoke, e.id))
    return events


def _run(
    plan: list[list[PlannedOp]], keys: list[str], rng: random.Random, *, incremental: bool
) -> list[Event]:
    timed: list[tuple[float, float, float, PlannedOp]] = []
    for ops in plan:
        t = rng.uniform(0, 0.002)
        for op in ops:
            dur = rng.uniform(0.0005, 0.003)
            timed.append((t, t + dur, rng.uniform(t, t + dur), op))
            t += dur + rng.uniform(0, 0.0005)
    client_state = [MemoryClient(keys) for _ in plan]
    live = {k: _Scope(k) for k in keys}
    states = {k: StoreState(scopes=MappingProxyType({})) for k in keys}
    events: list[Event] = []
    # Apply in linearization-point order; a client builds its request at invocation, after
    # everything it learned from its own earlier (completed) operations.
    for call, ret, point, op in sorted(timed, key=lambda x: x[2]):
        cl = client_state[op.client]
        route, body = cl.request(op)
        scope = body["scopeKey"]
        now = int(point * 1e6)
        if incremental:
            answer = live[scope].answer(route, body, now)
        else:
            states[scope], answer = _answer(states[scope], scope, route, body, now)
        cl.learn(route, body, Exchange("POST", route, body, 200, answer))
        events.append(
            Event(len(events), op.client, op.seq, scope, route, body, call, ret, 200, answer)
        )
    return events
