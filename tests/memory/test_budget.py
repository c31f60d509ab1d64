"""MEM-BUDGET: token estimate and the hard budget."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.budget import DEFAULT_LIMIT, DEFAULT_MAX_TOKENS, apply_budget, estimate_tokens
from reference.memory.containment import render_bullet
from reference.memory.records import MemoryRecord
from tests.common.memory_strategies import make_record, records


@pytest.mark.clause("MEM-BUDGET.2")
def test_estimate_tokens_examples() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("😀") == 1  # 2 UTF-16 units
    assert estimate_tokens("😀😀😀") == 2  # 6 units
    assert estimate_tokens("é" * 4) == 1  # BMP: one unit each


@pytest.mark.clause("MEM-BUDGET.2")
@given(st.text())
def test_estimate_tokens_counts_utf16_units(s: str) -> None:
    units = len(s.encode("utf-16-le", errors="surrogatepass")) // 2
    assert estimate_tokens(s) == math.ceil(units / 4)


@pytest.mark.clause("MEM-BUDGET.1", "MEM-BUDGET.3")
@given(records(max_size=15), st.integers(0, 10), st.integers(0, 120))
def test_apply_budget(recs: list[MemoryRecord], limit: int, max_tokens: int) -> None:
    kept = apply_budget(recs, limit, max_tokens)
    assert len(kept) <= limit
    assert kept == recs[: len(kept)]  # a prefix, in order
    if recs and limit >= 1:
        assert kept and kept[0] is recs[0]  # the first is always kept
    costs = [estimate_tokens(render_bullet(r)) for r in kept]
    if len(kept) != 1:
        assert sum(costs) <= max_tokens
    # it stops only for a reason: the limit, the end, or the next bullet would not fit
    if len(kept) < len(recs) and len(kept) < limit and kept:
        nxt = estimate_tokens(render_bullet(recs[len(kept)]))
        assert sum(costs) + nxt > max_tokens


@pytest.mark.clause("MEM-BUDGET.3")
def test_cost_is_the_rendered_escaped_bullet() -> None:
    # 40 '<' are 10 raw tokens but 160 escaped characters (+ boilerplate) on the bullet
    big = make_record("a", text="<" * 40, source_thread_key="t")
    small = make_record("b", text="ok", source_thread_key="t")
    bullet_cost = estimate_tokens(render_bullet(big))
    assert bullet_cost > 40
    assert apply_budget([big, small], 8, bullet_cost) == [big]
    assert apply_budget([big, small], 8, bullet_cost + estimate_tokens(render_bullet(small))) == [
        big,
        small,
    ]
    # a single oversized first record is still kept
    assert apply_budget([big], 8, 1) == [big]
    assert (DEFAULT_LIMIT, DEFAULT_MAX_TOKENS) == (8, 800)
    many = [make_record(str(i), text="x", source_thread_key="t") for i in range(20)]
    assert len(apply_budget(many)) == 8
