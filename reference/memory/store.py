"""The in-process store model and the null store model (MEM-STORE, MEM-WRITE, MEM-CAP, MEM-FLAG).

A store is a value (``StoreState``) plus functions that return a new value and what the store
answers, so the oracle can ask "what may the target answer now?" without side effects.  The
model partitions records by scope key and never removes a record: supersede, forget and evict
only change ``status`` (soft delete).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from reference.memory.engine import (
    DEFAULT_SCOPE_CAP,
    Dedup,
    mint_record,
    plan_eviction,
    plan_write,
    rank_records,
)
from reference.memory.records import (
    ACTIVE,
    EVICTED,
    FORGOTTEN,
    SUPERSEDED,
    MemoryCandidate,
    MemoryRecord,
)
from reference.memory.scoring import keyword_match, tokenize

ID_PREFIX: Final = "mem:"


@dataclass(frozen=True)
class StoreState:
    """Every record ever written, per scope key, in insertion order (MEM-STORE.1).

    Records are never removed, so a record's position is its sequence number minus one and
    the model's ids ``mem:<scopeKey>:<n>`` (n from 1) are never reused (MEM-STORE.9).
    """

    scopes: Mapping[str, tuple[MemoryRecord, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def records(self, scope_key: str) -> tuple[MemoryRecord, ...]:
        """All records of one scope, whatever their status, in insertion order."""
        return self.scopes.get(scope_key, ())


@dataclass(frozen=True)
class WriteResult:
    """Counts a write reports (MEM-WRITE.6): ``inserted + deduped == len(candidates)``."""

    inserted: int
    deduped: int
    superseded: int
    evicted: int


def empty_store() -> StoreState:
    """A store holding nothing (MEM-STORE.1)."""
    return StoreState()


def record_id(scope_key: str, n: int) -> str:
    """The model's id of the ``n``-th record of a scope: ``mem:<scopeKey>:<n>`` (MEM-STORE.9)."""
    return f"{ID_PREFIX}{scope_key}:{n}"


def parse_record_id(rid: str) -> tuple[str, str] | None:
    """``(scopeKey, n)`` of a memory id, or ``None`` if it is not one (MEM-STORE.9).

    The scope key is everything between ``mem:`` and the last ``:``; ``n`` is a non-empty
    digit string.
    """
    if not rid.startswith(ID_PREFIX):
        return None
    scope, sep, n = rid[len(ID_PREFIX) :].rpartition(":")
    if not sep or not scope or not n.isascii() or not n.isdigit():
        return None
    return scope, n


def _with_scope(state: StoreState, scope_key: str, records: Sequence[MemoryRecord]) -> StoreState:
    scopes = dict(state.scopes)
    scopes[scope_key] = tuple(records)
    return StoreState(scopes=MappingProxyType(scopes))


def with_scope_records(
    state: StoreState, scope_key: str, records: Sequence[MemoryRecord]
) -> StoreState:
    """A copy of ``state`` whose scope holds exactly ``records`` (for oracles pinning a tie pick).

    Not a store operation: it lets a harness align the model with a target's legal choice
    (MEM-SCORE.5, MEM-CAP.2) before continuing in lockstep.
    """
    return _with_scope(state, scope_key, records)


def all_records(state: StoreState, scope_key: str) -> list[MemoryRecord]:
    """Every record of a scope including dead ones, in insertion order (MEM-STORE.10)."""
    return list(state.records(scope_key))


def active_records(state: StoreState, scope_key: str) -> list[MemoryRecord]:
    """The scope's active records, in insertion order (MEM-STORE.1)."""
    return [r for r in state.records(scope_key) if r.status == ACTIVE]


def store_write(
    state: StoreState,
    scope_key: str,
    candidates: Sequence[MemoryCandidate],
    now: int,
    cap: int = DEFAULT_SCOPE_CAP,
    *,
    newer_unicode: bool = False,
) -> tuple[StoreState, WriteResult]:
    """Apply one write batch (MEM-WRITE.1, MEM-WRITE.2, MEM-WRITE.3, MEM-WRITE.4, MEM-WRITE.5,
    MEM-WRITE.6, MEM-WRITE.7, MEM-CAP.1, MEM-CAP.2, MEM-CAP.3, MEM-CAP.4).

    ``newer_unicode``: dedup keys compared as a store on a newer Unicode may see them
    (``engine.may_fold_equal``, MEM-WRITE.2).

    Each candidate, in order, is planned with ``plan_write`` against the scope's *current*
    active set -- so a later candidate sees (and may dedup against) an earlier insert of the
    same batch.  ``Dedup`` bumps the target's ``use_count`` by one; ``Insert`` flips the
    supersede target (if any) to ``superseded`` and appends a freshly minted record with
    ``created_at = now`` (all inserts of a batch share it).  After the whole batch,
    ``plan_eviction`` flips records to ``evicted`` until at most ``cap`` remain active.  An
    empty batch changes nothing, even with a cap below the active count.
    """
    if not candidates:
        # An empty batch is a no-op, whatever its cap (MEM-CAP.1: the validation table's
        # "empty batch no-op").
        return state, WriteResult(0, 0, 0, 0)
    recs = list(state.records(scope_key))
    index = {r.id: i for i, r in enumerate(recs)}
    active_ids: dict[str, None] = {r.id: None for r in recs if r.status == ACTIVE}
    inserted = deduped = superseded = 0
    for cand in candidates:
        plan = plan_write([recs[index[i]] for i in active_ids], cand, newer_unicode=newer_unicode)
        if isinstance(plan, Dedup):
            i = index[plan.target_id]
            recs[i] = replace(recs[i], use_count=recs[i].use_count + 1)
            deduped += 1
            continue
        if plan.supersede_id is not None:
            i = index[plan.supersede_id]
            recs[i] = replace(recs[i], status=SUPERSEDED)
            del active_ids[plan.supersede_id]
            superseded += 1
        rid = record_id(scope_key, len(recs) + 1)
        recs.append(mint_record(cand, scope_key, rid, now))
        index[rid] = len(recs) - 1
        active_ids[rid] = None
        inserted += 1
    evict = plan_eviction([recs[index[i]] for i in active_ids], cap)
    for rid in evict:
        i = index[rid]
        recs[i] = replace(recs[i], status=EVICTED)
    result = WriteResult(inserted, deduped, superseded, len(evict))
    if not (inserted or deduped or evict):
        return state, result
    return _with_scope(state, scope_key, recs), result


