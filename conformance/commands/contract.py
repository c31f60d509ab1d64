"""``memspec contract``: fuzz a store against the OpenAPI documents of its wire protocols.

Schemathesis generates requests from ``specs/memory-worker.openapi.yaml`` and
``specs/ledger.openapi.yaml`` -- schema-valid ones and schema-invalid ones -- and this module
sends them to the target with its own bounded HTTP client (a deadline for the whole exchange,
identity encoding, a cap on the answer's size) and judges every answer with schemathesis'
checks: no server error, a documented status, the documented content type, a body matching
the documented schema, and invalid input refused.  Deterministic probes add what generation
does not reach: missing and wrong credentials on every data route, oversized, unsized
(streamed) and badly sized bodies, and a body of exactly the largest allowed size.

Every finding is reported under the clause of the contract it breaks (auth, size fence,
validation, answer shapes) with a ``curl`` line that reproduces it (the token written as
``$MEMSPEC_TOKEN``, never its value) and a replay file; the run writes ``contract.json`` to
the report directory and prints a summary.  Exit 0: no finding; 1: findings; 2: usage error or
an unreachable target.

The test controls (``/ledger/_test/*``) are not fuzzed: a store serves them only under
``--test-control``.  Fuzzing writes generated data into the target: point it at a disposable
store.  :func:`finding_records` returns a report's findings as ``(clause, title, detail,
curl)`` records for the ``memspec run`` report.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shlex
import socket
import ssl
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from conformance.drivers.base import Secret, TargetConfig
from conformance.errors import TargetUnreachable, UsageError

FORMAT = "memspec-contract/1"
REPLAY_FORMAT = "memspec-contract-replay/1"
REPORT_FILE = "contract.json"
REPLAY_DIR = "contract-replays"
TOKEN_PLACEHOLDER = "$MEMSPEC_TOKEN"
MAX_BODY = 512 * 1024
MAX_ANSWER = 4 * 1024 * 1024
SPECS_DIR = Path(__file__).resolve().parents[2] / "specs"
SPEC_FILES = {"memory": "memory-worker.openapi.yaml", "ledger": "ledger.openapi.yaml"}

# Generated examples per operation and generation mode, and a time budget for all generated
# cases (a slow target gets fewer examples, never a longer run).
PROFILES: dict[str, int] = {"quick": 4, "ci": 25, "deep": 150}
BUDGETS_S: dict[str, float] = {"quick": 5.0, "ci": 120.0, "deep": 1200.0}


class _OutOfTime(Exception):
    """The operation's share of the time budget is spent."""


# Valid bodies for the deterministic probes (the route is exercised, the probe changes only
# the credentials or the framing).
MEMORY_ROUTES: dict[str, dict[str, Any]] = {
    "/retrieve": {"scopeKey": "memspec-contract:probe", "query": "probe", "limit": 1},
    "/write": {"scopeKey": "memspec-contract:probe", "records": []},
    "/list": {"scopeKey": "memspec-contract:probe", "limit": 1},
    "/forget": {"scopeKey": "memspec-contract:probe", "id": "mem:memspec-contract:probe:0"},
}
LEDGER_METHODS: dict[str, dict[str, Any]] = {
    "memory/save_memory_record": {"body": ""},  # blank: refused, nothing written
    "memory/list_memory_records": {"scopeKey": "account:local"},
    "memory/delete_memory_record": {"recordId": "memspec-contract-probe"},
    "memory/supersede_memory_record": {"recordId": "memspec-contract-probe", "body": "x"},
    "memory/approve_memory_record": {"recordId": "memspec-contract-probe"},
    "memory/reject_memory_record": {"recordId": "memspec-contract-probe"},
    "memory/list_memory_records_as_of": {
        "scopeKey": "account:local",
        "at": "2020-01-01T00:00:00.000Z",
    },
    "memory/get_consolidation_settings": {"scopeKey": "account:local"},
    "memory/update_consolidation_settings": {"scopeKey": "account:local"},
}

