"""The bundled store under a hostile or failing environment: absolute-form request targets, a
burst of short connections, a flood of slow clients, and storage faults on real SQLite.

Nothing here asserts a latency: a burst is judged by every client completing correctly (a
connect that does not complete at once is a SYN dropped by a full listen backlog, which the
kernel retries only after a second); a slow client by the server closing it while others are
served."""

from __future__ import annotations

import io
import itertools
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from conformance.embedded.storage_faults import storage_fault
from tests.common.memory_store import (
    TOKEN,
    RawResponse,
    StoreFactory,
    fact,
    http_request,
    raw_exchange,
)

JSON_AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def _hostport(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _body(obj: Any) -> bytes:
    return json.dumps(obj).encode()


# --------------------------------------------------------------------------- absolute form


@pytest.mark.clause("MEM-WIRE.1", "LED-WIRE.1")
def test_an_absolute_form_request_target_is_routed_by_its_path(make_store: StoreFactory) -> None:
    s = make_store()
    s.write("org:abs", fact("absolute form reaches the route"))
    host, port = _hostport(s.url)
    body = _body({"scopeKey": "org:abs", "limit": 5})
    [listed] = raw_exchange(
        s.url, http_request("POST", f"http://{host}:{port}/list?x=1", body, JSON_AUTH)
    )
    assert listed.status == 200, listed.body
    assert [r["text"] for r in listed.json()["records"]] == ["absolute form reaches the route"]
    [health] = raw_exchange(s.url, http_request("GET", f"HTTP://{host}/healthz", b""))
    assert health.status == 200 and health.json()["ok"] is True
    [ledger] = raw_exchange(
        s.url,
        http_request(
            "POST", f"https://{host}/ledger/memory/get_consolidation_settings", b"{}", JSON_AUTH
        ),
    )
    assert ledger.status == 200, ledger.body
    # An absolute-form target still names a path exactly: an unknown one is 404.
    [unknown] = raw_exchange(s.url, http_request("POST", f"http://{host}/listx", body, JSON_AUTH))
    assert unknown.status == 404


# --------------------------------------------------------------------------- load and floods


def _one_shot(url: str, body: bytes, barrier: threading.Barrier) -> RawResponse:
    """One request on a fresh ``Connection: close`` connection, started with all the others.

    The connect may take 0.9 s at most: on loopback a connect completes in the kernel at once
    unless the listen backlog is full and the SYN is dropped (retried after 1 s)."""
    host, port = _hostport(url)
    barrier.wait(timeout=10)
    sock = socket.create_connection((host, port), timeout=0.9)
    try:
        sock.settimeout(20)
        sock.sendall(http_request("POST", "/list", body, {**JSON_AUTH, "Connection": "close"}))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    finally:
        sock.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return RawResponse(int(head.split(b" ")[1]), {}, payload, True)


@pytest.mark.clause("MEM-WIRE.19", "MEM-WIRE.14")
def test_a_burst_of_short_connections_is_served_without_dropped_connects(
    make_store: StoreFactory,
) -> None:
    s = make_store()
    s.write("org:burst", fact("burst record"))
    n = 64
    barrier = threading.Barrier(n)
    results: list[RawResponse | BaseException] = [RuntimeError("not run")] * n

    def client(i: int) -> None:
        try:
            results[i] = _one_shot(s.url, _body({"scopeKey": "org:burst", "limit": 1}), barrier)
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    failures = [r for r in results if not isinstance(r, RawResponse)]
    assert not failures, f"{len(failures)} of {n} clients failed, e.g. {failures[0]!r}"
    for r in results:
        assert isinstance(r, RawResponse) and r.status == 200
        assert [x["text"] for x in json.loads(r.body)["records"]] == ["burst record"]


def _worker_threads() -> int:
    return sum(1 for t in threading.enumerate() if "process_request_thread" in t.name)


@pytest.mark.clause("MEM-WIRE.19")
def test_a_flood_of_silent_connections_holds_at_most_max_workers_threads(
    make_store: StoreFactory,
) -> None:
    s = make_store(max_workers=3, idle_timeout=30.0)
    host, port = _hostport(s.url)
    before = _worker_threads()
    silent = [socket.create_connection((host, port), timeout=5) for _ in range(10)]
    try:
        time.sleep(0.3)  # let the accept loop take what it will
        assert _worker_threads() - before <= 3
        # A queued connection is served as soon as a worker frees up.
        waiting = socket.create_connection((host, port), timeout=5)
        waiting.sendall(http_request("GET", "/healthz", b"", {"Connection": "close"}))
        for sock in silent:
            sock.close()
        waiting.settimeout(10)
        data = b""
        while chunk := waiting.recv(65536):
            data += chunk
        waiting.close()
        assert data.startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in silent:
            sock.close()


@pytest.mark.clause("MEM-WIRE.19")
def test_idle_keep_alive_connections_give_way_to_new_clients(make_store: StoreFactory) -> None:
    s = make_store(max_workers=2, idle_timeout=30.0)
    host, port = _hostport(s.url)
    idle = [socket.create_connection((host, port), timeout=5) for _ in range(2)]
    try:
        for sock in idle:  # one request each, then the connections stay open and idle
            sock.sendall(http_request("GET", "/healthz", b""))
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        # Both workers wait on idle connections; a new client is served anyway, long before
        # the 30 s idle timeout would free one.
        with socket.create_connection((host, port), timeout=5) as new:
            new.sendall(http_request("GET", "/healthz", b"", {"Connection": "close"}))
            new.settimeout(10)
            assert new.recv(65536).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in idle:
            sock.close()


@contextmanager
def _trickle(url: str, first: bytes, drip: bytes) -> Iterator[dict[str, Any]]:
    """A client sending ``first`` and then one byte of ``drip`` every 50 ms (far faster than
    any per-read timeout) for up to 4 s; ``state['dropped']`` is set when the server closes."""
    state: dict[str, Any] = {"dropped": False, "sent": 0}
    host, port = _hostport(url)
    sock = socket.create_connection((host, port), timeout=5)
    sock.sendall(first)
    stop = threading.Event()

    def run() -> None:
        end = time.monotonic() + 4.0
        try:
            for i in range(len(drip)):
                if stop.is_set() or time.monotonic() > end:
                    return
                sock.sendall(drip[i : i + 1])
                state["sent"] += 1
                sock.settimeout(0.05)
                try:
                    if sock.recv(65536) == b"":
                        state["dropped"] = True
                        return
                except TimeoutError:
                    pass
        except OSError:
            state["dropped"] = True

    t = threading.Thread(target=run)
    t.start()
    try:
        yield state
        t.join(timeout=10)  # until the server drops it, or the 4 s of trickling are over
    finally:
        stop.set()
        t.join(timeout=10)
        sock.close()


@pytest.mark.clause("MEM-WIRE.19", "MEM-WIRE.1")
@pytest.mark.parametrize("part", ["head", "body"])
def test_a_request_trickled_slower_than_its_deadline_is_dropped(
    make_store: StoreFactory, part: str
) -> None:
    s = make_store(head_timeout=0.5, body_timeout=0.5)
    body = _body({"scopeKey": "org:slow", "limit": 5}) + b" " * 200
    if part == "head":
        first = b"POST /list HTTP/1.1\r\n"
        drip = b"X-Slow: " + b"a" * 300 + b"\r\n"
    else:
        first = http_request("POST", "/list", b"", JSON_AUTH, content_length=str(len(body)))
        drip = body
    with _trickle(s.url, first, drip) as state:
        # Meanwhile other clients are served.
        for _ in range(3):
            assert s.post("/list", {"scopeKey": "org:slow", "limit": 1}).status_code == 200
    assert state["dropped"], f"still connected after trickling {state['sent']} bytes"
    assert state["sent"] < len(drip)


@pytest.mark.clause("MEM-WIRE.19")
def test_an_idle_keep_alive_connection_is_not_cut_by_the_head_deadline(
    make_store: StoreFactory,
) -> None:
    s = make_store(head_timeout=0.2, idle_timeout=30.0)
    host, port = _hostport(s.url)
    req = http_request("GET", "/healthz", b"")
    with socket.create_connection((host, port), timeout=5) as sock:
        for i in range(2):
            if i:
                time.sleep(0.5)  # idle longer than the head deadline, shorter than the idle one
            sock.sendall(req)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")


@pytest.mark.clause("MEM-WIRE.19")
def test_bad_resource_bounds_are_refused(make_store: StoreFactory) -> None:
    with pytest.raises(ValueError, match="max_workers"):
        make_store(max_workers=0)
    with pytest.raises(ValueError, match="head_timeout"):
        make_store(head_timeout=float("nan"))


# --------------------------------------------------------------------------- storage faults


def _pragma(conn: sqlite3.Connection, lock: Any, sql: str) -> int:
    with lock:
        row = conn.execute(sql).fetchone()
    return int(row[0]) if row else 0


def _until_full(post: Any, bodies: Iterator[Any]) -> list[Any]:
    """Post until the first non-200 answer (the disk filled up); the answers after that."""
    for _ in range(20):
        r = post(next(bodies))
        if r.status_code != 200:
            return [r, *(post(next(bodies)) for _ in range(2))]
    raise AssertionError("the disk never filled")


# The headroom moves where the fault strikes: with none, SQLite rolls the whole transaction
# back itself (a later ROLLBACK would fail); with a few pages, the transaction stays open until
# the store rolls it back.  Both must end in 503s and a store that works once space is back.
HEADROOM = pytest.mark.parametrize("headroom", [0, 4])


@pytest.mark.clause("MEM-WIRE.18")
@HEADROOM
def test_a_full_disk_is_503_naming_the_cause_and_recovers(
    make_store: StoreFactory, capsys: pytest.CaptureFixture[str], headroom: int
) -> None:
    log = io.StringIO()
    s = make_store(error_log=log)
    s.write("org:full", fact("written before the disk filled"))
    conn, lock = s.handle.store._conn, s.handle.store._lock
    pages = _pragma(conn, lock, "PRAGMA page_count")
    _pragma(conn, lock, f"PRAGMA max_page_count = {pages + headroom}")  # the disk is now full
    batches = (
        {
            "scopeKey": "org:full",
            "records": [fact(f"filler {i} {j} " + "x" * 3000) for j in range(5)],
        }
        for i in itertools.count()
    )
    for r in _until_full(lambda b: s.post("/write", b), batches):
        assert r.status_code == 503
        assert r.json() == {"error": "storage unavailable: database or disk is full"}
    # Reads still work, and no failed batch left anything behind.
    texts = [x["text"] for x in s.list("org:full")]
    assert texts[-1] == "written before the disk filled"
    assert len(texts) % 5 == 1
    _pragma(conn, lock, "PRAGMA max_page_count = 1073741823")  # space again
    assert s.write("org:full", fact("after"), fact("again"))["inserted"] == 2
    lines = log.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert "memory storage unavailable: database or disk is full" in lines[0]
    assert "memory storage recovered" in lines[1]
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.clause("MEM-WIRE.18")
def test_a_read_only_database_is_503_and_recovers(
    make_store: StoreFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    log = io.StringIO()
    s = make_store(error_log=log)
    s.write("org:ro", fact("first"))
    conn, lock = s.handle.store._conn, s.handle.store._lock
    _pragma(conn, lock, "PRAGMA query_only = ON")
    for route, body in (
        ("/write", {"scopeKey": "org:ro", "records": [fact("second")]}),
        ("/retrieve", {"scopeKey": "org:ro", "query": "first", "limit": 5}),  # bumps usage
    ):
        r = s.post(route, body)
        assert r.status_code == 503, (route, r.text)
        assert r.json() == {"error": "storage unavailable: attempt to write a readonly database"}
    _pragma(conn, lock, "PRAGMA query_only = OFF")
    assert s.write("org:ro", fact("second"))["inserted"] == 1
    assert [x["text"] for x in s.retrieve("org:ro", "first")] == ["first"]
    assert len(log.getvalue().splitlines()) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.clause("LED-WIRE.10")
@HEADROOM
def test_a_ledger_storage_fault_is_503_in_the_ledger_envelope_and_recovers(
    make_store: StoreFactory, capsys: pytest.CaptureFixture[str], headroom: int
) -> None:
    log = io.StringIO()
    s = make_store(error_log=log, test_control=True)
    ledger = s.handle.ledger
    assert ledger is not None
    conn, lock = ledger.store.conn, ledger.lock
    save = "/ledger/memory/save_memory_record"
    assert s.post(save, {"body": "kept"}).status_code == 200
    pages = _pragma(conn, lock, "PRAGMA page_count")
    _pragma(conn, lock, f"PRAGMA max_page_count = {pages + headroom}")
    pins = ({"body": f"pin {i} " + "y" * 3900} for i in itertools.count())
    for r in _until_full(lambda b: s.post(save, b), pins):
        assert r.status_code == 503, r.text
        assert r.json() == {
            "error": {"code": -32603, "message": "storage unavailable: database or disk is full"}
        }
    listed = s.post("/ledger/memory/list_memory_records", {"scopeKey": "account:local"})
    assert listed.status_code == 200
    assert listed.json()["records"][-1]["body"] == "kept"
    _pragma(conn, lock, "PRAGMA max_page_count = 1073741823")
    assert s.post(save, {"body": "after"}).status_code == 200
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and "ledger storage unavailable" in lines[0], lines
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.clause("MEM-WIRE.18", "LED-WIRE.10")
def test_only_storage_faults_are_classified_as_unavailable() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.IntegrityError) as integrity:
        conn.execute("INSERT INTO t VALUES (1)")
    assert storage_fault(integrity.value) is None  # a bug of the store: stays a 500
    with pytest.raises(sqlite3.OperationalError) as logic:
        conn.execute("SELECT * FROM missing")
    assert storage_fault(logic.value) is None
    assert storage_fault(sqlite3.OperationalError("made up, no code")) is None
    assert storage_fault(ValueError("x")) is None
    conn.execute("PRAGMA query_only = ON")
    with pytest.raises(sqlite3.OperationalError) as readonly:
        conn.execute("INSERT INTO t VALUES (2)")
    assert storage_fault(readonly.value) == "attempt to write a readonly database"
    conn.close()
