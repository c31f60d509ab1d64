"""The Memory Worker as the checker's sequential specification: an adapter to ``reference.memory``.

This is the one module that knows how the reference model is called; re-point it here if the
model's judging functions move (it borrows three private helpers of ``reference.memory.wire``
— ``_parse_records_body`` and ``_shows`` — for the unordered list).  It uses the model's pure
functions only:
``plan_write`` / ``mint_record`` / ``plan_eviction`` (a write, over each candidate's pool as the
seed's store does — ``fast_write``, checked against ``store_write`` by a test),
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
  Consequently eviction (whose choice depends on times) is not exercised by the concurrent
  workload: writes never send ``cap`` and scopes stay far below the default cap.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from reference.memory.engine import (
    DEFAULT_SCOPE_CAP,
    Dedup,
    mint_record,
    normalize_text,
    plan_eviction,
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

Pairs = frozenset[tuple[str, str]]  # (model id, target id)


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


#: id(record) -> (record, hash): records are immutable values shared by many states, and a
#: dataclass hash walks every field, so each record object is hashed once (the record is
#: kept alive with its entry, so an id is never reused while cached).
_RECORD_HASH: dict[int, tuple[MemoryRecord, int]] = {}


def _record_hash(r: MemoryRecord) -> int:
    hit = _RECORD_HASH.get(id(r))
    if hit is None or hit[0] is not r:
        if len(_RECORD_HASH) > 500_000:
            _RECORD_HASH.clear()
        hit = _RECORD_HASH[id(r)] = (r, hash(r))
    return hit[1]


class State:
    """(records of the scope in insertion order, id pairs) with a cached hash."""

    __slots__ = ("recs", "pairs", "_hash")

    def __init__(self, recs: tuple[MemoryRecord, ...], pairs: Pairs) -> None:
        self.recs = recs
        self.pairs = pairs
        self._hash = hash((tuple(map(_record_hash, recs)), pairs))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self._hash == other._hash
            and self.recs == other.recs
            and self.pairs == other.pairs
        )


class MemoryModel:
    """The sequential specification of one scope, for :mod:`conformance.concurrent.checker`."""

    def __init__(self, scope_key: str) -> None:
        self.scope = scope_key
        # (call, state) -> successors: the search reaches one state with many linearized
        # sets (reads commute), and the step is a pure function of the two.
        self._memo: dict[tuple[int, State], list[State]] = {}

    def init(self) -> State:
        return State((), frozenset())

    def _store(self, recs: tuple[MemoryRecord, ...]) -> StoreState:
        return StoreState(scopes=MappingProxyType({self.scope: recs}))

    # -- ids --------------------------------------------------------------------------

    def _translations(
        self, state: State, target_ids: Sequence[str]
    ) -> list[tuple[dict[str, str], Pairs]]:
        """Every way to read the target ids a request names as model ids (usually one)."""
        if not target_ids:
            return [({}, state.pairs)]
        to_model = {t: m for m, t in state.pairs}
        paired_models = {m for m, _ in state.pairs}
        unknown = [t for t in dict.fromkeys(target_ids) if t not in to_model]
        if not unknown:
            return [(to_model, state.pairs)]
        free = [r.id for r in state.recs if r.id not in paired_models]
        # The driver's id for "a record this client never saw" names nothing by construction.
        free_for = {t: [] if t.endswith(UNSEEN_SUFFIX) else free for t in unknown}
        out: list[tuple[dict[str, str], Pairs]] = []
        choices = [[f"ghost:{t}", *free_for[t]] for t in unknown]
        for combo in itertools.product(*choices):
            real = [m for m in combo if not m.startswith("ghost:")]
            if len(set(real)) != len(real):
                continue
            mapping = dict(to_model)
            pairs = set(state.pairs)
            for t, m in zip(unknown, combo, strict=True):
                mapping[t] = m
                if not m.startswith("ghost:"):
                    pairs.add((m, t))
            out.append((mapping, frozenset(pairs)))
        return out

    # -- the step ---------------------------------------------------------------------

    def step(self, state: State, call: MemoryCall) -> list[State]:
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
            for mapping, pairs in self._translations(state, sent):
                cands = [
                    replace(c, supersedes=mapping[c.supersedes]) if c.supersedes else c
                    for c in body.candidates
                ]
                cap = DEFAULT_SCOPE_CAP if body.cap is None else body.cap
                recs, answer = fast_write(state.recs, self.scope, cands, MODEL_NOW, cap)
                if call.determinate and not json_equal(call.answer, answer):
                    continue
                out.append(State(recs, pairs))
            return out
        if isinstance(body, ForgetBody):
            out = []
            for mapping, pairs in self._translations(state, [body.id]):
                after, forgotten = store_forget(
                    self._store(state.recs), self.scope, mapping[body.id]
                )
                if call.determinate and not json_equal(
                    call.answer, {"ok": True, "forgotten": forgotten}
                ):
                    continue
                out.append(State(after.records(self.scope), pairs))
            return out
        if isinstance(body, ListBody):
            if not call.determinate:
                return [state]  # a list changes nothing
            pool = state.recs if body.query is None else tuple(_matching(state.recs, body.query))
            # Every record the list may show: all matching actives (order and, past the
            # limit, the choice among them are not compared -- see the module doc).
            everything = store_list(self._store(pool), self.scope, 10**9, body.query)
            return self._listed(state, everything, body.limit, call.answer)
        assert isinstance(body, RetrieveBody)
        active = tuple(_matching(state.recs, body.query))
        if call.determinate:
            spec = RecordsBody(
                "/retrieve",
                self.scope,
                active=active,
                query=body.query,
                limit=body.limit,
                now=MODEL_NOW,
            )
            return self._shown(state, spec, call.answer, bump=True)
        return [self._bump(state.recs, ids, state.pairs) for ids in _possible_answers(active, body)]

    def _listed(
        self, state: State, allowed: Sequence[MemoryRecord], limit: int, answer: Any
    ) -> list[State]:
        """A list answer as a set: exactly ``min(limit, len(allowed))`` distinct records, each
        one of ``allowed`` as it is now (no bump), ids through the bijection."""
        wire = _parse_records_body(answer, self.scope)
        if wire is None or len(wire) != min(limit, len(allowed)):
            return []
        id_map = dict(state.pairs)
        members = list(allowed)

        def ok(p: int, m: int) -> bool:
            return _shows(members[m], wire[p], bumped=False, id_map=id_map)

        assignment = _bipartite(range(len(wire)), members, ok)
        if assignment is None:
            return []
        ids = [members[assignment[p]].id for p in range(len(wire))]
        return self._paired(state, ids, answer, bump=False)

    def _shown(self, state: State, spec: RecordsBody, answer: Any, *, bump: bool) -> list[State]:
        ids = match_records(spec, answer, dict(state.pairs))
        if ids is None:
            return []
        return self._paired(state, ids, answer, bump=bump)

    def _paired(self, state: State, ids: Sequence[str], answer: Any, *, bump: bool) -> list[State]:
        pairs = state.pairs
        wire_ids = [item["id"] for item in answer["records"]]
        new = {(m, t) for m, t in zip(ids, wire_ids, strict=True)} - pairs
        if new:
            pairs = pairs | new
            if len({m for m, _ in pairs}) != len(pairs) or len({t for _, t in pairs}) != len(pairs):
                return []  # an id shown for two records, or two ids for one (MEM-STORE.9)
        if not bump:
            return [State(state.recs, pairs)]
        return [self._bump(state.recs, ids, pairs)]

    @staticmethod
    def _bump(recs: tuple[MemoryRecord, ...], ids: Sequence[str], pairs: Pairs) -> State:
        if not ids:
            return State(recs, pairs)
        chosen = set(ids)
        return State(
            tuple(
                replace(r, last_used_at=MODEL_NOW, use_count=r.use_count + 1)
                if r.id in chosen
                else r
                for r in recs
            ),
            pairs,
        )


def _possible_answers(active: Sequence[MemoryRecord], body: RetrieveBody) -> list[list[str]]:
    """The id sets a retrieve may have returned (and bumped), for an unseen answer."""
    groups = rank_allowed(list(active), body.query, body.limit, MODEL_NOW)
    fixed: list[str] = []
    for g in groups[:-1]:
        fixed.extend(sorted(g))
    if not groups:
        return [[]]
    last = sorted(groups[-1])
    room = min(len(last), body.limit - len(fixed))
    combos = itertools.islice(itertools.combinations(last, room), MAX_CUTS)
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


def _matching(recs: Sequence[MemoryRecord], query: str) -> list[MemoryRecord]:
    """The active records some query token hits whole -- the only ones ranking or a filtered
    list can return (MEM-SCORE.4), so handing the reference functions just these gives the
    same answer at a fraction of the cost."""
    q = set(tokenize(query))
    return [r for r in recs if r.status == ACTIVE and q & _tokens(r.text, r.keywords)]


def fast_write(
    recs: tuple[MemoryRecord, ...],
    scope: str,
    candidates: Sequence[MemoryCandidate],
    now: int,
    cap: int,
) -> tuple[tuple[MemoryRecord, ...], dict[str, object]]:
    """``store_write`` computed over each candidate's *pool* (the same-norm actives and the
    supersede target), as the seed's store does (section 18): ``plan_write`` reads nothing
    else, so the plan -- and the answer -- are the same.  Eviction runs only past the cap."""
    out = list(recs)
    index = {r.id: i for i, r in enumerate(out)}
    inserted = deduped = superseded = 0
    for cand in candidates:
        norm = _norm(cand.text)
        pool = [r for r in out if r.status == ACTIVE and _norm(r.text) == norm]
        if cand.supersedes and cand.supersedes in index:
            target = out[index[cand.supersedes]]
            if target.status == ACTIVE and target not in pool:
                pool.append(target)
                pool.sort(key=lambda r: index[r.id])
        plan = plan_write(pool, cand)
        if isinstance(plan, Dedup):
            i = index[plan.target_id]
            out[i] = replace(out[i], use_count=out[i].use_count + 1)
            deduped += 1
            continue
        if plan.supersede_id is not None:
            i = index[plan.supersede_id]
            out[i] = replace(out[i], status=SUPERSEDED)
            superseded += 1
        rid = record_id(scope, len(out) + 1)
        out.append(mint_record(cand, scope, rid, now))
        index[rid] = len(out) - 1
        inserted += 1
    evicted = 0
    active = [r for r in out if r.status == ACTIVE]
    if len(active) > cap:
        for rid in plan_eviction(active, cap):
            i = index[rid]
            out[i] = replace(out[i], status=EVICTED)
            evicted += 1
    answer = write_response(WriteResult(inserted, deduped, superseded, evicted))
    return tuple(out), answer


def make_model(scope: str) -> MemoryModel:
    return MemoryModel(scope)


def candidate_texts(call: MemoryCall) -> list[str]:
    """Texts a call writes (for the shrinker's closed-world guard)."""
    if isinstance(call.body, WriteBody):
        return [c.text for c in call.body.candidates]
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


def needs_written(call: MemoryCall) -> tuple[int, list[str] | None]:
    """A write that reports more dedups than its own repeated candidates explain needs that
    many of its texts written by other calls (for the shrinker's closed-world guard)."""
    if not (
        call.determinate and isinstance(call.body, WriteBody) and isinstance(call.answer, dict)
    ):
        return 0, []
    texts = [c.text for c in call.body.candidates]
    deduped = call.answer.get("deduped")
    if not isinstance(deduped, int):
        return 0, []
    return max(0, deduped - (len(texts) - len(set(texts)))), texts


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


def _bipartite(
    positions: Sequence[int], members: Sequence[Any], ok: Callable[[int, int], bool]
) -> dict[int, int] | None:
    """A matching of every position to a distinct member with ``ok(position, member)``
    (Kuhn's augmenting paths), or ``None`` when there is none."""
    owner: dict[int, int] = {}  # member index -> position

    def place(p: int, seen: set[int]) -> bool:
        for m in range(len(members)):
            if m in seen or not ok(p, m):
                continue
            seen.add(m)
            if m not in owner or place(owner[m], seen):
                owner[m] = p
                return True
        return False

    for p in positions:
        if not place(p, set()):
            return None
    return {p: m for m, p in owner.items()}