# The clause each kind of finding is reported under, per protocol.
AUTH = {"memory": "MEM-WIRE.3", "ledger": "LED-WIRE.1"}
ORDER = {"memory": "MEM-WIRE.4", "ledger": "LED-WIRE.1"}
LENGTH = {"memory": "MEM-WIRE.5", "ledger": "LED-WIRE.1"}
SIZE = {"memory": "MEM-WIRE.6", "ledger": "LED-WIRE.1"}
ERROR_SHAPE = {"memory": "MEM-WIRE.8", "ledger": "LED-WIRE.2"}
VALIDATION_MEMORY = {
    "/retrieve": "MEM-WIRE.11",
    "/write": "MEM-WIRE.12",
    "/list": "MEM-WIRE.14",
    "/forget": "MEM-WIRE.15",
}
ANSWER_MEMORY = {
    "/healthz": "MEM-WIRE.1",
    "/retrieve": "MEM-WIRE.16",
    "/write": "MEM-WIRE.13",
    "/list": "MEM-WIRE.16",
    "/forget": "MEM-WIRE.15",
}


class FindingRecord(NamedTuple):
    """One finding as the ``memspec run`` report takes it."""

    clause: str
    title: str
    detail: str
    curl: str


@dataclass
class Finding:
    clause: str
    title: str
    detail: str
    curl: str
    protocol: str
    route: str
    check: str
    replay: str | None = None
    count: int = 1

    def record(self) -> FindingRecord:
        return FindingRecord(self.clause, self.title, self.detail, self.curl)


# --------------------------------------------------------------------------- scrubbing


_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescape(text: str) -> str:
    """JSON string escapes a target may use to smuggle the token past a plain search."""

    def one(m: re.Match[str]) -> str:
        return chr(int(m.group(1), 16))

    return _JSON_ESCAPE.sub(one, text).replace("\\/", "/")


class Scrubber:
    """Removes the token from anything a target can make us print or write."""

    def __init__(self, token: Secret | None) -> None:
        self._token = token.reveal() if token else ""

    def __call__(self, text: str) -> str:
        # Lone surrogates (from generated data or a target) could not be printed or written.
        text = text.encode("utf-8", "replace").decode("utf-8")
        if not self._token:
            return text
        out = text.replace(self._token, TOKEN_PLACEHOLDER)
        if self._token in _unescape(out) or self._token.lower() in out.lower():
            out = _unescape(out)
            out = re.sub(re.escape(self._token), TOKEN_PLACEHOLDER, out, flags=re.IGNORECASE)
        return out

    def deep(self, value: Any) -> Any:
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(str(k)): self.deep(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.deep(v) for v in value]
        return value


# --------------------------------------------------------------------------- HTTP


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
                    f"{{ printf %s {shlex.quote(prefix.decode())};"
                    f" head -c {pad} /dev/zero | tr '\\0' ' '; }}"
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


# --------------------------------------------------------------------------- the checks


@dataclass
class Run:
    http: Http
    scrub: Scrubber
    findings: list[Finding] = field(default_factory=list)
    exchanges: dict[int, Exchange] = field(default_factory=dict)
    operations: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(
        self,
        ex: Exchange,
        *,
        clause: str,
        title: str,
        detail: str,
        protocol: str,
        route: str,
        check: str,
    ) -> None:
        """One finding per clause, route and check; repeats are counted and their details
        appended (bounded), not listed again."""
        for f in self.findings:
            if (f.clause, f.route, f.check) == (clause, route, check):
                f.count += 1
                extra = self.scrub(detail)
                if extra not in f.detail and len(f.detail) < 1200:
                    f.detail = f"{f.detail}; {extra}"[:1400]
                return
        finding = Finding(
            clause=clause,
            title=self.scrub(title),
            detail=self.scrub(detail),
            curl=self.scrub(self.http.curl(ex)),
            protocol=protocol,
            route=route,
            check=check,
        )
        self.findings.append(finding)
        self.exchanges[id(finding)] = ex

    def count(self, label: str, key: str) -> None:
        op = self.operations.setdefault(label, {})
        op[key] = op.get(key, 0) + 1


