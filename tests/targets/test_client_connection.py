"""The client (``HttpTarget``) on top of its answer reader: which answers leave the kept
connection usable, what becomes a transport error, how a stalled target is ended, and the
request head it writes.  Real loopback servers, nothing mocked.  Pure transport."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conformance.targets.base import (
    MAX_DEPTH,
    HttpTarget,
    _bound_each_call,
    parse_answer,
)
from conformance.vocabulary import Secret, TargetConfig
from tests.common.loopback import serve_connections

TOKEN = "client-connection-token-0123456789"

#: What the server does with the n-th request (counted over all connections): the bytes it
#: writes, and whether it then closes the connection.  Anything callable is called with the
#: connection instead (for answers that take time).
Step = tuple[bytes, bool] | Callable[[socket.socket], None]


def answer(body: dict[str, Any], *extra: str, version: str = "HTTP/1.1") -> bytes:
    data = json.dumps(body).encode()
    head = [f"{version} 200 OK", "Content-Type: application/json", *extra]
    return ("\r\n".join([*head, f"Content-Length: {len(data)}"]) + "\r\n\r\n").encode() + data


class ScriptServer:
    """Reads requests (head and ``Content-Length`` body) and plays ``steps`` in order."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[tuple[int, str]] = []  # (connection number, request line)
        self.lock = threading.Lock()
        self._listener = serve_connections(self.sock, self._serve)

    @property
    def connections(self) -> int:
        return self._listener.count

    def _serve(self, conn: socket.socket, number: int) -> None:
        buf = b""
        with conn:
            conn.settimeout(10)
            while True:
                while b"\r\n\r\n" not in buf:
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buf) < length:
                    buf += conn.recv(65536)
                buf = buf[length:]
                with self.lock:
                    self.requests.append((number, head.split(b"\r\n")[0].decode()))
                    step = self.steps.pop(0)
                try:
                    if callable(step):
                        step(conn)
                        return
                    data, close = step
                    conn.sendall(data)
                except OSError:
                    return
                if close:
                    return

    def stop(self) -> None:
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[ScriptServer, HttpTarget]]]:
    made: list[tuple[ScriptServer, HttpTarget]] = []

    def make(steps: list[Step], timeout_s: float = 5, **kw: Any) -> tuple[ScriptServer, HttpTarget]:
        server = ScriptServer(steps)
        target = HttpTarget(TargetConfig(server.url, Secret(TOKEN), timeout_s=timeout_s, **kw))
        made.append((server, target))
        return server, target

    yield make
    for server, target in made:
        target.close()
        server.stop()


def _post(target: HttpTarget, n: int) -> Any:
    return target.request("POST", f"/r{n}", {"n": n})


@pytest.mark.clause()
def test_answers_that_keep_the_connection_share_one(serve: Any) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b'\r\n5\r\n{"n":\r\n2\r\n2}\r\n0\r\n\r\n'
    )
    kept = answer({"n": 3}, "Connection: keep-alive", version="HTTP/1.0")
    server, target = serve([(answer({"n": 1}), False), (chunked, False), (kept, False)] * 2)
    bodies = [_post(target, i).body for i in range(6)]
    assert bodies == [{"n": 1}, {"n": 2}, {"n": 3}] * 2
    assert server.connections == 1


@pytest.mark.clause()
def test_answers_that_end_the_connection_are_followed_by_a_fresh_one(serve: Any) -> None:
    steps: list[Step] = [
        (answer({"n": 0}, "Connection: close"), False),  # says close (then stays open)
        (answer({"n": 1}, version="HTTP/1.0"), False),  # 1.0 without keep-alive
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + b'{"n":2}', True),
        (answer({"n": 3}), False),
    ]
    server, target = serve(steps)
    assert [_post(target, i).body for i in range(4)] == [{"n": i} for i in range(4)]
    assert [c for c, _ in server.requests] == [1, 2, 3, 4]


@pytest.mark.clause()
def test_bytes_past_an_answer_are_never_taken_for_the_next_one(serve: Any) -> None:
    """Unasked bytes behind an answer, in the same write: the connection is given up, and the
    next request gets its own answer on a fresh connection."""
    stray = answer({"stray": True})
    server, target = serve([(answer({"n": 0}) + stray, False), (answer({"n": 1}), False)])
    assert _post(target, 0).body == {"n": 0}
    assert _post(target, 1).body == {"n": 1}
    assert [c for c, _ in server.requests] == [1, 2]


