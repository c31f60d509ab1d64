"""The injection budget (``reference/memory/budget.py``): estimateTokens, applyBudget."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import memory_record, memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn, outcome_of
from conformance.binding.functions.common import (
    LIMIT_RANGE,
    any_text,
    in_range,
    limits,
    memory_list,
    outside_domain,
    rec,
)
from conformance.binding.judge import Judged
from reference.memory.budget import apply_budget, estimate_tokens
from reference.memory.containment import render_bullet


def _estimate(a: Args) -> JSON:
    return estimate_tokens(a["text"])


def _estimate_boundaries() -> list[tuple[str, Args]]:
    return [
        ("empty", {"text": ""}),
        ("one unit", {"text": "a"}),
        ("four units", {"text": "abcd"}),
        ("five units", {"text": "abcde"}),
        ("an astral character is two units", {"text": "\U0001f600"}),
        ("two astral characters are four units: one token", {"text": "\U0001f600\U0001f600"}),
        ("three units of BMP non-ASCII", {"text": "\u00e9\u00e9\u00e9"}),
        ("combining mark is its own unit", {"text": "e\u0301e\u0301e"}),
        ("not bytes: 4 units of 3-byte UTF-8", {"text": "\u65e5\u672c\u65e5\u672c"}),
    ]


def _budget(a: Args) -> JSON:
    recs = memory_records(a["records"])
    return [r.id for r in apply_budget(recs, int(a["limit"]), int(a["maxTokens"]))]


def _budget_judge(a: Args) -> Judged:
    """The longest prefix within both caps (MEM-BUDGET.1, MEM-BUDGET.3); a limit outside 1-50
    is outside the seed's domain (MEM-SCOPE.8)."""
    judged = Judged([outcome_of(_budget, a)])
    if not in_range(a["limit"], LIMIT_RANGE):
        return outside_domain(judged, f"limit {a['limit']}")
    return judged


def _bullet_cost(rec: JSON) -> int:
    return int(estimate_tokens(render_bullet(memory_record(rec))))


def _budget_boundaries() -> list[tuple[str, Args]]:
    r = [rec(f"mem:org:acme:{i}", "x" * 40) for i in range(1, 5)]
    cost = _bullet_cost(r[0])
    big = rec("mem:org:acme:9", "y" * 5000)
    astral = rec("mem:org:acme:8", "\U0001f600" * 20)
    return [
        ("exact edge: two bullets fit exactly", {"records": r, "limit": 8, "maxTokens": 2 * cost}),
        ("one unit under the edge", {"records": r, "limit": 8, "maxTokens": 2 * cost - 1}),
        ("the first record is always kept", {"records": [big, *r], "limit": 8, "maxTokens": 10}),
        (
            "stop at the first that does not fit",
            {"records": [r[0], big, r[1]], "limit": 8, "maxTokens": 800},
        ),
        ("limit cuts", {"records": r, "limit": 2, "maxTokens": 800}),
        ("limit zero", {"records": r, "limit": 0, "maxTokens": 800}),
        (
            "astral text costs two units a character",
            {"records": [r[0], astral], "limit": 8, "maxTokens": cost + 12},
        ),
        ("empty", {"records": [], "limit": 8, "maxTokens": 800}),
    ]


def _budget_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """Not a prefix of the input within ``limit`` keeping the first: MEM-BUDGET.1; a prefix cut
    elsewhere: the costing (MEM-BUDGET.3)."""
    value = got.get("ok") if isinstance(got, dict) else None
    ids = [r["id"] for r in a["records"]]
    if isinstance(value, list) and value == ids[: len(value)] and len(value) <= int(a["limit"]):
        if value or not ids or int(a["limit"]) < 1:
            return ("MEM-BUDGET.3",)
    return ("MEM-BUDGET.1",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "estimateTokens",
        MEMORY,
        ("MEM-BUDGET.2",),
        "ceil(UTF-16 length / 4)",
        _estimate,
        st.fixed_dictionaries({"text": any_text}),
        _estimate_boundaries,
    ),
    fn(
        "applyBudget",
        MEMORY,
        ("MEM-BUDGET.1", "MEM-BUDGET.3"),
        "longest prefix within both caps",
        _budget,
        st.fixed_dictionaries(
            {"records": memory_list(5), "limit": limits, "maxTokens": st.integers(0, 60)}
        ),
        _budget_boundaries,
        _budget_judge,
        references=("MEM-SCOPE.8",),
        blame=_budget_blame,
    ),
)
