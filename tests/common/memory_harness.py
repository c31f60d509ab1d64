"""Shared pieces of the memory harness tests: the bundled store, drivers, broken and fake stores.

Only tests (and the CLI) import ``conformance.embedded``; the harness under test reaches every
store over HTTP.  ``bundled_store(quirks=(NAME, …))`` runs the bundled store with entries of the
catalogue (``conformance/embedded/catalogue/``: mutants, variants), the one way to alter a
store's behaviour.  The *broken stores* left here patch one piece of the store's engine wiring
for the duration of a ``with`` block, for mistakes the catalogue does not hold (a store that
never dedups, a dedup that bumps nothing, a forget that removes nothing); a *fake target* is a
tiny stdlib server that misbehaves at the transport level.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from conformance.drivers.memory.driver import MemoryDriver
from conformance.embedded.catalogue import Quirks
from conformance.embedded.memory import store as memory_store
from conformance.embedded.server import start_server
from conformance.vocabulary import RunContext, Secret, TargetConfig
from reference.memory.engine import Dedup, Insert, plan_write

TOKEN = "memspec-memory-harness-token-3f7a"


@contextmanager
def bundled_store(token: str = TOKEN, *, quirks: tuple[str, ...] = ()) -> Iterator[str]:
    """A bundled store on an ephemeral loopback port, running the catalogue entries named in
    ``quirks`` (mutants, variants); yields its URL."""
    with start_server(token=token, quirks=Quirks(frozenset(quirks))) as handle:
        yield handle.url


def make_driver(
    url: str,
    *,
    token: str | None = TOKEN,
    run_id: str = "memspec-memtest01",
    timeout: float = 10.0,
    denied: tuple[str, ...] = (),
) -> MemoryDriver:
    ctx = RunContext(
        run_id=run_id,
        target=TargetConfig(
            url, Secret(token) if token else None, timeout, denied=frozenset(denied)
        ),
    )
    return MemoryDriver(ctx)


# --------------------------------------------------------------------------- broken stores


@contextmanager
def dedup_disabled(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The store never dedups: every ``Dedup`` plan becomes a plain insert (MEM-WRITE.1)."""
    original = plan_write  # the function memory_store imports and calls

    def plan(active: Any, candidate: Any) -> Any:
        p = original(active, candidate)
        return Insert(None) if isinstance(p, Dedup) else p

    with monkeypatch.context() as m:
        m.setattr(memory_store, "plan_write", plan)
        yield


@contextmanager
def dedup_without_bump(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The store reports a dedup but never bumps the record's useCount (MEM-WRITE.1)."""
    original = plan_write  # the function memory_store imports and calls

    def plan(active: Any, candidate: Any) -> Any:
        p = original(active, candidate)
        return Dedup("mem:nowhere:0") if isinstance(p, Dedup) else p

    with monkeypatch.context() as m:
        m.setattr(memory_store, "plan_write", plan)
        yield


@contextmanager
def forget_only_claims(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``/forget`` answers true for an active record but leaves it active (MEM-STORE.8)."""

    def forget(self: Any, scope_key: str, record_id: str) -> bool:
        rec = self.get(record_id)
        return rec is not None and rec.scope_key == scope_key and rec.status == "active"

    with monkeypatch.context() as m:
        m.setattr(memory_store.MemoryStore, "forget", forget)
        yield


# --------------------------------------------------------------------------- a misbehaving target


class FakeTarget:
    """A loopback server that passes the harness's probe, then misbehaves on data routes.

    ``mode``: ``500`` (an internal error), ``broken-json`` (200 with a truncated body),
    ``slow`` (sleeps past the client timeout), ``reset`` (closes the socket without a
    word), ``huge`` (a 5 MiB body), ``redirect`` (302 to another path), ``ok-empty`` (a valid
    empty records answer for everything, wrong for writes).
    """

    def __init__(self, mode: str, *, delay_s: float = 1.5) -> None:
        self.mode = mode
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _body(self) -> bytes:
                n = self.headers.get("Content-Length")
                return self.rfile.read(int(n)) if n and n.isdigit() else b""

            def _send(self, status: int, data: bytes, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.requests.append(("GET", self.path, dict(self.headers), b""))
                if self.path == "/healthz":
                    self._send(200, b'{"ok": true}')
                else:
                    self._send(405, b'{"error": "method not allowed"}')

            def do_POST(self) -> None:
                body = self._body()
                fake.requests.append(("POST", self.path, dict(self.headers), body))
                try:
                    parsed = json.loads(body or b"null")
                except ValueError:
                    parsed = None
                # the probe: an empty body is a 400, so the harness believes the route exists
                if parsed == {} or (isinstance(parsed, dict) and parsed.get("cap") == 0):
                    self._send(400, b'{"error": "scopeKey is required"}')
                    return
                mode = fake.mode
                if mode == "500":
                    self._send(500, b'{"error": "internal"}')
                elif mode == "broken-json":
                    self._send(200, b'{"records": [')
                elif mode == "slow":
                    time.sleep(fake.delay_s)
                    self._send(200, b'{"records": []}')
                elif mode == "reset":
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                    )
                    self.close_connection = True
                    self.connection.close()
                elif mode == "huge":
                    self._send(200, b'{"records": [' + b" " * (5 * 1024 * 1024) + b"]}")
                elif mode == "redirect":
                    self._send(302, b"{}", {"Location": "/elsewhere"})
                else:
                    self._send(200, b'{"records": []}')

        self.delay_s = delay_s
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> FakeTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def closed_port() -> int:
    """A loopback port nothing listens on (bound then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return int(port)
