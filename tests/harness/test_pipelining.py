"""The client's pipelined pair (a ledger clock pin sent with the mutation it stamps): both
requests go out before the first answer is read, the answers come back in order, and a target
that closes after the first answer or never answers a pipelined request is handled."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any, cast

import pytest

from conformance.embedded.server import start_server
from conformance.targets.base import HttpTarget
from conformance.vocabulary import Exchange, Secret, TargetConfig
from tests.common.loopback import serve_connections
from tests.common.memory_store import fact

TOKEN = "pipelining-test-token-0123456789"


class PairServer:
    """Answers each request ``{"n": i, "path": ...}``, on kept-alive connections.

    ``mode``: ``"wait"`` answers the first request of a connection only once the second's
    bytes are in (so a client that waits for the first answer before sending the second is
    seen: ``pipelined`` records whether the second came within 5 s); ``"close"`` answers the
    first request of each connection with ``Connection: close`` and drops the rest; ``"mute"``
    answers the first request and ignores whatever else was sent on the connection; ``"big"``
    answers the first request with a large body; ``"drop"`` answers the first request of the
    first connection as if it would go on, then closes without reading further (a keep-alive
    close between requests, as a busy server or an edge does); ``"swallow"`` answers the first
    request of the first connection, then carries out the next two (a pipelined pair) and
    closes without answering them (a terminator losing the connection after the store acted).
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.handled: list[str] = []
        self.pipelined: list[bool] = []
        self.closed = threading.Semaphore(0)  # released each time a connection is closed
        self._listener = serve_connections(self.sock, self._serve)

    @property
    def connections(self) -> int:
        return self._listener.count

    @staticmethod
    def _split(buf: bytes) -> tuple[str, bytes] | None:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if not sep:
            return None
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(rest) < length:
            return None
        return head.split(b" ")[1].decode(), rest[length:]

    def _serve(self, conn: socket.socket, number: int) -> None:
        try:
            self._converse(conn, number)
        finally:
            self.closed.release()

    def _converse(self, conn: socket.socket, number: int) -> None:
        buf = b""
        first = True
        swallowed = 0
        with conn:
            conn.settimeout(5)
            while True:
                got = self._split(buf)
                if got is None or (first and self.mode == "wait" and self._split(got[1]) is None):
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        if got is not None and first and self.mode == "wait":
                            self.pipelined.append(False)  # the second never came unasked
                            buf += b"\r\n"  # answer the first anyway
                            self.mode = "plain"
                            continue
                        return
                    buf += data
                    continue
                path, buf = got
                if self.mode == "swallow" and number == 1 and not first:
                    self.handled.append(path)  # carried out, never answered
                    swallowed += 1
                    if swallowed == 2:
                        return
                    continue
                if first and self.mode == "big":
                    body = json.dumps({"pad": "x" * 200}).encode()
                    self.handled.append(path)
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                    )
                    first = False
                    continue
                if first and self.mode == "wait":
                    self.pipelined.append(True)
                self.handled.append(path)
                close = self.mode == "close" and first
                body = json.dumps({"n": len(self.handled), "path": path}).encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode()
                    + (b"\r\nConnection: close" if close else b"")
                    + b"\r\n\r\n"
                    + body
                )
                first = False
                if close or (self.mode == "drop" and number == 1):
                    return
                if self.mode == "mute" and number == 1:
                    time.sleep(3)  # never answers what came after the first
                    return

    def stop(self) -> None:
        self.sock.close()


@pytest.mark.clause()
def test_a_pair_goes_out_before_the_first_answer_and_the_answers_come_back_in_order() -> None:
    server = PairServer("wait")
    target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=8))
    try:
        for round_no in range(2):
            a, b = target.request_pair(("POST", "/first", {"x": 1}), ("POST", "/second", {}))
            assert (a.status, b.status) == (200, 200)
            assert a.body == {"n": 2 * round_no + 1, "path": "/first"}
            assert b.body == {"n": 2 * round_no + 2, "path": "/second"}
        one = target.request("POST", "/third", {})
        assert one.body == {"n": 5, "path": "/third"}
        assert server.pipelined == [True]  # the second was in before the first was answered
        assert server.connections == 1
        assert target.pipelining
    finally:
        target.close()
        server.stop()


