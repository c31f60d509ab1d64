"""The ledger's SQLite storage: the FTS index, the schema, persistence, atomicity, concurrency.

These tests look inside the database (the service's own connection, under its lock) to check
what the wire cannot show: the FTS5 index holds exactly the active bodies and is maintained by
triggers, a refused or failed request leaves every table byte-for-byte as it was, the schema
is idempotent and enforces the ledger's invariants, and a file database survives a restart.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.embedded.ledger.service import LedgerService, record_to_wire
from conformance.embedded.ledger.store import LedgerStore, Row
from conformance.embedded.server import start_server
from tests.common.ledger_store import (
    BUDGET_MSG,
    CREDENTIAL_MSG,
    DAY,
    SEC,
    T0,
    TOKEN,
    Ledger,
    direct_transport,
    http_transport,
    iso,
)

SEED_COLUMNS = {
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
}


@pytest.fixture
def service() -> Iterator[LedgerService]:
    svc = LedgerService(":memory:", test_control=True)
    yield svc
    svc.close()


def client_of(service: LedgerService) -> Ledger:
    ledger = Ledger(direct_transport(service), "direct")
    ledger.reset()
    return ledger


def fts_rows(service: LedgerService) -> list[tuple[str, str]]:
    with service.lock:
        cur = service.store.conn.execute(
            "SELECT record_id, body FROM memory_records_fts ORDER BY record_id"
        )
        return [(str(a), str(b)) for a, b in cur]


def active_rows(service: LedgerService) -> list[tuple[str, str]]:
    with service.lock:
        cur = service.store.conn.execute(
            "SELECT id, body FROM memory_records WHERE status = 'active' ORDER BY id"
        )
        return [(str(a), str(b)) for a, b in cur]


def search(service: LedgerService, word: str) -> set[str]:
    with service.lock:
        cur = service.store.conn.execute(
            "SELECT record_id FROM memory_records_fts WHERE memory_records_fts MATCH ?", (word,)
        )
        return {str(r[0]) for r in cur}


def stored_body(service: LedgerService, record_id: str) -> str:
    with service.lock:
        row = service.store.conn.execute(
            "SELECT body FROM memory_records WHERE id = ?", (record_id,)
        ).fetchone()
    return str(row[0])


def dump(service: LedgerService) -> list[tuple[Any, ...]]:
    with service.lock:
        return service.store.dump()


# ---- the FTS index -------------------------------------------------------------------------


@pytest.mark.clause("LED-FTS.1", "LED-STATUS.4", "LED-EXP.3")
def test_the_index_holds_exactly_the_active_bodies_after_every_transition(
    service: LedgerService,
) -> None:
    led = client_of(service)
    expected: dict[str, str] = {}

    def check(step: str) -> None:
        assert fts_rows(service) == sorted(expected.items()), step
        assert active_rows(service) == sorted(expected.items()), step

    check("empty")
    a = led.save("alpha tea")
    b = led.save("bravo coffee")
    expected |= {a["id"]: "alpha tea", b["id"]: "bravo coffee"}
    check("save")
    led.at(T0 + SEC)
    a2 = led.supersede(a["id"], "alpha green tea")
    del expected[a["id"]]
    expected[a2["id"]] = "alpha green tea"
    check("supersede")
    led.delete(b["id"])
    del expected[b["id"]]
    check("delete")
    assert stored_body(service, b["id"]) == ""  # the tombstone forgets the body itself
    assert search(service, "bravo") == set() and search(service, "alpha") == {a2["id"]}
    p1 = led.propose("charlie proposal")
    p2 = led.propose("delta proposal")
    p3 = led.propose("echo proposal")
    check("propose")
    assert search(service, "proposal") == set()
    led.approve(p1["id"])
    expected[p1["id"]] = "charlie proposal"
    check("approve")
    led.at(T0 + 2 * SEC)
    led.approve(p2["id"])
    expected[p2["id"]] = "delta proposal"
    check("approve again")
    led.at(T0 + 3 * SEC)
    led.group("g", p1["id"], p2["id"])  # supersedes p1 (the earlier update)
    del expected[p1["id"]]
    check("group")
    led.reject(p3["id"])
    check("reject")
    led.expire_at(a2["id"], T0 + DAY)
    check("expire")
    assert led.sweep(T0 + DAY) == [a2["id"]]
    del expected[a2["id"]]
    check("sweep")
    assert search(service, "alpha") == set()
    led.configure(allowRemoval=True)
    f = led.save("foxtrot")
    g = led.save("golf")
    h = led.save("hotel")
    i = led.save("india")
    j = led.save("juliet")
    expected |= {x["id"]: x["body"] for x in (f, g, h, i, j)}
    check("saves")
    led.at(T0 + 3 * SEC)
    counts = led.consolidate(
        {"operation": "merge", "targets": [f["id"], g["id"]], "body": "foxtrot golf"},
        {"operation": "correct", "targets": [h["id"]], "body": "hotel corrected"},
        {"operation": "group", "targets": [i["id"], p2["id"]], "subject": "g"},
        {"operation": "retire", "targets": [j["id"]]},
        {"operation": "expire", "targets": [i["id"]], "afterDays": 1},
    )
    assert counts["applied"] == 5
    for gone in (f, g, h, j):
        del expected[gone["id"]]
    del expected[p2["id"]]  # i was updated after p2: i survives the group
    for rec in led.listing():
        expected.setdefault(rec["id"], rec["body"])
    assert sorted(expected.values()) == ["foxtrot golf", "hotel corrected", "india"]
    check("consolidate")
    assert search(service, "juliet") == set() and search(service, "golf") != set()
    assert stored_body(service, j["id"]) == ""  # retire tombstones like a delete
    assert stored_body(service, h["id"]) == "hotel"  # superseded bodies stay as history
    led.ctl("reset")
    expected.clear()
    check("reset")


@pytest.mark.clause("LED-FTS.1")
def test_the_index_is_maintained_by_triggers(service: LedgerService) -> None:
    """Rows written with plain SQL (no service code) still move in and out of the index."""
    with service.lock:
        conn = service.store.conn
        names = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        assert {
            "memory_records_fts_insert",
            "memory_records_fts_update",
            "memory_records_fts_delete",
        } <= names
        conn.execute(
            "INSERT INTO memory_records (id, scope_key, kind, body, provenance, status,"
            " valid_from, valid_to, created_at, updated_at) VALUES"
            " ('r1', 'account:local', 'fact', 'raw sql body', 'user_explicit', 'active',"
            " 1, NULL, 1, 1),"
            " ('r2', 'account:local', 'fact', 'raw proposal', 'model_proposal', 'proposed',"
            " 1, 1, 1, 1)"
        )
    assert fts_rows(service) == [("r1", "raw sql body")]
    with service.lock:
        service.store.conn.execute(
            "UPDATE memory_records SET status = 'expired', valid_to = 2 WHERE id = 'r1'"
        )
        service.store.conn.execute(
            "UPDATE memory_records SET status = 'active', valid_to = NULL WHERE id = 'r2'"
        )
    assert fts_rows(service) == [("r2", "raw proposal")]
    with service.lock:
        service.store.conn.execute("UPDATE memory_records SET body = 'changed' WHERE id = 'r2'")
    assert fts_rows(service) == [("r2", "changed")]
    with service.lock:
        service.store.conn.execute("DELETE FROM memory_records")
    assert fts_rows(service) == []


@pytest.mark.clause("LED-FORGET.3", "LED-WIRE.4")
def test_a_deleted_row_is_never_serialised_with_its_body() -> None:
    """Defence in depth: even a tombstone row still holding text is answered bodiless."""
    row = Row(
        id="r1",
        scope_key="account:local",
        kind="fact",
        body="secret thing",
        provenance="user_explicit",
        status="deleted",
        source_session_id=None,
        supersedes=None,
        superseded_by=None,
        confidence_bps=None,
        rationale=None,
        valid_from=T0,
        valid_to=T0 + 1,
        expires_at=None,
        conflict_group=None,
        created_at=T0,
        updated_at=T0 + 1,
    )
    wire = record_to_wire(row)
    assert wire["body"] == "" and wire["validTo"] == iso(T0 + 1)
    assert record_to_wire(replace(row, status="expired"))["body"] == "secret thing"


# ---- the schema ----------------------------------------------------------------------------


@pytest.mark.clause("LED-REC.1")
def test_schema_has_every_seed_column_and_is_idempotent(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.sqlite3")
    first = LedgerStore(path)
    with first.write():
        first.conn.execute(
            "INSERT INTO memory_records (id, scope_key, kind, body, provenance, status,"
            " valid_from, created_at, updated_at)"
            " VALUES ('r1', 'account:local', 'fact', 'b', 'user_explicit', 'active', 1, 1, 1)"
        )
    first.close()
    second = LedgerStore(path)  # opening again re-runs the schema: a no-op
    cols = {r[1] for r in second.conn.execute("PRAGMA table_info(memory_records)")}
    assert SEED_COLUMNS <= cols and cols - SEED_COLUMNS == {"seq"}
    objects = list(second.conn.execute("SELECT type, name FROM sqlite_master ORDER BY name"))
    assert len(objects) == len(set(objects))
    assert second.get("r1") is not None and second.held("account:local") == 1
    second.close()


@pytest.mark.clause("LED-GROUP.1", "LED-INT.5", "LED-STATUS.1", "LED-INT.1")
@pytest.mark.parametrize(
    "values",
    [
        # a second active member of group g
        "('r9', 'account:local', 'fact', 'b', 'user_explicit', 'active', NULL, 5, NULL, 'g')",
        # an active record with a closed interval
        "('r9', 'account:local', 'fact', 'b', 'user_explicit', 'active', NULL, 5, 6, NULL)",
        # a closed record with an open interval
        "('r9', 'account:local', 'fact', 'b', 'user_explicit', 'superseded', NULL, 5, NULL, NULL)",
        # an interval running backwards
        "('r9', 'account:local', 'fact', 'b', 'user_explicit', 'expired', NULL, 5, 4, NULL)",
        # an unknown status, kind, provenance; confidence out of range
        "('r9', 'account:local', 'fact', 'b', 'user_explicit', 'archived', NULL, 5, 5, NULL)",
        "('r9', 'account:local', 'note', 'b', 'user_explicit', 'active', NULL, 5, NULL, NULL)",
        "('r9', 'account:local', 'fact', 'b', 'import', 'active', NULL, 5, NULL, NULL)",
        "('r9', 'account:local', 'fact', 'b', 'user_explicit', 'active', 10001, 5, NULL, NULL)",
        # a duplicate id
        "('r1', 'account:local', 'fact', 'b', 'user_explicit', 'rejected', NULL, 5, 5, NULL)",
    ],
)
def test_the_schema_enforces_the_ledger_invariants(service: LedgerService, values: str) -> None:
    with service.lock:
        conn = service.store.conn
        conn.execute(
            "INSERT INTO memory_records (id, scope_key, kind, body, provenance, status,"
            " confidence_bps, valid_from, valid_to, conflict_group, created_at, updated_at)"
            " VALUES ('r1', 'account:local', 'fact', 'a', 'user_explicit', 'active', NULL, 1,"
            " NULL, 'g', 1, 1)"
        )
        insert = (
            "INSERT INTO memory_records (id, scope_key, kind, body, provenance, status,"
            " confidence_bps, valid_from, valid_to, conflict_group, created_at, updated_at)"
            " VALUES {}"
        )
        # The statement itself is sound: a legal row of the same shape goes in (and out).
        legal = "('r0', 'account:local', 'fact', 'b', 'user_explicit', 'superseded', 0, 5, 5, 'g')"
        conn.execute(insert.format(legal[:-1] + ", 5, 5)"))
        conn.execute("DELETE FROM memory_records WHERE id = 'r0'")
        before = service.store.dump()
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(insert.format(values[:-1] + ", 5, 5)"))
        assert service.store.dump() == before


# ---- atomicity -----------------------------------------------------------------------------


def _populated(service: LedgerService) -> tuple[Ledger, dict[str, str]]:
    led = client_of(service)
    led.configure(maxRecords=4, allowRemoval=False)
    a = led.save("alpha", sessionId="s1")
    led.at(T0 + SEC)
    b = led.approve(led.propose("bravo", confidenceBps=500)["id"])
    c = led.supersede(a["id"], "alpha 2")
    p = led.propose("pending")
    dead = led.save("dead")
    led.delete(dead["id"])
    e = led.save("echo")
    led.at(T0 + 2 * SEC)
    ids = {"a": a["id"], "b": b["id"], "c": c["id"], "p": p["id"], "dead": dead["id"], "e": e["id"]}
    return led, ids  # held: b, c, e (active) and p (proposed) = 4 of 4


REFUSALS: list[tuple[str, dict[str, Any], int, str | None]] = [
    ("memory/save_memory_record", {"body": "one more"}, 409, BUDGET_MSG.format(held=4, budget=4)),
    ("_test/propose", {"body": "one more"}, 409, BUDGET_MSG.format(held=4, budget=4)),
    ("memory/save_memory_record", {"body": "ghp_" + "x" * 36}, 409, CREDENTIAL_MSG),
    ("memory/supersede_memory_record", {"recordId": "$c", "body": "sk-" + "x" * 30}, 409, None),
    ("memory/supersede_memory_record", {"recordId": "$a", "body": "x"}, 409, None),
    ("memory/delete_memory_record", {"recordId": "$dead"}, 409, None),
    ("memory/delete_memory_record", {"recordId": "$p"}, 409, None),
    ("memory/delete_memory_record", {"recordId": "nope"}, 409, None),
    ("memory/approve_memory_record", {"recordId": "$b"}, 409, None),
    ("memory/reject_memory_record", {"recordId": "$c"}, 409, None),
    ("_test/propose", {"body": "x", "conflictGroup": "g"}, 400, None),
    ("memory/save_memory_record", {"body": "x", "scopeKey": "account:local"}, 400, None),
    ("memory/save_memory_record", {"body": "   "}, 400, None),
    ("memory/update_consolidation_settings", {"mode": "on", "maxRecords": 9}, 400, None),
    ("memory/update_consolidation_settings", {"mode": "off", "maxRecords": 0}, 400, None),
    ("_test/consolidate", {"operations": [{"operation": "retire", "targets": ["$c"]}]}, 200, None),
    ("_test/consolidate", {"operations": [{"operation": "keep", "targets": ["$c"]}]}, 200, None),
    ("_test/consolidate", {"operations": [{"operation": "merge", "targets": ["$c"]}]}, 200, None),
]


def _bind(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        return ids[value[1:]]
    if isinstance(value, list):
        return [_bind(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _bind(v, ids) for k, v in value.items()}
    return value


@pytest.mark.clause(
    "LED-WIRE.8", "LED-BUDGET.2", "LED-CRED.2", "LED-STATUS.3", "LED-VOCAB.7", "LED-GATE.1"
)
@pytest.mark.parametrize(("method", "params", "status", "message"), REFUSALS)
def test_a_refused_request_leaves_every_table_byte_for_byte_equal(
    service: LedgerService,
    method: str,
    params: dict[str, Any],
    status: int,
    message: str | None,
) -> None:
    led, ids = _populated(service)
    before = dump(service)
    assert any(row[0] == "memory_records_fts" for row in before)
    reply = led.call(method, _bind(params, ids))
    assert reply.status == status, reply
    if message is not None:
        assert reply.message == message
    if status == 200:
        assert reply.body["applied"] == 0
    assert dump(service) == before


@pytest.mark.clause("LED-WIRE.8", "LED-INT.3")
def test_a_write_failing_halfway_is_rolled_back(
    service: LedgerService, monkeypatch: pytest.MonkeyPatch
) -> None:
    led, ids = _populated(service)
    before = dump(service)

    def broken_insert(row: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    # The predecessor is closed before the successor is inserted: the close must roll back.
    monkeypatch.setattr(service.store, "insert", broken_insert)
    reply = led.call("memory/supersede_memory_record", {"recordId": ids["c"], "body": "new"})
    assert reply.status == 500
    merge = {"operation": "merge", "targets": [ids["b"], ids["c"]], "body": "b+c"}
    assert led.call("_test/consolidate", {"operations": [merge]}).status == 500
    assert dump(service) == before
    monkeypatch.undo()
    assert led.supersede(ids["c"], "new")["supersedes"] == ids["c"]


# ---- persistence ---------------------------------------------------------------------------


@pytest.mark.clause("LED-REC.4", "LED-CONS.2", "LED-FTS.1")
def test_a_file_database_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    first = LedgerService(path, test_control=True)
    led, ids = _populated(first)
    led.expire_at(ids["c"], T0 + DAY)
    snapshot, content = led.snapshot(), dump(first)
    first.close()

    second = LedgerService(str(path), test_control=True)
    again = Ledger(direct_transport(second), "direct")
    again.at(T0 + 2 * SEC)
    assert dump(second) == content
    assert again.snapshot() == snapshot
    assert fts_rows(second) == active_rows(second) != []
    # The reopened ledger keeps working: budget (4 held of 4), lifecycle, sweep.
    assert again.call("memory/save_memory_record", {"body": "x"}).status == 409
    assert again.sweep(T0 + DAY) == [ids["c"]]
    assert again.save("fits now")["status"] == "active"
    second.close()


@pytest.mark.clause("LED-REC.4", "LED-WIRE.1")
def test_the_server_serves_a_file_ledger_across_restarts(tmp_path: Path) -> None:
    path = str(tmp_path / "store.sqlite3")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    handle = start_server(db=path, token=TOKEN, test_control=True)
    with httpx.Client(base_url=handle.url, headers=auth, timeout=10.0) as client:
        led = Ledger(http_transport(client), "http")
        led.at(T0)
        rec = led.save("survives restarts", kind="fact")
        led.configure("propose", maxRecords=50)
        snapshot = led.snapshot()
    handle.stop()
    handle = start_server(db=path, token=TOKEN, test_control=False)
    try:
        with httpx.Client(base_url=handle.url, headers=auth, timeout=10.0) as client:
            listed = client.post(
                "/ledger/memory/list_memory_records", json={"scopeKey": "account:local"}
            )
            assert listed.status_code == 200 and listed.json()["records"] == [rec]
            settings = client.post("/ledger/memory/get_consolidation_settings", json={})
            assert settings.json() == snapshot[3]
            # Without --test-control the controls do not exist.
            for name in ("reset", "packet", "set_clock"):
                reply = client.post(f"/ledger/_test/{name}", json={})
                assert reply.status_code == 404
    finally:
        handle.stop()


@pytest.mark.clause("LED-WIRE.7")
def test_controls_are_not_found_without_test_control() -> None:
    service = LedgerService(":memory:")
    try:
        for name in ("reset", "set_clock", "sweep", "propose", "consolidate", "packet"):
            status, body = service.handle_test(name, b"{}")
            assert (status, body["error"]["code"]) == (404, -32601)
        assert service.handle("memory/get_consolidation_settings", b"{}")[0] == 200
    finally:
        service.close()


# ---- concurrency ---------------------------------------------------------------------------


@pytest.mark.clause("LED-BUDGET.2", "LED-BUDGET.4", "LED-REC.3", "LED-FTS.1")
def test_concurrent_saves_over_http_never_exceed_the_budget() -> None:
    handle = start_server(test_control=True, token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    statuses: list[tuple[int, Any]] = []
    lock = threading.Lock()
    try:
        with httpx.Client(base_url=handle.url, headers=auth, timeout=10.0) as client:
            led = Ledger(http_transport(client), "http")
            led.reset()
            led.configure(maxRecords=25)

        def worker(n: int) -> None:
            with httpx.Client(base_url=handle.url, headers=auth, timeout=30.0) as c:
                for i in range(8):
                    path = "/ledger/memory/save_memory_record"
                    if i % 3 == 2:
                        path = "/ledger/_test/propose"
                    r = c.post(path, json={"body": f"worker {n} item {i}"})
                    with lock:
                        statuses.append((r.status_code, r.json()))

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        ok = [body for status, body in statuses if status == 200]
        refused = [body for status, body in statuses if status != 200]
        assert len(statuses) == 48 and len(ok) == 25
        assert {b["error"]["message"] for b in refused} == {BUDGET_MSG.format(held=25, budget=25)}
        assert len({b["id"] for b in ok}) == 25
        with httpx.Client(base_url=handle.url, headers=auth, timeout=10.0) as client:
            led = Ledger(http_transport(client), "http")
            held = len(led.listing()) + len(led.listing("proposed"))
            assert held == 25
        service = handle.ledger
        assert service is not None
        assert fts_rows(service) == active_rows(service)
    finally:
        handle.stop()
