"""The Memory Worker oracle: is this answer one the model allows, and what holds afterwards?

The model (``reference.memory.wire.worker_respond``) says, for one request, which statuses a
conforming Worker may answer, with which bodies, and what its store holds afterwards.  This
module compares a target's actual answer with that, field by field, and keeps the model in
step with the target across a whole run.  Four things make that more than an equality test.

**Ids are the target's own.**  The model numbers each scope 1, 2, 3 …; a target may number
however it likes (MEM-STORE.9).  A *bijection* between model ids and target ids is built as
the run goes: the first time a target shows a record, it is matched to the model record with
exactly the same content (every field except ``id``, times and — for a record written without
keywords — ``keywords``), and from then on that pairing is fixed.  A target id that shows up
paired with a second model record is an id reused; a record whose content matches no model
record is a divergence.  Every target id must have the shape ``mem:<scopeKey>:<n>``.  Ids sent
to the target (``forget``'s ``id``, a candidate's ``supersedes``) are translated back through
the same bijection before the model sees the request; an id the run never saw is replaced on
the model side by a "ghost" of the same length that can name no model record.

**Times are the target's own.**  ``createdAt`` and ``lastUsedAt`` come from the store's clock
(MEM-STORE.11), so the harness never compares them with its own.  Instead the model's clock is
the harness wall clock (ms, strictly increasing from step to step) read as each request is
prepared — model times only label events in their order — and the driver keeps mutating steps
on one scope at least 3 ms apart: a step the model allows to change a scope (``expect``'s
``changes``) is sent only once 3 ms have passed since that scope's last mutating answer, which
the store stamped before answering.  Each model event then has a distinct model time, and the target's time of
the same event must be one consistent value: a *monotone time correspondence* (model time ↔
target time) is built as answers arrive.  It checks that every record of one batch shows one
creation time and every record bumped by one retrieve one last-use time, that a record's times
never change between answers, and that target times are ordered exactly like the events they
stamp (strictly, since the events are ≥ 3 ms apart).  Times are only compared within a scope —
ranking, eviction and MEM-STORE.11 never look across scopes — so each scope has its own
correspondence, and steps on different scopes need no spacing.  A store whose clock runs backwards
between requests fails this check, which the report says in so many words.

**One judge.**  What answers are allowed is not decided here: the reference declares it as
pure functions (``reference.memory.judge``: ``retrieval_problem``, ``listing_problem``,
``eviction_picks``, ``content_problems``/``usage_problems``/``keywords_problem``; and
``reference.memory.wire.worker_respond`` for statuses, error bodies and result members).  This
module only maps the target's ids and times onto the model's and asks those functions.

**Ranking ties are judged by event order, never by clock values.**  The spec ranks by
``0.7·keywordMatch + 0.3·exp(−age/τ)`` with τ = 7 days; the judge scores the model's records at
the model's *now*.  Within one run every record of a scope is minutes old at most, so the
recency term of two records differs by less than ``0.3·(1 − e^(−run/τ))`` — about 3·10⁻⁶ for a
ten-minute run — while two different keyword matches differ by at least ``0.7/q²`` (≥ 4·10⁻⁵
for q ≤ 128): the score order is the lexicographic order (keyword match desc, last-touch time
desc), and two records tie exactly when both are equal.  Because the last-touch comparison only
asks which event came later — and mutating steps are ≥ 3 ms apart — no clock skew between
harness and target, and no difference in the absolute values of either clock, can move a record
from one tie group to another.  (The spacing matters: with it switched off, distinct events get
equal store stamps and this check reports them — the benchmark shows it.)  Within a group any
order is allowed, and when the limit cuts a group any of its members may survive
(MEM-SCORE.5).  The prefilter freedoms are the judge's too: a record matched only by a token
the 24-longest trim drops, or only by a token glued to non-ASCII text, may be missing
(MEM-STORE.5), and with more matching records than ``max(50, 5·limit)`` the store picks its
candidates (MEM-STORE.6).

**Where the spec leaves a choice, the model runs every choice.**  The oracle keeps a small set
of *worlds* — (model state, id bijection, time correspondence) triples — that all agree with
everything the target said so far.  A choice the target makes visibly (which tied records a
retrieve returned, ``null`` read as absent or refused) simply selects the matching world.  A
choice the target makes invisibly forks the world: which of several equally-old records an
over-cap write evicted (MEM-CAP.2), or which of two indistinguishable records got which id.
Later answers prune the worlds that disagree; when none is left, the step diverges.  Past
``MAX_WORLDS`` live worlds the step is reported indeterminate rather than guessed.

Nothing else is tolerated: every other field is compared exactly, absent and ``null`` differ,
and counts are exact.  A divergence names the clauses involved, what the model allowed (every
option) and what the target said.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from conformance.drivers.base import Exchange, JudgementVerdict
from conformance.jsonutil import short_json
from reference.memory.engine import DEFAULT_SCOPE_CAP, Dedup, plan_write
from reference.memory.judge import (
    content_problems,
    eviction_picks,
    listing_problem,
    rank_allowed,
    retrieval_problem,
    usage_problems,
)
from reference.memory.records import (
    ACTIVE,
    EVICTED,
    RECORD_FIELDS,
    RECORD_FIELDS_WHEN_SET,
    MemoryRecord,
)
from reference.memory.scoring import keyword_match, tokenize
from reference.memory.store import (
    StoreState,
    active_records,
    bump_usage,
    empty_store,
    parse_record_id,
    store_list,
)
from reference.memory.wire import (
    Allowed,
    ErrorBody,
    ExactBody,
    HealthBody,
    Option,
    RecordsBody,
    WireRequest,
    WriteBody,
    js_integer,
    json_equal,
    members_differ,
    validate_write,
    worker_respond,
)

#: The bearer the model is told the server holds.  The real token never reaches the model: the
#: driver describes the Authorization header it sent by its form (right, wrong, absent …) and
#: :func:`model_auth_header` rebuilds the same form around this stand-in.
MODEL_TOKEN = "memspec-model-token"
MAX_WORLDS = 64
MAX_ASSIGNMENTS = 24

REQUIRED_FIELDS = RECORD_FIELDS
OPTIONAL_FIELDS = RECORD_FIELDS_WHEN_SET

ROUTE_CLAUSE = {
    "/retrieve": "MEM-WIRE.11",
    "/write": "MEM-WIRE.12",
    "/list": "MEM-WIRE.14",
    "/forget": "MEM-WIRE.15",
    "/healthz": "MEM-WIRE.1",
}
STATUS_CLAUSE = {
    404: "MEM-WIRE.1",
    405: "MEM-WIRE.2",
    401: "MEM-WIRE.3",
    411: "MEM-WIRE.5",
    413: "MEM-WIRE.6",
}
#: Which clause a dead record seen alive points at, by the status the model gave it.
DEAD_CLAUSES: dict[str, tuple[str, ...]] = {
    "evicted": ("MEM-CAP.2", "MEM-CAP.1", "MEM-STORE.4"),
    "superseded": ("MEM-WRITE.3", "MEM-STORE.4", "MEM-RECORD.2"),
    "forgotten": ("MEM-STORE.8", "MEM-STORE.4", "MEM-RECORD.2"),
}
FIELD_CLAUSE = {
    "scopeKey": "MEM-WIRE.9",
    "query": None,  # the route's clause
    "limit": None,
    "records": "MEM-WIRE.12",
    "kind": "MEM-WIRE.12",
    "text": "MEM-WIRE.12",
    "sourceThreadKey": "MEM-WIRE.12",
    "keywords": "MEM-WIRE.12",
    "sourceRunId": "MEM-WIRE.12",
    "supersedes": "MEM-WIRE.12",
    "confidence": "MEM-WIRE.12",
    "cap": "MEM-WIRE.13",
    "id": "MEM-WIRE.15",
}


def model_auth_header(auth: Any) -> str | None:
    """The model-side ``Authorization`` for an auth form the driver used on the target."""
    if auth is False:
        return None
    if auth is True:
        return f"Bearer {MODEL_TOKEN}"
    if auth == "wrong":
        return f"Bearer {MODEL_TOKEN[:-1]}X"
    if auth == "scheme":
        return f"Basic {MODEL_TOKEN}"
    if auth == "empty":
        return "Bearer "
    raise ValueError(f"unknown auth form {auth!r}")


# --------------------------------------------------------------------------- world pieces


@dataclass(frozen=True)
class RecMeta:
    """What the model remembers about how a record was written (for the fields the spec leaves
    open).  ``ptr``: ``none`` (no supersedes sent), ``empty`` (``""`` sent), ``resolved``
    (superseded an active record), ``unresolved`` (named nothing live); ``sent`` is the
    target-space string the run sent."""

    kw_given: bool
    ptr: str = "none"
    sent: str | None = None


class TimeProblem(Exception):
    def __init__(self, message: str, clauses: tuple[str, ...]) -> None:
        super().__init__(message)
        self.clauses = clauses


@dataclass
class World:
    state: StoreState
    m2t: dict[str, str] = field(default_factory=dict)
    t2m: dict[str, str] = field(default_factory=dict)
    times: dict[str, dict[int, int]] = field(default_factory=dict)  # scope -> model ms -> target ms
    meta: dict[str, RecMeta] = field(default_factory=dict)  # model id -> meta
    keywords_seen: dict[str, tuple[str, ...]] = field(default_factory=dict)  # target id -> kws

    def copy(self) -> World:
        return World(
            self.state,
            dict(self.m2t),
            dict(self.t2m),
            {scope: dict(m) for scope, m in self.times.items()},
            dict(self.meta),
            dict(self.keywords_seen),
        )

    def bind(self, model_id: str, target_id: str) -> None:
        self.m2t[model_id] = target_id
        self.t2m[target_id] = model_id

    def observe_time(self, scope: str, model_t: int, target_t: int, what: str) -> None:
        """Add one (model time, target time) pair of a scope; raise :class:`TimeProblem` if it is
        inconsistent.  Times are only ever compared within one scope (ranking, eviction and the
        clauses of MEM-STORE.11 never look across scopes), so each scope has its own map."""
        times = self.times.setdefault(scope, {})
        known = times.get(model_t)
        if known is not None:
            if known != target_t:
                raise TimeProblem(
                    f"{what} is {target_t}, but the same event was stamped {known} in an earlier"
                    " answer (one batch shares one creation time, one retrieve one last-use time,"
                    " and a record's times never change)",
                    ("MEM-STORE.11", "MEM-RECORD.3"),
                )
            return
        for m, t in times.items():
            if (m < model_t and t >= target_t) or (m > model_t and t <= target_t):
                raise TimeProblem(
                    f"{what} is {target_t}, out of event order with {t} stamped on an event"
                    f" {'before' if m < model_t else 'after'} it (the harness spaces mutating"
                    " steps 3 ms apart, so a store clock that runs forward stamps them in order)",
                    ("MEM-STORE.11",),
                )
        times[model_t] = target_t


@dataclass
class Judgement:
    verdict: JudgementVerdict
    clauses: tuple[str, ...]
    expected: str
    reason: str = ""
    worlds: list[World] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- the oracle


@dataclass(frozen=True)
class Expectation:
    """The model's answers to one request, per live world (see :meth:`MemoryOracle.expect`).

    ``changes``: the scope keys whose records some allowed answer, in some world, changes —
    empty for a request every conforming store must leave without effect (a 4xx, a list, a
    retrieve nothing matches, a forget of nothing)."""

    sent: SentRequest
    now: int
    worlds: list[World]
    per_world: tuple[tuple[World, WireRequest, Allowed], ...]
    changes: frozenset[str]


def _changed_scopes(before: StoreState, after: StoreState) -> set[str]:
    """The scope keys whose records differ between two model states."""
    if after is before:
        return set()
    return {
        scope
        for scope in {*before.scopes, *after.scopes}
        if before.records(scope) != after.records(scope)
    }


@dataclass(frozen=True)
class SentRequest:
    """A request as the driver sent it (target space), described for the model."""

    method: str
    path: str
    body: Any  # parsed JSON of the body when it was JSON, else None
    raw: bytes  # the bytes sent
    content_length: str | None  # the Content-Length header value sent (None: absent)
    auth: Any
    extra_headers: tuple[tuple[str, str], ...] = ()


class MemoryOracle:
    """The model side of one scenario: worlds, and the judgement of every answer."""

    def __init__(self, cap_default: int = DEFAULT_SCOPE_CAP) -> None:
        self.worlds: list[World] = [World(empty_store())]
        self.cap_default = cap_default

    # -- requests -------------------------------------------------------------------------

    def _to_model(self, world: World, sent: SentRequest) -> WireRequest:
        body = sent.raw
        if isinstance(sent.body, dict) and sent.path in ROUTE_CLAUSE:
            translated = _translate_ids(world, sent.body, sent.path)
            if translated is not sent.body:
                body = json.dumps(translated, ensure_ascii=False, separators=(",", ":")).encode()
        headers: list[tuple[str, str]] = list(sent.extra_headers)
        auth = model_auth_header(sent.auth)
        if auth is not None:
            headers.append(("Authorization", auth))
        if sent.content_length is not None:
            headers.append(("Content-Length", sent.content_length))
        return WireRequest(sent.method, sent.path, tuple(headers), body)

    # -- judging --------------------------------------------------------------------------

    def expect(self, sent: SentRequest, now: int) -> Expectation:
        """What the model allows as the answer to ``sent`` at model time ``now``, in every live
        world, and which scopes an allowed answer changes.  The driver asks before it sends:
        a request no allowed answer lets change a scope is not a mutating step and needs no
        spacing (see the module docstring); ``judge`` then reuses the same computation."""
        per_world = []
        changes: set[str] = set()
        for w in self.worlds:
            req = self._to_model(w, sent)
            _, allowed = worker_respond(w.state, req, now, MODEL_TOKEN, self.cap_default)
            per_world.append((w, req, allowed))
            for option in allowed.options:
                changes |= _changed_scopes(w.state, option.state)
        return Expectation(sent, now, self.worlds, tuple(per_world), frozenset(changes))

    def judge(
        self, sent: SentRequest, ex: Exchange, now: int, expectation: Expectation | None = None
    ) -> Judgement:
        """Judge the target's answer ``ex`` to ``sent`` at model time ``now`` (``expectation``:
        the result of :meth:`expect` for the same request, time and worlds, if already made)."""
        if (
            expectation is None
            or expectation.sent is not sent
            or expectation.now != now
            or expectation.worlds is not self.worlds
        ):
            expectation = self.expect(sent, now)
        allowed_per_world = expectation.per_world
        first_allowed = allowed_per_world[0][2]
        expected = _describe_allowed(first_allowed.options, self.worlds[0])
        route = sent.path.split("?", 1)[0]
        if ex.status is None:
            return Judgement(
                "indeterminate",
                (ROUTE_CLAUSE.get(route, "MEM-WIRE.1"),),
                expected,
                f"no HTTP answer: {ex.transport_error}",
            )
        if ex.body is None:
            return Judgement(
                "diverge",
                _status_clauses(first_allowed.options, ex.status, route),
                expected,
                f"HTTP {ex.status} with {ex.body_error or 'no JSON body'}"
                + (f": {ex.raw_excerpt[:120]!r}" if ex.raw_excerpt else ""),
            )
        survivors: list[World] = []
        failures: list[tuple[tuple[str, ...], str]] = []
        for w, req, allowed in allowed_per_world:
            same_status = [o for o in allowed.options if o.status == ex.status]
            if not same_status:
                continue
            for option in same_status:
                try:
                    survivors.extend(self._admit(w, option, sent, req, ex, now))
                except _Reject as rej:
                    failures.append((rej.clauses, rej.message))
                except TimeProblem as tp:
                    failures.append((tp.clauses, str(tp)))
        if len(survivors) > MAX_WORLDS:
            return Judgement(
                "indeterminate",
                (ROUTE_CLAUSE.get(route, "MEM-WIRE.1"),),
                expected,
                f"{len(survivors)} model states remain consistent with the answers so far; the"
                f" harness stops at {MAX_WORLDS} rather than guess (make batches smaller)",
            )
        if survivors:
            return Judgement("pass", (), expected, worlds=_dedupe_worlds(survivors))
        if failures:
            clauses, message = failures[0]
            return Judgement("diverge", clauses, expected, message)
        statuses = sorted(first_allowed.statuses)
        return Judgement(
            "diverge",
            _status_clauses(first_allowed.options, ex.status, route),
            expected,
            f"answered HTTP {ex.status}; the model allows only"
            f" {' or '.join(str(s) for s in statuses)}",
        )

    def commit(self, judgement: Judgement) -> None:
        if judgement.worlds:
            self.worlds = judgement.worlds

    # -- one option ---------------------------------------------------------------------

    def _admit(
        self, w: World, option: Option, sent: SentRequest, req: WireRequest, ex: Exchange, now: int
    ) -> list[World]:
        spec = option.body
        route = sent.path.split("?", 1)[0]
        if isinstance(spec, ErrorBody):
            _check_error_body(spec, ex.body, option.status, route)
            return [w]
        if isinstance(spec, HealthBody):
            if not isinstance(ex.body, dict) or ex.body.get("ok") is not True:
                raise _Reject(
                    ("MEM-WIRE.1",),
                    f'/healthz answered {short_json(ex.body, 120)}, not {{"ok": true, …}}',
                )
            return [w]
        if isinstance(spec, ExactBody):
            assert isinstance(spec.value, dict)
            diffs = members_differ(spec.value, ex.body)
            if diffs is not None:
                raise _Reject(
                    _exact_clauses(route, spec.value, ex.body, req),
                    "answer differs: " + "; ".join(diffs),
                )
            if route == "/write":
                return self._after_write(w, option, sent, req, now)
            nw = w.copy()
            nw.state = option.state
            return [nw]
        assert isinstance(spec, RecordsBody)
        view = _View(spec.route, spec.scope_key, spec.query, spec.limit)
        # Retrieve and list start from this world's own state (the option's state may be the
        # model's pick after its own bump).
        return self._records(w, view, w.state, ex.body, now)

    # -- writes -------------------------------------------------------------------------

    def _after_write(
        self, w: World, option: Option, sent: SentRequest, req: WireRequest, now: int
    ) -> list[World]:
        """The worlds after an admitted write: meta for the new records, eviction forks."""
        obj = json.loads(req.body.decode("utf-8", "replace").removeprefix("\ufeff"))
        parsed = validate_write(obj)
        assert isinstance(parsed, WriteBody), "an admitted 200 write must validate"
        scope = parsed.scope_key
        candidates = parsed.candidates
        sent_records = sent.body.get("records", []) if isinstance(sent.body, dict) else []
        before = w.state.records(scope)
        after = option.state.records(scope)
        new_records = after[len(before) :]
        meta = dict(w.meta)
        active = [r for r in before if r.status == ACTIVE]
        inserted_ids: list[str] = []
        k = 0
        for i, cand in enumerate(candidates):
            plan = plan_write(active, cand)
            if isinstance(plan, Dedup):
                continue
            rec = new_records[k]
            k += 1
            sent_value = sent_records[i].get("supersedes") if i < len(sent_records) else None
            sent_str = sent_value if isinstance(sent_value, str) else None
            if cand.supersedes is None:
                ptr = "none"
            elif cand.supersedes == "":
                ptr = "empty"
            elif plan.supersede_id is not None:
                ptr = "resolved"
            else:
                ptr = "unresolved"
            meta[rec.id] = RecMeta(cand.keywords is not None, ptr, sent_str)
            if plan.supersede_id is not None:
                active = [r for r in active if r.id != plan.supersede_id]
            active.append(replace(rec, status=ACTIVE))  # as it was before the eviction
            inserted_ids.append(rec.id)
        base = w.copy()
        base.state = option.state
        base.meta = meta
        # Eviction: the model took its pick; every other legal pick is a world of its own.
        evicted_now = [
            r.id for r in after if r.status == EVICTED and _status_of(before, r.id) != EVICTED
        ]
        if not evicted_now:
            return [base]
        by_id = {r.id: r for r in after}
        pre_evict = [replace(by_id[r.id], status=ACTIVE) for r in active]
        picks = eviction_picks(pre_evict, len(evicted_now))
        if len(picks) > MAX_WORLDS:
            raise _Reject(
                ("MEM-CAP.2",),
                f"{len(picks)} equally legal eviction choices; too many to follow (use smaller batches)",
            )
        worlds = []
        model_pick = frozenset(evicted_now)
        for pick in picks:
            nw = base.copy()
            if pick != model_pick:
                nw.state = _set_statuses(option.state, scope, model_pick, pick)
            worlds.append(nw)
        return worlds

    # -- records answers ---------------------------------------------------------------

    def _records(
        self, w: World, spec: _View, state: StoreState, body: Any, now: int
    ) -> list[World]:
        route = spec.route
        clause = ROUTE_CLAUSE[route]
        if (
            not isinstance(body, dict)
            or "records" not in body
            or not isinstance(body["records"], list)
        ):
            raise _Reject((clause,), f'answer is not {{"records": [...]}}: {short_json(body, 120)}')
        items: list[Any] = body["records"]
        scope = spec.scope_key
        active = active_records(state, scope)
        active_by_id = {r.id: r for r in active}
        # 1. shape, ids
        seen: set[str] = set()
        for pos, item in enumerate(items):
            _check_shape(item, pos)
            rid = item["id"]
            parsed = parse_record_id(rid)
            if parsed is None or parsed[0] != scope:
                raise _Reject(
                    ("MEM-STORE.9", "MEM-WIRE.16"),
                    f"record {pos} has id {rid!r}, not of the form mem:{scope}:<n>",
                )
            if rid in seen:
                raise _Reject(
                    ("MEM-STORE.9", "MEM-WIRE.16"), f"id {rid!r} appears twice in one answer"
                )
            seen.add(rid)
        # 2. which model record each position shows
        bound: dict[int, str] = {}
        unbound_pos: list[int] = []
        for pos, item in enumerate(items):
            m = w.t2m.get(item["id"])
            if m is None:
                unbound_pos.append(pos)
                continue
            if m not in active_by_id:
                dead = _find(state, m)
                status = dead.status if dead is not None else "unknown"
                raise _Reject(
                    DEAD_CLAUSES.get(status, ("MEM-STORE.4", "MEM-RECORD.2"))
                    if dead is not None and dead.scope_key == scope
                    else ("MEM-SCOPE.5", "MEM-STORE.9"),
                    f"record {pos} ({item['id']}) is the model's {m}, which is {status} — only active"
                    " records of the scope may be returned",
                )
            bound[pos] = m
        free = [r for r in active if r.id not in w.m2t]
        # candidate model records for each unbound position
        options_per_pos: dict[int, list[str]] = {}
        for pos in unbound_pos:
            item = items[pos]
            fits = []
            for r in free:
                if not _content_problems(w, item, r, route, now, bump_modes=_modes(route)):
                    fits.append(r.id)
            if not fits:
                raise _Reject(*_no_match_reason(w, item, pos, free, route, now, state))
            options_per_pos[pos] = fits
        assignments = _assignments(unbound_pos, options_per_pos)
        if not assignments:
            raise _Reject(
                ("MEM-STORE.9", clause),
                "the answer shows more new records than the model has unseen records of that content",
            )
        worlds: list[World] = []
        last_reject: _Reject | TimeProblem | None = None
        for assign in assignments:
            ids = [bound.get(p) or assign[p] for p in range(len(items))]
            try:
                worlds.extend(self._check_answer(w, spec, state, items, ids, now))
            except (_Reject, TimeProblem) as exc:
                last_reject = exc
        if not worlds and last_reject is not None:
            raise last_reject
        return worlds

    def _check_answer(
        self,
        w: World,
        spec: _View,
        state: StoreState,
        items: list[Any],
        ids: list[str],
        now: int,
    ) -> list[World]:
        nw = w.copy()
        scope = spec.scope_key
        active = active_records(state, scope)
        by_id = {r.id: r for r in active}
        # order and membership
        if spec.route == "/retrieve":
            assert spec.query is not None
            problem = retrieval_problem(active, spec.query, spec.limit, now, ids)
        else:
            problem = listing_problem(active, spec.query, spec.limit, ids)
        if problem is not None:
            raise _Reject(problem.clauses, problem.reason)
        # per-record content, times, bijection (a retrieve shows usage all before or all after
        # its bump: the first record decides which)
        modes = _modes(spec.route)
        chosen_mode: str | None = None
        for pos, (item, mid) in enumerate(zip(items, ids, strict=True)):
            rec = by_id[mid]
            errs: list[tuple[tuple[str, ...], str]] = []
            for mode in modes if chosen_mode is None else (chosen_mode,):
                errs = _content_problems(
                    nw, item, rec, spec.route, now, bump_modes=(mode,), commit=True
                )
                if not errs:
                    chosen_mode = mode
                    break
            if errs:
                clauses, msg = errs[0]
                raise _Reject(clauses, f"record {pos} ({item['id']} ↔ model {mid}): {msg}")
            if mid not in nw.m2t:
                if item["id"] in nw.t2m:
                    raise _Reject(
                        ("MEM-STORE.9",),
                        f"id {item['id']} was already given to the model's {nw.t2m[item['id']]};"
                        " ids are never reused",
                    )
                nw.bind(mid, item["id"])
        if spec.route == "/retrieve" and ids:
            nw.state = bump_usage(state, scope, ids, now)
        else:
            nw.state = state
        return [nw]


@dataclass(frozen=True)
class _View:
    """What a records answer is judged against: route, scope, query (``None``: no filter), limit."""

    route: str
    scope_key: str
    query: str | None
    limit: int


class _Reject(Exception):
    def __init__(self, clauses: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.clauses = clauses
        self.message = message


# --------------------------------------------------------------------------- ranking


# --------------------------------------------------------------------------- records


def _modes(route: str) -> tuple[str, ...]:
    return ("post", "pre") if route == "/retrieve" else ("plain",)


def _check_shape(item: Any, pos: int) -> None:
    if not isinstance(item, dict):
        raise _Reject(("MEM-WIRE.16",), f"record {pos} is not an object: {short_json(item, 120)}")
    for name in REQUIRED_FIELDS:
        if name not in item:
            raise _Reject(("MEM-WIRE.16", "MEM-RECORD.1"), f"record {pos} has no {name!r}")
    for name in OPTIONAL_FIELDS:
        if name in item and item[name] is None:
            raise _Reject(
                ("MEM-WIRE.16", "MEM-RECORD.1"),
                f"record {pos} sends {name!r}: null — an optional field without a value is absent",
            )
    if not isinstance(item["id"], str):
        raise _Reject(
            ("MEM-WIRE.16",), f"record {pos}: id is not a string: {short_json(item['id'], 120)}"
        )


def _content_problems(
    w: World,
    item: dict[str, Any],
    rec: MemoryRecord,
    route: str,
    now: int,
    *,
    bump_modes: tuple[str, ...],
    commit: bool = False,
) -> list[tuple[tuple[str, ...], str]]:
    """Differences between wire record ``item`` and model record ``rec`` (empty: it shows it).

    The rules are the reference judge's (``reference.memory.judge.record_problems``); this
    adds only what needs the run's maps: ``supersedes`` through the id bijection, keywords
    stable across answers, and ``createdAt``/``lastUsedAt`` through the time correspondence.
    ``bump_modes`` (retrieve only): ``post`` — usage after this retrieval's bump, ``pre`` —
    before it.  With ``commit`` the time observations and keyword sightings are recorded in
    ``w`` (call only once the record is known to fit).
    """
    meta = w.meta.get(rec.id, RecMeta(kw_given=True))
    probs: list[tuple[tuple[str, ...], str]] = [
        (p.clauses, p.reason) for p in content_problems(rec, item, keywords_given=meta.kw_given)
    ]
    # supersedes
    sup = item.get("supersedes", _ABSENT)
    bind_ptr: tuple[str, str] | None = None
    if meta.ptr == "none":
        if sup is not _ABSENT:
            probs.append(
                (("MEM-RECORD.4",), f"supersedes is {short_json(sup, 120)}; no supersedes was sent")
            )
    elif meta.ptr == "empty":
        if sup is not _ABSENT and sup != "":
            probs.append(
                (
                    ("MEM-RECORD.4", "MEM-WRITE.7"),
                    f"supersedes is {short_json(sup, 120)}; an empty supersedes was sent",
                )
            )
    elif meta.ptr == "unresolved":
        if sup is not _ABSENT and sup != meta.sent:
            probs.append(
                (
                    ("MEM-RECORD.4",),
                    f"supersedes is {short_json(sup, 120)}; the run sent {short_json(meta.sent, 120)}",
                )
            )
    else:  # resolved: must point at the superseded record's target id
        target_model = rec.supersedes
        assert target_model is not None
        if not isinstance(sup, str):
            probs.append(
                (
                    ("MEM-RECORD.4", "MEM-WRITE.3"),
                    f"supersedes is {short_json(sup, 120)}; it must name the superseded record",
                )
            )
        elif target_model in w.m2t:
            if w.m2t[target_model] != sup:
                probs.append(
                    (
                        ("MEM-RECORD.4", "MEM-WRITE.3"),
                        f"supersedes is {sup!r}; the superseded record is {w.m2t[target_model]}",
                    )
                )
        elif sup in w.t2m and w.t2m[sup] != target_model:
            probs.append(
                (("MEM-RECORD.4", "MEM-WRITE.3"), f"supersedes is {sup!r}, which is another record")
            )
        elif parse_record_id(sup) is None or parse_record_id(sup)[0] != rec.scope_key:  # type: ignore[index]
            probs.append(
                (("MEM-RECORD.4", "MEM-STORE.9"), f"supersedes is {sup!r}, not an id of this scope")
            )
        else:
            bind_ptr = (target_model, sup)
    # keywords of a record written without keywords: free, but the same in every answer
    kws = item.get("keywords")
    if not meta.kw_given and isinstance(kws, list):
        seen = w.keywords_seen.get(item.get("id", ""))
        if seen is not None and tuple(kws) != seen:
            probs.append((("MEM-RECORD.3",), f"keywords changed from {list(seen)} to {kws}"))
    # times: integers, then the run's time correspondence
    created = (
        js_integer(item.get("createdAt")) if not isinstance(item.get("createdAt"), bool) else None
    )
    if created is None:
        probs.append(
            (
                ("MEM-WIRE.16", "MEM-STORE.11"),
                f"createdAt is {short_json(item.get('createdAt'), 120)}, not an integer",
            )
        )
    last = item.get("lastUsedAt", _ABSENT)
    if last is not _ABSENT and (isinstance(last, bool) or js_integer(last) is None):
        probs.append(
            (
                ("MEM-WIRE.16", "MEM-STORE.11"),
                f"lastUsedAt is {short_json(last, 120)}, not an integer",
            )
        )
    if probs:
        return probs
    usage_probs: list[tuple[tuple[str, ...], str]] = []
    for mode in bump_modes:
        bumped = mode == "post"
        want_last = now if bumped else rec.last_used_at
        mp = [(p.clauses, p.reason) for p in usage_problems(rec, item, bumped=bumped, route=route)]
        if not mp:
            trial = w if commit else w.copy()
            try:
                assert created is not None
                trial.observe_time(
                    rec.scope_key, rec.created_at, created, f"createdAt of {item.get('id')}"
                )
                if want_last is not None:
                    lu = js_integer(last)
                    assert lu is not None
                    if lu < created:
                        raise TimeProblem(
                            f"lastUsedAt {lu} is before createdAt {created}", ("MEM-STORE.11",)
                        )
                    trial.observe_time(
                        rec.scope_key, want_last, lu, f"lastUsedAt of {item.get('id')}"
                    )
            except TimeProblem as tp:
                mp.append((tp.clauses, str(tp)))
        if not mp:
            if commit:
                if not meta.kw_given:
                    w.keywords_seen.setdefault(item["id"], tuple(kws))  # type: ignore[arg-type]
                if bind_ptr is not None and bind_ptr[0] not in w.m2t and bind_ptr[1] not in w.t2m:
                    w.bind(*bind_ptr)
            return []
        usage_probs.extend(mp)
    return usage_probs


_ABSENT: Any = type("_Absent", (), {"__repr__": lambda self: "<absent>"})()


def _no_match_reason(
    w: World,
    item: dict[str, Any],
    pos: int,
    free: Sequence[MemoryRecord],
    route: str,
    now: int,
    state: StoreState | None = None,
) -> tuple[tuple[str, ...], str]:
    """Explain why a new target record matches no unseen model record."""
    if state is not None:
        # A record the model holds as dead (superseded, forgotten, evicted) that the target
        # still returns points at the write, forget or eviction that went wrong.
        scope = item.get("scopeKey")
        for r in state.records(scope) if isinstance(scope, str) else ():
            if r.status != ACTIVE and r.id not in w.m2t and r.text == item.get("text"):
                return (
                    DEAD_CLAUSES.get(r.status, ("MEM-STORE.4",)),
                    f"record {pos} ({item['id']}, text {short_json(item.get('text'), 120)}) is the model's"
                    f" {r.id}, which is {r.status} — only active records may be returned",
                )
    if not free:
        return (
            ("MEM-SEAM.2", ROUTE_CLAUSE[route]),
            f"record {pos} ({item['id']}, text {short_json(item.get('text'), 120)}) is not a record the model"
            " holds: every active model record of the scope is already paired with another id",
        )
    same_text = [r for r in free if r.text == item.get("text")]
    pool = same_text or list(free)
    best = min(
        pool, key=lambda r: len(_content_problems(w, item, r, route, now, bump_modes=_modes(route)))
    )
    probs = _content_problems(w, item, best, route, now, bump_modes=_modes(route))
    if same_text:
        clauses, msg = probs[0]
        return clauses, f"record {pos} ({item['id']}) shows the model's {best.id} but {msg}"
    return (
        ("MEM-SEAM.2", ROUTE_CLAUSE[route]),
        f"record {pos} ({item['id']}, text {short_json(item.get('text'), 120)}) matches no active model record"
        " of the scope by content",
    )


def _assignments(positions: list[int], options: dict[int, list[str]]) -> list[dict[int, str]]:
    """Every injective choice of model id per unbound position (bounded)."""
    if not positions:
        return [{}]
    if all(len(options[p]) == 1 for p in positions):
        chosen = [options[p][0] for p in positions]
        return (
            [dict(zip(positions, chosen, strict=True))] if len(set(chosen)) == len(chosen) else []
        )
    out: list[dict[int, str]] = []

    def rec(i: int, used: set[str], acc: dict[int, str]) -> None:
        if len(out) >= MAX_ASSIGNMENTS:
            return
        if i == len(positions):
            out.append(dict(acc))
            return
        p = positions[i]
        for m in options[p]:
            if m not in used:
                acc[p] = m
                used.add(m)
                rec(i + 1, used, acc)
                used.discard(m)
                del acc[p]

    rec(0, set(), {})
    return out


# --------------------------------------------------------------------------- state edits


def _set_statuses(
    state: StoreState, scope: str, model_pick: frozenset[str], pick: frozenset[str]
) -> StoreState:
    """The state with eviction ``pick`` instead of the model's ``model_pick``."""
    recs = []
    for r in state.records(scope):
        if r.id in model_pick and r.id not in pick:
            r = replace(r, status=ACTIVE)
        elif r.id in pick and r.id not in model_pick:
            r = replace(r, status=EVICTED)
        recs.append(r)
    scopes = dict(state.scopes)
    scopes[scope] = tuple(recs)
    return StoreState(scopes=MappingProxyType(scopes))


