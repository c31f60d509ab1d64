"""The checker's speed-ups keep its verdicts: memo keys that collide are never merged, lazily
built successors are all reachable by backtracking, the paired-list fast path still judges
each record, the write-answer fast path and the wire-record fingerprint keep JSON types apart,
the garbage collector is restored after a check, and the incremental synthetic store answers
as the reference store does."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.concurrent import checker
from conformance.concurrent.analysis import MEMORY, to_ops
from conformance.concurrent.checker import Op, check_operations, paused_gc
from conformance.concurrent.memory import state as memory_state
from conformance.concurrent.memory.answers import _freeze, same_json
from conformance.concurrent.memory.model import MemoryModel, Successors, parse_call
from conformance.concurrent.synthetic import synthetic_history
from tests.concurrent.memory_calls import MemoryCalls, counts

SCOPE = "org:memspec-speed-0"
_calls = MemoryCalls(SCOPE, id_base=100)  # the target's ids are not the model's
rec, write, listing, retrieve = _calls.rec, _calls.write, _calls.listing, _calls.retrieve


def mem(*ops: tuple[int, float, float | None, tuple[str, dict[str, Any]], Any]) -> list[Op]:
    out = []
    for i, (client, call, ret, (route, body), answer) in enumerate(ops):
        det = ret is not None and answer is not None
        payload = parse_call(route, body, 200 if det else None, answer, det)
        out.append(Op(i, client, call, ret, payload, SCOPE, optional=ret is not None and not det))
    return out


def verdict(ops: list[Op], model: MemoryModel | None = None) -> str:
    return check_operations(ops, model or MemoryModel(SCOPE)).verdict


@pytest.fixture
def colliding_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every Zobrist term 0: every state of the search hashes alike."""
    monkeypatch.setattr(memory_state, "_z", lambda p, value: 0)
    yield


@pytest.mark.clause("MEM-STORE.13", "MEM-STORE.3")
def test_states_with_one_hash_are_still_told_apart(colliding_keys: None) -> None:
    """With every state hashing alike, the memo (Lowe's configurations and the model's step
    memo) must still tell a bumped record from an unbumped one by equality: an optional
    retrieve that did not take effect is the only explanation of the stale-looking list, and
    it is tried second, after the bumped state was explored and failed."""
    base = [
        (0, 0, 1, write("amber note"), counts(1, 0)),
        (1, 2, 3, retrieve("amber"), None),  # optional: completed, answer unseen
    ]
    s = check_operations(mem(*base), MemoryModel(SCOPE))
    assert s.verdict == "ok"
    unbumped = mem(*base, (0, 4, 5, listing(), {"records": [rec(1, "amber note")]}))
    bumped = mem(*base, (0, 4, 5, listing(), {"records": [rec(1, "amber note", 1, True)]}))
    assert verdict(unbumped) == "ok"
    assert verdict(bumped) == "ok"
    wrong = mem(*base, (0, 4, 5, listing(), {"records": [rec(1, "amber note", 2, True)]}))
    assert verdict(wrong) == "illegal"


@pytest.mark.clause("MEM-CAP.1", "MEM-CAP.4", "MEM-STORE.13")
def test_an_eviction_choice_found_only_by_backtracking_into_lazy_successors() -> None:
    """cap 1: the second write evicts one of two actives (the model has one clock, so either);
    the first choice evicts ``amber`` but the list shows ``amber``: only the second choice,
    built lazily when the search backtracks, explains it."""
    ops = mem(
        (0, 0, 1, write("amber note", cap=1), counts(1, 0)),
        (0, 2, 3, write("birch note", cap=1), counts(1, 0, evicted=1)),
        (0, 4, 5, listing(), {"records": [rec(1, "amber note")]}),
    )
    model = MemoryModel(SCOPE)
    assert verdict(ops, model) == "ok"
    assert not model.incomplete
    both = mem(
        (0, 0, 1, write("amber note", cap=1), counts(1, 0)),
        (0, 2, 3, write("birch note", cap=1), counts(1, 0, evicted=1)),
        (0, 4, 5, listing(), {"records": [rec(1, "amber note"), rec(2, "birch note")]}),
    )
    assert verdict(both) == "illegal"