def bump_usage(state: StoreState, scope_key: str, ids: Iterable[str], now: int) -> StoreState:
    """Retrieval's usage bump of exactly ``ids``: ``last_used_at = now``, ``use_count + 1``
    (MEM-STORE.3).  Every other record is untouched."""
    chosen = set(ids)
    if not chosen:
        return state
    recs = [
        replace(r, last_used_at=now, use_count=r.use_count + 1) if r.id in chosen else r
        for r in state.records(scope_key)
    ]
    return _with_scope(state, scope_key, recs)


def store_retrieve(
    state: StoreState, scope_key: str, query: str, limit: int, now: int
) -> tuple[StoreState, list[MemoryRecord]]:
    """Rank the scope's active records and bump the returned ones (MEM-STORE.2, MEM-STORE.3).

    The answer is ``rank_records(active, query, limit, now)``; each returned record gets
    ``last_used_at = now`` and ``use_count + 1`` in the new state, and the model returns the
    records as they are after that bump.  Nothing else changes.
    """
    ranked = rank_records(active_records(state, scope_key), query, limit, now)
    if not ranked:
        return state, []
    after = bump_usage(state, scope_key, (r.id for r in ranked), now)
    bumped = {r.id: r for r in after.records(scope_key)}
    return after, [bumped[r.id] for r in ranked]


def list_matches(query: str, record: MemoryRecord) -> bool:
    """The list filter: some token of the query hits the record whole (MEM-STORE.7)."""
    return keyword_match(query, record) > 0


def store_list(
    state: StoreState, scope_key: str, limit: int, query: str | None = None
) -> list[MemoryRecord]:
    """Active records newest first, optionally filtered, then cut to ``limit`` (MEM-STORE.7).

    ``query`` given: only records some query token hits (the retrieval gate); a query
    without tokens lists nothing.  Listing never changes the state.
    """
    if limit <= 0:
        return []
    newest_first = reversed(active_records(state, scope_key))
    if query is None:
        chosen = list(newest_first)
    elif not tokenize(query):
        return []
    else:
        chosen = [r for r in newest_first if list_matches(query, r)]
    return chosen[:limit]


def store_forget(state: StoreState, scope_key: str, record_id: str) -> tuple[StoreState, bool]:
    """Flip one active record of the scope to ``forgotten`` (MEM-STORE.8).

    ``False`` (and the state unchanged) for an id that names no active record of this scope:
    unknown, another scope's, or already superseded/forgotten/evicted.
    """
    recs = list(state.records(scope_key))
    for i, r in enumerate(recs):
        if r.id == record_id and r.status == ACTIVE:
            recs[i] = replace(r, status=FORGOTTEN)
            return _with_scope(state, scope_key, recs), True
    return state, False


# ---------------------------------------------------------------------- the flag and the null store


def memory_enabled(config: Mapping[str, object] | None) -> bool:
    """Whether memory is on: only when ``config["memory"]["enabled"]`` is ``True`` (MEM-FLAG.1).

    An absent config, an absent or non-mapping ``memory`` section, an absent ``enabled`` or any
    value other than the boolean ``True`` (``"true"``, ``1``) means off.
    """
    if config is None:
        return False
    section = config.get("memory")
    if not isinstance(section, Mapping):
        return False
    return section.get("enabled") is True


def null_retrieve(scope_key: str, query: str, limit: int) -> list[MemoryRecord]:
    """The disabled store's retrieve: always ``[]`` (MEM-FLAG.2)."""
    return []


def null_write(scope_key: str, candidates: Sequence[MemoryCandidate]) -> WriteResult:
    """The disabled store's write: a no-op that reports nothing done (MEM-FLAG.2)."""
    return WriteResult(0, 0, 0, 0)


def null_list(scope_key: str, limit: int, query: str | None = None) -> list[MemoryRecord]:
    """The disabled store's list: always ``[]`` (MEM-FLAG.2)."""
    return []


def null_forget(scope_key: str, record_id: str) -> bool:
    """The disabled store's forget: always ``False`` (MEM-FLAG.2)."""
    return False