@pytest.mark.clause()
def test_a_target_closing_after_the_first_answer_gets_the_second_again_on_a_new_connection() -> (
    None
):
    server = PairServer("close")
    target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=5))
    try:
        a, b = target.request_pair(("POST", "/first", {}), ("POST", "/second", {}))
        assert (a.status, b.status) == (200, 200)
        assert server.handled == ["/first", "/second"]  # each handled exactly once
        assert server.connections == 2
    finally:
        target.close()
        server.stop()


@pytest.mark.clause()
def test_a_target_closing_quietly_after_the_first_answer_never_gets_the_second_twice() -> None:
    """No ``Connection: close`` on the first answer, then the connection closed with nothing
    of the second's answer: whether the second was carried out is unknown (over TLS a store
    was seen to carry one out whose answer never arrived), so it is reported unanswered, not
    sent again, and pipelining is off for the rest of the run."""
    server = PairServer("drop")
    target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=5))
    try:
        a, b = target.request_pair(("POST", "/first", {}), ("POST", "/second", {}))
        assert a.status == 200
        assert b.status is None and b.transport_error
        assert server.handled == ["/first"]
        assert not target.pipelining
    finally:
        target.close()
        server.stop()


@pytest.mark.clause()
def test_a_target_that_ignores_a_pipelined_request_turns_pipelining_off() -> None:
    server = PairServer("mute")
    target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=1))
    try:
        a, b = target.request_pair(("POST", "/first", {}), ("POST", "/second", {}))
        assert a.status == 200
        assert b.status is None and b.transport_error  # no answer: reported, not invented
        assert not target.pipelining
        c, d = target.request_pair(("POST", "/first", {}), ("POST", "/second", {}))
        assert (c.status, d.status) == (200, 200)  # one at a time from now on
    finally:
        target.close()
        server.stop()


@pytest.mark.clause()
def test_a_first_answer_the_client_cannot_keep_never_sends_the_second_twice() -> None:
    server = PairServer("big")  # the first answer is larger than the client reads
    target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=5, max_response_bytes=50))
    try:
        a, b = target.request_pair(("POST", "/first", {}), ("POST", "/second", {}))
        assert a.status == 200
        assert b.status is None and "not sent again" in (b.transport_error or "")
        time.sleep(0.3)
        assert server.handled == ["/first", "/second"]  # the second carried out once, not twice
    finally:
        target.close()
        server.stop()


@pytest.mark.clause()
def test_a_kept_connection_closed_while_idle_is_noticed_before_a_pair_is_written() -> None:
    """The target closed the kept connection after an answer (a keep-alive timeout): the pair
    goes out on a fresh connection, both answered, each request carried out once."""
    server = PairServer("drop")
    target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=5))
    try:
        assert target.request("POST", "/warm", {}).status == 200
        assert server.closed.acquire(timeout=10)  # the server closed the connection
        time.sleep(0.05)  # and the close reached the client
        a, b = target.request_pair(("POST", "/first", {}), ("POST", "/second", {}))
        assert (a.status, b.status) == (200, 200)
        assert server.handled == ["/warm", "/first", "/second"]
        assert server.connections == 2 and target.pipelining
    finally:
        target.close()
        server.stop()


@pytest.mark.clause()
def test_a_pair_lost_with_its_connection_gets_only_the_first_again() -> None:
    """The kept connection was open when the pair went out; the target carried out both and
    closed without an answer.  The first (repeatable) is sent again, fresh; the second is not
    (it was carried out once), it is reported unanswered and pipelining is off."""
    server = PairServer("swallow")
    target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=5))
    try:
        assert target.request("POST", "/warm", {}).status == 200
        a, b = target.request_pair(("POST", "/first", {}), ("POST", "/second", {}))
        assert a.status == 200
        assert b.status is None and "not sent again" in (b.transport_error or "")
        time.sleep(0.2)
        assert server.handled == ["/warm", "/first", "/second", "/first"]  # /second once
        assert not target.pipelining
    finally:
        target.close()
        server.stop()


