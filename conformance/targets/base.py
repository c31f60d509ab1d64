"""The HTTP client every protocol target is built on.

A target is a store reached over HTTP — the bundled one included; nothing here imports a
store.  The client is deliberately defensive, because the stores it talks to may be hostile:

* every request is written by hand over a socket (plain, or TLS trusting the system CAs or
  ``--ca-cert``) and its answer read by our own parser (:mod:`conformance.targets.wire`:
  bounded head, every body framing, the keep-alive rules); one kept-alive connection per
  target, redirects never followed (a 3xx is an answer like any other);
* ``--timeout`` is a deadline for the *whole* request — connect, send, status line, headers
  and body — enforced by a watchdog that shuts the socket down, so a target dripping one byte
  a second cannot keep a request alive.  Past the connect the socket blocks (one system call
  per send or read, no poll before each); the kernel's own send/receive timeout, set once per
  connection a little past ``--timeout``, is a second bound on any single call;
* the answer is read up to a bound (4 MiB by default); we ask for ``Accept-Encoding:
  identity`` and decode whatever ``Content-Encoding`` the target sends anyway with the same
  hard bound on the decoded size (stacked gzip cannot inflate 2 kB into 1 GiB);
* answers are parsed as strict JSON (``NaN``/``Infinity`` are not JSON) at most 64 levels
  deep — anything else is an answer with a ``body_error``, never an exception;
* answers are kept exactly as the target sent them: the bearer token (a
  :class:`~conformance.vocabulary.Secret`) is blanked where things are *shown*
  (:mod:`conformance.scrub`), never before judging;
* every transport failure (timeout, refused, reset, protocol garbage) becomes an
  :class:`~conformance.vocabulary.Exchange` with ``transport_error`` set — never an exception;
* :meth:`HttpTarget.raw` sends a request byte for byte on a fresh connection, for the cases a
  client would not produce (``Content-Length: 0x10``, a length that lies).  It is the
  ``raw_http`` capability, available for ``http://`` targets only (behind TLS and a public
  edge, the edge rewrites those headers anyway);
* :meth:`HttpTarget.framed` sends a body in any framing (no length, chunked, a length the
  caller writes, the body held back until the target had a chance to answer), over TLS too, and
  keeps the bytes of both sides: the client of ``memspec contract``, which judges the wire
  itself.

Why one module of ~1000 lines: it is one class whose connection state (the kept socket, the
request written behind the last one by :meth:`HttpTarget.request_pair`, the watchdog, the
counters that turn pipelining off) every method reads and changes.  Reading one answer off
the socket is no connection state and lives
beside it, in :mod:`conformance.targets.wire` (a function of the socket and the bytes already
read; what is left over goes back in :attr:`HttpTarget._inflight`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import select
import socket
import ssl
import stat
import struct
import threading
import time
import tomllib
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from conformance import scrub
from conformance.errors import TargetError, TokenRefused
from conformance.scrub import MIN_TOKEN_LENGTH, shown
from conformance.targets import budget
from conformance.targets.wire import (
    Answer,
    DeadlinePassed,
    RemoteDisconnected,
    WireError,
    read_answer,
)
from conformance.vocabulary import CUT_EXCERPT_CHARS, KEEP_PASSED, Exchange, Secret, TargetConfig

#: Capability of every ``http://`` target: raw socket requests with hand-made headers.
RAW_HTTP = "raw_http"
#: Capability: the run has a bearer token for the target (auth-dependent steps need it).
AUTH = "auth"

Auth = bool | Literal["wrong", "scheme", "empty", "prefix", "longer", "case"]
#: How :meth:`HttpTarget.framed` frames a body: its true ``Content-Length``, no length and no
#: body, ``Transfer-Encoding: chunked``, or a ``Content-Length`` value given by the caller.
Framing = Literal["length", "none", "chunked", "raw"]

#: How a ``body_error`` starts when the answer was larger than the client's bound.
TOO_LARGE = "answer larger than"
#: The longest :meth:`HttpTarget.framed` waits for an early answer before it sends a held body.
HOLD_S = 0.5

#: The longest ``--timeout``: one day.  Longer is a mistake (``1e308`` overflows every clock
#: and wait) and a usage error.
MAX_TIMEOUT_S = 86400.0

_NO_BODY = object()


class _EmptyBody:
    """A JSON request sent with an empty body (``Content-Length: 0``): no params at all."""

    def __repr__(self) -> str:
        return "EMPTY_BODY"


#: The ``body`` of a request whose body is empty (a method called without params): not the
#: JSON ``{}`` and not ``null``, nothing.
EMPTY_BODY: Any = _EmptyBody()


def token_refused(config: TargetConfig, where: str) -> TokenRefused:
    source = config.token_source or "the token"
    return TokenRefused(f"{source} was refused (401 on {where}) by {config.url}")


def load_token(token_env: str | None = None, token_file: str | Path | None = None) -> Secret | None:
    """Read the bearer token from an environment variable or a file (first line, stripped).

    Raises :class:`TargetError` when the named source is missing or empty — a run that was
    asked to authenticate and silently did not would judge every data route 401.
    """
    if token_env and token_file:
        raise TargetError("give the token with --token-env or --token-file, not both")
    if token_env:
        value = os.environ.get(token_env)
        if not value:
            raise TargetError(f"environment variable {token_env} is not set or empty")
        return _checked_token(value.strip(), f"the token in ${token_env}")
    if token_file:
        path = Path(token_file)
        text = _read_token_file(path)
        lines = text.strip().splitlines()
        if not lines or not lines[0].strip():
            raise TargetError(f"token file {path} is empty")
        return _checked_token(lines[0].strip(), f"the token in {path}")
    return None


#: A token file is read only up to this size (a token is a line; a larger file is refused).
MAX_TOKEN_FILE = 64 * 1024
#: ... and within this time (a file on a hung network mount must not hang the run).
TOKEN_FILE_DEADLINE_S = 5.0


def _read_token_file(path: Path) -> str:
    """The text of a token file, read with a bound and a deadline: only a regular file (a
    directory, a FIFO nobody writes to, ``/dev/zero`` or another device is refused before
    anything is read), at most :data:`MAX_TOKEN_FILE` bytes, within
    :data:`TOKEN_FILE_DEADLINE_S`."""
    where = f"token file {scrub.shown(str(path))}"
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer; O_NOCTTY: a terminal device
        # does not become ours.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise TargetError(f"cannot read {where}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = (
                "a directory"
                if stat.S_ISDIR(st.st_mode)
                else "a FIFO"
                if stat.S_ISFIFO(st.st_mode)
                else "a device"
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "not a regular file"
            )
            raise TargetError(f"{where} is {kind}: give a regular file holding the token")
        if st.st_size > MAX_TOKEN_FILE:
            raise TargetError(f"{where} is larger than {MAX_TOKEN_FILE // 1024} KiB")
        data = bytearray()
        deadline = time.monotonic() + TOKEN_FILE_DEADLINE_S
        while len(data) <= MAX_TOKEN_FILE:
            if time.monotonic() > deadline:
                raise TargetError(f"{where} could not be read within {TOKEN_FILE_DEADLINE_S:g}s")
            try:
                piece = os.read(fd, MAX_TOKEN_FILE + 1 - len(data))
            except BlockingIOError:
                time.sleep(0.01)
                continue
            if not piece:
                break
            data += piece
        if len(data) > MAX_TOKEN_FILE:
            raise TargetError(f"{where} is larger than {MAX_TOKEN_FILE // 1024} KiB")
    except OSError as exc:
        raise TargetError(f"cannot read {where}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TargetError(f"cannot read {where}: not UTF-8") from exc


def _checked_token(value: str, where: str) -> Secret:
    """A token memspec can send in a header and blank in every output, registered for
    blanking; else :class:`TargetError` (a usage error, exit 2)."""
    if len(value) < MIN_TOKEN_LENGTH:
        raise TargetError(
            f"{where} is shorter than {MIN_TOKEN_LENGTH} characters: too short to keep out of"
            " reports safely (use a longer token)"
        )
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in value):
        raise TargetError(f"{where} holds whitespace, control or non-ASCII characters")
    scrub.register(value)
    return Secret(value)


@dataclass(frozen=True)
class TargetProfile:
    """A small TOML description of a target (``--target-profile FILE``).

    ```toml
    [target]
    url = "https://memory.example.internal"
    token_env = "MEMORY_TOKEN"        # or token_file = "/run/secrets/memory"
    timeout_s = 10

    [capabilities]                    # true: declared present, false: declared absent
    raw_http = false
    "memory.cap" = true

    [jsonrpc.initialize]              # a JSON-RPC target only: sent once after connecting
    method = "initialize"
    params = { client = "memspec" }   # a table or an array; left out: no params member

    [ledger]                          # values the ledger knows, used instead of invented ones
    session = "8f0c…"                 # a session id it knows (saves and proposals name it)
    harness = "claude"                # the consolidation harness it offers
    model = "haiku"                   # the model that harness runs
    ```
    """

    url: str | None = None
    token_env: str | None = None
    token_file: str | None = None
    timeout_s: float | None = None
    declared: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()
    #: ``[jsonrpc.initialize]``: (method, params as JSON text or "" for none)
    initialize: tuple[str, str] | None = None
    #: ``[ledger]``: a session the ledger knows, the harness and model it offers
    ledger_values: tuple[tuple[str, str], ...] = ()


def load_target_profile(path: str | Path) -> TargetProfile:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TargetError(f"cannot read target profile {p}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(f"target profile {p} is not TOML: {exc}") from exc
    unknown = set(data) - {"target", "capabilities", "jsonrpc", "ledger"}
    if unknown:
        raise TargetError(f"target profile {p}: unknown table(s) {sorted(unknown)}")
    target = data.get("target", {})
    caps = data.get("capabilities", {})
    if not isinstance(target, dict) or not isinstance(caps, dict):
        raise TargetError(f"target profile {p}: [target] and [capabilities] must be tables")
    bad = set(target) - {"url", "token_env", "token_file", "timeout_s"}
    if bad:
        raise TargetError(f"target profile {p}: unknown key(s) in [target]: {sorted(bad)}")
    if "token" in target:  # pragma: no cover - caught by the unknown-key check above
        raise TargetError("a profile names where the token is, never the token itself")
    for key, value in caps.items():
        if not isinstance(value, bool):
            raise TargetError(f"target profile {p}: capability {key!r} must be true or false")
    timeout = target.get("timeout_s")
    if timeout is not None and (
        not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= MAX_TIMEOUT_S
    ):
        raise TargetError(
            f"target profile {p}: timeout_s must be a number of seconds above 0 and at most"
            f" {MAX_TIMEOUT_S:g}"
        )
    for key in ("url", "token_env", "token_file"):
        if key in target and not isinstance(target[key], str):
            raise TargetError(f"target profile {p}: {key} must be a string")
    return TargetProfile(
        initialize=_initialize(p, data.get("jsonrpc", {})),
        ledger_values=_ledger_values(p, data.get("ledger", {})),
        url=target.get("url"),
        token_env=target.get("token_env"),
        token_file=target.get("token_file"),
        timeout_s=float(timeout) if timeout is not None else None,
        declared=frozenset(k for k, v in caps.items() if v),
        denied=frozenset(k for k, v in caps.items() if not v),
    )


#: The keys of a profile's ``[ledger]`` table.
LEDGER_VALUES = ("session", "harness", "model")


def _ledger_values(p: Path, table: Any) -> tuple[tuple[str, str], ...]:
    """A profile's ``[ledger]``: each of ``session``, ``harness``, ``model`` a non-blank string."""
    if not isinstance(table, dict) or set(table) - set(LEDGER_VALUES):
        raise TargetError(f"target profile {p}: [ledger] holds only {', '.join(LEDGER_VALUES)}")
    for key, value in table.items():
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise TargetError(
                f"target profile {p}: [ledger] {key} must be a non-blank string (at most 200"
                " characters)"
            )
    return tuple((k, table[k]) for k in LEDGER_VALUES if k in table)


