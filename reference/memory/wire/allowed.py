"""The allowed answers to one request: option families, and matching an answer against them.

An :class:`Allowed` is one or more :class:`Option`s, each a status, a description of the legal
bodies (exact members, an error naming a field, a health body, or records the judge allows) and
the store state that follows (MEM-WIRE.8, MEM-WIRE.11 to MEM-WIRE.16).  Records in an answer are
matched to model records by content and judged by ``reference.memory.judge``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from reference.jsonvalues import json_equal
from reference.memory.judge import listing_problem, rank_allowed, record_problems, retrieval_problem
from reference.memory.records import MemoryRecord
from reference.memory.store import StoreState, bump_usage, parse_record_id, store_list
from reference.memory.wire.codec import WireError, record_from_wire
from reference.memory.wire.request import MAX_KEYWORD, MAX_RUN_ID, MAX_SUPERSEDES, MAX_THREAD_KEY
from reference.memory.wire.validation import CAP_FLOORS, over_cap_floor


def members_differ(want: Mapping[str, object], got: object) -> list[str] | None:
    """How a result object differs from ``want`` (MEM-WIRE.13, MEM-WIRE.15), ``None`` if it
    does not: every member of ``want`` present and JSON-equal; members the protocol does not
    name are allowed (the seed names the members of a result but forbids no others)."""
    if not isinstance(got, dict):
        return [f"answer is {got!r}, not an object"]
    diffs = []
    for k, v in want.items():
        if k not in got:
            diffs.append(f"{k} missing (model {json.dumps(v)})")
        elif not json_equal(v, got[k]):
            diffs.append(f"{k} is {json.dumps(got[k])[:120]}, the model has {json.dumps(v)}")
    return diffs or None


_IDENT_CHAR: Final = "A-Za-z0-9_"


def names_field(reason: str, name: str) -> bool:
    """True when ``reason`` mentions ``name`` as a whole word (``id`` is not in ``invalid``)."""
    return (
        re.search(rf"(?<![{_IDENT_CHAR}]){re.escape(name)}(?![{_IDENT_CHAR}])", reason) is not None
    )


#: The reference's caps on the fields §16 caps without a number (MEM-WIRE.21).
REFERENCE_CAPS: Final = {
    "sourceThreadKey": MAX_THREAD_KEY,
    "sourceRunId": MAX_RUN_ID,
    "supersedes": MAX_SUPERSEDES,
    "keywords": MAX_KEYWORD,
}
#: The other fields of a ``/write``: a refusal naming one is not explained by a tighter cap.
_UNCAPPED: Final = ("scopeKey", "kind", "text", "confidence", "cap")


def tighter_cap(body: object, reason: str) -> tuple[str, int] | None:
    """The field, and the length of its longest value, that explains a 400 with ``reason`` to
    the ``/write`` ``body`` the reference accepts as a cap tighter than the reference's
    (MEM-WIRE.21): a field over its floor (``over_cap_floor``) that the reason names, or the
    first one over its floor when the reason names none of the write's fields.  ``None`` when
    no tighter cap explains the refusal (nothing over a floor, or the reason names a field
    within its floor or one no cap bounds)."""
    over = over_cap_floor(body)
    named = [f for f in over if names_field(reason, f)]
    if not named and any(names_field(reason, f) for f in (*CAP_FLOORS, *_UNCAPPED)):
        return None
    if not over:
        return None
    field = (named or list(over))[0]
    return field, over[field]


@dataclass(frozen=True)
class ExactBody:
    """The body holds every member of ``value`` exactly (JSON equality); other members are
    allowed (``members_differ``)."""

    value: object


@dataclass(frozen=True)
class ErrorBody:
    """``{"error": "<reason>"}``; when ``fields`` is non-empty the reason names one of them.
    ``reference_only``: every fault found breaks only a bound the seed does not give
    (MEM-WIRE.21), so a store that takes the value deviates from the reference, not the seed."""

    fields: tuple[str, ...] = ()
    reference_only: bool = False


@dataclass(frozen=True)
class HealthBody:
    """``{"ok": true, ...}``: extra fields allowed."""


@dataclass(frozen=True)
class RecordsBody:
    """``{"records": [...]}``: any answer the one judge (``reference.memory.judge``) allows for
    ``route`` over the scope's ``active`` records -- ``listing_problem`` for ``/list``,
    ``retrieval_problem`` at ``now`` for ``/retrieve`` (each record as it was, or all as bumped
    by this retrieval).  ``before`` is the state a retrieve's bump starts from."""

    route: Literal["/retrieve", "/list"]
    scope_key: str
    active: tuple[MemoryRecord, ...] = ()
    query: str | None = None
    limit: int = 0
    now: int = 0
    before: StoreState | None = None


