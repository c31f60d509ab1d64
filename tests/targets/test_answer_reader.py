"""The client's answer reader (``conformance/targets/wire.py``) over byte strings, each sent by a
real loopback server and read across every kind of ``recv`` boundary: one byte at a time, a few
odd sizes, and whole -- the server writing seeded random-size pieces.  Every framing (length,
chunked, up to the close, no body), the keep-alive rules, and each malformed or oversized answer
with the error it must end in.  Pure transport: no clause of either protocol."""

from __future__ import annotations

import random
import socket
import threading
import time
from typing import Any

import pytest

from conformance.targets.wire import (
    MAX_HEADERS,
    MAX_INTERIM,
    MAX_LINE,
    RECV_SIZE,
    Answer,
    BadChunk,
    BadStatusLine,
    DeadlinePassed,
    FramingConflict,
    IncompleteRead,
    LineTooLong,
    RemoteDisconnected,
    TooManyHeaders,
    UnknownProtocol,
    WireError,
    read_answer,
)
from tests.common.loopback import serve_connections

LIMIT = 4 * 1024 * 1024
#: recv sizes: every byte boundary, odd alignments, the client's own size, and 0: the whole
#: answer handed over as already read (the head complete from the start).
CHUNKS = [1, 2, 3, 7, 64, RECV_SIZE, 0]