@pytest.mark.clause()
def test_lazy_successors_are_a_sequence_of_the_built_states() -> None:
    built: list[int] = []

    def build(k: int) -> Any:
        built.append(k)
        return ("state", k)

    succ = Successors(3, build)
    assert len(succ) == 3 and built == []
    assert succ[1] == ("state", 1) and succ[1] == ("state", 1) and built == [1]
    assert list(succ) == [("state", 0), ("state", 1), ("state", 2)]
    assert succ[-1] == ("state", 2) and succ[0:2] == [("state", 0), ("state", 1)]
    assert ("state", 2) in succ and ("state", 3) not in succ
    assert sorted(built) == [0, 1, 2]
    with pytest.raises(IndexError):
        succ[3]


@pytest.mark.clause("MEM-STORE.13", "MEM-WRITE.1")
def test_a_list_of_already_paired_ids_is_still_judged_record_by_record() -> None:
    """Once the target id is paired with the record, a later list showing it takes the fast path
    (no matching): its content must still be the record's as it is now."""
    base = [
        (0, 0, 1, write("amber note"), counts(1, 0)),
        (0, 2, 3, listing(), {"records": [rec(1, "amber note")]}),
        (0, 4, 5, write("amber note"), counts(0, 1)),
    ]
    fresh = mem(*base, (0, 6, 7, listing(), {"records": [rec(1, "amber note", 1)]}))
    stale = mem(*base, (0, 6, 7, listing(), {"records": [rec(1, "amber note", 0)]}))
    assert verdict(fresh) == "ok"
    assert verdict(stale) == "illegal"
    # Filtered: the paired record must also match the query.
    other = mem(*base[:2], (0, 4, 5, listing("birch"), {"records": [rec(1, "amber note")]}))
    assert verdict(other) == "illegal"


@pytest.mark.clause("MEM-STORE.13", "MEM-WIRE.13")
def test_a_record_shown_again_with_a_boolean_use_count_is_not_the_cached_one() -> None:
    """The wire-record caches are keyed by a fingerprint of the JSON value: ``true`` where
    ``1`` was shown before (the same record, the same state) must be judged afresh."""
    base = [
        (0, 0, 1, write("amber note"), counts(1, 0)),
        (0, 2, 3, write("amber note"), counts(0, 1)),
        (0, 4, 5, listing(), {"records": [rec(1, "amber note", 1)]}),
    ]
    assert verdict(mem(*base)) == "ok"
    for uses in (True, 1.5, "1"):
        again = mem(*base, (0, 6, 7, listing(), {"records": [rec(1, "amber note", uses)]}))
        assert verdict(again) == "illegal", uses
    assert _freeze({"a": True}) != _freeze({"a": 1})
    assert _freeze({"a": 1.0}) != _freeze({"a": 1})
    assert _freeze({"a": -0.0}) != _freeze({"a": 0.0})
    assert _freeze({"a": 1, "b": 2}) != _freeze({"b": 2, "a": 1})  # key order kept, as JSON


@pytest.mark.clause("MEM-WIRE.13", "MEM-WRITE.6")
def test_a_write_answer_is_compared_as_json_values() -> None:
    def call(answer: Any) -> Any:
        return parse_call("/write", write("amber note")[1], 200, answer, True)

    model = counts(1, 0)
    assert same_json(call(counts(1, 0)), model)
    assert same_json(call({**counts(1, 0), "inserted": 1.0}), model)  # numbers by value
    assert not same_json(call({**counts(1, 0), "inserted": True}), model)
    assert not same_json(call({**counts(1, 0), "ok": 1}), model)
    assert not same_json(call(counts(0, 1)), model)
    assert not same_json(call({k: v for k, v in counts(1, 0).items() if k != "ok"}), model)
    assert not same_json(call([counts(1, 0)]), model)


