"""The wire under :class:`~conformance.targets.base.HttpTarget`: one kept-alive connection
(plain or TLS), the watchdog that ends a request at its deadline, and the reading of one
answer — also one of two pipelined answers sharing a buffered reader.

Part of the HTTP client (:mod:`conformance.targets.base`).
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any

from conformance.drivers.base import TargetConfig


class _Watchdog:
    """Ends a request at its deadline: one thread per target shuts the socket down when the
    whole request (connect, send, status line, headers, body) has taken longer than allowed —
    so a target dripping one byte a second cannot hold a request open for longer."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sock: socket.socket | None = None
        self._deadline = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None
        self.fired = False

    def arm(self, sock: socket.socket, deadline: float) -> None:
        with self._cond:
            self._sock, self._deadline, self.fired = sock, deadline, False
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memspec-request-deadline", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._sock = None
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._sock = None
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._sock is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                self.fired = True  # before the shutdown wakes the reader, which looks at it
                try:  # the plain socket's shutdown, also under TLS: unblocks a pending read
                    socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
                except OSError:
                    pass
                self._sock = None


class _Deadline(Exception):
    pass


@dataclass
class _Answer:
    status: int
    data: bytes
    truncated: bool
    content_type: str
    encoding: str
    reason: str


class _SharedReader:
    """Stands for a socket to :class:`http.client.HTTPResponse`: its ``makefile`` is one
    buffered reader shared by pipelined answers, which closing an answer leaves open."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader

    def makefile(self, *_args: Any, **_kwargs: Any) -> Any:
        return _Unclosed(self.reader)


class _Unclosed:
    def __init__(self, reader: Any) -> None:
        self._reader = reader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)

    def close(self) -> None:
        """Leave the shared reader open (the next answer is in it)."""


class Connection:
    """The connection half of :class:`~conformance.targets.base.HttpTarget` (which sets every
    attribute below in its ``__init__``): connecting under the deadline, one round trip, and
    dropping the kept connection."""

    config: TargetConfig
    _host: str
    _port: int
    _ssl: ssl.SSLContext | None
    _conn: socket.socket | None
    _watchdog: _Watchdog
    #: a request written behind the last one on the kept connection, its answer unread:
    #: (socket, the reader holding the bytes past the last answer)
    _inflight: tuple[socket.socket, Any] | None
    _closing: bool  # the last answer announced ``Connection: close``

    def _connect(self, deadline: float) -> socket.socket:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Deadline()
        sock = socket.create_connection((self._host, self._port), timeout=remaining)
        try:
            self._watchdog.arm(sock, deadline)
            if self._ssl is not None:
                sock = self._ssl.wrap_socket(sock, server_hostname=self._host)
                self._watchdog.arm(sock, deadline)
        except BaseException:
            sock.close()
            raise
        return sock

    def _roundtrip(
        self,
        method: str,
        wire: bytes,
        deadline: float,
        keep: bool,
        pipelined: bool = False,
        sent: bool = False,
    ) -> _Answer:
        """One answer.  ``pipelined``: ``wire`` holds a further request whose answer stays
        unread (kept in :attr:`_inflight`); ``sent``: read the answer of that request."""
        reader: Any = None
        self._closing = False
        if sent:
            if self._inflight is None or self._inflight[0] is not self._conn:
                raise http.client.RemoteDisconnected(
                    "the pipelined request went with its connection"
                )
            sock, reader = self._inflight
            self._inflight = None
            self._watchdog.arm(sock, deadline)
        elif keep and self._conn is not None:
            sock = self._conn
            self._watchdog.arm(sock, deadline)
        else:
            sock = self._connect(deadline)
            if keep:
                self._conn = sock
        resp: http.client.HTTPResponse | None = None
        reusable = False
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            if not sent:
                try:
                    sock.sendall(wire)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
                    # The target may answer before it has read the whole body (an early 413)
                    # and close: read whatever answer it sent.
                    pass
            if pipelined:
                # One buffered reader for both answers: the bytes past the first stay in it.
                reader = sock.makefile("rb")
            resp = http.client.HTTPResponse(
                sock if reader is None else _SharedReader(reader),  # type: ignore[arg-type]
                method=method,
            )
            resp.begin()
            limit = self.config.max_response_bytes
            buf = bytearray()
            truncated = False
            while not resp.isclosed():
                if time.monotonic() >= deadline:
                    raise _Deadline()
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = resp.read1(65536)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > limit:
                    truncated = True
                    del buf[limit:]
                    break
            if self._watchdog.fired:
                raise _Deadline()
            complete = resp.isclosed() or resp.length == 0
            reusable = keep and not truncated and not resp.will_close and complete
            if pipelined and reusable:
                self._inflight = (sock, reader)
            # A target that closes after this answer must not read what came behind it
            # (RFC 9112, 9.6): only then may a pipelined request be sent again.
            self._closing = resp.will_close
            return _Answer(
                resp.status,
                bytes(buf),
                truncated,
                resp.getheader("Content-Type") or "",
                resp.getheader("Content-Encoding") or "",
                resp.reason or "",
            )
        finally:
            if resp is not None:
                resp.close()
            if not reusable:
                if keep:
                    self._drop()
                else:
                    sock.close()

    def _drop(self) -> None:
        self._inflight = None
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:  # pragma: no cover
                pass
            self._conn = None