def _status_of(records: Sequence[MemoryRecord], rid: str) -> str | None:
    for r in records:
        if r.id == rid:
            return r.status
    return None


def _find(state: StoreState, model_id: str) -> MemoryRecord | None:
    parsed = parse_record_id(model_id)
    if parsed is None:
        return None
    for r in state.records(parsed[0]):
        if r.id == model_id:
            return r
    return None


def _dedupe_worlds(worlds: list[World]) -> list[World]:
    if len(worlds) <= 1:  # nothing to merge (the usual case): skip building the keys
        return worlds
    out: list[World] = []
    keys: set[Any] = set()
    for w in worlds:
        k = (
            _state_key(w.state),
            tuple(sorted(w.m2t.items())),
            tuple(sorted((k, tuple(sorted(v.items()))) for k, v in w.times.items())),
        )
        if k not in keys:
            keys.add(k)
            out.append(w)
    return out


def _state_key(state: StoreState) -> Any:
    return tuple(
        (scope, tuple((r.id, r.status, r.use_count, r.last_used_at) for r in recs))
        for scope, recs in sorted(state.scopes.items())
    )


# --------------------------------------------------------------------------- ids in requests


def _translate_ids(world: World, body: dict[str, Any], route: str) -> dict[str, Any]:
    """The model-side body: target ids the run has seen become model ids; unseen ids that
    could be taken for a model id become same-length ghosts."""
    if route == "/forget" and isinstance(body.get("id"), str):
        new = _model_id(world, body["id"])
        if new != body["id"]:
            return {**body, "id": new}
        return body
    if route == "/write" and isinstance(body.get("records"), list):
        changed = False
        recs = []
        for rec in body["records"]:
            if isinstance(rec, dict) and isinstance(rec.get("supersedes"), str):
                new = _model_id(world, rec["supersedes"])
                if new != rec["supersedes"]:
                    rec = {**rec, "supersedes": new}
                    changed = True
            recs.append(rec)
        if changed:
            return {**body, "records": recs}
    return body


