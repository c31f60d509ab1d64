"""MEM-CAP.1-3: plan_eviction and the eviction_allowed predicate."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.engine import DEFAULT_SCOPE_CAP, eviction_key, plan_eviction
from reference.memory.judge import eviction_allowed
from reference.memory.records import STATUSES, MemoryRecord
from tests.common.memory_strategies import T0, make_record, records

caps = st.integers(0, 14)


@pytest.mark.clause("MEM-CAP.1", "MEM-CAP.2", "MEM-CAP.3")
@given(records(max_size=14, statuses=STATUSES), caps)
def test_plan_eviction_leaves_exactly_cap_active_in_lru_order(
    recs: list[MemoryRecord], cap: int
) -> None:
    evicted = plan_eviction(recs, cap)
    live = [r for r in recs if r.status == "active"]
    by_id = {r.id: r for r in recs}
    assert len(evicted) == max(0, len(live) - cap)
    assert len(set(evicted)) == len(evicted)
    assert all(by_id[i].status == "active" for i in evicted)  # dead records are free
    keys = [eviction_key(by_id[i]) for i in evicted]
    assert keys == sorted(keys)  # eviction order: LRU first, then older created_at
    kept = [r for r in live if r.id not in evicted]
    assert all(eviction_key(k) >= max(keys) for k in kept) if keys else True
    assert eviction_allowed(recs, cap, evicted)


@pytest.mark.clause("MEM-CAP.2")
def test_lru_uses_last_used_then_created() -> None:
    a = make_record("a", created_at=T0, last_used_at=T0 + 50)  # used late
    b = make_record("b", created_at=T0 + 10)  # never used, created after a
    c = make_record("c", created_at=T0 + 5, last_used_at=T0 + 10)  # ties b on use time, older
    assert plan_eviction([a, b, c], 1) == ["c", "b"]
    assert plan_eviction([a, b, c], 3) == []
    assert DEFAULT_SCOPE_CAP == 500


@pytest.mark.clause("MEM-CAP.2")
@given(records(max_size=10, statuses=STATUSES), caps, st.randoms(use_true_random=False))
def test_eviction_allowed_accepts_exactly_the_legal_sets(
    recs: list[MemoryRecord], cap: int, rnd: random.Random
) -> None:
    live = [r for r in recs if r.status == "active"]
    need = max(0, len(live) - cap)
    # any random subset of actives of the right size is legal iff no kept key < evicted key
    pick = rnd.sample([r.id for r in live], need)
    by_id = {r.id: r for r in recs}
    legal = all(
        eviction_key(k) >= eviction_key(by_id[e]) for e in pick for k in live if k.id not in pick
    )
    assert eviction_allowed(recs, cap, pick) == legal
    if live:
        assert not eviction_allowed(recs, cap, [*pick, "mem:none:1"])
        if need < len(live):
            extra = next(r.id for r in live if r.id not in pick)
            assert not eviction_allowed(recs, cap, [*pick, extra])
    dead = [r.id for r in recs if r.status != "active"]
    if dead and need:
        assert not eviction_allowed(recs, cap, [*pick[:-1], dead[0]])
