"""The bundled Memory Worker's SQLite schema and the small pieces around it: the ``records``
table and its FTS5 shadow, a row read back as a ``MemoryRecord``, a record's FTS document and
a MATCH built only from engine tokens, the rollback that survives a storage fault, the clock
and what one ``/write`` batch did.  ``store`` uses them; it holds the logic."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reference.memory.records import MemoryRecord
from reference.memory.scoring import tokenize

SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS records (
        rid               INTEGER PRIMARY KEY,
        id                TEXT    NOT NULL UNIQUE,
        scope_key         TEXT    NOT NULL,
        seq               INTEGER NOT NULL CHECK (seq >= 1),
        kind              TEXT    NOT NULL CHECK (kind IN ('fact', 'summary')),
        text              TEXT    NOT NULL,
        norm              TEXT    NOT NULL,
        keywords          TEXT    NOT NULL,
        source_thread_key TEXT    NOT NULL,
        source_run_id     TEXT,
        created_at        INTEGER NOT NULL,
        last_used_at      INTEGER,
        use_count         INTEGER NOT NULL DEFAULT 0,
        confidence        REAL,
        supersedes        TEXT,
        status            TEXT    NOT NULL
                          CHECK (status IN ('active', 'superseded', 'forgotten', 'evicted')),
        UNIQUE (scope_key, seq)
    )
    """,
    # Write-time dedup: the active rows of one scope with one normalized text.
    "CREATE INDEX IF NOT EXISTS records_status_norm ON records (scope_key, status, norm)",
    # /list's newest-first page.
    "CREATE INDEX IF NOT EXISTS records_active_seq ON records (scope_key, status, seq DESC)",
    # Status-prefixed scans: the active COUNT(*) and the eviction fetch.
    "CREATE INDEX IF NOT EXISTS records_active_used"
    " ON records (scope_key, status, last_used_at DESC, created_at DESC)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(tokens, tokenize = 'ascii')",
)

COLUMNS = (
    "id, scope_key, kind, text, keywords, source_thread_key, source_run_id, created_at,"
    " last_used_at, use_count, confidence, supersedes, status"
)
R_COLUMNS = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))

# SQLite's default SQLITE_MAX_VARIABLE_NUMBER is 32766 since 3.32; a usage bump binds at most
# MAX limit (50) ids plus one timestamp, far below it.


def system_clock_ms() -> int:
    """Wall-clock time in integer milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class WriteCounts:
    """What one ``/write`` batch did (seed §18, §28)."""

    inserted: int
    deduped: int
    superseded: int
    evicted: int


def fts_document(text: str, keywords: Sequence[str]) -> str:
    """The FTS row of a record: the engine's tokens of its text (with repeats), then those of
    its keywords that the text lacks, space-joined.  Its token set is exactly the set the
    engine matches a record by (text tokens and keyword tokens)."""
    tokens = tokenize(text)
    seen = set(tokens)
    for kw in keywords:
        for t in tokenize(kw):
            if t not in seen:
                seen.add(t)
                tokens.append(t)
    return " ".join(tokens)


def match_expression(tokens: Sequence[str]) -> str:
    """A quoted-OR FTS5 MATCH over engine tokens (``[a-z0-9]+`` only, so quoting is total)."""
    for t in tokens:
        if not t or not t.isascii() or not t.isalnum() or t != t.lower():
            raise ValueError(f"not an engine token: {t!r}")
    return " OR ".join(f'"{t}"' for t in tokens)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back after a failed statement or COMMIT.  A storage fault (disk full, I/O error)
    may already have rolled the transaction back, or may make ROLLBACK fail too: neither may
    hide the original error nor leave the connection inside a transaction."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def row_record(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        scope_key=row[1],
        kind=row[2],
        text=row[3],
        keywords=tuple(json.loads(row[4])),
        source_thread_key=row[5],
        source_run_id=row[6],
        created_at=row[7],
        last_used_at=row[8],
        use_count=row[9],
        confidence=row[10],
        supersedes=row[11],
        status=row[12],
    )


def seq_of(record_id: str) -> int:
    return int(record_id.rsplit(":", 1)[1])
