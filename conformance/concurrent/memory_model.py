"""The Memory Worker as the checker's sequential specification: an adapter to ``reference.memory``.

This is the one module that knows how the reference model is called; re-point it here if the
model's judging functions move (it borrows two private helpers of ``reference.memory.wire``
— ``_parse_records_body`` and ``_shows`` — for the unordered list).  It uses the model's pure
functions only:
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

import functools
import itertools
import json
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from reference.memory.engine import (
    DEFAULT_SCOPE_CAP,
    Dedup,
    mint_record,
    normalize_text,
    plan_write,
)
from reference.memory.judge import rank_allowed
from reference.memory.records import ACTIVE, EVICTED, SUPERSEDED, MemoryCandidate, MemoryRecord
from reference.memory.scoring import tokenize
from reference.memory.store import (
    StoreState,
    WriteResult,
    record_id,
    store_forget,
    store_list,
)
from reference.memory.wire import (
    ForgetBody,
    ListBody,
    RecordsBody,
    RetrieveBody,
    WireError,
    WriteBody,
    _parse_records_body,
    _shows,
    json_equal,
    match_records,
    validate_forget,
    validate_list,
    validate_retrieve,
    validate_write,
    write_response,
)

#: The model's one clock value: every event happens "now" (times are not compared).
MODEL_NOW = 1_000_000
#: An indeterminate retrieve whose tied last group could be cut in more ways than this is
#: modelled by its first ``MAX_CUTS`` choices plus "did not happen" (the search may then
#: miss an explanation: reported linearizable histories stay sound, a non-linearizable
#: verdict is only reported for histories without such a cut).
MAX_CUTS = 64

#: The suffix of the id the concurrent driver sends for a record its client never saw.
UNSEEN_SUFFIX = ":999999999"

_VALIDATE = {
    "/write": validate_write,
    "/retrieve": validate_retrieve,
    "/list": validate_list,
    "/forget": validate_forget,
}


@dataclass(frozen=True)
class MemoryCall:
    """One operation as the model reads it: the parsed request and the answer (``None``:
    indeterminate)."""

    route: str
    body: WriteBody | RetrieveBody | ListBody | ForgetBody
    status: int | None
    answer: Any
    determinate: bool


def parse_call(
    route: str, request: Any, status: int | None, answer: Any, determinate: bool
) -> MemoryCall:
    """Validate the request as the wire model does; a request the harness sends is valid."""
    parsed = _VALIDATE[route](request)
    if isinstance(parsed, WireError):
        raise ValueError(
            f"{route}: the concurrent workload sent an invalid request: {parsed.reason}"
        )
    assert isinstance(parsed, WriteBody | RetrieveBody | ListBody | ForgetBody)
    return MemoryCall(route, parsed, status, answer, determinate)


#: Records per chunk of a state's persistent vector (a step copies one chunk and the spine).
CHUNK = 64
#: A state remembers its active positions while it has at most this many.
LIVE_MAX = 64
_MASK = (1 << 61) - 1


def _z(p: int, value: object) -> int:
    """The Zobrist term of ``value`` at position ``p`` (a state's hash is their sum)."""
    return hash((p, value)) & _MASK


class State:
    """One scope as the model holds it: its records in insertion order (position ``p`` holds
    the model record ``mem:<scope>:<p+1>``) and, per position, the target id paired with it
    (``None``: not shown yet) -- the id bijection.

    Both are persistent vectors (a tuple of chunks of ``CHUNK``): a step copies the chunks it
    changes and the spine, never the whole scope, and states share the rest.  The hash is a
    Zobrist sum of (position, record) and (position, target id) terms kept incrementally;
    equality compares the vectors (chunks shared by two states compare by identity).
    ``active`` (the number of active records) is derived, kept for the cap and lists.
    """

    __slots__ = ("recs", "tids", "n", "active", "_hash", "live")

    def __init__(
        self,
        recs: tuple[tuple[MemoryRecord, ...], ...],
        tids: tuple[tuple[str | None, ...], ...],
        n: int,
        active: int,
        hash_: int,
    ) -> None:
        self.recs = recs
        self.tids = tids
        self.n = n
        self.active = active
        self._hash = hash_
        #: The active positions, sorted, while there are at most ``LIVE_MAX`` (derived, kept
        #: so that a capped scope's eviction and lists do not scan evicted records).
        self.live: tuple[int, ...] | None = None

    @classmethod
    def build(cls, records: Sequence[MemoryRecord], tids: Sequence[str | None] = ()) -> State:
        """A state from scratch (tests compare it with the incrementally built one)."""
        tid_list = list(tids) + [None] * (len(records) - len(tids))
        h = 0
        for p, r in enumerate(records):
            h += _z(p, r)
            if tid_list[p] is not None:
                h += _z(p, ("t", tid_list[p]))
        live = tuple(p for p, r in enumerate(records) if r.status == ACTIVE)
        state = cls(_chunked(records), _chunked(tid_list), len(records), len(live), h & _MASK)
        state.live = live if len(live) <= LIVE_MAX else None
        return state

    def rec(self, p: int) -> MemoryRecord:
        return self.recs[p >> 6][p & 63]

    def tid(self, p: int) -> str | None:
        return self.tids[p >> 6][p & 63]

    def records(self) -> tuple[MemoryRecord, ...]:
        return tuple(r for chunk in self.recs for r in chunk)

    @property
    def pairs(self) -> frozenset[tuple[int, str]]:
        """(position, target id) of every paired record (for tests and messages)."""
        return frozenset((p, t) for p in range(self.n) if (t := self.tid(p)) is not None)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self._hash == other._hash
            and self.n == other.n
            and self.recs == other.recs
            and self.tids == other.tids
        )


