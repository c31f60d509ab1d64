"""``HttpTarget.framed``, the client ``memspec contract`` sends through: each framing goes on
the wire byte for byte as asked, a held body waits for an early answer, and the exchange keeps
the bytes of both sides (architecture, not a spec clause)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from conformance.targets.base import Framing, HttpTarget
from conformance.vocabulary import Secret, TargetConfig
from tests.common.loopback import serve_connections

TOKEN = "framed-client-token-0123456789"
ANSWER = (
    b"HTTP/1.1 413 Too Large\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n"
    b'{"error":"x"}'
)


class Recorder:
    """Answers every connection at once with :data:`ANSWER` once it has the request's head,
    after reading what else arrives within ``linger`` seconds; keeps every byte received, by
    connection (from 1, in the order accepted)."""

    def __init__(self, linger: float = 0.3) -> None:
        self.linger = linger
        self.received: dict[int, bytes] = {}
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        serve_connections(self.sock, self._serve)

    def _serve(self, conn: socket.socket, number: int) -> None:
        buf = b""
        with conn:
            conn.settimeout(5)
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            conn.sendall(ANSWER)
            conn.settimeout(self.linger)
            try:
                while piece := conn.recv(65536):
                    buf += piece
            except OSError:
                pass
            self.received[number] = buf


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    yield server
    server.sock.close()


def _target(url: str) -> HttpTarget:
    return HttpTarget(TargetConfig(url, Secret(TOKEN), 5.0))


def _wait_for(server: Recorder, n: int) -> bytes:
    deadline = time.monotonic() + 5
    while n not in server.received and time.monotonic() < deadline:
        time.sleep(0.01)
    return server.received[n]


@pytest.mark.clause()
@pytest.mark.parametrize(
    ("framing", "declared", "head_line", "body_on_wire"),
    [
        ("length", "", b"Content-Length: 2\r\n", b"{}"),
        ("none", "", None, b"{}"),
        ("chunked", "", b"Transfer-Encoding: chunked\r\n", b"2\r\n{}\r\n0\r\n\r\n"),
        ("raw", "+5", b"Content-Length: +5\r\n", b"{}"),
    ],
)
def test_each_framing_goes_on_the_wire_as_asked(
    recorder: Recorder,
    framing: Framing,
    declared: str,
    head_line: bytes | None,
    body_on_wire: bytes,
) -> None:
    with _target(recorder.url) as target:
        ex = target.framed(
            "POST", "/write", b"{}", {"Content-Type": "application/json"},
            framing=framing, declared_length=declared,
        )  # fmt: skip
    wire = _wait_for(recorder, 1)
    head, _, body = wire.partition(b"\r\n\r\n")
    assert body == body_on_wire
    for length_header in (b"Content-Length", b"Transfer-Encoding"):
        if head_line is None or not head_line.startswith(length_header):
            assert length_header not in head
    if head_line is not None:
        assert head_line in head + b"\r\n"
    assert b"Connection: close" in head and TOKEN.encode() in head
    assert ex.status == 413 and ex.body == {"error": "x"}
    assert ex.request_bytes == b"{}" and ex.answer == b'{"error":"x"}'
    assert ("Authorization", "Bearer [token]") in ex.request_headers
    assert ex.content_type == "application/json"


@pytest.mark.clause()
def test_a_held_body_is_not_sent_once_the_target_has_answered(recorder: Recorder) -> None:
    body = b"{}" + b" " * 100_000
    with _target(recorder.url) as target:
        ex = target.framed("POST", "/write", body, hold_body=True)
        unheld = target.framed("POST", "/write", body)
    assert ex.status == 413 and unheld.status == 413
    held_wire, sent_wire = _wait_for(recorder, 1), _wait_for(recorder, 2)
    assert held_wire.endswith(b"\r\n\r\n")  # the head alone
    assert sent_wire.endswith(body)
    assert ex.request_bytes == body  # what was asked for, for the curl line


@pytest.mark.clause()
def test_no_answer_is_a_transport_error_that_keeps_the_body() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with _target(f"http://127.0.0.1:{port}") as target:
        ex = target.framed("POST", "/write", b"{}")
    assert ex.status is None and (ex.transport_error or "").startswith("cannot connect")
    assert ex.request_bytes == b"{}"
