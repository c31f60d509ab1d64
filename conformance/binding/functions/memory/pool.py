"""The read pool (``reference/memory/pool.py``): poolRecords, memoryContextBlock."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, Refused, fn
from conformance.binding.functions.common import NOW, limits, memory_list, queries, rec
from conformance.binding.functions.memory.parameters import context_block_judge, pool_judge
from reference.memory.pool import memory_context_block, pool_records
from reference.memory.scopes import ScopeError


def _retrieved(a: Args) -> dict[str, list[JSON]]:
    out: dict[str, list[JSON]] = {}
    for item in a["retrieved"]:
        out[item["scopeKey"]] = memory_records(item["records"])
    return out


def _pool(a: Args) -> JSON:
    try:
        recs = pool_records(
            _retrieved(a), a["query"], int(a["now"]), int(a["limit"]), int(a["maxTokens"])
        )
    except ScopeError as exc:
        raise Refused(str(exc)) from exc
    return [r.id for r in recs]


def _context_block(a: Args) -> JSON:
    try:
        return memory_context_block(
            _retrieved(a), a["query"], int(a["now"]), int(a["limit"]), int(a["maxTokens"])
        )
    except ScopeError as exc:
        raise Refused(str(exc)) from exc


def _pool_boundaries() -> list[tuple[str, Args]]:
    org = rec("mem:org:acme:1", "deploy friday")
    user = {**rec("mem:user:slack:U1:1", "deploy friday"), "scopeKey": "user:slack:U1"}
    repo = {**rec("mem:repo:acme/api:1", "deploy"), "scopeKey": "repo:acme/api"}
    base = {"query": "deploy friday", "now": NOW, "limit": 8, "maxTokens": 800}
    return [
        (
            "equal scores: org before user whatever the input order",
            {
                **base,
                "retrieved": [
                    {"scopeKey": "user:slack:U1", "records": [user]},
                    {"scopeKey": "org:acme", "records": [org]},
                ],
            },
        ),
        (
            "one limit for the whole pool",
            {
                **base,
                "limit": 1,
                "retrieved": [
                    {"scopeKey": "org:acme", "records": [org]},
                    {"scopeKey": "repo:acme/api", "records": [repo]},
                ],
            },
        ),
        (
            "a scope read that returned nothing is still named",
            {
                **base,
                "retrieved": [
                    {"scopeKey": "org:acme", "records": [org]},
                    {"scopeKey": "channel:C1", "records": []},
                ],
            },
        ),
        ("no records: no block", {**base, "retrieved": [{"scopeKey": "org:acme", "records": []}]}),
        ("not a memory scope key", {**base, "retrieved": [{"scopeKey": "team:x", "records": []}]}),
    ]


_RETRIEVED = st.builds(
    lambda org, user: [
        {"scopeKey": "user:slack:U1", "records": user},
        {"scopeKey": "org:acme", "records": org},
    ],
    memory_list(3, "org:acme"),
    memory_list(3, "user:slack:U1"),
)

FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "poolRecords",
        MEMORY,
        ("MEM-READ.1", "MEM-READ.2"),
        "one pool over every scope read",
        _pool,
        st.fixed_dictionaries(
            {
                "retrieved": _RETRIEVED,
                "query": queries,
                "now": st.just(NOW),
                "limit": limits,
                "maxTokens": st.integers(0, 200),
            }
        ),
        _pool_boundaries,
        pool_judge,
    ),
    fn(
        "memoryContextBlock",
        MEMORY,
        ("MEM-READ.3", "MEM-READ.4"),
        "the block or null",
        _context_block,
        st.fixed_dictionaries(
            {
                "retrieved": _RETRIEVED,
                "query": queries,
                "now": st.just(NOW),
                "limit": st.just(8),
                "maxTokens": st.just(800),
            }
        ),
        _pool_boundaries,
        context_block_judge,
    ),
)
