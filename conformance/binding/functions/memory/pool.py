"""The read pool (``reference/memory/pool.py``): poolRecords, memoryContextBlock."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from hypothesis import strategies as st

from conformance.binding.codec import memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, Refused, fn, outcome_of
from conformance.binding.functions.common import (
    LIMIT_RANGE,
    NOW,
    in_range,
    limits,
    memory_list,
    outside_domain,
    queries,
    rec,
)
from conformance.binding.functions.memory.parameters import TAU_NOTE, TAU_REFERENCE
from conformance.binding.functions.memory.scopes import KINDS, SCOPE_KIND, UNKNOWN_KIND_NOTE
from conformance.binding.judge import Judged, ok, widened
from reference.memory.budget import apply_budget
from reference.memory.containment import render_memory_block, scope_resource
from reference.memory.pool import memory_context_block, pool_records
from reference.memory.records import MemoryRecord
from reference.memory.scopes import ScopeError, list_scope_keys, scope_kind
from reference.memory.scoring import TAU_MS, score_record, seed_taus


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


def _pooled_orders(a: Args, keys: list[str], tau: float = TAU_MS) -> list[list[MemoryRecord]]:
    """Every pool the seed allows over the scopes ``keys``: the union sorted by score, stably,
    with org's records first on equal scores -- the other scopes' records in any scope order
    (implementation-defined: the seed fixes only "org first on ties"), each scope's records in
    the order its retrieve gave them; scores with the recency time constant ``tau``."""
    retrieved = _retrieved(a)
    query, now = a["query"], int(a["now"])
    ordered = list_scope_keys(keys)
    org = [k for k in ordered if scope_kind(k) == "org"]
    rest = [k for k in ordered if scope_kind(k) != "org"]
    out = []
    for perm in itertools.permutations(rest):
        union = [r for k in (*org, *perm) for r in retrieved[k]]
        out.append(sorted(union, key=lambda r: -score_record(query, r, now, tau_ms=tau)))
    return out


def _taus(a: Args, keys: list[str]) -> tuple[float, ...]:
    """The τ of the seed's range that between them give every order of the pool's scores
    (MEM-SCORE.9); the reference's seven days first."""
    retrieved = _retrieved(a)
    records = [r for k in keys for r in retrieved[k]]
    return seed_taus(a["query"], records, int(a["now"]))


def _read_judge(a: Args, answer: Callable[[list[MemoryRecord], list[str]], JSON]) -> Judged:
    """The reads the seed allows: the pools of :func:`_pooled_orders`, each cut by the budget and
    answered by ``answer(records, keys)``; a scope of no memory kind refused by the reference,
    left out at the seed level (MEM-SCOPE.7); a read without an org scope, or a limit outside
    1-50, outside the seed's domain (MEM-SCOPE.8)."""
    keys = [item["scopeKey"] for item in a["retrieved"]]
    known = [k for k in keys if scope_kind(k) in KINDS]
    limit, max_tokens = int(a["limit"]), int(a["maxTokens"])

    def allowed(over: list[str], taus: tuple[float, ...] = (TAU_MS,)) -> list[JSON]:
        out: list[JSON] = []
        for tau in taus:
            for pool in _pooled_orders(a, over, tau):
                o = ok(answer(apply_budget(pool, limit, max_tokens), over))
                if o not in out:
                    out.append(o)
        return out

    if len(known) < len(keys):
        ref = Judged([_reference_outcome(a, answer)])
        return widened(ref, SCOPE_KIND, allowed(known), None, UNKNOWN_KIND_NOTE)
    judged = Judged(allowed(keys))
    wide = allowed(keys, _taus(a, keys))
    if len(wide) > len(judged.allowed):  # another τ of the seed's orders the pool otherwise
        judged = widened(judged, TAU_REFERENCE, wide, None, TAU_NOTE)
    if not any(scope_kind(k) == "org" for k in keys):
        return outside_domain(judged, "a read without an org scope")
    if not in_range(a["limit"], LIMIT_RANGE):
        return outside_domain(judged, f"limit {a['limit']}")
    return judged


def _reference_outcome(a: Args, answer: Callable[[list[MemoryRecord], list[str]], JSON]) -> JSON:
    """The reference's outcome of a read holding a key of no memory kind (a refusal)."""
    return outcome_of(_pool if answer is _ids else _context_block, a)


def _ids(records: list[MemoryRecord], keys: list[str]) -> JSON:
    return [r.id for r in records]


def _block(records: list[MemoryRecord], keys: list[str]) -> JSON:
    if not records:
        return None
    return render_memory_block(records, scope_resource(list_scope_keys(keys)))


def _pool_judge(a: Args) -> Judged:
    return _read_judge(a, _ids)


def _context_block_judge(a: Args) -> Judged:
    return _read_judge(a, _block)


def _pool_boundaries() -> list[tuple[str, Args]]:
    org = rec("mem:org:acme:1", "deploy friday")
    user = {**rec("mem:user:slack:U1:1", "deploy friday"), "scopeKey": "user:slack:U1"}
    repo = {**rec("mem:repo:acme/api:1", "deploy"), "scopeKey": "repo:acme/api"}
    channel = {**rec("mem:channel:C1:1", "deploy friday"), "scopeKey": "channel:C1"}
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
        (
            "equal scores after org: repo, channel and user records in any scope order",
            {
                **base,
                "retrieved": [
                    {"scopeKey": "user:slack:U1", "records": [user]},
                    {"scopeKey": "channel:C1", "records": [channel]},
                    {"scopeKey": "repo:acme/api", "records": [{**repo, "text": "deploy friday"}]},
                    {"scopeKey": "org:acme", "records": [org]},
                ],
            },
        ),
        (
            "a read without an org scope",
            {**base, "retrieved": [{"scopeKey": "user:slack:U1", "records": [user]}]},
        ),
    ]


_RETRIEVED = st.builds(
    lambda org, user: [
        {"scopeKey": "user:slack:U1", "records": user},
        {"scopeKey": "org:acme", "records": org},
    ],
    memory_list(3, "org:acme"),
    memory_list(3, "user:slack:U1"),
)


def _pool_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """More records than the one limit: MEM-READ.2; else which records and in what order:
    MEM-READ.1."""
    value = got.get("ok") if isinstance(got, dict) else None
    if isinstance(value, list) and len(value) > max(int(a["limit"]), 0):
        return ("MEM-READ.2",)
    return ("MEM-READ.1",)


def _context_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """A block where none is due, or none where one is: MEM-READ.4; else the prefix that names
    the scopes: MEM-READ.3."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if (value is None) != (want is None):
        return ("MEM-READ.4",)
    if isinstance(value, str) and isinstance(want, str):
        if value.split("\n", 1)[0] != want.split("\n", 1)[0]:
            return ("MEM-READ.3",)
    return ()


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
        _pool_judge,
        references=("MEM-SCOPE.7", "MEM-SCOPE.8", "MEM-SCORE.10"),
        blame=_pool_blame,
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
        _context_block_judge,
        references=("MEM-SCOPE.7", "MEM-SCOPE.8", "MEM-SCORE.10"),
        blame=_context_blame,
    ),
)
