"""The linearizability checker on hand-written histories: a register (the classic cases) and
the memory model (dedup, stale reads, lost usage bumps, indeterminate operations)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

import pytest

from conformance.concurrent.checker import Op, check_operations, check_partitions, overall
from conformance.concurrent.memory.model import MemoryModel, parse_call
from tests.concurrent.memory_calls import MemoryCalls, counts

# --------------------------------------------------------------------------- a register model


class Register:
    """A register with write(v) -> ok, read() -> v, and cas(a, b) -> bool."""

    def init(self) -> int:
        return 0

    def step(self, state: int, p: tuple[Any, ...]) -> list[int]:
        kind = p[0]
        if kind == "w":
            return [p[1]]
        if kind == "r":
            return [state] if p[1] is None or p[1] == state else []
        if kind == "cas":
            _, a, b, ok = p
            if ok is None:  # indeterminate: either outcome
                return [b] if state == a else [state]
            return ([b] if state == a else []) if ok else ([state] if state != a else [])
        raise AssertionError(kind)


def reg(*ops: tuple[int, float, float | None, tuple[Any, ...]]) -> list[Op]:
    return [Op(i, c, call, ret, p) for i, (c, call, ret, p) in enumerate(ops)]


@pytest.mark.clause()
def test_sequential_and_overlapping_register_histories_are_linearizable() -> None:
    h = reg((0, 0, 1, ("w", 1)), (1, 2, 3, ("r", 1)))
    assert check_operations(h, Register()).verdict == "ok"
    # A read overlapping a write may see either value.
    for seen in (0, 1):
        h = reg((0, 0, 10, ("w", 1)), (1, 2, 3, ("r", seen)))
        assert check_operations(h, Register()).verdict == "ok"


@pytest.mark.clause()
def test_a_stale_read_after_a_completed_write_is_rejected() -> None:
    h = reg((0, 0, 1, ("w", 1)), (1, 2, 3, ("r", 0)))
    r = check_operations(h, Register())
    assert r.verdict == "illegal" and 1 in r.blocked


@pytest.mark.clause()
def test_a_lost_update_is_rejected() -> None:
    # Two compare-and-sets from 0 both succeed: one of them must have seen the other's value.
    h = reg((0, 0, 5, ("cas", 0, 1, True)), (1, 0, 5, ("cas", 0, 2, True)))
    assert check_operations(h, Register()).verdict == "illegal"


@pytest.mark.clause()
def test_reads_cannot_see_values_go_back_in_time() -> None:
    # w1 and w2 overlap; once a completed read saw 2, a later read cannot see 1 again.
    h = reg(
        (0, 0, 10, ("w", 1)),
        (1, 0, 10, ("w", 2)),
        (2, 11, 12, ("r", 2)),
        (2, 13, 14, ("r", 1)),
    )
    assert check_operations(h, Register()).verdict == "illegal"


@pytest.mark.clause()
def test_an_indeterminate_operation_may_or_may_not_have_happened() -> None:
    # The write timed out: a later read of 1 means it happened ...
    happened = reg((0, 0, None, ("w", 1)), (1, 5, 6, ("r", 1)))
    assert check_operations(happened, Register()).verdict == "ok"
    # ... and a later read of 0 means it did not happen (yet) — both are allowed.
    not_yet = reg((0, 0, None, ("w", 1)), (1, 5, 6, ("r", 0)), (1, 7, 8, ("r", 1)))
    assert check_operations(not_yet, Register()).verdict == "ok"
    # But it cannot have happened and then un-happened.
    impossible = reg((0, 0, None, ("w", 1)), (1, 5, 6, ("r", 1)), (1, 7, 8, ("r", 0)))
    assert check_operations(impossible, Register()).verdict == "illegal"


def _brute_force(ops: Sequence[Op], model: Register) -> bool:
    """Every order consistent with real time, every subset of indeterminate ops."""
    det = [o for o in ops if o.ret is not None]
    ind = [o for o in ops if o.ret is None]
    for k in range(len(ind) + 1):
        for extra in itertools.combinations(ind, k):
            chosen = det + list(extra)
            for perm in itertools.permutations(chosen):
                ok = all(
                    not (b.ret is not None and b.ret < a.call)
                    for i, a in enumerate(perm)
                    for b in perm[i + 1 :]
                )
                if not ok:
                    continue
                states = [model.init()]
                for o in perm:
                    states = [s2 for s in states for s2 in model.step(s, o.payload)]
                    if not states:
                        break
                if states:
                    return True
    return False


@pytest.mark.clause()
def test_memoization_never_changes_a_verdict_and_cuts_the_search() -> None:
    rng = random.Random(7)
    saved = 0
    for _ in range(150):
        n = rng.randint(2, 6)
        ops = []
        for i in range(n):
            call = rng.uniform(0, 10)
            ret = None if rng.random() < 0.15 else call + rng.uniform(0, 4)
            kind = rng.choice(["w", "r", "cas"])
            if kind == "w":
                p: tuple[Any, ...] = ("w", rng.randint(0, 2))
            elif kind == "r":
                p = ("r", None if ret is None else rng.randint(0, 2))
            else:
                p = (
                    "cas",
                    rng.randint(0, 2),
                    rng.randint(0, 2),
                    None if ret is None else rng.random() < 0.5,
                )
            ops.append(Op(i, i, call, ret, p))
        with_memo = check_operations(ops, Register())
        without = check_operations(ops, Register(), memo=False)
        expected = "ok" if _brute_force(ops, Register()) else "illegal"
        assert with_memo.verdict == without.verdict == expected, ops
        assert with_memo.states <= without.states
        saved += without.states - with_memo.states
    assert saved > 0


@pytest.mark.clause()
def test_a_search_past_its_bound_is_unknown_never_a_verdict() -> None:
    # Many overlapping writes and a read that no order explains: exhausting the search takes
    # more than 10 configurations.
    ops = [Op(i, i, 0, 10, ("w", i % 3)) for i in range(8)]
    ops.append(Op(8, 8, 11, 12, ("r", 7)))
    r = check_operations(ops, Register(), max_states=10)
    assert r.verdict == "unknown" and "bound" in r.reason
    assert check_operations(ops, Register()).verdict == "illegal"


@pytest.mark.clause()
def test_partitions_are_checked_independently() -> None:
    a = [Op(0, 0, 0, 1, ("w", 1), "a"), Op(1, 1, 2, 3, ("r", 1), "a")]
    b = [Op(2, 0, 0, 1, ("w", 2), "b"), Op(3, 1, 2, 3, ("r", 1), "b")]  # stale in b only
    results = check_partitions(a + b, lambda _k: Register())
    assert {r.partition: r.verdict for r in results} == {"a": "ok", "b": "illegal"}
    assert overall(results) == "illegal"


# --------------------------------------------------------------------------- the memory model

SCOPE = "org:memspec-test-0"
_calls = MemoryCalls(SCOPE)
rec, write, listing, retrieve = _calls.rec, _calls.write, _calls.listing, _calls.retrieve


def mem(*ops: tuple[int, float, float | None, tuple[str, dict[str, Any]], Any]) -> list[Op]:
    out = []
    for i, (client, call, ret, (route, body), answer) in enumerate(ops):
        det = ret is not None
        out.append(
            Op(
                i,
                client,
                call,
                ret,
                parse_call(route, body, 200 if det else None, answer, det),
                SCOPE,
            )
        )
    return out


def verdict(ops: list[Op]) -> str:
    return check_operations(ops, MemoryModel(SCOPE)).verdict


@pytest.mark.clause("MEM-STORE.13", "MEM-WRITE.1")
def test_two_concurrent_writes_of_one_fact_insert_it_once() -> None:
    ok = mem(
        (0, 0, 5, write("amber note"), counts(1, 0)),
        (1, 1, 6, write("amber note"), counts(0, 1)),
        (2, 7, 8, listing(), {"records": [rec(1, "amber note", uses=1)]}),
    )
    assert verdict(ok) == "ok"
    double = mem(
        (0, 0, 5, write("amber note"), counts(1, 0)),
        (1, 1, 6, write("amber note"), counts(1, 0)),
    )
    assert verdict(double) == "illegal"


@pytest.mark.clause("MEM-STORE.13", "MEM-STORE.7")
def test_a_stale_list_after_a_completed_write_is_rejected() -> None:
    stale = mem(
        (0, 0, 1, write("amber note"), counts(1, 0)),
        (1, 2, 3, listing(), {"records": []}),
    )
    assert verdict(stale) == "illegal"
    concurrent = mem(
        (0, 0, 4, write("amber note"), counts(1, 0)),
        (1, 2, 3, listing(), {"records": []}),
    )
    assert verdict(concurrent) == "ok"


@pytest.mark.clause("MEM-STORE.13", "MEM-CAP.4")
def test_half_a_batch_is_never_visible() -> None:
    half = mem(
        (0, 0, 10, write("amber note", "birch note"), counts(2, 0)),
        (1, 2, 3, listing(), {"records": [rec(1, "amber note")]}),
    )
    assert verdict(half) == "illegal"


@pytest.mark.clause("MEM-STORE.13", "MEM-STORE.3")
def test_a_lost_usage_bump_is_rejected() -> None:
    base = [
        (0, 0, 1, write("amber note"), counts(1, 0)),
        (1, 2, 5, retrieve("amber"), {"records": [rec(1, "amber note", 1, True)]}),
        (2, 2, 5, retrieve("amber"), {"records": [rec(1, "amber note", 1, True)]}),
    ]
    lost = mem(*base, (0, 6, 7, listing("amber"), {"records": [rec(1, "amber note", 1, True)]}))
    kept = mem(*base, (0, 6, 7, listing("amber"), {"records": [rec(1, "amber note", 2, True)]}))
    assert verdict(lost) == "illegal"
    assert verdict(kept) == "ok"


@pytest.mark.clause("MEM-STORE.13", "MEM-STORE.9")
def test_one_id_for_two_records_is_rejected() -> None:
    reused = mem(
        (0, 0, 1, write("amber note", "birch note"), counts(2, 0)),
        (1, 2, 3, listing("amber"), {"records": [rec(1, "amber note")]}),
        (1, 4, 5, listing("birch"), {"records": [rec(1, "birch note")]}),
    )
    assert verdict(reused) == "illegal"


@pytest.mark.clause("MEM-STORE.13")
def test_an_indeterminate_write_that_must_have_happened_or_must_not_have() -> None:
    must_have = mem(
        (0, 0, None, write("amber note"), None),
        (1, 5, 6, listing(), {"records": [rec(1, "amber note")]}),
    )
    assert verdict(must_have) == "ok"
    must_not_have_yet = mem(
        (0, 0, None, write("amber note"), None),
        (1, 5, 6, write("amber note"), counts(1, 0)),
        (1, 7, 8, listing(), {"records": [rec(1, "amber note", uses=1)]}),
    )
    assert verdict(must_not_have_yet) == "ok"  # it happened after the second write
    neither = mem(
        (0, 0, None, write("amber note"), None),
        (1, 5, 6, listing(), {"records": [rec(1, "amber note")]}),
        (1, 7, 8, write("amber note"), counts(1, 0)),
    )
    assert verdict(neither) == "illegal"


@pytest.mark.clause("MEM-STORE.13", "MEM-STORE.8")
def test_a_forget_racing_a_supersede() -> None:
    def sup(target: str) -> tuple[str, dict[str, Any]]:
        return "/write", {
            "scopeKey": SCOPE,
            "records": [
                {
                    "kind": "fact",
                    "text": "amber fixed",
                    "sourceThreadKey": "t",
                    "supersedes": target,
                }
            ],
        }

    forget = ("/forget", {"scopeKey": SCOPE, "id": f"mem:{SCOPE}:1"})
    prefix = [
        (0, 0, 1, write("amber note"), counts(1, 0)),
        (0, 2, 3, listing(), {"records": [rec(1, "amber note")]}),
    ]
    # Forget first (the supersede then names a dead record and still inserts), or supersede
    # first (the forget finds nothing): each is allowed, both claiming success is not.
    forget_won = mem(*prefix, (1, 4, 8, forget, {"ok": True, "forgotten": True}),
                     (2, 4, 8, sup(f"mem:{SCOPE}:1"), counts(1, 0, 0)))  # fmt: skip
    supersede_won = mem(*prefix, (1, 4, 8, forget, {"ok": True, "forgotten": False}),
                        (2, 4, 8, sup(f"mem:{SCOPE}:1"), counts(1, 0, 1)))  # fmt: skip
    both = mem(*prefix, (1, 4, 8, forget, {"ok": True, "forgotten": True}),
               (2, 4, 8, sup(f"mem:{SCOPE}:1"), counts(1, 0, 1)))  # fmt: skip
    assert verdict(forget_won) == "ok"
    assert verdict(supersede_won) == "ok"
    assert verdict(both) == "illegal"


@pytest.mark.clause("MEM-STORE.13")
def test_a_non_200_answer_to_a_valid_request_is_never_admitted() -> None:
    ops = mem((0, 0, 1, write("amber note"), counts(1, 0)))
    broken = [Op(0, 0, 0, 1, parse_call(*write("amber note"), 500, {"error": "x"}, True), SCOPE)]
    assert verdict(ops) == "ok"
    assert verdict(broken) == "illegal"


@pytest.mark.clause("MEM-WRITE.1", "MEM-WRITE.3", "MEM-WRITE.7", "MEM-CAP.1")
def test_the_checkers_pool_based_write_is_the_reference_store_write() -> None:
    from types import MappingProxyType

    from conformance.concurrent.memory.model import fast_write
    from reference.memory.records import MemoryCandidate
    from reference.memory.store import StoreState, store_write
    from reference.memory.wire import write_response

    rng = random.Random(11)
    texts = ["amber note", "Amber  Note", "birch note", "cedar note", "delta"]
    for _ in range(60):
        state = StoreState(scopes=MappingProxyType({}))
        recs: tuple[Any, ...] = ()
        for step in range(8):
            cands = []
            for _ in range(rng.randint(0, 3)):
                sup = None
                if recs and rng.random() < 0.3:
                    sup = rng.choice(recs).id
                cands.append(MemoryCandidate("fact", rng.choice(texts), "t", None, None, None, sup))
            cap = rng.choice([2, 3, 500])
            state, res = store_write(state, SCOPE, cands, step, cap)
            allowed, answer = fast_write(recs, SCOPE, cands, step, cap)
            assert answer == write_response(res)
            # The model's one clock cannot order by recency: every eviction choice is
            # allowed, the reference's among them.
            assert state.records(SCOPE) in allowed
            recs = state.records(SCOPE)


def capped(*texts: str, cap: int = 2) -> tuple[str, dict[str, Any]]:
    route, body = write(*texts)
    return route, {**body, "cap": cap}


@pytest.mark.clause("MEM-CAP.1", "MEM-CAP.4", "MEM-STORE.13")
def test_eviction_count_is_exact_and_the_scope_is_never_seen_over_its_cap() -> None:
    def counts_ev(ins: int, ev: int) -> dict[str, Any]:
        return {**counts(ins, 0), "evicted": ev}

    first = (0, 0, 1, capped("amber note", "birch note"), counts_ev(2, 0))
    # Two concurrent writes past the cap: each evicts one; the model cannot know which records
    # were least recently used (one clock), so any two survivors are allowed ...
    race = [
        (1, 2, 6, capped("cedar note"), counts_ev(1, 1)),
        (2, 2, 6, capped("delta note"), counts_ev(1, 1)),
    ]
    for kept in itertools.combinations(["amber note", "birch note", "cedar note", "delta note"], 2):
        numbers = {"amber note": 1, "birch note": 2}
        shown = [rec(numbers.get(t, 3 + i), t) for i, t in enumerate(kept)]
        ops = mem(first, *race, (0, 7, 8, listing(), {"records": shown}))
        # ids: the checker pairs them by content; any two distinct ids are allowed
        assert verdict(ops) == "ok", kept
    # ... but never three actives at once, nor a count that is not the excess.
    three = [rec(1, "amber note"), rec(2, "birch note"), rec(3, "cedar note")]
    assert verdict(mem(first, *race, (0, 7, 8, listing(), {"records": three}))) == "illegal"
    wrong = [(1, 2, 6, capped("cedar note"), counts_ev(1, 0)), race[1]]
    assert verdict(mem(first, *wrong)) == "illegal"
