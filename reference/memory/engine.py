"""The pure memory engine shared by every store: ranking, write planning, minting, eviction.

Stores call these functions directly (MEM-SEAM.2): the in-process model in ``store.py`` and
the bundled SQLite store both apply exactly this algorithm.  Where the seed allows several
answers (score ties, eviction ties, prefilter freedoms) ``reference.memory.judge`` describes
the whole set of allowed answers.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from reference.memory.records import ACTIVE, MemoryCandidate, MemoryRecord
from reference.memory.scoring import (
    TAU_MS,
    collapse_whitespace,
    keyword_match,
    score_record,
    tokenize,
)

DEFAULT_SCOPE_CAP: Final = 500
MAX_MATCH_TOKENS: Final = 24
CANDIDATE_FLOOR: Final = 50
CANDIDATE_FACTOR: Final = 5


@lru_cache(maxsize=2048)
def normalize_text(text: str) -> str:
    """The dedup key: trim, lower-case, collapse whitespace; punctuation kept (MEM-WRITE.2).

    Memoized per text (a pure function of a string): ``plan_write`` asks it of every active
    record for every candidate."""
    return collapse_whitespace(text.lower())


def _unassigned(c: str) -> bool:
    return unicodedata.category(c) == "Cn"


@lru_cache(maxsize=4096)
def may_fold_equal(a: str, b: str) -> bool:
    """Whether the dedup keys ``a`` and ``b`` (``normalize_text``) may be one key to a store on
    a newer Unicode than this Python's ``unicodedata`` (MEM-WRITE.2).

    Lower-casing follows the Unicode version of the runtime (Node ships a newer one than the
    harness's Python may): a character this Python does not know (``Cn``) may lower-case to a
    lowercase letter there.  So the keys may be equal when they are equal but for positions
    where one side holds a character unknown here and the other a non-ASCII lowercase letter
    or another unknown character.  Case mappings of known characters are stable across versions, so
    equal keys stay equal; only unequal ones may meet."""
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if (_unassigned(x) and _may_be_its_lowercase(y)) or (
            _unassigned(y) and _may_be_its_lowercase(x)
        ):
            continue
        return False
    return True


def _may_be_its_lowercase(c: str) -> bool:
    """A non-ASCII lowercase letter or a character unknown here (a new character never
    lower-cases to ASCII, so tokens -- ASCII only -- never change)."""
    return not c.isascii() and (_unassigned(c) or unicodedata.category(c) == "Ll")


def has_unassigned(text: str) -> bool:
    """Whether ``text`` holds a character this Python's ``unicodedata`` does not know."""
    return not text.isascii() and any(_unassigned(c) for c in text)


# --------------------------------------------------------------------------- ranking


def _scored(
    records: Sequence[MemoryRecord], query: str, now: int, tau_ms: float = TAU_MS
) -> list[tuple[float, MemoryRecord]]:
    if not tokenize(query):
        return []
    out = [
        (score_record(query, r, now, tau_ms=tau_ms), r)
        for r in records
        if keyword_match(query, r) > 0
    ]
    # Python's sort is stable: equal scores keep their input order.
    out.sort(key=lambda sr: -sr[0])
    return out


def rank_records(
    records: Sequence[MemoryRecord], query: str, limit: int, now: int, *, tau_ms: float = TAU_MS
) -> list[MemoryRecord]:
    """Gate, score, sort and cut (MEM-SCORE.4, MEM-SCORE.5).

    Keeps only records the query actually hits (``keyword_match > 0``), orders them by
    ``score_record`` descending -- stable, so equal scores keep the input order -- and returns
    at most ``limit`` of them.  A query without tokens returns ``[]``.  The records are
    returned as given: ranking never bumps usage (the store does, MEM-STORE.3).  Callers pass
    the scope's active records.  ``tau_ms``: another time constant the seed admits
    (MEM-SCORE.9), for judging an engine that uses one.
    """
    if limit <= 0:
        return []
    return [r for _, r in _scored(records, query, now, tau_ms)[:limit]]


def fts_match_tokens(query: str, max_tokens: int = MAX_MATCH_TOKENS) -> list[str]:
    """The tokens a full-text prefilter may OR together (MEM-STORE.5).

    The query's distinct tokens; when there are more than ``max_tokens``, the ``max_tokens``
    longest ones, ties broken by first appearance.  Returned longest first (ties in
    first-appearance order); the order carries no meaning for an OR.
    """
    distinct = list(dict.fromkeys(tokenize(query)))
    ordered = sorted(distinct, key=lambda t: -len(t))  # stable: first appearance on ties
    return ordered[: max(max_tokens, 0)]


def candidate_cap(limit: int) -> int:
    """How many prefiltered candidates a store must at least hand the engine (MEM-STORE.6)."""
    return max(CANDIDATE_FLOOR, CANDIDATE_FACTOR * limit)


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class Dedup:
    """Do not insert; bump ``use_count`` of the active record ``target_id`` (MEM-WRITE.1)."""

    target_id: str


@dataclass(frozen=True)
class Insert:
    """Insert a fresh active record; first flip ``supersede_id`` (if any) to superseded."""

    supersede_id: str | None


WritePlan = Dedup | Insert


def plan_write(
    active: Sequence[MemoryRecord], candidate: MemoryCandidate, *, newer_unicode: bool = False
) -> WritePlan:
    """Decide one candidate against the scope's active records (MEM-WRITE.1, MEM-WRITE.2,
    MEM-WRITE.3, MEM-WRITE.4, MEM-WRITE.5).

    ``active`` is the scope's active set in insertion order (anything not active in it is
    ignored).

    * ``supersedes`` set (non-empty) and naming a record of ``active``: restating that record's
      normalized text is ``Dedup(target)``; any other text is ``Insert(target)`` -- a collision
      with some *other* record never swallows the correction.
    * ``supersedes`` set but naming nothing in ``active`` (unknown, foreign scope, no longer
      active): ``Insert(None)`` unconditionally -- no dedup at all.
    * no ``supersedes`` (absent or ``""``): ``Dedup`` of the earliest active record with the
      same normalized text, else ``Insert(None)``.

    ``newer_unicode``: keys are compared as a store on a newer Unicode may see them
    (``may_fold_equal``), the other allowed reading of the dedup key (MEM-WRITE.2).
    """
    live = [r for r in active if r.status == ACTIVE]
    norm = normalize_text(candidate.text)

    def same(text: str) -> bool:
        key = normalize_text(text)
        return key == norm or (newer_unicode and may_fold_equal(key, norm))

    if candidate.supersedes:
        target = next((r for r in live if r.id == candidate.supersedes), None)
        if target is None:
            return Insert(None)
        if same(target.text):
            return Dedup(target.id)
        return Insert(target.id)
    for r in live:
        if same(r.text):
            return Dedup(r.id)
    return Insert(None)


def default_keywords(text: str) -> tuple[str, ...]:
    """Keywords the model stores for a candidate written without any (MEM-RECORD.5).

    The text's distinct tokens in first-appearance order.  Implementation-defined on a real
    store; matching is unaffected because text tokens always count.
    """
    return tuple(dict.fromkeys(tokenize(text)))


def mint_record(
    candidate: MemoryCandidate, scope_key: str, record_id: str, now: int
) -> MemoryRecord:
    """The stored form of an inserted candidate (MEM-RECORD.4).

    Active, ``created_at = now``, never used (``last_used_at`` absent, ``use_count`` 0), the
    candidate's kind/text/provenance/confidence verbatim, and its ``supersedes`` pointer when
    non-empty.
    """
    keywords = (
        candidate.keywords if candidate.keywords is not None else default_keywords(candidate.text)
    )
    return MemoryRecord(
        id=record_id,
        scope_key=scope_key,
        kind=candidate.kind,
        text=candidate.text,
        keywords=tuple(keywords),
        source_thread_key=candidate.source_thread_key,
        source_run_id=candidate.source_run_id,
        created_at=now,
        last_used_at=None,
        use_count=0,
        confidence=candidate.confidence,
        supersedes=candidate.supersedes or None,
        status=ACTIVE,
    )


# --------------------------------------------------------------------------- eviction


def eviction_key(record: MemoryRecord) -> tuple[int, int]:
    """LRU order: ``last_used_at ?? created_at``, then ``created_at`` (MEM-CAP.2)."""
    used = record.last_used_at if record.last_used_at is not None else record.created_at
    return (used, record.created_at)


def plan_eviction(active: Sequence[MemoryRecord], cap: int) -> list[str]:
    """Ids to evict so that at most ``cap`` active records remain, eviction order (MEM-CAP.1,
    MEM-CAP.2).

    Only active records count and only they are candidates.  Nothing at or under the cap;
    otherwise exactly ``len(active) - cap`` ids, least recently used first (``eviction_key``),
    and on a complete tie the earlier-inserted record first (the model's pick of an
    implementation-defined order; see ``judge.eviction_allowed``).
    """
    live = [r for r in active if r.status == ACTIVE]
    excess = len(live) - max(cap, 0)
    if excess <= 0:
        return []
    ordered = sorted(live, key=eviction_key)  # stable: insertion order on full ties
    return [r.id for r in ordered[:excess]]
