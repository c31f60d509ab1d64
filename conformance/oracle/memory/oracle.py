"""``MemoryOracle``: the answers the model allows in every live world, and the judgement of one.

The driver asks :meth:`MemoryOracle.allowed` before it sends (which scopes an allowed answer
changes decides the spacing), then :meth:`MemoryOracle.judge` with the target's answer, then
:meth:`MemoryOracle.commit` to keep the worlds that agree.  One answer is tried against every
allowed option of every world; an option of the same status either fits (giving one world or,
for an eviction the target made invisibly, several) or is rejected with its clauses.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from conformance.jsonutil import short_json
from conformance.oracle.judgement import Judgement as BaseJudgement
from conformance.oracle.memory.answers import View, records_answer
from conformance.oracle.memory.clauses import Reject, exact_clauses, route_clause, status_clauses
from conformance.oracle.memory.describe import describe_allowed
from conformance.oracle.memory.requests import MODEL_TOKEN, SentRequest, model_request
from conformance.oracle.memory.worlds import (
    RecMeta,
    TimeProblem,
    World,
    changed_scopes,
    dedupe_worlds,
    least_departed,
    set_statuses,
    status_of,
)
from conformance.scrub import shown
from conformance.vocabulary import Exchange
from reference.memory.engine import DEFAULT_SCOPE_CAP, Dedup, Insert, plan_write
from reference.memory.judge import eviction_picks
from reference.memory.records import ACTIVE, EVICTED, MemoryCandidate, MemoryRecord
from reference.memory.store import empty_store
from reference.memory.wire import (
    CAP_FLOORS,
    REFERENCE_CAPS,
    Allowed,
    ErrorBody,
    ExactBody,
    HealthBody,
    Option,
    RecordsBody,
    WireRequest,
    WriteBody,
    fence_statuses,
    handle,
    members_differ,
    names_field,
    status_admits,
    tighter_cap,
)
from reference.memory.wire.handle import read_body

MAX_WORLDS = 64
#: The reference clause a store capping a field tighter than the reference departs from.
TIGHTER_CAPS = "MEM-WIRE.21"


@dataclass
class Judgement(BaseJudgement):
    worlds: list[World] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AllowedInWorlds:
    """The answers the model allows to one request, per live world (see
    :meth:`MemoryOracle.allowed`).

    ``changes``: the scope keys whose records some allowed answer, in some world, changes —
    empty for a request every conforming store must leave without effect (a 4xx, a list, a
    retrieve nothing matches, a forget of nothing)."""

    sent: SentRequest
    now: int
    worlds: list[World]
    per_world: tuple[tuple[World, WireRequest, Allowed], ...]
    changes: frozenset[str]


class MemoryOracle:
    """The model side of one scenario: worlds, and the judgement of every answer."""

    def __init__(self, cap_default: int = DEFAULT_SCOPE_CAP) -> None:
        self.worlds: list[World] = [World(empty_store())]
        self.cap_default = cap_default

    def allowed(self, sent: SentRequest, now: int) -> AllowedInWorlds:
        """What the model allows as the answer to ``sent`` at model time ``now``, in every live
        world, and which scopes an allowed answer changes.  The driver asks before it sends:
        a request no allowed answer lets change a scope is not a mutating step and needs no
        spacing (see the package docstring); ``judge`` then reuses the same computation."""
        per_world = []
        changes: set[str] = set()
        for w in self.worlds:
            req = model_request(w, sent)
            _, allowed = handle(w.state, req, now, MODEL_TOKEN, self.cap_default)
            per_world.append((w, req, allowed))
            for option in allowed.options:
                changes |= changed_scopes(w.state, option.state)
        return AllowedInWorlds(sent, now, self.worlds, tuple(per_world), frozenset(changes))

    def judge(
        self, sent: SentRequest, ex: Exchange, now: int, allowed: AllowedInWorlds | None = None
    ) -> Judgement:
        """Judge the target's answer ``ex`` to ``sent`` at model time ``now`` (``allowed``: the
        result of :meth:`allowed` for the same request, time and worlds, if already made)."""
        if (
            allowed is None
            or allowed.sent is not sent
            or allowed.now != now
            or allowed.worlds is not self.worlds
        ):
            allowed = self.allowed(sent, now)
        first_allowed = allowed.per_world[0][2]
        fences = fence_statuses(allowed.per_world[0][1], MODEL_TOKEN)
        expected = describe_allowed(first_allowed.options, self.worlds[0])
        route = sent.path.split("?", 1)[0]
        if ex.status is None:
            return Judgement(
                "indeterminate",
                (route_clause(route),),
                expected,
                f"no HTTP answer: {ex.transport_error}",
            )
        if ex.body is None:
            return Judgement(
                "diverge",
                status_clauses(first_allowed.options, ex.status, route, fences),
                expected,
                f"HTTP {ex.status} with {ex.body_error or 'no JSON body'}"
                + (f": {shown(repr(ex.raw_excerpt), 120)}" if ex.raw_excerpt else ""),
            )
        try:
            survivors, failures = self._try_options(allowed, sent, ex, now)
        except Untraceable as too_many:
            return Judgement("indeterminate", too_many.clauses, expected, too_many.message)
        if len(survivors) > MAX_WORLDS:
            return Judgement(
                "indeterminate",
                (route_clause(route),),
                expected,
                f"{len(survivors)} model states remain consistent with the answers so far; the"
                f" harness stops at {MAX_WORLDS} rather than guess (make batches smaller)",
            )
        survivors = survivors or self._tighter_cap(allowed, sent, ex)
        if survivors:
            worlds = least_departed(dedupe_worlds(survivors))
            return Judgement(
                "pass", (), expected, worlds=worlds, details=self._departure(worlds[0])
            )
        if failures:
            clauses, message = failures[0]
            return Judgement("diverge", clauses, expected, message)
        statuses = sorted(first_allowed.statuses)
        return Judgement(
            "diverge",
            status_clauses(first_allowed.options, ex.status, route, fences),
            expected,
            f"answered HTTP {ex.status}; the model allows only"
            f" {' or '.join(str(s) for s in statuses)}",
        )

    def _departure(self, world: World) -> dict[str, Any]:
        """``{"departed": clauses, "departure": why}`` when the answer left only worlds that
        depart from reference clauses the live worlds did not (the store reads an open choice
        otherwise than the reference: MEM-SCORE.7, MEM-WIRE.21); else ``{}``."""
        before = min((w.departures for w in self.worlds), key=len)
        departed = world.departures - before
        if not departed:
            return {}
        return {"departed": tuple(sorted(departed)), "departure": world.departed_why}

    def _tighter_cap(
        self, allowed: AllowedInWorlds, sent: SentRequest, ex: Exchange
    ) -> list[World]:
        """The worlds after a ``/write`` the model accepts but the store refused for a field §16
        caps without a number, capped tighter than the reference caps it (MEM-WIRE.21): each
        live world unchanged (a refused batch writes nothing), departing from that clause; or
        none.  Only when every model answer is a 200 and the store's 400 carries a reason
        (MEM-WIRE.8) that ``reference.memory.wire.tighter_cap`` explains."""
        if (
            sent.path.split("?", 1)[0] != "/write"
            or ex.status != 400
            or any(o.status != 200 for _, _, a in allowed.per_world for o in a.options)
        ):
            return []
        reason = ex.body.get("error") if isinstance(ex.body, dict) else None
        found = (
            tighter_cap(sent.body, reason) if isinstance(reason, str) and reason.strip() else None
        )
        if found is None:
            return []
        field, length = found
        why = (
            f"the store refused a write whose {field} is {length} code units long, within"
            f" the reference's cap of {REFERENCE_CAPS[field]}: a tighter cap than the"
            f" reference's (§16 caps it without a number; at least {CAP_FLOORS[field]} must be"
            " accepted)"
        )
        out = []
        for w in self.worlds:
            nw = w.copy()
            nw.departures = w.departures | {TIGHTER_CAPS}
            nw.departed_why = why
            out.append(nw)
        return out

    def commit(self, judgement: Judgement) -> None:
        """Keep the worlds a passing judgement left."""
        if judgement.worlds:
            self.worlds = judgement.worlds

    def _try_options(
        self, allowed: AllowedInWorlds, sent: SentRequest, ex: Exchange, now: int
    ) -> tuple[list[World], list[tuple[tuple[str, ...], str]]]:
        """The worlds every allowed option of the answer's status leaves, and why the others
        do not fit."""
        survivors: list[World] = []
        failures: list[tuple[tuple[str, ...], str]] = []
        for w, req, options in allowed.per_world:
            for option in (o for o in options.options if status_admits(o.status, ex.status)):
                try:
                    survivors.extend(self._admit(w, option, sent, req, ex, now))
                except Reject as rej:
                    failures.append((rej.clauses, rej.message))
                except TimeProblem as tp:
                    failures.append((tp.clauses, str(tp)))
        return survivors, failures

    def _admit(
        self, w: World, option: Option, sent: SentRequest, req: WireRequest, ex: Exchange, now: int
    ) -> list[World]:
        """The worlds that follow when the answer fits ``option`` of world ``w``."""
        spec = option.body
        route = sent.path.split("?", 1)[0]
        if isinstance(spec, ErrorBody):
            check_error_body(spec, ex.body)
            return [w]
        if isinstance(spec, HealthBody):
            if not isinstance(ex.body, dict) or ex.body.get("ok") is not True:
                raise Reject(
                    ("MEM-WIRE.1",),
                    f'/healthz answered {short_json(ex.body, 120)}, not {{"ok": true, …}}',
                )
            return [w]
        if isinstance(spec, ExactBody):
            assert isinstance(spec.value, dict)
            diffs = members_differ(spec.value, ex.body)
            if diffs is not None:
                raise Reject(
                    exact_clauses(route, spec.value, ex.body, req),
                    "answer differs: " + "; ".join(diffs),
                )
            if route == "/write":
                return after_write(w, option, sent, req)
            nw = w.copy()
            nw.state = option.state
            return [nw]
        assert isinstance(spec, RecordsBody)
        view = View(spec.route, spec.scope_key, spec.query, spec.limit)
        # Retrieve and list start from this world's own state (the option's state may be the
        # model's pick after its own bump).
        return records_answer(w, view, w.state, ex.body, now)


class Untraceable(Exception):
    """An answer the oracle cannot follow without guessing (more than ``MAX_WORLDS`` equally
    legal states): the step is indeterminate, never a divergence."""

    def __init__(self, clauses: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.clauses = clauses
        self.message = message


def check_error_body(spec: ErrorBody, body: Any) -> None:
    """Raise :class:`Reject` unless ``body`` carries a reason (MEM-WIRE.8, the seed's "with a
    reason"), is exactly ``{"error": "<reason>"}`` and, for a 400 about fields, the reason names
    one of them (MEM-WIRE.20, the reference Worker's form)."""
    if not isinstance(body, dict) or not any(
        isinstance(v, str) and v.strip() for v in body.values()
    ):
        raise Reject(
            ("MEM-WIRE.8",), f"error body {short_json(body, 120)} carries no reason (a string)"
        )
    if set(body) != {"error"} or not isinstance(body.get("error"), str):
        raise Reject(
            ("MEM-WIRE.20",), f'error body is {short_json(body, 120)}, not {{"error": "<reason>"}}'
        )
    if spec.fields and not any(names_field(body["error"], f) for f in spec.fields):
        raise Reject(
            ("MEM-WIRE.20",),
            f"the 400 reason {body['error']!r} names none of the offending fields"
            f" ({', '.join(spec.fields)})",
        )


def after_write(w: World, option: Option, sent: SentRequest, req: WireRequest) -> list[World]:
    """The worlds after an admitted write: meta for the new records, eviction forks
    (MEM-CAP.2: every legal pick other than the model's own is a world of its own)."""
    # The lenient reading the model's 200 came from (the same text: a 200 write was valid
    # UTF-8, or read with U+FFFD, with a BOM skipped).
    read = read_body("/write", req.body.decode("utf-8", "replace").removeprefix("\ufeff"))
    assert read is not None, "an admitted 200 write must be JSON"
    parsed = read[1]
    assert isinstance(parsed, WriteBody), "an admitted 200 write must validate"
    scope = parsed.scope_key
    sent_records = sent.body.get("records", []) if isinstance(sent.body, dict) else []
    before = w.state.records(scope)
    after = option.state.records(scope)
    new_records = after[len(before) :]
    meta = dict(w.meta)
    active = [r for r in before if r.status == ACTIVE]
    k = 0
    for i, cand in enumerate(parsed.candidates):
        plan = plan_write(active, cand, newer_unicode=option.newer_unicode)
        if isinstance(plan, Dedup):
            continue
        rec = new_records[k]
        k += 1
        sent_value = sent_records[i].get("supersedes") if i < len(sent_records) else None
        sent_str = sent_value if isinstance(sent_value, str) else None
        meta[rec.id] = RecMeta(cand.keywords is not None, _pointer(cand, plan), sent_str)
        if plan.supersede_id is not None:
            active = [r for r in active if r.id != plan.supersede_id]
        active.append(_as_active(rec))  # as it was before the eviction
    base = w.copy()
    base.state = option.state
    base.meta = meta
    # Eviction: the model took its pick; every other legal pick is a world of its own.
    evicted_now = [
        r.id for r in after if r.status == EVICTED and status_of(before, r.id) != EVICTED
    ]
    if not evicted_now:
        return [base]
    by_id = {r.id: r for r in after}
    pre_evict = [_as_active(by_id[r.id]) for r in active]
    picks = eviction_picks(pre_evict, len(evicted_now))
    if len(picks) > MAX_WORLDS:
        raise Untraceable(
            ("MEM-CAP.2",),
            f"{len(picks)} equally legal eviction choices; the harness follows at most"
            f" {MAX_WORLDS} rather than guess (use smaller batches)",
        )
    worlds = []
    model_pick = frozenset(evicted_now)
    for pick in picks:
        nw = base.copy()
        if pick != model_pick:
            nw.state = set_statuses(option.state, scope, model_pick, pick)
        worlds.append(nw)
    return worlds


def _pointer(cand: MemoryCandidate, plan: Insert) -> str:
    """What became of an inserted candidate's ``supersedes``: ``none`` (not sent), ``empty``,
    ``resolved`` (a live record of the scope) or ``unresolved``."""
    if cand.supersedes is None:
        return "none"
    if cand.supersedes == "":
        return "empty"
    if plan.supersede_id is not None:
        return "resolved"
    return "unresolved"


def _as_active(rec: MemoryRecord) -> MemoryRecord:
    """``rec`` with status active (the record itself when it already is)."""
    return rec if rec.status == ACTIVE else replace(rec, status=ACTIVE)
