"""MEM-READ: the one-pool read over every scope of a request."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.budget import apply_budget
from reference.memory.containment import memory_prefix_line, render_bullet
from reference.memory.pool import memory_context_block, pool_records
from reference.memory.records import MemoryRecord
from reference.memory.scoring import score_record
from tests.common.memory_strategies import DAY, T0, make_record, query_text, records

SCOPES = ["org:acme", "repo:o/n", "channel:slack:C1", "user:slack:U1"]
RANK = {k: i for i, k in enumerate(SCOPES)}


@st.composite
def retrieved_sets(draw: st.DrawFn) -> dict[str, list[MemoryRecord]]:
    chosen = draw(st.lists(st.sampled_from(SCOPES), unique=True, min_size=1, max_size=4))
    # the dict's own order is arbitrary: the pool must not depend on it
    return {k: draw(records(max_size=5, scope_key=k)) for k in chosen}


@pytest.mark.clause("MEM-READ.1", "MEM-READ.2")
@given(
    retrieved_sets(),
    query_text,
    st.integers(T0, T0 + 10 * DAY),
    st.integers(1, 10),
    st.integers(1, 200),
)
def test_pool_is_one_rescored_stably_sorted_budgeted_list(
    retrieved: dict[str, list[MemoryRecord]], query: str, now: int, limit: int, max_tokens: int
) -> None:
    got = pool_records(retrieved, query, now, limit, max_tokens)
    # independent statement: sort by (-score, scope order, position in its scope's answer)
    union = [
        (-score_record(query, r, now), RANK[k], i, r)
        for k, rs in retrieved.items()
        for i, r in enumerate(rs)
    ]
    union.sort(key=lambda t: t[:3])
    expected = apply_budget([t[3] for t in union], limit, max_tokens)
    assert got == expected
    assert len(got) <= limit
    ids_from = {r.id for rs in retrieved.values() for r in rs}
    assert all(r.id in ids_from for r in got)  # only what some scope returned


@pytest.mark.clause("MEM-READ.1")
def test_ties_put_org_first() -> None:
    user = make_record(
        "mem:user:slack:U1:1", scope_key="user:slack:U1", text="deploy", created_at=T0
    )
    org = make_record("mem:org:acme:1", scope_key="org:acme", text="deploy", created_at=T0)
    chan = make_record(
        "mem:channel:slack:C1:1", scope_key="channel:slack:C1", text="deploy", created_at=T0
    )
    got = pool_records(
        {"user:slack:U1": [user], "channel:slack:C1": [chan], "org:acme": [org]}, "deploy", T0
    )
    assert got == [org, chan, user]
    better_user = make_record(
        "mem:user:slack:U1:2", scope_key="user:slack:U1", text="deploy make", created_at=T0
    )
    got = pool_records({"user:slack:U1": [better_user], "org:acme": [org]}, "deploy make", T0)
    assert got == [better_user, org]


@pytest.mark.clause("MEM-READ.3", "MEM-READ.4")
@given(retrieved_sets(), query_text, st.integers(T0, T0 + 10 * DAY))
def test_block_prefix_names_every_scope_read_in_order(
    retrieved: dict[str, list[MemoryRecord]], query: str, now: int
) -> None:
    block = memory_context_block(retrieved, query, now)
    recs = pool_records(retrieved, query, now)
    if not recs:
        assert block is None
        return
    assert block is not None
    lines = block.split("\n")
    order = sorted(retrieved, key=RANK.__getitem__)
    assert lines[0] == memory_prefix_line(" + ".join(order))
    assert lines[2:-1] == [render_bullet(r) for r in recs]


@pytest.mark.clause("MEM-READ.3", "MEM-READ.4", "MEM-READ.5")
def test_examples_single_scope_late_repo_and_empty() -> None:
    org = make_record("mem:org:acme:1", text="deploy with make", created_at=T0)
    block = memory_context_block({"org:acme": [org]}, "deploy", T0)
    assert block is not None
    assert block.split("\n")[0] == (
        "Background memory for org:acme (may be outdated \u2014 verify before acting):"
    )
    # a late repo that resolved to nothing is simply not a scope read; the read still works
    assert memory_context_block({"org:acme": [org], "user:slack:U1": []}, "deploy", T0) == (
        "Background memory for org:acme + user:slack:U1"
        " (may be outdated \u2014 verify before acting):\n"
        "<background_memory>\n- deploy with make (source: slack:C1:1)\n</background_memory>"
    )
    assert memory_context_block({"org:acme": [], "user:slack:U1": []}, "deploy", T0) is None
    assert memory_context_block({}, "deploy", T0) is None
