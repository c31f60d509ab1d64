"""Helpers for the bundled store's memory tests: in-process servers, clients, raw sockets.

Imported by ``conftest.py`` (fixtures) and by the test modules (plain helpers)."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.embedded.server import ServerHandle, start_server

TOKEN = "memspec-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROOT = Path(__file__).resolve().parents[2]
T0 = 1_800_000_000_000  # a fixed epoch-ms origin for the injected clock

_scope_counter = itertools.count(1)


class FakeClock:
    """The store's injected clock: starts at T0 and moves only when told to."""

    def __init__(self, start: int = T0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            return self._now

    def advance(self, ms: int = 1000) -> int:
        with self._lock:
            self._now += ms
            return self._now


def unique_scope(prefix: str = "org") -> str:
    return f"{prefix}:t{os.getpid()}-{next(_scope_counter)}"


@dataclass
class Store:
    """A running in-process bundled store plus an authenticated client."""

    handle: ServerHandle
    client: httpx.Client
    clock: FakeClock
    db: str

    @property
    def url(self) -> str:
        return self.handle.url

    def post(self, path: str, body: Any) -> httpx.Response:
        return self.client.post(path, json=body)

    def ok(self, path: str, body: Any) -> dict[str, Any]:
        r = self.post(path, body)
        assert r.status_code == 200, (path, r.status_code, r.text)
        out: dict[str, Any] = r.json()
        return out

    def write(self, scope: str, *records: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return self.ok("/write", {"scopeKey": scope, "records": list(records), **extra})

    def retrieve(self, scope: str, query: str, limit: int = 8) -> list[dict[str, Any]]:
        return list(
            self.ok("/retrieve", {"scopeKey": scope, "query": query, "limit": limit})["records"]
        )

    def list(self, scope: str, limit: int = 50, query: str | None = None) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"scopeKey": scope, "limit": limit}
        if query is not None:
            body["query"] = query
        return list(self.ok("/list", body)["records"])

    def forget(self, scope: str, rid: str) -> bool:
        return bool(self.ok("/forget", {"scopeKey": scope, "id": rid})["forgotten"])


def fact(text: str, thread: str = "slack:C1/1700000000.000100", **fields: Any) -> dict[str, Any]:
    return {"kind": "fact", "text": text, "sourceThreadKey": thread, **fields}


StoreFactory = Callable[..., Store]


@pytest.fixture
def make_store(tmp_path: Path) -> Iterator[StoreFactory]:
    """Start bundled stores on ephemeral loopback ports; all are stopped at teardown."""
    started: list[Store] = []

    def factory(
        db: str | None = None,
        token: str | None = TOKEN,
        clock: FakeClock | None = None,
        **kwargs: Any,
    ) -> Store:
        clk = clock or FakeClock()
        path = db if db is not None else str(tmp_path / f"store{len(started)}.sqlite3")
        handle = start_server(db=path, token=token, clock=clk, **kwargs)
        client = httpx.Client(base_url=handle.url, headers=AUTH, timeout=10.0)
        s = Store(handle, client, clk, path)
        started.append(s)
        return s

    yield factory
    for s in started:
        s.client.close()
        s.handle.stop()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One bundled store (file database, injected clock) shared by a test module; tests keep
    apart by writing only into their own ``scope``."""
    clk = FakeClock()
    path = str(tmp_path_factory.mktemp("shared") / "store.sqlite3")
    handle = start_server(db=path, token=TOKEN, clock=clk)
    client = httpx.Client(base_url=handle.url, headers=AUTH, timeout=10.0)
    yield Store(handle, client, clk, path)
    client.close()
    handle.stop()


@pytest.fixture
def scope() -> str:
    return unique_scope()


# --------------------------------------------------------------------------- raw sockets


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool  # the server closed the connection after this response

    def json(self) -> Any:
        import json

        return json.loads(self.body)


def _read_response(sock: socket.socket, deadline: float) -> tuple[RawResponse, bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before a response: {buf!r}")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return RawResponse(status, headers, rest[:n], False), rest[n:]


def _peer_closed(sock: socket.socket, timeout: float = 1.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def raw_exchange(url: str, *requests: bytes, check_close: bool = False) -> list[RawResponse]:
    """Send raw HTTP/1.1 requests one after another on ONE connection, read each response.

    Stops early when the server closes.  With ``check_close`` the last response's ``closed``
    says whether the server closed the connection after it (waiting up to 1 s for the close).
    """
    host, port = url.removeprefix("http://").rsplit(":", 1)
    out: list[RawResponse] = []
    deadline = time.monotonic() + 10
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        for req in requests:
            try:
                sock.sendall(req)
                resp, _ = _read_response(sock, deadline)
            except (ConnectionError, BrokenPipeError):
                break
            out.append(resp)
        if out and check_close:
            out[-1].closed = _peer_closed(sock)
    return out


def http_request(
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    content_length: str | None = "auto",
) -> bytes:
    """Build raw request bytes; ``content_length=None`` omits the header entirely."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if content_length == "auto":
        lines.append(f"Content-Length: {len(body)}")
    elif content_length is not None:
        lines.append(f"Content-Length: {content_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# --------------------------------------------------------------------------- subprocesses


@dataclass
class ServeProcess:
    proc: subprocess.Popen[str]
    url: str
    stderr_path: Path

    def stop(self, sig: int | None = None, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


def spawn_serve(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    deadline_s: float = 20.0,
) -> ServeProcess:
    """Run ``python -m conformance.embedded serve-args`` and wait for its listening line."""
    full_env = {**os.environ, "MEMSPEC_TOKEN": TOKEN, **(env or {})}
    err = tmp_path / f"serve-{time.monotonic_ns()}.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.embedded", "--port", "0", *args],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=err.open("w"),
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=deadline_s)
    line = lines[0] if lines else ""
    if "listening on " not in line:
        proc.kill()
        proc.wait()
        raise AssertionError(f"serve did not start: {line!r} {err.read_text()}")
    return ServeProcess(proc, line.strip().rsplit(" ", 1)[1], err)