def _initialize(p: Path, table: Any) -> tuple[str, str] | None:
    """A profile's ``[jsonrpc.initialize]``: the handshake's method and its params as JSON text
    ("" when it has none)."""
    if not isinstance(table, dict) or set(table) - {"initialize"}:
        raise TargetError(f"target profile {p}: [jsonrpc] holds only the table initialize")
    init = table.get("initialize")
    if init is None:
        return None
    if not isinstance(init, dict) or set(init) - {"method", "params"}:
        raise TargetError(f"target profile {p}: [jsonrpc.initialize] has method and params")
    method, params = init.get("method"), init.get("params")
    if not isinstance(method, str) or not method:
        raise TargetError(f"target profile {p}: [jsonrpc.initialize] method must be a string")
    if params is not None and not isinstance(params, dict | list):
        raise TargetError(
            f"target profile {p}: [jsonrpc.initialize] params must be a table or an array"
        )
    try:
        text = "" if params is None else _to_json(params)
    except (TypeError, ValueError) as exc:  # a TOML date or time has no JSON form
        raise TargetError(f"target profile {p}: [jsonrpc.initialize] params: {exc}") from exc
    return method, text


def check_url(url: str) -> str:
    """A target URL: ``http://`` or ``https://`` with a host and a valid port; the trailing
    ``/`` dropped.  A ``user:password@`` in it is dropped too: memspec authenticates with the
    bearer token only, so the userinfo is never sent, and it never appears in a report or a
    message (messages quote the URL redacted, :func:`redact_url`)."""
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        port = parts.port  # a port that is not a number from 0 to 65535 raises
    except ValueError as exc:
        raise TargetError(f"not a valid URL: {shown!r} ({exc})") from exc
    if parts.scheme.lower() in ("ws", "wss", "ws+unix"):
        raise TargetError(
            f"{shown}: a JSON-RPC target (ws://, wss://, ws+unix://) serves the ledger only"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"not an http(s) URL: {shown!r}")
    if port == 0:
        raise TargetError(f"not a valid URL: {shown!r} (port 0)")
    if parts.query or parts.fragment:
        raise TargetError(f"a target URL has no query or fragment: {shown!r}")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise TargetError(f"a target URL holds whitespace or control characters: {shown!r}")
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc).geturl().rstrip("/")