def _chunked(items: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK))


def _spliced(
    chunks: tuple[tuple[Any, ...], ...], n: int, changes: Mapping[int, Any], new_n: int
) -> tuple[tuple[Any, ...], ...]:
    """``chunks`` (``n`` items) with ``changes`` (position -> item) applied; positions
    ``n .. new_n - 1`` must all be in ``changes`` or be filled with ``None``."""
    spine = list(chunks)
    touched: dict[int, list[Any]] = {}
    for p, value in changes.items():
        c = p >> 6
        chunk = touched.get(c)
        if chunk is None:
            chunk = touched[c] = list(spine[c]) if c < len(spine) else []
        i = p & 63
        if i >= len(chunk):
            chunk.extend([None] * (i + 1 - len(chunk)))
        chunk[i] = value
    if new_n > n and n & 63:  # the partial last chunk grows
        touched.setdefault(n >> 6, list(spine[n >> 6]))
    for c in range(len(spine), ((new_n - 1) >> 6) + 1 if new_n else 0):
        touched.setdefault(c, [])
    for c, chunk in sorted(touched.items()):
        want = min(CHUNK, new_n - (c << 6))
        if len(chunk) < want:
            chunk.extend([None] * (want - len(chunk)))
        if c < len(spine):
            spine[c] = tuple(chunk)
        else:
            spine.append(tuple(chunk))
    return tuple(spine)


class _Draft:
    """A state being changed by one step: an overlay of changed and appended positions."""

    __slots__ = ("base", "model", "n", "recs", "tids", "active")

    def __init__(self, model: MemoryModel, base: State) -> None:
        self.model = model
        self.base = base
        self.n = base.n
        self.recs: dict[int, MemoryRecord] = {}
        self.tids: dict[int, str] = {}
        self.active = base.active

    def rec(self, p: int) -> MemoryRecord:
        r = self.recs.get(p)
        return self.base.rec(p) if r is None else r

    def tid(self, p: int) -> str | None:
        t = self.tids.get(p)
        return self.base.tid(p) if t is None and p < self.base.n else t

    def set(self, p: int, r: MemoryRecord) -> None:
        old = self.rec(p)
        self.active += (r.status == ACTIVE) - (old.status == ACTIVE)
        self.recs[p] = r

    def append(self, r: MemoryRecord) -> int:
        p = self.n
        self.n += 1
        self.recs[p] = r
        self.active += r.status == ACTIVE
        self.model.place(p, r)
        return p

    def pair(self, p: int, t: str) -> None:
        self.tids[p] = t

    def live(self) -> list[int]:
        """The active positions, sorted (from the base's, else by a scan)."""
        base = self.base.live
        if base is None:
            return [p for p in range(self.n) if self.rec(p).status == ACTIVE]
        out = set(base)
        for p, r in self.recs.items():
            if r.status == ACTIVE:
                out.add(p)
            else:
                out.discard(p)
        return sorted(out)

    def done(self) -> State:
        base = self.base
        if not self.recs and not self.tids:
            return base
        h = base._hash
        for p, r in self.recs.items():
            if p < base.n:
                h -= _z(p, base.rec(p))
            h += _z(p, r)
        for p, t in self.tids.items():
            if p < base.n and (old := base.tid(p)) is not None:
                h -= _z(p, ("t", old))
            h += _z(p, ("t", t))
        recs = _spliced(base.recs, base.n, self.recs, self.n) if self.recs else base.recs
        if self.tids or self.n != base.n:
            tids = _spliced(base.tids, base.n, self.tids, self.n)
        else:
            tids = base.tids
        state = State(recs, tids, self.n, self.active, h & _MASK)
        if self.active <= LIVE_MAX:  # (a scan only when the scope shrinks to LIVE_MAX)
            state.live = tuple(self.live()) if self.recs else base.live
        return state


