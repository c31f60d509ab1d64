"""The HTTP client every protocol target is built on.

A target is a store reached over HTTP — the bundled one included; nothing here imports a
store.  The client is deliberately defensive, because the stores it talks to may be hostile:

* every request is written by hand over a socket (plain, or TLS trusting the system CAs or
  ``--ca-cert``) and read with :mod:`http.client`'s parser; one kept-alive connection per
  target, redirects never followed (a 3xx is an answer like any other);
* ``--timeout`` is a deadline for the *whole* request — connect, send, status line, headers
  and body — enforced by a watchdog that shuts the socket down, so a target dripping one byte
  a second cannot keep a request alive;
* the answer is read up to a bound (4 MiB by default); we ask for ``Accept-Encoding:
  identity`` and decode whatever ``Content-Encoding`` the target sends anyway with the same
  hard bound on the decoded size (stacked gzip cannot inflate 2 kB into 1 GiB);
* answers are parsed as strict JSON (``NaN``/``Infinity`` are not JSON) at most 64 levels
  deep — anything else is an answer with a ``body_error``, never an exception;
* answers are kept exactly as the target sent them: the bearer token (a
  :class:`~conformance.drivers.base.Secret`) is blanked where things are *shown*
  (:mod:`conformance.scrub`), never before judging;
* every transport failure (timeout, refused, reset, protocol garbage) becomes an
  :class:`~conformance.drivers.base.Exchange` with ``transport_error`` set — never an exception;
* :meth:`HttpTarget.raw` sends a request byte for byte on a fresh connection, for the cases a
  client would not produce (``Content-Length: 0x10``, a length that lies).  It is the
  ``raw_http`` capability, available for ``http://`` targets only (behind TLS and a public
  edge, the edge rewrites those headers anyway).

The client is in four modules: this one (:class:`HttpTarget`: requests, pipelining, raw
requests, failures as exchanges), :mod:`~conformance.targets.connection` (the kept connection,
the deadline watchdog, reading one answer), :mod:`~conformance.targets.decoding` (bounded
decoding, strict JSON) and :mod:`~conformance.targets.config` (token, target profile, URL,
:class:`TargetError`).  Every name importers use is importable from here.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from conformance import scrub
from conformance.drivers.base import Exchange, TargetConfig
from conformance.targets.config import (
    AUTH,
    RAW_HTTP,
    Auth,
    TargetError,
    TargetProfile,
    TokenRefused,
    check_url,
    load_target_profile,
    load_token,
    token_refused,
)
from conformance.targets.connection import Connection, _Answer, _Deadline, _Watchdog
from conformance.targets.decoding import (
    MAX_DEPTH,
    _content_decode,
    _describe_bytes,
    _excerpt,
    _short,
    parse_answer,
)

__all__ = [
    "AUTH",
    "MAX_DEPTH",
    "RAW_HTTP",
    "RECHECK_EVERY",
    "SILENT_LIMIT",
    "Auth",
    "HttpTarget",
    "TargetError",
    "TargetProfile",
    "TokenRefused",
    "check_url",
    "load_target_profile",
    "load_token",
    "parse_answer",
    "token_refused",
]

_NO_BODY = object()


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


class HttpTarget(Connection):
    """One target's HTTP client.  Subclasses add the protocol's routes and probes.

    Every request is written by hand (so the header values a library would refuse — ``Bearer ``,
    a ``Content-Length`` of ``0x8`` — can be sent when the step asks for them) and read with
    :mod:`http.client`'s response parser, over one kept-alive connection (plain or TLS) per
    target; a raw request uses a fresh connection it closes.
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
        #: (socket, the reader holding the bytes past the last answer)
        self._inflight: tuple[socket.socket, Any] | None = None
        self._closing = False  # the last answer announced ``Connection: close``
        #: off once a target failed to answer a pipelined request (see :meth:`request_pair`)
        self.pipelining = True

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
        token = self.config.token.reveal() if self.config.token else ""
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
        raise ValueError(f"unknown auth form {auth!r}")

    def _decode(self, answer: _Answer) -> tuple[Any, str, str | None]:
        """(parsed JSON or None, excerpt, body_error) — exactly what the target sent: nothing
        is blanked here (the token is blanked where an answer is written or printed)."""
        data, problem = _content_decode(
            answer.data, answer.encoding, self.config.max_response_bytes
        )
        if problem is not None:
            return None, _excerpt(data), problem
        if answer.truncated:
            return (
                None,
                _excerpt(data),
                f"answer larger than {self.config.max_response_bytes} bytes",
            )
        if not data:
            return None, "", "empty body"
        return parse_answer(data)

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
        if body is not _NO_BODY:
            payload = json.dumps(
                body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
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
        when the kept connection turns out stale it is sent again, fresh.  If ``first`` gets
        no answer, ``second``'s bytes were dropped with the connection and its exchange says
        so (its answer unknown); if ``first``'s answer closes the connection, ``second`` is
        sent again on a fresh one (the target never read it).  A target that answers
        ``first`` but not ``second`` has pipelining turned off for the rest of the run.
        """
        if not self.pipelining or self._silent:
            return self.request(*first), self.request(*second)
        wire = self._prepared(*second)
        if wire is None:
            return self.request(*first), self.request(*second)
        a = self.request(*first, _then=wire)
        if self._inflight is None:
            # first closed the connection (second was never read: sent again) or failed or
            # came back unusable (second's bytes went with the connection, its fate unknown).
            if a.status is not None and self._closing:
                return a, self.request(*second)
            return a, self._failure(
                second[0], second[1], second[2], time.perf_counter(),
                "not answered: the connection was lost with the answer to the request"
                " pipelined before it (not sent again: it may have been carried out)",
            )  # fmt: skip
        b = self.request(*second, _sent=True)
        if b.status is None:
            self.pipelining = False
        return a, b

    def _prepared(self, method: str, path: str, body: Any) -> bytes | None:
        """The bytes :meth:`request` would write for a JSON ``body`` (None: not sendable)."""
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        data = payload.encode("utf-8")
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
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", f"Host: {self._host_header}"]
        if keep:
            lines += ["User-Agent: memspec-harness", "Accept: application/json"]
        lines.append("Accept-Encoding: identity")
        if auth_value is not None:
            lines.append(f"Authorization: {auth_value}")
        lines.extend(f"{k}: {v}" for k, v in headers)
        if not keep:
            lines.append("Connection: close")
        if any(c in "\r\n" for line in lines for c in line):
            return None
        try:
            return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        except UnicodeEncodeError:
            return None

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
    ) -> Exchange:
        """``then``: bytes of a further request written right behind this one (its answer is
        left for the next call, ``sent``: this request's bytes are already written)."""
        auth_value = self._auth_header(auth)
        shown = tuple(headers) + (
            (("Authorization", _elided_auth(auth)),) if auth_value is not None else ()
        )
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", f"Host: {self._host_header}"]
        if keep:
            lines += ["User-Agent: memspec-harness", "Accept: application/json"]
        lines.append("Accept-Encoding: identity")
        if auth_value is not None:
            lines.append(f"Authorization: {auth_value}")
        lines.extend(f"{k}: {v}" for k, v in headers)
        if not keep:
            lines.append("Connection: close")
        try:
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        except UnicodeEncodeError:
            return self._unsendable(method, path, described, shown, "a header is not Latin-1")
        if any(c in "\r\n" for line in lines for c in line):
            return self._unsendable(method, path, described, shown, "a header holds a line break")
        if chunked:
            wire_body = (f"{len(body):x}\r\n".encode() + body + b"\r\n" if body else b"") + (
                b"0\r\n\r\n"
            )
        else:
            wire_body = body
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
        deadline = time.monotonic() + self.config.timeout_s
        reused = keep and self._conn is not None
        answer_ok = False
        wire = b"" if sent else head + wire_body + then
        try:
            try:
                answer = self._roundtrip(method, wire, deadline, keep, bool(then), sent)
                answer_ok = True
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if not reused or self._watchdog.fired or sent:
                    raise
                # A kept-alive connection the target had already closed: once more, fresh.
                self._drop()
                answer = self._roundtrip(method, wire, deadline, keep, bool(then), sent)
                answer_ok = True
        except (_Deadline, TimeoutError):
            self._drop()
            return self._failure(
                method, path, described, started, self._timeout_text(), shown, timeout=True
            )
        except ConnectionRefusedError as exc:
            self._drop()
            return self._failure(
                method, path, described, started, f"cannot connect: {_short(exc)}", shown
            )
        except ssl.SSLError as exc:
            self._drop()
            return self._failure(method, path, described, started, f"TLS: {_short(exc)}", shown)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            self._drop()
            if self._watchdog.fired:
                return self._failure(
                    method, path, described, started, self._timeout_text(), shown, timeout=True
                )
            return self._failure(
                method, path, described, started, f"{type(exc).__name__}: {_short(exc)}", shown
            )
        finally:
            self._watchdog.disarm()
            if honest:  # a request declaring more than it sends may be held: not counted
                self._silent = 0 if answer_ok else self._silent + 1
        parsed, excerpt, body_error = self._decode(answer)
        return Exchange(
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
        )

    @property
    def gone(self) -> bool:
        """The last :data:`SILENT_LIMIT` requests got no HTTP answer: the target stopped
        answering (further requests fail at once but for a periodic re-check)."""
        return self._silent >= SILENT_LIMIT

    def _timeout_text(self) -> str:
        return f"timeout: no complete answer within {self.config.timeout_s:g}s"

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
        return Exchange(
            method=method,
            path=path,
            request_body=described,
            status=None,
            body=None,
            transport_error=error,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            request_headers=tuple(headers or ()),
            timed_out=timeout,
        )

    def close(self) -> None:
        self._drop()
        self._watchdog.close()

    def __enter__(self) -> HttpTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _elided_auth(auth: Auth) -> str:
    return {
        True: "Bearer [token]",
        "wrong": "Bearer [wrong token]",
        "scheme": "Basic [token]",
        "empty": "Bearer (empty)",
    }.get(auth, "?")
