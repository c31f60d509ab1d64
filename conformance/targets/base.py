"""The HTTP client every protocol target is built on.

A target is a store reached over HTTP — the bundled one included; nothing here imports a
store.  The client is deliberately defensive, because the stores it talks to may be wrong:

* sync ``httpx`` (Hypothesis rules are synchronous), a timeout on every request, redirects
  never followed (a 3xx is an answer like any other), and the response body read in chunks
  up to a bound (4 MiB by default) — a target that streams forever cannot exhaust memory;
* the bearer token is a :class:`~conformance.driver.Secret`: it goes into the
  ``Authorization`` header and nowhere else, and if a target echoes it back, the echo is
  blanked out before the answer is stored;
* every transport failure (timeout, refused, reset, protocol garbage) becomes an
  :class:`~conformance.driver.Exchange` with ``transport_error`` set — never an exception;
* :meth:`HttpTarget.raw` sends a request over a plain socket, byte for byte, for the cases an
  HTTP library refuses to produce (no ``Content-Length``, ``Content-Length: 0x10``, a length
  that lies).  It is the ``raw_http`` capability, available for ``http://`` targets only
  (behind TLS and a public edge, the edge rewrites those headers anyway).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from conformance.driver import Exchange, Secret, TargetConfig

#: Capability of every ``http://`` target: raw socket requests with hand-made headers.
RAW_HTTP = "raw_http"
#: Capability: the run has a bearer token for the target (auth-dependent steps need it).
AUTH = "auth"

Auth = bool | Literal["wrong", "scheme", "empty"]

_NO_BODY = object()


class TargetError(Exception):
    """The target cannot be used at all (unreachable, token refused, bad profile).

    The CLI prints the message as one line and exits 2.
    """


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
        return Secret(value.strip())
    if token_file:
        path = Path(token_file)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TargetError(f"cannot read token file {path}: {exc.strerror or exc}") from exc
        lines = text.strip().splitlines()
        if not lines or not lines[0].strip():
            raise TargetError(f"token file {path} is empty")
        return Secret(lines[0].strip())
    return None


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
    ```
    """

    url: str | None = None
    token_env: str | None = None
    token_file: str | None = None
    timeout_s: float | None = None
    declared: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()


