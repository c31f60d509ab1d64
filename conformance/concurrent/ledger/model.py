"""The ledger binding as the checker's sequential specification: an adapter to ``reference.ledger``.

The one module that knows how the reference ledger is called (``reference.ledger.wire.handle``
and ``record_to_wire``); re-point it here if the judge moves.  Covered methods (the concurrent
workload's subset): ``save``, ``list`` (active), ``supersede``, ``delete`` and merges through
``_test/consolidate`` (judged with ``reference.ledger.wire.allowed``: every result the batch
may report, the counts compared exactly).

Compared: the HTTP status and, for a refusal, the error code (one the model allows) and the
exact message where the model fixes it (a budget refusal names the held count); for a record,
every wire field but the times exactly, ``validTo`` present/absent, ``id`` and ``supersedes``
through a model-id ↔ target-id bijection carried in the search state.  A listing is compared
as a set: the model runs on one constant clock, so every record has the same ``updatedAt``
and the spec leaves equal-``updatedAt`` runs unordered (LED-LIST.2).  Times are not compared.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reference.ledger.outcome import Ok, Refused
from reference.ledger.records import LedgerState, empty_state
from reference.ledger.wire import allowed, handle, record_to_wire

#: The model's one clock value (times are not compared).
MODEL_NOW = 1_700_000_000_000
PREFIX = "/ledger/"
CONSOLIDATE = "_test/consolidate"
CODE_STATUS = {-32602: 400, 1000: 409, -32601: 404}
#: Wire fields compared exactly (``id``/``supersedes`` via the bijection, times not at all).
_EXACT = ("scopeKey", "kind", "body", "provenance", "status", "sourceSessionId", "conflictGroup")

Pairs = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class LedgerCall:
    method: str
    params: dict[str, Any]
    status: int | None
    answer: Any
    determinate: bool

    def __hash__(self) -> int:
        return id(self)


def parse_call(
    route: str, request: Any, status: int | None, answer: Any, determinate: bool
) -> LedgerCall:
    return LedgerCall(route.removeprefix(PREFIX), dict(request), status, answer, determinate)


class State:
    __slots__ = ("ledger", "pairs", "_hash")

    def __init__(self, ledger: LedgerState, pairs: Pairs) -> None:
        self.ledger = ledger
        self.pairs = pairs
        self._hash = hash((ledger, pairs))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self._hash == other._hash
            and self.ledger == other.ledger
            and self.pairs == other.pairs
        )


def _same_record(model: dict[str, Any], wire: Any, pairs: dict[str, str]) -> bool:
    if not isinstance(wire, dict) or not isinstance(wire.get("id"), str):
        return False
    mid = model["id"]
    if mid in pairs:
        if pairs[mid] != wire["id"]:
            return False
    elif wire["id"] in pairs.values():
        return False
    for f in _EXACT:
        if model.get(f) != wire.get(f):
            return False
    if ("validTo" in model) != ("validTo" in wire):
        return False
    sup = model.get("supersedes")
    if (sup is None) != (wire.get("supersedes") is None):
        return False
    return not (sup is not None and sup in pairs and pairs[sup] != wire.get("supersedes"))


def _extend(pairs: Pairs, new: Sequence[tuple[str, str]]) -> Pairs | None:
    out = set(pairs) | set(new)
    if len({m for m, _ in out}) != len(out) or len({t for _, t in out}) != len(out):
        return None  # an id for two records, or two ids for one (LED-REC.3)
    return frozenset(out)


class LedgerModel:
    """The account scope's sequential specification for the checker."""

    def __init__(self, initial: LedgerState | None = None) -> None:
        self.initial = initial or empty_state()
        # (id of the call, state) -> (the call, successors): the call is kept with its entry,
        # so that its id is not reused by another call while the entry lives.
        self._memo: dict[tuple[int, State], tuple[LedgerCall, list[State]]] = {}

    def init(self) -> State:
        return State(self.initial, frozenset())

    def step(self, state: State, call: LedgerCall) -> list[State]:
        key = (id(call), state)
        hit = self._memo.get(key)
        if hit is None or hit[0] is not call:
            hit = self._memo[key] = (call, self._step(state, call))
        return hit[1]

    def _translations(self, state: State, call: LedgerCall) -> list[tuple[dict[str, Any], Pairs]]:
        if call.method == CONSOLIDATE:
            return self._merge_translations(state, call)
        rid = call.params.get("recordId")
        if not isinstance(rid, str):
            return [(call.params, state.pairs)]
        to_model = {t: m for m, t in state.pairs}
        if rid in to_model:
            return [({**call.params, "recordId": to_model[rid]}, state.pairs)]
        paired = {m for m, _ in state.pairs}
        out = [({**call.params, "recordId": f"ghost-{rid}"}, state.pairs)]
        for r in state.ledger.records:
            if r.id not in paired:
                out.append(({**call.params, "recordId": r.id}, state.pairs | {(r.id, rid)}))
        return out

    def _merge_translations(
        self, state: State, call: LedgerCall
    ) -> list[tuple[dict[str, Any], Pairs]]:
        """A batch's target ids read as model ids: a paired id as its record; an id the client
        never saw (``ffffffff-…``) as itself, naming nothing; any other unpaired id (only in a
        shrunk sub-history) as any unpaired record or nothing."""
        ops = call.params.get("operations")
        if not isinstance(ops, list):
            return [(call.params, state.pairs)]
        to_model = {t: m for m, t in state.pairs}
        paired = {m for m, _ in state.pairs}
        unpaired = [r.id for r in state.ledger.records if r.id not in paired]
        sent = [
            t
            for o in ops
            if isinstance(o, dict) and isinstance(o.get("targets"), list)
            for t in o["targets"]
            if isinstance(t, str)
        ]
        unknown = [t for t in dict.fromkeys(sent) if t not in to_model]
        choices = [[t] if t.startswith("ffffffff") else [t, *unpaired] for t in unknown]
        out = []
        for combo in itertools.islice(itertools.product(*choices), 64):
            real = [m for t, m in zip(unknown, combo, strict=True) if m != t]
            if len(set(real)) != len(real):
                continue
            mapping = {**to_model, **dict(zip(unknown, combo, strict=True))}
            new_ops = [
                {**o, "targets": [mapping.get(t, t) if isinstance(t, str) else t
                                  for t in o["targets"]]}
                if isinstance(o, dict) and isinstance(o.get("targets"), list)
                else o
                for o in ops
            ]  # fmt: skip
            added = {(m, t) for t, m in zip(unknown, combo, strict=True) if m != t}
            out.append(({**call.params, "operations": new_ops}, state.pairs | added))
        return out

    def _step(self, state: State, call: LedgerCall) -> list[State]:
        out: list[State] = []
        for params, pairs in self._translations(state, call):
            if call.method == CONSOLIDATE:
                # A batch's open points (which results its elements may have): every one.
                answers = allowed(state.ledger, call.method, params, MODEL_NOW)
            else:
                answers = [handle(state.ledger, call.method, params, MODEL_NOW)]
            for after, outcome in answers:
                if not call.determinate:
                    out.append(State(after, pairs))
                    continue
                judged = self._judge(outcome, call, pairs)
                if judged is not None:
                    out.append(State(after, judged))
        return list(dict.fromkeys(out))

    def _judge(self, outcome: Ok | Refused, call: LedgerCall, pairs: Pairs) -> Pairs | None:
        body = call.answer
        if isinstance(outcome, Refused):
            if call.status != CODE_STATUS.get(outcome.code) or not isinstance(body, dict):
                return None
            err = body.get("error")
            if not isinstance(err, dict) or not isinstance(err.get("code"), int):
                return None
            message = err.get("message")
            ok = outcome.admits(err["code"], message if isinstance(message, str) else None)
            if ok and CODE_STATUS.get(err["code"]) == call.status:
                return pairs
            return None
        if call.status != 200:
            return None
        result = outcome.result
        if call.method == CONSOLIDATE:
            counts = ("applied", "invalid", "refused", "declined")
            if not isinstance(body, dict) or not isinstance(result, dict):
                return None
            same = all(type(body.get(k)) is int and body.get(k) == result.get(k) for k in counts)
            return pairs if same else None
        if call.method == "memory/list_memory_records":
            assert isinstance(result, dict)
            return self._listing(result["records"], body, pairs)
        assert isinstance(result, dict)
        if not _same_record(result, body, dict(pairs)):
            return None
        new = [(result["id"], body["id"])]
        if result.get("supersedes") is not None and isinstance(body.get("supersedes"), str):
            new.append((result["supersedes"], body["supersedes"]))
        return _extend(pairs, new)

    @staticmethod
    def _listing(expected: list[dict[str, Any]], body: Any, pairs: Pairs) -> Pairs | None:
        if not isinstance(body, dict) or not isinstance(body.get("records"), list):
            return None
        wire = body["records"]
        if len(wire) != len(expected):
            return None
        known = dict(pairs)
        # Equal updatedAt (one model clock): any order.  Match known ids first, then content.
        for perm in _assignments(expected, wire, known):
            new = [(m["id"], w["id"]) for m, w in perm]
            extended = _extend(pairs, new)
            if extended is not None:
                return extended
        return None


