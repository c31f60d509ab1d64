"""A broken store outside the catalogue: ``FaultProxy`` is a loopback HTTP proxy in front of a
correct store that corrupts one kind of answer (``FAULTS``: results reversed, ``/forget``
always claiming success).  Tests and benchmarks use it; ``selftest`` re-exports it."""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Fault = Callable[[str, int, Any], Any]
_DIGITS = re.compile(r"[0-9]+")
MAX_BODY = 512 * 1024


def _reverse_records(route: str) -> Fault:
    def fault(path: str, status: int, body: Any) -> Any:
        if (
            path == route
            and status == 200
            and isinstance(body, dict)
            and isinstance(body.get("records"), list)
        ):
            return {**body, "records": list(reversed(body["records"]))}
        return body

    return fault


def _forget_lies(path: str, status: int, body: Any) -> Any:
    if path == "/forget" and status == 200 and isinstance(body, dict) and "forgotten" in body:
        return {**body, "forgotten": True}
    return body


#: fault name -> (what it corrupts, clause prefixes one of which a divergence must name)
FAULTS: dict[str, tuple[Fault, tuple[str, ...]]] = {
    "retrieve-reversed": (_reverse_records("/retrieve"), ("MEM-SCORE.",)),
    "forget-lies": (_forget_lies, ("MEM-STORE.8",)),
    "list-oldest-first": (_reverse_records("/list"), ("MEM-STORE.7",)),
}


class FaultProxy:
    """A loopback HTTP proxy in front of ``upstream`` that corrupts answers with ``fault``.

    Requests are forwarded as they came, including a missing, blank or malformed
    ``Content-Length`` (the body is read only when the length is a plain digit string within
    512 KiB; otherwise none is forwarded and the upstream's fence answers).
    """

    def __init__(self, upstream_url: str, fault: Fault) -> None:
        m = re.fullmatch(r"http://([^:/\[\]]+|\[[^\]]+\]):(\d+)", upstream_url)
        if m is None:
            raise ValueError(f"not an http://host:port URL: {upstream_url}")
        host, port = m.group(1).strip("[]"), int(m.group(2))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _forward(self) -> None:
                lengths = self.headers.get_all("Content-Length") or []
                body = b""
                readable = len(lengths) == 1 and _DIGITS.fullmatch(lengths[0]) is not None
                if readable and int(lengths[0]) <= MAX_BODY:
                    body = self.rfile.read(int(lengths[0]))
                else:
                    self.close_connection = True
                conn = http.client.HTTPConnection(host, port, timeout=30)
                try:
                    conn.putrequest(
                        self.command, self.path, skip_host=True, skip_accept_encoding=True
                    )
                    for k, v in self.headers.items():
                        if k.lower() in ("connection", "keep-alive", "transfer-encoding", "expect"):
                            continue
                        conn.putheader(k, v)
                    conn.putheader("Connection", "close")
                    conn.endheaders()
                    if body:
                        conn.send(body)
                    resp = conn.getresponse()
                    status, data = resp.status, resp.read()
                finally:
                    conn.close()
                route = self.path.split("?", 1)[0]
                try:
                    parsed = json.loads(data)
                    data = json.dumps(
                        proxy.fault(route, status, parsed), separators=(",", ":")
                    ).encode()
                except ValueError:
                    pass
                self.send_response_only(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _forward

        self.fault = fault
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
