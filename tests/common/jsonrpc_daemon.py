"""A JSON-RPC 2.0 daemon on a WebSocket for the tests, on 127.0.0.1 or a temporary Unix socket:
an honest ledger (the bundled store's service behind ``ledger_socket.respond``) with a hook that
may answer a message its own way -- push notifications, hang, flood, send garbage, echo the
token, ask for a handshake first.

``Daemon(behave=...)``: ``behave(conn, request, honest)`` gets each parsed request and the
honest answer's text (a function of no argument) and sends whatever it likes; the default sends
the honest answer.  ``requests`` and ``headers`` record what came in.
"""

from __future__ import annotations

import json
import os
import ssl
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from websockets.sync.server import Server, ServerConnection, serve, unix_serve

from conformance.embedded.ledger.dispatch import Dispatch
from conformance.embedded.ledger.jsonrpc import respond
from conformance.embedded.ledger.service import LedgerService
from conformance.embedded.storage_faults import FaultLog

Honest = Callable[[], str | None]
Behave = Callable[[ServerConnection, dict[str, Any], Honest], None]


def honest(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
    text = answer()
    if text is not None:
        conn.send(text)


class Daemon:
    """A ledger daemon on a WebSocket (``unix``: on a Unix socket; ``tls``: an SSL context)."""

    def __init__(
        self,
        behave: Behave = honest,
        *,
        unix: bool = False,
        tls: ssl.SSLContext | None = None,
        token: str | None = None,
        max_size: int = 1 << 20,
    ) -> None:
        self.behave = behave
        self.token = token
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.connections = 0
        self._releases: list[Callable[[], None]] = []
        self._dispatch = Dispatch(
            LedgerService(":memory:", test_control=True), FaultLog(open(os.devnull, "w"))
        )
        self._lock = threading.Lock()
        options: dict[str, Any] = {
            "process_request": self._upgrade,
            "compression": None,
            "ping_interval": None,
            "max_size": max_size,
            "close_timeout": 0.2,
        }
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._server: Server
        if unix:
            self._dir = tempfile.TemporaryDirectory()
            path = os.path.join(self._dir.name, "ledger.sock")
            self._server = unix_serve(self._serve, path, **options)
            self.url = f"ws+unix://{path}"
        else:
            self._server = serve(self._serve, "127.0.0.1", 0, ssl=tls, **options)
            port = self._server.socket.getsockname()[1]
            self.url = f"{'wss' if tls else 'ws'}://127.0.0.1:{port}/"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _upgrade(self, conn: ServerConnection, request: Any) -> Any:
        self.headers.append(dict(request.headers.raw_items()))
        if self.token is not None and request.headers.get("Authorization") != (
            f"Bearer {self.token}"
        ):
            return conn.respond(401, '{"error":{"code":-32600,"message":"unauthorized"}}\n')
        return None

    def _serve(self, conn: ServerConnection) -> None:
        self.connections += 1
        try:
            for message in conn:
                try:
                    request = json.loads(message) if isinstance(message, str) else {}
                except ValueError:
                    request = {}
                with self._lock:
                    self.requests.append(request if isinstance(request, dict) else {})

                def answer(message: str | bytes = message) -> str | None:
                    with self._lock:
                        return respond(self._dispatch, str(message))

                self.behave(conn, request if isinstance(request, dict) else {}, answer)
        except Exception:  # a connection the client dropped
            pass

    def on_stop(self, release: Callable[[], None]) -> None:
        """``release`` is called first when the daemon stops (a hanging handler lets go)."""
        self._releases.append(release)

    def stop(self) -> None:
        for release in self._releases:
            release()
        self._server.shutdown()
        if self._dir is not None:
            self._dir.cleanup()

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
