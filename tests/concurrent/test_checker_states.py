"""The memory model's search states and the checker's memo key: an incrementally built state
is the state built from scratch, states that differ in anything the model compares are never
merged, and the memoized search agrees with an exhaustive one on random histories."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from conformance.concurrent.analysis import MEMORY, _blurred, to_ops
from conformance.concurrent.checker import Op, check_operations
from conformance.concurrent.memory.model import MemoryModel, State, parse_call
from conformance.concurrent.synthetic import synthetic_history

SCOPE = "org:memspec-bench-0"


def _call(route: str, body: dict[str, Any], answer: Any = None) -> Any:
    det = answer is not None
    return parse_call(route, body, 200 if det else None, answer, det)


def _write(*texts: str, cap: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scopeKey": SCOPE,
        "records": [{"kind": "fact", "text": t, "sourceThreadKey": "t"} for t in texts],
    }
    if cap is not None:
        body["cap"] = cap
    return body


@pytest.mark.clause("MEM-STORE.13")
def test_incremental_states_are_the_states_built_from_scratch() -> None:
    """Every successor the model builds (chunk splices and Zobrist sums) equals, and hashes
    as, the state built from its records and pairings in one go; walks long enough to cross
    several chunks."""
    rng = random.Random(5)
    model = MemoryModel(SCOPE)
    words = [f"w{i}" for i in range(300)]
    for _ in range(2):
        frontier = [model.init()]
        for _step in range(50):
            state = rng.choice(frontier)
            kind = rng.random()
            if kind < 0.6:
                texts = [f"{rng.choice(words)} note" for _ in range(rng.randint(2, 6))]
                cap = rng.choice([None, None, None, 150, 40, 5])
                succ = model.step(state, _call("/write", _write(*texts, cap=cap)))
            elif kind < 0.8:
                q = rng.choice(words)
                body = {"scopeKey": SCOPE, "query": q, "limit": 3}
                succ = model.step(state, _call("/retrieve", body))
            else:
                n = rng.randint(1, max(1, state.n))
                body = {"scopeKey": SCOPE, "id": f"mem:{SCOPE}:{n}"}
                succ = model.step(state, _call("/forget", body))
            assert succ
            for s in succ:
                tids = [s.tid(p) for p in range(s.n)]
                fresh = State.build(s.records(), tids)
                assert fresh == s and hash(fresh) == hash(s)
                assert s.active == fresh.active and s.live == fresh.live
            frontier = list(succ)
        assert max(s.n for s in frontier) > 64  # crossed a chunk boundary


@pytest.mark.clause("MEM-STORE.13")
def test_states_that_differ_in_a_use_count_or_a_pairing_are_different_keys() -> None:
    model = MemoryModel(SCOPE)
    (s,) = model.step(model.init(), _call("/write", _write(*(f"t{i} note" for i in range(40)))))
    (s,) = model.step(s, _call("/write", _write(*(f"u{i} note" for i in range(30)))))
    recs = list(s.records())
    bumped = list(recs)
    bumped[67] = replace(recs[67], use_count=1)
    paired: list[str | None] = [None] * len(recs)
    paired[67] = "mem:x:1"
    base = State.build(recs)
    assert base == s
    for other in (State.build(bumped), State.build(recs, paired)):
        assert other != base
        assert len({(1, base), (1, other)}) == 2


@pytest.mark.clause("MEM-STORE.13", "MEM-STORE.3")
def test_a_retrieve_that_may_not_have_happened_is_not_merged_with_one_that_did() -> None:
    """An optional retrieve linearized as "took effect" (a bump) and as "did not" reach the
    same set of linearized operations with states that differ only in a use count: a memo key
    blind to use counts would skip the second and call this history illegal."""
    amber = {"kind": "fact", "text": "amber note", "sourceThreadKey": "t"}
    shown = {
        "id": f"mem:{SCOPE}:1", "scopeKey": SCOPE, "keywords": ["amber", "note"],
        "createdAt": 1, "useCount": 0, "status": "active", **amber,
    }  # fmt: skip
    ok = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
    retrieve = {"scopeKey": SCOPE, "query": "amber", "limit": 5}
    ops = [
        Op(0, 0, 0, 1, _call("/write", _write("amber note"), ok), SCOPE),
        Op(1, 1, 2, 3, _call("/retrieve", retrieve), SCOPE, optional=True),
        Op(2, 0, 4, 5, _call("/list", {"scopeKey": SCOPE, "limit": 50}, {"records": [shown]}),
           SCOPE),
    ]  # fmt: skip
    assert check_operations(ops, MemoryModel(SCOPE)).verdict == "ok"
    bumped = {**shown, "useCount": 1, "lastUsedAt": 2}
    ops[2] = replace(
        ops[2], payload=_call("/list", {"scopeKey": SCOPE, "limit": 50}, {"records": [bumped]})
    )
    assert check_operations(ops, MemoryModel(SCOPE)).verdict == "ok"


def _exhaustive(ops: Sequence[Op]) -> bool:
    """Every order consistent with real time (and every subset of the indeterminate ops),
    each optional op also as "never took effect"; no memo anywhere."""
    det = [o for o in ops if o.ret is not None]
    ind = [o for o in ops if o.ret is None]
    for k in range(len(ind) + 1):
        for extra in itertools.combinations(ind, k):
            for perm in itertools.permutations(det + list(extra)):
                if any(
                    b.ret is not None and b.ret < a.call
                    for i, a in enumerate(perm)
                    for b in perm[i + 1 :]
                ):
                    continue
                model = MemoryModel(SCOPE, memo=False)
                states = [model.init()]
                for o in perm:
                    nxt = [s2 for s in states for s2 in model.step(s, o.payload)]
                    if o.optional:
                        nxt.extend(states)
                    states = list(dict.fromkeys(nxt))
                    if not states:
                        break
                if states:
                    return True
    return False


def _perturb(rng: random.Random, answer: Any) -> Any:
    """A plausible wrong answer: a count, a use count or a record off."""
    if not isinstance(answer, dict):
        return answer
    if "records" in answer and answer["records"]:
        recs = [dict(r) for r in answer["records"]]
        i = rng.randrange(len(recs))
        if rng.random() < 0.5:
            recs[i]["useCount"] = recs[i]["useCount"] + rng.choice((1, -1))
        else:
            del recs[i]
        return {**answer, "records": recs}
    if "inserted" in answer:
        return {**answer, "inserted": answer["deduped"], "deduped": answer["inserted"]}
    if "forgotten" in answer:
        return {**answer, "forgotten": not answer["forgotten"]}
    return answer


@pytest.mark.clause("MEM-STORE.13")
def test_the_memoized_search_agrees_with_an_exhaustive_one_on_random_histories() -> None:
    """Random short histories of one scope (the workload's shape, some answers made wrong,
    some operations blurred or left without an answer): the checker with its memo, without
    it, and an exhaustive enumeration give one verdict."""
    rng = random.Random(3)
    verdicts = {"ok": 0, "illegal": 0}
    for seed in range(45):
        events = synthetic_history(6, 1, clients=3, seed=seed)[:5]
        for e in events:
            e.scope = SCOPE
            if isinstance(e.request, dict):
                e.request = {**e.request, "scopeKey": SCOPE}
        ops = to_ops(events, MEMORY)
        ops = [replace(o, partition=SCOPE) for o in ops]
        out = []
        for o in ops:
            roll = rng.random()
            if roll < 0.15:
                o = _blurred(o, MEMORY)
            elif roll < 0.22:
                o = replace(o, ret=None, payload=replace(o.payload, determinate=False,
                                                         status=None, answer=None))  # fmt: skip
            elif roll < 0.4:
                o = replace(o, payload=replace(o.payload, answer=_perturb(rng, o.payload.answer)))
            out.append(o)
        with_memo = check_operations(out, MemoryModel(SCOPE)).verdict
        without = check_operations(out, MemoryModel(SCOPE, memo=False), memo=False).verdict
        expected = "ok" if _exhaustive(out) else "illegal"
        assert with_memo == without == expected, (seed, out)
        verdicts[expected] += 1
    assert verdicts["ok"] >= 10 and verdicts["illegal"] >= 10, verdicts
