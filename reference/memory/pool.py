"""The read path: one pool over every scope a request reads (MEM-READ)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reference.memory.budget import DEFAULT_LIMIT, DEFAULT_MAX_TOKENS, apply_budget
from reference.memory.containment import render_memory_block, scope_resource
from reference.memory.records import MemoryRecord
from reference.memory.scopes import list_scope_keys
from reference.memory.scoring import TAU_MS, score_record


def pool_records(
    retrieved: Mapping[str, Sequence[MemoryRecord]],
    query: str,
    now: int,
    limit: int = DEFAULT_LIMIT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    *,
    tau_ms: float = TAU_MS,
) -> list[MemoryRecord]:
    """The records the block shows (MEM-READ.1, MEM-READ.2).

    ``retrieved`` maps each scope read to what that scope's retrieve (limit ``limit``)
    returned.  The union is taken in ``list_scope_keys`` order (org, repo, channel, user),
    re-scored with ``score_record(query, r, now)``, stably sorted by score descending -- so on
    equal scores org records come first, then repo, channel, user -- and then one budget
    (``apply_budget(limit, max_tokens)``) is applied to the whole pool.  ``tau_ms``: another
    time constant the seed admits (MEM-SCORE.9), for judging an engine that uses one.
    """
    union = [r for key in list_scope_keys(list(retrieved)) for r in retrieved[key]]
    scored = sorted(union, key=lambda r: -score_record(query, r, now, tau_ms=tau_ms))
    return apply_budget(scored, limit, max_tokens)


def memory_context_block(
    retrieved: Mapping[str, Sequence[MemoryRecord]],
    query: str,
    now: int,
    limit: int = DEFAULT_LIMIT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    *,
    tau_ms: float = TAU_MS,
) -> str | None:
    """The advisory block for a request, or ``None`` when nothing survives (MEM-READ.1, MEM-READ.2,
    MEM-READ.3, MEM-READ.4).

    The prefix names every scope read (every key of ``retrieved``, even one that returned
    nothing) in ``list_scope_keys`` order joined with ``" + "``; a scope that was not read
    -- e.g. a late repo that resolved to nothing -- is simply not a key.  No records, no block.
    """
    records = pool_records(retrieved, query, now, limit, max_tokens, tau_ms=tau_ms)
    if not records:
        return None
    resource = scope_resource(list_scope_keys(list(retrieved)))
    return render_memory_block(records, resource)