def _model_id(world: World, target_id: str) -> str:
    if len(target_id) > 200:  # refused by length on both sides whatever it names
        return target_id
    if target_id in world.t2m:
        return world.t2m[target_id]
    if target_id.startswith("mem:") and not any(c.isspace() for c in target_id):
        return "~" * len(target_id)
    return target_id


# --------------------------------------------------------------------------- descriptions


def _describe_allowed(options: Sequence[Option], w: World) -> str:
    lines = []
    for o in options:
        spec = o.body
        note = f"  ({o.note})" if o.note else ""
        if isinstance(spec, ExactBody):
            lines.append(f"{o.status} {json.dumps(spec.value, sort_keys=True)}{note}")
        elif isinstance(spec, ErrorBody):
            names = " or ".join(spec.fields)
            lines.append(
                f'{o.status} {{"error": <reason{" naming " + names if names else ""}>}}{note}'
            )
        elif isinstance(spec, HealthBody):
            lines.append(f'{o.status} {{"ok": true, ...}}')
        else:  # retrieve and list are judged from this world's state, not the option's pick
            lines.append(f"{o.status} " + _describe_records(spec, w.state, w))
    return "\n".join(lines)


def _show(r: MemoryRecord, w: World) -> str:
    tid = w.m2t.get(r.id)
    # The target's id: the reader looks at the target's data, not at the model's numbering.
    label = tid if tid else f"(a record the target has not shown yet; model {r.id})"
    used = ""
    if r.last_used_at is not None:
        # Show the target's own stamp of that event when the run has seen it.
        seen = w.times.get(r.scope_key, {}).get(r.last_used_at)
        used = f", last used {seen}" if seen is not None else ", last used (not yet seen)"
    return f"{label} {r.text!r} useCount {r.use_count}{used}"