BodySpec = ExactBody | ErrorBody | HealthBody | RecordsBody


@dataclass(frozen=True)
class Option:
    """One legal answer family and the store state that follows it."""

    status: int
    body: BodySpec
    state: StoreState
    note: str = ""
    #: a write planned with dedup keys as a newer Unicode may lower-case them (MEM-WRITE.2)
    newer_unicode: bool = False


IdMap = Mapping[str, str]


def is_success(status: int | None) -> bool:
    """A success answer: any 2xx (MEM-WIRE.22).  The seed names no success status for a route;
    it only ever calls a non-2xx answer a failure (§19, §26)."""
    return status is not None and 200 <= status < 300


def status_admits(allowed: int, got: int | None) -> bool:
    """Whether an answer of status ``got`` fits an option of status ``allowed``: the same
    status, or any 2xx for a success (MEM-WIRE.22)."""
    return got == allowed or (allowed == 200 and is_success(got))


def _id_shape_ok(wire_id: str, scope_key: str) -> bool:
    """An id of the promised shape ``mem:<scopeKey>:<n>`` for this scope (MEM-STORE.9)."""
    parsed = parse_record_id(wire_id)
    return parsed is not None and parsed[0] == scope_key


def _shows(
    rec: MemoryRecord, w: Mapping[str, object], *, bumped: bool, id_map: IdMap | None
) -> bool:
    """Does wire record ``w`` show model record ``rec`` (the judge's ``record_problems``, plus
    ids and ``supersedes`` through ``id_map`` when one is given)?"""
    wid = w.get("id")
    if id_map is not None:
        if rec.id in id_map:
            if id_map[rec.id] != wid:
                return False
        elif wid in id_map.values():
            return False
    sup = w.get("supersedes")
    if (sup is None) != (rec.supersedes is None):
        return False
    if (
        rec.supersedes is not None
        and id_map is not None
        and rec.supersedes in id_map
        and sup != id_map[rec.supersedes]
    ):
        return False
    return not record_problems(rec, w, keywords_given=None, bumped=bumped)


def _parse_records_body(body: object, scope_key: str) -> list[Mapping[str, object]] | None:
    """The records of a ``{"records": [...]}`` body, each well-formed with an id of the scope and no
    id twice; ``None`` otherwise (MEM-WIRE.16, MEM-STORE.9)."""
    if not isinstance(body, dict) or "records" not in body:
        return None
    raw = body["records"]
    if not isinstance(raw, list):
        return None
    out: list[Mapping[str, object]] = []
    for item in raw:
        r = record_from_wire(item)
        if isinstance(r, WireError) or not _id_shape_ok(r.id, scope_key):
            return None
        assert isinstance(item, dict)
        out.append(item)
    if len({str(r["id"]) for r in out}) != len(out):
        return None
    return out


_MAX_ASSIGNMENTS: Final = 64


def _assignments(options: Sequence[Sequence[str]]) -> list[list[str]]:
    """Injective choices of one model id per position (at most ``_MAX_ASSIGNMENTS``)."""
    out: list[list[str]] = []

    def go(i: int, acc: list[str]) -> None:
        """Extend ``acc`` by one position (depth first, bounded)."""
        if len(out) >= _MAX_ASSIGNMENTS:
            return
        if i == len(options):
            out.append(list(acc))
            return
        for m in options[i]:
            if m not in acc:
                acc.append(m)
                go(i + 1, acc)
                acc.pop()

    go(0, [])
    return out