class _IdView(Mapping[str, str]):
    """A state's id bijection as the ``IdMap`` (model id -> target id) the wire judge reads,
    with O(1) lookups both ways (``values()`` supports a fast ``in``)."""

    def __init__(self, model: MemoryModel, state: State | _Draft) -> None:
        self.model = model
        self.state = state

    def __getitem__(self, mid: str) -> str:
        p = self.model.position(mid, self.state.n)
        t = None if p is None else self.state.tid(p)
        if t is None:
            raise KeyError(mid)
        return t

    def __contains__(self, mid: object) -> bool:
        if not isinstance(mid, str):
            return False
        p = self.model.position(mid, self.state.n)
        return p is not None and self.state.tid(p) is not None

    def __iter__(self) -> Iterator[str]:
        for p in range(self.state.n):
            if self.state.tid(p) is not None:
                yield record_id(self.model.scope, p + 1)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def values(self) -> _TargetIds:
        return _TargetIds(self)


class _TargetIds(ValuesView[str]):
    def __init__(self, view: _IdView) -> None:
        super().__init__(view)
        self.view = view

    def __contains__(self, t: object) -> bool:
        return isinstance(t, str) and self.view.model.paired(self.view.state, t) is not None


class MemoryModel:
    """The sequential specification of one scope, for :mod:`conformance.concurrent.checker`.

    Besides the states, the model keeps *hints*: for a normalized text, a token and a text,
    every position where some state of the search placed such a record, and for a target id
    every position some state paired it with.  A hint is only a candidate (a lookup checks the
    state's record at that position), so hints shared by every state of the search replace
    per-state indexes: a step's cost does not grow with the scope's size.
    """

    def __init__(self, scope_key: str, *, memo: bool = True) -> None:
        self.scope = scope_key
        self._prefix = record_id(scope_key, 0)[:-1]
        # (call, state) -> successors: the search reaches one state with many linearized
        # sets (reads commute), and the step is a pure function of the two.
        self._memo: dict[tuple[int, State], list[State]] | None = {} if memo else None
        self._by_norm: dict[str, set[int]] = {}
        self._by_token: dict[str, set[int]] = {}
        self._by_text: dict[str, set[int]] = {}
        self._by_tid: dict[str, set[int]] = {}
        self._positions: dict[str, int] = {}  # model id -> position
        #: Set when a step enumerated only part of its allowed successors (an indeterminate
        #: retrieve's cuts, an eviction's choices): an ``illegal`` verdict is then unknown.
        self.incomplete = False

    def init(self) -> State:
        state = State((), (), 0, 0, 0)
        state.live = ()
        return state

    # -- hints --------------------------------------------------------------------------

    def place(self, p: int, r: MemoryRecord) -> None:
        self._by_norm.setdefault(_norm(r.text), set()).add(p)
        self._by_text.setdefault(r.text, set()).add(p)
        for tok in _tokens(r.text, r.keywords):
            self._by_token.setdefault(tok, set()).add(p)

    def position(self, mid: str, n: int) -> int | None:
        """The position of model id ``mid`` in a state of ``n`` records (``None``: no such)."""
        p = self._positions.get(mid)
        if p is None:
            tail = mid[len(self._prefix) :]
            if not mid.startswith(self._prefix) or not tail.isdigit() or tail.startswith("0"):
                return None
            p = int(tail) - 1
            if len(self._positions) < 1_000_000:
                self._positions[mid] = p
        return p if p < n else None

    def paired(self, state: State | _Draft, t: str) -> int | None:
        """The position target id ``t`` is paired with in ``state`` (``None``: unpaired)."""
        for p in self._by_tid.get(t, ()):
            if p < state.n and state.tid(p) == t:
                return p
        return None

    def _pair(self, draft: _Draft, p: int, t: str) -> None:
        self._by_tid.setdefault(t, set()).add(p)
        draft.pair(p, t)

    def _active_at(
        self, state: State | _Draft, hint: Mapping[str, set[int]], key: str
    ) -> list[int]:
        return sorted(p for p in hint.get(key, ()) if p < state.n and state.rec(p).status == ACTIVE)

    def matching(self, state: State | _Draft, query: str) -> list[MemoryRecord]:
        """The active records some query token hits whole, in insertion order -- the only
        ones ranking or a filtered list can return (MEM-SCORE.4)."""
        q = set(tokenize(query))
        found: set[int] = set()
        for tok in q:
            found.update(self._by_token.get(tok, ()))
        out = []
        for p in sorted(found):
            if p < state.n:
                r = state.rec(p)
                if r.status == ACTIVE and q & _tokens(r.text, r.keywords):
                    out.append(r)
        return out

    # -- ids --------------------------------------------------------------------------

    def _translations(
        self, state: State, target_ids: Sequence[str]
    ) -> list[tuple[dict[str, str], list[tuple[int, str]]]]:
        """Every way to read the target ids a request names as model ids (usually one), with
        the (position, target id) pairs each reading adds."""
        mapping: dict[str, str] = {}
        unknown = []
        for t in dict.fromkeys(target_ids):
            p = self.paired(state, t)
            if p is None:
                unknown.append(t)
            else:
                mapping[t] = record_id(self.scope, p + 1)
        if not unknown:
            return [(mapping, [])]
        # Only in a shrunk sub-history (a client sends ids it saw in answers, which are
        # linearized first): an unpaired id may name any unpaired record, or nothing.
        free: list[int] = []
        if not all(t.endswith(UNSEEN_SUFFIX) for t in unknown):
            free = [p for p in range(state.n) if state.tid(p) is None]
        out: list[tuple[dict[str, str], list[tuple[int, str]]]] = []
        choices = [[-1] if t.endswith(UNSEEN_SUFFIX) else [-1, *free] for t in unknown]
        for combo in itertools.product(*choices):
            real = [p for p in combo if p >= 0]
            if len(set(real)) != len(real):
                continue
            m = dict(mapping)
            new = []
            for t, p in zip(unknown, combo, strict=True):
                if p < 0:
                    m[t] = f"ghost:{t}"
                else:
                    m[t] = record_id(self.scope, p + 1)
                    new.append((p, t))
            out.append((m, new))
        return out

    # -- the step ---------------------------------------------------------------------

    def step(self, state: State, call: MemoryCall) -> list[State]:
        if self._memo is None:
            return self._step(state, call)
        key = (id(call), state)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._step(state, call)
        return hit

    def _step(self, state: State, call: MemoryCall) -> list[State]:
        body = call.body
        if call.determinate and call.status != 200:
            return []  # every request the workload sends is valid: MEM-WIRE says 200
        if isinstance(body, WriteBody):
            sent = [c.supersedes for c in body.candidates if c.supersedes]
            out = []
            for mapping, new in self._translations(state, sent):
                cands = [
                    replace(c, supersedes=mapping[c.supersedes]) if c.supersedes else c
                    for c in body.candidates
                ]
                cap = DEFAULT_SCOPE_CAP if body.cap is None else body.cap
                draft = _Draft(self, state)
                for p, t in new:
                    self._pair(draft, p, t)
                answer, evictions = self.write(draft, cands, MODEL_NOW, cap)
                if call.determinate and not _same_json(call, answer):
                    continue
                out.extend(self._evicted(draft, evictions))
            return out
        if isinstance(body, ForgetBody):
            out = []
            for mapping, new in self._translations(state, [body.id]):
                draft = _Draft(self, state)
                for p, t in new:
                    self._pair(draft, p, t)
                forgotten = False
                at = self.position(mapping[body.id], state.n)
                if at is not None:
                    r = state.rec(at)
                    after, forgotten = store_forget(self._store((r,)), self.scope, r.id)
                    if forgotten:
                        draft.set(at, after.records(self.scope)[0])
                if call.determinate and not _same_json(call, {"ok": True, "forgotten": forgotten}):
                    continue
                out.append(draft.done())
            return out
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
            ids = match_records(spec, call.answer, _IdView(self, state))
            if ids is None:
                return []
            return self._paired(state, ids, call.answer, bump=True)
        answers = _possible_answers(active, body)
        if answers is None:
            self.incomplete = True
            answers = _possible_answers(active, body, cut=True) or []
        return [self._bump(_Draft(self, state), ids).done() for ids in answers]

    def _store(self, recs: tuple[MemoryRecord, ...]) -> StoreState:
        return StoreState(scopes=MappingProxyType({self.scope: recs}))

    def _listed(self, state: State, body: ListBody, call: MemoryCall) -> list[State]:
        """A list answer as a set: exactly ``min(limit, matching)`` distinct records, each
        one of the matching active records as it is now (no bump), ids through the bijection
        (order and, past the limit, the choice among them are not compared)."""
        wire = _wire_records(call, self.scope)
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
        ids_view = _IdView(self, state)
        options: list[list[int]] = []
        for w, frozen in wire:
            wid = w.get("id")
            at = self.paired(state, wid) if isinstance(wid, str) else None
            if at is not None:
                # The bijection allows only the record this id is paired with.
                hints: Iterable[int] = (at,)
            else:
                text = w.get("text")
                hints = sorted(self._by_text.get(text, ())) if isinstance(text, str) else ()
            opts = [
                p
                for p in hints
                if p < state.n
                and (allowed is None or p in allowed)
                and state.rec(p).status == ACTIVE
                and _shows_here(state.rec(p), w, frozen, ids_view)
            ]
            if not opts:
                return []
            options.append(opts)
        assignment = _bipartite(options)
        if assignment is None:
            return []
        ids = [record_id(self.scope, p + 1) for p in assignment]
        return self._paired(state, ids, call.answer, bump=False)

    def _paired(self, state: State, ids: Sequence[str], answer: Any, *, bump: bool) -> list[State]:
        draft = _Draft(self, state)
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

    def _bump(self, draft: _Draft, ids: Sequence[str]) -> _Draft:
        for mid in set(ids):
            p = self.position(mid, draft.n)
            assert p is not None
            r = draft.rec(p)
            draft.set(p, replace(r, last_used_at=MODEL_NOW, use_count=r.use_count + 1))
        return draft

    def write(
        self, draft: _Draft, candidates: Sequence[MemoryCandidate], now: int, cap: int
    ) -> tuple[dict[str, object], tuple[list[int], int]]:
        """``store_write`` on a draft, computed over each candidate's *pool* (the same-norm
        actives and the supersede target), as the seed's store does (section 18):
        ``plan_write`` reads nothing else, so the plan -- and the answer -- are the same.
        Returns the answer and the eviction still to choose: (active positions, how many)."""
        inserted = deduped = superseded = 0
        for cand in candidates:
            pool_at = self._active_at(draft, self._by_norm, _norm(cand.text))
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
        excess = max(0, draft.active - max(cap, 0))
        live = draft.live() if excess else []
        answer = write_response(WriteResult(inserted, deduped, superseded, excess))
        return answer, (live, excess)

    def _evicted(self, draft: _Draft, evictions: tuple[list[int], int]) -> list[State]:
        """The states after each allowed eviction.  The model runs one clock, so which
        records are least recently used is not known: any ``excess`` of the active records
        (MEM-CAP.1's count is compared, MEM-CAP.2's order is the sequential oracle's)."""
        live, excess = evictions
        before = draft.done()
        if not excess:
            return [before]
        out = []
        for k, chosen in enumerate(itertools.combinations(live, excess)):
            if k >= MAX_CUTS:
                self.incomplete = True
                break
            d = _Draft(self, before)
            for p in chosen:
                d.set(p, replace(d.rec(p), status=EVICTED))
            out.append(d.done())
        return out


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
    draft = _Draft(model, base)
    answer, evictions = model.write(draft, candidates, now, cap)
    return [s.records() for s in model._evicted(draft, evictions)], answer