def _assignments(
    expected: list[dict[str, Any]], wire: list[Any], known: dict[str, str]
) -> list[list[tuple[dict[str, Any], dict[str, Any]]]]:
    """Pairings of expected and wire records that match (at most a few, by content)."""
    options = [[w for w in wire if _same_record(m, w, known)] for m in expected]
    if any(not o for o in options):
        return []
    out = []
    for combo in itertools.islice(itertools.product(*options), 16):
        if len({id(w) for w in combo}) == len(combo):
            out.append(list(zip(expected, combo, strict=True)))
    return out


#: Calls made (sequentially) before a concurrent ledger round, on the target and the model:
#: an empty ledger (needs the ``ledger.test_control`` capability) with a budget of 2, so that
#: budget races happen within a few saves.  ``None``: the method is called without params.
SETUP: tuple[tuple[str, dict[str, Any] | None], ...] = (
    ("_test/reset", None),
    ("memory/update_consolidation_settings", {"mode": "off", "maxRecords": 2}),
)


def initial_state() -> LedgerState:
    state = empty_state()
    for method, params in SETUP:
        state, outcome = handle(state, method, params, MODEL_NOW)
        assert isinstance(outcome, Ok), outcome
    return state


def make_model(_scope: str) -> LedgerModel:
    return LedgerModel(initial_state())


def record_of(rec_answer: Any) -> dict[str, Any]:
    return rec_answer if isinstance(rec_answer, dict) else {}


__all__ = ["LedgerCall", "LedgerModel", "MODEL_NOW", "make_model", "parse_call", "record_to_wire"]
