"""The recording reverse proxy in front of a Memory Worker, and the store record it writes.

``memspec audit capture --store-upstream URL`` runs one beside the provider stand-in: the
system under audit is pointed at the proxy as its Memory Worker base URL, and every call it
makes (``/retrieve``, ``/list``, ``/write``, ``/forget``, ``/healthz``, anything) is forwarded
to ``URL`` unchanged and recorded with the answer, one JSON line per call (format
``memspec.audit.store/1``), appended, flushed and fsynced before the answer goes back.

Each line carries ``after_request``: how many provider requests the capture had recorded when
the call arrived.  Both servers run in one process and count under one clock, so a store call
with ``after_request == i`` came after provider request ``i - 1`` and before request ``i``:
that is how ``audit memory-on`` finds the reads behind each provider request
(:mod:`conformance.audit.provenance`).

The bearer is passed through to the upstream and never written: the ``Authorization`` header
is stored as a fingerprint (as the capture does) and the token is blanked from both bodies in
every escaped form (:mod:`conformance.scrub`).  Bounded: a request body over
:data:`MAX_STORE_REQUEST` is refused with 413 by the proxy itself, an answer over
:data:`MAX_STORE_ANSWER` or an upstream that does not answer within :data:`UPSTREAM_TIMEOUT_S`
gets a 502 -- and the line says the proxy answered, and why (``answered_by``, ``error``), so a
record never passes a proxy failure off as the store's answer.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import urlsplit

import httpx

from conformance import scrub
from conformance.audit.capture import CaptureError, CaptureFileError, redact_header

STORE_FORMAT = "memspec.audit.store/1"
MAX_STORE_REQUEST = 1024 * 1024  # the Worker's own fence is 512 KiB (413)
MAX_STORE_ANSWER = 16 * 1024 * 1024
UPSTREAM_TIMEOUT_S = 10.0  # the bot's own client gives up after 5 s (MEM-CLIENT.1)
ROUTES = ("retrieve", "list", "write", "forget", "healthz")
# Hop-by-hop and framing headers: the proxy frames each leg itself.
_HOP = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        "accept-encoding",
    }
)


@dataclass(frozen=True)
class StoreCall:
    """One recorded Memory Worker call and its answer (bodies with the token blanked)."""

    index: int
    after_request: int
    received_at: str
    method: str
    path: str
    route: str
    headers: tuple[tuple[str, str], ...]
    request: str
    status: int
    answer: str
    answered_by: str  # upstream | proxy
    error: str | None
    elapsed_ms: int

    def request_json(self) -> Any:
        """The request body as JSON (``None`` when it is not JSON)."""
        return _loads(self.request)

    def answer_json(self) -> Any:
        """The answer body as JSON (``None`` when it is not JSON)."""
        return _loads(self.answer)


@dataclass(frozen=True)
class StoreRecord:
    """A store record file as read back."""

    path: Path
    sha256: str
    size: int
    calls: tuple[StoreCall, ...]


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def route_of(path: str) -> str:
    """``retrieve``, ``list``, ... for a Worker path (its last segment), else ``other``."""
    last = path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return last if last in ROUTES else "other"


def _field(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CaptureFileError(f"{where}: field {key!r} missing or not {kind.__name__}")
    return value


def decode_call(path: Path, lineno: int, line: str, expected: int) -> StoreCall:
    """One store record line, validated; :class:`CaptureFileError` names the line."""
    where = f"{path}:{lineno}"
    try:
        obj = json.loads(line)
    except ValueError:
        raise CaptureFileError(f"{where}: not a JSON object") from None
    if not isinstance(obj, dict) or obj.get("format") != STORE_FORMAT:
        raise CaptureFileError(f"{where}: not a memspec store record ({STORE_FORMAT})")
    if obj.get("index") != expected:
        raise CaptureFileError(f"{where}: call index {obj.get('index')!r}, expected {expected}")
    headers = obj.get("headers")
    if not isinstance(headers, list) or not all(
        isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in headers
    ):
        raise CaptureFileError(f"{where}: field 'headers' is not a list of [name, value] pairs")
    error = obj.get("error")
    if error is not None and not isinstance(error, str):
        raise CaptureFileError(f"{where}: field 'error' is not a string or null")
    return StoreCall(
        index=expected,
        after_request=_field(obj, "after_request", int, where),
        received_at=_field(obj, "received_at", str, where),
        method=_field(obj, "method", str, where),
        path=_field(obj, "path", str, where),
        route=_field(obj, "route", str, where),
        headers=tuple((h[0], h[1]) for h in headers),
        request=_field(obj, "request", str, where),
        status=_field(obj, "status", int, where),
        answer=_field(obj, "answer", str, where),
        answered_by=_field(obj, "answered_by", str, where),
        error=error,
        elapsed_ms=_field(obj, "elapsed_ms", int, where),
    )


def read_store_record(path: str | Path) -> StoreRecord:
    """Read and verify a store record file (every line)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise CaptureFileError(f"{p}: cannot read the store record ({exc.strerror})") from None
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines and lines[-1].strip():
        raise CaptureFileError(f"{p}:{len(lines)}: last line is incomplete (truncated?)")
    calls: list[StoreCall] = []
    for lineno, line in enumerate(lines, start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise CaptureFileError(f"{p}:{lineno}: not UTF-8 text") from None
        calls.append(decode_call(p, lineno, text, len(calls)))
    return StoreRecord(p, hashlib.sha256(raw).hexdigest(), len(raw), tuple(calls))


def encode_call(call: StoreCall) -> str:
    """One store record line (no newline)."""
    return json.dumps(
        {
            "format": STORE_FORMAT,
            "index": call.index,
            "after_request": call.after_request,
            "received_at": call.received_at,
            "method": call.method,
            "path": call.path,
            "route": call.route,
            "headers": [list(h) for h in call.headers],
            "request": call.request,
            "status": call.status,
            "answer": call.answer,
            "answered_by": call.answered_by,
            "error": call.error,
            "elapsed_ms": call.elapsed_ms,
        },
        ensure_ascii=True,
        separators=(",", ":"),
    )


def _now_rfc3339() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _bearer(headers: list[tuple[str, str]]) -> str | None:
    for name, value in headers:
        if name.lower() == "authorization":
            scheme, _, rest = value.partition(" ")
            return rest.strip() if scheme.lower() == "bearer" and rest.strip() else value
    return None


def _blank(text: str, token: str | None) -> str:
    """``text`` with ``token`` blanked: every escaped form of a registered token
    (:func:`conformance.scrub.scrub_text`), and a token too short to register as is."""
    if token and len(token) < scrub.MIN_TOKEN_LENGTH:
        text = text.replace(token, scrub.MASK)
    return scrub.scrub_text(text)


@dataclass(frozen=True)
class _Exchange:
    status: int
    answer: bytes
    content_type: str
    answered_by: str
    error: str | None


class _StoreRecorder:
    """Numbers calls and appends lines; one lock keeps the file's lines whole and ordered."""

    def __init__(self, out: IO[str], provider_count: Callable[[], int]) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._provider_count = provider_count
        self.count = 0
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._out.close()

    def after_request(self) -> int:
        return self._provider_count()

    def record(self, call: StoreCall) -> None:
        with self._lock:
            if self._closed:
                return
            call = StoreCall(**{**call.__dict__, "index": self.count})
            self._out.write(encode_call(call) + "\n")
            self._out.flush()
            os.fsync(self._out.fileno())
            self.count += 1


class _ProxyHandler(BaseHTTPRequestHandler):
    server_version = "memspec-audit-store-proxy"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    timeout = 60
    recorder: _StoreRecorder
    upstream: str
    client: httpx.Client

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return None

    def _body(self) -> bytes | _Exchange:
        """The request body, or the proxy's own refusal (unsized or over the bound)."""
        length = self.headers.get("Content-Length")
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            # the Worker refuses an unsized body (411); the proxy does not re-frame it
            return _proxy_error(411, "an unsized (chunked) body is not forwarded")
        if length is None:
            return b""
        if not length.strip().isdigit():
            return _proxy_error(411, f"Content-Length {length!r} is not a digit string")
        if int(length) > MAX_STORE_REQUEST:
            return _proxy_error(413, f"request body over {MAX_STORE_REQUEST} bytes, not forwarded")
        return self.rfile.read(int(length))

    def _forward(self, body: bytes, headers: list[tuple[str, str]]) -> _Exchange:
        url = self.upstream + self.path
        sent = [(n, v) for n, v in headers if n.lower() not in _HOP]
        try:
            with self.client.stream(self.command, url, content=body, headers=sent) as resp:
                chunks: list[bytes] = []
                total = 0
                for chunk in resp.iter_bytes():
                    total += len(chunk)
                    if total > MAX_STORE_ANSWER:
                        return _proxy_error(502, f"upstream answer over {MAX_STORE_ANSWER} bytes")
                    chunks.append(chunk)
                ctype = resp.headers.get("content-type", "application/json")
                return _Exchange(resp.status_code, b"".join(chunks), ctype, "upstream", None)
        except httpx.TimeoutException:
            return _proxy_error(502, f"upstream did not answer within {UPSTREAM_TIMEOUT_S:g} s")
        except httpx.HTTPError as exc:
            return _proxy_error(502, f"upstream unreachable ({type(exc).__name__})")

    def _handle(self) -> None:
        started = time.monotonic()
        after, received = self.recorder.after_request(), _now_rfc3339()
        headers = [(str(n), str(v)) for n, v in self.headers.items()]
        got = self._body()
        if isinstance(got, _Exchange):
            ex, body = got, b""
        else:
            body = got
            ex = self._forward(body, headers)
        token = _bearer(headers)
        scrub.register(token if token and len(token) >= scrub.MIN_TOKEN_LENGTH else None)
        text = _blank(body.decode("utf-8", "replace"), token)
        self.recorder.record(
            StoreCall(
                index=-1,
                after_request=after,
                received_at=received,
                method=self.command,
                path=self.path,
                route=route_of(self.path),
                headers=tuple((n, redact_header(n, v)) for n, v in headers),
                request=text,
                status=ex.status,
                answer=_blank(ex.answer.decode("utf-8", "replace"), token),
                answered_by=ex.answered_by,
                error=ex.error,
                elapsed_ms=int((time.monotonic() - started) * 1000),
            )
        )
        self._send(ex)

    def _send(self, ex: _Exchange) -> None:
        self.send_response(ex.status)
        self.send_header("Content-Type", ex.content_type)
        self.send_header("Content-Length", str(len(ex.answer)))
        if ex.answered_by == "proxy":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(ex.answer)
        self.wfile.flush()

    do_POST = _handle
    do_GET = _handle
    do_PUT = _handle
    do_PATCH = _handle
    do_DELETE = _handle
    do_HEAD = _handle
    do_OPTIONS = _handle


def _proxy_error(status: int, reason: str) -> _Exchange:
    payload = json.dumps({"error": f"memspec audit store proxy: {reason}"}).encode()
    return _Exchange(status, payload, "application/json", "proxy", reason)


def check_upstream(url: str) -> str:
    """The upstream base URL without a trailing slash; refuse anything but http(s)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CaptureError(f"--store-upstream {url!r}: give the Worker's http(s) base URL")
    if parts.query or parts.fragment:
        raise CaptureError(f"--store-upstream {url!r}: no query or fragment")
    return url.rstrip("/")


class StoreProxy:
    """A running recording proxy: ``url``, ``count``, ``stop()``; also a context manager."""

    def __init__(
        self,
        out: Path,
        upstream: str,
        provider_count: Callable[[], int],
        host: str = "127.0.0.1",
        port: int = 0,
        overwrite: bool = False,
    ) -> None:
        addr = ipaddress.ip_address(host)
        if not addr.is_loopback:
            raise CaptureError(f"refusing to listen on {host}: not a loopback address")
        self.upstream = check_upstream(upstream)
        self.out = Path(out)
        if self.out.exists() and self.out.stat().st_size > 0 and not overwrite:
            raise CaptureError(
                f"{self.out} already exists and is not empty; choose a new file or pass --overwrite"
            )
        try:
            self._file = self.out.open("w", encoding="utf-8", newline="\n")
        except OSError as exc:
            raise CaptureError(f"cannot write {self.out}: {exc.strerror}") from None
        self.recorder = _StoreRecorder(self._file, provider_count)
        self._client = httpx.Client(timeout=UPSTREAM_TIMEOUT_S, follow_redirects=False)
        handler = type(
            "_BoundProxy",
            (_ProxyHandler,),
            {"recorder": self.recorder, "upstream": self.upstream, "client": self._client},
        )
        server_cls = type(
            "_Server",
            (ThreadingHTTPServer,),
            {"address_family": socket.AF_INET6 if addr.version == 6 else socket.AF_INET},
        )
        try:
            self._server = server_cls((host, port), handler)
        except OSError as exc:
            self._file.close()
            self._client.close()
            raise CaptureError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        shown = f"[{host}]" if addr.version == 6 else host
        self.url = f"http://{shown}:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="memspec-audit-store-proxy",
            daemon=True,
        )
        self._thread.start()
        self._stopped = False

    @property
    def count(self) -> int:
        """Calls recorded so far."""
        return self.recorder.count

    def stop(self) -> None:
        """Stop serving, close the record (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._client.close()
        self.recorder.close()

    def __enter__(self) -> StoreProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
