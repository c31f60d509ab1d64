"""One wire record against one model record: small comparers, each for one part of a record.

The rules are the reference judge's (``reference.memory.judge``: ``content_problems`` and
``usage_problems``); the comparers here add only what needs the run's maps: ``supersedes``
through the id bijection (MEM-RECORD.4), keywords of a record written without them stable
across answers (MEM-RECORD.3), and ``createdAt``/``lastUsedAt`` through the time correspondence
(MEM-STORE.11).

A retrieve may show usage before or after its own bump: a *mode* (``post``/``pre``; other routes
``plain``).  :func:`record_problems` only asks whether a record fits in some mode and leaves the
world alone; :func:`fit_record` checks one mode and, when the record fits, records in the world
what it showed (time pairs, keywords seen, the ``supersedes`` pairing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.jsonutil import short_json
from conformance.oracle.memory.clauses import DEAD_CLAUSES, ROUTE_CLAUSE, Reject
from conformance.oracle.memory.worlds import RecMeta, TimeProblem, World
from reference.jsonvalues import js_integer
from reference.memory.judge import content_problems, usage_problems
from reference.memory.records import ACTIVE, MemoryRecord
from reference.memory.store import StoreState, parse_record_id
from reference.memory.wire import RECORD_FIELDS, RECORD_FIELDS_WHEN_SET

#: Differences as (clauses, reason) pairs, most telling first.
Problems = list[tuple[tuple[str, ...], str]]
#: A pairing (model id, target id) a record's ``supersedes`` shows, to bind once it fits.
Pairing = tuple[str, str] | None

REQUIRED_FIELDS = RECORD_FIELDS
OPTIONAL_FIELDS = RECORD_FIELDS_WHEN_SET

ABSENT: Any = type("_Absent", (), {"__repr__": lambda self: "<absent>"})()


def modes(route: str) -> tuple[str, ...]:
    """The usage modes a record of ``route``'s answer may show (MEM-WIRE.11: before or after the
    retrieval's own bump)."""
    return ("post", "pre") if route == "/retrieve" else ("plain",)


def check_shape(item: Any, pos: int) -> None:
    """Raise :class:`Reject` unless ``item`` is an object with every required field, no
    ``null`` optional field and a string id (MEM-WIRE.16, MEM-RECORD.1)."""
    if not isinstance(item, dict):
        raise Reject(("MEM-WIRE.16",), f"record {pos} is not an object: {short_json(item, 120)}")
    for name in REQUIRED_FIELDS:
        if name not in item:
            raise Reject(("MEM-WIRE.16", "MEM-RECORD.1"), f"record {pos} has no {name!r}")
    for name in OPTIONAL_FIELDS:
        if name in item and item[name] is None:
            raise Reject(
                ("MEM-WIRE.16", "MEM-RECORD.1"),
                f"record {pos} sends {name!r}: null — an optional field without a value is absent",
            )
    if not isinstance(item["id"], str):
        raise Reject(
            ("MEM-WIRE.16",), f"record {pos}: id is not a string: {short_json(item['id'], 120)}"
        )


# --------------------------------------------------------------------------- supersedes


def supersedes_problems(
    w: World, item: dict[str, Any], rec: MemoryRecord, meta: RecMeta
) -> tuple[Problems, Pairing]:
    """``supersedes`` as the write sent it (MEM-RECORD.4): absent when none was sent, ``""`` or
    absent when ``""`` was, the sent string when it named nothing live, and the superseded
    record's target id when it did — a pairing to bind when that record is not yet seen."""
    sup = item.get("supersedes", ABSENT)
    if meta.ptr == "none":
        if sup is not ABSENT:
            return [(("MEM-RECORD.4",), f"supersedes is {_j(sup)}; no supersedes was sent")], None
        return [], None
    if meta.ptr == "empty":
        if sup is not ABSENT and sup != "":
            why = f"supersedes is {_j(sup)}; an empty supersedes was sent"
            return [(("MEM-RECORD.4", "MEM-WRITE.7"), why)], None
        return [], None
    if meta.ptr == "unresolved":
        if sup is not ABSENT and sup != meta.sent:
            why = f"supersedes is {_j(sup)}; the run sent {_j(meta.sent)}"
            return [(("MEM-RECORD.4",), why)], None
        return [], None
    return _resolved_supersedes(w, sup, rec)