def load_target_profile(path: str | Path) -> TargetProfile:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TargetError(f"cannot read target profile {p}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(f"target profile {p} is not TOML: {exc}") from exc
    unknown = set(data) - {"target", "capabilities"}
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
    if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
        raise TargetError(f"target profile {p}: timeout_s must be a positive number")
    for key in ("url", "token_env", "token_file"):
        if key in target and not isinstance(target[key], str):
            raise TargetError(f"target profile {p}: {key} must be a string")
    return TargetProfile(
        url=target.get("url"),
        token_env=target.get("token_env"),
        token_file=target.get("token_file"),
        timeout_s=float(timeout) if timeout is not None else None,
        declared=frozenset(k for k, v in caps.items() if v),
        denied=frozenset(k for k, v in caps.items() if not v),
    )


def check_url(url: str) -> str:
    """A target URL: ``http://`` or ``https://`` with a host; the trailing ``/`` dropped."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"not an http(s) URL: {url!r}")
    if parts.query or parts.fragment:
        raise TargetError(f"a target URL has no query or fragment: {url!r}")
    return url.rstrip("/")


class HttpTarget:
    """One target's HTTP client.  Subclasses add the protocol's routes and probes."""

    def __init__(self, config: TargetConfig) -> None:
        self.config = config
        self.url = check_url(config.url)
        parts = urlsplit(self.url)
        self._scheme = parts.scheme
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        self._client = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(config.timeout_s),
            follow_redirects=False,
            headers={"User-Agent": "memspec-harness"},
            trust_env=False,
        )
        self.requests_sent = 0

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

    def _scrub(self, data: bytes) -> bytes:
        token = self.config.token.reveal().encode() if self.config.token else b""
        if token and token in data:
            data = data.replace(token, b"[token]")
        return data

    def _decode(self, data: bytes, truncated: bool) -> tuple[Any, str, str | None]:
        """(parsed JSON or None, excerpt, body_error)."""
        data = self._scrub(data)
        if truncated:
            return (
                None,
                data[:200].decode("utf-8", "replace"),
                (f"answer larger than {self.config.max_response_bytes} bytes"),
            )
        if not data:
            return None, "", "empty body"
        try:
            return json.loads(data.decode("utf-8")), "", None
        except (UnicodeDecodeError, ValueError) as exc:
            return None, data[:200].decode("utf-8", "replace"), f"not JSON: {exc}"

    def request(
        self,
        method: str,
        path: str,
        body: Any = _NO_BODY,
        *,
        auth: Auth = True,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Exchange:
        """Send one request; ``body`` is serialized as JSON (``content`` sends bytes as is)."""
        hdrs = dict(headers or {})
        auth_value = self._auth_header(auth)
        if auth_value is not None:
            hdrs["Authorization"] = auth_value
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
        self.requests_sent += 1
        started = time.perf_counter()
        try:
            with self._client.stream(
                method, self._prefix + path if self._prefix else path, content=payload, headers=hdrs
            ) as resp:
                data, truncated = _read_bounded(resp.iter_bytes(), self.config.max_response_bytes)
                status = resp.status_code
        except httpx.TimeoutException:
            return self._failure(
                method, path, described, started, f"timeout after {self.config.timeout_s:g}s"
            )
        except httpx.ConnectError as exc:
            return self._failure(method, path, described, started, f"cannot connect: {_short(exc)}")
        except httpx.HTTPError as exc:  # reset, protocol error, decoding error, …
            return self._failure(
                method, path, described, started, f"{type(exc).__name__}: {_short(exc)}"
            )
        parsed, excerpt, body_error = self._decode(data, truncated)
        return Exchange(
            method=method,
            path=path,
            request_body=described,
            status=status,
            body=parsed,
            raw_excerpt=excerpt,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            body_error=body_error,
        )

    def raw(
        self,
        method: str,
        path: str,
        *,
        headers: list[tuple[str, str]] | None = None,
        body: bytes = b"",
        auth: Auth = True,
        described: Any = None,
    ) -> Exchange:
        """Send bytes over a socket exactly as given — the caller writes ``Content-Length``.

        Only ``Host``, ``Connection: close`` and (per ``auth``) ``Authorization`` are added.
        """
        if self._scheme != "http":
            raise TargetError("raw requests need an http:// target (capability raw_http)")
        hdr_list = list(headers or [])
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", f"Host: {self._host}:{self._port}"]
        auth_value = self._auth_header(auth)
        if auth_value is not None:
            lines.append(f"Authorization: {auth_value}")
        lines.extend(f"{k}: {v}" for k, v in hdr_list)
        lines.append("Connection: close")
        wire = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        if described is None:
            described = _describe_bytes(body)
        self.requests_sent += 1
        started = time.perf_counter()
        sock: socket.socket | None = None
        try:
            sock = socket.create_connection((self._host, self._port), timeout=self.config.timeout_s)
            sock.sendall(wire)
            resp = http.client.HTTPResponse(sock, method=method)
            resp.begin()
            limit = self.config.max_response_bytes
            data = resp.read(limit + 1)
            truncated = len(data) > limit
            status = resp.status
        except TimeoutError:
            return self._failure(
                method,
                path,
                described,
                started,
                f"timeout after {self.config.timeout_s:g}s",
                hdr_list,
            )
        except ConnectionRefusedError as exc:
            return self._failure(
                method, path, described, started, f"cannot connect: {exc}", hdr_list
            )
        except (OSError, http.client.HTTPException) as exc:
            return self._failure(
                method, path, described, started, f"{type(exc).__name__}: {_short(exc)}", hdr_list
            )
        finally:
            if sock is not None:
                sock.close()
        parsed, excerpt, body_error = self._decode(data[:limit], truncated)
        return Exchange(
            method=method,
            path=path,
            request_body=described,
            status=status,
            body=parsed,
            raw_excerpt=excerpt,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            body_error=body_error,
            request_headers=tuple(hdr_list),
        )

    def _failure(
        self,
        method: str,
        path: str,
        described: Any,
        started: float,
        error: str,
        headers: list[tuple[str, str]] | None = None,
    ) -> Exchange:
        token = self.config.token.reveal() if self.config.token else ""
        if token and token in error:
            error = error.replace(token, "[token]")
        return Exchange(
            method=method,
            path=path,
            request_body=described,
            status=None,
            body=None,
            transport_error=error,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            request_headers=tuple(headers or ()),
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_bounded(chunks: Any, limit: int) -> tuple[bytes, bool]:
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) > limit:
            return bytes(buf[:limit]), True
    return bytes(buf), False


def _describe_bytes(data: bytes) -> Any:
    """A raw body for a report: its JSON if it is JSON, else a short description."""
    if len(data) <= 2048:
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            text = data.decode("utf-8", "replace")
            return {"raw": text[:200] + ("…" if len(text) > 200 else "")}
    return {"raw_bytes": len(data), "head": data[:80].decode("utf-8", "replace")}


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