def _describe_records(spec: RecordsBody, state: StoreState, w: World) -> str:
    if spec.route == "/list":
        want = store_list(state, spec.scope_key, spec.limit, spec.query)
        lines = [f"  {i + 1}. {_show(r, w)}" for i, r in enumerate(want)]
        return "records, newest first:" + ("\n" + "\n".join(lines) if lines else " none")
    active = active_records(state, spec.scope_key)
    if not tokenize(spec.query or ""):
        return "records: none (the query has no tokens)"
    query = spec.query or ""
    by_id = {r.id: r for r in active}
    groups = rank_allowed(active, query, spec.limit, spec.now)
    lines = []
    for n, g in enumerate(groups):
        members = sorted((by_id[i] for i in g), key=lambda r: r.created_at)
        km = keyword_match(query, members[0])
        lines.append(f"  group {n + 1} (keyword match {km:.3f}, any order):")
        lines.extend(f"     {_show(r, w)}" for r in members)
    want_n = min(spec.limit, sum(len(g) for g in groups))
    return (
        f"records: the first {want_n} of these tie groups (a group cut by the limit keeps any of"
        " its members; usage shown before or after this retrieval's bump; see MEM-STORE.5-6 for"
        " what a prefilter may leave out):" + ("\n" + "\n".join(lines) if lines else " none")
    )


