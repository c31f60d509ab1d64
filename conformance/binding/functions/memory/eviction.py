"""Eviction (``plan_eviction`` of ``reference/memory/engine.py``): planEviction."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import (
    CAP_RANGE,
    DAY,
    NOW,
    in_range,
    memory_list,
    outside_domain,
    rec,
)
from conformance.binding.judge import Judged, ok
from reference.memory.engine import eviction_key, plan_eviction
from reference.memory.records import ACTIVE


def _evict(a: Args) -> JSON:
    return plan_eviction(memory_records(a["active"]), int(a["cap"]))


def _evict_judge(a: Args) -> Judged:
    """Least recently used first; full ties in any order; the order of the answer is free
    (MEM-CAP.1, MEM-CAP.2)."""
    live = [r for r in memory_records(a["active"]) if r.status == ACTIVE]
    cap = int(a["cap"])
    by_key: dict[tuple[int, int], list[str]] = {}
    for r in live:
        by_key.setdefault(eviction_key(r), []).append(r.id)
    groups = [by_key[k] for k in sorted(by_key)]
    length = max(0, len(live) - max(cap, 0))
    checker = {"name": "tie_groups", "groups": groups, "length": length, "ordered": False}
    judged = Judged([ok(_evict(a))], checker)
    if not in_range(a["cap"], CAP_RANGE):
        return outside_domain(judged, f"cap {a['cap']}")
    return judged


def _evict_boundaries() -> list[tuple[str, Args]]:
    old = rec("mem:org:acme:1", "a", createdAt=NOW - 3 * DAY)
    used = rec("mem:org:acme:2", "b", createdAt=NOW - 5 * DAY, lastUsedAt=NOW)
    t1 = rec("mem:org:acme:3", "c", createdAt=NOW - DAY)
    t2 = rec("mem:org:acme:4", "d", createdAt=NOW - DAY)
    late = rec("mem:org:acme:5", "e", createdAt=NOW - 2 * DAY, lastUsedAt=NOW - DAY)
    dead = rec("mem:org:acme:6", "f", createdAt=0, status="forgotten")
    return [
        ("at the cap: nothing", {"active": [old, used], "cap": 2}),
        ("one past the cap: one", {"active": [old, used, t1], "cap": 2}),
        ("lastUsedAt protects an old record", {"active": [used, old], "cap": 1}),
        ("full tie: either", {"active": [t1, t2], "cap": 1}),
        ("equal use, older creation first", {"active": [t1, late], "cap": 1}),
        ("dead records neither count nor go", {"active": [dead, old, used], "cap": 1}),
        ("cap zero evicts all", {"active": [old, used], "cap": 0}),
        ("empty", {"active": [], "cap": 0}),
    ]


def _evict_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """As many as the cap asks but the wrong ones: MEM-CAP.2; another count: MEM-CAP.1."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if isinstance(value, list) and isinstance(want, list) and len(value) == len(want):
        return ("MEM-CAP.2",)
    return ("MEM-CAP.1",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "planEviction",
        MEMORY,
        ("MEM-CAP.1", "MEM-CAP.2"),
        "ids to evict down to the cap",
        _evict,
        st.fixed_dictionaries({"active": memory_list(6), "cap": st.integers(0, 6)}),
        _evict_boundaries,
        _evict_judge,
        references=("MEM-SCOPE.8",),
        blame=_evict_blame,
    ),
)
