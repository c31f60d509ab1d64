"""The contract's own bounded HTTP client: a deadline for the whole exchange, identity
encoding, a cap on the answer's size, and framings a normal client refuses to send (no
length, chunked, a wrong ``Content-Length``, raw bytes).  ``Http.curl`` renders an exchange as
the ``curl`` line that reproduces it, the token written as ``$MEMSPEC_TOKEN``."""

from __future__ import annotations

import json
import re
import shlex
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from conformance.contract.model import MAX_ANSWER, TOKEN_PLACEHOLDER
from conformance.drivers.base import TargetConfig


@dataclass
class Exchange:
    """One request and what the target answered (or the transport error)."""

    method: str
    path: str
    headers: dict[str, str]  # as sent, the token elided
    body: bytes
    framing: str = "length"  # length | none | chunked | raw
    declared_length: str | None = None
    status: int | None = None
    reason: str = ""
    answer_headers: dict[str, str] = field(default_factory=dict)
    answer: bytes = b""
    error: str | None = None

    def json(self) -> Any:
        try:
            return json.loads(self.answer.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None


class Http:
    """A tiny HTTP/1.1 client for untrusted targets: one connection per request, a deadline for
    the whole exchange, identity encoding, answers capped at 4 MiB, any framing on request."""

    def __init__(self, config: TargetConfig) -> None:
        parts = urlsplit(config.url)
        self.tls = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        self.base = config.url.rstrip("/")
        self.timeout = config.timeout_s
        self._token = config.token
        self.sent = 0

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token.reveal()}"} if self._token else {}

    def send(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        auth: bool = True,
        framing: str = "length",
        declared_length: str | None = None,
        hold_body: bool = False,
    ) -> Exchange:
        """Send one request.  ``framing``: ``length`` (a correct Content-Length), ``none`` (no
        length header, no body), ``chunked`` (Transfer-Encoding), ``raw`` (``declared_length``
        as the Content-Length value, the body as given).  With ``hold_body`` the head goes
        first and the body only if no answer came within a second."""
        sent_headers = {"Host": self.host, "Accept-Encoding": "identity", "Connection": "close"}
        sent_headers.update(headers or {})
        shown = dict(sent_headers)
        if auth and self._token:
            sent_headers.update(self.auth())
            shown["Authorization"] = f"Bearer {TOKEN_PLACEHOLDER}"
        payload = body
        if framing == "length":
            sent_headers["Content-Length"] = str(len(body))
        elif framing == "raw":
            sent_headers["Content-Length"] = declared_length or ""
        elif framing == "chunked":
            sent_headers["Transfer-Encoding"] = "chunked"
            payload = (
                (f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n") if body else b"0\r\n\r\n"
            )
        ex = Exchange(method, path, shown, body, framing, declared_length)
        lines = [f"{method} {self.prefix}{path} HTTP/1.1"]
        lines += [f"{k}: {v}" for k, v in sent_headers.items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
        deadline = time.monotonic() + self.timeout
        self.sent += 1
        sock: socket.socket | None = None
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            if self.tls:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
            reader = _Reader(sock, deadline)
            if hold_body and payload:
                sock.sendall(head)
                if not reader.ready(min(0.5, self.timeout / 2)):
                    try:
                        sock.sendall(payload)
                    except OSError:
                        pass  # the target answered and closed meanwhile: read its answer
            else:
                try:
                    sock.sendall(head + payload)
                except OSError:
                    pass
            reader.response(ex)
        except (OSError, ValueError) as exc:
            ex.error = _transport_error(exc)
        finally:
            if sock is not None:
                sock.close()
        return ex

    def curl(self, ex: Exchange) -> str:
        """A shell line that sends the same request (the token as ``$MEMSPEC_TOKEN``)."""
        parts = ["curl", "-sS", "-i", "-X", ex.method, shlex.quote(self.base + ex.path)]
        for k, v in ex.headers.items():
            if k in ("Host", "Accept-Encoding", "Connection"):
                continue
            if TOKEN_PLACEHOLDER in v and '"' not in v and "`" not in v and "\\" not in v:
                # Double quotes so the shell expands the token; ${...} where a name char follows.
                shown = re.sub(r"\$MEMSPEC_TOKEN(?=\w)", "${MEMSPEC_TOKEN}", f"{k}: {v}")
                parts += ["-H", f'"{shown}"']
            else:
                parts += ["-H", shlex.quote(f"{k}: {v}")]
        if ex.framing == "none":
            return " ".join(parts)
        if ex.framing == "chunked":
            parts += ["-H", shlex.quote("Transfer-Encoding: chunked")]
        if ex.framing == "raw":
            parts += ["-H", shlex.quote(f"Content-Length: {ex.declared_length}")]
        if len(ex.body) > 2048 and ex.body.strip(b" ") != ex.body or len(ex.body) > 8192:
            # A large body: its JSON prefix, padded with spaces to the same length.
            prefix = ex.body.rstrip(b" ")
            if len(prefix) <= 2048 and prefix.isascii():
                pad = len(ex.body) - len(prefix)
                gen = (
                    f"{{ printf %s {shlex.quote(prefix.decode())}; "
                    f"head -c {pad} /dev/zero | tr '\\0' ' '; }}"
                )
                return f"{gen} | {' '.join(parts)} --data-binary @-"
            return " ".join(parts) + f" --data-binary @body-{len(ex.body)}-bytes.bin"
        try:
            text = ex.body.decode("utf-8")
        except UnicodeDecodeError:
            text = ex.body.decode("latin-1")
        return " ".join(parts) + " --data-binary " + shlex.quote(text)


class _Reader:
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buf = b""
        self.eof = False

    def _fill(self) -> bool:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no complete answer within --timeout")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(65536)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        if len(self.buf) > MAX_ANSWER + 65536:
            raise ValueError("answer larger than 4 MiB")
        return True

    def ready(self, wait: float) -> bool:
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            return False
        except OSError:
            return True
        if not chunk:
            self.eof = True
        self.buf += chunk
        return True

    def response(self, ex: Exchange) -> None:
        while b"\r\n\r\n" not in self.buf:
            if self.eof or not self._fill():
                raise ConnectionError("connection closed before a complete answer head")
        head, rest = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status_line = lines[0].split(" ", 2)
        if len(status_line) < 2 or not status_line[1].isdigit():
            raise ValueError("malformed status line")
        ex.status = int(status_line[1])
        ex.reason = status_line[2] if len(status_line) > 2 else ""
        for line in lines[1:]:
            k, _, v = line.partition(":")
            ex.answer_headers[k.strip().lower()] = v.strip()
        self.buf = rest
        te = ex.answer_headers.get("transfer-encoding", "").lower()
        if "chunked" in te:
            ex.answer = self._chunked()
        elif "content-length" in ex.answer_headers:
            n = int(ex.answer_headers["content-length"])
            if n > MAX_ANSWER:
                raise ValueError("answer larger than 4 MiB")
            while len(self.buf) < n and not self.eof:
                self._fill()
            ex.answer = self.buf[:n]
        elif ex.status in (204, 304) or ex.status < 200:
            ex.answer = b""
        else:
            while not self.eof:
                self._fill()
            ex.answer = self.buf

    def _chunked(self) -> bytes:
        out = b""
        while True:
            while b"\r\n" not in self.buf:
                if self.eof or not self._fill():
                    raise ConnectionError("connection closed inside a chunked answer")
            size_line, self.buf = self.buf.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                return out
            if len(out) + size > MAX_ANSWER:
                raise ValueError("answer larger than 4 MiB")
            while len(self.buf) < size + 2:
                if self.eof or not self._fill():
                    raise ConnectionError("connection closed inside a chunked answer")
            out += self.buf[:size]
            self.buf = self.buf[size + 2 :]


def _transport_error(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timeout: no complete answer within --timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionError):
        return f"connection error: {exc}"
    return f"{type(exc).__name__}: {exc}"
