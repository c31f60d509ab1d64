"""A records answer (``/retrieve``, ``/list``) against one world: shape, pairing, order.

Three steps, each a function: every position has the shape of a record and an id of the scope
(:func:`check_ids`); each position shows a model record — by the bijection when its id is known,
else by content, trying every injective choice when several fit (:func:`candidates`,
:func:`assignments`); and the whole sequence is one the judge allows, each record fitting in one
usage mode (:func:`check_answer`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from conformance.jsonutil import short_json
from conformance.oracle.memory.clauses import DEAD_CLAUSES, ROUTE_CLAUSE, Reject
from conformance.oracle.memory.records import (
    check_shape,
    fit_record,
    modes,
    no_match_reason,
    record_problems,
)
from conformance.oracle.memory.worlds import TimeProblem, World, find
from reference.memory.judge import listing_problem, retrieval_problem
from reference.memory.records import MemoryRecord
from reference.memory.scoring import repeats_a_token
from reference.memory.store import StoreState, active_records, bump_usage, parse_record_id

MAX_ASSIGNMENTS = 24
#: The reference clause a store counting a repeated query token once departs from: the world
#: that follows it judges every later retrieve by that reading (``World.departures``).
DISTINCT_TOKENS: Final = "MEM-SCORE.7"


@dataclass(frozen=True)
class View:
    """What a records answer is judged against: route, scope, query (``None``: no filter),
    limit."""

    route: str
    scope_key: str
    query: str | None
    limit: int


def records_answer(w: World, spec: View, state: StoreState, body: Any, now: int) -> list[World]:
    """The worlds that follow from ``w`` when the target answered ``body`` to a records request
    (MEM-WIRE.11, MEM-WIRE.14); raise :class:`Reject` or :class:`TimeProblem` when none does."""
    if not isinstance(body, dict) or "records" not in body or not isinstance(body["records"], list):
        raise Reject(
            (ROUTE_CLAUSE[spec.route],),
            f'answer is not {{"records": [...]}}: {short_json(body, 120)}',
        )
    items: list[Any] = body["records"]
    check_ids(items, spec.scope_key)
    active = active_records(state, spec.scope_key)
    bound = bound_positions(w, items, active, state, spec.scope_key)
    unbound = [pos for pos in range(len(items)) if pos not in bound]
    free = [r for r in active if r.id not in w.m2t]
    options = candidates(w, items, unbound, free, spec.route, now, state)
    choices = assignments(unbound, options)
    if not choices:
        raise Reject(
            ("MEM-STORE.9", ROUTE_CLAUSE[spec.route]),
            "the answer shows more new records than the model has unseen records of that content",
        )
    worlds: list[World] = []
    last_reject: Reject | TimeProblem | None = None
    for assign in choices:
        ids = [bound.get(p) or assign[p] for p in range(len(items))]
        try:
            worlds.extend(check_answer(w, spec, state, items, ids, now))
        except (Reject, TimeProblem) as exc:
            last_reject = exc
    if not worlds and last_reject is not None:
        raise last_reject
    return worlds


def check_ids(items: list[Any], scope: str) -> None:
    """Every position is a record with an id of the scope, no id twice (MEM-STORE.9)."""
    seen: set[str] = set()
    for pos, item in enumerate(items):
        check_shape(item, pos)
        rid = item["id"]
        parsed = parse_record_id(rid)
        if parsed is None or parsed[0] != scope:
            raise Reject(
                ("MEM-STORE.9", "MEM-WIRE.16"),
                f"record {pos} has id {rid!r}, not of the form mem:{scope}:<n>",
            )
        if rid in seen:
            raise Reject(("MEM-STORE.9", "MEM-WIRE.16"), f"id {rid!r} appears twice in one answer")
        seen.add(rid)


def _other_record(item: dict[str, Any], dead: MemoryRecord) -> bool:
    """Whether a returned record differs from a dead one in what never changes after minting
    (text, kind, thread): then its id was handed out again (MEM-STORE.9, MEM-RECORD.3)."""
    return (
        item.get("text") != dead.text
        or item.get("kind") != dead.kind
        or item.get("sourceThreadKey") != dead.source_thread_key
    )


def bound_positions(
    w: World, items: list[Any], active: list[MemoryRecord], state: StoreState, scope: str
) -> dict[int, str]:
    """The model record of each position whose id the run has seen; a dead or foreign one is a
    divergence (MEM-STORE.4, MEM-SCOPE.5)."""
    active_ids = {r.id for r in active}
    bound: dict[int, str] = {}
    for pos, item in enumerate(items):
        m = w.t2m.get(item["id"])
        if m is None:
            continue
        if m not in active_ids:
            dead = find(state, m)
            status = dead.status if dead is not None else "unknown"
            if dead is not None and dead.scope_key == scope and _other_record(item, dead):
                raise Reject(
                    ("MEM-STORE.9", "MEM-RECORD.3"),
                    f"record {pos} ({item['id']}, text {short_json(item.get('text'))}) carries"
                    f" the id of the model's {m}, which is {status} and held other content:"
                    " ids are never reused",
                )
            raise Reject(
                DEAD_CLAUSES.get(status, ("MEM-STORE.4", "MEM-RECORD.2"))
                if dead is not None and dead.scope_key == scope
                else ("MEM-SCOPE.5", "MEM-STORE.9"),
                f"record {pos} ({item['id']}) is the model's {m}, which is {status} — only active"
                " records of the scope may be returned",
            )
        bound[pos] = m
    return bound


def candidates(
    w: World,
    items: list[Any],
    unbound: list[int],
    free: list[MemoryRecord],
    route: str,
    now: int,
    state: StoreState,
) -> dict[int, list[str]]:
    """For each position with an unseen id, the unseen model records its content fits."""
    options: dict[int, list[str]] = {}
    for pos in unbound:
        item = items[pos]
        # A record of another text never fits (its text is a content problem): only records
        # of the item's own text are checked in full.
        text = item.get("text")
        fits = [
            r.id
            for r in free
            if r.text == text and not record_problems(w, item, r, route, now, modes(route))
        ]
        if not fits:
            raise Reject(*no_match_reason(w, item, pos, free, route, now, state))
        options[pos] = fits
    return options


def assignments(positions: list[int], options: dict[int, list[str]]) -> list[dict[int, str]]:
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


def check_answer(
    w: World,
    spec: View,
    state: StoreState,
    items: list[Any],
    ids: list[str],
    now: int,
) -> list[World]:
    """The world after the answer showing model records ``ids``: order and membership as the
    judge allows (MEM-SCORE.5, MEM-WIRE.14), every record fitting, the bijection extended."""
    nw = w.copy()
    scope = spec.scope_key
    active = active_records(state, scope)
    held = as_the_store_holds(w, active)
    if spec.route == "/retrieve":
        assert spec.query is not None
        problem = retrieval_problem(
            held, spec.query, spec.limit, now, ids, distinct=DISTINCT_TOKENS in w.departures
        )
        if problem is not None and _distinct_reading_allows(w, held, spec, now, ids):
            nw.departures = w.departures | {DISTINCT_TOKENS}
            nw.departed_why = (
                f"{problem.reason}, counting each repeat of a query token as the reference"
                " does; the answer is allowed when a repeated token counts once (the other"
                " reading of §5)"
            )
            problem = None
    else:
        problem = listing_problem(held, spec.query, spec.limit, ids)
    if problem is not None:
        raise Reject(problem.clauses, problem.reason)
    fit_answer(nw, spec.route, {r.id: r for r in active}, items, ids, now)
    if spec.route == "/retrieve" and ids:
        nw.state = bump_usage(state, scope, ids, now)
    else:
        nw.state = state
    return [nw]


def _distinct_reading_allows(
    w: World, held: list[MemoryRecord], spec: View, now: int, ids: list[str]
) -> bool:
    """Whether a retrieve answer the reference reading refuses is allowed by the other reading
    of keyword match (MEM-SCORE.7: a repeated query token counts once), in a world that has not
    taken that reading yet.  Only a query repeating a token is scored differently."""
    assert spec.query is not None
    return (
        DISTINCT_TOKENS not in w.departures
        and repeats_a_token(spec.query)
        and retrieval_problem(held, spec.query, spec.limit, now, ids, distinct=True) is None
    )


def as_the_store_holds(w: World, active: list[MemoryRecord]) -> list[MemoryRecord]:
    """The scope's records with the keywords the *store* holds where they are its own choice.

    A record written without keywords may hold the text's tokens, none, or a subset
    (MEM-RECORD.5): what the model derived is only one of those.  The prefilter's freedoms
    (MEM-STORE.5, MEM-STORE.6) depend on the keywords, so an answer is judged by the keywords
    the target has shown for the record, and by none while it has shown none (the keywords
    can only be text tokens, so matching and scores stay the same; only what a prefilter
    *must* hand on may shrink).  Never the model's own pick of an open point."""
    out: list[MemoryRecord] = []
    for r in active:
        meta = w.meta.get(r.id)
        if meta is None or meta.kw_given:
            out.append(r)
            continue
        target_id = w.m2t.get(r.id)
        seen = w.keywords_seen.get(target_id) if target_id is not None else None
        kws = seen if seen is not None else ()
        out.append(r if kws == r.keywords else replace(r, keywords=kws))
    return out


def fit_answer(
    nw: World,
    route: str,
    by_id: dict[str, MemoryRecord],
    items: list[Any],
    ids: list[str],
    now: int,
) -> None:
    """Fit every record of the answer into ``nw`` and bind its id.  A retrieve shows usage all
    before or all after its bump: the first record that fits decides which (MEM-WIRE.11)."""
    chosen_mode: str | None = None
    for pos, (item, mid) in enumerate(zip(items, ids, strict=True)):
        rec = by_id[mid]
        errs: list[tuple[tuple[str, ...], str]] = []
        for mode in modes(route) if chosen_mode is None else (chosen_mode,):
            errs = fit_record(nw, item, rec, route, now, mode)
            if not errs:
                chosen_mode = mode
                break
        if errs:
            clauses, msg = errs[0]
            raise Reject(clauses, f"record {pos} ({item['id']} ↔ model {mid}): {msg}")
        if mid not in nw.m2t:
            if item["id"] in nw.t2m:
                raise Reject(
                    ("MEM-STORE.9",),
                    f"id {item['id']} was already given to the model's {nw.t2m[item['id']]};"
                    " ids are never reused",
                )
            nw.bind(mid, item["id"])