def _resolved_supersedes(w: World, sup: Any, rec: MemoryRecord) -> tuple[Problems, Pairing]:
    """A resolved ``supersedes`` must name the superseded record's target id."""
    target_model = rec.supersedes
    assert target_model is not None
    clauses = ("MEM-RECORD.4", "MEM-WRITE.3")
    if not isinstance(sup, str):
        return [(clauses, f"supersedes is {_j(sup)}; it must name the superseded record")], None
    if target_model in w.m2t:
        if w.m2t[target_model] != sup:
            why = f"supersedes is {sup!r}; the superseded record is {w.m2t[target_model]}"
            return [(clauses, why)], None
        return [], None
    if sup in w.t2m and w.t2m[sup] != target_model:
        return [(clauses, f"supersedes is {sup!r}, which is another record")], None
    parsed = parse_record_id(sup)
    if parsed is None or parsed[0] != rec.scope_key:
        why = f"supersedes is {sup!r}, not an id of this scope"
        return [(("MEM-RECORD.4", "MEM-STORE.9"), why)], None
    return [], (target_model, sup)


# --------------------------------------------------------------------------- keywords, times


def keywords_problems(w: World, item: dict[str, Any], meta: RecMeta) -> Problems:
    """Keywords of a record written without keywords are free, but the same in every answer
    (MEM-RECORD.3)."""
    kws = item.get("keywords")
    if not meta.kw_given and isinstance(kws, list):
        seen = w.keywords_seen.get(item.get("id", ""))
        if seen is not None and tuple(kws) != seen:
            return [(("MEM-RECORD.3",), f"keywords changed from {list(seen)} to {kws}")]
    return []


def time_shape_problems(item: dict[str, Any]) -> Problems:
    """``createdAt`` is an integer, and so is ``lastUsedAt`` when present (MEM-WIRE.16)."""
    probs: Problems = []
    if _created(item) is None:
        probs.append(
            (
                ("MEM-WIRE.16", "MEM-STORE.11"),
                f"createdAt is {_j(item.get('createdAt'))}, not an integer",
            )
        )
    last = item.get("lastUsedAt", ABSENT)
    if last is not ABSENT and (isinstance(last, bool) or js_integer(last) is None):
        probs.append((("MEM-WIRE.16", "MEM-STORE.11"), f"lastUsedAt is {_j(last)}, not an integer"))
    return probs


def observe_times(w: World, item: dict[str, Any], rec: MemoryRecord, want_last: int | None) -> None:
    """Add the record's times to ``w``'s time correspondence; raise :class:`TimeProblem` when
    they contradict it (MEM-STORE.11).  ``want_last``: the model's last-use time of the record
    in the mode being tried."""
    created = _created(item)
    assert created is not None
    w.observe_time(rec.scope_key, rec.created_at, created, f"createdAt of {item.get('id')}")
    if want_last is None:
        return
    lu = js_integer(item.get("lastUsedAt", ABSENT))
    assert lu is not None
    if lu < created:
        raise TimeProblem(f"lastUsedAt {lu} is before createdAt {created}", ("MEM-STORE.11",))
    w.observe_time(rec.scope_key, want_last, lu, f"lastUsedAt of {item.get('id')}")


def _created(item: dict[str, Any]) -> int | None:
    value = item.get("createdAt")
    return js_integer(value) if not isinstance(value, bool) else None


def _j(value: Any) -> str:
    return short_json(value, 120)


# --------------------------------------------------------------------------- a whole record