def _excerpt(ex: Exchange, limit: int = 300) -> str:
    if ex.error:
        return ex.error
    text = ex.answer[:limit].decode("utf-8", "replace")
    more = "…" if len(ex.answer) > limit else ""
    return f"{ex.status} {text}{more}"


def _error_shape_ok(protocol: str, ex: Exchange) -> bool:
    body = ex.json()
    if not isinstance(body, dict) or set(body) != {"error"}:
        return False
    err = body["error"]
    if protocol == "memory":
        return isinstance(err, str) and bool(err)
    return (
        isinstance(err, dict)
        and isinstance(err.get("code"), int)
        and not isinstance(err.get("code"), bool)
        and isinstance(err.get("message"), str)
    )


def _expect_status(
    run: Run,
    ex: Exchange,
    want: set[int],
    *,
    protocol: str,
    route: str,
    clause: str,
    title: str,
    check: str,
    what: str = "",
) -> None:
    label = f"POST {route}"
    run.count(label, "probes")
    if ex.error is not None or ex.status not in want:
        expected = " or ".join(map(str, sorted(want)))
        prefix = f"{what}: " if what else ""
        run.add(
            ex,
            clause=clause,
            title=title,
            detail=f"{prefix}expected {expected}, got {_excerpt(ex, 160)}",
            protocol=protocol,
            route=route,
            check=check,
        )
        return
    if ex.status >= 400 and not _error_shape_ok(protocol, ex):
        run.add(
            ex,
            clause=ERROR_SHAPE[protocol],
            title=f"{route}: the {ex.status} answer is not the protocol's error body",
            detail=_excerpt(ex),
            protocol=protocol,
            route=route,
            check="error body",
        )


def _routes(protocol: str) -> dict[str, dict[str, Any]]:
    if protocol == "memory":
        return MEMORY_ROUTES
    return {f"/ledger/{m}": body for m, body in LEDGER_METHODS.items()}


def probe_auth(run: Run, protocol: str, token: Secret | None) -> None:
    """Every data route refuses a request without the exact bearer, before its body."""
    http = run.http
    wrong: list[tuple[str, dict[str, str]]] = [
        ("no Authorization header", {}),
        ("a wrong token", {"Authorization": "Bearer memspec-contract-wrong-token"}),
        ("an empty bearer", {"Authorization": "Bearer "}),
        ("another scheme", {"Authorization": "Basic bWVtc3BlYzp3cm9uZw=="}),
    ]
    if token:
        secret = token.reveal()
        wrong += [
            ("the token without the Bearer scheme", {"Authorization": secret}),
            ("the token with a suffix", {"Authorization": f"Bearer {secret}x"}),
        ]
    for route, body in _routes(protocol).items():
        raw = json.dumps(body).encode()
        for what, headers in wrong:
            ex = http.send(
                "POST", route, raw, {"Content-Type": "application/json", **headers}, auth=False
            )
            if "Authorization" in headers and token and token.reveal() in headers["Authorization"]:
                ex.headers["Authorization"] = headers["Authorization"].replace(
                    token.reveal(), TOKEN_PLACEHOLDER
                )
            _expect_status(
                run,
                ex,
                {401},
                protocol=protocol,
                route=route,
                clause=AUTH[protocol],
                title=f"{route} answers a request without the exact bearer",
                check="auth",
                what=what,
            )
        # Auth is judged before the length: no token and no length is still 401.
        ex = http.send("POST", route, b"", {}, auth=False, framing="none")
        _expect_status(
            run,
            ex,
            {401},
            protocol=protocol,
            route=route,
            clause=ORDER[protocol],
            title=f"{route}: an unauthenticated unsized request is not 401",
            check="auth order",
            what="no credentials and no Content-Length",
        )


