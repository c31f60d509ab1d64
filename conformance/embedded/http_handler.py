"""The bundled store's request handler: the checks every request goes through, in the order of
the :mod:`conformance.embedded.server` docstring, the deadlines of a request's head and body,
routing to ``memory/http.py`` and the ledger binding, and the structured access log."""

from __future__ import annotations

import hmac
import io
import json
import re
import select
import sys
import time
import traceback
from http.server import BaseHTTPRequestHandler
from socket import socket
from typing import Any
from urllib.parse import urlsplit

from conformance.embedded.http_pool import Server
from conformance.embedded.ledger.dispatch import call_ledger
from conformance.embedded.memory import http as memory_http
from conformance.embedded.storage_faults import storage_fault, unavailable_message

MAX_BODY = 512 * 1024
_DIGITS = re.compile(r"[0-9]+")
_OWS = " \t"
_LEDGER_PREFIX = "/ledger/"
_LEDGER_TEST_PREFIX = "/ledger/_test/"
_ABSOLUTE_FORM = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://")

_LEDGER_UNAVAILABLE = {"error": {"code": -32603, "message": "ledger binding not available"}}


def _readable(sock: socket) -> bool:
    """Bytes (or the peer's close) are waiting on ``sock``: a read would not block."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _DeadlineReader(io.RawIOBase):
    """The request stream: each read waits at most until the handler's current deadline, so
    a head or body trickled byte by byte is dropped when its deadline passes."""

    def __init__(self, sock: socket, handler: Handler) -> None:
        super().__init__()
        self._sock = sock
        self._handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        deadline = self._handler.deadline
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("request deadline passed")
            self._sock.settimeout(remaining)
        if not self._handler.idle or _readable(self._sock):
            return self._sock.recv_into(buffer)
        # Waiting for the next request with nothing of it buffered or arrived: only now may the
        # pool close this connection to free its worker (one whose next request is already in
        # the buffer, pipelined behind the last, is not idle: closing it would lose that
        # request's answer after carrying it out, or the request itself).
        server = self._handler.server
        with server.idle:
            server.waiting.add(self._sock)
        try:
            return self._sock.recv_into(buffer)
        finally:
            with server.idle:
                server.waiting.discard(self._sock)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall
    server_version = "memspec-embedded"
    sys_version = ""
    timeout = 30  # an idle keep-alive connection or a stalled body is dropped after this
    server: Server

    # ---- connection bookkeeping (so stop() can wake idle keep-alive threads)

    def setup(self) -> None:
        super().setup()
        self.deadline: float | None = None
        self.idle = False  # waiting for the next request with none of it buffered
        self._reader = io.BufferedReader(_DeadlineReader(self.connection, self))
        self.rfile = self._reader
        with self.server.idle:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.idle:
            self.server.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    # ---- stdlib hooks

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass  # replaced by the structured access log

    def handle_expect_100(self) -> bool:
        # Defer "100 Continue" until the request passed every check and its body is wanted.
        self._expect_100 = True
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Malformed request lines/headers (the stdlib parser): a JSON error with a status line
        # even when no version could be parsed, a generic reason (never echoing the request),
        # and a closed connection.
        self.close_connection = True
        if not getattr(self, "command", None) or self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.1"
        reason = self.responses.get(code, ("error",))[0].lower()
        self._send(code, {"error": reason}, close=True)
        self._access(code)

    def handle_one_request(self) -> None:
        self._expect_100 = False
        self._body_read = False
        self._started = time.perf_counter()
        self._fields: dict[str, Any] = {}
        server = self.server
        try:
            # Idle keep-alive wait for the first byte, then a deadline for the whole head.
            self.deadline = time.monotonic() + server.idle_timeout
            self.idle = True
            try:
                first = self._reader.peek(1)
            finally:
                self.idle = False
            if not first:
                self.close_connection = True
                return
            self.deadline = time.monotonic() + server.head_timeout
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            self.deadline = time.monotonic() + server.body_timeout
            with self.server.idle:
                self.server.in_flight += 1
            try:
                self._dispatch()
            finally:
                with self.server.idle:
                    self.server.in_flight -= 1
                    self.server.idle.notify_all()
            self.wfile.flush()
        except (TimeoutError, ConnectionError):
            self.close_connection = True
        finally:
            self._end_reading()

    def _end_reading(self) -> None:
        """The request is read: writes get the plain socket timeout, not what is left of a
        read deadline."""
        if self.deadline is not None:
            self.deadline = None
            try:
                self.connection.settimeout(self.timeout)
            except OSError:
                pass

    # ---- responses

    def _send(
        self,
        status: int,
        body: dict[str, Any],
        *,
        close: bool = False,
        allow: str | None = None,
    ) -> None:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._end_reading()
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        if allow is not None:
            self.send_header("Allow", allow)
        if self.server.saturated:
            # Hand the worker to a connection waiting for one -- announced in this answer, so a
            # client that pipelined a request behind this one knows it was not read (RFC 9112
            # 9.6) and may send it again; a close after an answer that did not say so would
            # leave that request's fate unknown.
            self.close_connection = True
        if close or self.close_connection:
            self.send_header("Connection", "close")
        # Head and body leave in one write (one segment for small answers).
        tail = b"\r\n" + (data if getattr(self, "command", "") != "HEAD" else b"")
        if self.request_version != "HTTP/0.9":
            self._headers_buffer.append(tail)  # type: ignore[attr-defined]
            self.flush_headers()
        else:
            self.wfile.write(tail[2:])

    def _access(self, status: int) -> None:
        log = self.server.access_log
        if log is None:
            return
        path = getattr(self, "path", "") or ""
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "method": (getattr(self, "command", "") or "")[:16],
            "path": path.split("?", 1)[0][:200],
            "status": status,
            "ms": round((time.perf_counter() - self._started) * 1000, 2),
        }
        entry.update(self._fields)
        try:
            log.write(json.dumps(entry, ensure_ascii=True) + "\n")
            log.flush()
        except (OSError, ValueError):
            pass

    def _early(self, status: int, body: dict[str, Any], allow: str | None = None) -> None:
        """Answer before the body was read: drain it if that is safe, else close."""
        close = not self._drain_unread_body()
        self._send(status, body, close=close, allow=allow)
        self._access(status)

    # ---- framing

    def _declared_length(self) -> tuple[int | None, int]:
        """(length, error status): the raw Content-Length judged as the fence demands.

        Absent, blank, repeated, not a plain ASCII digit string, or combined with a
        Transfer-Encoding -> 411.  A digit string over MAX_BODY -> 413.
        """
        values = self.headers.get_all("Content-Length") or []
        if self.headers.get("Transfer-Encoding") is not None or len(values) != 1:
            return None, 411
        raw = values[0].strip(_OWS)
        if self.server.quirks("mem-content-length-hex") and raw[:2].lower() == "0x":
            raw = str(int(raw, 16)) if re.fullmatch(r"0[xX][0-9a-fA-F]{1,6}", raw) else raw
        if not _DIGITS.fullmatch(raw):
            return None, 411
        if len(raw.lstrip("0")) > 7 or int(raw) > MAX_BODY:
            return None, 413
        if self.server.quirks("mem-413-at-the-limit") and int(raw) == MAX_BODY:
            return None, 413  # mutant: ">=" where the fence is ">"
        return int(raw), 0

    def _drain_unread_body(self) -> bool:
        """Consume an unread request body so the connection can be reused; False = close."""
        if self._body_read or self.close_connection:
            return not self.close_connection
        values = self.headers.get_all("Content-Length") or []
        if self.headers.get("Transfer-Encoding") is not None:
            return False
        if not values:
            return True  # HTTP/1.1 framing: no length, no transfer-coding -> no body
        length, problem = self._declared_length()
        if problem or length is None:
            return False
        if length == 0:
            return True
        if self._expect_100:
            return False  # the client may or may not send a body it was never invited to
        try:
            got = self.rfile.read(length)
        except OSError:
            return False
        self._body_read = True
        return len(got) == length

    def _read_body(self, length: int) -> bytes | None:
        if self._expect_100 and length > 0:
            self.send_response_only(100)
            self.end_headers()
        data = self.rfile.read(length) if length else b""
        self._body_read = True
        if len(data) != length:
            self.close_connection = True
            return None
        return data

    # ---- dispatch

    def _authorized(self) -> bool:
        if not self.server.require_auth:
            return True
        token = self.server.token
        values = self.headers.get_all("Authorization") or []
        if not token or len(values) != 1:
            return False
        # The whole field value (OWS trimmed, as Fetch's Headers do) must be exactly
        # "Bearer <token>"; compared in constant time over the raw bytes.
        presented = values[0].strip(_OWS).encode("latin-1", "replace")
        if self.server.quirks("mem-auth-prefix-compare"):  # mutant: a prefix of the bearer passes
            return presented.startswith(b"Bearer") and (b"Bearer " + token).startswith(presented)
        given = presented[len(b"Bearer ") :] if presented.startswith(b"Bearer ") else None
        if given and self.server.quirks("mem-auth-compares-given-length"):
            # mutant: compared over the presented length only (a non-empty prefix passes)
            return hmac.compare_digest(given, token[: len(given)])
        if given and self.server.quirks("mem-auth-compares-token-length"):
            # mutant: compared over the token's length only (the token plus anything passes)
            return hmac.compare_digest(given[: len(token)], token)
        if given and self.server.quirks("mem-auth-case-insensitive"):
            return hmac.compare_digest(given.lower(), token.lower())  # mutant: case folded
        return hmac.compare_digest(presented, b"Bearer " + token)

    def _dispatch(self) -> None:
        if self.server.stopping:
            self.close_connection = True
            self._early(503, {"error": "server is shutting down"})
            return
        path = _route_path(self.requestline)
        kind, allowed = self._route(path)
        ledger = path.startswith(_LEDGER_PREFIX)
        if not self._routed(kind, allowed, ledger) or kind is None:
            return
        raw = self._admitted_body(kind, ledger)
        if raw is not None:
            self._answer(kind, path, raw, ledger)

    def _route(self, path: str) -> tuple[str | None, str]:
        """The kind of route ``path`` names (``None``: none) and the method it allows."""
        if path == "/healthz":
            return "health", "GET"
        if path in memory_http.ROUTES:
            return "memory", "POST"
        if path.startswith(_LEDGER_TEST_PREFIX) and len(path) > len(_LEDGER_TEST_PREFIX):
            return ("ledger_test", "POST") if self.server.test_control else (None, "")
        if path.startswith(_LEDGER_PREFIX) and len(path) > len(_LEDGER_PREFIX):
            return "ledger", "POST"
        return None, ""

    def _routed(self, kind: str | None, allowed: str, ledger: bool) -> bool:
        """Answer an unknown route (404), a wrong method (405) and ``/healthz`` here; whether
        the request goes on to the bearer and the body."""
        if kind is None:
            self._early(404, _error(ledger, -32601, "not found"))
            return False
        if kind == "health" and self.command == "POST" and self.server.quirks("post-healthz-404"):
            self._early(404, {"error": "not found"})
            return False
        if kind == "memory" and self.server.quirks("mem-auth-before-method"):
            if not self._authorized():  # mutant: the bearer is checked before the method
                self._early(401, _error(ledger, -32600, "unauthorized"))
                return False
        if self.command != allowed:
            self._early(405, _error(ledger, -32600, "method not allowed"), allow=allowed)
            return False
        if kind == "health":
            self._early(
                200,
                {
                    "ok": True,
                    "service": "memspec-embedded",
                    "ledger": self.server.ledger is not None,
                },
            )
            return False
        return True

    def _admitted_body(self, kind: str, ledger: bool) -> bytes | None:
        """The request's body once the bearer and the length fences pass; ``None`` when one
        of them (401, 411, 413) or a short body (400) has been answered."""
        if kind == "memory" and self.server.quirks("mem-length-before-auth"):
            _, early = self._declared_length()  # mutant: the length fence before the bearer
            if early:
                self.close_connection = True
                self._early(early, _error(ledger, -32600, "length required"))
                return None
        if not self._authorized():
            self._early(401, _error(ledger, -32600, "unauthorized"))
            return None
        length, problem = self._declared_length()
        if problem == 411:
            self.close_connection = True
            self._early(411, _error(ledger, -32600, "length required"))
            return None
        if problem == 413:
            self.close_connection = True
            self._early(413, _error(ledger, -32600, "payload too large"))
            return None
        assert length is not None
        raw = self._read_body(length)
        if raw is None:
            self._send(
                400, _error(ledger, -32700, "body shorter than its Content-Length"), close=True
            )
            self._access(400)
        return raw

    def _answer(self, kind: str, path: str, raw: bytes, ledger: bool) -> None:
        """Run an admitted request and send its answer; a storage fault is a 503 naming its
        cause, any other exception a 500."""
        component = "memory" if kind == "memory" else "ledger"
        try:
            if kind == "memory":
                reply = memory_http.handle(self.server.store, path, raw)
                status, body = reply.status, reply.body
                self._fields.update(reply.log)
            else:
                status, body = self._ledger(kind, path, raw)
            self.server.faults.ok(component)
        except Exception as exc:
            cause = storage_fault(exc)
            if cause is None:
                traceback.print_exc(file=sys.stderr)
                self.close_connection = True
                status, body = 500, _error(ledger, -32603, "internal error")
            else:
                # The disk, not the request: one log line per fault, 503 naming the cause.
                self.server.faults.fault(component, cause)
                status, body = 503, _error(ledger, -32603, unavailable_message(cause))
        self._send(status, body)
        self._access(status)

    def _ledger(self, kind: str, path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        """``POST /ledger/<name>`` by the one dispatcher both forms share (``_test/<control>``
        only when the store serves test controls)."""
        if self.server.ledger is None:
            return 503, _LEDGER_UNAVAILABLE
        name = path[len(_LEDGER_PREFIX) :]
        self._fields["ledger"] = name[:80]
        return call_ledger(self.server.ledger, name, raw)


def _route_path(requestline: str) -> str:
    """The path of the request target exactly as sent (the stdlib folds a leading ``//``).

    Origin-form ``/p?q`` -> ``/p``; absolute-form ``http://h/p`` -> ``/p``.
    """
    words = requestline.split()
    target = words[1] if len(words) >= 2 else "/"
    if _ABSOLUTE_FORM.match(target):
        target = urlsplit(target).path or "/"
    return target.split("?", 1)[0].split("#", 1)[0]


def _error(ledger: bool, code: int, message: str) -> dict[str, Any]:
    """The error body: the Worker's ``{"error": reason}``, or the ledger's ``{code, message}``."""
    if ledger:
        return {"error": {"code": code, "message": message}}
    return {"error": message}
