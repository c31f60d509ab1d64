"""The ledger served as a daemon serves it: JSON-RPC 2.0 over a WebSocket (LED-WIRE.20).

A target URL ``ws://host:port/path`` or ``wss://host:port/path`` (TLS, trusting the system CAs
or ``--ca-cert``) names a WebSocket on TCP; ``ws+unix:///absolute/path.sock`` one on a Unix
socket (the upgrade asks for ``/`` with ``Host: localhost``).  Each ledger method and each test
control the harness calls is one JSON-RPC request of the same name with the same params
(``{"jsonrpc": "2.0", "id": n, "method": "memory/save_memory_record", "params": {...}}``,
``_test/reset`` likewise), and each answer becomes the :class:`Exchange` the HTTP binding gives
for it, so the oracle judges both forms alike: a ``result`` is HTTP 200 with the result as the
body; an ``error`` is ``{"error": <the error object>}`` with the status the binding gives its
code (:data:`ERROR_STATUS`, LED-WIRE.21).

What the client guarantees (the HTTP client's guarantees, docs/hostile-targets.md):

* the bearer token goes in the ``Authorization`` header of the upgrade request, never in a
  message; a 401 to the upgrade is the binding's 401;
* ``--timeout`` bounds each call whole: connecting, the TLS and WebSocket handshakes, the
  ``initialize`` handshake when the connection is new, sending and the answer;
* no message larger than ``max_response_bytes`` (4 MiB) is read: a larger one ends the
  connection, and the call is reported unanswered; compression is never offered, so no message
  inflates; at most 16 messages wait in the library's queue;
* messages without an ``id``, and requests the daemon sends (a ``method`` member), are
  notifications: read and ignored (LED-WIRE.22); a response to another id is ignored;
* a message that is not a JSON object (binary, not UTF-8, not strict JSON, deeper than 64
  levels) or a response that is not JSON-RPC 2.0 is a transport error, the call indeterminate
  and the connection not used again (LED-WIRE.23) -- never an answer to judge;
* an error answer with ``id: null`` (JSON-RPC's answer to a request it could not read) answers
  the one call in flight;
* one call at a time: JSON-RPC does not promise that a daemon handles messages in the order
  they came, so nothing is written ahead of an answer (:meth:`LedgerSocketTarget.write_ahead`
  is always False);
* after :data:`~conformance.targets.base.SILENT_LIMIT` calls in a row without an answer the
  target counts as gone, as over HTTP.

The connection is the ``websockets`` library's synchronous client (RFC 6455 framing, masking,
the close handshake, its own bounded reader thread); everything above it is here.
"""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import struct
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect, unix_connect

from conformance import scrub
from conformance.errors import TargetError
from conformance.targets import budget
from conformance.targets.base import (
    RECHECK_EVERY,
    SILENT_LIMIT,
    TOO_LARGE,
    Auth,
    auth_header,
    check_url,
    parse_answer,
    redact_url,
    unanswered,
)
from conformance.targets.ledger import NO_PARAMS, LedgerClient, LedgerTarget
from conformance.vocabulary import CUT_EXCERPT_CHARS, KEEP_PASSED, Exchange, TargetConfig

__all__ = [
    "ERROR_STATUS",
    "SOCKET_SCHEMES",
    "LedgerSocketTarget",
    "check_target_url",
    "is_socket_url",
    "ledger_target",
]

#: The URL schemes of a JSON-RPC target.
SOCKET_SCHEMES = ("ws", "wss", "ws+unix")

#: The HTTP status the binding gives an error code (LED-WIRE.3, LED-WIRE.10); any other code
#: travels as 400.  An error answered over JSON-RPC gets the status its code has over HTTP, so
#: the oracle judges the code and the message and never the transport.
ERROR_STATUS: dict[int, int] = {-32602: 400, 1000: 409, -32601: 404, -32603: 500}

#: The ``Exchange.method`` of a JSON-RPC call (its ``path`` is the method's name).
RPC = "JSON-RPC"
#: The longest the close handshake of a connection being dropped may take.
CLOSE_S = 1.0
#: Messages the library keeps queued before it stops reading the socket.
MAX_QUEUE = 16