def probe_fence(run: Run, protocol: str) -> None:
    """Unsized, badly sized and oversized bodies; the largest allowed body passes the fence."""
    http = run.http
    for route, body in _routes(protocol).items():
        raw = json.dumps(body).encode()
        json_type = {"Content-Type": "application/json"}
        cases: list[tuple[str, Exchange, set[int], str]] = [
            (
                "an unsized (chunked) body",
                http.send("POST", route, raw, json_type, framing="chunked"),
                {411},
                LENGTH[protocol],
            ),
            (
                "no Content-Length",
                http.send("POST", route, b"", json_type, framing="none"),
                {411},
                LENGTH[protocol],
            ),
            (
                "Content-Length +5",
                http.send("POST", route, b"{}   ", json_type, framing="raw", declared_length="+5"),
                {411},
                LENGTH[protocol],
            ),
            (
                "Content-Length 0x10",
                http.send(
                    "POST",
                    route,
                    b"{}" + b" " * 14,
                    json_type,
                    framing="raw",
                    declared_length="0x10",
                ),
                {411},
                LENGTH[protocol],
            ),
            (
                "a body one byte over 512 KiB",
                http.send(
                    "POST",
                    route,
                    raw + b" " * (MAX_BODY + 1 - len(raw)),
                    json_type,
                    hold_body=True,
                ),
                {413},
                SIZE[protocol],
            ),
        ]
        for what, ex, want, clause in cases:
            _expect_status(
                run,
                ex,
                want,
                protocol=protocol,
                route=route,
                clause=clause,
                title=(
                    f"{route} answers an unsized or badly sized body without 411"
                    if want == {411}
                    else f"{route} answers a body over 512 KiB without 413"
                ),
                check="size fence",
                what=what,
            )
        ex = http.send("POST", route, raw + b" " * (MAX_BODY - len(raw)), json_type)
        run.count(f"POST {route}", "probes")
        if ex.error is not None or ex.status in (411, 413) or (ex.status or 0) >= 500:
            run.add(
                ex,
                clause=SIZE[protocol],
                title=f"{route}: a body of exactly 512 KiB is refused by the size fence",
                detail=f"expected it to pass the fence, got {_excerpt(ex)}",
                protocol=protocol,
                route=route,
                check="size fence",
            )


# --------------------------------------------------------------------------- generated cases


def _load_schema(protocol: str) -> Any:
    import schemathesis

    return schemathesis.openapi.from_path(SPECS_DIR / SPEC_FILES[protocol])


def _operations(protocol: str) -> list[Any]:
    ops = [r.ok() for r in _load_schema(protocol).get_all_operations()]
    return [op for op in ops if "test-only" not in (op.tags or [])]