def redact_url(url: str) -> str:
    """``url`` as a message may show it: a ``user:password@`` replaced by ``[userinfo]@``,
    control characters escaped, at most 300 characters."""
    scheme, sep, rest = url.partition("://")
    if sep:
        authority, slash, path = rest.partition("/")
        if "@" in authority:
            authority = "[userinfo]@" + authority.rpartition("@")[2]
        url = scheme + sep + authority + slash + path
    return scrub.shown(url)


def auth_header(secret: Secret | None, auth: Auth) -> str | None:
    """The ``Authorization`` value a request carries for ``auth``: the bearer token (``True``),
    none (``False``), or one of the wrong forms a step asks for."""
    token = secret.reveal() if secret else ""
    if auth is False:
        return None
    if auth is True:
        return f"Bearer {token}" if token else None
    if auth == "wrong":
        # Same length as the real token, last character changed: a constant-time compare
        # must still refuse it.  Without a token, any token is wrong.
        if not token:
            return "Bearer memspec-not-the-token"
        last = "A" if token[-1] != "A" else "B"
        return f"Bearer {token[:-1]}{last}"
    if auth == "scheme":
        return f"Basic {token or 'memspec'}"
    if auth == "empty":
        return "Bearer "
    # The whole token and only it (MEM-WIRE.3): a prefix, one character more, another
    # letter case.  Without a token, any token is wrong.
    if not token:
        return "Bearer memspec-not-the-token"
    if auth == "prefix":
        return f"Bearer {token[:-1]}"
    if auth == "longer":
        return f"Bearer {token}x"
    if auth == "case":
        return f"Bearer {other_case(token)}"
    raise ValueError(f"unknown auth form {auth!r}")


def unanswered(
    method: str,
    path: str,
    described: Any,
    started: float,
    error: str,
    headers: Any = (),
    *,
    timed_out: bool = False,
) -> Exchange:
    """The exchange of a request that got no answer (``transport_error`` says why), whichever
    transport sent it."""
    return Exchange(
        method=method,
        path=path,
        request_body=described,
        status=None,
        body=None,
        transport_error=error,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        request_headers=tuple(headers or ()),
        timed_out=timed_out,
    )


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
        #: the deadline the thread sleeps until (None: until armed).  Arming wakes it only for
        #: an earlier deadline, and disarming never does: a request's deadline is later than
        #: the last one's, so the thread sleeps through request after request (waking it twice
        #: a request cost a thread switch each time) and, at the deadline it slept until, finds
        #: a later one armed or none.
        self._sleeping_until: float | None = None
        self.fired = False

    def arm(self, sock: socket.socket, deadline: float) -> None:
        with self._cond:
            self._sock, self._deadline, self.fired = sock, deadline, False
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memspec-request-deadline", daemon=True
                )
                self._thread.start()
            if self._sleeping_until is None or deadline < self._sleeping_until:
                self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._sock = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._sock = None
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._sock is None:
                    self._sleeping_until = None
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._sleeping_until = self._deadline
                    self._cond.wait(remaining)
                    continue
                self.fired = True  # before the shutdown wakes the reader, which looks at it
                try:  # the plain socket's shutdown, also under TLS: unblocks a pending read
                    socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
                except OSError:
                    pass
                self._sock = None


#: After this many requests in a row without an HTTP answer the target counts as gone: further
#: requests fail at once (one in RECHECK_EVERY is still sent, to notice a target coming back),
#: so a dead or hanging target costs a few deadlines, not one per step.
SILENT_LIMIT = 3
RECHECK_EVERY = 50


def _declared(headers: list[tuple[str, str]]) -> int | None:
    for k, v in headers:
        if k.lower() == "content-length":
            v = v.strip(" \t")
            return int(v) if v.isascii() and v.isdigit() else -1
    return None


class _Deadline(Exception):
    pass


#: What ends a request as a timeout: its deadline seen passed, or a single call outliving the
#: kernel's timeout (a blocking socket then fails with EAGAIN, a TLS one wants to read).
_TIMED_OUT = (
    _Deadline,
    DeadlinePassed,
    TimeoutError,
    BlockingIOError,
    ssl.SSLWantReadError,
    ssl.SSLWantWriteError,
)


#: A read that peeks and never waits (None where the platform has no MSG_DONTWAIT).
_PEEK_NOW = socket.MSG_PEEK | socket.MSG_DONTWAIT if hasattr(socket, "MSG_DONTWAIT") else None
#: The plain socket's ``recv``, also for a TLS socket: what arrived on the wire, undecrypted.
_wire_recv = socket.socket.recv


def _still_open(sock: socket.socket) -> bool:
    """Whether a kept connection may carry the next request: the target has neither closed it
    while it was idle (a keep-alive timeout) nor sent anything unasked.  Checked without
    blocking before a request is written, so no request goes into a connection already closed
    -- the common stale case, which then needs no resend.  One system call: a peek that does
    not wait.  Under TLS, bytes already decrypted count, and a record that carries no data (a
    session ticket) leaves the connection usable."""
    tls = isinstance(sock, ssl.SSLSocket)
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return False
    try:
        if _PEEK_NOW is not None:
            arrived = _wire_recv(sock, 1, _PEEK_NOW)
        elif select.select([sock], [], [], 0)[0]:  # pragma: no cover - no MSG_DONTWAIT
            arrived = _wire_recv(sock, 1, socket.MSG_PEEK)
        else:  # pragma: no cover
            return True
    except BlockingIOError:
        return True  # nothing arrived while idle
    except (OSError, ValueError):
        return False
    if not arrived or not tls:
        return False  # closed, or bytes no request asked for: not a connection to reuse
    # A TLS record came: decrypt it without waiting; a ticket leaves nothing to read.
    try:
        sock.setblocking(False)
        sock.recv(1)
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
        return True
    except OSError:
        return False
    finally:
        try:
            sock.setblocking(True)
        except OSError:
            pass
    return False