def _exact_clauses(route: str, want: Any, got: Any, req: WireRequest) -> tuple[str, ...]:
    if route == "/forget":
        return ("MEM-STORE.8", "MEM-WIRE.15")
    if route != "/write" or not isinstance(want, dict) or not isinstance(got, dict):
        return (ROUTE_CLAUSE.get(route, "MEM-WIRE.1"),)
    out: list[str] = []
    bad = {k for k in want if k not in got or not json_equal(want[k], got[k])}
    supersedes_sent = b'"supersedes"' in req.body
    if bad & {"inserted", "deduped"}:
        out += ["MEM-WRITE.1", "MEM-WRITE.2", "MEM-WRITE.7"]
        if supersedes_sent:
            out += ["MEM-WRITE.4", "MEM-WRITE.5"]
    if "superseded" in bad:
        out += ["MEM-WRITE.3", "MEM-WRITE.5"]
    if "evicted" in bad:
        out += ["MEM-CAP.1", "MEM-CAP.3"]
    if bad - {"inserted", "deduped", "superseded", "evicted"}:
        out += ["MEM-WIRE.13"]
    out.append("MEM-WRITE.6")
    return tuple(dict.fromkeys(out))


def _check_error_body(spec: ErrorBody, body: Any, status: int, route: str) -> None:
    if (
        not isinstance(body, dict)
        or set(body) != {"error"}
        or not isinstance(body.get("error"), str)
    ):
        raise _Reject(
            ("MEM-WIRE.8",), f'error body is {short_json(body, 120)}, not {{"error": "<reason>"}}'
        )
    if spec.fields:
        from reference.memory.wire import names_field

        if not any(names_field(body["error"], f) for f in spec.fields):
            raise _Reject(
                ("MEM-WIRE.8",),
                f"the 400 reason {body['error']!r} names none of the offending fields"
                f" ({', '.join(spec.fields)})",
            )


def _status_clauses(options: Sequence[Option], got: int, route: str) -> tuple[str, ...]:
    out: list[str] = []
    for o in options:
        if o.status in STATUS_CLAUSE:
            out.append(STATUS_CLAUSE[o.status])
        elif o.status == 400 and isinstance(o.body, ErrorBody):
            if not o.body.fields:
                out.append("MEM-WIRE.7")
            for f in o.body.fields:
                c = FIELD_CLAUSE.get(f)
                out.append(c or ROUTE_CLAUSE.get(route, "MEM-WIRE.7"))
        elif o.status == 200:
            out.append(ROUTE_CLAUSE.get(route, "MEM-WIRE.1"))
    if got in STATUS_CLAUSE:
        out.append(STATUS_CLAUSE[got])
    if got != 200 and got < 500 and any(o.status != got for o in options):
        out.append("MEM-WIRE.4")
    if not out:
        out.append(ROUTE_CLAUSE.get(route, "MEM-WIRE.1"))
    return tuple(dict.fromkeys(out))
