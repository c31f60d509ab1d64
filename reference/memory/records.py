"""Record and candidate shapes of cross-session memory (MEM-RECORD).

A ``MemoryRecord`` is one distilled piece of knowledge held in one scope; a
``MemoryCandidate`` is what a writer (the reflection pass) proposes before the store has
assigned an id, a timestamp or a status.  Field names are the snake_case of the wire's
camelCase (``scopeKey`` -> ``scope_key``); ``None`` stands for a field that is absent on the
wire (never ``null``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Kind = Literal["fact", "summary"]
Status = Literal["active", "superseded", "forgotten", "evicted"]

KINDS: Final[tuple[str, ...]] = ("fact", "summary")
STATUSES: Final[tuple[str, ...]] = ("active", "superseded", "forgotten", "evicted")
ACTIVE: Final = "active"
SUPERSEDED: Final = "superseded"
FORGOTTEN: Final = "forgotten"
EVICTED: Final = "evicted"

#: A record's members on the wire (camelCase), in the order a record is written: those always
#: present, and those present only when set — absent otherwise, never ``null`` (MEM-RECORD.1,
#: MEM-WIRE.16).
RECORD_FIELDS: Final = (
    "id",
    "scopeKey",
    "kind",
    "text",
    "keywords",
    "sourceThreadKey",
    "createdAt",
    "useCount",
    "status",
)
RECORD_FIELDS_WHEN_SET: Final = ("sourceRunId", "lastUsedAt", "confidence", "supersedes")


@dataclass(frozen=True)
class MemoryRecord:
    """One stored record (MEM-RECORD.1, MEM-RECORD.2).

    ``text``, ``source_thread_key`` and ``source_run_id`` are provenance: fixed at minting and
    never changed afterwards (MEM-RECORD.3).  Only ``last_used_at``, ``use_count`` and
    ``status`` ever change on a stored record.
    """

    id: str
    scope_key: str
    kind: str
    text: str
    keywords: tuple[str, ...]
    source_thread_key: str
    source_run_id: str | None
    created_at: int
    last_used_at: int | None
    use_count: int
    confidence: float | None
    supersedes: str | None
    status: str


@dataclass(frozen=True)
class MemoryCandidate:
    """A record proposed for writing, before the store mints it (MEM-RECORD.4, MEM-WRITE.1)."""

    kind: str
    text: str
    source_thread_key: str
    keywords: tuple[str, ...] | None = None
    source_run_id: str | None = None
    confidence: float | None = None
    supersedes: str | None = None


def is_active(record: MemoryRecord) -> bool:
    """True when the record is live: retrievable, listable and a dedup target (MEM-RECORD.2)."""
    return record.status == ACTIVE