# ---- the bundled store's side of a pipelined pair (conformance/embedded/http_handler.py)


@pytest.mark.clause("MEM-WIRE.19")
def test_a_busy_bundled_store_announces_its_close_so_the_pipelined_request_goes_again_once() -> (
    None
):
    """Every worker busy: the store frees one by closing a connection after its answer.  It says
    so in that answer (``Connection: close``), so the request pipelined behind it, which it did
    not read, is sent again on a fresh connection and carried out once -- not lost unanswered."""
    entered, release = threading.Event(), threading.Event()

    def pause() -> None:
        entered.set()
        release.wait(10)

    handle = start_server(token=TOKEN, max_workers=1, write_hook=pause)
    target = HttpTarget(TargetConfig(handle.url, Secret(TOKEN), timeout_s=10))
    pair: list[tuple[Exchange, Exchange]] = []
    write = {"scopeKey": "org:pipe", "records": [fact("one")]}
    listing = {"scopeKey": "org:pipe", "limit": 5}
    client = threading.Thread(
        target=lambda: pair.append(
            target.request_pair(("POST", "/write", write), ("POST", "/list", listing))
        )
    )
    other = None
    try:
        client.start()
        assert entered.wait(10)  # the only worker is inside the write
        # ServerHandle.host is typed after socketserver's address (str | bytes); an IPv4
        # server's host is a str
        other = socket.create_connection((cast(str, handle.host), handle.port), timeout=10)
        other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        deadline = time.monotonic() + 10
        while not handle._server.saturated and time.monotonic() < deadline:
            time.sleep(0.01)
        assert handle._server.saturated
        release.set()
        client.join(10)
        [(a, b)] = pair
        assert (a.status, b.status) == (200, 200), b.transport_error
        assert [r["text"] for r in b.body["records"]] == ["one"]
        assert other.recv(65536).startswith(b"HTTP/1.1 200 ")  # and the other client is served
    finally:
        release.set()
        if other is not None:
            other.close()
        target.close()
        handle.stop()


class _Offered(set[Any]):
    """The pool's set of connections it may close to free a worker, counting additions."""

    def __init__(self) -> None:
        super().__init__()
        self.offered = 0

    def add(self, item: Any) -> None:
        self.offered += 1
        super().add(item)


@pytest.mark.clause("MEM-WIRE.19")
def test_a_connection_with_a_pipelined_request_buffered_is_never_offered_for_closing() -> None:
    """The pool closes a connection waiting for its next request to free a worker.  One whose
    next request is already read into the buffer (pipelined) is not waiting: closing it then
    would carry that request out and lose its answer.  Only a connection blocked on the socket
    with nothing buffered or arrived is offered: here before the pair arrives (maybe) and
    after it."""
    with start_server(token=TOKEN) as handle:
        offered = _Offered()
        handle._server.waiting = offered
        target = HttpTarget(TargetConfig(handle.url, Secret(TOKEN), timeout_s=10))
        try:
            listing = {"scopeKey": "org:pipe", "limit": 5}
            a, b = target.request_pair(("POST", "/list", listing), ("POST", "/list", listing))
            assert (a.status, b.status) == (200, 200)
            deadline = time.monotonic() + 10
            while not offered.offered and time.monotonic() < deadline:
                time.sleep(0.01)  # idle after the pair: now it is offered
            assert offered.offered
        finally:
            target.close()
        deadline = time.monotonic() + 10
        while handle._server.connections and time.monotonic() < deadline:
            time.sleep(0.01)  # the handler saw the close
        assert not handle._server.connections
    assert 1 <= offered.offered <= 2  # never while the second request sat in the buffer