def match_records(spec: RecordsBody, body: object, id_map: IdMap | None = None) -> list[str] | None:
    """The model ids a records body shows, position by position, or ``None`` if illegal.

    Each wire record is paired with a model record it shows (``_shows``) and the pairing is
    judged by ``judge.listing_problem`` / ``judge.retrieval_problem``.
    """
    wire = _parse_records_body(body, spec.scope_key)
    if wire is None:
        return None
    modes = (True, False) if spec.route == "/retrieve" else (False,)
    for bumped in modes:
        options = [
            [r.id for r in spec.active if _shows(r, w, bumped=bumped, id_map=id_map)] for w in wire
        ]
        for ids in _assignments(options):
            if spec.route == "/list":
                problem = listing_problem(spec.active, spec.query, spec.limit, ids)
            else:
                problem = retrieval_problem(
                    spec.active, spec.query or "", spec.limit, spec.now, ids
                )
            if problem is None:
                return ids
    return None


def _body_admits(spec: BodySpec, body: object, id_map: IdMap | None) -> list[str] | None:
    """``None`` if ``body`` is not admitted; else the matched model ids (``[]`` for non-records)."""
    if isinstance(spec, ExactBody):
        assert isinstance(spec.value, dict)
        return [] if members_differ(spec.value, body) is None else None
    if isinstance(spec, ErrorBody):
        if not isinstance(body, dict) or set(body) != {"error"}:
            return None
        reason = body["error"]
        if not isinstance(reason, str):
            return None
        if spec.fields and not any(names_field(reason, f) for f in spec.fields):
            return None
        return []
    if isinstance(spec, HealthBody):
        return [] if isinstance(body, dict) and body.get("ok") is True else None
    return match_records(spec, body, id_map)


def _describe_body(spec: BodySpec) -> str:
    """One allowed body in words, for a report (MEM-WIRE.8, MEM-WIRE.11 to MEM-WIRE.15)."""
    if isinstance(spec, ExactBody):
        return json.dumps(spec.value, sort_keys=True)
    if isinstance(spec, ErrorBody):
        if spec.fields:
            return '{"error": <reason naming ' + " or ".join(spec.fields) + ">}"
        return '{"error": <reason>}'
    if isinstance(spec, HealthBody):
        return '{"ok": true, ...}'
    if spec.route == "/list":
        want = store_list(
            StoreState(MappingProxyType({spec.scope_key: spec.active})),
            spec.scope_key,
            spec.limit,
            spec.query,
        )
        ids = ", ".join(r.id for r in want)
        return f'{{"records": [{ids}]}} (newest first)'
    groups = rank_allowed(list(spec.active), spec.query or "", spec.limit, spec.now)
    shown = " | ".join("{" + ", ".join(sorted(g)) + "}" for g in groups)
    return f'{{"records": <limit {spec.limit} of tie groups {shown or "-"}>}}'


@dataclass(frozen=True)
class Allowed:
    """Every legal answer to one request (MEM-WIRE.*): a non-empty tuple of ``Option``s."""

    options: tuple[Option, ...]
    now: int = 0

    @property
    def statuses(self) -> frozenset[int]:
        """Every status some option allows."""
        return frozenset(o.status for o in self.options)

    def match(
        self, status: int, body: object, id_map: IdMap | None = None
    ) -> tuple[Option, list[str]] | None:
        """The first option admitting ``(status, body)`` and the model ids it showed."""
        for o in self.options:
            if not status_admits(o.status, status):
                continue
            ids = _body_admits(o.body, body, id_map)
            if ids is not None:
                return o, ids
        return None

    def admits(self, status: int, body: object, id_map: IdMap | None = None) -> bool:
        """True when a conforming Worker may answer ``status`` with JSON ``body``."""
        return self.match(status, body, id_map) is not None

    def next_state(
        self, status: int, body: object, id_map: IdMap | None = None
    ) -> StoreState | None:
        """The store state after the target answered ``(status, body)``; ``None`` if illegal.

        For ``/retrieve`` the records the target returned are the ones bumped.
        """
        m = self.match(status, body, id_map)
        if m is None:
            return None
        option, ids = m
        spec = option.body
        if isinstance(spec, RecordsBody) and spec.route == "/retrieve" and spec.before is not None:
            return bump_usage(spec.before, spec.scope_key, ids, self.now)
        return option.state

    def describe(self) -> str:
        """One line per option: ``<status> <body>`` and why it is allowed."""
        lines = []
        for o in self.options:
            note = f"  ({o.note})" if o.note else ""
            lines.append(f"{o.status} {_describe_body(o.body)}{note}")
        return "\n".join(lines)
