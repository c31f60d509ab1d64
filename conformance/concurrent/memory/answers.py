"""Judging a memory answer for the memory model: the model's constants (one clock, the bound
on enumerated cuts), a state's id bijection as the wire judge's ``IdMap`` (:class:`IdView`),
the answer's records validated and cached by value, the sets of ids an unseen retrieve may
have returned, and a bipartite matching of a list's records to the model's."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterator, Mapping, Sequence, ValuesView

from conformance.concurrent.memory.calls import MemoryCall
from conformance.concurrent.memory.hints import MemoryHints, norm_of, tokens_of
from conformance.concurrent.memory.state import Draft, State
from reference.memory.judge import rank_allowed
from reference.memory.records import MemoryRecord
from reference.memory.store import record_id
from reference.memory.wire import RetrieveBody, _parse_records_body, _shows, json_equal

#: The model's one clock value: every event happens "now" (times are not compared).
MODEL_NOW = 1_000_000
#: An indeterminate retrieve whose tied last group could be cut in more ways than this is
#: modelled by its first ``MAX_CUTS`` choices plus "did not happen" (the search may then
#: miss an explanation: reported linearizable histories stay sound, a non-linearizable
#: verdict is only reported for histories without such a cut).
MAX_CUTS = 64


class IdView(Mapping[str, str]):
    """A state's id bijection as the ``IdMap`` (model id -> target id) the wire judge reads,
    with O(1) lookups both ways (``values()`` supports a fast ``in``)."""

    def __init__(self, model: MemoryHints, state: State | Draft) -> None:
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

    def values(self) -> TargetIds:
        return TargetIds(self)


class TargetIds(ValuesView[str]):
    def __init__(self, view: IdView) -> None:
        super().__init__(view)
        self.view = view

    def __contains__(self, t: object) -> bool:
        return isinstance(t, str) and self.view.model.paired(self.view.state, t) is not None


def _freeze(v: object) -> str:
    """A hashable fingerprint of a JSON value that keeps types apart: ``repr`` of the parsed
    value (dicts, lists, strings, ints, floats, booleans, ``None``) is a Python literal that
    reads back as an equal value *of the same types* -- ``True`` is not ``1``, ``1.0`` is not
    ``1``, ``-0.0`` is not ``0.0`` -- so two values with one fingerprint are the same JSON
    (object key order included, as the JSON text would).  Twice as fast as ``json.dumps``."""
    return repr(v)


#: Caches over *values* (a wire record's frozen content, a model record object kept alive with
#: its entry): the same record shows unchanged in many answers.
_VALID: dict[tuple[str, Hashable], bool] = {}
_CONTENT: dict[tuple[int, Hashable], tuple[MemoryRecord, bool]] = {}
_CACHE_MAX = 200_000


def wire_records(
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


def same_json(call: MemoryCall, answer: object) -> bool:
    """``json_equal(call.answer, answer)``, with a fast path for the flat objects of write and
    forget answers: same keys, and every value of the same scalar type on both sides, are
    equal JSON values exactly when they are equal Python values."""
    got = call.answer
    if type(got) is dict and type(answer) is dict and got.keys() == answer.keys():
        for k, v in got.items():
            w = answer[k]
            if type(v) is not type(w) or type(v) not in _SCALARS:
                return json_equal(got, answer)
            if v != w:
                return False
        return True
    return json_equal(got, answer)


_SCALARS = (int, bool, str, type(None))


def shows_here(rec: MemoryRecord, w: Mapping[str, object], frozen: Hashable, ids: IdView) -> bool:
    """``_shows(rec, w, bumped=False, id_map=ids)``: its content part (``id_map=None``)
    cached per (record, wire content), then the same id checks through the bijection."""
    if not _content_shows(rec, w, frozen):
        return False
    wid = w.get("id")
    if rec.id in ids:
        if ids[rec.id] != wid:
            return False
    elif wid in ids.values():
        return False
    sup = rec.supersedes
    return sup is None or sup not in ids or w.get("supersedes") == ids[sup]


def shows_paired(rec: MemoryRecord, w: Mapping[str, object], frozen: Hashable, ids: IdView) -> bool:
    """``shows_here`` for a record already paired with the wire record's id (so the id checks
    hold): its content, then its supersedes pointer through the bijection."""
    if not _content_shows(rec, w, frozen):
        return False
    sup = rec.supersedes
    return sup is None or sup not in ids or w.get("supersedes") == ids[sup]


def _content_shows(rec: MemoryRecord, w: Mapping[str, object], frozen: Hashable) -> bool:
    """``_shows(rec, w, bumped=False, id_map=None)``, cached per (record, wire content)."""
    key = (id(rec), frozen)
    hit = _CONTENT.get(key)
    if hit is None or hit[0] is not rec:
        if len(_CONTENT) > _CACHE_MAX:
            _CONTENT.clear()
        hit = _CONTENT[key] = (rec, _shows(rec, w, bumped=False, id_map=None))
    return hit[1]


_WIRE: dict[int, tuple[MemoryCall, list[tuple[Mapping[str, object], Hashable]] | None]] = {}


def clear_caches() -> None:
    """Forget every cached judgement (the benchmark measures each history from cold)."""
    for cache in (_VALID, _CONTENT, _WIRE):
        cache.clear()
    tokens_of.cache_clear()
    norm_of.cache_clear()


def possible_answers(
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


def bipartite(options: Sequence[Sequence[int]]) -> list[int] | None:
    """One distinct member per position, each among its options (Kuhn's augmenting paths),
    or ``None`` when there is none."""
    owner: dict[int, int] = {}  # member -> position
    for i in range(len(options)):
        if not _augment(options, owner, i, set()):
            return None
    by_position = {i: m for m, i in owner.items()}
    return [by_position[i] for i in range(len(options))]


def _augment(
    options: Sequence[Sequence[int]], owner: dict[int, int], i: int, seen: set[int]
) -> bool:
    """Place position ``i``, moving earlier positions along an augmenting path.  (A module
    function, not a recursive closure: a closure that calls itself is a reference cycle, and
    the search runs with the cyclic collector paused.)"""
    for m in options[i]:
        if m in seen:
            continue
        seen.add(m)
        if m not in owner or _augment(options, owner, owner[m], seen):
            owner[m] = i
            return True
    return False
