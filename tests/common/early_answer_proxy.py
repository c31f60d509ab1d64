"""A loopback proxy that makes the early-answer race of a large body deterministic.

A store may answer a request before it has read its body (the size fence: 413 on the head of a
524289-byte body) and close.  Through an intermediary the client is then still sending when the
answer comes, and what reaches it depends on timing: the answer then a reset, or -- when the
reset of the store's close overtakes the answer inside the intermediary -- a closed connection
and no answer at all.  This proxy takes the timing out: on the first request of a connection
that declares a body of :data:`LARGE` bytes or more, it forwards the head, waits for the
store's answer before it forwards any of the body (up to :data:`HOLD_S`; a store that needs the
body gets it, piped as usual), and then does what ``mode`` says, every time:

* ``"reset"``: relays the answer, then closes both sides abortively while the client is still
  sending (the client gets the answer, then a reset);
* ``"stall"``: relays the answer, then neither reads what the client sends nor closes for
  :data:`STALL_S` (a client writing the whole body before it reads blocks until its deadline);
* ``"lose"``: closes both sides abortively without relaying the answer (the answer is lost:
  the client sees a closed connection and nothing else).  ``lose_first=n`` loses only the
  first ``n`` such answers and resets after the others (a retry on a fresh connection then
  gets the answer).

Everything else is piped both ways unchanged.  Listens on 127.0.0.1 only and forwards only to
the loopback upstream it is given.  ``stats``: ``early`` (early answers seen), ``lost``.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
from typing import Literal
from urllib.parse import urlsplit

from tests.common.loopback import serve_connections

#: A declared body at least this long is held back until the store had a chance to answer.
LARGE = 65536
#: The longest the body is held back for an early answer.
HOLD_S = 0.3
#: The proxy's receive buffer on the client's side: small, so a client that writes the whole
#: body before reading cannot park it in the kernel's buffers.
CLIENT_RCVBUF = 4096

#: How long a ``stall`` connection is held open, reading nothing.
STALL_S = 10.0

Mode = Literal["reset", "stall", "lose"]


def _abort(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), as a proxy whose upstream reset reached it does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def _declared_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return None


class EarlyAnswerProxy:
    """``EarlyAnswerProxy(upstream_url, mode, lose_first=None)``; ``.url``; ``.stop()``."""

    def __init__(self, upstream_url: str, mode: Mode, lose_first: int | None = None) -> None:
        parts = urlsplit(upstream_url)
        if parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the proxy forwards to loopback only")
        self.upstream = (parts.hostname, parts.port or 80)
        self.mode = mode
        self.lose_first = lose_first
        self.stats: dict[str, int] = {"early": 0, "lost": 0}
        self._lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CLIENT_RCVBUF)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._listener = serve_connections(self.sock, lambda conn, _n: self._serve(conn))

    def _serve(self, client: socket.socket) -> None:
        try:
            up = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        try:
            self._relay(client, up)
        except OSError:
            pass
        finally:
            for s in (client, up):
                try:
                    s.close()
                except OSError:
                    pass

    def _relay(self, client: socket.socket, up: socket.socket) -> None:
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = client.recv(65536)
            if not data:
                return
            buf += data
        head_end = buf.index(b"\r\n\r\n") + 4
        length = _declared_length(buf[:head_end])
        if length is not None and length >= LARGE:
            up.sendall(buf[:head_end])
            if select.select([up], [], [], HOLD_S)[0]:
                answer = up.recv(65536)
                if answer:
                    self._early(client, up, answer)
                    return
            buf = buf[head_end:]
        if buf:
            up.sendall(buf)
        self._pipe(client, up)

    def _early(self, client: socket.socket, up: socket.socket, answer: bytes) -> None:
        """The store answered before any of the body was forwarded: act out ``mode``."""
        with self._lock:
            self.stats["early"] += 1
            mode = self.mode
            if self.lose_first is not None:
                mode = "lose" if self.stats["lost"] < self.lose_first else "reset"
            if mode == "lose":
                self.stats["lost"] += 1
        _abort(up)
        if mode == "lose":
            _abort(client)
            return
        client.sendall(answer)
        if mode == "reset":
            _abort(client)
            return
        self._stop.wait(STALL_S)  # stall: read nothing, close nothing

    def _pipe(self, client: socket.socket, up: socket.socket) -> None:
        peer = {client: up, up: client}
        while not self._stop.is_set():
            ready = select.select([client, up], [], [], 0.5)[0]
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                peer[s].sendall(data)

    def stop(self) -> None:
        self._stop.set()
        self.sock.close()

    def __enter__(self) -> EarlyAnswerProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
