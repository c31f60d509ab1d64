"""The bundled store's SQLite layer, inspected directly: FTS hygiene and reconciliation, the
schema and its indexes, restart persistence, all-or-nothing batches and statement shapes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conformance.embedded.memory.store import MemoryStore, fts_document
from tests.common.memory_store import Store, StoreFactory, fact, unique_scope


def _ro(path: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def fts_state(path: str) -> tuple[dict[int, str], dict[int, str]]:
    """(FTS rows rowid -> tokens, active records rid -> expected tokens)."""
    with _ro(path) as c:
        fts = dict(c.execute("SELECT rowid, tokens FROM records_fts").fetchall())
        active = {
            rid: fts_document(text, json.loads(kws))
            for rid, text, kws in c.execute(
                "SELECT rid, text, keywords FROM records WHERE status = 'active'"
            )
        }
    return fts, active


def statuses(path: str, scope: str) -> dict[str, str]:
    with _ro(path) as c:
        return dict(
            c.execute("SELECT id, status FROM records WHERE scope_key = ?", (scope,)).fetchall()
        )


# --------------------------------------------------------------------------- FTS hygiene


@pytest.mark.clause("MEM-STORE.4", "MEM-CAP.3")
def test_fts_holds_exactly_the_active_rows_after_every_soft_delete(store: Store) -> None:
    scope = unique_scope()
    store.write(scope, *[fact(f"hygiene record {i}", keywords=[f"kw{i}"]) for i in range(6)])
    store.write(scope, fact("hygiene replacement", supersedes=f"mem:{scope}:1"))
    assert store.forget(scope, f"mem:{scope}:2")
    store.clock.advance()
    store.write(scope, fact("hygiene newest"), cap=3)
    st = statuses(store.db, scope)
    assert sorted(st.values()) == sorted(
        ["superseded", "forgotten", "evicted", "evicted", "evicted", "active", "active", "active"]
    )
    fts, active = fts_state(store.db)
    assert fts == active  # same rows, and each row indexes exactly the engine's tokens
    with _ro(store.db) as c:
        dead = [
            rid
            for (rid,) in c.execute(
                "SELECT rid FROM records WHERE scope_key = ? AND status != 'active'", (scope,)
            )
        ]
    assert dead and not set(dead) & set(fts)


@pytest.mark.clause("MEM-STORE.4")
def test_reconciliation_at_start_removes_dead_rows_and_restores_missing_ones(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    db = str(tmp_path / "reconcile.sqlite3")
    s = make_store(db=db)
    scope = unique_scope()
    s.write(scope, fact("alive one"), fact("alive two"), fact("will be superseded"))
    s.write(scope, fact("replacement", supersedes=f"mem:{scope}:3"))
    s.handle.stop()
    with sqlite3.connect(db) as c:  # plant the damage an older deploy could have left
        (dead_rid,) = c.execute("SELECT rid FROM records WHERE status = 'superseded'").fetchone()
        c.execute(
            "INSERT INTO records_fts (rowid, tokens) VALUES (?, 'will be superseded')", (dead_rid,)
        )
        c.execute("INSERT INTO records_fts (rowid, tokens) VALUES (987654, 'ghost')")
        (alive_rid,) = c.execute("SELECT rid FROM records WHERE text = 'alive two'").fetchone()
        c.execute("DELETE FROM records_fts WHERE rowid = ?", (alive_rid,))
    fts, active = fts_state(db)
    assert fts != active
    s2 = make_store(db=db)
    fts, active = fts_state(db)
    assert fts == active
    assert [r["text"] for r in s2.retrieve(scope, "two")] == ["alive two"]
    assert s2.retrieve(scope, "ghost") == [] and s2.retrieve(scope, "superseded") == []
    # idempotent: a second reconciliation finds nothing to do
    assert s2.handle.store.reconcile_fts() == (0, 0)


# --------------------------------------------------------------------------- schema


@pytest.mark.clause("MEM-SEAM.2")
def test_schema_is_idempotent_and_has_the_status_prefixed_indexes(tmp_path: Path) -> None:
    db = str(tmp_path / "schema.sqlite3")
    for _ in range(2):  # re-applying over live data is a no-op
        m = MemoryStore(db)
        m.close()
    with _ro(db) as c:
        cols = {
            name: [row[2] for row in c.execute(f"PRAGMA index_info({name})")]
            for (name,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
            if name.startswith("records_")
        }
        mode = c.execute("PRAGMA journal_mode").fetchone()[0]
    assert cols["records_status_norm"] == ["scope_key", "status", "norm"]
    assert cols["records_active_seq"] == ["scope_key", "status", "seq"]
    assert cols["records_active_used"] == ["scope_key", "status", "last_used_at", "created_at"]
    assert mode == "wal"


# --------------------------------------------------------------------------- persistence


@pytest.mark.clause("MEM-STORE.12", "MEM-STORE.10", "MEM-STORE.9")
def test_a_restart_on_the_same_file_loses_nothing(make_store: StoreFactory, tmp_path: Path) -> None:
    db = str(tmp_path / "persist.sqlite3")
    s = make_store(db=db)
    scope = unique_scope()
    s.write(
        scope,
        fact("persisted fact", keywords=["persist"], sourceRunId="r1", confidence=0.7),
        fact("to supersede"),
        fact("to forget"),
    )
    s.write(scope, fact("superseding", supersedes=f"mem:{scope}:2"))
    s.forget(scope, f"mem:{scope}:3")
    s.clock.advance(5000)
    s.retrieve(scope, "persisted")
    before_list = s.list(scope)
    before_status = statuses(db, scope)
    s.handle.stop()

    s2 = make_store(db=db, clock=s.clock)
    assert s2.list(scope) == before_list
    assert statuses(db, scope) == before_status
    assert s2.retrieve(scope, "persist")[0]["useCount"] == 2
    # numbering continues, dedup sees the old rows, dead rows stay dead
    out = s2.write(scope, fact("PERSISTED  fact"), fact("to forget"))
    assert out == {"ok": True, "inserted": 1, "deduped": 1, "superseded": 0, "evicted": 0}
    assert s2.list(scope, 1)[0]["id"] == f"mem:{scope}:5"


# --------------------------------------------------------------------------- atomicity


class Boom(Exception):
    pass


@pytest.mark.clause("MEM-CAP.4")
def test_a_batch_that_fails_midway_leaves_nothing_behind(make_store: StoreFactory) -> None:
    armed = {"on": False}

    def hook() -> None:
        if armed["on"]:
            raise Boom("injected failure after the first candidate")

    s = make_store(write_hook=hook)
    scope = unique_scope()
    s.write(scope, fact("base one"), fact("base two"))
    before = s.list(scope)
    armed["on"] = True
    r = s.post(
        "/write",
        {
            "scopeKey": scope,
            "records": [
                fact("new one", supersedes=f"mem:{scope}:1"),
                fact("base two"),
                fact("new three"),
            ],
            "cap": 1,
        },
    )
    assert r.status_code == 500 and r.json() == {"error": "internal error"}
    armed["on"] = False
    assert s.list(scope) == before
    fts, active = fts_state(s.db)
    assert fts == active
    out = s.write(scope, fact("after failure"))
    assert out["inserted"] == 1 and s.list(scope, 1)[0]["id"] == f"mem:{scope}:3"


# --------------------------------------------------------------------------- statement shapes


def _trace(store: Store) -> list[str]:
    seen: list[str] = []
    store.handle.store._conn.set_trace_callback(seen.append)
    return seen


@pytest.mark.clause("MEM-STORE.3")
def test_the_usage_bump_is_one_batched_update(store: Store) -> None:
    scope = unique_scope()
    store.write(scope, *[fact(f"bump target {i}") for i in range(50)])
    store.write(scope, *[fact(f"bump other {i}") for i in range(10)])
    seen = _trace(store)
    try:
        got = store.retrieve(scope, "target", limit=50)
    finally:
        store.handle.store._conn.set_trace_callback(None)
    assert len(got) == 50
    updates = [q for q in seen if q.lstrip().upper().startswith("UPDATE")]
    assert len(updates) == 1
    assert all(r["useCount"] == 1 for r in store.list(scope, 50, "target"))
    assert all(r["useCount"] == 0 for r in store.list(scope, 50, "other"))


@pytest.mark.clause("MEM-CAP.1", "MEM-WRITE.7")
def test_an_under_cap_write_never_fetches_the_whole_active_set(store: Store) -> None:
    scope = unique_scope()
    store.write(scope, *[fact(f"existing {i}") for i in range(40)])
    seen = _trace(store)
    try:
        store.write(scope, fact("existing 3"), fact("fresh one", supersedes=f"mem:{scope}:5"))
        under = list(seen)
        seen.clear()
        store.write(scope, fact("over the cap"), cap=10)
        over = list(seen)
    finally:
        store.handle.store._conn.set_trace_callback(None)

    def full_scans(statements: list[Any]) -> list[str]:
        return [
            q
            for q in statements
            if q.lstrip().upper().startswith("SELECT")
            and "status = 'active'" in q
            and "norm =" not in q
            and "id =" not in q
            and "COUNT(*)" not in q
            and "MATCH" not in q
        ]

    assert full_scans(under) == []
    assert len(full_scans(over)) == 1