def _freeze(v: object) -> str:
    """A hashable copy of a JSON value that keeps types apart (``true`` is not ``1``)."""
    return json.dumps(v, separators=(",", ":"))


#: Caches over *values* (a wire record's frozen content, a model record object kept alive with
#: its entry): the same record shows unchanged in many answers.
_VALID: dict[tuple[str, Hashable], bool] = {}
_CONTENT: dict[tuple[int, Hashable, bool], tuple[MemoryRecord, bool]] = {}
_CACHE_MAX = 200_000


def _wire_records(
    call: MemoryCall, scope: str
) -> list[tuple[Mapping[str, object], Hashable]] | None:
    """The answer's records (each with its frozen content), validated as the wire judge does
    (``_parse_records_body``, one record at a time so that each content is judged once), or
    ``None`` when the answer is not a records body of this scope."""
    hit = _WIRE.get(id(call))
    if hit is not None and hit[0] is call:
        return hit[1]
    body = call.answer
    out: list[tuple[Mapping[str, object], Hashable]] | None = None
    if isinstance(body, dict) and isinstance(body.get("records"), list):
        out = []
        for item in body["records"]:
            frozen = _freeze(item)
            key = (scope, frozen)
            ok = _VALID.get(key)
            if ok is None:
                if len(_VALID) > _CACHE_MAX:
                    _VALID.clear()
                ok = _VALID[key] = _parse_records_body({"records": [item]}, scope) is not None
            if not ok:
                out = None
                break
            out.append((item, frozen))
        if out is not None and len({str(w["id"]) for w, _ in out}) != len(out):
            out = None
    if len(_WIRE) > _CACHE_MAX:
        _WIRE.clear()
    _WIRE[id(call)] = (call, out)
    return out