@pytest.mark.clause()
def test_bytes_sent_while_idle_are_noticed_before_the_next_request(serve: Any) -> None:
    """A stray answer sent on the idle connection (a 408 at an idle timeout): the peek before
    the next request sees it, so that request goes out fresh and gets its own answer."""
    sent = threading.Event()

    def late_stray(conn: socket.socket) -> None:
        conn.sendall(answer({"n": 0}))
        time.sleep(0.05)
        conn.sendall(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
        sent.set()
        time.sleep(1)

    server, target = serve([late_stray, (answer({"n": 1}), False)])
    assert _post(target, 0).body == {"n": 0}
    assert sent.wait(5)
    time.sleep(0.05)
    one = _post(target, 1)
    assert (one.status, one.body) == (200, {"n": 1})
    assert [c for c, _ in server.requests] == [1, 2]


@pytest.mark.clause()
def test_broken_answers_are_transport_errors_and_a_long_one_a_body_error(serve: Any) -> None:
    steps: list[Step] = [
        (b'HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n{"records"', True),
        (b"HTTP/1.1 2x0 Nope\r\nContent-Length: 0\r\n\r\n", True),
        (answer({"pad": "x" * 500}), False),  # (three failures in a row would hold requests)
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", True),
        (b"", True),  # closed without an answer on a fresh connection: no retry
    ]
    server, target = serve(steps, max_response_bytes=100)
    cut = _post(target, 0)
    assert cut.status is None and cut.transport_error == (
        "IncompleteRead: IncompleteRead(10 bytes read, 3990 more expected)"
    )
    bad = _post(target, 1)
    assert bad.status is None and bad.transport_error == "BadStatusLine: HTTP/1.1 2x0 Nope"
    big = _post(target, 2)
    assert big.status == 200 and big.body is None
    assert big.body_error == "answer larger than 100 bytes"
    chunk = _post(target, 3)
    assert chunk.status is None and "BadChunk: invalid chunk size b'zz'" in str(
        chunk.transport_error
    )
    gone = _post(target, 4)
    assert gone.status is None and "RemoteDisconnected" in str(gone.transport_error)
    assert len(server.requests) == 5 and server.connections == 5


@pytest.mark.clause()
def test_a_kept_connection_lost_as_a_request_goes_out_is_retried_once_fresh(serve: Any) -> None:
    server, target = serve([(answer({"n": 0}), False), (b"", True), (answer({"n": 1}), False)])
    assert _post(target, 0).body == {"n": 0}
    assert _post(target, 1).body == {"n": 1}
    assert [c for c, _ in server.requests] == [1, 1, 2]


@pytest.mark.clause()
def test_a_target_that_stops_answering_or_reading_ends_at_the_deadline(serve: Any) -> None:
    server, target = serve([lambda conn: time.sleep(5)], timeout_s=0.3)
    started = time.monotonic()
    ex = _post(target, 0)
    assert ex.timed_out and ex.status is None and time.monotonic() - started < 3
    # A target that reads nothing of a large body: the send blocks until the deadline.
    quiet = socket.create_server(("127.0.0.1", 0))
    try:
        port = quiet.getsockname()[1]
        t = HttpTarget(TargetConfig(f"http://127.0.0.1:{port}", Secret(TOKEN), timeout_s=0.3))
        started = time.monotonic()
        ex = t.request("POST", "/write", content=b"x" * 50_000_000)
        assert ex.timed_out and time.monotonic() - started < 5
        t.close()
    finally:
        quiet.close()


@pytest.mark.clause()
def test_the_kernel_bounds_each_blocking_call_behind_the_watchdog() -> None:
    a, b = socket.socketpair()
    # Without the bound the read would block: a byte comes after 5 s to end it either way.
    late = threading.Timer(5, lambda: b.send(b"x"))
    late.start()
    try:
        a.settimeout(None)
        _bound_each_call(a, 0.2)
        started = time.monotonic()
        with pytest.raises(BlockingIOError):
            a.recv(1)  # nobody writes: the kernel's receive timeout ends the call
        assert 0.1 < time.monotonic() - started < 3
    finally:
        late.cancel()
        a.close()
        b.close()
    # Any --timeout is accepted: a huge one is capped, not an error.
    c, d = socket.socketpair()
    with c, d:
        _bound_each_call(c, 1e30)
        assert c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16) != bytes(16)


@pytest.mark.clause()
def test_a_head_the_client_cannot_write_is_unsendable(serve: Any) -> None:
    server, target = serve([])
    for value, why in [
        ("a\r\nX-Injected: 1", "a header holds a line break"),
        ("a\rb", "a header holds a line break"),
        ("a\nb", "a header holds a line break"),
        ("caf\u00e9\u2603", "a header is not Latin-1"),
    ]:
        ex = target.request("POST", "/write", {}, headers={"X-Test": value})
        assert ex.unsendable and ex.transport_error == f"not sendable: {why}", value
    assert target.request("GET", "/x\r\nY: 1", auth=False).unsendable  # in the path too
    assert server.requests == []


@pytest.mark.clause()
def test_the_depth_bound_reads_brackets_in_strings_as_text() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert parse_answer(deep.encode())[2] is not None
    at = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_answer(at.encode())[2] is None
    # Brackets inside strings, escaped quotes and backslashes next to them: only text.
    for text in ['"' + "[" * 200 + '"', '"\\\\"', '"\\"[[[["', '"\\\\\\"[{"', '"\\n"']:
        body = json.dumps({"a": [json.loads(text)] * 3, "b": text * 40})
        parsed, _, problem = parse_answer(body.encode())
        assert problem is None and parsed == json.loads(body), text
    # ... and a deep value beside such strings still counts.
    body = '{"s": "]]]]\\"]]]", "d": ' + deep + "}"
    assert parse_answer(body.encode())[2] is not None
