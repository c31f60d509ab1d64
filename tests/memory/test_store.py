"""MEM-STORE / MEM-WRITE / MEM-CAP / MEM-FLAG / MEM-SEAM on the in-process and null store models."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.engine import Dedup, plan_write, rank_records
from reference.memory.injection import inject
from reference.memory.pool import memory_context_block, pool_records
from reference.memory.records import MemoryCandidate, MemoryRecord
from reference.memory.scopes import request_scope_keys
from reference.memory.store import (
    WriteResult,
    active_records,
    all_records,
    empty_store,
    memory_enabled,
    null_forget,
    null_list,
    null_retrieve,
    null_write,
    parse_record_id,
    store_forget,
    store_list,
    store_retrieve,
    store_write,
)
from tests.common.memory_strategies import DAY, T0, candidates, query_text

ORG = "org:acme"


def c(
    text: str, supersedes: str | None = None, keywords: tuple[str, ...] | None = None
) -> MemoryCandidate:
    return MemoryCandidate(
        kind="fact",
        text=text,
        source_thread_key="slack:C1:1",
        keywords=keywords,
        supersedes=supersedes,
    )


def ids(recs: Iterable[MemoryRecord]) -> list[str]:
    return [r.id for r in recs]


# ------------------------------------------------------------------ flag, null store, seam


@pytest.mark.clause("MEM-FLAG.1")
def test_memory_is_off_unless_enabled_is_true() -> None:
    assert not memory_enabled(None)
    assert not memory_enabled({})
    assert not memory_enabled({"memory": {}})
    assert not memory_enabled({"memory": None})
    for v in (False, "true", 1, "yes", None):
        assert not memory_enabled({"memory": {"enabled": v}})
    assert memory_enabled({"memory": {"enabled": True}})


@pytest.mark.clause("MEM-FLAG.2")
@given(st.lists(candidates(), max_size=5), query_text, st.integers(1, 50))
def test_null_store_answers_nothing(cands: list[MemoryCandidate], query: str, limit: int) -> None:
    assert null_write(ORG, cands) == WriteResult(0, 0, 0, 0)
    assert null_retrieve(ORG, query, limit) == []
    assert null_list(ORG, limit) == [] and null_list(ORG, limit, query) == []
    assert null_forget(ORG, "mem:org:acme:1") is False


@pytest.mark.clause("MEM-FLAG.2", "MEM-FLAG.3")
@given(st.lists(candidates(), max_size=5), query_text)
def test_memory_off_pipeline_leaves_the_request_byte_identical(
    cands: list[MemoryCandidate], query: str
) -> None:
    req = {
        "model": "m",
        "system": "agent",
        "messages": [{"role": "user", "content": query}],
        "tools": [],
    }
    before = json.dumps(req)
    null_write(ORG, cands)
    keys = request_scope_keys("acme", user_id="slack:U1")
    block = memory_context_block({k: null_retrieve(k, query, 8) for k in keys}, query, T0)
    assert block is None
    assert json.dumps(inject(req, block, "anthropic")) == before


@pytest.mark.clause("MEM-SEAM.1")
def test_null_and_in_process_stores_share_one_interface() -> None:
    pairs: list[tuple[Callable[..., object], Callable[..., object], list[str]]] = [
        (null_retrieve, store_retrieve, ["scope_key", "query", "limit"]),
        (null_write, store_write, ["scope_key", "candidates"]),
        (null_list, store_list, ["scope_key", "limit", "query"]),
        (null_forget, store_forget, ["scope_key", "record_id"]),
    ]
    for null_fn, model_fn, params in pairs:
        assert list(inspect.signature(null_fn).parameters) == params
        model_params = list(inspect.signature(model_fn).parameters)
        assert [p for p in model_params if p in params] == params


@pytest.mark.clause("MEM-SEAM.2", "MEM-WRITE.7")
@given(
    st.lists(
        candidates(
            st.one_of(
                st.none(), st.just(""), st.sampled_from([f"mem:{ORG}:{i}" for i in range(1, 8)])
            )
        ),
        max_size=8,
    )
)
def test_store_write_follows_plan_write_candidate_by_candidate(
    cands: list[MemoryCandidate],
) -> None:
    state, res = store_write(empty_store(), ORG, cands[:3], T0)
    before = active_records(state, ORG)
    state2, res = store_write(state, ORG, cands, T0 + 1000)
    # replay the plan by hand against the evolving active set
    active = list(before)
    n_new = len(all_records(state, ORG))
    inserted = deduped = superseded = 0
    for cand in cands:
        plan = plan_write(active, cand)
        if isinstance(plan, Dedup):
            deduped += 1
        else:
            if plan.supersede_id:
                active = [r for r in active if r.id != plan.supersede_id]
                superseded += 1
            n_new += 1
            minted = next(r for r in all_records(state2, ORG) if r.id == f"mem:{ORG}:{n_new}")
            active.append(dataclasses.replace(minted, status="active"))  # as it was when minted
            inserted += 1
    assert res == WriteResult(inserted, deduped, superseded, 0)
    assert ids(active_records(state2, ORG)) == ids(active)


@pytest.mark.clause("MEM-SEAM.2", "MEM-STORE.2", "MEM-STORE.3")
@given(st.lists(candidates(), max_size=10), query_text, st.integers(1, 6), st.integers(0, 20 * DAY))
def test_store_retrieve_is_rank_records_plus_bump(
    cands: list[MemoryCandidate], query: str, limit: int, dt: int
) -> None:
    state, _ = store_write(empty_store(), ORG, cands, T0)
    now = T0 + dt
    active = active_records(state, ORG)
    expected = rank_records(active, query, limit, now)
    state2, got = store_retrieve(state, ORG, query, limit, now)
    assert ids(got) == ids(expected)
    assert all(
        r.last_used_at == now and r.use_count == e.use_count + 1
        for r, e in zip(got, expected, strict=True)
    )
    returned = set(ids(got))
    for old, new in zip(all_records(state, ORG), all_records(state2, ORG), strict=True):
        if old.id in returned:
            assert (new.last_used_at, new.use_count) == (now, old.use_count + 1)
        else:
            assert new == old


# ------------------------------------------------------------------ write semantics


@pytest.mark.clause("MEM-WRITE.1", "MEM-WRITE.6", "MEM-RECORD.4", "MEM-STORE.11")
def test_write_batch_dedups_against_its_own_insert() -> None:
    state, res = store_write(
        empty_store(), ORG, [c("Deploy with make"), c("deploy  WITH make"), c("x")], T0
    )
    assert res == WriteResult(inserted=2, deduped=1, superseded=0, evicted=0)
    recs = all_records(state, ORG)
    assert ids(recs) == [f"mem:{ORG}:1", f"mem:{ORG}:2"]
    assert recs[0].use_count == 1 and recs[0].last_used_at is None
    assert {r.created_at for r in recs} == {T0}  # one batch, one creation time


@pytest.mark.clause("MEM-WRITE.2")
def test_duplicate_norm_dedup_bumps_the_earliest() -> None:
    # two actives with one norm arise when a correction collides with another record's text
    state, _ = store_write(empty_store(), ORG, [c("use make"), c("use just")], T0)
    state, res = store_write(state, ORG, [c("USE MAKE", f"mem:{ORG}:2")], T0 + 1)
    assert res == WriteResult(1, 0, 1, 0)  # collision guard: superseded + inserted
    state, res = store_write(state, ORG, [c("use make")], T0 + 2)
    assert res.deduped == 1
    by_id = {r.id: r for r in all_records(state, ORG)}
    assert by_id[f"mem:{ORG}:1"].use_count == 1 and by_id[f"mem:{ORG}:3"].use_count == 0


@pytest.mark.clause("MEM-WRITE.3", "MEM-WRITE.5", "MEM-WRITE.8", "MEM-STORE.4")
def test_supersede_then_restate_old_text_makes_a_fresh_record() -> None:
    state, _ = store_write(empty_store(), ORG, [c("deploy with make")], T0)
    state, res = store_write(state, ORG, [c("deploy with just", f"mem:{ORG}:1")], T0 + 1)
    assert res == WriteResult(1, 0, 1, 0)
    old, new = all_records(state, ORG)
    assert old.status == "superseded" and old.text == "deploy with make"
    assert new.supersedes == old.id and new.status == "active"
    _, got = store_retrieve(state, ORG, "make", 8, T0 + 2)
    assert got == []  # the dead record never matches
    state, res = store_write(state, ORG, [c("Deploy with make")], T0 + 3)
    assert res == WriteResult(1, 0, 0, 0)
    # restating the target itself is a no-op dedup on the target
    state, res = store_write(state, ORG, [c("deploy with JUST", f"mem:{ORG}:2")], T0 + 4)
    assert res == WriteResult(0, 1, 0, 0)


@pytest.mark.clause("MEM-WRITE.4", "MEM-SCOPE.5")
def test_foreign_scope_supersede_supersedes_nothing() -> None:
    state, _ = store_write(empty_store(), "user:slack:U1", [c("mine")], T0)
    state, res = store_write(state, ORG, [c("mine", "mem:user:slack:U1:1")], T0 + 1)
    assert res == WriteResult(1, 0, 0, 0)
    assert active_records(state, "user:slack:U1")[0].status == "active"


# ------------------------------------------------------------------ list, forget, ids


@pytest.mark.clause("MEM-STORE.7")
@given(st.lists(candidates(), max_size=10), st.one_of(st.none(), query_text), st.integers(1, 12))
def test_list_newest_first_filtered_then_limited_without_bump(
    cands: list[MemoryCandidate], query: str | None, limit: int
) -> None:
    state, _ = store_write(empty_store(), ORG, cands, T0)
    got = store_list(state, ORG, limit, query)
    active = active_records(state, ORG)
    pool = list(reversed(active))
    if query is not None:
        from reference.memory.scoring import keyword_match, tokenize

        pool = [r for r in pool if tokenize(query) and keyword_match(query, r) > 0]
    assert got == pool[:limit]
    seqs = [int(r.id.rsplit(":", 1)[1]) for r in got]
    assert seqs == sorted(seqs, reverse=True)


@pytest.mark.clause("MEM-STORE.7")
def test_list_filter_is_whole_token() -> None:
    state, _ = store_write(
        empty_store(), ORG, [c("alphabet soup"), c("a b", keywords=("deploy",))], T0
    )
    assert ids(store_list(state, ORG, 10, "a")) == [f"mem:{ORG}:2"]
    assert ids(store_list(state, ORG, 10, "deploy")) == [f"mem:{ORG}:2"]
    assert store_list(state, ORG, 10, "alpha") == []
    assert store_list(state, ORG, 10, "!!!") == []


@pytest.mark.clause("MEM-STORE.8", "MEM-SCOPE.5")
def test_forget() -> None:
    state, _ = store_write(empty_store(), ORG, [c("deploy with make"), c("x y")], T0)
    state2, ok = store_forget(state, "user:slack:U1", f"mem:{ORG}:1")
    assert not ok and state2 is state  # another scope's id forgets nothing
    for bogus in ("mem:org:acme:99", "nonsense", ""):
        assert store_forget(state, ORG, bogus) == (state, False)
    state, ok = store_forget(state, ORG, f"mem:{ORG}:1")
    assert ok and all_records(state, ORG)[0].status == "forgotten"
    assert store_forget(state, ORG, f"mem:{ORG}:1") == (state, False)  # second call
    assert ids(store_list(state, ORG, 10)) == [f"mem:{ORG}:2"]
    state, res = store_write(state, ORG, [c("Deploy with make")], T0 + 1)
    assert res.inserted == 1 and ids(active_records(state, ORG))[-1] == f"mem:{ORG}:3"


@pytest.mark.clause("MEM-STORE.9")
def test_parse_record_id() -> None:
    assert parse_record_id("mem:org:acme:12") == ("org:acme", "12")
    assert parse_record_id("mem:user:slack:U1:3") == ("user:slack:U1", "3")
    for bad in (
        "mem:org:acme",
        "org:acme:1",
        "mem::1",
        "mem:org:acme:x",
        "mem:org:acme:",
        "mem:o:١",
    ):
        assert parse_record_id(bad) is None


@pytest.mark.clause("MEM-READ.5", "MEM-SCOPE.3")
@given(
    st.lists(st.tuples(st.sampled_from(["U1", "U2", "U3"]), candidates()), max_size=12), query_text
)
def test_a_read_only_ever_sees_its_own_users_records(
    writes: list[tuple[str, MemoryCandidate]], query: str
) -> None:
    state = empty_store()
    for user, cand in writes:
        state, _ = store_write(state, f"user:slack:{user}", [cand], T0)
        state, _ = store_write(state, ORG, [cand], T0)
    keys = request_scope_keys("acme", user_id="slack:U1", channel_id="slack:C1")
    retrieved = {}
    for k in keys:
        state, retrieved[k] = store_retrieve(state, k, query, 8, T0 + DAY)
    assert all(
        r.scope_key in {ORG, "user:slack:U1"} for r in pool_records(retrieved, query, T0 + DAY)
    )
    assert all(
        r.scope_key not in {"user:slack:U2", "user:slack:U3"}
        for rs in retrieved.values()
        for r in rs
    )


# ------------------------------------------------------------------ cap


@pytest.mark.clause("MEM-CAP.1", "MEM-CAP.2", "MEM-CAP.3")
def test_over_cap_write_evicts_lru_and_hides_the_evicted() -> None:
    state, _ = store_write(empty_store(), ORG, [c("one"), c("two"), c("three")], T0)
    state, _ = store_retrieve(state, ORG, "one", 8, T0 + 10)  # one is now most recently used
    state, _ = store_forget(state, ORG, f"mem:{ORG}:3")  # forgotten: frees a slot
    state, res = store_write(state, ORG, [c("four")], T0 + 20, cap=2)
    assert res == WriteResult(1, 0, 0, 1)
    status = {r.text: r.status for r in all_records(state, ORG)}
    assert status == {"one": "active", "two": "evicted", "three": "forgotten", "four": "active"}
    assert store_list(state, ORG, 10, "two") == []
    state, res = store_write(state, ORG, [c("TWO")], T0 + 30, cap=2)
    assert res == WriteResult(1, 0, 0, 1)  # not a dedup target: a fresh record


@pytest.mark.clause("MEM-CAP.1")
def test_a_batch_can_evict_its_own_inserts() -> None:
    state, res = store_write(empty_store(), ORG, [c("a1"), c("a2"), c("a3")], T0, cap=1)
    assert res == WriteResult(3, 0, 0, 2)
    assert len(active_records(state, ORG)) == 1