class Feeder:
    """A loopback server: each connection it accepts gets the next queued answer, written in
    seeded random-size pieces (TCP_NODELAY), then closed -- or (``close=False``) held open
    until the client closes, so a reader that waits for more than the answer is seen."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.queue: list[tuple[bytes, bool, int, float]] = []
        self.lock = threading.Lock()
        serve_connections(self.sock, self._connection)

    def _connection(self, conn: socket.socket, _number: int) -> None:
        with self.lock:
            spec = self.queue.pop(0)
        self._serve(conn, *spec)

    @staticmethod
    def _serve(conn: socket.socket, data: bytes, close: bool, seed: int, drip_s: float) -> None:
        rng = random.Random(seed)
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                i = 0
                while i < len(data):
                    n = 1 if drip_s else rng.randint(1, 97) if rng.random() < 0.7 else 4096
                    conn.sendall(data[i : i + n])
                    i += n
                    if drip_s:
                        time.sleep(drip_s)
                if not close:
                    conn.settimeout(10)
                    while conn.recv(4096):
                        pass
            except OSError:
                pass

    def connect(
        self, data: bytes, *, close: bool = True, seed: int = 0, drip_s: float = 0.0
    ) -> socket.socket:
        with self.lock:
            self.queue.append((data, close, seed, drip_s))
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.settimeout(3)  # a reader waiting wrongly fails the test instead of hanging it
        return sock

    def stop(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def feeder() -> Any:
    f = Feeder()
    yield f
    f.stop()


def read(
    feeder: Feeder,
    data: bytes,
    chunk: int,
    *,
    method: str = "GET",
    limit: int = LIMIT,
    close: bool = True,
    pending: bytes = b"",
) -> Answer:
    if chunk == 0:  # all of it already read: the reader starts with a complete head
        data, pending = b"", pending + data
    sock = feeder.connect(data, close=close, seed=chunk)
    try:
        return read_answer(sock, pending, method, limit, chunk=chunk or RECV_SIZE)
    finally:
        sock.close()


def fails(feeder: Feeder, data: bytes, chunk: int, **kw: Any) -> WireError:
    with pytest.raises(WireError) as info:
        read(feeder, data, chunk, **kw)
    return info.value


def ok(body: bytes = b'{"ok":true}', *extra: str, status: str = "200 OK") -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", *extra]
    head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


# ---- framing -------------------------------------------------------------------------------


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", CHUNKS)
def test_a_length_framed_answer_on_a_kept_connection(feeder: Feeder, chunk: int) -> None:
    a = read(feeder, ok(b'{"records":[]}', "X-Other: 1"), chunk, close=False)
    assert (a.status, a.reason, a.data) == (200, "OK", b'{"records":[]}')
    assert a.content_type == "application/json" and a.encoding == ""
    assert a.reusable and not a.will_close and not a.truncated and a.rest == b""


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", CHUNKS)
def test_pipelined_answers_come_apart_at_the_length(feeder: Feeder, chunk: int) -> None:
    second = ok(b'{"n":2}', status="201 Created")
    first = read(feeder, ok(b'{"n":1}') + second, chunk, close=False)
    assert first.data == b'{"n":1}' and first.reusable
    # The bytes past the first answer are kept; whatever of the second one's had arrived.
    assert second.startswith(first.rest)
    sock = feeder.connect(second[len(first.rest) :], close=False, seed=chunk)
    try:
        b = read_answer(sock, first.rest, "POST", LIMIT, chunk=chunk)
    finally:
        sock.close()
    assert (b.status, b.reason, b.data, b.rest) == (201, "Created", b'{"n":2}', b"")


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", CHUNKS)
def test_a_chunked_answer_with_extensions_and_trailers(feeder: Feeder, chunk: int) -> None:
    data = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        b'4;name=value\r\n{"a"\r\nA \r\n:[1,2,3,4]\r\n'
        b"1\r\n}\r\n0\r\nX-Trailer: yes\r\nX-Other: 2\r\n\r\n"
    )
    a = read(feeder, data, chunk, close=False)
    assert a.data == b'{"a":[1,2,3,4]}' and a.reusable and a.rest == b""


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", CHUNKS)
def test_bare_lf_line_ends_everywhere(feeder: Feeder, chunk: int) -> None:
    data = (
        b"HTTP/1.1 200 OK\nContent-Type: text/plain\nTransfer-Encoding: chunked\n\n"
        b"3\nabc\n2\r\nde\r\n0\n\n" + ok(b"next")
    )
    a = read(feeder, data, chunk, close=False)
    assert (a.data, a.content_type) == (b"abcde", "text/plain") and a.reusable
    assert ok(b"next").startswith(a.rest)
    b = read(feeder, b"HTTP/1.1 404 Not Found\nContent-Length: 3\n\nabc", chunk, close=False)
    assert (b.status, b.reason, b.data, b.reusable) == (404, "Not Found", b"abc", True)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", CHUNKS)
def test_an_answer_without_a_length_ends_with_the_connection(feeder: Feeder, chunk: int) -> None:
    a = read(feeder, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>x</html>", chunk)
    assert a.data == b"<html>x</html>" and not a.reusable and a.will_close


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, 5, RECV_SIZE])
def test_no_body_for_head_204_304_and_a_lone_status_line(feeder: Feeder, chunk: int) -> None:
    head = read(feeder, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", chunk, method="HEAD")
    assert head.data == b"" and head.reusable
    for status in ("204 No Content", "304 Not Modified"):
        nxt = ok(b"{}")
        a = read(feeder, f"HTTP/1.1 {status}\r\n\r\n".encode() + nxt, chunk, close=False)
        assert a.data == b"" and a.reusable and nxt.startswith(a.rest)
    # A status line and then the close: an answer with no header and an empty body.
    a = read(feeder, b"HTTP/1.1 200 OK", chunk)
    assert (a.status, a.data, a.reusable) == (200, b"", False)
    a = read(feeder, b"HTTP/1.1 500\r\n\r\n", chunk)
    assert (a.status, a.reason, a.data) == (500, "", b"")
    # Odd spacing in the status line: any run of whitespace separates its parts.
    a = read(feeder, b"HTTP/1.1  201\tAll  good \r\nContent-Length: 0\r\n\r\n", chunk)
    assert (a.status, a.reason, a.data, a.reusable) == (201, "All  good", b"", True)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, 3, RECV_SIZE])
def test_interim_answers_are_skipped_a_101_is_final(feeder: Feeder, chunk: int) -> None:
    data = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + ok(
        b"[1]"
    )
    a = read(feeder, data, chunk, close=False)
    assert (a.status, a.data, a.reusable) == (200, b"[1]", True)
    a = read(feeder, b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", chunk)
    assert (a.status, a.data, a.reusable) == (101, b"", False)
    many = b"HTTP/1.1 102 Processing\r\n\r\n" * (MAX_INTERIM + 1) + ok()
    assert "interim" in str(fails(feeder, many, chunk, close=False))


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, 4, RECV_SIZE])
def test_keep_alive_follows_connection_close_and_the_version(feeder: Feeder, chunk: int) -> None:
    a = read(feeder, ok(b"{}", "Connection: close"), chunk)
    assert a.will_close and not a.reusable and a.data == b"{}"
    a = read(feeder, ok(b"{}", "Connection: Keep-Alive, Close"), chunk)
    assert a.will_close and not a.reusable
    old = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    a = read(feeder, old, chunk)
    assert a.will_close and not a.reusable and a.data == b"{}"
    kept = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"
    a = read(feeder, kept, chunk, close=False)
    assert not a.will_close and a.reusable
    a = read(feeder, b"HTTP/0.9 200 OK\r\nContent-Length: 2\r\n\r\n{}", chunk)
    assert a.will_close and a.data == b"{}"


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, 6, RECV_SIZE, 0])
def test_folded_and_garbage_header_lines(feeder: Feeder, chunk: int) -> None:
    data = (
        b"HTTP/1.1 200 OK\r\n"
        b" a continuation with nothing above it\r\n"
        b"Content-Type: application/\r\n json;\r\n\tcharset=utf-8\r\n"
        b"this line is no field at all\r\n"
        b"Content-Length :7\r\n"  # a space before the colon: not a field we take
        b"Content-Length:\r\n 5\r\n"
        b"\r\nhello"
    )
    a = read(feeder, data, chunk, close=False)
    assert a.content_type == "application/ json; charset=utf-8"
    assert a.data == b"hello" and a.reusable


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, RECV_SIZE])
def test_content_length_forms(feeder: Feeder, chunk: int) -> None:
    a = read(
        feeder, b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc", chunk
    )
    assert a.data == b"abc" and a.reusable
    for bad in (b"+3", b"0x3", b"-1", b"3 3", b""):
        data = b"HTTP/1.1 200 OK\r\nContent-Length: " + bad + b"\r\n\r\nabc"
        a = read(feeder, data, chunk)  # not a length: the body runs to the close
        assert a.data == b"abc" and not a.reusable and a.will_close, bad


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, RECV_SIZE])
def test_transfer_encoding_rules(feeder: Feeder, chunk: int) -> None:
    smuggle = (
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nab\r\n0\r\n\r\n"
    )
    assert isinstance(fails(feeder, smuggle, chunk), FramingConflict)  # never a body
    coded = b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n"
    a = read(feeder, coded + b"2\r\nab\r\n0\r\n\r\n", chunk, close=False)
    assert a.data == b"ab" and a.encoding == "br, gzip" and a.reusable
    a = read(feeder, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw", chunk)
    assert (a.data, a.encoding, a.reusable) == (b"raw", "gzip", False)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, RECV_SIZE])
def test_framing_a_client_must_reject_is_a_wire_error(feeder: Feeder, chunk: int) -> None:
    """RFC 9112 6.3: two different lengths, or a length beside Transfer-Encoding, leave the
    end of the answer unknown -- a transport error, never a body to judge (issue 23)."""
    for head in (
        b"Content-Length: 3\r\nContent-Length: 10",
        b"Content-Length: 3, 10",
        b"Content-Length: 3\r\nTransfer-Encoding: chunked",
        b"Transfer-Encoding: gzip\r\nContent-Length: 3",
    ):
        data = b"HTTP/1.1 200 OK\r\n" + head + b"\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        assert isinstance(fails(feeder, data, chunk), FramingConflict), head
    a = read(feeder, b"HTTP/1.1 200 OK\r\nContent-Length: 3, 03\r\n\r\nabc", chunk)
    assert a.data == b"abc"  # equal values written differently are one length


@pytest.mark.clause()
def test_repeated_content_type_values_are_joined(feeder: Feeder) -> None:
    a = read(feeder, ok(b"{}", "Content-Type: charset=utf-8"), RECV_SIZE)
    assert a.content_type == "application/json, charset=utf-8"


# ---- malformed answers ---------------------------------------------------------------------


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, RECV_SIZE])
def test_a_connection_closed_without_an_answer(feeder: Feeder, chunk: int) -> None:
    assert isinstance(fails(feeder, b"", chunk), RemoteDisconnected)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, RECV_SIZE])
@pytest.mark.parametrize(
    "line",
    [b"HTTP/1.1 2x0 OK", b"ICY 200 OK", b"HTTP/1.1 099 Low", b"HTTP/1.1 1000 Big", b"garbage",
     b"\r", b"HTTP/1.1 \xb2\xb2\xb2 Odd", b"HTTP/1.1 20 Short", b"HTTP/1.1 200X"],
)  # fmt: skip
def test_bad_status_lines_fail_at_once(feeder: Feeder, chunk: int, line: bytes) -> None:
    # The server holds the connection open: the line alone must be enough to fail.
    err = fails(feeder, line + b"\r\n", chunk, close=False)
    assert isinstance(err, BadStatusLine)


@pytest.mark.clause()
def test_an_unknown_protocol_version(feeder: Feeder) -> None:
    err = fails(feeder, b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n", 1, close=False)
    assert isinstance(err, UnknownProtocol) and str(err) == "HTTP/2.0"


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [4096, RECV_SIZE, 0])
def test_line_bounds(feeder: Feeder, chunk: int) -> None:
    # The status line: too long without a line end, the server holding the connection open.
    err = fails(feeder, b"HTTP/1.1 200 " + b"x" * MAX_LINE, chunk, close=False)
    assert isinstance(err, LineTooLong) and "status line" in str(err)
    for end in (b"\r\n", b"\n"):  # the fast path and the line-by-line one
        # A header line exactly at the bound (its line end included) is taken ...
        name = b"X-Long: "
        at = name + b"v" * (MAX_LINE - len(name) - len(end))
        data = b"HTTP/1.1 200 OK" + end + at + end + b"Content-Length: 2" + end + end + b"{}"
        assert read(feeder, data, chunk, close=False).data == b"{}"
        # ... one byte more is not.
        data = data.replace(at, at + b"v")
        err = fails(feeder, data, chunk, close=False)
        assert isinstance(err, LineTooLong) and "header line" in str(err)
    endless = b"HTTP/1.1 200 OK\r\nX-Endless: " + b"v" * (MAX_LINE + 10)
    assert isinstance(fails(feeder, endless, chunk, close=False), LineTooLong)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, RECV_SIZE, 0])
@pytest.mark.parametrize("end", [b"\r\n", b"\n"])
def test_header_count_bound(feeder: Feeder, chunk: int, end: bytes) -> None:
    lines = [b"X-H%d: v" % i for i in range(MAX_HEADERS - 1)] + [b"Content-Length: 0"]
    data = end.join([b"HTTP/1.1 204 No Content", *lines]) + end + end
    assert read(feeder, data, chunk, close=False).status == 204
    folded = data.replace(b"X-H1: v" + end, b"X-H1: v" + end + b" more" + end)
    err = fails(feeder, folded, chunk, close=False)  # a folded line counts
    assert isinstance(err, TooManyHeaders)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, RECV_SIZE])
def test_a_body_cut_short(feeder: Feeder, chunk: int) -> None:
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n" + b'{"records"'
    err = fails(feeder, data, chunk)
    assert isinstance(err, IncompleteRead) and "10 bytes read, 3990 more expected" in str(err)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, 2, 3, RECV_SIZE])
@pytest.mark.parametrize(
    ("chunks", "error"),
    [
        (b"zz\r\nab\r\n0\r\n\r\n", BadChunk),  # not hex
        (b"0x2\r\nab\r\n0\r\n\r\n", BadChunk),  # a prefix no chunk size has
        (b"-2\r\nab\r\n0\r\n\r\n", BadChunk),
        (b"\r\nab\r\n0\r\n\r\n", BadChunk),  # no size at all
        (b"2\r\nabc\r\n0\r\n\r\n", BadChunk),  # the data longer than its size
        (b"4\r\nab\r\n0\r\n\r\n", BadChunk),  # ... shorter: the data eats the next size
        (b"5\r\nab", IncompleteRead),  # the connection ends inside the data
        (b"2\r\nab\r\n", IncompleteRead),  # ... before the last chunk
        (b"2\r\nab", IncompleteRead),  # ... before the data's line end
    ],
)
def test_broken_chunked_framing(
    feeder: Feeder, chunk: int, chunks: bytes, error: type[WireError]
) -> None:
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    assert isinstance(fails(feeder, data, chunk), error)


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [4096, RECV_SIZE])
def test_chunk_size_and_trailer_bounds(feeder: Feeder, chunk: int) -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    err = fails(feeder, head + b"1;" + b"e" * MAX_LINE + b"\r\nx\r\n0\r\n\r\n", chunk)
    assert isinstance(err, LineTooLong) and "chunk size" in str(err)
    trailers = b"".join(b"T%d: v\r\n" % i for i in range(MAX_HEADERS + 1))
    err = fails(feeder, head + b"1\r\nx\r\n0\r\n" + trailers + b"\r\n", chunk, close=False)
    assert isinstance(err, TooManyHeaders)
    # A target closing instead of ending the trailer: the answer counts, the connection not.
    a = read(feeder, head + b"1\r\nx\r\n0\r\nT: v\r\n", chunk)
    assert a.data == b"x" and not a.reusable


# ---- the body bound ------------------------------------------------------------------------


@pytest.mark.clause()
@pytest.mark.parametrize("chunk", [1, 7, RECV_SIZE])
def test_bodies_are_cut_at_the_bound_whatever_their_framing(feeder: Feeder, chunk: int) -> None:
    limit = 300
    body = bytes(range(256)) * 2  # 512 bytes
    cases = {
        "length": b"HTTP/1.1 200 OK\r\nContent-Length: 512\r\n\r\n" + body,
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n" % 64 + body[i : i + 64] + b"\r\n" for i in range(0, 512, 64))
        + b"0\r\n\r\n",
        "to the close": b"HTTP/1.1 200 OK\r\n\r\n" + body,
    }
    for name, data in cases.items():
        # close=False: a reader that did not stop at the bound would wait for the rest.
        a = read(feeder, data, chunk, limit=limit, close=name != "to the close")
        assert a.truncated and a.data == body[:limit] and not a.reusable, name
        whole = read(feeder, data, chunk, limit=len(body))
        assert not whole.truncated and whole.data == body, name


@pytest.mark.clause()
def test_an_endless_answer_stops_at_the_bound(feeder: Feeder) -> None:
    """A target streaming without end (held open): the reader stops one byte past the bound."""
    piece = b"[" + b'"xxxxxxxxxxxxxxxx",' * 3000
    frame = b"%x\r\n" % len(piece) + piece + b"\r\n"
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    a = read(feeder, head + frame * 40, RECV_SIZE, limit=100_000, close=False)
    assert a.truncated and len(a.data) == 100_000
    a = read(feeder, b"HTTP/1.1 200 OK\r\n\r\n" + piece * 40, 4096, limit=100_000, close=False)
    assert a.truncated and len(a.data) == 100_000 and not a.reusable


# ---- the deadline --------------------------------------------------------------------------


@pytest.mark.clause()
def test_a_dripping_answer_ends_at_the_deadline(feeder: Feeder) -> None:
    sock = feeder.connect(b"HTTP/1.1 200 OK\r\n\r\n" + b" " * 1000, drip_s=0.02)
    try:
        started = time.monotonic()
        with pytest.raises(DeadlinePassed):
            read_answer(sock, b"", "GET", LIMIT, deadline=started + 0.3)
        assert time.monotonic() - started < 5
    finally:
        sock.close()
