"""The recording stand-in for a model provider, and the capture file it writes.

Point a system's model-provider base URL at a :class:`CaptureServer` and every request the
system sends is stored exactly as it arrived — body bytes, headers (credentials reduced to a
fingerprint), method, path and arrival order — one JSON object per line, appended and flushed
(and fsynced) before the answer goes back, so a killed capture loses nothing it acknowledged.

The server answers the two provider APIs an agent is likely to speak with the smallest valid
completion of each shape (streamed as server-sent events when the request asks for
``"stream": true``):

* Anthropic Messages: ``POST /v1/messages``
* OpenAI-compatible chat completions: ``POST /v1/chat/completions``

Any other request is still recorded and answered 404.  The server binds loopback addresses only.
The answers themselves are built in :mod:`conformance.audit.replies`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from conformance.audit.replies import provider_reply

CAPTURE_FORMAT = "memspec.audit.capture/1"
ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
PROVIDER_PATHS = {ANTHROPIC_PATH: "anthropic", OPENAI_PATH: "openai"}

# Header values that carry credentials: stored as a fingerprint, never in clear.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
    }
)
MAX_BODY = 64 * 1024 * 1024


class CaptureError(Exception):
    """A capture could not be started (bad address, file exists, port taken)."""


class CaptureFileError(Exception):
    """A capture file is missing or corrupt; the message names the file and line."""


@dataclass(frozen=True)
class CapturedRequest:
    """One recorded request, in arrival order (``index`` from 0)."""

    index: int
    method: str
    path: str
    provider: str | None
    headers: tuple[tuple[str, str], ...]
    body: bytes
    body_sha256: str
    received_at: str

    @property
    def label(self) -> str:
        """``METHOD /path`` for messages."""
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Capture:
    """A capture file as read back: its own hash and size, and its requests."""

    path: Path
    sha256: str
    size: int
    requests: tuple[CapturedRequest, ...]


# --------------------------------------------------------------------------------------------
# addresses, redaction, file format


def parse_listen(listen: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6); refuse anything that is not loopback."""
    text = listen.strip()
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise CaptureError(f"cannot parse listen address {listen!r} (use [::1]:PORT)")
        host, port_text = text[1:close], text[close + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise CaptureError(f"cannot parse listen address {listen!r} (use 127.0.0.1:PORT)")
    if not port_text.isascii() or not port_text.isdigit() or int(port_text) > 65535:
        raise CaptureError(f"bad port {port_text!r} in {listen!r} (0-65535; 0 picks a free one)")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        raise CaptureError(
            f"refusing to listen on {host!r}: the capture server binds loopback addresses only "
            "(127.0.0.1, ::1 or localhost)"
        ) from None
    if not addr.is_loopback:
        raise CaptureError(
            f"refusing to listen on {host}: not a loopback address — the capture server records "
            "request bodies and must not be reachable from other machines (use 127.0.0.1)"
        )
    return host, int(port_text)


def fingerprint(secret: str) -> str:
    """A short, stable, non-reversible tag for a credential: ``sha256:<12 hex> len=<n>``."""
    digest = hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"sha256:{digest} len={len(secret)}"


def redact_header(name: str, value: str) -> str:
    """The stored form of a header value: credentials become ``<redacted sha256:… len=…>``.

    An ``Authorization``-style value keeps its scheme word (``Bearer <redacted …>``) so an
    auditor can still see which kind of credential was sent.
    """
    if name.lower() not in SECRET_HEADERS:
        return value
    scheme, sep, rest = value.partition(" ")
    if sep and scheme.isalpha() and len(scheme) <= 20 and rest:
        return f"{scheme} <redacted {fingerprint(rest)}>"
    return f"<redacted {fingerprint(value)}>"


def encode_record(req: CapturedRequest) -> str:
    """One capture line (no newline)."""
    return json.dumps(
        {
            "format": CAPTURE_FORMAT,
            "index": req.index,
            "received_at": req.received_at,
            "method": req.method,
            "path": req.path,
            "provider": req.provider,
            "headers": [list(h) for h in req.headers],
            "body_length": len(req.body),
            "body_sha256": req.body_sha256,
            "body_b64": base64.b64encode(req.body).decode("ascii"),
        },
        ensure_ascii=True,
        separators=(",", ":"),
    )


def _bad(path: Path, lineno: int, reason: str) -> CaptureFileError:
    return CaptureFileError(f"{path}:{lineno}: {reason}")


def decode_record(path: Path, lineno: int, line: str, expected_index: int) -> CapturedRequest:
    """Validate and decode one capture line; raise :class:`CaptureFileError` naming the line."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _bad(path, lineno, f"not a JSON object ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise _bad(path, lineno, "not a JSON object")
    if obj.get("format") != CAPTURE_FORMAT:
        raise _bad(path, lineno, f"not a memspec capture record (format {obj.get('format')!r})")
    index = obj.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index != expected_index:
        raise _bad(path, lineno, f"request index {index!r}, expected {expected_index}")
    for key in ("method", "path", "body_sha256", "body_b64", "received_at"):
        if not isinstance(obj.get(key), str):
            raise _bad(path, lineno, f"field {key!r} missing or not a string")
    provider = obj.get("provider")
    if provider is not None and not isinstance(provider, str):
        raise _bad(path, lineno, "field 'provider' is not a string or null")
    headers = obj.get("headers")
    if not isinstance(headers, list) or not all(
        isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in headers
    ):
        raise _bad(path, lineno, "field 'headers' is not a list of [name, value] pairs")
    try:
        body = base64.b64decode(obj["body_b64"], validate=True)
    except (binascii.Error, ValueError):
        raise _bad(path, lineno, "field 'body_b64' is not valid base64") from None
    digest = hashlib.sha256(body).hexdigest()
    if digest != obj["body_sha256"]:
        raise _bad(path, lineno, "body_sha256 does not match the recorded body bytes")
    length = obj.get("body_length")
    if length is not None and length != len(body):
        raise _bad(path, lineno, f"body_length {length!r} does not match the body ({len(body)})")
    return CapturedRequest(
        index=index,
        method=obj["method"],
        path=obj["path"],
        provider=provider,
        headers=tuple((h[0], h[1]) for h in headers),
        body=body,
        body_sha256=digest,
        received_at=obj["received_at"],
    )


def read_capture(path: str | Path) -> Capture:
    """Read and verify a capture file (every line, every body hash)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise CaptureFileError(f"{p}: no such capture file") from None
    except IsADirectoryError:
        raise CaptureFileError(f"{p}: is a directory, not a capture file") from None
    except OSError as exc:
        raise CaptureFileError(f"{p}: cannot read ({exc.strerror})") from None
    requests: list[CapturedRequest] = []
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        if lines[-1].strip():
            raise _bad(p, len(lines), "last line is incomplete (no newline: truncated capture?)")
    for lineno, line_bytes in enumerate(lines, start=1):
        try:
            line = line_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(p, lineno, "not UTF-8 text") from None
        if not line.strip():
            raise _bad(p, lineno, "blank line")
        requests.append(decode_record(p, lineno, line, len(requests)))
    return Capture(
        path=p, sha256=hashlib.sha256(raw).hexdigest(), size=len(raw), requests=tuple(requests)
    )


# --------------------------------------------------------------------------------------------
# the server


def _now_rfc3339() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class _Recorder:
    """Assigns arrival indices and appends records; one lock keeps order and lines whole."""

    def __init__(self, out: IO[str], max_requests: int | None, log: Callable[[str], None] | None):
        self._out = out
        self._lock = threading.Lock()
        self.count = 0
        self.max_requests = max_requests
        self.done = threading.Event()
        self._log = log
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._out.close()

    def record(
        self, method: str, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> CapturedRequest | None:
        """Store one request; ``None`` when ``--max-requests`` was already reached."""
        with self._lock:
            if self._closed:
                return None
            if self.max_requests is not None and self.count >= self.max_requests:
                return None
            bare_path = path.split("?", 1)[0]
            req = CapturedRequest(
                index=self.count,
                method=method,
                path=path,
                provider=PROVIDER_PATHS.get(bare_path) if method == "POST" else None,
                headers=tuple((n, redact_header(n, v)) for n, v in headers),
                body=body,
                body_sha256=hashlib.sha256(body).hexdigest(),
                received_at=_now_rfc3339(),
            )
            self._out.write(encode_record(req) + "\n")
            self._out.flush()
            os.fsync(self._out.fileno())
            self.count += 1
            if self._log is not None:
                self._log(
                    f"#{req.index} {req.method} {req.path} {len(body)} bytes "
                    f"sha256 {req.body_sha256[:16]}…"
                )
            return req

    def finished(self) -> bool:
        with self._lock:
            return self.max_requests is not None and self.count >= self.max_requests


class _Handler(BaseHTTPRequestHandler):
    server_version = "memspec-audit-capture"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    timeout = 60
    recorder: _Recorder  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return None

    def _read_body(self) -> bytes | None:
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            chunks: list[bytes] = []
            total = 0
            while True:
                size_line = self.rfile.readline(1024)
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > MAX_BODY:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
            return b"".join(chunks)
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            return b""
        if not length_text.strip().isdigit() or int(length_text) > MAX_BODY:
            return None
        return self.rfile.read(int(length_text))

    def _send(self, status: int, ctype: str, payload: bytes, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        self.wfile.flush()

    def _handle(self) -> None:
        body = self._read_body()
        if body is None:
            self._send(400, "application/json", b'{"error":"unreadable request body"}', close=True)
            return
        headers = [(str(n), str(v)) for n, v in self.headers.items()]
        rec = self.recorder.record(self.command, self.path, headers, body)
        if rec is None:
            self._send(
                503,
                "application/json",
                b'{"error":"memspec audit capture: stopped or --max-requests reached;'
                b' not recorded"}',
                close=True,
            )
            return
        last = self.recorder.finished()
        if rec.provider is None:
            payload = json.dumps(
                {
                    "error": f"memspec audit capture: {self.command} {self.path} recorded; "
                    f"this stand-in answers POST {ANTHROPIC_PATH} and POST {OPENAI_PATH}"
                }
            ).encode()
            self._send(404, "application/json", payload, close=last)
        else:
            status, ctype, payload = provider_reply(rec.provider, rec.index, body)
            self._send(status, ctype, payload, close=last)
        if last:
            self.recorder.done.set()

    do_POST = _handle
    do_GET = _handle
    do_PUT = _handle
    do_PATCH = _handle
    do_DELETE = _handle
    do_HEAD = _handle
    do_OPTIONS = _handle


class CaptureServer:
    """A running capture: ``url``, ``count``, ``stop()``; also a context manager.

    Create with :func:`start_capture`.  ``done`` is set once ``max_requests`` requests are
    recorded (the serving thread keeps running until :meth:`stop`).
    """

    def __init__(
        self,
        out: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        max_requests: int | None = None,
        overwrite: bool = False,
        log: Callable[[str], None] | None = None,
    ) -> None:
        addr = ipaddress.ip_address(host)
        if not addr.is_loopback:
            raise CaptureError(f"refusing to listen on {host}: not a loopback address")
        if max_requests is not None and max_requests < 1:
            raise CaptureError("--max-requests must be at least 1")
        self.out = Path(out)
        if self.out.is_dir():
            raise CaptureError(f"{self.out} is a directory")
        if self.out.exists() and self.out.stat().st_size > 0 and not overwrite:
            raise CaptureError(
                f"{self.out} already exists and is not empty; choose a new file or pass --overwrite"
            )
        try:
            self._file = self.out.open("w", encoding="utf-8", newline="\n")
        except OSError as exc:
            raise CaptureError(f"cannot write {self.out}: {exc.strerror}") from None
        self.recorder = _Recorder(self._file, max_requests, log)
        handler = type("_BoundHandler", (_Handler,), {"recorder": self.recorder})
        server_cls = type(
            "_Server",
            (ThreadingHTTPServer,),
            {"address_family": socket.AF_INET6 if addr.version == 6 else socket.AF_INET},
        )
        try:
            self._server = server_cls((host, port), handler)
        except OSError as exc:
            self._file.close()
            raise CaptureError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        bound_port = self._server.server_address[1]
        shown = f"[{host}]" if addr.version == 6 else host
        self.url = f"http://{shown}:{bound_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="memspec-audit-capture",
            daemon=True,
        )
        self._thread.start()
        self._stopped = False

    @property
    def count(self) -> int:
        """Requests recorded so far."""
        return self.recorder.count

    @property
    def done(self) -> threading.Event:
        """Set when ``max_requests`` requests have been recorded."""
        return self.recorder.done

    def stop(self) -> None:
        """Stop serving and close the capture file (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self.recorder.close()

    def __enter__(self) -> CaptureServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_capture(
    out: str | Path,
    host: str = "127.0.0.1",
    port: int = 0,
    max_requests: int | None = None,
    overwrite: bool = False,
    log: Callable[[str], None] | None = None,
) -> CaptureServer:
    """Start a capture server in a background thread, recording to ``out``."""
    return CaptureServer(Path(out), host, port, max_requests, overwrite, log)
