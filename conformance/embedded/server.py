"""The bundled store's HTTP server: the Memory Worker protocol and the ledger binding.

A stdlib ``ThreadingHTTPServer`` on loopback.  Every request goes through the same checks, in
this precedence (seed §15-§16): unknown path 404 -> wrong method 405 -> bearer 401 ->
``Content-Length`` not a plain ASCII digit string 411 -> longer than 512 KiB 413 -> the route
(400 / 200).  The length is judged from the raw header BEFORE any body byte is read, and an
unsized body is never read.  After an early answer the connection is kept alive only when the
request's framing is known and its body (at most 512 KiB) has been drained; otherwise it is
closed.

* ``GET /healthz`` (no auth) -> ``{"ok": true, ...}``.
* ``POST /retrieve|/write|/list|/forget`` -> ``memory/http.py``.
* ``POST /ledger/<method>`` -> ``LedgerService.handle``; ``POST /ledger/_test/<name>`` ->
  ``LedgerService.handle_test`` only when started with ``test_control`` (else 404).  The
  ledger binding is imported lazily; without it those routes answer 503.

Each request is logged as one JSON line (method, path, status, duration, scope key, counts --
never bodies, text or tokens) when an access log stream is given.

Hostile or failing surroundings (MEM-WIRE.18, MEM-WIRE.19, LED-WIRE.10): the listen backlog is
128; at most ``max_workers`` connections are served at once (more wait in the backlog, and a
connection idle between requests is closed to make room); a request head or body that is not
complete within its deadline is dropped; a storage fault (disk full, read-only, I/O error, ...)
answers 503 naming the cause, logged once per fault and once on recovery.  An absolute-form
request target (``POST http://host/list``) is routed by its path.

The parts: ``server`` (starting and stopping: ``start_server``, ``ServerHandle``),
``http_pool`` (the listening server and its bounded worker pool) and ``http_handler`` (one
request: the checks above, the deadlines, routing, the access log).
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from collections.abc import Callable
from socket import SHUT_RDWR
from types import TracebackType
from typing import IO, Any

from conformance.embedded.catalogue import NONE as NO_QUIRKS
from conformance.embedded.catalogue import Quirks
from conformance.embedded.http_handler import MAX_BODY, Handler
from conformance.embedded.http_pool import (
    BODY_TIMEOUT_S,
    HEAD_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    LISTEN_BACKLOG,
    MAX_WORKERS,
    Server,
    Server6,
)
from conformance.embedded.memory import http as memory_http
from conformance.embedded.memory.store import MemoryStore
from conformance.embedded.storage_faults import FaultLog
from reference.memory.engine import DEFAULT_SCOPE_CAP

__all__ = [
    "BODY_TIMEOUT_S",
    "HEAD_TIMEOUT_S",
    "IDLE_TIMEOUT_S",
    "LISTEN_BACKLOG",
    "MAX_BODY",
    "MAX_WORKERS",
    "PAUSE_ENV",
    "ServerHandle",
    "is_loopback",
    "pause_hook_from_env",
    "start_server",
]

PAUSE_ENV = "MEMSPEC_TEST_PAUSE_IN_WRITE"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and every loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _load_ledger(
    db: str, test_control: bool, clock: Callable[[], int] | None, quirks: Quirks
) -> Any | None:
    """The ledger binding (``ledger/service.py``), or None while it is absent."""
    try:
        from conformance.embedded.ledger import service as ledger_service
    except ModuleNotFoundError as exc:
        if exc.name == "conformance.embedded.ledger.service":
            return None
        raise
    return ledger_service.LedgerService(db, clock=clock, test_control=test_control, quirks=quirks)


# --------------------------------------------------------------------------- lifecycle


class ServerHandle:
    """A running bundled store.  ``url`` is its base URL; ``stop()`` shuts it down cleanly."""

    def __init__(self, server: Server, thread: threading.Thread, url: str) -> None:
        self._server = server
        self._thread = thread
        self.url = url
        self.host, self.port = server.server_address[:2]
        self._stopped = False
        self._stop_lock = threading.Lock()
        self._sockets: list[Any] = []

    @property
    def store(self) -> MemoryStore:
        return self._server.store

    @property
    def ledger(self) -> Any | None:
        return self._server.ledger

    def serve_ledger_socket(
        self, *, host: str = "127.0.0.1", port: int = 0, unix_path: str | None = None
    ) -> str:
        """Serve this store's ledger also as JSON-RPC 2.0 over a WebSocket, on ``host:port``
        (loopback only) or on the Unix socket ``unix_path``, with the same token; stopped with
        the store.  Returns its target URL (``ws://…/`` or ``ws+unix://…``)."""
        from conformance.embedded.ledger.jsonrpc import LedgerSocketServer

        if unix_path is None and not is_loopback(host):
            raise ValueError(f"refusing to serve the ledger socket on non-loopback {host!r}")
        srv = self._server
        token = srv.token.decode("utf-8") if srv.token else None
        socket_server = LedgerSocketServer(
            srv.ledger, srv.faults, token, require_auth=srv.require_auth,
            host=host.strip("[]"), port=port, unix_path=unix_path,
        )  # fmt: skip
        self._sockets.append(socket_server)
        return socket_server.url

    def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish (up to ``grace`` s), close storage."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        for socket_server in self._sockets:
            socket_server.stop()
        srv = self._server
        srv.accepting = False
        srv.shutdown()
        deadline = time.monotonic() + grace
        with srv.idle:
            srv.stopping = True
            while srv.in_flight and time.monotonic() < deadline:
                srv.idle.wait(timeout=max(0.0, deadline - time.monotonic()))
            for conn in list(srv.connections):
                try:
                    conn.shutdown(SHUT_RDWR)
                except OSError:
                    pass
        srv.server_close()
        self._thread.join(timeout=grace)
        srv.store.close()
        close = getattr(srv.ledger, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_server(
    host: str = "127.0.0.1",
    port: int = 0,
    db: str = ":memory:",
    token: str | None = None,
    test_control: bool = False,
    cap_default: int = DEFAULT_SCOPE_CAP,
    *,
    require_auth: bool = True,
    allow_non_loopback: bool = False,
    clock: Callable[[], int] | None = None,
    access_log: IO[str] | None = None,
    write_hook: Callable[[], None] | None = None,
    with_ledger: bool = True,
    quirks: Quirks = NO_QUIRKS,
    error_log: IO[str] | None = None,
    max_workers: int = MAX_WORKERS,
    head_timeout: float = HEAD_TIMEOUT_S,
    body_timeout: float = BODY_TIMEOUT_S,
    idle_timeout: float = IDLE_TIMEOUT_S,
) -> ServerHandle:
    """Start the bundled store on ``host:port`` (0 = an ephemeral port) in a background thread.

    ``token`` is the bearer every data route requires; ``None`` or ``""`` grants nothing
    (every data route answers 401) unless ``require_auth=False`` (``memspec serve --no-auth``).
    A non-loopback ``host`` is refused unless ``allow_non_loopback`` is set.  ``clock`` is the
    memory store's "now" in epoch ms (tests inject one); ``access_log`` receives one JSON line
    per request; ``write_hook`` is the kill-mid-batch test seam (see ``MemoryStore``);
    ``quirks`` selects catalogue alterations (allowed variants and mutants,
    :mod:`conformance.embedded.catalogue`) -- production runs with none.  ``error_log``
    (default stderr) receives one line when storage starts failing and one when it recovers.
    ``max_workers`` bounds the connections served at once; ``idle_timeout`` is how long a
    connection may wait before a request, ``head_timeout`` / ``body_timeout`` the deadlines for
    a request's whole head and body (MEM-WIRE.19).
    """
    _check_options(
        host, allow_non_loopback, cap_default, max_workers, head_timeout, body_timeout, idle_timeout
    )
    store = MemoryStore(
        db, clock=clock, cap_default=cap_default, write_hook=write_hook, quirks=quirks
    )
    try:
        ledger = _load_ledger(db, test_control, clock, quirks) if with_ledger else None
        cls = Server6 if ":" in host.strip("[]") else Server
        server = cls((host.strip("[]"), port), Handler)
    except BaseException:
        store.close()
        raise
    server.store = store
    server.ledger = ledger
    server.token = token.encode("utf-8") if token else None
    server.require_auth = require_auth
    server.test_control = test_control
    server.access_log = access_log
    server.quirks = quirks
    server.faults = FaultLog(error_log)
    server.slots = threading.BoundedSemaphore(max_workers)
    server.idle_timeout, server.head_timeout = idle_timeout, head_timeout
    server.body_timeout = body_timeout
    return _serve_in_background(server)


def _check_options(
    host: str,
    allow_non_loopback: bool,
    cap_default: int,
    max_workers: int,
    head_timeout: float,
    body_timeout: float,
    idle_timeout: float,
) -> None:
    """Refuse (``ValueError``) the options :func:`start_server` cannot serve with."""
    if not is_loopback(host) and not allow_non_loopback:
        raise ValueError(
            f"refusing to bind non-loopback host {host!r} (pass it explicitly to allow)"
        )
    if not 1 <= cap_default <= memory_http.MAX_CAP:
        raise ValueError("cap_default must be an integer from 1 to 10000")
    if max_workers < 1:
        raise ValueError("max_workers must be at least 1")
    for name, value in (
        ("head_timeout", head_timeout),
        ("body_timeout", body_timeout),
        ("idle_timeout", idle_timeout),
    ):
        if not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive number of seconds")


def _serve_in_background(server: Server) -> ServerHandle:
    """Serve ``server`` on a daemon thread; its handle, with the URL it is bound to."""
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name="memspec-serve",
        daemon=True,
    )
    thread.start()
    bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
    shown = f"[{bound_host}]" if isinstance(server, Server6) else bound_host
    return ServerHandle(server, thread, f"http://{shown}:{bound_port}")


def pause_hook_from_env() -> Callable[[], None] | None:
    """The kill-mid-batch test seam: with ``MEMSPEC_TEST_PAUSE_IN_WRITE=<path>`` set, a write
    batch creates ``<path>`` inside its transaction and then waits until ``<path>`` is removed
    (a test SIGKILLs the process meanwhile).  Never set outside tests."""
    path = os.environ.get(PAUSE_ENV)
    if not path:
        return None

    def pause() -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write("paused\n")
        while os.path.exists(path):
            time.sleep(0.05)

    return pause