def _same_json(call: MemoryCall, answer: object) -> bool:
    """``json_equal(call.answer, answer)``, with a fast path: the same JSON text is the same
    value (only a different text needs the judge's number-aware comparison)."""
    hit = _ANSWER_TEXT.get(id(call))
    if hit is None or hit[0] is not call:
        if len(_ANSWER_TEXT) > _CACHE_MAX:
            _ANSWER_TEXT.clear()
        hit = _ANSWER_TEXT[id(call)] = (call, json.dumps(call.answer, sort_keys=True))
    return hit[1] == json.dumps(answer, sort_keys=True) or json_equal(call.answer, answer)


_ANSWER_TEXT: dict[int, tuple[MemoryCall, str]] = {}


def _shows_here(rec: MemoryRecord, w: Mapping[str, object], frozen: Hashable, ids: _IdView) -> bool:
    """``_shows(rec, w, bumped=False, id_map=ids)``: its content part (``id_map=None``)
    cached per (record, wire content), then the same id checks through the bijection."""
    key = (id(rec), frozen, False)
    hit = _CONTENT.get(key)
    if hit is None or hit[0] is not rec:
        if len(_CONTENT) > _CACHE_MAX:
            _CONTENT.clear()
        hit = _CONTENT[key] = (rec, _shows(rec, w, bumped=False, id_map=None))
    if not hit[1]:
        return False
    wid = w.get("id")
    if rec.id in ids:
        if ids[rec.id] != wid:
            return False
    elif wid in ids.values():
        return False
    sup = rec.supersedes
    return sup is None or sup not in ids or w.get("supersedes") == ids[sup]