def static_problems(w: World, item: dict[str, Any], rec: MemoryRecord) -> tuple[Problems, Pairing]:
    """Everything about a record that does not depend on the usage mode: content, supersedes,
    keywords, the type of its times."""
    meta = w.meta.get(rec.id, RecMeta(kw_given=True))
    probs: Problems = [
        (p.clauses, p.reason) for p in content_problems(rec, item, keywords_given=meta.kw_given)
    ]
    sup_probs, pairing = supersedes_problems(w, item, rec, meta)
    probs += sup_probs
    probs += keywords_problems(w, item, meta)
    probs += time_shape_problems(item)
    return probs, pairing


def mode_problems(
    w: World, item: dict[str, Any], rec: MemoryRecord, route: str, now: int, mode: str
) -> Problems:
    """Usage and times in one mode; the times observed go into ``w``."""
    bumped = mode == "post"
    want_last = now if bumped else rec.last_used_at
    probs = [(p.clauses, p.reason) for p in usage_problems(rec, item, bumped=bumped, route=route)]
    if probs:
        return probs
    try:
        observe_times(w, item, rec, want_last)
    except TimeProblem as tp:
        return [(tp.clauses, str(tp))]
    return []


def record_problems(
    w: World,
    item: dict[str, Any],
    rec: MemoryRecord,
    route: str,
    now: int,
    bump_modes: tuple[str, ...],
) -> Problems:
    """Differences between wire record ``item`` and model record ``rec`` (empty: it shows it
    in one of ``bump_modes``).  ``w`` is left as it was."""
    probs, _pairing = static_problems(w, item, rec)
    if probs:
        return probs
    out: Problems = []
    for mode in bump_modes:
        mode_probs = mode_problems(w.copy(), item, rec, route, now, mode)
        if not mode_probs:
            return []
        out.extend(mode_probs)
    return out


def fit_record(
    w: World, item: dict[str, Any], rec: MemoryRecord, route: str, now: int, mode: str
) -> Problems:
    """Like :func:`record_problems` for one mode, and when ``item`` fits, record in ``w`` what
    it showed: its time pairs, its keywords (written without), its ``supersedes`` pairing."""
    probs, pairing = static_problems(w, item, rec)
    if probs:
        return probs
    probs = mode_problems(w, item, rec, route, now, mode)
    if probs:
        return probs
    if not w.meta.get(rec.id, RecMeta(kw_given=True)).kw_given:
        w.keywords_seen.setdefault(item["id"], tuple(item["keywords"]))
    if pairing is not None and pairing[0] not in w.m2t and pairing[1] not in w.t2m:
        w.bind(*pairing)
    return []


def no_match_reason(
    w: World,
    item: dict[str, Any],
    pos: int,
    free: Sequence[MemoryRecord],
    route: str,
    now: int,
    state: StoreState | None = None,
) -> tuple[tuple[str, ...], str]:
    """Explain why a new target record matches no unseen model record."""
    shown = f"record {pos} ({item['id']}, text {_j(item.get('text'))})"
    if state is not None:
        # A record the model holds as dead (superseded, forgotten, evicted) that the target
        # still returns points at the write, forget or eviction that went wrong.
        scope = item.get("scopeKey")
        for r in state.records(scope) if isinstance(scope, str) else ():
            if r.status != ACTIVE and r.id not in w.m2t and r.text == item.get("text"):
                return (
                    DEAD_CLAUSES.get(r.status, ("MEM-STORE.4",)),
                    f"{shown} is the model's {r.id}, which is {r.status} — only active records"
                    " may be returned",
                )
    if not free:
        return (
            ("MEM-SEAM.2", ROUTE_CLAUSE[route]),
            f"{shown} is not a record the model holds: every active model record of the scope is"
            " already paired with another id",
        )
    same_text = [r for r in free if r.text == item.get("text")]
    pool = same_text or list(free)
    best = min(pool, key=lambda r: len(record_problems(w, item, r, route, now, modes(route))))
    probs = record_problems(w, item, best, route, now, modes(route))
    if same_text:
        clauses, msg = probs[0]
        return clauses, f"record {pos} ({item['id']}) shows the model's {best.id} but {msg}"
    return (
        ("MEM-SEAM.2", ROUTE_CLAUSE[route]),
        f"{shown} matches no active model record of the scope by content",
    )