def is_socket_url(url: str) -> bool:
    """Whether ``url`` names a JSON-RPC target (``ws://``, ``wss://``, ``ws+unix://``)."""
    return url.partition("://")[0].lower() in SOCKET_SCHEMES


def check_target_url(url: str) -> str:
    """A target URL of either form: :func:`~conformance.targets.base.check_url` for
    ``http(s)://``, :func:`check_socket_url` for the JSON-RPC forms."""
    return check_socket_url(url) if is_socket_url(url) else check_url(url)


def check_socket_url(url: str) -> str:
    """A JSON-RPC target URL, checked: ``ws://``/``wss://`` with a host and a valid port (a
    ``user:password@`` dropped: the token is the only credential), or ``ws+unix://`` and an
    absolute socket path; no query, no fragment, no whitespace or control characters."""
    shown = redact_url(url)
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise TargetError(f"a target URL holds whitespace or control characters: {shown!r}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetError(f"not a valid URL: {shown!r} ({exc})") from exc
    if parts.query or parts.fragment:
        raise TargetError(f"a target URL has no query or fragment: {shown!r}")
    scheme = parts.scheme.lower()
    if scheme == "ws+unix":
        if parts.netloc or not parts.path.startswith("/") or parts.path == "/":
            raise TargetError(
                f"a Unix socket target is ws+unix:///absolute/path.sock, not {shown!r}"
            )
        return f"ws+unix://{parts.path}"
    if not parts.hostname:
        raise TargetError(f"not a ws(s) URL: {shown!r}")
    if port == 0:
        raise TargetError(f"not a valid URL: {shown!r} (port 0)")
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(scheme=scheme, netloc=netloc, path=parts.path or "/").geturl()


def ledger_target(config: TargetConfig) -> LedgerClient:
    """The ledger client for ``config``'s URL: JSON-RPC over a WebSocket for the ``ws`` forms,
    else the HTTP binding."""
    if is_socket_url(config.url):
        return LedgerSocketTarget(config)
    return LedgerTarget(config)


@dataclass(frozen=True)
class _Address:
    uri: str  # what the upgrade request asks for
    unix_path: str | None  # the socket's path, for ws+unix
    tls: bool
    host: str


def _address(url: str) -> _Address:
    parts = urlsplit(url)
    if parts.scheme == "ws+unix":
        return _Address("ws://localhost/", parts.path, False, "localhost")
    return _Address(url, None, parts.scheme == "wss", parts.hostname or "")


class _NotJsonRpc(Exception):
    """A message the client cannot take for an answer (the connection is dropped)."""


class _HandshakeRefused(Exception):
    """The profile's ``initialize`` handshake was not answered with a result."""


class _Refused(Exception):
    """The upgrade was answered with an HTTP status other than 101."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class _Frame:
    """One answer: the message as received and its parsed envelope."""

    data: bytes
    envelope: dict[str, Any]
    hold: budget.Hold | None


class LedgerSocketTarget(LedgerClient):  # long: the connection, its ids and the silence count
    """The ledger binding reached as JSON-RPC 2.0 over a WebSocket (TCP or a Unix socket)."""

    def __init__(self, config: TargetConfig) -> None:
        self.config = config
        self.url = check_socket_url(config.url)
        self._address = _address(self.url)
        self._ssl: ssl.SSLContext | None = None
        if self._address.tls:
            try:
                self._ssl = ssl.create_default_context(cafile=config.ca_file or None)
            except (OSError, ssl.SSLError) as exc:
                raise TargetError(f"cannot use CA file {config.ca_file}: {exc}") from exc
        if config.token:
            scrub.register(config.token.reveal())
        self._caps = None
        self._conn: ClientConnection | None = None
        self._next_id = 0
        self._silent = 0
        self._held = 0
        self.pipelining = False
        self.pipelining_off = (
            "JSON-RPC over a WebSocket: one call at a time (a daemon need not handle"
            " messages in the order they came)"
        )

    # -- the ledger client -------------------------------------------------------------

    def base_capabilities(self) -> frozenset[str]:
        return frozenset({"auth"}) if self.config.token else frozenset()

    def call(self, method: str, params: Any, *, auth: Auth = True) -> Exchange:
        """``method`` with ``params`` as one JSON-RPC request (``auth`` other than ``True``:
        on a connection of its own whose upgrade carries that ``Authorization``)."""
        if params is NO_PARAMS:  # no ``params`` member at all (LED-WIRE.12)
            return self._rpc(method, None, "", auth)
        return self._rpc(method, params, _json_text(params), auth)

    def test(self, name: str, params: Any) -> Exchange:
        """The test control ``_test/<name>`` as a JSON-RPC request of that name."""
        return self.call(f"_test/{name}", params)

    def test_then_call(
        self, name: str, test_params: Any, method: str, params: Any
    ) -> tuple[Exchange, Exchange]:
        """The test control, then the call (one after the other: nothing is written ahead)."""
        return self.test(name, test_params), self.call(method, params)

    def post_bytes(self, method: str, content: bytes) -> Exchange:
        """``method`` with ``content`` as the params' text, written into the request as is: no
        ``params`` member when it is empty, a request that is not JSON when it is not."""
        text = content.decode("utf-8", "replace")
        return self._rpc(method, _describe_text(text), text.strip(), True)

    def write_ahead(self, requests: list[tuple[str, str, Any]]) -> bool:
        return False

    def read_ahead(self) -> Exchange:
        raise RuntimeError("nothing is written ahead over JSON-RPC")

    @property
    def ahead(self) -> int:
        return 0

    @property
    def gone(self) -> bool:
        return self._silent >= SILENT_LIMIT

    def close(self) -> None:
        self._drop()

    def __enter__(self) -> LedgerSocketTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one call ----------------------------------------------------------------------

    def _rpc(self, method: str, described: Any, params_text: str, auth: Auth) -> Exchange:
        started = time.perf_counter()
        shown_headers = _shown_headers(self.config, auth)
        if self._silent >= SILENT_LIMIT:
            self._held += 1
            if self._held % RECHECK_EVERY:
                return self._failure(
                    method, described, started, shown_headers,
                    f"not sent: the target gave no answer to the last {self._silent} requests",
                )  # fmt: skip
        deadline = time.monotonic() + self.config.timeout_s
        own = auth is not True
        try:
            conn = self._connection(deadline, auth) if own else self._kept(deadline)
            try:
                frame = self._roundtrip(conn, method, params_text, deadline)
            finally:
                if own:
                    _close(conn)
        except _Refused as refused:
            self._silent = 0
            return self._refused_exchange(method, described, started, shown_headers, refused)
        except Exception as exc:  # every failure of the connection or the answer is data
            self._silent += 1
            if not own:
                self._drop()
            timed_out = isinstance(exc, TimeoutError)
            return self._failure(
                method, described, started, shown_headers, self._why(exc), timed_out=timed_out
            )
        self._silent = 0
        return self._exchange(method, described, started, shown_headers, frame)

    def _kept(self, deadline: float) -> ClientConnection:
        if self._conn is None:
            self._conn = self._connection(deadline, True)
        return self._conn

    def _connection(self, deadline: float, auth: Auth) -> ClientConnection:
        """A new connection, its ``initialize`` handshake done when the profile names one."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError()
        value = auth_header(self.config.token, auth)
        options: dict[str, Any] = {
            "additional_headers": {"Authorization": value} if value is not None else None,
            "user_agent_header": "memspec-harness",
            "open_timeout": remaining,
            "close_timeout": min(CLOSE_S, self.config.timeout_s),
            "ping_interval": None,
            "max_size": self.config.max_response_bytes,
            "max_queue": MAX_QUEUE,
            "compression": None,
        }
        conn: ClientConnection
        try:
            # Entered as a context manager: the connection itself in every version of the
            # library (a connection opened and then used directly is deprecated).
            if self._address.unix_path is not None:
                conn = unix_connect(self._address.unix_path, self._address.uri, **options)
            else:
                conn = connect(self._address.uri, ssl=self._ssl, proxy=None, **options)
            conn = conn.__enter__()
        except InvalidStatus as exc:
            raise _Refused(exc.response.status_code, bytes(exc.response.body or b"")) from exc
        try:
            _bound_sends(conn.socket, self.config.timeout_s + 1)
            if self.config.initialize is not None:
                self._initialize(conn, deadline)
        except BaseException:
            _close(conn)
            raise
        return conn

    def _initialize(self, conn: ClientConnection, deadline: float) -> None:
        """The profile's handshake: its answer must be a result (LED-WIRE.24)."""
        assert self.config.initialize is not None
        method, params_text = self.config.initialize
        frame = self._roundtrip(conn, method, params_text, deadline)
        if frame.hold is not None:
            frame.hold.release_one()
        if "result" not in frame.envelope:
            raise _HandshakeRefused(
                f"the {method!r} handshake was refused:"
                f" {scrub.shown(json.dumps(frame.envelope.get('error')), 200)}"
            )

    def _roundtrip(
        self, conn: ClientConnection, method: str, params_text: str, deadline: float
    ) -> _Frame:
        self._next_id += 1
        rid = self._next_id
        request = f'{{"jsonrpc":"2.0","id":{rid},"method":{_json_text(method)}'
        request += f',"params":{params_text}}}' if params_text else "}"
        conn.send(request)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError()
            message = conn.recv(timeout=remaining)
            frame = _frame(message)
            if frame is not None and _answers(frame.envelope, rid):
                return frame
            if frame is not None and frame.hold is not None:
                frame.hold.release_one()

    def _why(self, exc: BaseException) -> str:
        """What a call that got no answer shows (scrubbed, escaped, cut)."""
        if isinstance(exc, TimeoutError):
            return f"timeout: no complete answer within {self.config.timeout_s:g}s"
        if isinstance(exc, _HandshakeRefused):
            return str(exc)
        if isinstance(exc, _NotJsonRpc):
            return f"not a JSON-RPC 2.0 answer: {exc}"
        if isinstance(exc, ConnectionClosed):
            if exc.sent is not None and exc.sent.code == 1009:
                return (
                    f"{TOO_LARGE} {self.config.max_response_bytes} bytes: a message over the"
                    " bound ended the connection"
                )
            return f"the connection was closed: {_short(exc)}"
        if isinstance(exc, ConnectionRefusedError | FileNotFoundError):
            return f"cannot connect: {_short(exc)}"
        if isinstance(exc, ssl.SSLError):
            return f"TLS: {_short(exc)}"
        if isinstance(exc, WebSocketException):
            return f"WebSocket: {_short(exc)}"
        return f"{type(exc).__name__}: {_short(exc)}"

    # -- exchanges -----------------------------------------------------------------------

    def _exchange(
        self, method: str, described: Any, started: float, headers: Any, frame: _Frame
    ) -> Exchange:
        """The binding's exchange for an answer: a result as 200, an error as its status."""
        envelope = frame.envelope
        if "result" in envelope:
            status, body = 200, envelope["result"]
        else:
            error = envelope["error"]
            code = error.get("code")
            known = isinstance(code, int) and not isinstance(code, bool)
            status, body = ERROR_STATUS.get(code, 400) if known else 400, {"error": error}
        data = frame.data
        values = 1 + data.count(b",") + data.count(b"[") + data.count(b"{")
        head = ""
        if len(data) > KEEP_PASSED[0] or values > KEEP_PASSED[1]:
            head = data[: 4 * scrub.window(CUT_EXCERPT_CHARS)].decode("utf-8", "replace")
        exchange = Exchange(
            method=RPC,
            path=method,
            request_body=described,
            status=status,
            body=body,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            request_headers=headers,
            content_type="application/json",
            body_bytes=len(data),
            body_sha256=hashlib.sha256(data).hexdigest(),
            body_values=values,
            body_head=head,
        )
        budget.tie(frame.hold, exchange)
        return exchange

    def _refused_exchange(
        self, method: str, described: Any, started: float, headers: Any, refused: _Refused
    ) -> Exchange:
        """The upgrade answered with a status: 401 is the binding's 401 (its body as the
        answer); any other status means no WebSocket is served there."""
        if refused.status != 401:
            return self._failure(
                method, described, started, headers,
                f"no WebSocket here: the upgrade was answered HTTP {refused.status}",
            )  # fmt: skip
        parsed, excerpt, body_error = parse_answer(refused.body[: self.config.max_response_bytes])
        return Exchange(
            method=RPC,
            path=method,
            request_body=described,
            status=401,
            body=parsed,
            raw_excerpt=excerpt,
            body_error=body_error if refused.body else None,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            request_headers=headers,
        )

    def _failure(
        self,
        method: str,
        described: Any,
        started: float,
        headers: Any,
        error: str,
        *,
        timed_out: bool = False,
    ) -> Exchange:
        return unanswered(RPC, method, described, started, error, headers, timed_out=timed_out)

    def _drop(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            _close(conn)


def _frame(message: str | bytes) -> _Frame | None:
    """A message as an answer, or None for a notification (no ``id``, or a request the daemon
    sends).  Anything that is not a JSON-RPC 2.0 message raises :class:`_NotJsonRpc`."""
    if isinstance(message, bytes):
        raise _NotJsonRpc(f"a binary message of {len(message)} bytes")
    data = message.encode("utf-8", "surrogatepass")
    hold = budget.take(budget.estimated_cost(data))
    parsed, excerpt, body_error = parse_answer(data)
    if body_error is not None or not isinstance(parsed, dict):
        if hold is not None:
            hold.release_one()
        what = body_error or f"a JSON {type(parsed).__name__}, not an object"
        raise _NotJsonRpc(f"{what}: {excerpt or scrub.shown(message[:200], 200)}")
    if "method" in parsed or "id" not in parsed:
        if hold is not None:
            hold.release_one()
        return None
    if (
        parsed.get("jsonrpc") != "2.0"
        or ("result" in parsed) == ("error" in parsed)
        or ("error" in parsed and not isinstance(parsed["error"], dict))
    ):
        if hold is not None:
            hold.release_one()
        raise _NotJsonRpc(scrub.shown(message[:400], 200))
    return _Frame(data, parsed, hold)


def _answers(envelope: dict[str, Any], rid: int) -> bool:
    """Whether a response answers request ``rid``: the same id (an integer, not ``true``), or
    an error with ``id: null`` (a request the daemon could not read) while it is in flight."""
    got = envelope["id"]
    if got is None:
        return "error" in envelope
    return isinstance(got, int) and not isinstance(got, bool) and got == rid


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _describe_text(text: str) -> Any:
    """Params given as text, for a report: their JSON when they are JSON, else the text."""
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        return {"raw": text[:200]}


def _shown_headers(config: TargetConfig, auth: Auth) -> tuple[tuple[str, str], ...]:
    """The upgrade's ``Authorization`` as a report may show it (the token elided)."""
    if auth_header(config.token, auth) is None:
        return ()
    form = {True: "Bearer [token]", "wrong": "Bearer [wrong token]", "scheme": "Basic [token]"}
    return (("Authorization", form.get(auth, "Bearer (empty)")),)


def _bound_sends(sock: socket.socket, seconds: float) -> None:
    """The kernel's send timeout on the connection's socket: a daemon that stops reading
    cannot block a send for longer (the library's reader thread keeps its blocking reads)."""
    seconds = min(seconds, 1e6)
    whole = int(seconds)
    try:
        timeval = struct.pack("ll", whole, int((seconds - whole) * 1e6))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
    except (OSError, AttributeError, struct.error):  # pragma: no cover - platform without it
        pass


def _close(conn: ClientConnection) -> None:
    try:
        conn.close()
    except Exception:  # pragma: no cover - closing a broken connection
        pass


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    lines = text.splitlines()
    return scrub.shown(lines[0] if lines else text, 200)