_WIRE: dict[int, tuple[MemoryCall, list[tuple[Mapping[str, object], Hashable]] | None]] = {}


def _possible_answers(
    active: Sequence[MemoryRecord], body: RetrieveBody, *, cut: bool = False
) -> list[list[str]] | None:
    """The id sets a retrieve may have returned (and bumped), for an unseen answer (``None``
    when the tied last group can be cut in more than ``MAX_CUTS`` ways, unless ``cut``: then
    the first ``MAX_CUTS``)."""
    groups = rank_allowed(list(active), body.query, body.limit, MODEL_NOW)
    fixed: list[str] = []
    for g in groups[:-1]:
        fixed.extend(sorted(g))
    if not groups:
        return [[]]
    last = sorted(groups[-1])
    room = min(len(last), body.limit - len(fixed))
    combos = list(itertools.islice(itertools.combinations(last, room), MAX_CUTS + 1))
    if len(combos) > MAX_CUTS:
        if not cut:
            return None
        combos = combos[:MAX_CUTS]
    return [fixed + list(c) for c in combos]


@functools.lru_cache(maxsize=65536)
def _tokens(text: str, keywords: tuple[str, ...]) -> frozenset[str]:
    """``record_tokens`` of a record with this text and keywords (cached: records are values)."""
    out = set(tokenize(text))
    for kw in keywords:
        out.update(tokenize(kw))
    return frozenset(out)


