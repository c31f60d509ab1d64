"""The hard injection budget (MEM-BUDGET)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from reference.memory.containment import render_bullet
from reference.memory.records import MemoryRecord

DEFAULT_LIMIT: Final = 8
DEFAULT_MAX_TOKENS: Final = 800


def utf16_length(s: str) -> int:
    """JavaScript ``String.length``: UTF-16 code units; astral characters count 2 (MEM-BUDGET.2)."""
    if s.isascii():  # every ASCII character is one code unit (the common case, and fast)
        return len(s)
    # UTF-16 is two bytes a code unit; ``surrogatepass`` counts a lone surrogate as the one
    # unit it is in JavaScript
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def estimate_tokens(s: str) -> int:
    """``ceil(utf16_length(s) / 4)`` (MEM-BUDGET.2)."""
    return -(-utf16_length(s) // 4)


def apply_budget(
    records: Sequence[MemoryRecord],
    limit: int = DEFAULT_LIMIT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> list[MemoryRecord]:
    """Keep the longest prefix of ``records`` within both caps (MEM-BUDGET.1, MEM-BUDGET.3).

    At most ``limit`` records; each record costs ``estimate_tokens(render_bullet(r))`` and the
    kept costs sum to at most ``max_tokens`` -- except that the first record is always kept
    (when ``limit >= 1``) however large it is.  The walk stops at the first record that does
    not fit, so the result is always a prefix of the input in the input's order.
    """
    kept: list[MemoryRecord] = []
    used = 0
    for r in records:
        if len(kept) >= limit:
            break
        cost = estimate_tokens(render_bullet(r))
        if kept and used + cost > max_tokens:
            break
        kept.append(r)
        used += cost
    return kept
