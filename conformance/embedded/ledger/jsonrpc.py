"""The bundled ledger served as a daemon serves it: JSON-RPC 2.0 over a WebSocket, on TCP or on
a Unix socket (``memspec serve --ledger-ws PORT`` / ``--ledger-unix PATH``).

One dispatcher for both forms: ``dispatch.call_ledger`` answers a method or a test
control by its name with the service's ``(status, body)``; the HTTP handler
(``POST /ledger/<name>``) and this server both call it, and here the answer is wrapped as
JSON-RPC -- a 200 as ``result``, any other answer's ``{"error": {code, message}}`` as
``error``.  The params are handed to the
service as the text they were sent in (sliced out of the request, never parsed and written
again), so a method reads them exactly as it reads an HTTP body; absent params are an empty
body.

JSON-RPC 2.0 itself: a request that is not JSON is ``-32700`` with ``id: null``; one that is
not a request object (no ``"jsonrpc": "2.0"``, no string ``method``, an ``id`` that is not a
string, number or null) is ``-32600``; a request without ``id`` is a notification, carried out
and not answered; a batch (an array) is answered with an array of the answers (nothing for an
all-notification batch, ``-32600`` for an empty one).  The bearer token, when the store has
one, must be in the upgrade's ``Authorization`` header (a 401 otherwise).  A message over
512 KiB ends the connection (close code 1009).  Each connection is served on a thread of its
own.
"""

from __future__ import annotations

import hmac
import json
import os
import threading
from typing import Any

from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve, unix_serve

from conformance.embedded.ledger.dispatch import Dispatch
from conformance.embedded.storage_faults import FaultLog

__all__ = ["LedgerSocketServer", "respond"]

#: The largest message read (the HTTP binding's body bound).
MAX_MESSAGE = 512 * 1024

PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR = -32700, -32600, -32603


def respond(dispatch: Dispatch, message: str) -> str | None:
    """The answer to one message (None: nothing to answer, notifications only)."""
    try:
        value = json.loads(message, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return _dump(_error(None, PARSE_ERROR, "Parse error: the message is not JSON"))
    if isinstance(value, list):
        if not value:
            return _dump(_error(None, INVALID_REQUEST, "Invalid Request: an empty batch"))
        answers = [_one(dispatch, item, json.dumps(item)) for item in value]
        kept = [a for a in answers if a is not None]
        return _dump(kept) if kept else None
    answer = _one(dispatch, value, message)
    return None if answer is None else _dump(answer)


def _one(dispatch: Dispatch, value: Any, text: str) -> dict[str, Any] | None:
    """The answer to one request object (``text``: its JSON text, for the raw params)."""
    if not isinstance(value, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: not a request object")
    rid = value.get("id")
    if (isinstance(rid, bool) or not isinstance(rid, str | int | float)) and rid is not None:
        return _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or a number")
    method = value.get("method")
    if value.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _error(rid, INVALID_REQUEST, 'Invalid Request: needs "jsonrpc": "2.0" and a method')
    raw = _members(text).get("params", "")
    status, body = dispatch.call(method, raw.encode("utf-8", "surrogatepass"))
    if "id" not in value:
        return None  # a notification: carried out, never answered
    if status == 200:
        return {"jsonrpc": "2.0", "id": rid, "result": body}
    return {"jsonrpc": "2.0", "id": rid, "error": body.get("error", body)}


def _members(text: str) -> dict[str, str]:
    """The members of a JSON object's text, each as the text of its value (the last one when a
    name repeats, as ``json.loads`` reads it).  ``text`` is known to be a JSON object."""
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    out: dict[str, str] = {}
    i = _skip(text, text.index("{") + 1)
    while text[i] != "}":
        name, i = _scanstring(text, i + 1)
        i = _skip(text, _skip(text, i) + 1)  # past the colon
        _, end = decoder.raw_decode(text, i)
        out[name] = text[i:end]
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out


#: The standard library's reader of one JSON string at an index (``json.decoder.scanstring``).
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]


def _skip(text: str, i: int) -> int:
    while text[i] in " \t\r\n":
        i += 1
    return i


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class LedgerSocketServer:
    """The ledger of a running bundled store as JSON-RPC over a WebSocket, on TCP
    (``host``/``port``, 0: any free port) or on the Unix socket ``unix_path``; ``url`` is the
    target URL memspec takes (``ws://127.0.0.1:PORT/`` or ``ws+unix:///path``)."""

    def __init__(
        self,
        service: Any | None,
        faults: FaultLog,
        token: str | None,
        *,
        require_auth: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        unix_path: str | None = None,
    ) -> None:
        self._dispatch = Dispatch(service, faults)
        self._token = token.encode("utf-8") if token else None
        self._require_auth = require_auth
        options: dict[str, Any] = {
            "process_request": self._authorized,
            "max_size": MAX_MESSAGE,
            "compression": None,
            "ping_interval": None,
            "server_header": "memspec-bundled-store",
        }
        self._server: Server
        if unix_path is not None:
            self._server = unix_serve(self._serve, unix_path, **options)
            os.chmod(unix_path, 0o600)  # the owner only, as the daemon's own socket
            self.url = f"ws+unix://{unix_path}"
        else:
            self._server = serve(self._serve, host, port, **options)
            bound = self._server.socket.getsockname()
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            self.url = f"ws://{shown}:{bound[1]}/"
        self._unix_path = unix_path
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="memspec-ledger-socket", daemon=True
        )
        self._thread.start()

    def _authorized(self, connection: ServerConnection, request: Request) -> Response | None:
        """The upgrade carries the store's bearer token (None: go on), else a 401."""
        if not self._require_auth:
            return None
        sent = request.headers.get("Authorization", "").encode("utf-8", "replace")
        if self._token is not None and hmac.compare_digest(sent, b"Bearer " + self._token):
            return None
        body = b'{"error":{"code":-32600,"message":"unauthorized"}}'
        headers = Headers({"Content-Type": "application/json", "Content-Length": str(len(body))})
        return Response(401, "Unauthorized", headers, body)

    def _serve(self, connection: ServerConnection) -> None:
        for message in connection:
            if isinstance(message, bytes):
                answer: str | None = _dump(
                    _error(None, PARSE_ERROR, "Parse error: a binary message is not JSON text")
                )
            else:
                answer = respond(self._dispatch, message)
            if answer is not None:
                connection.send(answer)

    def stop(self) -> None:
        """Stop listening and close every connection (the socket file removed)."""
        self._server.shutdown()
        self._thread.join(timeout=5)
        if self._unix_path is not None:
            try:
                os.unlink(self._unix_path)
            except OSError:
                pass