@functools.lru_cache(maxsize=65536)
def _norm(text: str) -> str:
    return normalize_text(text)


def make_model(scope: str) -> MemoryModel:
    return MemoryModel(scope)


def candidate_texts(call: MemoryCall) -> list[str]:
    """What a call writes, as ``text NUL sourceThreadKey`` (for the shrinker's closed-world
    guard: a record shown must have been written by a kept write of the same client)."""
    if isinstance(call.body, WriteBody):
        return [f"{c.text}\x00{c.source_thread_key}" for c in call.body.candidates]
    return []


def shown_records(call: MemoryCall) -> list[Mapping[str, Any]]:
    """Records an answer shows (for the shrinker's closed-world guard)."""
    if call.determinate and call.route in ("/list", "/retrieve") and isinstance(call.answer, dict):
        recs = call.answer.get("records")
        if isinstance(recs, list):
            return [r for r in recs if isinstance(r, dict)]
    return []


def may_use(call: MemoryCall, text: str) -> bool:
    """Could this call bump the usage of a record with ``text`` (a retrieve that may match it)?"""
    if isinstance(call.body, RetrieveBody):
        return bool(set(tokenize(call.body.query)) & set(tokenize(text)))
    return False


def needs_written(call: MemoryCall) -> list[tuple[int, list[str] | None]]:
    """What a write's answer needs written first by *other* calls (for the shrinker's
    closed-world guard): more dedups than its own repeated candidates explain need that many
    of its texts; an eviction needs the scope to have held ``cap + evicted - inserted``
    records (any texts)."""
    if not (
        call.determinate and isinstance(call.body, WriteBody) and isinstance(call.answer, dict)
    ):
        return []
    out: list[tuple[int, list[str] | None]] = []
    texts = [c.text for c in call.body.candidates]
    deduped = call.answer.get("deduped")
    if isinstance(deduped, int) and deduped > len(texts) - len(set(texts)):
        out.append((deduped - (len(texts) - len(set(texts))), texts))
    evicted, inserted = call.answer.get("evicted"), call.answer.get("inserted")
    if isinstance(evicted, int) and evicted > 0 and isinstance(inserted, int):
        cap = DEFAULT_SCOPE_CAP if call.body.cap is None else call.body.cap
        if cap + evicted - inserted > 0:
            out.append((cap + evicted - inserted, None))
    return out


def sent_ids(call: MemoryCall) -> list[str]:
    """Target ids a request names."""
    if isinstance(call.body, ForgetBody):
        return [call.body.id]
    if isinstance(call.body, WriteBody):
        return [c.supersedes for c in call.body.candidates if c.supersedes]
    return []


__all__ = [
    "ACTIVE",
    "MODEL_NOW",
    "MemoryCall",
    "MemoryCandidate",
    "MemoryModel",
    "State",
    "candidate_texts",
    "make_model",
    "needs_written",
    "may_use",
    "parse_call",
    "sent_ids",
    "shown_records",
]


def _bipartite(options: Sequence[Sequence[int]]) -> list[int] | None:
    """One distinct member per position, each among its options (Kuhn's augmenting paths),
    or ``None`` when there is none."""
    owner: dict[int, int] = {}  # member -> position

    def place(i: int, seen: set[int]) -> bool:
        for m in options[i]:
            if m in seen:
                continue
            seen.add(m)
            if m not in owner or place(owner[m], seen):
                owner[m] = i
                return True
        return False

    for i in range(len(options)):
        if not place(i, set()):
            return None
    by_position = {i: m for m, i in owner.items()}
    return [by_position[i] for i in range(len(options))]