def _answer_waiting(sock: socket.socket, wait: float) -> bool:
    """Whether the target sent something (or closed) within ``wait`` seconds."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    try:
        return bool(select.select([sock], [], [], wait)[0])
    except (OSError, ValueError):
        return True  # the socket is gone: read whatever answer came


#: A request at least this long is sent piece by piece, watching for an early answer.
WATCH_FROM = 65536
#: The most bytes one ``send`` of such a request writes.
WATCH_PIECE = 65536
#: Bytes an early answer is read with under TLS (the rest is read by the answer's parser).
RECV_NOW = 65536


def _send_watching(sock: socket.socket, data: bytes) -> tuple[bool, bytes]:
    """Send ``data`` while watching for an answer, as curl does: a target may answer before it
    has read the whole body (a 413 for a body over the size fence) and stop reading, or close.
    When anything arrives before the last byte is written, sending stops and the answer is
    read -- it is the request's answer (RFC 9112 9.3: a client that sees an answer while
    sending should stop sending).  Without this, the client would block writing into a
    connection nobody reads until its deadline, or push the rest of the body into a connection
    the target closed, whose reset can overtake the answer on its way through an intermediary.

    (True, b"") when all was written; (False, bytes of the answer already read) when an answer
    or the target's close came first.  Under TLS a record without data (a session ticket) is
    no answer: sending goes on.  The watchdog ends a wait at the request's deadline (it shuts
    the socket down, which wakes the poll)."""
    view = memoryview(data)
    tls = isinstance(sock, ssl.SSLSocket)
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLOUT)
    while view:
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return False, b""
        events = 0
        for _, ev in poller.poll():
            events |= ev
        if events & (select.POLLIN | select.POLLERR | select.POLLHUP | select.POLLNVAL):
            if not tls:
                return False, b""
            got = _tls_data_now(sock)
            if got is None:
                continue  # a record that carries no data: not an answer
            return False, got
        n = sock.send(view[:WATCH_PIECE])
        view = view[n:]
    return True, b""


def _tls_data_now(sock: socket.socket) -> bytes | None:
    """Application data (or b"" at the close) a TLS socket has now, read without waiting;
    None when what came was no data (a session ticket)."""
    try:
        sock.setblocking(False)
        return sock.recv(RECV_NOW)
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
        return None
    except OSError:
        return b""
    finally:
        try:
            sock.setblocking(True)
        except OSError:
            pass


def _bound_each_call(sock: socket.socket, seconds: float) -> None:
    """The kernel's send and receive timeout: no single blocking call on ``sock`` outlives
    ``seconds`` (a second bound behind the watchdog; where the platform refuses, the watchdog
    alone)."""
    seconds = min(seconds, 1e6)  # a --timeout of years: about eleven days per call
    whole = int(seconds)
    try:
        timeval = struct.pack("ll", whole, int((seconds - whole) * 1e6))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
    except (OSError, AttributeError, struct.error):  # pragma: no cover - platform without them
        pass


class HttpTarget:  # long: the connection, TLS, deadline watchdog and pipelining state
    """One target's HTTP client.  Subclasses add the protocol's routes and probes.

    Every request is written by hand (so the header values a library would refuse — ``Bearer ``,
    a ``Content-Length`` of ``0x8`` — can be sent when the step asks for them) and read with
    :func:`conformance.targets.wire.read_answer`, over one kept-alive connection (plain or TLS)
    per target; a raw request uses a fresh connection it closes.
    """

    def __init__(self, config: TargetConfig) -> None:
        self.config = config
        self.url = check_url(config.url)
        parts = urlsplit(self.url)
        self._scheme = parts.scheme
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        self._host_header = parts.netloc.rpartition("@")[2]
        self._ssl: ssl.SSLContext | None = None
        if self._scheme == "https":
            try:
                self._ssl = ssl.create_default_context(cafile=config.ca_file or None)
            except (OSError, ssl.SSLError) as exc:
                raise TargetError(f"cannot use CA file {config.ca_file}: {exc}") from exc
        if config.token:
            scrub.register(config.token.reveal())
        self._conn: socket.socket | None = None
        self._watchdog = _Watchdog()
        self._silent = 0  # requests in a row that got no HTTP answer
        self._held = 0
        #: a request written behind the last one on the kept connection, its answer unread:
        #: (socket, the bytes past the last answer already read)
        self._inflight: tuple[socket.socket, bytes] | None = None
        self._closing = False  # the last answer announced ``Connection: close``
        self._then_lost = False  # the request behind the last one went with a lost connection
        #: off once a target failed to answer a pipelined request (see :meth:`request_pair`).
        #: On over TLS too (a TLS-terminating proxy must not use one OpenSSL connection from
        #: two threads at once, or it loses answers that the target sent).
        self.pipelining = True
        #: why pipelining was turned off during the run ("" while it is on)
        self.pipelining_off = ""
        #: requests written by :meth:`write_ahead`, answers unread, oldest first
        self._ahead: list[tuple[str, str, Any]] = []

    # -- capabilities -----------------------------------------------------------------

    def base_capabilities(self) -> frozenset[str]:
        caps = set()
        if self._scheme == "http":
            caps.add(RAW_HTTP)
        if self.config.token:
            caps.add(AUTH)
        return frozenset(caps)

    def resolve_capabilities(self, probed: frozenset[str]) -> frozenset[str]:
        """Probed ∪ declared − denied: what the user declares always wins."""
        return (probed | self.config.declared) - self.config.denied

    # -- requests ---------------------------------------------------------------------

    def _auth_header(self, auth: Auth) -> str | None:
        return auth_header(self.config.token, auth)

    def _decode(self, answer: Answer) -> tuple[Any, str, str | None]:
        """(parsed JSON or None, excerpt, body_error) — exactly what the target sent: nothing
        is blanked here (the token is blanked where an answer is written or printed)."""
        parsed, excerpt, body_error, _, hold = self._decode_all(answer)
        if hold is not None:
            hold.release_one()
        return parsed, excerpt, body_error

    def _decode_all(self, answer: Answer) -> tuple[Any, str, str | None, bytes, budget.Hold | None]:
        """:meth:`_decode`, the decoded body, and the run's answer gate when the answer is
        large (:mod:`conformance.targets.budget`: taken before it is parsed)."""
        data = answer.data
        if answer.encoding:
            data, problem = _content_decode(data, answer.encoding, self.config.max_response_bytes)
            if problem is not None:
                return None, _excerpt(data), shown(problem), data, None
        if answer.truncated:
            return (
                None,
                _excerpt(data),
                f"{TOO_LARGE} {self.config.max_response_bytes} bytes",
                data,
                None,
            )
        if not data:
            return None, "", "empty body", data, None
        hold = budget.take(budget.estimated_cost(data))
        return (*parse_answer(data), data, hold)

    def request(
        self,
        method: str,
        path: str,
        body: Any = _NO_BODY,
        *,
        auth: Auth = True,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        chunked: bool = False,
        _then: bytes = b"",
        _sent: bool = False,
    ) -> Exchange:
        """Send one request; ``body`` is serialized as JSON (``content`` sends bytes as is).

        ``Content-Length`` is the true length of the body; ``chunked`` sends the body with
        ``Transfer-Encoding: chunked`` and no length (the form a streaming client sends, and
        the one a public edge passes through).  A POST without a body carries no length.
        """
        hdrs = dict(headers or {})
        payload: bytes | None = content
        described: Any = None
        if body is EMPTY_BODY:
            payload = b""
            hdrs.setdefault("Content-Type", "application/json")
        elif body is not _NO_BODY:
            payload = _to_json(body).encode("utf-8")
            hdrs.setdefault("Content-Type", "application/json")
            described = body
        elif content is not None:
            described = _describe_bytes(content)
        header_list = list(hdrs.items())
        if chunked:
            header_list.append(("Transfer-Encoding", "chunked"))
        elif payload is not None and not any(k.lower() == "content-length" for k in hdrs):
            header_list.append(("Content-Length", str(len(payload))))
        return self._send(
            method, path, header_list, payload or b"", auth, described,
            chunked=chunked, keep=True, then=_then, sent=_sent,
        )  # fmt: skip

    def request_pair(
        self, first: tuple[str, str, Any], second: tuple[str, str, Any]
    ) -> tuple[Exchange, Exchange]:
        """Two JSON requests ``(method, path, body)`` written back to back on the kept
        connection (HTTP/1.1 pipelining), their answers read in order: one round trip instead
        of two.  The target processes them in order (neither is a safe method, so a server may
        not run them side by side).

        Only for a ``first`` that may be repeated (a test control setting an absolute value):
        a kept connection the target closed while idle is noticed before anything is written
        (:func:`_still_open`); one that is lost as the pair goes out gets ``first`` again, fresh,
        never ``second``.  ``second`` is sent again only when ``first``'s answer announced
        ``Connection: close`` (the target must not read past it, RFC 9112 9.6).  In every other
        case where ``second``'s answer does not arrive -- the connection lost before or after
        ``first``'s answer, ``first``'s answer unusable -- ``second`` is reported unanswered
        with a transport error (the step is indeterminate, not a divergence: the target may have
        carried it out) and pipelining is off for the rest of the run.
        """
        if not self.pipelining or self._silent:
            return self.request(*first), self.request(*second)
        wire = self._prepared(*second)
        if wire is None:
            return self.request(*first), self.request(*second)
        self._then_lost = False
        a = self.request(*first, _then=wire)
        if self._inflight is None:
            # first closed the connection (second was never read: sent again) or failed or
            # came back unusable or was sent again alone (second's fate unknown).
            if a.status is not None and self._closing and not self._then_lost:
                return a, self.request(*second)
            if a.status is not None:
                self.pipelining = False
            return a, self._failure(
                second[0], second[1], second[2], time.perf_counter(),
                f"not answered: the connection was lost before the answer to {first[0]}"
                f" {first[1]} came back with it (pipelined behind it; not sent again: it may"
                " have been carried out)",
            )  # fmt: skip
        b = self.request(*second, _sent=True)
        if b.status is None:
            self.pipelining = False
            if not b.unsendable:
                why = (
                    f"not answered (pipelined behind {first[0]} {first[1]}, whose answer came;"
                    f" not sent again: it may have been carried out): {b.transport_error}"
                )
                b = replace(b, transport_error=why)
        return a, b

    # -- a window of requests in flight (pipelined exploration) ---------------------

    def write_ahead(self, requests: list[tuple[str, str, Any]]) -> bool:
        """Write JSON requests ``(method, path, body)`` on the kept connection behind every one
        already written, their answers left unread (:meth:`read_ahead` reads them, in order).

        False: nothing was written (pipelining is off, the target has stopped answering, a
        request is not sendable, or a connection lost with answers still unread): read what is
        in flight, then send one request at a time.  A connection lost while writing keeps the
        requests queued: their answers come back as transport errors (never sent again: the
        target may have carried them out)."""
        if not self.pipelining or self._silent or (self._ahead and self._inflight is None):
            return False
        wires = [self._prepared(*r) for r in requests]
        if any(w is None for w in wires):
            return False
        if not self._ahead:
            if self._inflight is not None:
                return False  # a request_pair's second answer is unread (never the case)
            if self._conn is not None and not _still_open(self._conn):
                self._drop()  # closed by the target while idle: nothing was sent on it
            if self._conn is None:
                try:
                    self._conn = self._connect(time.monotonic() + self.config.timeout_s)
                except (OSError, _Deadline):
                    self._drop()
                    return False
                finally:
                    self._watchdog.disarm()
            self._inflight = (self._conn, b"")
        self._ahead.extend(requests)
        try:
            self._conn.sendall(b"".join(w for w in wires if w is not None))  # type: ignore[union-attr]
        except OSError:
            self._drop()  # the queued answers come back as "went with its connection"
        return True

    @property
    def ahead(self) -> int:
        """Requests written by :meth:`write_ahead` whose answers are still unread."""
        return len(self._ahead)

    def read_ahead(self) -> Exchange:
        """The answer to the oldest request :meth:`write_ahead` wrote (HTTP/1.1: answers come
        in the order of the requests).  A lost answer, or an answer that closes the connection
        with requests behind, turns pipelining off for the rest of the run
        (:attr:`pipelining_off` says why); the requests behind get transport errors."""
        method, path, body = self._ahead.pop(0)
        if self._inflight is None:
            # Gone with its connection before its answer: not a request the target ignored
            # (not counted towards SILENT_LIMIT), and never sent again.
            return self._failure(
                method, path, body, time.perf_counter(),
                "not answered: the connection was lost with this request pipelined behind"
                " another (not sent again: it may have been carried out)",
            )  # fmt: skip
        empty = body is EMPTY_BODY  # a method called without params: no body at all
        data = b"" if empty else _to_json(body).encode("utf-8")
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        more = bool(self._ahead)
        ex = self._send(
            method, path, headers, data, True, None if empty else body,
            chunked=False, keep=True, then=b"+" if more else b"", sent=True,
        )  # fmt: skip
        lost = ex.status is None or (more and self._inflight is None)
        if lost and self.pipelining:
            self.pipelining = False
            self.pipelining_off = (
                f"the target closed the connection with {len(self._ahead) + (ex.status is None)}"
                f" pipelined request(s) unanswered ({ex.transport_error or 'Connection: close'})"
            )
        return ex

    def _prepared(self, method: str, path: str, body: Any) -> bytes | None:
        """The bytes :meth:`request` would write for a JSON ``body`` (None: not sendable)."""
        data = b"" if body is EMPTY_BODY else _to_json(body).encode("utf-8")
        head = self._head(
            method,
            path,
            [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
            self._auth_header(True),
            keep=True,
        )
        return None if head is None else head + data

    def _head(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        auth_value: str | None,
        *,
        keep: bool,
    ) -> bytes | None:
        head = self._head_or_why(method, path, headers, auth_value, keep=keep)
        return head if isinstance(head, bytes) else None

    def _head_or_why(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        auth_value: str | None,
        *,
        keep: bool,
    ) -> bytes | str:
        """The request's head, or why it cannot be sent (a header not Latin-1, or holding a
        line break)."""
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", f"Host: {self._host_header}"]
        if keep:
            lines += ["User-Agent: memspec-harness", "Accept: application/json"]
        lines.append("Accept-Encoding: identity")
        if auth_value is not None:
            lines.append(f"Authorization: {auth_value}")
        lines.extend(f"{k}: {v}" for k, v in headers)
        if not keep:
            lines.append("Connection: close")
        text = "\r\n".join(lines)
        try:
            head = (text + "\r\n\r\n").encode("latin-1")
        except UnicodeEncodeError:
            return "a header is not Latin-1"
        breaks = len(lines) - 1  # the line ends put in above, and no other CR or LF
        if text.count("\n") != breaks or text.count("\r") != breaks:
            return "a header holds a line break"
        return head

    def raw(
        self,
        method: str,
        path: str,
        *,
        headers: list[tuple[str, str]] | None = None,
        body: bytes = b"",
        auth: Auth = True,
        described: Any = None,
        chunked: bool = False,
    ) -> Exchange:
        """Send bytes over a fresh connection exactly as given — the caller writes
        ``Content-Length`` (``chunked``: the body goes out chunk-encoded, the caller adds
        ``Transfer-Encoding``).  Only ``Host``, ``Connection: close`` and (per ``auth``)
        ``Authorization`` are added.
        """
        if self._scheme != "http":
            raise TargetError("raw requests need an http:// target (capability raw_http)")
        if described is None:
            described = _describe_bytes(body)
        return self._send(
            method, path, list(headers or []), body, auth, described, chunked=chunked, keep=False
        )

    def framed(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        auth: Auth = True,
        framing: Framing = "length",
        declared_length: str = "",
        hold_body: bool = False,
    ) -> Exchange:
        """Send ``body`` over a fresh connection (plain or TLS) in the framing asked for, the
        ones a client refuses included: ``length`` (its true ``Content-Length``), ``none`` (no
        length header), ``chunked`` (``Transfer-Encoding: chunked``), ``raw``
        (``declared_length`` as the ``Content-Length`` value, the body as given).  With
        ``hold_body`` the head goes first and the body only if no answer came within half the
        deadline (at most :data:`HOLD_S`): a size fence may answer before the body.

        The exchange keeps the body sent and the answer's body as received
        (``request_bytes``, ``answer``), for a caller that judges the wire itself."""
        header_list = list((headers or {}).items())
        if framing == "length":
            header_list.append(("Content-Length", str(len(body))))
        elif framing == "raw":
            header_list.append(("Content-Length", declared_length))
        elif framing == "chunked":
            header_list.append(("Transfer-Encoding", "chunked"))
        ex = self._send(
            method, path, header_list, body, auth, _describe_bytes(body),
            chunked=framing == "chunked", keep=False, hold_body=hold_body, record=True,
        )  # fmt: skip
        return ex if ex.request_bytes or not body else replace(ex, request_bytes=body)

    # -- the wire ---------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes,
        auth: Auth,
        described: Any,
        *,
        chunked: bool,
        keep: bool,
        then: bytes = b"",
        sent: bool = False,
        hold_body: bool = False,
        record: bool = False,
    ) -> Exchange:
        """``then``: bytes of a further request written right behind this one (its answer is
        left for the next call, ``sent``: this request's bytes are already written).
        ``hold_body``: the body waits for :meth:`_roundtrip` to see no early answer;
        ``record``: the exchange keeps the body sent and the answer's bytes."""
        auth_value = self._auth_header(auth)
        shown = tuple(headers) + (
            (("Authorization", _elided_auth(auth)),) if auth_value is not None else ()
        )
        head = self._head_or_why(method, path, headers, auth_value, keep=keep)
        if isinstance(head, str):
            return self._unsendable(method, path, described, shown, head)
        wire_body = _chunk_encoded(body) if chunked else body
        honest = chunked or _declared(headers) in (None, len(body))
        if self._silent >= SILENT_LIMIT and honest and not sent:
            self._held += 1
            if self._held % RECHECK_EVERY:
                return self._failure(
                    method,
                    path,
                    described,
                    time.perf_counter(),
                    f"not sent: the target gave no answer to the last {self._silent} requests",
                    shown,
                )
        started = time.perf_counter()
        request, held = (head, wire_body) if hold_body else (head + wire_body, b"")
        answer = self._answer(
            method, path, described, shown, started, request, then, keep, sent, honest, held
        )
        if isinstance(answer, Exchange):
            return answer
        return self._exchange(
            method, path, described, shown, started, answer, body if record else None
        )

    def _answer(
        self,
        method: str,
        path: str,
        described: Any,
        shown: Any,
        started: float,
        request: bytes,
        then: bytes,
        keep: bool,
        sent: bool,
        honest: bool,
        held: bytes = b"",
    ) -> Answer | Exchange:
        """Write ``request`` (and ``then`` behind it) and read its answer under one deadline;
        a transport failure is its failed exchange.  A kept-alive connection the target closed
        as the request went out is tried once more, fresh.  ``held``: a body sent after
        ``request`` only if no answer came first (:meth:`_roundtrip`)."""
        deadline = time.monotonic() + self.config.timeout_s
        if keep and not sent and self._conn is not None and not _still_open(self._conn):
            self._drop()  # closed by the target while idle: nothing was sent on it
        reused = keep and self._conn is not None
        answer_ok = False
        wire = b"" if sent else request + then
        try:
            try:
                answer = self._roundtrip(method, wire, deadline, keep, bool(then), sent, held)
                answer_ok = True
            except (RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if not reused or self._watchdog.fired or sent:
                    raise
                # A kept-alive connection the target closed as the request went out: once more,
                # fresh.  Not the request pipelined behind it: the target may have carried that
                # one out before the connection went (request_pair reports it unanswered).
                self._drop()
                self._then_lost = bool(then)
                wire = request + held
                answer = self._roundtrip(method, wire, deadline, keep, False, sent)
                answer_ok = True
        except (*_TIMED_OUT, OSError, WireError, ValueError) as exc:
            self._drop()
            return self._transport_failure(exc, method, path, described, started, shown)
        finally:
            self._watchdog.disarm()
            if honest:  # a request declaring more than it sends may be held: not counted
                self._silent = 0 if answer_ok else self._silent + 1
        return answer

    def _transport_failure(
        self, exc: BaseException, method: str, path: str, described: Any, started: float, shown: Any
    ) -> Exchange:
        """The failed exchange of a request that got no answer: a timeout (the deadline, or
        the watchdog that closed the socket), a refused connection, TLS, or another error."""
        if isinstance(exc, _TIMED_OUT):
            return self._failure(
                method, path, described, started, self._timeout_text(), shown, timeout=True
            )
        if isinstance(exc, ConnectionRefusedError):
            return self._failure(
                method, path, described, started, f"cannot connect: {_short(exc)}", shown
            )
        if isinstance(exc, ssl.SSLError):
            return self._failure(method, path, described, started, f"TLS: {_short(exc)}", shown)
        if self._watchdog.fired:
            return self._failure(
                method, path, described, started, self._timeout_text(), shown, timeout=True
            )
        return self._failure(
            method, path, described, started, f"{type(exc).__name__}: {_short(exc)}", shown
        )

    def _exchange(
        self,
        method: str,
        path: str,
        described: Any,
        shown: Any,
        started: float,
        answer: Answer,
        recorded: bytes | None = None,
    ) -> Exchange:
        """The exchange of an answered request: its body parsed (or why not), a large one
        summed up by size, digest and a head, held by the run's answer gate while it lives.
        ``recorded``: the body sent, kept with the answer's bytes (``framed``)."""
        parsed, excerpt, body_error, decoded, hold = self._decode_all(answer)
        size = len(answer.data)
        values = 0
        head = ""
        if parsed is not None:
            values = 1 + decoded.count(b",") + decoded.count(b"[") + decoded.count(b"{")
            if size > KEEP_PASSED[0] or values > KEEP_PASSED[1]:
                head = decoded[: 4 * scrub.window(CUT_EXCERPT_CHARS)].decode("utf-8", "replace")
        exchange = Exchange(
            method=method,
            path=path,
            request_body=described,
            status=answer.status,
            body=parsed,
            raw_excerpt=excerpt,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            body_error=body_error,
            request_headers=shown,
            content_type=answer.content_type,
            reason=answer.reason,
            body_bytes=size,
            body_sha256=hashlib.sha256(answer.data).hexdigest(),
            body_values=values,
            body_head=head,
            request_bytes=recorded if recorded is not None else b"",
            answer=answer.data if recorded is not None else b"",
        )
        budget.tie(hold, exchange)  # the run's answer gate, held while the whole answer lives
        return exchange

    @property
    def gone(self) -> bool:
        """The last :data:`SILENT_LIMIT` requests got no HTTP answer: the target stopped
        answering (further requests fail at once but for a periodic re-check)."""
        return self._silent >= SILENT_LIMIT

    def _timeout_text(self) -> str:
        return f"timeout: no complete answer within {self.config.timeout_s:g}s"

    def _connect(self, deadline: float) -> socket.socket:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Deadline()
        sock = socket.create_connection((self._host, self._port), timeout=remaining)
        try:
            # Requests written one behind another (write_ahead) go out at once, not held back
            # until the previous one is acknowledged (Nagle).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._watchdog.arm(sock, deadline)
            if self._ssl is not None:
                sock = self._ssl.wrap_socket(sock, server_hostname=self._host)
                self._watchdog.arm(sock, deadline)
            # Blocking from here on: each send and read is one system call (a socket with a
            # timeout polls before each).  The watchdog ends a request at its deadline; the
            # kernel's timeout bounds any single call a little past --timeout besides.
            sock.settimeout(None)
            _bound_each_call(sock, self.config.timeout_s + 1)
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
        held: bytes = b"",
    ) -> Answer:
        """One answer.  ``pipelined``: ``wire`` holds a further request whose answer stays
        unread (kept in :attr:`_inflight`); ``sent``: read the answer of that request;
        ``held``: the request's body, sent after ``wire`` unless an answer comes first."""
        self._closing = False
        pending = b""
        if sent:
            if self._inflight is None or self._inflight[0] is not self._conn:
                raise RemoteDisconnected("the pipelined request went with its connection")
            sock, pending = self._inflight
            self._inflight = None
            self._watchdog.arm(sock, deadline)
        elif keep and self._conn is not None:
            sock = self._conn
            self._watchdog.arm(sock, deadline)
        else:
            sock = self._connect(deadline)
            if keep:
                self._conn = sock
        reusable = False
        whole = True  # the request was written to its end
        try:
            if not sent:
                whole, pending = self._write_request(sock, wire, held)
            answer = read_answer(sock, pending, method, self.config.max_response_bytes, deadline)
            if self._watchdog.fired:
                raise _Deadline()
            # Bytes past the answer are the pipelined request's answer -- or, when nothing was
            # pipelined, bytes no request asked for: then the connection is not used again.
            # A request cut short by an early answer leaves the connection unusable too.
            reusable = keep and whole and answer.reusable and (pipelined or not answer.rest)
            if pipelined and reusable:
                self._inflight = (sock, answer.rest)
            # A target that closes after this answer must not read what came behind it
            # (RFC 9112, 9.6): only then may a pipelined request be sent again.
            self._closing = answer.will_close
            return answer
        finally:
            if not reusable:
                if keep:
                    self._drop()
                else:
                    sock.close()

    def _write_request(self, sock: socket.socket, wire: bytes, held: bytes) -> tuple[bool, bytes]:
        """Write ``wire``, then ``held`` unless an answer came first: (written to its end,
        bytes of an answer already read)."""
        try:
            whole, pending = self._write(sock, wire)
            if not held or not whole:
                return whole, pending
            if _answer_waiting(sock, min(HOLD_S, self.config.timeout_s / 2)):
                return False, b""
            return self._write(sock, held)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
            # The target may answer before it has read the whole body (an early 413) and
            # close: read whatever answer it sent.
            return False, b""

    @staticmethod
    def _write(sock: socket.socket, data: bytes) -> tuple[bool, bytes]:
        """Write ``data``; a long request is sent watching for an early answer
        (:func:`_send_watching`): (written to its end, bytes of an answer already read)."""
        if len(data) < WATCH_FROM:
            sock.sendall(data)
            return True, b""
        return _send_watching(sock, data)

    def _drop(self) -> None:
        self._inflight = None  # (write_ahead's queued answers then fail, in order)
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:  # pragma: no cover
                pass
            self._conn = None

    def _unsendable(self, method: str, path: str, described: Any, shown: Any, why: str) -> Exchange:
        return Exchange(
            method=method,
            path=path,
            request_body=described,
            status=None,
            body=None,
            transport_error=f"not sendable: {why}",
            request_headers=tuple(shown),
            unsendable=True,
        )

    def _failure(
        self,
        method: str,
        path: str,
        described: Any,
        started: float,
        error: str,
        headers: Any = (),
        *,
        timeout: bool = False,
    ) -> Exchange:
        return unanswered(method, path, described, started, error, headers, timed_out=timeout)

    def close(self) -> None:
        self._drop()
        self._watchdog.close()

    def __enter__(self) -> HttpTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def other_case(token: str) -> str:
    """``token`` with its letters in the other case; a token without a cased letter gets its
    last character changed instead (it has no other case to send)."""
    swapped = token.swapcase()
    if swapped != token:
        return swapped
    return token[:-1] + ("A" if token[-1:] != "A" else "B")


def _elided_auth(auth: Auth) -> str:
    return {
        True: "Bearer [token]",
        "wrong": "Bearer [wrong token]",
        "scheme": "Basic [token]",
        "empty": "Bearer (empty)",
        "prefix": "Bearer [token less its last character]",
        "longer": "Bearer [token and one character more]",
        "case": "Bearer [token in the other letter case]",
    }.get(auth, "?")


MAX_DEPTH = 64


def parse_answer(data: bytes) -> tuple[Any, str, str | None]:
    """(parsed JSON or None, excerpt, body_error) for an answer's bytes: strict JSON
    (``NaN``/``Infinity`` are not JSON), at most :data:`MAX_DEPTH` levels deep."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, _excerpt(data), "not JSON: the body is not UTF-8"
    try:
        parsed = _from_json(text)
    except RecursionError:
        return None, _excerpt(data), f"not JSON: nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return None, _excerpt(data), f"not JSON ({_json_problem(exc)})"
    if _too_deep(data):
        return None, _excerpt(data), f"not JSON: nested deeper than {MAX_DEPTH} levels"
    return parsed, "", None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: One encoder and one strict decoder for every request (``json.dumps``/``json.loads`` with
#: options build a new one each call).
_to_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_from_json = json.JSONDecoder(parse_constant=_no_constant).decode


def _json_problem(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"broken at character {exc.pos}"
    return _short(exc)


#: Every byte but the quote and the brackets (deleted to see a JSON text's structure).
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
#: Both kinds of bracket as one: a valid JSON text's pairs nest properly whatever their kind.
_ONE_KIND = bytes.maketrans(b"[]{}", b"()()")
#: The shape is built from pieces of this many bytes (a bound on what one step allocates).
_PIECE = 65536


def _too_deep(data: bytes) -> bool:
    """A valid JSON text with an array or object more than :data:`MAX_DEPTH` levels deep,
    seen on its bytes: strings taken out (escaped backslashes and quotes first), only the
    brackets kept, then the innermost empty pairs removed level by level.  Done piece by
    piece and with ``bytes.replace`` (no list of a million pieces, no regular expression), so
    it costs about the size of the text however many values it holds."""
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return False  # not enough brackets to nest that deep
    marks = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    kept = bytearray()
    inside = False  # inside a string at the start of the piece
    for start in range(0, len(marks), _PIECE):
        parts = marks[start : start + _PIECE].split(b'"')
        kept += b"".join(parts[1 if inside else 0 :: 2])  # what was inside strings dropped
        inside = inside != (len(parts) % 2 == 0)
        del parts
    shape = bytes(kept).translate(_ONE_KIND)
    del kept, marks
    for _ in range(MAX_DEPTH):
        if not shape:
            return False
        shape = shape.replace(b"()", b"")
    return bool(shape)


#: Characters of a non-JSON answer a report quotes.
EXCERPT_CHARS = 200


def _excerpt(data: bytes) -> str:
    """The start of an answer as shown: scrubbed, escaped, *then* cut (:func:`scrub.shown`)."""
    text = data[: scrub.window(EXCERPT_CHARS)].decode("utf-8", "replace")
    return scrub.shown(text, EXCERPT_CHARS)


def _content_decode(data: bytes, encoding: str, limit: int) -> tuple[bytes, str | None]:
    """Undo ``Content-Encoding`` (we ask for ``identity``; a target may send anything) with a
    hard limit on the decoded size, however the codings are stacked."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip", "deflate"):
            wbits = 47 if coding != "deflate" else 15  # gzip or zlib header (auto)
            try:
                d = zlib.decompressobj(wbits)
                out = d.decompress(data, limit + 1)
                if coding == "deflate" and not out and data:
                    raise zlib.error("empty")
            except zlib.error:
                if coding != "deflate":
                    return data, f"body not decodable as {coding}"
                try:
                    d = zlib.decompressobj(-15)
                    out = d.decompress(data, limit + 1)
                except zlib.error:
                    return data, "body not decodable as deflate"
            if len(out) > limit or d.unconsumed_tail:
                return out[:200], f"{TOO_LARGE} {limit} bytes once decoded ({coding})"
            data = out
            continue
        return data, f"answer in an unsupported Content-Encoding ({coding})"
    return data, None


def _describe_bytes(data: bytes) -> Any:
    """A raw body for a report: its JSON if it is JSON, else a short description."""
    if len(data) <= 2048:
        try:
            return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            text = data.decode("utf-8", "replace")
            return {"raw": text[:200] + ("…" if len(text) > 200 else "")}
    return {"raw_bytes": len(data), "head": data[:80].decode("utf-8", "replace")}


def _short(exc: BaseException) -> str:
    """An error's message as shown (it may quote a target's bytes): its first line, scrubbed
    and escaped, then cut."""
    text = str(exc) or type(exc).__name__
    lines = text.splitlines()
    return scrub.shown(lines[0] if lines else text, 200)


def _chunk_encoded(body: bytes) -> bytes:
    """``body`` as one chunk (none when empty) and the last chunk."""
    return (f"{len(body):x}\r\n".encode() + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
