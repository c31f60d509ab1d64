"""SQLite storage of the account memory ledger (the bundled store's ledger binding).

One table ``memory_records`` with every column the seed names (plus ``seq``, an integer primary
key that gives rows a stable insertion order), an FTS5 index that carries the bodies of active
records only and is maintained exclusively by triggers, and a per-scope
``consolidation_settings`` table.  The schema is created idempotently, so opening an existing
file is a no-op.  Times are stored as integer milliseconds since the Unix epoch.

The schema itself enforces the ledger's structural invariants, so a bug in the service shows up
as an integrity error instead of a silently wrong row:

* closed vocabularies for ``kind``, ``provenance`` and ``status``;
* an interval is never inverted, and it is open exactly while the record is active;
* at most one active member per conflict group in a scope (a partial unique index).

This module is storage only: no validation of wire params, no clock.  :mod:`.service`
owns the lifecycle rules and calls these helpers inside ``BEGIN IMMEDIATE`` transactions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

KINDS: tuple[str, ...] = ("preference", "fact", "decision", "constraint")
PROVENANCES: tuple[str, ...] = ("user_explicit", "model_proposal", "model_consolidation")
STATUSES: tuple[str, ...] = ("active", "proposed", "rejected", "superseded", "expired", "deleted")


def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


SCHEMA: tuple[str, ...] = (
    f"""
    CREATE TABLE IF NOT EXISTS memory_records (
        seq               INTEGER PRIMARY KEY,
        id                TEXT    NOT NULL UNIQUE,
        scope_key         TEXT    NOT NULL,
        kind              TEXT    NOT NULL CHECK (kind IN ({_sql_list(KINDS)})),
        body              TEXT    NOT NULL,
        provenance        TEXT    NOT NULL CHECK (provenance IN ({_sql_list(PROVENANCES)})),
        status            TEXT    NOT NULL CHECK (status IN ({_sql_list(STATUSES)})),
        source_session_id TEXT,
        supersedes        TEXT,
        superseded_by     TEXT,
        confidence_bps    INTEGER CHECK (confidence_bps IS NULL
                                         OR confidence_bps BETWEEN 0 AND 10000),
        rationale         TEXT,
        valid_from        INTEGER NOT NULL,
        valid_to          INTEGER CHECK (valid_to IS NULL OR valid_to >= valid_from),
        expires_at        INTEGER,
        conflict_group    TEXT,
        created_at        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL,
        CHECK ((status = 'active') = (valid_to IS NULL))
    )
    """,
    """
    CREATE INDEX IF NOT EXISTS memory_records_by_status
        ON memory_records (scope_key, status, updated_at)
    """,
    """
    CREATE INDEX IF NOT EXISTS memory_records_by_interval
        ON memory_records (scope_key, valid_from)
    """,
    """
    CREATE UNIQUE INDEX IF NOT EXISTS memory_records_one_active_per_group
        ON memory_records (scope_key, conflict_group)
        WHERE status = 'active' AND conflict_group IS NOT NULL
    """,
    """
    CREATE VIRTUAL TABLE IF NOT EXISTS memory_records_fts
        USING fts5 (record_id UNINDEXED, body)
    """,
    # The FTS index holds active bodies only, and only these triggers write it.  Its rowid is
    # the record's ``seq`` so that removal is a keyed delete, not a scan.
    """
    CREATE TRIGGER IF NOT EXISTS memory_records_fts_insert
    AFTER INSERT ON memory_records
    WHEN new.status = 'active'
    BEGIN
        INSERT INTO memory_records_fts (rowid, record_id, body)
        VALUES (new.seq, new.id, new.body);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS memory_records_fts_update
    AFTER UPDATE OF status, body ON memory_records
    BEGIN
        DELETE FROM memory_records_fts WHERE rowid = old.seq;
        INSERT INTO memory_records_fts (rowid, record_id, body)
        SELECT new.seq, new.id, new.body WHERE new.status = 'active';
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS memory_records_fts_delete
    AFTER DELETE ON memory_records
    BEGIN
        DELETE FROM memory_records_fts WHERE rowid = old.seq;
    END
    """,
    """
    CREATE TABLE IF NOT EXISTS consolidation_settings (
        scope_key        TEXT    PRIMARY KEY,
        mode             TEXT    NOT NULL,
        harness          TEXT,
        model            TEXT,
        max_records      INTEGER NOT NULL CHECK (max_records BETWEEN 1 AND 10000),
        allow_removal    INTEGER NOT NULL CHECK (allow_removal IN (0, 1)),
        debounce_seconds INTEGER NOT NULL CHECK (debounce_seconds BETWEEN 30 AND 86400),
        updated_at       INTEGER NOT NULL
    )
    """,
)

RECORD_COLUMNS: tuple[str, ...] = (
    "id",
    "scope_key",
    "kind",
    "body",
    "provenance",
    "status",
    "source_session_id",
    "supersedes",
    "superseded_by",
    "confidence_bps",
    "rationale",
    "valid_from",
    "valid_to",
    "expires_at",
    "conflict_group",
    "created_at",
    "updated_at",
)
_SELECT = "SELECT " + ", ".join(RECORD_COLUMNS) + ", seq FROM memory_records"
# Newest update first; rows updated at the same instant fall back to the later insertion.
_NEWEST_UPDATE_FIRST = "ORDER BY updated_at DESC, seq DESC"


@dataclass(frozen=True)
class Row:  # long: one field per column of the seed's memory_records table
    """One ``memory_records`` row as stored (times in epoch milliseconds)."""

    id: str
    scope_key: str
    kind: str
    body: str
    provenance: str
    status: str
    source_session_id: str | None
    supersedes: str | None
    superseded_by: str | None
    confidence_bps: int | None
    rationale: str | None
    valid_from: int
    valid_to: int | None
    expires_at: int | None
    conflict_group: str | None
    created_at: int
    updated_at: int
    seq: int = -1
    """Write order (the table's integer key); -1 on a row not yet inserted.  Not a wire field."""


@dataclass(frozen=True)
class Settings:
    """A scope's consolidation settings (defaults when the scope never stored any)."""

    mode: str
    harness: str | None
    model: str | None
    max_records: int
    allow_removal: bool
    debounce_seconds: int


DEFAULT_SETTINGS = Settings(
    mode="off",
    harness=None,
    model=None,
    max_records=200,
    allow_removal=False,
    debounce_seconds=600,
)


def _row(values: tuple[Any, ...]) -> Row:
    return Row(*values)


class LedgerStore:
    """A SQLite connection holding the ledger tables.  Not thread-safe by itself: the caller
    (``LedgerService``) serialises every use behind one lock."""

    def __init__(self, db: str) -> None:
        # Autocommit mode: every write goes through an explicit BEGIN IMMEDIATE in ``write()``.
        self.conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA foreign_keys = ON")
        if db != ":memory:" and not db.startswith("file::memory:"):
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
        with self.write():
            for statement in SCHEMA:
                self.conn.execute(statement)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back on any
        exception (so a refused or failed request leaves the database untouched)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            # A storage fault may have rolled back already, or make ROLLBACK fail: neither may
            # hide the original error nor leave the connection inside a transaction.
            if self.conn.in_transaction:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise

    # ---- records -------------------------------------------------------------------------

    def get(self, record_id: str) -> Row | None:
        cur = self.conn.execute(_SELECT + " WHERE id = ?", (record_id,))
        found = cur.fetchone()
        return None if found is None else _row(found)

    def insert(self, row: Row) -> None:
        placeholders = ", ".join("?" for _ in RECORD_COLUMNS)
        self.conn.execute(
            f"INSERT INTO memory_records ({', '.join(RECORD_COLUMNS)}) VALUES ({placeholders})",
            tuple(getattr(row, c) for c in RECORD_COLUMNS),
        )

    def update(self, record_id: str, fields: Mapping[str, Any]) -> None:
        for name in fields:
            if name not in RECORD_COLUMNS or name == "id":
                raise ValueError(f"not an updatable column: {name}")
        assignments = ", ".join(f"{name} = ?" for name in fields)
        cur = self.conn.execute(
            f"UPDATE memory_records SET {assignments} WHERE id = ?",
            (*fields.values(), record_id),
        )
        if cur.rowcount != 1:
            raise LookupError(record_id)

    def held(self, scope_key: str) -> int:
        """Records the budget counts: active ones plus proposals awaiting a decision."""
        cur = self.conn.execute(
            "SELECT count(*) FROM memory_records"
            " WHERE scope_key = ? AND status IN ('active', 'proposed')",
            (scope_key,),
        )
        return int(cur.fetchone()[0])

    def by_status(self, scope_key: str, status: str, limit: int | None = None) -> list[Row]:
        sql = _SELECT + " WHERE scope_key = ? AND status = ? " + _NEWEST_UPDATE_FIRST
        params: tuple[Any, ...] = (scope_key, status)
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        return [_row(r) for r in self.conn.execute(sql, params)]

    def active_in_group(self, scope_key: str, group: str) -> list[Row]:
        cur = self.conn.execute(
            _SELECT + " WHERE scope_key = ? AND conflict_group = ? AND status = 'active' "
            "ORDER BY seq",
            (scope_key, group),
        )
        return [_row(r) for r in cur]

    def as_of(self, scope_key: str, at: int, exclude_statuses: tuple[str, ...]) -> list[Row]:
        """Rows whose half-open interval ``[valid_from, valid_to)`` contains ``at``."""
        sql = (
            _SELECT + " WHERE scope_key = ? AND valid_from <= ?"
            " AND (valid_to IS NULL OR ? < valid_to)"
        )
        params: tuple[Any, ...] = (scope_key, at, at)
        if exclude_statuses:
            sql += f" AND status NOT IN ({', '.join('?' for _ in exclude_statuses)})"
            params += exclude_statuses
        sql += " " + _NEWEST_UPDATE_FIRST
        return [_row(r) for r in self.conn.execute(sql, params)]

    def due_for_expiry(self, scope_key: str, at: int) -> list[Row]:
        """The scope's active rows whose expiry is at or before ``at`` (inclusive), in write
        order.  ``at`` is an argument: no query reads a clock."""
        cur = self.conn.execute(
            _SELECT + " WHERE scope_key = ? AND status = 'active' AND expires_at IS NOT NULL"
            " AND expires_at <= ? ORDER BY seq",
            (scope_key, at),
        )
        return [_row(r) for r in cur]

    # ---- settings ------------------------------------------------------------------------

    def settings(self, scope_key: str) -> Settings:
        cur = self.conn.execute(
            "SELECT mode, harness, model, max_records, allow_removal, debounce_seconds"
            " FROM consolidation_settings WHERE scope_key = ?",
            (scope_key,),
        )
        found = cur.fetchone()
        if found is None:
            return DEFAULT_SETTINGS
        mode, harness, model, max_records, allow_removal, debounce = found
        return Settings(mode, harness, model, int(max_records), bool(allow_removal), int(debounce))

    def put_settings(self, scope_key: str, settings: Settings, now: int) -> None:
        self.conn.execute(
            "INSERT INTO consolidation_settings (scope_key, mode, harness, model, max_records,"
            " allow_removal, debounce_seconds, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (scope_key) DO UPDATE SET mode = excluded.mode,"
            " harness = excluded.harness, model = excluded.model,"
            " max_records = excluded.max_records, allow_removal = excluded.allow_removal,"
            " debounce_seconds = excluded.debounce_seconds, updated_at = excluded.updated_at",
            (
                scope_key,
                settings.mode,
                settings.harness,
                settings.model,
                settings.max_records,
                int(settings.allow_removal),
                settings.debounce_seconds,
                now,
            ),
        )

    # ---- whole-store ---------------------------------------------------------------------

    def reset(self) -> None:
        """Empty every table (test control only).  The FTS index empties through its trigger."""
        with self.write():
            self.conn.execute("DELETE FROM memory_records")
            self.conn.execute("DELETE FROM consolidation_settings")

    def dump(self) -> list[tuple[Any, ...]]:
        """The full content of the ledger's tables (records with every column, the FTS index,
        the settings) in a stable order, for equality checks."""
        out: list[tuple[Any, ...]] = []
        for table, order in (
            ("memory_records", "seq"),
            ("memory_records_fts", "rowid"),
            ("consolidation_settings", "scope_key"),
        ):
            cur = self.conn.execute(f"SELECT rowid, * FROM {table} ORDER BY {order}")
            out.extend((table, *row) for row in cur)
        return out
