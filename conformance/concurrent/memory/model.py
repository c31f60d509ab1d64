"""The Memory Worker as the checker's sequential specification: an adapter to ``reference.memory``.

This module and its parts are the ones that know how the reference model is called; re-point
them if the model's judging functions move.  The parts: :mod:`.calls` (an operation as the
model reads it; what the shrinker's closed-world guard asks of it), :mod:`.state` (a scope as
persistent chunked vectors with an incremental Zobrist hash), :mod:`.hints` (the indexes shared
by every state of the search) and :mod:`.answers` (judging an answer; it borrows two
private helpers of ``reference.memory.wire`` — ``_parse_records_body`` and ``_shows`` — for the
unordered list); this module holds the step.  They use the model's pure functions only:
``plan_write`` / ``mint_record`` (a write, over each candidate's pool as the seed's store
does — ``MemoryModel.write``, checked against ``store_write`` by a test via ``fast_write``),
``store_list`` / ``store_forget`` (``reference.memory.store``),
``validate_*``, ``write_response``, ``match_records`` and ``RecordsBody`` (the allowed-answers
judge of ``reference.memory.wire``) and ``rank_allowed`` (``reference.memory.judge``).

What is compared, and what is not (see docs/linearizability.md):

* **statuses and counts** exactly: a valid request must be answered 200, a write's
  ``inserted/deduped/superseded/evicted`` and a forget's ``forgotten`` exactly as the model
  computes them in the linearization order;
* **records** field by field as the sequential oracle does (``match_records``): every field
  but ``id``, ``createdAt`` and ``lastUsedAt`` exactly (``useCount`` as before or after the
  retrieval's own bump; ``lastUsedAt`` only present/absent);
* **ids** by correspondence: a bijection model id ↔ target id is part of the search state and
  grows as answers show records (an id shown for two model records, or two ids for one, is a
  divergence); an id the client sends is translated through it (an id not in it may name any
  unpaired model record, or nothing — only possible in a shrunk sub-history);
* **list order is not compared**: a list must show exactly ``min(limit, matching)`` distinct
  active matching records, each as the model has it, but in any order (and, past the limit,
  any of them).  Concurrent inserts may share a store millisecond, and an order that no answer
  ever reveals would otherwise multiply the search's states; the sequential oracle checks
  MEM-STORE.7's newest-first order;
* **times are not compared**: the model runs with one constant clock, so recency never
  separates two records — ranking is judged by keyword-match tie groups only (any order of
  equal keyword match is accepted).  The sequential oracle checks recency order and store
  timestamps; concurrent events may share a store millisecond, so this check does not.
  Consequently an eviction's count is compared exactly, but *which* records it takes is any
  ``excess`` of the actives (MEM-CAP.2's LRU order is the sequential oracle's); the workload
  keeps the one scope whose writes send ``cap`` small, so the choices are few.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any, overload

from conformance.concurrent.memory.answers import (
    MAX_CUTS,
    MODEL_NOW,
    IdView,
    bipartite,
    possible_answers,
    same_json,
    shows_here,
    shows_paired,
    wire_records,
)
from conformance.concurrent.memory.calls import (
    UNSEEN_SUFFIX,
    MemoryCall,
    candidate_texts,
    may_use,
    needs_written,
    parse_call,
    sent_ids,
    shown_records,
)
from conformance.concurrent.memory.hints import MemoryHints, norm_of
from conformance.concurrent.memory.state import Draft, State
from reference.memory.engine import DEFAULT_SCOPE_CAP, Dedup, mint_record, plan_write
from reference.memory.records import ACTIVE, EVICTED, SUPERSEDED, MemoryCandidate, MemoryRecord
from reference.memory.store import StoreState, WriteResult, record_id, store_forget, store_list
from reference.memory.wire import (
    ForgetBody,
    ListBody,
    RecordsBody,
    RetrieveBody,
    WriteBody,
    is_success,
    match_records,
    write_response,
)


class MemoryModel(MemoryHints):
    """The sequential specification of one scope, for :mod:`conformance.concurrent.checker`.

    Besides the states, the model keeps *hints* (:class:`MemoryHints`): for a normalized
    text, a token and a text, every position where some state of the search placed such a
    record, and for a target id every position some state paired it with.  A hint is only a
    candidate (a lookup checks the state's record at that position), so hints shared by every
    state of the search replace per-state indexes: a step's cost does not grow with the
    scope's size.
    """

    def __init__(self, scope_key: str, *, memo: bool = True) -> None:
        super().__init__(scope_key)
        # (call, state) -> successors: the search reaches one state with many linearized
        # sets (reads commute), and the step is a pure function of the two.  Keyed by the
        # call's id, the entry keeps the call (so the id is not reused while the entry lives).
        self._memo: dict[tuple[int, State], tuple[MemoryCall, Sequence[State]]] | None = (
            {} if memo else None
        )
        #: Set when a step enumerated only part of its allowed successors (an indeterminate
        #: retrieve's cuts, an eviction's choices): an ``illegal`` verdict is then unknown.
        self.incomplete = False

    def init(self) -> State:
        state = State((), (), 0, 0, 0)
        state.live = ()
        return state

    # -- the step ---------------------------------------------------------------------

    def step(self, state: State, call: MemoryCall) -> Sequence[State]:
        if self._memo is None:
            return self._step(state, call)
        key = (id(call), state)
        hit = self._memo.get(key)
        if hit is None or hit[0] is not call:
            hit = self._memo[key] = (call, self._step(state, call))
        return hit[1]

    def _step(self, state: State, call: MemoryCall) -> Sequence[State]:
        body = call.body
        if call.determinate and not is_success(call.status):
            return []  # every request the workload sends is valid: a success (MEM-WIRE.22)
        if isinstance(body, WriteBody):
            sent = [c.supersedes for c in body.candidates if c.supersedes]
            parts: list[Sequence[State]] = []
            for mapping, new in self._translations(state, sent):
                cands = [
                    replace(c, supersedes=mapping[c.supersedes]) if c.supersedes else c
                    for c in body.candidates
                ]
                cap = DEFAULT_SCOPE_CAP if body.cap is None else body.cap
                draft = Draft(self, state)
                for p, t in new:
                    self._pair(draft, p, t)
                answer, evictions = self.write(draft, cands, MODEL_NOW, cap)
                if call.determinate and not same_json(call, answer):
                    continue
                parts.append(self._evicted(draft, evictions))
            # One reading of the ids (the usual case): its successors as built, lazily.
            return parts[0] if len(parts) == 1 else [s for part in parts for s in part]
        if isinstance(body, ForgetBody):
            return self._forgot(state, body, call)
        if isinstance(body, ListBody):
            if not call.determinate:
                return [state]  # a list changes nothing
            return self._listed(state, body, call)
        assert isinstance(body, RetrieveBody)
        active = tuple(self.matching(state, body.query))
        if call.determinate:
            spec = RecordsBody(
                "/retrieve",
                self.scope,
                active=active,
                query=body.query,
                limit=body.limit,
                now=MODEL_NOW,
            )
            ids = match_records(spec, call.answer, IdView(self, state))
            if ids is None:
                return []
            return self._paired(state, ids, call.answer, bump=True)
        answers = possible_answers(active, body)
        if answers is None:
            self.incomplete = True
            answers = possible_answers(active, body, cut=True) or []
        return [self._bump(Draft(self, state), ids).done() for ids in answers]

    def _forgot(self, state: State, body: ForgetBody, call: MemoryCall) -> list[State]:
        """The states a ``/forget`` may leave, one per reading of the ids whose answer is the
        one the store gave (any, when it gave none)."""
        out = []
        for mapping, new in self._translations(state, [body.id]):
            draft = Draft(self, state)
            for p, t in new:
                self._pair(draft, p, t)
            forgotten = False
            at = self.position(mapping[body.id], state.n)
            if at is not None:
                r = state.rec(at)
                after, forgotten = store_forget(self._store((r,)), self.scope, r.id)
                if forgotten:
                    draft.set(at, after.records(self.scope)[0])
            if call.determinate and not same_json(call, {"ok": True, "forgotten": forgotten}):
                continue
            out.append(draft.done())
        return out

    def _store(self, recs: tuple[MemoryRecord, ...]) -> StoreState:
        return StoreState(scopes=MappingProxyType({self.scope: recs}))

    def _listed(self, state: State, body: ListBody, call: MemoryCall) -> list[State]:
        """A list answer as a set: exactly ``min(limit, matching)`` distinct records, each
        one of the matching active records as it is now (no bump), ids through the bijection
        (order and, past the limit, the choice among them are not compared)."""
        wire = wire_records(call, self.scope)
        if wire is None:
            return []
        if body.query is None:
            total = state.active
            allowed: set[int] | None = None  # every active record
        else:
            pool = tuple(self.matching(state, body.query))
            # store_list over the matching pool: the records a filtered list may show.
            members = store_list(self._store(pool), self.scope, 10**9, body.query)
            allowed = {int(r.id[len(self._prefix) :]) - 1 for r in members}
            total = len(members)
        if len(wire) != min(body.limit, total):
            return []
        ids_view = IdView(self, state)
        options: list[list[int]] = []
        every_paired = True
        for w, frozen in wire:
            wid = w.get("id")
            at = self.paired(state, wid) if isinstance(wid, str) else None
            if at is not None:
                # The bijection allows only the record this id is paired with: its content,
                # and its supersedes pointer through the bijection (the id is its pair).
                r = state.rec(at)
                if (
                    (allowed is not None and at not in allowed)
                    or r.status != ACTIVE
                    or not shows_paired(r, w, frozen, ids_view)
                ):
                    return []
                options.append([at])
                continue
            every_paired = False
            text = w.get("text")
            hints = sorted(self._by_text.get(text, ())) if isinstance(text, str) else ()
            opts = [
                p
                for p in hints
                if p < state.n
                and (allowed is None or p in allowed)
                and state.rec(p).status == ACTIVE
                and shows_here(state.rec(p), w, frozen, ids_view)
            ]
            if not opts:
                return []
            options.append(opts)
        if every_paired:
            # Distinct ids (wire_records) paired with distinct records: the assignment is
            # the bijection's, and it pairs nothing new.
            return [state]
        assignment = bipartite(options)
        if assignment is None:
            return []
        ids = [record_id(self.scope, p + 1) for p in assignment]
        return self._paired(state, ids, call.answer, bump=False)

    def _paired(self, state: State, ids: Sequence[str], answer: Any, *, bump: bool) -> list[State]:
        draft = Draft(self, state)
        wire_ids = [item["id"] for item in answer["records"]]
        for mid, t in zip(ids, wire_ids, strict=True):
            p = self.position(mid, state.n)
            assert p is not None
            have = draft.tid(p)
            if have == t:
                continue
            if have is not None or self.paired(draft, t) is not None:
                return []  # an id shown for two records, or two ids for one (MEM-STORE.9)
            self._pair(draft, p, t)
        if bump:
            self._bump(draft, ids)
        return [draft.done()]

    def _bump(self, draft: Draft, ids: Sequence[str]) -> Draft:
        for mid in set(ids):
            p = self.position(mid, draft.n)
            assert p is not None
            r = draft.rec(p)
            draft.set(p, replace(r, last_used_at=MODEL_NOW, use_count=r.use_count + 1))
        return draft

    def write(
        self, draft: Draft, candidates: Sequence[MemoryCandidate], now: int, cap: int
    ) -> tuple[dict[str, object], tuple[list[int], int]]:
        """``store_write`` on a draft, computed over each candidate's *pool* (the same-norm
        actives and the supersede target), as the seed's store does (section 18):
        ``plan_write`` reads nothing else, so the plan -- and the answer -- are the same.
        Returns the answer and the eviction still to choose: (active positions, how many)."""
        inserted = deduped = superseded = 0
        for cand in candidates:
            pool_at = self._active_at(draft, self._by_norm, norm_of(cand.text))
            if cand.supersedes:
                t = self.position(cand.supersedes, draft.n)
                if t is not None and t not in pool_at and draft.rec(t).status == ACTIVE:
                    pool_at = sorted([*pool_at, t])
            plan = plan_write([draft.rec(p) for p in pool_at], cand)
            if isinstance(plan, Dedup):
                p = self.position(plan.target_id, draft.n)
                assert p is not None
                r = draft.rec(p)
                draft.set(p, replace(r, use_count=r.use_count + 1))
                deduped += 1
                continue
            if plan.supersede_id is not None:
                p = self.position(plan.supersede_id, draft.n)
                assert p is not None
                draft.set(p, replace(draft.rec(p), status=SUPERSEDED))
                superseded += 1
            rid = record_id(self.scope, draft.n + 1)
            draft.append(mint_record(cand, self.scope, rid, now))
            inserted += 1
        # An empty batch is a no-op, whatever its cap (MEM-CAP.1).
        excess = max(0, draft.active - max(cap, 0)) if candidates else 0
        live = draft.live() if excess else []
        answer = write_response(WriteResult(inserted, deduped, superseded, excess))
        return answer, (live, excess)

    def _evicted(self, draft: Draft, evictions: tuple[list[int], int]) -> Sequence[State]:
        """The states after each allowed eviction.  The model runs one clock, so which
        records are least recently used is not known: any ``excess`` of the active records
        (MEM-CAP.1's count is compared, MEM-CAP.2's order is the sequential oracle's)."""
        live, excess = evictions
        before = draft.done()
        if not excess:
            return [before]
        choices = list(itertools.islice(itertools.combinations(live, excess), MAX_CUTS + 1))
        if len(choices) > MAX_CUTS:
            self.incomplete = True
            del choices[MAX_CUTS:]

        def evict(k: int) -> State:
            d = Draft(self, before)
            for p in choices[k]:
                d.set(p, replace(d.rec(p), status=EVICTED))
            return d.done()

        return Successors(len(choices), evict)


class Successors(Sequence[State]):
    """``n`` successor states, each built on first access and kept: the search usually
    explores only the first of an eviction's choices, so the others are never built."""

    __slots__ = ("_build", "_items")

    def __init__(self, n: int, build: Callable[[int], State]) -> None:
        self._build = build
        self._items: list[State | None] = [None] * n

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, k: int) -> State: ...

    @overload
    def __getitem__(self, k: slice) -> list[State]: ...

    def __getitem__(self, k: int | slice) -> State | list[State]:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self._items)))]
        state = self._items[k]  # (raises IndexError past the end, as a list does)
        if state is None:
            state = self._items[k] = self._build(k % len(self._items))
        return state


def fast_write(
    recs: tuple[MemoryRecord, ...],
    scope: str,
    candidates: Sequence[MemoryCandidate],
    now: int,
    cap: int,
) -> tuple[list[tuple[MemoryRecord, ...]], dict[str, object]]:
    """The model's write from a state of ``recs``: every allowed resulting record tuple (one
    per eviction choice) and the answer (tests compare it with ``store_write``)."""
    model = MemoryModel(scope)
    base = State.build(recs)
    for p, r in enumerate(recs):
        model.place(p, r)
    draft = Draft(model, base)
    answer, evictions = model.write(draft, candidates, now, cap)
    return [s.records() for s in model._evicted(draft, evictions)], answer


def make_model(scope: str) -> MemoryModel:
    return MemoryModel(scope)


__all__ = [
    "ACTIVE",
    "MAX_CUTS",
    "MODEL_NOW",
    "MemoryCall",
    "MemoryCandidate",
    "MemoryModel",
    "State",
    "UNSEEN_SUFFIX",
    "candidate_texts",
    "make_model",
    "needs_written",
    "may_use",
    "parse_call",
    "sent_ids",
    "shown_records",
]