@pytest.mark.clause()
def test_the_garbage_collector_is_restored_after_a_check() -> None:
    class Boom:
        def init(self) -> int:
            return 0

        def step(self, state: int, payload: Any) -> list[int]:
            assert not gc.isenabled()
            raise RuntimeError("boom")

    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        check_operations([Op(0, 0, 0, 1, None)], Boom())
    assert gc.isenabled()
    with paused_gc():
        check_operations(mem((0, 0, 1, write("amber note"), counts(1, 0))), MemoryModel(SCOPE))
        assert not gc.isenabled()  # a nested pause leaves the outer one in force
    assert gc.isenabled()


@pytest.mark.clause("MEM-WRITE.1", "MEM-CAP.1", "MEM-STORE.2", "MEM-STORE.7", "MEM-STORE.8")
@pytest.mark.parametrize(
    ("ops", "scopes", "clients", "seed"),
    [(400, 1, 1, 1), (600, 3, 4, 2), (900, 2, 8, 5), (1200, 10, 8, 1)],
)
def test_the_incremental_synthetic_store_answers_as_the_reference_store(
    ops: int, scopes: int, clients: int, seed: int
) -> None:
    """The benchmark's linear-time history builder and the reference store functions give the
    same history (evictions included: the last scope of a round is capped)."""
    fast = synthetic_history(ops, scopes, clients=clients, seed=seed)
    slow = synthetic_history(ops, scopes, clients=clients, seed=seed, incremental=False)
    assert [vars(e) for e in fast] == [vars(e) for e in slow]
    if scopes > 1:
        assert any(e.route == "/write" and e.answer["evicted"] for e in fast)
    assert any(e.route == "/retrieve" and e.answer["records"] for e in fast)
    assert any(e.route == "/forget" and e.answer["forgotten"] for e in fast)


@pytest.mark.clause("MEM-CAP.1", "MEM-STORE.3")
def test_states_one_field_apart_hash_apart() -> None:
    """The Zobrist terms must behave as random: evicting one record or another, bumping one
    record or another -- states that differ in which record changed the same way -- must not
    share a hash (they did with plain tuple hashes, and the memo sets degraded into chains
    of equality checks: a 10k-operation scope at its cap took seconds)."""
    model = MemoryModel(SCOPE)
    texts = [f"w{i} note" for i in range(60)]
    state = model.init()
    for batch in (texts[:30], texts[30:]):
        (state,) = model.step(state, parse_call("/write", write(*batch)[1], None, None, False))
    evictions = model.step(
        state, parse_call("/write", write("x note", cap=60)[1], None, None, False)
    )
    assert len(evictions) == 61
    assert len({hash(s) for s in evictions}) == len(evictions)
    bumped = []
    for i in range(60):
        # A fresh call each time (the last one freed: its id may come back -- the model's
        # step memo is keyed by a call's id and must not answer for a dead call).
        q = parse_call("/retrieve", {**retrieve(f"w{i}")[1], "limit": 1}, None, None, False)
        (after,) = model.step(state, q)
        assert [p for p in range(60) if after.rec(p).use_count] == [i]
        bumped.append(after)
    assert len({hash(s) for s in bumped}) == len({*bumped}) == 60


@pytest.mark.clause()
def test_a_long_search_with_the_collector_paused_does_not_pile_up_cycles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reference judge makes a reference cycle per retrieve answer it matches; with the
    collector paused the search collects its young generation every ``_YOUNG_EVERY``
    configurations, so what is left uncollected is bounded by that, not by the search."""
    monkeypatch.setattr(checker, "_YOUNG_EVERY", 50)
    events = synthetic_history(120, 1, clients=8, seed=3)
    ops = to_ops(events, MEMORY)
    gc.collect()
    model = MemoryModel(events[0].scope)
    with paused_gc():
        result = check_operations(ops, model)
        left = gc.collect()
    assert result.verdict == "ok" and result.states > 2000
    assert left < 500, left  # ~2800 without the periodic collections