def _checks(negative: bool) -> list[tuple[str, Any]]:
    from schemathesis.checks import (
        content_type_conformance,
        negative_data_rejection,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    out = [
        ("server error", not_a_server_error),
        ("status code", status_code_conformance),
        ("content type", content_type_conformance),
        ("response schema", response_schema_conformance),
    ]
    if negative:
        out.append(("invalid input accepted", negative_data_rejection))
    return out


def _clause_for(protocol: str, route: str, check: str, status: int | None) -> str:
    if protocol == "memory":
        if check == "invalid input accepted":
            return VALIDATION_MEMORY.get(route, "MEM-WIRE.8")
        if check in ("server error", "status code", "no answer"):
            return "MEM-WIRE.4" if route != "/healthz" else "MEM-WIRE.1"
        if status is not None and status >= 400:
            return "MEM-WIRE.8"
        return ANSWER_MEMORY.get(route, "MEM-WIRE.16")
    if check == "invalid input accepted":
        return "LED-WIRE.2"
    if check in ("server error", "status code", "no answer"):
        return "LED-WIRE.1"
    if status is not None and status >= 400:
        return "LED-WIRE.2"
    return "LED-WIRE.4" if route.endswith("_records") or "record" in route else "LED-WIRE.6"


def _negative_parts(case: Any) -> tuple[bool, bool]:
    """(body negative, headers negative) of a generated case."""
    from schemathesis import GenerationMode

    meta = getattr(case, "meta", None)
    components = getattr(meta, "components", None) or {}
    body = header = False
    for location, info in components.items():
        name = getattr(location, "value", str(location)).lower()
        if getattr(info, "mode", None) == GenerationMode.NEGATIVE:
            if name == "body":
                body = True
            elif name == "header":
                header = True
    return body, header


def _as_httpx(ex: Exchange, url: str) -> Any:
    import datetime

    import httpx

    request = httpx.Request(ex.method, url + ex.path, headers=ex.headers, content=ex.body)
    response = httpx.Response(
        ex.status or 0,
        headers=list(ex.answer_headers.items()),
        content=ex.answer,
        request=request,
    )
    response.elapsed = datetime.timedelta(0)
    return response


def check_case(run: Run, protocol: str, op: Any, case: Any, negative: bool) -> None:
    """Send one generated case and judge the answer."""
    from schemathesis.core.failures import FailureGroup

    route = op.path
    body_negative, header_negative = _negative_parts(case) if negative else (False, False)
    if body_negative:
        header_negative = False  # judge the invalid body with valid credentials
    headers = {k: str(v) for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    if header_negative and "Authorization" in (case.headers or {}):
        headers["Authorization"] = str(case.headers["Authorization"])  # a generated wrong one
    use_auth = not header_negative and op.label != "GET /healthz"
    payload = b""
    if op.method.upper() == "POST":
        body = case.body
        if type(body).__name__ == "NotSet":
            payload = b""
        else:
            try:
                payload = json.dumps(body, ensure_ascii=True).encode()
            except (TypeError, ValueError):
                return
        headers.setdefault("Content-Type", case.media_type or "application/json")
    ex = run.http.send(op.method.upper(), route, payload, headers, auth=use_auth)
    label = op.label
    run.count(label, "negative" if negative else "positive")
    if ex.error is not None:
        run.add(
            ex,
            clause=_clause_for(protocol, route, "no answer", None),
            title=f"{label}: no answer",
            detail=ex.error,
            protocol=protocol,
            route=route,
            check="no answer",
        )
        return
    if header_negative and op.label != "GET /healthz":
        # Credentials missing or wrong: whatever the body, the answer is 401.
        _expect_status(
            run,
            ex,
            {401},
            protocol=protocol,
            route=route,
            clause=AUTH[protocol],
            title=f"{route} answers a request without the exact bearer",
            check="auth",
            what="a generated request without valid credentials",
        )
        return
    checks = _checks(negative and body_negative)
    response = _as_httpx(ex, run.http.base)
    for name, fn in checks:
        try:
            case.validate_response(response, checks=[fn])
        except FailureGroup as group:
            failure = group.exceptions[0]
            message = " ".join(str(getattr(failure, "message", "") or failure).split())[:400]
            run.add(
                ex,
                clause=_clause_for(protocol, route, name, ex.status),
                title=f"{label}: {getattr(failure, 'title', name) or name}",
                detail=f"{message} (answer: {_excerpt(ex, 200)})",
                protocol=protocol,
                route=route,
                check=name,
            )
        except Exception as exc:  # noqa: BLE001 - a check that cannot judge is a note
            run.notes.append(f"{label}: check {name} could not run: {type(exc).__name__}")


def fuzz_operation(
    run: Run,
    protocol: str,
    op: Any,
    negative: bool,
    examples: int,
    seed: int | None,
    until: float = float("inf"),
) -> None:
    """Up to ``examples`` generated cases for one operation, stopping at ``until``."""
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import HypothesisException

    mode = schemathesis.GenerationMode("negative" if negative else "positive")
    done = [0]

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=seed is None,
    )
    @given(case=op.as_strategy(generation_mode=mode))
    def explore(case: Any) -> None:
        if done[0] and time.monotonic() > until:  # every operation and mode gets one case
            raise _OutOfTime
        done[0] += 1
        check_case(run, protocol, op, case, negative)

    if seed is not None:
        explore = hypothesis_seed(seed)(explore)
    try:
        explore()
    except _OutOfTime:
        run.notes.append(
            f"{op.label} ({'negative' if negative else 'positive'}): time budget spent"
        )
    except HypothesisException as exc:
        run.notes.append(f"{op.label}: no cases generated ({type(exc).__name__})")


# --------------------------------------------------------------------------- the run


def served(http: Http, protocol: str) -> str | None:
    """None when the target serves the protocol, else why not (for a note)."""
    if protocol == "memory":
        ex = http.send("GET", "/healthz", framing="none", auth=False)
    else:
        ex = http.send(
            "POST", "/ledger/memory/get_consolidation_settings", b'{"scopeKey":"account:local"}'
        )
    if ex.error is not None:
        return ex.error
    if ex.status in (404, 501, 503):
        return f"answers {ex.status}"
    return None


def run_contract(
    config: TargetConfig,
    *,
    spec: str = "all",
    profile: str = "quick",
    examples: int | None = None,
    seed: int | None = None,
    report_dir: Path | None = None,
    out: Any = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Probe and fuzz one reachable target; write the report; return its JSON."""
    out = out or sys.stdout
    started = time.monotonic()
    http = Http(config)
    scrub = Scrubber(config.token)
    run = Run(http, scrub)
    per_op = examples if examples is not None else PROFILES[profile]
    protocols = ["memory", "ledger"] if spec == "all" else [spec]
    first = http.send("GET", "/healthz", framing="none", auth=False)
    if first.error is not None and first.error.startswith(("connection refused", "timeout")):
        raise TargetUnreachable(f"{config.label or config.url}: {first.error}")
    checked: list[str] = []
    for protocol in protocols:
        why = served(http, protocol)
        if why is not None and spec == "all":
            run.notes.append(f"{protocol} not checked: the target {why}")
            continue
        checked.append(protocol)
    cases = [
        (protocol, op, negative)
        for protocol in checked
        for op in _operations(protocol)
        for negative in (False, True)
        if not (negative and op.label == "GET /healthz")  # no input to get wrong
    ]
    for protocol in checked:
        if not quiet:
            print(f"memspec contract: {protocol}: auth and size-fence probes", file=sys.stderr)
        probe_auth(run, protocol, config.token)
        probe_fence(run, protocol)
    budget_end = time.monotonic() + BUDGETS_S.get(profile, BUDGETS_S["deep"])
    for i, (protocol, op, negative) in enumerate(cases):
        if not quiet and not negative:
            print(f"memspec contract: {protocol}: {op.label}", file=sys.stderr)
        share = max(0.0, budget_end - time.monotonic()) / (len(cases) - i)
        fuzz_operation(run, protocol, op, negative, per_op, seed, time.monotonic() + share)
    if not checked:
        raise TargetUnreachable("the target serves neither protocol: " + "; ".join(run.notes))
    data = _report(run, config, checked, profile, per_op, seed, time.monotonic() - started)
    if report_dir is not None:
        write_report(run, data, report_dir)
    print_summary(data, out, report_dir)
    return data


def _report(
    run: Run,
    config: TargetConfig,
    protocols: list[str],
    profile: str,
    per_op: int,
    seed: int | None,
    duration: float,
) -> dict[str, Any]:
    by_clause: dict[str, int] = {}
    for f in run.findings:
        by_clause[f.clause] = by_clause.get(f.clause, 0) + 1
    data = {
        "format": FORMAT,
        "target": config.public(),
        "options": {
            "protocols": protocols,
            "profile": profile,
            "examples_per_operation": per_op,
            "seed": seed,
        },
        "requests": run.http.sent,
        "duration_s": round(duration, 3),
        "operations": run.operations,
        "findings": [asdict(f) for f in run.findings],
        "by_clause": dict(sorted(by_clause.items())),
        "notes": run.notes,
        "exit_code": 1 if run.findings else 0,
    }
    clean: dict[str, Any] = run.scrub.deep(data)
    return clean


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


def write_report(run: Run, data: dict[str, Any], report_dir: Path) -> None:
    """``contract.json`` and one replay file per finding (strict JSON, the token scrubbed)."""
    if report_dir.exists() and not report_dir.is_dir():
        raise UsageError(f"--report {report_dir}: exists and is not a directory")
    replays = report_dir / REPLAY_DIR
    replays.mkdir(parents=True, exist_ok=True)
    for old in replays.glob("*.json"):
        old.unlink()
    for i, (finding, entry) in enumerate(zip(run.findings, data["findings"], strict=True), 1):
        ex = run.exchanges[id(finding)]
        name = f"{i:03d}-{finding.clause}-{_slug(finding.check)}.json"
        try:
            body_text: str | None = ex.body.decode("utf-8")
        except UnicodeDecodeError:
            body_text = None
        replay = {
            "format": REPLAY_FORMAT,
            "clause": finding.clause,
            "title": finding.title,
            "detail": finding.detail,
            "curl": finding.curl,
            "request": {
                "method": ex.method,
                "path": ex.path,
                "headers": ex.headers,
                "framing": ex.framing,
                "declared_length": ex.declared_length,
                "body": body_text if body_text is not None and len(ex.body) <= 65536 else None,
                "body_base64": None
                if body_text is not None and len(ex.body) <= 65536
                else base64.b64encode(ex.body[:65536]).decode(),
                "body_length": len(ex.body),
            },
            "answer": {
                "status": ex.status,
                "error": ex.error,
                "headers": ex.answer_headers,
                "body_excerpt": ex.answer[:2048].decode("utf-8", "replace"),
            },
        }
        _write_json(replays / name, run.scrub.deep(replay))
        entry["replay"] = f"{REPLAY_DIR}/{name}"
    _write_json(report_dir / REPORT_FILE, data)


def _write_json(path: Path, value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=True, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def print_summary(data: dict[str, Any], out: Any, report_dir: Path | None) -> None:
    findings = data["findings"]
    label = data["target"].get("label", "")
    print(f"memspec contract — {label} — {', '.join(data['options']['protocols'])}", file=out)
    print(
        f"{data['requests']} requests, {len(data['operations'])} operations,"
        f" profile {data['options']['profile']}, {data['duration_s']:.1f} s",
        file=out,
    )
    for note in data["notes"]:
        print(f"note: {note}", file=out)
    if not findings:
        print("no findings: every answer matched the contract", file=out)
    for f in findings:
        times = f" (×{f['count']})" if f["count"] > 1 else ""
        print(f"FINDING {f['clause']:<12} {f['title']}{times}", file=out)
        print(f"    {f['detail'][:300]}", file=out)
        print(f"    {f['curl'][:1000]}", file=out)
    if report_dir is not None:
        print(f"report: {report_dir / REPORT_FILE}", file=out)
    verdict = "PASS" if not findings else f"FAIL: {len(findings)} finding(s)"
    print(f"contract: {verdict}", file=out)


# --------------------------------------------------------------------------- for the run report


def finding_records(report: dict[str, Any] | str | Path) -> list[FindingRecord]:
    """The findings of a contract report (its JSON, or its directory / ``contract.json`` path)
    as ``(clause, title, detail, curl)`` records, for joining into the ``memspec run`` report."""
    if isinstance(report, dict):
        data = report
    else:
        path = Path(report)
        if path.is_dir():
            path = path / REPORT_FILE
        data = json.loads(path.read_text(encoding="utf-8"))
    return [
        FindingRecord(f["clause"], f["title"], f["detail"], f["curl"])
        for f in data.get("findings", [])
    ]


def iter_replays(report_dir: Path) -> Iterator[dict[str, Any]]:
    for path in sorted((report_dir / REPLAY_DIR).glob("*.json")):
        yield json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from conformance.commands.run import DEFAULT_REPORT_DIR, add_target_options

    p = sub.add_parser(
        "contract",
        help="fuzz a store against the OpenAPI documents (auth, size fence, validation, shapes)",
        description=(
            "Generate valid and invalid requests from specs/*.openapi.yaml with schemathesis,"
            " probe auth and the size fence on every data route, and judge every answer against"
            " the documents.  Writes generated data: use a disposable store."
        ),
    )
    add_target_options(p)
    p.add_argument(
        "--spec", choices=["memory", "ledger", "all"], default="all", help="which protocol(s)"
    )
    p.add_argument(
        "--profile",
        choices=list(PROFILES),
        default="quick",
        help="examples per operation and mode: "
        + ", ".join(f"{k} {v}" for k, v in PROFILES.items()),
    )
    p.add_argument("--examples", type=int, metavar="N", help="examples per operation and mode")
    p.add_argument("--seed", type=int, help="seed of the generation (reproduces a run)")
    p.add_argument(
        "--report",
        metavar="DIR",
        default=DEFAULT_REPORT_DIR,
        help=f"report directory (default {DEFAULT_REPORT_DIR}/)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.commands.run import open_target

    if args.examples is not None and args.examples < 1:
        raise UsageError("--examples must be at least 1")
    report_dir = Path(args.report) if args.report else None
    if report_dir is not None and report_dir.exists() and not report_dir.is_dir():
        raise UsageError(f"--report {report_dir}: exists and is not a directory")
    with open_target(args) as session:
        data = run_contract(
            session.config,
            spec=args.spec,
            profile=args.profile,
            examples=args.examples,
            seed=args.seed,
            report_dir=report_dir,
            quiet=bool(args.quiet),
        )
    return int(data["exit_code"])


# --------------------------------------------------------------------------- the run report

#: The clauses the contract checks, per protocol: a protocol it checked with no finding passes
#: them in the ``memspec run`` report (size fence, auth, routing, validation, answer shapes).
CONTRACT_CLAUSES: dict[str, tuple[str, ...]] = {
    "memory": (
        "MEM-WIRE.1", "MEM-WIRE.3", "MEM-WIRE.4", "MEM-WIRE.5", "MEM-WIRE.6", "MEM-WIRE.8",
        "MEM-WIRE.11", "MEM-WIRE.12", "MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.15",
        "MEM-WIRE.16",
    ),
    "ledger": ("LED-WIRE.1", "LED-WIRE.2", "LED-WIRE.4", "LED-WIRE.6"),
}  # fmt: skip


def as_results(data: dict[str, Any]) -> list[Any]:
    """A contract report as ``memspec run`` results of kind ``contract``: one failing result
    per finding (its clause, the finding's title and detail, and the ``curl`` line that
    reproduces it, token elided), and one passing result per checked protocol without one."""
    from conformance.drivers.base import StepOutcome
    from conformance.runner import ScenarioResult
    from conformance.scenario import Scenario, Step

    out: list[Any] = []
    for protocol in data.get("options", {}).get("protocols", []):
        found = [f for f in data.get("findings", []) if f.get("protocol") == protocol]
        if not found:
            scenario = Scenario(
                protocol=protocol,
                name=f"contract-{protocol}",
                clauses=list(CONTRACT_CLAUSES[protocol]),
                steps=[Step(op="contract", args={})],
                origin="memspec contract",
            )
            result = ScenarioResult(scenario, "pass", kind="contract")
            result.details["requests"] = data.get("requests")
            out.append(result)
            continue
        for n, f in enumerate(found, 1):
            scenario = Scenario(
                protocol=protocol,
                name=f"contract-{protocol}-{n:03d}-{_slug(f['check'])}",
                clauses=[f["clause"]],
                steps=[Step(op="contract", args={"route": f["route"], "check": f["check"]})],
                origin="memspec contract",
            )
            reason = f"{f['title']}: {f['detail']} — reproduce: {f['curl']}"
            outcome = StepOutcome(
                index=0, op="contract", verdict="diverge", clauses=(f["clause"],), reason=reason
            )
            result = ScenarioResult(
                scenario, "fail", [outcome], reason=reason, kind="contract", path=f.get("replay")
            )
            result.details["curl"] = f["curl"]  # the token is elided in every curl line
            out.append(result)
    return out
